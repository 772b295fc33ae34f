#!/bin/bash
# 50-launch.sh - `make bench`: the launcher against native Open MPI.
#
# 1. Ping-pong (1 B..4 MiB) and alltoall (1 B..1 MiB per peer) with 2 ranks:
#    the image's binaries inside `mpictr -n 2 mpi.sif` against the SAME
#    binaries run natively from the unpacked image directory under
#    `mpirun -n 2` (the image is built from the host's packages), and the
#    `mpictr --no-share` fallback (one namespace set per rank, mpictr's safe
#    transport variables), for Open MPI with UCX posix/cma and with ob1/vader.
#    All ranks are bound to cores (mpirun's default for 2 ranks; mpictr
#    --bind-to=core). Target: mpictr within 2 % of native at every size.
# 2. Launch: `mpictr -n 8 mpi.sif /bin/true` and an MPI hello against
#    `mpirun -n 8 --oversubscribe` natively and against per-rank Charliecloud
#    containers (`mpirun ... ch-run mpi.sqfs -- CMD`).
# Every variant runs once per round, round-robin (this class of VM drifts by
# up to 4x for minutes); medians of the same window, ratios of medians. As
# root, everything runs as the unprivileged user mpictr-test. Fails only when
# something does not run, never on the numbers.
#
# Writes docs/bench-launch.md, docs/bench-pingpong.png (gnuplot) and
# build/bench/50-launch.{md,json}, build/bench/50-pingpong.json.
# Knobs: MPICTR_BENCH_QUICK=1; BENCH_PP_ROUNDS (6; quick 5), BENCH_PP_ITERS
# (100; quick 50), BENCH_LAUNCH_ROUNDS (8; quick 5), BENCH_DOCS=0 (do not
# write docs/), BENCH_RENDER_ONLY=1 (no runs: redo the tables and the plot
# from the raw results of the last run in build/bench/).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/bench
MPICTR=$ROOT/build/mpictr
IMG=$ROOT/build/images
QUICK=${MPICTR_BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	PP_ROUNDS=${BENCH_PP_ROUNDS:-5}
	PP_ITERS=${BENCH_PP_ITERS:-50}
	L_ROUNDS=${BENCH_LAUNCH_ROUNDS:-5}
else
	PP_ROUNDS=${BENCH_PP_ROUNDS:-6}
	PP_ITERS=${BENCH_PP_ITERS:-100}
	L_ROUNDS=${BENCH_LAUNCH_ROUNDS:-8}
fi
OUTD=$ROOT/build/bench
mkdir -p "$OUTD"

. "$(dirname "$0")/lib.sh"
bench_mpi
for p in pingpong alltoall hello; do
	[ -x "$BIN/$p" ] || { echo "50-launch: $BIN/$p missing"; exit 1; }
done

timed() { # ROUNDS VARIANTS OUT.json [--capture]
	(cd "$W" && "${AS[@]}" env HOME="$W" USER="$RUNUSER" python3 "$HERE/interleave.py" \
		--rounds "$1" --warmup 1 --timeout 300 ${4:-} "$2" "$3")
}

# ---- 1. ping-pong and alltoall ----------------------------------------------
UCX="OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any OMPI_MCA_pml_ucx_tls=any OMPI_MCA_btl=^vader,openib,uct"
OB1="OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader"
MC="$MPICTR --bind-to=core -n 2 $IMG/mpi.sif"
MCNS="$MPICTR --bind-to=core --no-share -n 2 $IMG/mpi.sif"
{
	for prog in pingpong alltoall; do
		# --no-share: UCX_TLS is left to mpictr's fallback (^cma,tcp, and
		# UCX_POSIX_USE_PROC_LINK=n); vader's single copy likewise.
		echo "ucx-native-$prog $UCX UCX_TLS=self,posix,cma mpirun -n 2 $BIN/$prog $PP_ITERS"
		# The same native run again: an A/A comparison shows what ratio
		# the noise alone produces in this window.
		[ $prog = pingpong ] &&
			echo "ucx-nativeAA-$prog $UCX UCX_TLS=self,posix,cma mpirun -n 2 $BIN/$prog $PP_ITERS"
		echo "ucx-mpictr-$prog $UCX UCX_TLS=self,posix,cma $MC /opt/mpictr/bin/$prog $PP_ITERS"
		echo "ucx-noshare-$prog $UCX $MCNS /opt/mpictr/bin/$prog $PP_ITERS"
		echo "ob1-native-$prog $OB1 mpirun -n 2 $BIN/$prog $PP_ITERS"
		[ $prog = pingpong ] &&
			echo "ob1-nativeAA-$prog $OB1 mpirun -n 2 $BIN/$prog $PP_ITERS"
		echo "ob1-mpictr-$prog $OB1 $MC /opt/mpictr/bin/$prog $PP_ITERS"
		echo "ob1-noshare-$prog $OB1 $MCNS /opt/mpictr/bin/$prog $PP_ITERS"
	done
} >"$W/pp.variants"
if [ "${BENCH_RENDER_ONLY:-0}" = 1 ]; then
	# Redo the tables and the plot from the last run's raw results.
	. "$OUTD/50-launch.env" || exit 1
	cp "$OUTD/50-pingpong.json" "$W/pp.json" && cp "$OUTD/50-launch.json" "$W/launch.json" || exit 1
else
echo "50-launch: ping-pong/alltoall, $PP_ROUNDS rounds x 14 variants, $PP_ITERS iterations, as $RUNUSER, load $LOAD0"
timed "$PP_ROUNDS" "$W/pp.variants" "$W/pp.json" --capture ||
	{ echo "50-launch: the timing loop failed"; exit 1; }
cp "$W/pp.json" "$OUTD/50-pingpong.json" || exit 1

# ---- 2. launch ----------------------------------------------------------------
{
	echo "native-true mpirun -n 8 --oversubscribe /bin/true"
	echo "mpictr-true $MPICTR -n 8 $IMG/mpi.sif /bin/true"
	echo "mpictr-dir-true $MPICTR -n 8 $IMG/mpi /bin/true"
	echo "native-hello mpirun -n 8 --oversubscribe $BIN/hello"
	echo "mpictr-hello $MPICTR -n 8 $IMG/mpi.sif /opt/mpictr/bin/hello"
	echo "mpictr-dir-hello $MPICTR -n 8 $IMG/mpi /opt/mpictr/bin/hello"
	if command -v ch-run >/dev/null; then
		echo "ch-run-true mpirun -n 8 --oversubscribe ch-run $IMG/mpi.sqfs -- /bin/true"
		echo "ch-run-hello mpirun -n 8 --oversubscribe ch-run $IMG/mpi.sqfs -- /opt/mpictr/bin/hello"
	fi
} >"$W/launch.variants"
echo "50-launch: launch, $L_ROUNDS rounds"
timed "$L_ROUNDS" "$W/launch.variants" "$W/launch.json" ||
	{ echo "50-launch: the timing loop failed"; exit 1; }
cp "$W/launch.json" "$OUTD/50-launch.json" || exit 1
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'START=%q\nLOAD0=%q\nLOAD1=%q\nPP_ROUNDS=%q\nPP_ITERS=%q\nRUNUSER=%q\n' \
	"$START" "$LOAD0" "$LOAD1" "$PP_ROUNDS" "$PP_ITERS" "$RUNUSER" >"$OUTD/50-launch.env"
fi

# ---- tables and plot ------------------------------------------------------------
export ROOT W OUTD PP_ITERS RUNUSER LOAD0 LOAD1
python3 - <<'EOF'
import json, math, os
W, OUTD, ROOT = os.environ["W"], os.environ["OUTD"], os.environ["ROOT"]
pp = json.load(open(W + "/pp.json"))
la = json.load(open(W + "/launch.json"))
status = []  # problems that make the benchmark fail

def q(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p
    i = int(k)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (k - i)

def parse(name, prog):
    """per size: list over runs of (lat, bw) for pingpong, (usec,) for alltoall"""
    v = pp["variants"][name]
    out = {}
    good = 0
    for s in v["stdout"]:
        if prog + " ok" not in s:
            continue
        good += 1
        for line in s.splitlines():
            w = line.split()
            if prog == "pingpong" and len(w) == 6 and w[0] == "size":
                # bandwidth from the latency: the printed MB/s has one
                # decimal, too coarse for the smallest sizes.
                n, lat = int(w[1]), float(w[3])
                out.setdefault(n, []).append((lat, n / lat if lat > 0 else 0.0))
            elif prog == "alltoall" and len(w) == 4 and w[0] == "alltoall" and w[2] == "usec":
                out.setdefault(int(w[1]), []).append((float(w[3]),))
    return out, good, len(v["stdout"]) + v["fail"]

def human(n):
    for u, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return "%d %s" % (n // f, u)
    return "%d B" % n

md = []
nflag = {}
for tr, title in (("ucx", "Open MPI + UCX (posix, cma)"), ("ob1", "Open MPI ob1 + vader (CMA)")):
    data = {}
    for var in ("native", "nativeAA", "mpictr", "noshare"):
        name = "%s-%s-pingpong" % (tr, var)
        if name not in pp["variants"]:
            data[var], data[var + "_n"] = {}, 0
            continue
        data[var], good, runs = parse(name, "pingpong")
        if good == 0:
            status.append("%s: no successful run (%s)" % (name, (pp["variants"][name]["errors"] or ["no output"])[0][:200]))
        elif good < runs:
            status.append("%s: %d of %d runs failed" % (name, runs - good, runs))
        data[var + "_n"] = good
    md.append("### Ping-pong, %s" % title)
    md.append("")
    md.append("Successful interleaved runs: native %d, native again (A/A) %d, mpictr %d, --no-share %d." %
              (data["native_n"], data["nativeAA_n"], data["mpictr_n"], data["noshare_n"]))
    md.append("Each run prints, per size, the mean one-way latency over its iterations (0.01 us")
    md.append("resolution). `median`: latency ratio of the medians over runs, mpictr / native (lower is")
    md.append("better). `best`: ratio of the fastest runs (the minimum over runs; a preemption only ever")
    md.append("adds time, so on a loaded machine this is the less noisy estimate of the intrinsic cost).")
    md.append("`A/A`: the same two ratios for a second, identical native run against the first: how")
    md.append("far from 1.000 the noise alone moves a ratio in this window. `spread`: the native runs'")
    md.append("p25-p75 latency range as a percentage of their median. Bandwidth = size / median")
    md.append("latency. **!** marks a ratio outside 2 %.")
    md.append("")
    md.append("| size | native us | mpictr us | median | A/A median | best | A/A best | spread | native MB/s | mpictr MB/s | --no-share MB/s | --no-share / native |")
    md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cnt = {"med": 0, "aamed": 0, "best": 0, "aabest": 0}
    gm = {}
    plot = []
    def fmt(x, key):
        if x is None:
            return "-"
        bad = abs(x - 1) > 0.02
        cnt[key] += bad
        return "%.3f%s" % (x, " !" if bad else "")
    for size in sorted(data["native"]):
        lat = {v: [r[0] for r in data[v].get(size, [])] for v in ("native", "nativeAA", "mpictr", "noshare")}
        med = {v: q(x, .5) for v, x in lat.items()}
        best = {v: min(x) if x else None for v, x in lat.items()}
        nl, ml = med["native"], med["mpictr"]
        if not nl or not ml:
            md.append("| %s | %s | missing | | | | | | | | | |" % (human(size), nl))
            continue
        r = lambda d, a: d[a] / d["native"] if d[a] and d["native"] else None
        bw = {v: (size / med[v] if med[v] else None) for v in med}
        spread = (q(lat["native"], .75) - q(lat["native"], .25)) / nl * 100
        md.append("| %s | %.2f | %.2f | %s | %s | %s | %s | %.0f %% | %.1f | %.1f | %s | %s |" % (
            human(size), nl, ml, fmt(r(med, "mpictr"), "med"), fmt(r(med, "nativeAA"), "aamed"),
            fmt(r(best, "mpictr"), "best"), fmt(r(best, "nativeAA"), "aabest"), spread,
            bw["native"], bw["mpictr"], "%.1f" % bw["noshare"] if bw["noshare"] else "failed",
            "%.3f" % (bw["noshare"] / bw["native"]) if bw["noshare"] else "-"))
        plot.append((size, bw["native"], bw["mpictr"], bw["noshare"] or float("nan")))
        for v in ("mpictr", "nativeAA", "noshare"):
            if med[v]:
                gm.setdefault(v, []).append(math.log(med[v] / nl))
    nflag[tr] = (cnt["med"], cnt["aamed"], cnt["best"], cnt["aabest"], len(plot))
    md.append("")
    md.append("Sizes outside 2 %%: mpictr/native %d of %d by medians, %d by best runs; native/native (A/A) %d by"
              " medians, %d by best runs." % (cnt["med"], len(plot), cnt["best"], cnt["aamed"], cnt["aabest"]))
    g = lambda v: "%.3f" % math.exp(sum(gm[v]) / len(gm[v])) if gm.get(v) else "-"
    md.append("Geometric mean over all sizes of the median-latency ratio: mpictr/native %s, A/A %s,"
              " --no-share/native %s." % (g("mpictr"), g("nativeAA"), g("noshare")))
    md.append("")
    with open("%s/pp-%s.dat" % (W, tr), "w") as f:
        f.write("# size native mpictr noshare (MB/s, medians)\n")
        for r in plot:
            f.write("%d %.3f %.3f %.3f\n" % r)

md.append("### Alltoall, 2 ranks")
md.append("")
md.append("Median over runs of each run's mean time per MPI_Alltoall (usec); ratio = variant / native (lower is better).")
md.append("")
md.append("| transport | block size | native us | mpictr us | mpictr / native | --no-share us | --no-share / native |")
md.append("|---|---:|---:|---:|---:|---:|---:|")
for tr in ("ucx", "ob1"):
    d = {}
    for var in ("native", "mpictr", "noshare"):
        name = "%s-%s-alltoall" % (tr, var)
        d[var], good, runs = parse(name, "alltoall")
        if good == 0:
            status.append("%s: no successful run (%s)" % (name, (pp["variants"][name]["errors"] or ["no output"])[0][:200]))
        elif good < runs:
            status.append("%s: %d of %d runs failed" % (name, runs - good, runs))
    for size in sorted(d["native"]):
        n = q([r[0] for r in d["native"][size]], .5)
        m = q([r[0] for r in d["mpictr"].get(size, [])], .5)
        s = q([r[0] for r in d["noshare"].get(size, [])], .5)
        md.append("| %s | %s | %.2f | %s | %s | %s | %s |" % (
            tr, human(size), n, "%.2f" % m if m else "-", "%.3f%s" % (m / n, " !" if abs(m / n - 1) > 0.02 else "") if m else "-",
            "%.2f" % s if s else "-", "%.3f" % (s / n) if s else "-"))
md.append("")

# launch
V = la["variants"]
med = {n: q(v["times"], .5) for n, v in V.items()}
def r(a, b):
    return "%.2f" % (med[a] / med[b]) if med.get(a) and med.get(b) else "-"
md.append("### Launch, 8 ranks on %d CPUs (oversubscribed)" % os.cpu_count())
md.append("")
md.append("Wall time of the whole command, %d interleaved rounds after one warm-up round." % la["rounds"])
md.append("Ratios of medians: against the native `mpirun` run of the same command, and against")
md.append("per-rank Charliecloud containers (`mpirun ... ch-run mpi.sqfs -- CMD`).")
md.append("")
md.append("| variant | median s | p25-p75 s | ok/runs | x native | x ch-run | command |")
md.append("|---|---:|---:|---:|---:|---:|---|")
for n in la["order"]:
    v = V[n]
    t = v["times"]
    kind = "true" if n.endswith("true") else "hello"
    if not t:
        md.append("| %s | failed | | 0/%d | | | `%s` |" % (n, v["fail"], v["cmd"].replace(ROOT + "/", "")))
    else:
        md.append("| %s | %.3f | %.3f-%.3f | %d/%d | %s | %s | `%s` |" % (
            n, med[n], q(t, .25), q(t, .75), len(t), len(t) + v["fail"],
            r(n, "native-" + kind), r(n, "ch-run-" + kind), v["cmd"].replace(ROOT + "/", "")))
    if v["fail"]:
        msg = "%s: %d of %d runs failed: %s" % (n, v["fail"], len(t) + v["fail"], v["errors"][0][:200])
        if n.startswith("ch-run"):
            md.append("")
            md.append("(peer) " + msg)
        else:
            status.append(msg)
md.append("")

text = "\n".join(md) + "\n"
open(OUTD + "/50-launch.md", "w").write(text)
print(text)
with open(W + "/summary", "w") as f:
    for tr, (a, aa, b, ab, n) in nflag.items():
        f.write("%s: sizes outside 2%%: mpictr/native %d (medians) %d (best runs); A/A %d %d; of %d\n" % (tr, a, b, aa, ab, n))
with open(W + "/status", "w") as f:
    f.write("".join(s + "\n" for s in status))
EOF
[ -f "$W/status" ] || { echo "50-launch: the report failed"; exit 1; }

fail=0
cat "$W/summary"
if [ -s "$W/status" ]; then
	echo "50-launch: something did not run:"
	sed 's/^/  /' "$W/status"
	fail=1
fi

# The plot: bandwidth against size, both transports, three variants.
PNG=$OUTD/bench-pingpong.png
if command -v gnuplot >/dev/null; then
	term="pngcairo size 1200,520 font 'sans,10'"
	gnuplot -e 'set terminal pngcairo' </dev/null >/dev/null 2>&1 || term="png size 1200,520"
	gnuplot <<EOF || { echo "50-launch: gnuplot failed"; fail=1; }
set terminal $term
set output '$PNG'
set multiplot layout 1,2 title "Ping-pong bandwidth, 2 ranks, medians of $PP_ROUNDS interleaved runs ($(date -u +%Y-%m-%d), $(nproc) vCPU VM, shared)"
set logscale x 2
set logscale y 10
set xtics ("1 B" 1, "32 B" 32, "1 KiB" 1024, "32 KiB" 32768, "1 MiB" 1048576, "4 MiB" 4194304)
set xlabel 'message size (bytes)'
set ylabel 'bandwidth (MB/s)'
set grid
set key left top
set title 'Open MPI + UCX posix,cma'
plot '$W/pp-ucx.dat' u 1:2 w lp lw 2 pt 7 t 'native (mpirun)', \
     '' u 1:3 w lp lw 2 pt 5 dt 2 t 'mpictr -n 2', \
     '' u 1:4 w lp lw 2 pt 9 t 'mpictr --no-share (fallback)'
set title 'Open MPI ob1 + vader (CMA)'
plot '$W/pp-ob1.dat' u 1:2 w lp lw 2 pt 7 t 'native (mpirun)', \
     '' u 1:3 w lp lw 2 pt 5 dt 2 t 'mpictr -n 2', \
     '' u 1:4 w lp lw 2 pt 9 t 'mpictr --no-share (fallback)'
unset multiplot
EOF
fi

if [ "${BENCH_DOCS:-1}" = 1 ]; then
	[ -f "$PNG" ] && cp "$PNG" "$ROOT/docs/bench-pingpong.png"
	{
		echo "# Benchmark: the launcher against native Open MPI"
		echo
		echo "Written by \`tests/bench/50-launch.sh\` (\`make bench\`; rerun alone with"
		echo "\`tests/bench/run.sh tests/bench/50-launch.sh\`, quick: \`MPICTR_BENCH_QUICK=1\`)."
		echo "Started $START, $(nproc) vCPUs ($(uname -r)), as \`$RUNUSER\`, load $LOAD0 at the"
		echo "start and $LOAD1 at the end: a shared machine (other sessions ran Slurm"
		echo "tests at the same time), so only ratios within this run mean something;"
		echo "see [benchmarks.md](benchmarks.md) for the caveats."
		echo
		echo "Same binaries everywhere: \`/opt/mpictr/bin/{pingpong,alltoall,hello}\` of the"
		echo "mpi test image (built from the host's Open MPI 4.1 packages), run natively"
		echo "from the unpacked image directory and inside the container from mpi.sif."
		echo "Ping-pong and alltoall use $PP_ITERS iterations per size (a fifth of that at"
		echo "1 MiB and more), 2 ranks bound to cores (\`mpirun\`'s default for 2 ranks,"
		echo "\`mpictr --bind-to=core\`). Transport settings:"
		echo
		echo "- UCX: \`$UCX UCX_TLS=self,posix,cma\`;"
		echo "  the --no-share run gets the same without \`UCX_TLS\`, which mpictr then sets"
		echo "  to its fallback (\`UCX_TLS=^cma,tcp\`, \`UCX_POSIX_USE_PROC_LINK=n\`);"
		echo "- ob1: \`$OB1\`; --no-share gets mpictr's"
		echo "  \`OMPI_MCA_btl_vader_single_copy_mechanism=none\`."
		echo
		echo "![ping-pong bandwidth](bench-pingpong.png)"
		echo
		cat "$OUTD/50-launch.md"
	} >"$ROOT/docs/bench-launch.md"
	echo "results: $ROOT/docs/bench-launch.md"
fi
echo "results: $OUTD/50-launch.md"
exit $fail
