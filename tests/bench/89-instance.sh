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
# and ratios of medians (ratios.py). Target: instance <= 1.00x native. As
# root, everything runs as the unprivileged user mpictr-test. Fails only
# when something does not run, never on the numbers.
#
# Writes build/bench/89-instance.{md,json} (docs/bench-instance.md holds
# the measured ratios with where the time goes). Knobs:
# MPICTR_BENCH_QUICK=1, BENCH_INSTANCE_ROUNDS (10; quick 4).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MPICTR=$ROOT/build/mpictr
IMG=${MPICTR_BENCH_IMAGES:-$ROOT/build/images}
QUICK=${MPICTR_BENCH_QUICK:-0}
ROUNDS=${BENCH_INSTANCE_ROUNDS:-$([ "$QUICK" = 1 ] && echo 4 || echo 10)}
. "$ROOT/tests/slurm/env.sh"
. "$(dirname "$0")/lib.sh"
bench_mpi
mkdir -p "$ROOT/build/bench"

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
"${AS[@]}" env HOME="$W" USER="$RUNUSER" SLURM_CONF="$SLURM_CONF" python3 "$ROOT/tests/bench/interleave.py" \
	--rounds "$ROUNDS" --warmup 1 --timeout 120 "$W/variants" "$W/out.json" ||
	{ echo "89-instance: the timing loop failed"; exit 1; }
cp "$W/out.json" "$ROOT/build/bench/89-instance.json" || exit 1
python3 "$ROOT/tests/bench/ratios.py" "$W/out.json" "$ROOT/build/bench/89-instance.md" \
	--title "named instances (\`mpictr -n 8 instance://NAME hello\`, \`srun mpictr instance://NAME\`)" \
	--header "Written by \`tests/bench/89-instance.sh\` (\`make bench\`); $START, as $RUNUSER, load $LOAD0 -> $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS interleaved rounds." \
	--note "native: \`mpirun -n 8 --oversubscribe hello\` from the unpacked image; sif: \`mpictr -n 8 mpi.sif hello\` (a new container, the image mounted, per run); instance: \`mpictr -n 8 instance://NAME hello\` (the 8 ranks join the running instance: nothing mounted). srun-native: \`srun -n 16 -O /bin/true\`; srun-instance: \`srun -n 16 -O mpictr instance://NAME /bin/true\` (each task joins the instance and execs in place). Target: instance <= 1.00x native." \
	native:native sif:native instance:native srun-native:srun-native srun-instance:srun-native
