#!/bin/bash
# 86-slurm-daemon.sh - node daemon mode: `srun --ntasks-per-node=1
# --mpi=pmix mpictr -n N IMAGE CMD` on the Slurm of tests/slurm/cluster.sh.
# One mpictr per node launches N ranks in one namespace set; its servers
# register the global job and forward fences (PMIx) and barriers (PMI-1)
# through the upstream agent, Slurm's PMIx client. Two namespaced nodes
# (SLURM_CONF_MULTI) and the single-node cluster.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"

T="timeout -k 5 120"
B=/opt/mpictr/bin
require_userns_fuse
require_images mpi
I=$IMG/mpi.sif
# Multi-node jobs need a directory every node sees (each has a private /tmp).
W=$(mktemp -d /var/tmp/mpictr-daemon.XXXXXX) || exit 1
chmod 0755 "$W"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
LAST=$W/last
keep() { cp "$T_OUT" "$LAST"; }
nlines() { grep -cE "$1" "$LAST"; }

# Nothing of ours may outlive a job: no mpictr process (supervisor, agent,
# holder, FUSE workers, janitor) and no rank of this image.
no_leftovers() {
	local i
	for i in $(seq 50); do
		pgrep -f "$MPICTR .*$I" >/dev/null || return 0
		sleep 0.1
	done
	echo "left behind:"; pgrep -af "$MPICTR .*$I"; return 1
}

if ! slurm_multi_up 2; then
	need "2-node Slurm (namespaces) answers sinfo" "the multi-node cluster (sudo tests/slurm/cluster.sh start --nodes 2)"
