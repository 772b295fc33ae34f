#!/bin/bash
# 80-slurm-native.sh - the Slurm of tests/slurm/cluster.sh works natively
# (no container): plain tasks, Open MPI over --mpi=pmix, MPICH over
# --mpi=pmi2, and across two namespaced nodes. Every later Slurm test
# stands on this; under CI a missing cluster is a failure.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"

T="timeout -k 5 60"
LAST=$T_TMP/last
keep() { cp "$T_OUT" "$LAST"; }
nlines() { grep -cE "$1" "$LAST"; }

if ! slurm_up; then
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
	done_testing
	exit
fi
ok "single-node Slurm answers sinfo" sinfo
ok "srun --mpi=list offers pmix and pmi2" bash -c "srun --mpi=list 2>&1 | grep -q pmix && srun --mpi=list 2>&1 | grep -q pmi2"

# programs go to a directory every node sees (multi-node nodes have a
# private /tmp, /var/tmp is shared)
W=$(mktemp -d /var/tmp/mpictr-slurm-native.XXXXXX) || exit 1
trap 't_cleanup; rm -rf "$W"' EXIT
ok "compile hello with mpicc (Open MPI) and mpicc.mpich" bash -c "
	mpicc -O2 -o '$W/hello' '$ROOT/tests/mpi/hello.c' &&
	mpicc.mpich -O2 -o '$W/hello-mpich' '$ROOT/tests/mpi/hello.c'"
cd "$W" || exit 1

ok "srun -O -n 4 hostname" $T srun -O -n 4 hostname
keep
check "... prints the node name 4 times" test "$(nlines "^$(hostname -s)\$")" = 4

ok "srun -O --mpi=pmix -n 4 hello (Open MPI)" $T srun -O --mpi=pmix -n 4 ./hello
keep
check "... 4 ranks of 4, allreduce ok" test "$(nlines '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
check "... ranks keep the user's uid" test "$(nlines " uid $(id -u)\$")" = 4

ok "srun -O --mpi=pmi2 -n 4 hello-mpich (MPICH)" $T srun -O --mpi=pmi2 -n 4 ./hello-mpich
keep
check "... 4 ranks of 4, allreduce ok" test "$(nlines '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4

ok_fail "srun -n 1 false fails" $T srun -O -n 1 false

if ! slurm_multi_up 2; then
	need "2-node Slurm (namespaces) answers sinfo" "the multi-node cluster (sudo tests/slurm/cluster.sh start --nodes 2)"
else
	ok "srun -N 2 -n 4 hostname across two nodes" env SLURM_CONF="$SLURM_CONF_MULTI" $T srun -O -N 2 -n 4 hostname
	keep
	check "... two tasks on node1, two on node2" bash -c "[ \$(grep -cx node1 '$LAST') = 2 ] && [ \$(grep -cx node2 '$LAST') = 2 ]"
	ok "srun -N 2 -n 4 --mpi=pmix hello across two nodes" env SLURM_CONF="$SLURM_CONF_MULTI" $T srun -O -N 2 -n 4 --mpi=pmix ./hello
	keep
	check "... 4 ranks, allreduce ok" test "$(nlines '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
	check "... ranks on node1 and node2" bash -c "grep -q ' on node1 ' '$LAST' && grep -q ' on node2 ' '$LAST'"
	# MPICH 4.0.2 hangs in MPI_Finalize over UCX tcp between nodes in
	# about one run of five here, natively (rank 0 in ucp_worker_progress
	# flushing its endpoints, the others in the PMI barrier, which does
	# not progress UCX; UCX issue 8738, docs/pmi.md); 86, 87 and 95 treat
	# it alike. What this test must show is the launch and the exchange:
	# a run that gave every right answer and then hung (124/137) counts,
	# said so on stderr.
	native_mpich() {
		local rc
		env SLURM_CONF="$SLURM_CONF_MULTI" timeout -k 5 30 srun -O -N 2 -n 4 --mpi=pmi2 ./hello-mpich >"$T_TMP/mpich2" 2>&1
		rc=$?
		cat "$T_TMP/mpich2"
		[ $rc = 0 ] && return 0
		{ [ $rc = 124 ] || [ $rc = 137 ]; } &&
			[ "$(grep -cE '^hello rank [0-3]/4 .* allreduce 6 ok' "$T_TMP/mpich2")" = 4 ] || return $rc
		echo "# every rank answered, then MPICH's finalize hung (exit $rc, MPICH 4.0.2 over UCX tcp)" >&2
	}
	ok "srun -N 2 -n 4 --mpi=pmi2 hello-mpich across two nodes" native_mpich
	keep
	check "... 4 ranks, allreduce ok" test "$(nlines '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
fi
done_testing
