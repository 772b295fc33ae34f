#!/bin/bash
# 86-daemon.sh - `make bench`: MPI hello (Open MPI, 4 ranks) under srun in
# node daemon mode and in join mode against native srun, side by side, on
# the Slurm of tests/slurm/cluster.sh (join mode: srun -n 4 mpictr IMAGE
# hello, -N 2 -n 4 on 2 nodes):
#   1 node:  srun -n 1 --mpi=pmix mpictr -n 4 mpi.sif hello
#            vs srun -n 4 --mpi=pmix hello
#   2 nodes: srun -N 2 --ntasks-per-node=1 --mpi=pmix mpictr -n 2 mpi.sif hello
#            vs srun -N 2 -n 4 --mpi=pmix hello
# Wall time of the whole srun, variants interleaved round-robin (this class
# of VM drifts by up to 4x for minutes), medians and ratios. The native
# hello is built from the same source with the host's mpicc.
#
# Knobs: BENCH_ROUNDS (7).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/slurm/env.sh"
MPICTR=$ROOT/build/mpictr
ROUNDS=${BENCH_ROUNDS:-7}
OUT=$ROOT/build/bench/86-daemon.md
mkdir -p "$ROOT/build/bench"

command -v mpicc >/dev/null || { echo "86-daemon: needs mpicc; skipped"; exit 0; }
[ -x "$MPICTR" ] || { echo "86-daemon: build mpictr first"; exit 1; }
IMG=$("$ROOT/tests/images/build.sh" "$ROOT/build/images" mpi >/dev/null 2>&1 && echo "$ROOT/build/images/mpi.sif")
[ -n "$IMG" ] || { echo "86-daemon: building the mpi image failed"; exit 1; }
HAVE1=no HAVE2=no
slurm_up && HAVE1=yes
slurm_multi_up 2 && HAVE2=yes
if [ $HAVE1 = no ] && [ $HAVE2 = no ]; then
	echo "86-daemon: no Slurm cluster up (sudo tests/slurm/cluster.sh start [--nodes 2]); skipped"
	exit 0
fi

# Nodes have a private /tmp: the native program lives where all see it.
W=$(mktemp -d /var/tmp/mpictr-bench-daemon.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
mpicc -O2 -o "$W/hello" "$ROOT/tests/mpi/hello.c" || { echo "mpicc failed"; exit 1; }
cd "$W" || exit 1

T="timeout -k 5 120"
run() { # VARIANT -> ns on stdout, or nothing on failure
	local v=$1 t0 t1 rc
	t0=$(date +%s%N)
	case $v in
	native-1) $T srun -O -n 4 --mpi=pmix ./hello ;;
	daemon-1) $T srun -O -n 1 --mpi=pmix "$MPICTR" -n 4 "$IMG" /opt/mpictr/bin/hello ;;
	join-1) $T srun -O -n 4 --mpi=pmix "$MPICTR" "$IMG" /opt/mpictr/bin/hello ;;
	native-2) SLURM_CONF=$SLURM_CONF_MULTI $T srun -O -N 2 -n 4 --mpi=pmix ./hello ;;
	daemon-2) SLURM_CONF=$SLURM_CONF_MULTI $T srun -N 2 --ntasks-per-node=1 --mpi=pmix "$MPICTR" -n 2 "$IMG" /opt/mpictr/bin/hello ;;
	join-2) SLURM_CONF=$SLURM_CONF_MULTI $T srun -O -N 2 -n 4 --mpi=pmix "$MPICTR" "$IMG" /opt/mpictr/bin/hello ;;
	esac >"$W/out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	[ $rc = 0 ] && [ "$(grep -c 'allreduce 6 ok' "$W/out")" = 4 ] && echo $((t1 - t0))
}

VARIANTS=
[ $HAVE1 = yes ] && VARIANTS="native-1 join-1 daemon-1"
[ $HAVE2 = yes ] && VARIANTS="$VARIANTS native-2 join-2 daemon-2"
declare -A T_NS
for r in $(seq "$ROUNDS"); do
	for v in $VARIANTS; do
		ns=$(run "$v")
		[ -n "$ns" ] || { echo "round $r $v failed: $(head -3 "$W/out")"; ns=NA; }
		T_NS[$v]="${T_NS[$v]:-} $ns"
		printf 'round %d %-9s %s ms\n' "$r" "$v" "$([ "$ns" = NA ] && echo NA || echo $((ns / 1000000)))"
	done
done

median() { tr ' ' '\n' | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print ""}'; }
{
	echo "MPI hello (Open MPI 4.1, MPI_Init + Allreduce + Finalize, 4 ranks), wall time of"
	echo "the whole srun. Median of $ROUNDS interleaved rounds, $(nproc) CPUs, Slurm of"
	echo "tests/slurm/cluster.sh (2 nodes = network namespaces on one machine)."
	echo
	echo "| nodes | native srun --mpi=pmix | join mode (srun mpictr) | ratio | node daemon (srun mpictr -n) | ratio |"
	echo "|---|---|---|---|---|---|"
	for n in 1 2; do
		case " $VARIANTS " in *" native-$n "*) ;; *) continue ;; esac
		a=$(echo "${T_NS[native-$n]}" | median)
		j=$(echo "${T_NS[join-$n]}" | median)
		b=$(echo "${T_NS[daemon-$n]}" | median)
		awk -v n=$n -v a="${a:-0}" -v j="${j:-0}" -v b="${b:-0}" 'BEGIN {
			printf "| %d | %s | %s | %s | %s | %s |\n", n,
			a ? sprintf("%.3f s", a/1e9) : "failed",
			j ? sprintf("%.3f s", j/1e9) : "failed",
			(a && j) ? sprintf("%.2f", j/a) : "-",
			b ? sprintf("%.3f s", b/1e9) : "failed",
			(a && b) ? sprintf("%.2f", b/a) : "-" }'
	done
} | tee "$OUT"
echo "results: $OUT"
