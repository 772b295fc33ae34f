#!/bin/bash
# 85-slurm.sh - `make bench`: srun start-up with mpictr in join mode against
# the same srun without a container, on the single-node cluster of
# tests/slurm/cluster.sh:
#   srun -O -n 16 /bin/true                 vs  srun -O -n 16 mpictr tiny.sif /bin/true
#   srun -O --mpi=pmix -n 4 hello (Open MPI) vs  ... mpictr mpi.sif hello
#   srun -O --mpi=pmi2 -n 4 hello (MPICH)    vs  ... mpictr mpi.sif hello-mpich
# Variants run round-robin (tests/bench/slurm-lib.sh), wall time of the
# whole srun, medians and ratios. The table goes to build/bench/85-slurm.md
# (docs/bench-slurm.md keeps a copy of a run).
#
# Knobs: BENCH_ROUNDS (10), BENCH_TASKS (16), BENCH_MPI_TASKS (4).
set -u
BENCH=85-slurm
. "$(dirname "$0")/slurm-lib.sh"
export NT=${BENCH_TASKS:-16}
export NM=${BENCH_MPI_TASKS:-4}
mpicc -O2 -o hello "$ROOT/tests/mpi/hello.c" || exit 1
mpicc.mpich -O2 -o hello-mpich "$ROOT/tests/mpi/hello.c" || exit 1

NAMES=(true-native true-join ompi-native ompi-join mpich-native mpich-join)
with_ch
cmd() {
	case $1 in
	true-native) srun -O -n "$NT" /bin/true ;;
	true-join) srun -O -n "$NT" "$MPICTR" "$IMG/tiny.sif" /bin/true ;;
	true-ch) ch_true ;;
	ompi-native) srun -O --mpi=pmix -n "$NM" ./hello ;;
	ompi-join) srun -O --mpi=pmix -n "$NM" "$MPICTR" "$IMG/mpi.sif" /opt/mpictr/bin/hello ;;
	mpich-native) srun -O --mpi=pmi2 -n "$NM" ./hello-mpich ;;
	mpich-join) srun -O --mpi=pmi2 -n "$NM" "$MPICTR" "$IMG/mpi.sif" /opt/mpictr/bin/hello-mpich ;;
	esac
}
rounds

{
	echo "| workload | native srun (median ms) | srun mpictr, join mode (median ms) | ratio |"
	echo "|---|---:|---:|---:|"
	for pair in "true:srun -O -n $NT /bin/true" "ompi:srun -O --mpi=pmix -n $NM hello (Open MPI)" "mpich:srun -O --mpi=pmi2 -n $NM hello (MPICH)"; do
		k=${pair%%:*}
		echo "| ${pair#*:} | $(median "$k-native") | $(median "$k-join") | $(ratio "$k-native" "$k-join") |"
	done
	if [ "$HAVE_CH" = 1 ]; then
		echo "| srun -O -n $NT ch-run --join tiny.sqfs -- /bin/true (Charliecloud, the peer) | $(median true-native) | $(median true-ch) | $(ratio true-native true-ch) |"
	fi
	peer_failures true-ch
	cpu_table
} >"$OUT"
cat "$OUT"
