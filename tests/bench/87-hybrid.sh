#!/bin/bash
# 87-hybrid.sh - `make bench`: hybrid launch (issue 13), the host's mpirun
# starting one container runtime per rank:
#   native     mpirun -n 8 --oversubscribe hello
#   mpictr     mpirun -n 8 --oversubscribe mpictr mpi.sif hello (join mode)
#   ch-run     mpirun -n 8 --oversubscribe ch-run --join mpi.sqfs -- hello
#              (Charliecloud's own one-container-per-node mode), when
#              ch-run is installed
# Every variant runs once per round, round-robin (interleave.py); medians
# and ratios of medians. Target: mpictr <= 1.10x native and below ch-run.
# As root, everything runs as the unprivileged user mpictr-test. Fails only
# when something does not run, never on the numbers.
#
# Writes build/bench/87-hybrid.{md,json}, and docs/bench-hybrid.md unless
# BENCH_DOCS=0. Knobs: MPICTR_BENCH_QUICK=1, BENCH_HYBRID_ROUNDS (8; quick 4).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/bench
MPICTR=$ROOT/build/mpictr
IMG=${MPICTR_BENCH_IMAGES:-$ROOT/build/images}
if [ "${MPICTR_BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${BENCH_HYBRID_ROUNDS:-4}
else
	ROUNDS=${BENCH_HYBRID_ROUNDS:-8}
fi
OUTD=$ROOT/build/bench
mkdir -p "$OUTD"

. "$(dirname "$0")/lib.sh"
bench_mpi

{
	echo "native mpirun -n 8 --oversubscribe $BIN/hello"
	echo "mpictr mpirun -n 8 --oversubscribe $MPICTR $IMG/mpi.sif /opt/mpictr/bin/hello"
	command -v ch-run >/dev/null &&
		echo "ch-run mpirun -n 8 --oversubscribe ch-run --join $IMG/mpi.sqfs -- /opt/mpictr/bin/hello"
} >"$W/variants"
echo "87-hybrid: $ROUNDS rounds, as $RUNUSER, load $LOAD0"
(cd "$W" && "${AS[@]}" env HOME="$W" USER="$RUNUSER" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 1 --timeout 120 "$W/variants" "$W/out.json") ||
	{ echo "87-hybrid: the timing loop failed"; exit 1; }
cp "$W/out.json" "$OUTD/87-hybrid.json" || exit 1
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

export W OUTD ROOT START LOAD0 LOAD1 RUNUSER ROUNDS
python3 - <<'EOF'
import json, os, statistics
W, OUTD, ROOT = os.environ["W"], os.environ["OUTD"], os.environ["ROOT"]
d = json.load(open(W + "/out.json"))["variants"]
bad = [n for n, v in d.items() if not v["times"] or v["fail"]]
med = {n: statistics.median(v["times"]) for n, v in d.items() if v["times"]}
nat = med.get("native")
md = ["# Benchmark: hybrid launch (`mpirun -n 8 --oversubscribe RUNTIME IMAGE hello`)", "",
      "Written by `tests/bench/87-hybrid.sh` (`make bench`); %s, as %s, load %s -> %s, %s interleaved rounds." %
      (os.environ["START"], os.environ["RUNUSER"], os.environ["LOAD0"], os.environ["LOAD1"], os.environ["ROUNDS"]),
      "", "| variant | runs ok / failed | median s | min s | / native |", "|---|---|---|---|---|"]
for n in ("native", "mpictr", "ch-run"):
    if n not in d:
        continue
    v = d[n]
    m = med.get(n)
    md.append("| %s | %d / %d | %s | %s | %s |" % (
        n, len(v["times"]), v["fail"], "%.3f" % m if m else "-",
        "%.3f" % min(v["times"]) if v["times"] else "-",
        "%.2f" % (m / nat) if m and nat else "-"))
md += ["", "native: `mpirun -n 8 --oversubscribe hello` from the unpacked image; mpictr: one",
       "mpictr per rank in join mode (one container for the 8 ranks); ch-run: Charliecloud",
       "`ch-run --join` (one container per node). Target: mpictr <= 1.10x native and below ch-run."]
for n in bad:
    md.append("")
    md.append("**%s failed** %d times: %s" % (n, d[n]["fail"], (d[n]["errors"] or [""])[0][:300]))
text = "\n".join(md) + "\n"
open(OUTD + "/87-hybrid.md", "w").write(text)
if os.environ.get("BENCH_DOCS", "1") != "0":
    open(ROOT + "/docs/bench-hybrid.md", "w").write(text)
print(text)
raise SystemExit(1 if bad else 0)
EOF
