#!/bin/bash
# 88-spawn.sh - MPI dynamic processes under `mpictr -n N` (issue 16):
# MPI_Comm_spawn and MPI_Comm_spawn_multiple through mpictr's PMIx server
# (the children in the ranks' user namespace), a child that aborts or is
# killed, publish/lookup with connect/accept between two spawned groups,
# MPI_UNIVERSE_SIZE and --universe-size, a group SIGTERM (timeout), and
# nothing left behind. tests/mpi/spawn.c is the program;
# tests/images/mpi4py.sh builds the mpi4py.futures image. (MPICH 4.0.2
# cannot spawn, natively neither: it fails before any PMI request; the
# PMI-1 refusal is in check_pmi.c.)
. "$(dirname "$0")/lib.sh"

require_userns_fuse
require_images mpi
cd "$T_TMP" || exit 1
private_tmpdir
S=/opt/mpictr/bin/spawn
I=$IMG/mpi.sqfs
T="timeout -k 5 120"

# run NAME CMD...: output in $T_TMP/NAME.out, status returned
run() { local n=$1; shift; "$@" >"$T_TMP/$n.out" 2>&1; }
# merged_ok NAME ROLE COUNT SIZE: COUNT lines of ROLE merged into a
# communicator of SIZE with a right allreduce
merged_ok() {
	[ "$(grep -c "^$2 merged [0-9]*/$4 allreduce $4 ok" "$T_TMP/$1.out")" = "$3" ] ||
		{ cat "$T_TMP/$1.out"; return 1; }
}
# one_userns NAME: every process printed the same user namespace, not the
# host's
one_userns() {
	local ns
	ns=$(grep ' userns ' "$T_TMP/$1.out" | sed 's/.* userns //' | sort -u)
	[ "$(echo "$ns" | wc -l)" = 1 ] && [ -n "$ns" ] &&
		[ "$ns" != "$(readlink /proc/self/ns/user)" ] || { cat "$T_TMP/$1.out"; return 1; }
}
nothing_left() {
	local left
	left=$(marked_procs)
	[ -z "$left" ] && [ -z "$(ls -A "$TMPDIR")" ] ||
		{ echo "left: $left"; ls -la "$TMPDIR"; return 1; }
}

# status_clean WANT CMD...: CMD exits with WANT and leaves nothing behind
status_clean() {
	local want=$1 got
	shift
	"$@"
	got=$?
	[ "$got" = "$want" ] || { echo "exit status $got, expected $want"; return 1; }
	nothing_left
}

ok "MPI_Comm_spawn: 2 ranks spawn 2, allreduce over the merged intercommunicator" \
	run sp $T "$MPICTR" --universe-size 4 -n 2 "$I" $S parent 2
check "spawn: 2 parents and 2 children in a merged communicator of 4, one user namespace (the container's)" \
	bash -c "$(declare -f merged_ok one_userns); T_TMP='$T_TMP' merged_ok sp parent 2 4 && T_TMP='$T_TMP' merged_ok sp child 2 4 && T_TMP='$T_TMP' one_userns sp"

ok "MPI_Comm_spawn_multiple: 2 ranks spawn 1 + 2 (two apps)" \
	run mul $T "$MPICTR" --universe-size 5 -n 2 "$I" $S multiple
check "spawn_multiple: 2 parents and 3 children in one communicator of 5, one user namespace" \
	bash -c "$(declare -f merged_ok one_userns); T_TMP='$T_TMP' merged_ok mul parent 2 5 && T_TMP='$T_TMP' merged_ok mul child 3 5 && T_TMP='$T_TMP' one_userns mul"

ok "a spawned child calls MPI_Abort(9): the job ends with 9, nothing left" \
	status_clean 9 $T "$MPICTR" --universe-size 3 -n 2 "$I" $S abort
ok "a spawned child is killed (SIGKILL): the job ends with 137 as under mpirun, nothing left" \
	status_clean 137 $T "$MPICTR" --universe-size 3 -n 2 "$I" $S kill

