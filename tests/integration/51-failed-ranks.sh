#!/bin/bash
# 51-failed-ranks.sh - under `mpictr -n`, the first rank that fails is
# named as mpirun names it (rank, pid, node, exit status or signal) on
# stderr, the others are ended, and their output (--tag-output) is
# complete (issue 28). Failed on the old code: nothing was printed.
. "$(dirname "$0")/lib.sh"

require_userns_fuse
require_images mpi
cd "$T_TMP" || exit 1
private_tmpdir
I=$IMG/mpi.sif
T="timeout -k 5 60"

# The rank program: print the pid and 300 lines, then rank FAIL fails
# (HOW: kill = SIGKILL itself, exit = exit 5) after 0.5 s; the others
# sleep. Output in $T_TMP/NAME.out (stdout) and NAME.err.
ranks() { # NAME HOW FAIL
	local n=$1 t0 rc
	t0=$(date +%s)
	$T "$MPICTR" --tag-output -n 4 "$I" sh -c '
		r=$PMIX_RANK; echo "pid $r $$"
		i=0; while [ $i -lt 300 ]; do echo "line $r $i"; i=$((i + 1)); done
		if [ "$r" = '"$3"' ]; then
			sleep 0.5
			case '"$2"' in kill) kill -KILL $$ ;; exit) exit 5 ;; esac
		fi
		exec sleep 30' >"$T_TMP/$n.out" 2>"$T_TMP/$n.err"
	rc=$?
	echo "$rc $(($(date +%s) - t0))" >"$T_TMP/$n.rc"
}
status_is() { read -r rc secs <"$T_TMP/$1.rc"; [ "$rc" = "$2" ] && [ "$secs" -lt 10 ] || { echo "status $rc after $secs s"; cat "$T_TMP/$1.err"; return 1; }; }
pid_of() { sed -n "s/^\[$2\] pid $2 //p" "$T_TMP/$1.out"; }
# complete NAME: every rank's 300 lines are there, each tagged
complete() {
	local r
	for r in 0 1 2 3; do
		[ "$(grep -c "^\[$r\] line $r [0-9]*\$" "$T_TMP/$1.out")" = 300 ] || { echo "rank $r: $(grep -c "^\[$r\] line" "$T_TMP/$1.out") lines"; return 1; }
	done
}

ranks kill kill 1
check "a rank killed by SIGKILL: mpictr exits 137, in under 10 s" status_is kill 137
check "... names rank 1, its pid, the node and SIGKILL on stderr" \
	grep -qE "^mpictr: error: rank 1 \(pid $(pid_of kill 1)\) on node $(hostname) was killed by signal 9 \(SIGKILL\); ending the other ranks\$" "$T_TMP/kill.err"
check "... only the first failure is named" test "$(grep -c 'error: rank' "$T_TMP/kill.err")" = 1
check "... every rank's 300 tagged lines are complete" complete kill

ranks exit exit 2
check "a rank exiting 5: mpictr exits 5, in under 10 s" status_is exit 5
check "... names rank 2, its pid and status 5" \
	grep -qE "^mpictr: error: rank 2 \(pid $(pid_of exit 2)\) on node $(hostname) exited with status 5; ending the other ranks\$" "$T_TMP/exit.err"
check "... every rank's 300 tagged lines are complete" complete exit

# Node daemon mode (one srun task per node running mpictr -n N): the same
# report, with the global rank.
. "$ROOT/tests/slurm/env.sh"
if slurm_up; then
	ok "node daemon mode (srun --mpi=pmix -n 1 mpictr -n 2): a rank killed by SIGKILL" \
		bash -c "$T srun -O -n 1 --mpi=pmix '$MPICTR' --tag-output -n 2 '$I' sh -c '
			echo \"pid \$PMIX_RANK \$\$\"; [ \"\$PMIX_RANK\" = 1 ] && { sleep 0.5; kill -KILL \$\$; }; exec sleep 30' >'$T_TMP/nd.out' 2>'$T_TMP/nd.err'; [ \$? != 0 ]"
	check "... names rank 1 and its pid on stderr" \
		grep -qE "^mpictr: error: rank 1 \(pid $(sed -n 's/^\[1\] pid 1 //p' "$T_TMP/nd.out")\) on node [^ ]+ was killed by signal 9 \(SIGKILL\)" "$T_TMP/nd.err"
else
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

ok "a job whose ranks all succeed names none" bash -c "$T '$MPICTR' -n 2 '$I' true 2>&1 | grep -c 'error: rank' | grep -qx 0"
ok "a single process (no -n) that fails is not reported as a rank" bash -c "$T '$MPICTR' '$I' sh -c 'exit 3' 2>&1 | grep -c 'rank' | grep -qx 0"

done_testing