else
	M="env SLURM_CONF=$SLURM_CONF_MULTI"
	SR="$M $T srun -N 2 --ntasks-per-node=1 --mpi=pmix"

	ok "2 nodes x 2: Open MPI hello" $SR "$MPICTR" -n 2 "$I" $B/hello
	keep
	check "... 4 ranks of 4, universe 4, allreduce 6 on every rank" test "$(nlines '^hello rank [0-3]/4 on node[12] universe 4 allreduce 6 ok')" = 4
	check "... global ranks 0,1 on node1 and 2,3 on node2" bash -c "
		[ \"\$(grep -oE '^hello rank [0-3]/4 on node[12]' '$LAST' | sort | tr '\n' ' ')\" = \\
		  'hello rank 0/4 on node1 hello rank 1/4 on node1 hello rank 2/4 on node2 hello rank 3/4 on node2 ' ]"
	ns_per_node() { # NODE -> number of distinct userns/mntns pairs
		grep "^hello rank .* on $1 " "$LAST" | sed 's/.* userns \(.*\) uid.*/\1/' | sort -u | wc -l
	}
	check "... one user+mount namespace per node" bash -c "$(declare -f ns_per_node); LAST='$LAST'; [ \$(ns_per_node node1) = 1 ] && [ \$(ns_per_node node2) = 1 ]"
	check "... ranks keep the user's uid" test "$(nlines " uid $(id -u)\$")" = 4
	check "nothing left behind" no_leftovers

	# vader needs PMIx's locality (LOCAL_PEERS) to be right; tcp carries
	# the traffic between the nodes. btl_base_verbose shows the choice.
	ok "Open MPI ob1 with btl self,vader,tcp: alltoall within and between nodes" \
		$M OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp $T srun -N 2 --ntasks-per-node=1 --mpi=pmix "$MPICTR" -n 2 "$I" $B/alltoall 3
	keep
	check "... alltoall ok" grep -qx 'alltoall ok' "$LAST"
	ok "Open MPI btl self,vader only: ranks on the other node are unreachable (locality is per node)" \
		bash -c "! $M OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader $T srun -N 2 --ntasks-per-node=1 --mpi=pmix '$MPICTR' -n 2 '$I' $B/hello >'$LAST' 2>&1 && grep -qiE 'unreachable|not be able to|Open MPI' '$LAST'"
	check "nothing left behind" no_leftovers

	# The two "nodes" share one kernel; UCX (MPICH's transport) tells
	# machines apart by boot_id. cluster.sh gives every node its own (no
	# bind needed: 95-scale.sh runs MPICH on 8 nodes without one). Only a
	# 2-node cluster started by an older cluster.sh shows one boot_id on
	# both nodes: then bind one per node into the container, as before.
	BOOT=
	if [ "$($M $T srun -N 2 --ntasks-per-node=1 cat /proc/sys/kernel/random/boot_id 2>/dev/null | sort -u | wc -l)" != 2 ]; then
		echo "# the 2-node cluster predates per-node boot ids (restart it with tests/slurm/cluster.sh): binding one" >&2
		$M $T srun -N 2 --ntasks-per-node=1 sh -c 'cat /proc/sys/kernel/random/uuid >/tmp/mpictr-daemon-boot_id' >/dev/null 2>&1
		BOOT="-B /tmp/mpictr-daemon-boot_id:/proc/sys/kernel/random/boot_id"
	fi
	# MPICH 4.0.2 disconnects its UCX endpoints before its last PMI
	# barrier; over UCX tcp that sometimes hangs in MPI_Finalize, natively
	# under srun --mpi=pmi2 as well (2 of 6 runs here). What must succeed
	# is everything before: start-up, the exchange, its check.
	mpich() { # OUT PROGRAM ARGS...
		# MPICH 4.0.2 can hang in MPI_Finalize over UCX tcp (reproduced
		# with native srun --mpi=pmi2, no mpictr: docs/pmi.md); such a
		# run (124/137 from timeout) is retried, at most 3 runs in all.
		local out=$W/$1 rc try; shift
		for try in 1 2 3; do
			$M timeout -k 5 40 srun -N 2 --ntasks-per-node=1 --mpi=pmix "$MPICTR" $BOOT -n 2 "$I" "$@" >"$out" 2>&1
			rc=$?
			[ $rc = 124 ] || [ $rc = 137 ] || break
			echo "# run $try hung in MPICH's finalize (exit $rc); retrying" >&2
		done
		cp "$out" "$LAST"
		[ $rc = 0 ] || echo "exit $rc (MPICH 4.0.2 finalize over UCX tcp hangs at times)"
		[ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ]
	}
	ok "2 nodes x 2: MPICH hello (PMI-1 barriers allgathered through the agent)" mpich hm $B/hello-mpich
	check "... 4 ranks of 4, allreduce 6, ranks 0,1 on node1 and 2,3 on node2" bash -c "
		[ \"\$(grep -oE '^hello rank [0-3]/4 on node[12] universe 4 allreduce 6 ok' '$LAST' | cut -d' ' -f3-5 | sort | tr '\n' ' ')\" = \\
		  '0/4 on node1 1/4 on node1 2/4 on node2 3/4 on node2 ' ] || { cat '$LAST'; false; }"
	ok "2 nodes x 2: MPICH alltoall 1 B .. 1 MiB" mpich a2a $B/alltoall-mpich 3
	check "... alltoall ok" grep -qx 'alltoall ok' "$LAST"
	[ -z "$BOOT" ] || $M $T srun -N 2 --ntasks-per-node=1 rm -f /tmp/mpictr-daemon-boot_id >/dev/null 2>&1
	check "nothing left behind" no_leftovers

	abort_step() {
		local t0=$SECONDS rc
		$SR "$MPICTR" -n 2 "$I" $B/abort >"$W/abort" 2>&1
		rc=$?
		[ $rc != 0 ] && [ $rc != 124 ] && [ $((SECONDS - t0)) -le 30 ] ||
			{ echo "rc=$rc after $((SECONDS - t0)) s"; cat "$W/abort"; return 1; }
	}
	ok "MPI_Abort in rank 1 ends the whole step (both nodes) within 30 s" abort_step
	check "nothing left behind" no_leftovers
	# (the probe runs in /, which every node has; what it lists is on
	# stdout, what Slurm says on stderr: only a failed srun counts that)
	step_dirs_gone() {
		$M $T srun --chdir=/ -N 2 --ntasks-per-node=1 sh -c "ls -d /tmp/mpictr-$(id -u).* /tmp/mpictr-pmi.* /tmp/spmix_appdir_*/mpictr-* 2>/dev/null; true" >"$W/ls" 2>"$W/ls.err" ||
			{ echo "srun failed:"; cat "$W/ls.err"; return 1; }
		[ ! -s "$W/ls" ] || { cat "$W/ls"; return 1; }
	}
	check "no job directory left in either node's /tmp" step_dirs_gone
	# the nodes' daemons run in /, whatever directory the cluster was
	# started from (a directory under /tmp is not on the nodes)
	check "... and no node's slurmstepd lost its working directory" \
		bash -c "! grep 'working directory' '$W/ls.err'"

	ok_status "two srun tasks on one node: refused (exit 255)" 255 \
		$M $T srun -N 1 -n 2 --mpi=pmix "$MPICTR" -n 2 "$I" /bin/true
	keep
	check "... with a message naming the variable" grep -q 'one srun task per node.*SLURM_STEP_TASKS_PER_NODE' "$LAST"
	check "nothing left behind" no_leftovers
fi

if ! slurm_up; then
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
else
	ok "1 node: srun -n 1 --mpi=pmix mpictr -n 4 hello (Open MPI)" $T srun -O -n 1 --mpi=pmix "$MPICTR" -n 4 "$I" $B/hello
	keep
	check "... 4 ranks of 4, allreduce 6, one namespace set" bash -c "[ \$(grep -cE '^hello rank [0-3]/4 .* universe 4 allreduce 6 ok' '$LAST') = 4 ] &&
		[ \$(grep '^hello rank' '$LAST' | sed 's/.* userns \(.*\) uid.*/\1/' | sort -u | wc -l) = 1 ]"
	ok "1 node: MPICH alltoall -n 4" bash -c "$T srun -O -n 1 --mpi=pmix '$MPICTR' -n 4 '$I' $B/alltoall-mpich 3 | grep -qx 'alltoall ok'"
	check "nothing left behind" no_leftovers
fi
done_testing
