#!/bin/bash
# 89-instance.sh - `make bench`: named instances (issue 15), a warm
# container joined by every run:
#   native       mpirun -n 8 --oversubscribe hello
#   sif          mpictr -n 8 mpi.sif hello (mounts the image every run)
#   instance     mpictr -n 8 instance://NAME hello (joins, mounts nothing)
# and under srun (when the single-node Slurm cluster answers):
#   srun-native    srun -n 16 -O /bin/true
#   srun-instance  srun -n 16 -O mpictr instance://NAME /bin/true
# Every variant runs once per round, round-robin (interleave.py); medians
# and ratios of medians. Target: instance <= 1.00x native. As root,
# everything runs as the unprivileged user mpictr-test. Fails only when
# something does not run, never on the numbers.
#
# Writes build/bench/89-instance.{md,json} (docs/bench-instance.md holds
# the measured ratios with where the time goes). Knobs: MPICTR_BENCH_QUICK=1, BENCH_INSTANCE_ROUNDS
# (10; quick 4).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/bench
MPICTR=$ROOT/build/mpictr
IMG=${MPICTR_BENCH_IMAGES:-$ROOT/build/images}
if [ "${MPICTR_BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${BENCH_INSTANCE_ROUNDS:-4}
else
	ROUNDS=${BENCH_INSTANCE_ROUNDS:-10}
fi
OUTD=$ROOT/build/bench
mkdir -p "$OUTD"

for t in mpirun python3; do
	command -v $t >/dev/null || { echo "89-instance: needs $t; skipped"; exit 0; }
done
[ -x "$MPICTR" ] || { echo "89-instance: build $MPICTR first (make)"; exit 1; }
"$ROOT/tests/images/build.sh" "$IMG" mpi >/dev/null ||
	{ echo "89-instance: building the mpi image failed"; exit 1; }
BIN=$IMG/mpi/opt/mpictr/bin
. "$ROOT/tests/slurm/env.sh"

. "$(dirname "$0")/lib.sh"
NAME=bench$$
# The instance is started in $W (its working directory is bound in) and
# stopped on exit, before $W goes.
trap 'cd /; "${AS[@]}" env HOME="$W" "$MPICTR" instance stop $NAME >/dev/null 2>&1; rm -rf "$W"' EXIT
cd "$W" || exit 1
"${AS[@]}" env HOME="$W" "$MPICTR" instance start "$IMG/mpi.sif" $NAME ||
	{ echo "89-instance: instance start failed"; exit 1; }

{
	echo "native mpirun -n 8 --oversubscribe $BIN/hello"
	echo "sif $MPICTR -n 8 $IMG/mpi.sif /opt/mpictr/bin/hello"
	echo "instance $MPICTR -n 8 instance://$NAME /opt/mpictr/bin/hello"
	if slurm_up; then
		echo "srun-native srun -n 16 -O /bin/true"
		echo "srun-instance srun -n 16 -O $MPICTR instance://$NAME /bin/true"
	fi
} >"$W/variants"
echo "89-instance: $ROUNDS rounds, as $RUNUSER, load $LOAD0"
("${AS[@]}" env HOME="$W" USER="$RUNUSER" SLURM_CONF="$SLURM_CONF" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 1 --timeout 120 "$W/variants" "$W/out.json") ||
	{ echo "89-instance: the timing loop failed"; exit 1; }
cp "$W/out.json" "$OUTD/89-instance.json" || exit 1
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

export W OUTD ROOT START LOAD0 LOAD1 RUNUSER ROUNDS
python3 - <<'EOF'
import json, os, statistics
W, OUTD, ROOT = os.environ["W"], os.environ["OUTD"], os.environ["ROOT"]
d = json.load(open(W + "/out.json"))["variants"]
bad = [n for n, v in d.items() if not v["times"] or v["fail"]]
med = {n: statistics.median(v["times"]) for n, v in d.items() if v["times"]}
md = ["# Benchmark: named instances (`mpictr -n 8 instance://NAME hello`, `srun mpictr instance://NAME`)", "",
      "Written by `tests/bench/89-instance.sh` (`make bench`); %s, as %s, load %s -> %s, %s interleaved rounds." %
      (os.environ["START"], os.environ["RUNUSER"], os.environ["LOAD0"], os.environ["LOAD1"], os.environ["ROUNDS"]),
      "", "| variant | runs ok / failed | median s | min s | / native |", "|---|---|---|---|---|"]
for n, base in (("native", "native"), ("sif", "native"), ("instance", "native"),
                ("srun-native", "srun-native"), ("srun-instance", "srun-native")):
    if n not in d:
        continue
    v = d[n]
    m, nat = med.get(n), med.get(base)
    md.append("| %s | %d / %d | %s | %s | %s |" % (
        n, len(v["times"]), v["fail"], "%.3f" % m if m else "-",
        "%.3f" % min(v["times"]) if v["times"] else "-",
        "%.2f" % (m / nat) if m and nat else "-"))
md += ["", "native: `mpirun -n 8 --oversubscribe hello` from the unpacked image; sif: `mpictr -n 8",
       "mpi.sif hello` (a new container, the image mounted, per run); instance: `mpictr -n 8",
       "instance://NAME hello` (the 8 ranks join the running instance: nothing mounted).",
       "srun-native: `srun -n 16 -O /bin/true`; srun-instance: `srun -n 16 -O mpictr",
       "instance://NAME /bin/true` (each task joins the instance and execs in place).",
       "Target: instance <= 1.00x native."]
for n in bad:
    md.append("")
    md.append("**%s failed** %d times: %s" % (n, d[n]["fail"], (d[n]["errors"] or [""])[0][:300]))
text = "\n".join(md) + "\n"
open(OUTD + "/89-instance.md", "w").write(text)
print(text)
raise SystemExit(1 if bad else 0)
EOF
