#!/bin/bash
# 85-slurm.sh - `make bench`: srun start-up with mpictr in join mode against
# the same srun without a container, on the single-node cluster of
# tests/slurm/cluster.sh:
#   srun -O -n 16 /bin/true                 vs  srun -O -n 16 mpictr tiny.sif /bin/true
#   srun -O --mpi=pmix -n 4 hello (Open MPI) vs  ... mpictr mpi.sif hello
#   srun -O --mpi=pmi2 -n 4 hello (MPICH)    vs  ... mpictr mpi.sif hello-mpich
# Variants run round-robin (this class of VM drifts by up to 4x for
# minutes), wall time of the whole srun, medians and ratios. The table goes
# to build/bench/85-slurm.md (docs/bench-slurm.md keeps a copy of a run).
#
# Knobs: BENCH_ROUNDS (10), BENCH_TASKS (16), BENCH_MPI_TASKS (4).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/slurm/env.sh"
ROUNDS=${BENCH_ROUNDS:-10}
NT=${BENCH_TASKS:-16}
NM=${BENCH_MPI_TASKS:-4}
MPICTR=$ROOT/build/mpictr
OUT=$ROOT/build/bench/85-slurm.md
mkdir -p "$ROOT/build/bench"

slurm_up || { echo "85-slurm: the Slurm cluster is not up (sudo tests/slurm/cluster.sh start); skipped"; exit 0; }
if ! unshare -U true 2>/dev/null || [ ! -w /dev/fuse ]; then
	echo "85-slurm: needs user namespaces and a usable /dev/fuse; skipped"
	exit 0
fi
IMG=${MPICTR_TEST_IMAGES:-$ROOT/build/images}
"$ROOT/tests/images/build.sh" "$IMG" all >/dev/null 2>&1 || { echo "85-slurm: tests/images/build.sh failed"; exit 1; }

W=$(mktemp -d /var/tmp/mpictr-bench-slurm.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
cd "$W" || exit 1
mpicc -O2 -o hello "$ROOT/tests/mpi/hello.c" || exit 1
mpicc.mpich -O2 -o hello-mpich "$ROOT/tests/mpi/hello.c" || exit 1

NAMES=(true-native true-join ompi-native ompi-join mpich-native mpich-join)
# The peer: Charliecloud's ch-run --join on the same image (its squashfs;
# ch-run mounts it with the squashfuse binary, and ignores the image's
# environment scripts, which mpictr sources).
HAVE_CH=0
if command -v ch-run >/dev/null && [ "${BENCH_NO_CH:-0}" = 0 ]; then
	HAVE_CH=1
	NAMES+=(true-ch)
fi
cmd() {
	case $1 in
	true-native) srun -O -n "$NT" /bin/true ;;
	true-join) srun -O -n "$NT" "$MPICTR" "$IMG/tiny.sif" /bin/true ;;
	true-ch) USER=${USER:-$(id -un)} srun -O -n "$NT" ch-run --join "$IMG/tiny.sqfs" -- /bin/true ;;
	ompi-native) srun -O --mpi=pmix -n "$NM" ./hello ;;
	ompi-join) srun -O --mpi=pmix -n "$NM" "$MPICTR" "$IMG/mpi.sif" /opt/mpictr/bin/hello ;;
	mpich-native) srun -O --mpi=pmi2 -n "$NM" ./hello-mpich ;;
	mpich-join) srun -O --mpi=pmi2 -n "$NM" "$MPICTR" "$IMG/mpi.sif" /opt/mpictr/bin/hello-mpich ;;
	esac
}
# one NAME: run it once, append its wall time (ms) to $W/t.NAME. A failure
# of mpictr or of native srun ends the benchmark; the peer's failures
# (Charliecloud's --join loses a race now and then, see the issue) are
# counted in $W/f.NAME and that run is tried again, at most 5 times.
# Also appends the machine's busy CPU time during the run (ms, all CPUs,
# from /proc/stat) to $W/c.NAME: on a small node a step is bound by CPU
# work, and this says how much each variant adds.
HZ=$(getconf CLK_TCK)
busy_ms() { awk -v hz="$HZ" '/^cpu / { print int(($2 + $3 + $4 + $7 + $8) * 1000 / hz) }' /proc/stat; }
one() {
	local t0 t1 c0 c1 try
	for try in 1 2 3 4 5; do
		c0=$(busy_ms)
		t0=$(date +%s%N)
		if timeout -k 5 120 bash -c "$(declare -f cmd); NT=$NT NM=$NM MPICTR='$MPICTR' IMG='$IMG'; cmd $1" >"$W/o" 2>&1; then
			t1=$(date +%s%N)
			c1=$(busy_ms)
			echo $(((t1 - t0) / 1000000)) >>"$W/t.$1"
			echo $((c1 - c0)) >>"$W/c.$1"
			return 0
		fi
		echo "85-slurm: $1 failed:"
		cat "$W/o"
		[ "$1" = true-ch ] || return 1
		echo x >>"$W/f.$1"
	done
	return 1
}
median() { sort -n "$W/t.$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

echo "85-slurm: warm-up, then $ROUNDS rounds of ${#NAMES[@]} variants (round-robin)"
for n in "${NAMES[@]}"; do one "$n" || exit 1; done
rm -f "$W"/t.* "$W"/f.* "$W"/c.*
for r in $(seq "$ROUNDS"); do
	for n in "${NAMES[@]}"; do one "$n" || exit 1; done
done

{
	echo "| workload | native srun (median ms) | srun mpictr, join mode (median ms) | ratio |"
	echo "|---|---:|---:|---:|"
	for pair in "true:srun -O -n $NT /bin/true" "ompi:srun -O --mpi=pmix -n $NM hello (Open MPI)" "mpich:srun -O --mpi=pmi2 -n $NM hello (MPICH)"; do
		k=${pair%%:*}
		a=$(median "$k-native")
		b=$(median "$k-join")
		echo "| ${pair#*:} | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", b / a }') |"
	done
	if [ "$HAVE_CH" = 1 ]; then
		a=$(median true-native)
		b=$(median true-ch)
		echo "| srun -O -n $NT ch-run --join tiny.sqfs -- /bin/true (Charliecloud, the peer) | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", b / a }') |"
	fi
	if [ -s "$W/f.true-ch" ]; then
		echo
		echo "Charliecloud's \`--join\` failed $(wc -l <"$W/f.true-ch") of" \
			"$(($(wc -l <"$W/t.true-ch") + $(wc -l <"$W/f.true-ch"))) runs (tried again; the failed runs are not timed)."
	fi
	echo
	echo "Busy CPU time of the machine during a run (all $(nproc) CPUs, /proc/stat, mean ms):"
	echo
	echo "| variant | busy CPU (ms) | wall (median ms) |"
	echo "|---|---:|---:|"
	for n in "${NAMES[@]}"; do
		echo "| $n | $(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$W/c.$n") | $(median "$n") |"
	done
	echo
	echo "$ROUNDS rounds, variants interleaved round-robin after one warm-up round;" \
		"wall time of the whole srun as $(id -un), $(nproc) CPUs, $(date -u +%Y-%m-%d)."
} >"$OUT"
cat "$OUT"