nofin() {
	status_clean 1 run nofin $T "$MPICTR" --universe-size 3 -n 2 "$I" $S nofin &&
		grep -q 'spawned process .* exited without finalizing MPI' "$T_TMP/nofin.out" ||
		{ cat "$T_TMP/nofin.out"; return 1; }
}
ok "a spawned child exits 0 without MPI_Finalize: the job ends with 1 as under mpirun, says why, nothing left" nofin

ok "publish/lookup + connect/accept between spawned groups, two accepts on one port" \
	run ports $T "$MPICTR" --universe-size 7 -n 1 "$I" $S ports
check "ports: the server group and each client group allreduce over their merged intercommunicator" \
	bash -c "$(declare -f merged_ok one_userns); T_TMP='$T_TMP' merged_ok ports server 4 4 && T_TMP='$T_TMP' merged_ok ports client 4 4 && grep -q '^parent ports done: 2 servers 4 clients' '$T_TMP/ports.out' && T_TMP='$T_TMP' one_userns ports"

# The default universe: the cores mpictr may run on, or N when larger.
cores=$(t_cores)
ok "default MPI_UNIVERSE_SIZE: the cores ($cores) with -n 1, as mpirun's; N with -n $((cores + 1))" \
	bash -c "$T '$MPICTR' -n 1 '$I' $S universe 0 2>&1 | grep -x 'universe size $cores' && $T '$MPICTR' -n $((cores + 1)) '$I' $S universe 0 2>&1 | grep -cx 'universe size $((cores + 1))' | grep -qx 1"
# (from one rank: Open MPI 4.1.4 hangs after a failed spawn from several,
# under its own mpirun too)
# The universe is advice (issue 28): -n oversubscribes, so spawning past
# it works, as under mpirun --oversubscribe (it failed on the old code).
ok "spawning past the default universe works (as mpirun --oversubscribe)" \
	run past $T "$MPICTR" -n 1 "$I" $S universe "$cores"
check "... $cores children, $((cores + 1)) in the merged communicator" \
	bash -c "$(declare -f merged_ok); T_TMP='$T_TMP' merged_ok past child $cores $((cores + 1))"
ok "spawning past --universe-size 2 works too" run past2 $T "$MPICTR" --universe-size 2 -n 1 "$I" $S universe 3
check "... 3 children, 4 in the merged communicator" \
	bash -c "$(declare -f merged_ok); T_TMP='$T_TMP' merged_ok past2 child 3 4"
run hard $T "$MPICTR" --no-oversubscribe --universe-size 2 -n 1 "$I" $S universe 2
check "--no-oversubscribe: past --universe-size a clean MPI_ERR_SPAWN, mpictr says why, the job goes on" \
	bash -c "grep -q '^universe spawn of 2 failed: MPI_ERR_SPAWN' '$T_TMP/hard.out' && grep -q \"slots are in use (hint: raise it with --universe-size, or drop --no-oversubscribe)\" '$T_TMP/hard.out' || { cat '$T_TMP/hard.out'; exit 1; }"
printf 'oversubscribe = no\n' >"$T_TMP/noover.conf"
run hardk env MPICTR_CONF="$T_TMP/noover.conf" $T "$MPICTR" --universe-size 2 -n 1 "$I" $S universe 2
check "the configuration key oversubscribe = no does the same" \
	bash -c "grep -q '^universe spawn of 2 failed: MPI_ERR_SPAWN' '$T_TMP/hardk.out' || { cat '$T_TMP/hardk.out'; exit 1; }"
run hardc $T "$MPICTR" --no-oversubscribe -n 1 "$I" $S universe "$cores"
check "--no-oversubscribe alone: the default universe ($cores) is the limit" \
	bash -c "grep -q '^universe spawn of $cores failed: MPI_ERR_SPAWN' '$T_TMP/hardc.out' || { cat '$T_TMP/hardc.out'; exit 1; }"
ok "--universe-size 3: MPI_UNIVERSE_SIZE 3, 1 rank spawns 2" \
	run us $T "$MPICTR" --universe-size 3 -n 1 "$I" $S universe 2
check "--universe-size 3: seen by the rank, 3 in the merged communicator" \
	bash -c "grep -qx 'universe size 3' '$T_TMP/us.out' && $(declare -f merged_ok); T_TMP='$T_TMP' merged_ok us child 2 3"
