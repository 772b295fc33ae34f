#!/bin/bash
# 88-spawn.sh - MPI dynamic processes under `mpictr -n N` (issue 16):
# MPI_Comm_spawn and MPI_Comm_spawn_multiple through mpictr's PMIx server
# (the children in the ranks' user namespace), a child that aborts or is
# killed, publish/lookup with connect/accept between two spawned groups,
# MPI_UNIVERSE_SIZE and --universe-size, MPICH's refused spawn, a group
# SIGTERM (timeout), and nothing left behind. tests/mpi/spawn.c is the
# program; tests/images/mpi4py.sh builds the mpi4py.futures image.
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

ok "MPI_Comm_spawn: 2 ranks spawn 2, allreduce over the merged intercommunicator" \
	run sp $T "$MPICTR" --universe-size 4 -n 2 "$I" $S parent 2
check "spawn: 2 parents and 2 children in a merged communicator of 4" \
	bash -c "$(declare -f merged_ok); T_TMP='$T_TMP' merged_ok sp parent 2 4 && T_TMP='$T_TMP' merged_ok sp child 2 4"
check "spawn: parents and children in one user namespace (the container's)" \
	bash -c "$(declare -f one_userns); T_TMP='$T_TMP' one_userns sp"

ok "MPI_Comm_spawn_multiple: 2 ranks spawn 1 + 2 (two apps)" \
	run mul $T "$MPICTR" --universe-size 5 -n 2 "$I" $S multiple
check "spawn_multiple: 2 parents and 3 children in one communicator of 5, one user namespace" \
	bash -c "$(declare -f merged_ok one_userns); T_TMP='$T_TMP' merged_ok mul parent 2 5 && T_TMP='$T_TMP' merged_ok mul child 3 5 && T_TMP='$T_TMP' one_userns mul"

ok_status "a spawned child calls MPI_Abort(9): the job ends with 9" 9 \
	$T "$MPICTR" --universe-size 3 -n 2 "$I" $S abort
check "child abort: nothing left (processes, job directory)" nothing_left

ok_status "a spawned child is killed (SIGKILL): the job ends with 137, as mpirun" 137 \
	$T "$MPICTR" --universe-size 3 -n 2 "$I" $S kill
check "killed child: nothing left" nothing_left

ok "publish/lookup + connect/accept between two spawned groups" \
	run ports $T "$MPICTR" --universe-size 5 -n 1 "$I" $S ports
check "ports: the server and client groups allreduce over their merged intercommunicator" \
	bash -c "$(declare -f merged_ok one_userns); T_TMP='$T_TMP' merged_ok ports server 2 4 && T_TMP='$T_TMP' merged_ok ports client 2 4 && grep -q '^parent ports done: 2 servers 2 clients' '$T_TMP/ports.out' && T_TMP='$T_TMP' one_userns ports"

# The default universe: the cores mpictr may run on, or N when larger.
cores=$(t_cores)
ok "default MPI_UNIVERSE_SIZE with -n 1 is the cores ($cores), as mpirun's" \
	bash -c "$T '$MPICTR' -n 1 '$I' $S universe 1 2>&1 | grep -x 'universe size $cores'"
ok "default MPI_UNIVERSE_SIZE with -n $((cores + 1)) is the ranks" \
	bash -c "$T '$MPICTR' -n $((cores + 1)) '$I' $S universe 0 2>&1 | grep -cx 'universe size $((cores + 1))' | grep -qx 1"
# (from one rank: Open MPI 4.1.4 hangs after a failed spawn from several,
# under its own mpirun too)
ok "spawning past the universe: a clean MPI_ERR_SPAWN, the job goes on" \
	run past $T "$MPICTR" -n 1 "$I" $S universe "$cores"
check "past the universe: the MPI error and mpictr's reason" \
	bash -c "grep -q '^universe spawn of $cores failed: MPI_ERR_SPAWN' '$T_TMP/past.out' && grep -q \"slots are in use (hint: raise it with --universe-size)\" '$T_TMP/past.out' || { cat '$T_TMP/past.out'; exit 1; }"
ok "--universe-size 3: MPI_UNIVERSE_SIZE 3, 1 rank spawns 2" \
	run us $T "$MPICTR" --universe-size 3 -n 1 "$I" $S universe 2
check "--universe-size 3: seen by the rank, 3 in the merged communicator" \
	bash -c "grep -qx 'universe size 3' '$T_TMP/us.out' && $(declare -f merged_ok); T_TMP='$T_TMP' merged_ok us child 2 3"
ok_status "--universe-size 0 is refused" 255 "$MPICTR" --universe-size 0 -n 1 "$I" true
ok_status "--universe-size x is refused" 255 "$MPICTR" --universe-size x -n 1 "$I" true

ok "--tag-output tags spawned processes [job.rank]" \
	bash -c "$T '$MPICTR' --tag-output --universe-size 2 -n 1 '$I' $S parent 1 >'$T_TMP/tag.out' 2>&1 && grep -q '^\[0\] parent merged 0/2' '$T_TMP/tag.out' && grep -q '^\[1\.0\] child merged 1/2' '$T_TMP/tag.out' || { cat '$T_TMP/tag.out'; exit 1; }"

# MPICH 4.0.2 (ch4:ucx) cannot spawn even under its own mpiexec.hydra
# ("Error in spawn call" from MPID_Comm_spawn_multiple, before it asks its
# PMI server): under mpictr the rank gets the same MPI error, the job goes
# on. (mpictr's PMI-1 refusal of `mcmd=spawn` is tested in check_pmi.c.)
ok "MPICH: MPI_Comm_spawn returns an error, the job goes on" \
	run mpich $T "$MPICTR" --universe-size 4 -n 2 "$I" $S-mpich universe 1
check "MPICH: the error reached the rank" \
	grep -q '^universe spawn of 1 failed' "$T_TMP/mpich.out"

# `timeout` sends its SIGTERM to the whole process group: the holder and
# the image's FUSE workers must outlive the ranks (the issue's "namespace
# holder exited early (status 0xf)").
run grp timeout 3 "$MPICTR" -n 2 "$I" sleep 20
rc=$?
check "a SIGTERM to the process group (timeout 3) ends the job with 124" \
	bash -c "[ $rc = 124 ] || { echo 'exit status $rc'; cat '$T_TMP/grp.out'; exit 1; }"
check "group SIGTERM: neither the holder nor a squashfs worker died early" \
	bash -c "! grep -E 'holder exited early|squashfs worker' '$T_TMP/grp.out'"
check "group SIGTERM: nothing left" nothing_left

# mpi4py.futures in an image with Debian's python3-mpi4py
if MPI4PY=$("$ROOT/tests/images/mpi4py.sh" "${MPICTR_TEST_IMAGES:-$ROOT/build/images}" 2>"$T_TMP/mpi4py-build.log"); then
	ok "mpi4py.futures.MPIPoolExecutor: 2 workers spawned from 1 rank" \
		run pool $T "$MPICTR" --universe-size 3 -n 1 "$MPI4PY" python3 /opt/mpictr/pool.py
	check "pool: every task ran in a spawned worker, in the container's user namespace" \
		bash -c "grep -qx 'pool sum 285 workers 2 userns same' '$T_TMP/pool.out' || { cat '$T_TMP/pool.out'; exit 1; }"
else
	sed 's/^/# /' "$T_TMP/mpi4py-build.log"
	need "mpi4py image" "tests/images/mpi4py.sh failed (python3-mpi4py installed?)"
fi
check "nothing left at the end" nothing_left
done_testing
