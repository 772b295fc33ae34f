#!/bin/bash
# 37-writable.sh - `make bench`: what --writable-tmpfs costs. In one run,
# interleaved round-robin (this class of VM drifts by up to 4x for
# minutes), the same commands with and without it:
#   1. `mpictr -n 8 [--writable-tmpfs] mpi.sif hello` (Open MPI hello: the
#      launch, the overlay mount, 8 ranks loading their libraries through
#      it);
#   2. a small-file walk of the image: `mpictr [--writable-tmpfs] mpi.sif
#      sh -c 'find /usr /etc /opt /lib -type f -size -64k -exec cat {} +'`
#      twenty times (every small file of the image looked up, opened and
#      read through the overlay; twenty passes so that the walk, not the
#      start-up, dominates).
# Target: --writable-tmpfs / plain <= 1.02 (medians). Fails only when a run
# fails, never on the numbers. As root, runs as mpictr-test.
# Writes docs/bench-writable.md and build/bench/37-writable.{md,json}.
# Knobs: MPICTR_BENCH_QUICK=1, BENCH_WRITABLE_ROUNDS (30; quick 6),
# BENCH_DOCS=0 (do not write docs/).
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=${BENCH_WRITABLE_ROUNDS:-$([ "$QUICK" = 1 ] && echo 6 || echo 30)}
DOC=$ROOT/docs/bench-writable.md
bench_mpi
[ -x "$BIN/hello" ] || { echo "37-writable: $BIN/hello missing"; exit 1; }

WALK="i=0; while [ \$i -lt 20 ]; do find /usr /etc /opt /lib -type f -size -64k -exec cat {} +; i=\$((i + 1)); done"
V=$W/variants
{
	echo "hello-plain $MPICTR -n 8 $IMG/mpi.sif /opt/mpictr/bin/hello"
	echo "hello-wtmpfs $MPICTR -n 8 --writable-tmpfs $IMG/mpi.sif /opt/mpictr/bin/hello"
	echo "walk-plain $MPICTR $IMG/mpi.sif sh -c '$WALK >/dev/null'"
	echo "walk-wtmpfs $MPICTR --writable-tmpfs $IMG/mpi.sif sh -c '$WALK >/dev/null'"
} >"$V"
echo "37-writable: $ROUNDS interleaved rounds as $RUNUSER, $(nproc) CPUs, load $LOAD0"
(cd "$W" && "${AS[@]}" env HOME="$W" USER="$RUNUSER" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 2 --timeout 120 "$V" "$W/out.json") >/dev/null ||
	{ echo "37-writable: the timing loop failed"; exit 1; }
cp "$W/out.json" "$JSON"
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$JSON" "$OUT" "$RUNUSER" "$LOAD0" "$LOAD1" "$START" <<'EOF' || { echo "37-writable: a variant failed"; exit 1; }
import json, os, statistics, sys
res = json.load(open(sys.argv[1]))
out, user, l0, l1, start = sys.argv[2:7]
V = res["variants"]
bad = [n for n, v in V.items() if v["fail"] or not v["times"]]
med = {n: statistics.median(v["times"]) for n, v in V.items() if v["times"]}
L = ["# --writable-tmpfs: what the overlay costs", "",
     "Written by `tests/bench/37-writable.sh` (%s). Median wall times of %d interleaved" % (start, res["rounds"]),
     "rounds after 2 warm-up rounds, as `%s`, %d CPUs, load %s -> %s." % (user, os.cpu_count(), l0, l1), "",
     "Quartiles in brackets: on a shared machine they show how much of a ratio is noise.", "",
     "| what | plain (s) | --writable-tmpfs (s) | ratio | target |", "|---|---|---|---|---|"]
def qs(n):
    t = sorted(V[n]["times"])
    return "%.3f [%.3f-%.3f]" % (statistics.median(t), t[len(t) // 4], t[(3 * len(t)) // 4])
for what, a, b in (("`mpictr -n 8 mpi.sif hello`", "hello-plain", "hello-wtmpfs"),
                   ("small-file walk of mpi.sif (20 x `find ... -size -64k -exec cat`)", "walk-plain", "walk-wtmpfs")):
    if a in med and b in med:
        L.append("| %s | %s | %s | %.3f | <= 1.02 |" % (what, qs(a), qs(b), med[b] / med[a]))
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
if bad:
    print("failed variants: %s" % ", ".join(bad))
    for n in bad:
        print("  %s: %s" % (n, (V[n]["errors"] or ["?"])[0]))
    sys.exit(1)
EOF
bench_doc "$DOC"
exit 0
