#!/bin/bash
# 30-startup.sh - `make bench`: start-up cost of one container process.
# `mpictr IMAGE /bin/true` for the tiny test image as SIF, squashfs and
# directory, against /bin/true on the host, bubblewrap on the unpacked
# directory and Charliecloud's ch-run on the same squashfs (and directory),
# all in one run (and mpictr-sif with the MPI check off, MPICTR_MPI_CHECK=0),
# interleaved round-robin (this class of VM drifts by up to
# 4x for minutes), medians and ratios. As root the runs are made as the
# unprivileged user mpictr-test (rootless is the point). Writes
# docs/bench-startup.md (the table) and build/bench/30-startup.{md,json}.
#
# Knobs: MPICTR_BENCH_QUICK=1 (fewer rounds), BENCH_STARTUP_ROUNDS (30;
# quick 10), BENCH_DOCS=0 (do not write docs/).
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=${BENCH_STARTUP_ROUNDS:-$([ "$QUICK" = 1 ] && echo 10 || echo 30)}
DOC=$ROOT/docs/bench-startup.md
bench_built
bench_image tiny

V=$W/variants
{
	echo "host /bin/true"
	echo "mpictr-sif $MPICTR $IMG/tiny.sif /bin/true"
	# the MPI check off (issue 28): its cost is the difference to mpictr-sif
	echo "mpictr-sif-nocheck MPICTR_MPI_CHECK=0 $MPICTR $IMG/tiny.sif /bin/true"
	echo "mpictr-sqfs $MPICTR $IMG/tiny.sqfs /bin/true"
	echo "mpictr-dir $MPICTR $IMG/tiny /bin/true"
	if command -v bwrap >/dev/null; then
		echo "bwrap-dir bwrap --unshare-user --ro-bind $IMG/tiny / --dev /dev --proc /proc /bin/true"
	fi
	if command -v ch-run >/dev/null; then
		echo "ch-run-sqfs USER=$RUNUSER ch-run $IMG/tiny.sqfs -- /bin/true"
		echo "ch-run-dir USER=$RUNUSER ch-run $IMG/tiny -- /bin/true"
	fi
} >"$V"

START=$(date -u "+%Y-%m-%d %H:%M UTC")
echo "30-startup: $ROUNDS interleaved rounds as $RUNUSER, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
(cd "$W" && "${AS[@]}" env HOME="$W" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 2 --timeout 30 "$V" "$W/out.json") |
	awk -v q="$QUICK" 'q == 1 || NR % 5 == 1 || /FAIL/' ||
	{ echo "30-startup: the timing loop failed"; exit 1; }
cp "$W/out.json" "$JSON" || { echo "30-startup: cannot write $JSON"; exit 1; }
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$JSON" "$OUT" "$RUNUSER" "$LOAD0" "$LOAD1" <<'EOF' || { echo "30-startup: the report failed"; exit 1; }
import json, sys, statistics, datetime, platform, os
res = json.load(open(sys.argv[1]))
out, user, l0, l1 = sys.argv[2:6]
V = res["variants"]

def q(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p
    i = int(k)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (k - i)

med = {n: q(v["times"], 0.5) for n, v in V.items()}
def ratio(n, base):
    if base not in med or med[base] is None or med[n] is None:
        return "-"
    return "%.2f" % (med[n] / med[base])

lines = []
lines.append("Median wall time of one `IMAGE /bin/true` run (fork+exec from a Python timer,")
lines.append("%d interleaved rounds after 2 warm-up rounds, run as `%s`, %d CPUs, load %s -> %s)." %
             (res["rounds"], user, os.cpu_count(), l0, l1))
lines.append("Ratio columns: median / median of the baseline (lower is faster).")
lines.append("")
lines.append("| variant | median ms | p25-p75 ms | ok/runs | x host | x bwrap-dir | x ch-run-sqfs | command |")
lines.append("|---|---:|---:|---:|---:|---:|---:|---|")
for n in res["order"]:
    v = V[n]
    t = v["times"]
    if not t:
        lines.append("| %s | failed | | 0/%d | | | | `%s` |" % (n, v["fail"], v["cmd"]))
        continue
    lines.append("| %s | %.2f | %.2f-%.2f | %d/%d | %s | %s | %s | `%s` |" % (
        n, med[n] * 1e3, q(t, .25) * 1e3, q(t, .75) * 1e3, len(t), len(t) + v["fail"],
        ratio(n, "host"), ratio(n, "bwrap-dir"), ratio(n, "ch-run-sqfs"),
        v["cmd"].replace(os.getcwd() + "/", "")))
for n in res["order"]:
    if V[n]["fail"]:
        lines.append("")
        lines.append("%s failed %d time(s): %s" % (n, V[n]["fail"], V[n]["errors"][0]))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF

fail=0
for v in mpictr-sif mpictr-sqfs mpictr-dir; do
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variants"][sys.argv[2]]["fail"])' "$JSON" "$v")
	[ "$n" = 0 ] || { echo "30-startup: $v failed $n time(s)"; fail=1; }
done

if [ "${BENCH_DOCS:-1}" = 1 ]; then
	{
		echo "# Benchmark: container start-up"
		echo
		echo "Written by \`tests/bench/30-startup.sh\` (\`make bench\`; rerun alone with"
		echo "\`tests/bench/run.sh tests/bench/30-startup.sh\`, quick: \`MPICTR_BENCH_QUICK=1\`)."
		echo "Started $START on $(nproc) vCPUs ($(uname -r)), a shared"
		echo "machine (other sessions were running tests), so only the ratios of the"
		echo "same run mean something; see [benchmarks.md](benchmarks.md) for the caveats."
		echo
		echo "What runs: \`mpictr IMAGE /bin/true\` (user + mount namespace, image"
		echo "mounted in-process for SIF and squashfs, default binds, capabilities"
		echo "dropped, exec) for the tiny busybox test image; the same image under"
		echo "bubblewrap (directory only, \`--unshare-user --ro-bind DIR / --dev /dev"
		echo "--proc /proc\`) and under Charliecloud \`ch-run\` (squashfs mounted"
		echo "in-process with libsquashfuse, and the directory)."
		echo
		cat "$OUT"
	} >"$DOC"
	echo "results: $DOC"
fi
echo "results: $OUT"
exit $fail