ok "--universe-size 0 and x are refused, naming the option" \
	bash -c "'$MPICTR' --universe-size 0 -n 1 '$I' true 2>&1 | grep -F \"invalid --universe-size '0' (expected 1..65536)\" && '$MPICTR' --universe-size x -n 1 '$I' true 2>&1 | grep -F \"invalid --universe-size 'x'\""

ok "--tag-output tags spawned processes [job.rank]" \
	bash -c "$T '$MPICTR' --tag-output --universe-size 2 -n 1 '$I' $S parent 1 >'$T_TMP/tag.out' 2>&1 && grep -q '^\[0\] parent merged 0/2' '$T_TMP/tag.out' && grep -q '^\[1\.0\] child merged 1/2' '$T_TMP/tag.out' || { cat '$T_TMP/tag.out'; exit 1; }"

# `timeout` sends its SIGTERM to the whole process group: the holder and
# the image's FUSE workers must outlive the ranks, here ranks that ignore
# it and read the image for 2 s more (the issue's "namespace holder exited
# early (status 0xf)").
group_term() {
	status_clean 124 run grp timeout 1 "$MPICTR" -n 2 "$I" sh -c 'trap "" TERM; i=0
		while [ $i -lt 10 ]; do cat /opt/mpictr/bin/hello >/dev/null || exit 9; usleep 200000; i=$((i + 1)); done
		echo read-ok' &&
		[ "$(grep -c '^read-ok$' "$T_TMP/grp.out")" = 2 ] &&
		! grep -E 'holder exited early|squashfs worker' "$T_TMP/grp.out" ||
		{ cat "$T_TMP/grp.out"; return 1; }
}
check "a SIGTERM to the process group (timeout 1): the holder and squashfs workers outlive the ranks, nothing left" \
	group_term

# mpi4py.futures in an image with Debian's python3-mpi4py
if MPI4PY=$("$ROOT/tests/images/mpi4py.sh" "${MPICTR_TEST_IMAGES:-$ROOT/build/images}" 2>"$T_TMP/mpi4py-build.log"); then
	ok "mpi4py.futures.MPIPoolExecutor: 2 workers spawned from 1 rank" \
		run pool $T "$MPICTR" --universe-size 3 -n 1 "$MPI4PY" python3 /opt/mpictr/pool.py
	pool_ok() {
		grep -qx 'pool sum 285 workers 2 userns same' "$T_TMP/pool.out" || { cat "$T_TMP/pool.out"; return 1; }
		nothing_left
	}
	check "pool: every task ran in a spawned worker, in the container's user namespace; nothing left" pool_ok
	# A waiting lookup with PMIX_TIMEOUT: Open MPI's connect/accept looks
	# up the peer's port data with PMIX_WAIT and pmix_base_exchange_timeout
	# as PMIX_TIMEOUT. Nobody connects: the accept fails after 2 s (before
	# the fix it waited until the job was killed).
	cat >"$T_TMP/accept.py" <<-'PY'
		import time
		from mpi4py import MPI
		port = MPI.Open_port()
		t = time.monotonic()
		try:
		    MPI.COMM_WORLD.Accept(port)
		    print("accept returned")
		except MPI.Exception:
		    print("accept failed after %d s" % round(time.monotonic() - t))
	PY
	lookup_timeout() {
		OMPI_MCA_pmix_base_exchange_timeout=2 run acc timeout -k 5 30 "$MPICTR" \
			-B "$T_TMP/accept.py:/accept.py" -n 1 "$MPI4PY" python3 /accept.py &&
			grep -Eqx 'accept failed after [2-9] s' "$T_TMP/acc.out" ||
			{ cat "$T_TMP/acc.out"; return 1; }
		nothing_left
	}
	check "PMIx_Lookup with PMIX_TIMEOUT 2 (MPI_Comm_accept, nobody connects): PMIX_ERR_TIMEOUT after 2 s, an MPI error, nothing left" lookup_timeout
else
	sed 's/^/# /' "$T_TMP/mpi4py-build.log"
	need "mpi4py image" "tests/images/mpi4py.sh failed (python3-mpi4py installed?)"
fi
done_testing
