#!/bin/bash
# 87-hybrid.sh - hybrid launch (issue 13): the host's launcher starts one
# mpictr per rank, `mpirun -np N mpictr IMAGE CMD` (Open MPI 4.1) and
# `mpiexec.hydra -n N mpictr IMAGE CMD` (MPICH 4.0), and all local ranks of
# the job share one user and one mount namespace (join mode, as under
# srun). Shared-memory transports that need it (UCX posix+cma, vader with
# CMA), alltoall, MPI_Abort through the launcher, mpirun inside a Slurm
# step, two concurrent jobs, kill cases, nothing left behind.
# 35-join.sh and 85-slurm-join.sh cover the same code under Slurm.
. "$(dirname "$0")/lib.sh"

T="timeout -k 5 90"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

if ! have_userns || ! have_fuse; then
	need "user namespaces and /dev/fuse" "join mode needs unprivileged user namespaces and a usable /dev/fuse"
	done_testing
	exit
fi
if ! command -v mpirun >/dev/null || ! command -v mpiexec.hydra >/dev/null; then
	need "mpirun and mpiexec.hydra" "the host's Open MPI and MPICH (tests/deps/debian-packages.txt)"
	done_testing
	exit
fi
IMG=$(test_images all) || { need "test images" "tests/images/build.sh failed"; done_testing; exit; }

# Everything lives under $W (in /var/tmp: the Slurm nodes have a private
# /tmp); the images are reached through links in $W, so every process of
# ours (rank, keeper, holder, FUSE worker) names $W in its command line.
# TMPDIR=$W/tmp: Open MPI's session directory (ompi.*) is made there and
# must be seen inside the container at the same path.
W=$(mktemp -d /var/tmp/mpictr-hybrid.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
ln -s "$IMG/mpi.sqfs" "$W/mpi.sqfs"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
B=/opt/mpictr/bin
# Open MPI: plain ob1 over TCP and vader unless a test asks otherwise
UCX="--mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any --mca btl ^vader,openib,uct -x UCX_TLS=self,posix,cma"
VADER="--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"

# run NAME CMD...: lib.sh's (with the timeout $T, output in $W/out.NAME)
count() { grep -cE "$2" "$W/out.$1"; }
# one_ns NAME N: the N hello lines of NAME show one user and one mount
# namespace, not this shell's
one_ns() {
	local n
	[ "$(count "$1" '^hello rank ')" = "$2" ] || { cat "$W/out.$1"; return 1; }
	n=$(sed -nE 's/^hello rank .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.$1" | sort -u | wc -l)
	[ "$n" = 1 ] || { grep '^hello' "$W/out.$1"; return 1; }
	! grep -q "userns $(readlink /proc/self/ns/user) " "$W/out.$1"
}
# ns_of NAME: the distinct "NS userns mntns" lines of NAME
NSCMD='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'
ns_of() { grep '^NS ' "$W/out.$1" | sort -u; }
# What a finished job may have left: our processes (keeper, holder and
# FUSE workers name $W; ranks of the kill cases are listed in $W/pids.*),
# rendezvous entries of its keepers (their names start with the
# launcher's job id, printed as "KEY ..."), Open MPI session directories.
leftovers() {
	local p k=""
	for p in $(pgrep -u "$MYUID" -f "$W/" | grep -vx "$$"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = srun ] && continue
		echo "process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done
	for p in $(cat "$W"/pids.* 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && echo "rank $p: still running"
	done
	for k in $(sed -n 's/^KEY //p' "$W"/out.* 2>/dev/null | sort -u); do
		ls -A "$JDIR" 2>/dev/null | grep -F "$k." | sed 's/^/rendezvous entry /'
	done
	ls -A "$W/tmp" | sed 's/^/tmp entry /'
}
clean() {
	settle 300 leftovers
}
# The job id that starts a rendezvous name: PMIX_NAMESPACE (Open MPI)
OKEY='echo KEY $PMIX_NAMESPACE'

# ---- Open MPI 4.1 ------------------------------------------------------------
ok "mpirun -np 2 mpictr mpi.sif hello" run o2 mpirun -np 2 "$MPICTR" "$W/mpi.sif" $B/hello
check "... both ranks in one user and one mount namespace (not the host's)" one_ns o2 2
check "... the user's uid, allreduce ok" test "$(count o2 "^hello rank [01]/2 .* allreduce 1 ok .* uid $MYUID\$")" = 2
check "... nothing left behind" clean
ok "mpirun -np 4 --oversubscribe mpictr mpi.sif hello" run o4 mpirun -np 4 --oversubscribe "$MPICTR" "$W/mpi.sif" $B/hello
check "... all 4 ranks in one user and one mount namespace" one_ns o4 4
ok "-v names the mode and the launcher's variables" \
	bash -c "$T mpirun -np 2 '$MPICTR' -v '$W/mpi.sif' true 2>&1 | grep -c 'mode join; launcher: Open MPI (ORTE), rank [01] of 2, local rank [01] of 2.*read OMPI_COMM_WORLD_RANK' | grep -qx 2"
ok "--dry-run shows the join decision" \
	bash -c "$T mpirun -np 1 '$MPICTR' --dry-run '$W/mpi.sif' true | grep -q '\"launch\": \"mode join; launcher: Open MPI'"
ok "UCX self,posix,cma ping-pong 1 B .. 4 MiB (pml ucx)" run ucx mpirun -np 2 $UCX "$MPICTR" "$W/mpi.sif" $B/pingpong
check "... pingpong ok" grep -q '^pingpong ok' "$W/out.ucx"
ok "UCX self,sysv,cma ping-pong" bash -c "$T mpirun -np 2 ${UCX/posix/sysv} '$MPICTR' '$W/mpi.sif' $B/pingpong 2>&1 | grep -q '^pingpong ok'"
ok "ob1/vader with btl_vader_single_copy_mechanism=cma ping-pong" run vader mpirun -np 2 $VADER "$MPICTR" "$W/mpi.sif" $B/pingpong
check "... pingpong ok, no CMA warning" bash -c "grep -q '^pingpong ok' '$W/out.vader' && ! grep -qi 'single.copy\|different user namespaces' '$W/out.vader'"
ok "mpirun -np 4 --oversubscribe alltoall (vader)" run a2a mpirun -np 4 --oversubscribe $VADER "$MPICTR" "$W/mpi.sif" $B/alltoall
check "... alltoall ok" grep -q '^alltoall ok' "$W/out.a2a"
netns() {
	run net mpirun -np 2 "$MPICTR" "$W/mpi.sif" sh -c 'echo NET $(readlink /proc/self/ns/net)'
	[ "$(grep -cxF "NET $(readlink /proc/self/ns/net)" "$W/out.net")" = 2 ]
}
ok "the ranks are in the host's network namespace" netns
# /dev/shm is the job's own tmpfs (sized, issue 18), one for all local
# ranks: what rank 0 makes there rank 1 sees, the host does not.
shm() {
	local f=/dev/shm/mpictr-87-$$
	run shm mpirun -np 2 "$MPICTR" "$W/mpi.sif" sh -c "
		if [ \$OMPI_COMM_WORLD_RANK = 0 ]; then echo x >$f; sleep 2; else
		for i in \$(seq 50); do [ -e $f ] && echo SEEN && break; sleep 0.1; done; fi"
	grep -q '^SEEN' "$W/out.shm" && [ ! -e "$f" ]
}
ok "one job-private /dev/shm for all local ranks, not the host's" shm
ok "--contain: vader/CMA ping-pong (PMIx and session directories bound at their paths)" \
	bash -c "$T mpirun -np 2 $VADER '$MPICTR' --contain '$W/mpi.sif' $B/pingpong 2>&1 | grep -q '^pingpong ok'"
abort_ompi() {
	local t0=$SECONDS rc
	run abort mpirun -np 2 "$MPICTR" "$W/mpi.sif" $B/abort
	rc=$?
	echo "exit $rc after $((SECONDS - t0)) s"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ $((SECONDS - t0)) -lt 30 ] &&
		grep -q 'aborting with 7' "$W/out.abort"
}
ok "MPI_Abort in rank 1 ends the job through mpirun (non-zero, < 30 s)" abort_ompi
check "... nothing left behind" clean

# ---- MPICH 4.0 Hydra ---------------------------------------------------------
ok "mpiexec.hydra -n 2 mpictr mpi.sif hello-mpich" run h2 mpiexec.hydra -n 2 "$MPICTR" "$W/mpi.sif" $B/hello-mpich
check "... both ranks in one user and one mount namespace" one_ns h2 2
ok "mpiexec.hydra -n 4 hello-mpich" run h4 mpiexec.hydra -n 4 "$MPICTR" "$W/mpi.sif" $B/hello-mpich
check "... all 4 ranks in one user and one mount namespace" one_ns h4 4
ok "mpiexec.hydra -n 2 ping-pong" bash -c "$T mpiexec.hydra -n 2 '$MPICTR' '$W/mpi.sif' $B/pingpong-mpich 2>&1 | grep -q '^pingpong ok'"
ok "mpiexec.hydra -n 4 alltoall" bash -c "$T mpiexec.hydra -n 4 '$MPICTR' '$W/mpi.sif' $B/alltoall-mpich 2>&1 | grep -q '^alltoall ok'"
abort_mpich() {
	local t0=$SECONDS rc
	run habort mpiexec.hydra -n 2 "$MPICTR" "$W/mpi.sif" $B/abort-mpich
	rc=$?
	echo "exit $rc after $((SECONDS - t0)) s"
	[ "$rc" = 7 ] && [ $((SECONDS - t0)) -lt 30 ]
}
ok "MPI_Abort(7) in rank 1 ends the job through mpiexec (exit 7, < 30 s)" abort_mpich
check "... nothing left behind" clean

# ---- separation ----------------------------------------------------------------
two_jobs() {
	# Two concurrent mpiruns of one user: same image, and another image
	# (squashfs): three jobs, three containers, ranks of each together.
	# Open MPI 4.1's own race: concurrent mpiruns that both create the
	# top session directory can fail with "File exists"; it exists first.
	mkdir -p "$TMPDIR/ompi.$(hostname).$MYUID"
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sif" sh -c "$NSCMD; $OKEY; sleep 2" >"$W/out.j1" 2>&1 &
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sif" sh -c "$NSCMD; $OKEY; sleep 2" >"$W/out.j2" 2>&1 &
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sqfs" sh -c "$NSCMD; $OKEY; sleep 2" >"$W/out.j3" 2>&1 &
	wait
	local j
	for j in j1 j2 j3; do
		[ "$(ns_of $j | wc -l)" = 1 ] || { echo "$j:"; cat "$W/out.$j"; return 1; }
	done
	[ "$(cat "$W"/out.j? | grep '^NS ' | sort -u | wc -l)" = 3 ] || { cat "$W"/out.j?; return 1; }
}
ok "two concurrent mpirun jobs (same image, other image) never share" two_jobs
ok "MPICTR_JOIN=0: one container per rank" \
	bash -c "$T mpirun -np 2 -x MPICTR_JOIN=0 '$MPICTR' '$W/mpi.sif' sh -c '$NSCMD' 2>&1 | grep '^NS ' | sort -u | wc -l | grep -qx 2"
ok "--no-share: one container per rank" \
	bash -c "$T mpirun -np 2 '$MPICTR' --no-share '$W/mpi.sif' sh -c '$NSCMD' 2>&1 | grep '^NS ' | sort -u | wc -l | grep -qx 2"
# Two tasks claiming the same local rank (a launcher inside another that
# sets nothing of its own): the second is refused, naming the variables.
dup() {
	MPICTR_JOB_KEY=dup$$ MPICTR_LOCAL_RANK=0 MPICTR_LOCAL_SIZE=2 "$MPICTR" "$W/mpi.sif" sh -c 'sleep 2' &
	sleep 0.5
	MPICTR_JOB_KEY=dup$$ MPICTR_LOCAL_RANK=0 MPICTR_LOCAL_SIZE=2 $T "$MPICTR" "$W/mpi.sif" true 2>"$W/out.dup1"
	local rc=$?
	MPICTR_JOB_KEY=dup$$ MPICTR_LOCAL_RANK=1 MPICTR_LOCAL_SIZE=3 $T "$MPICTR" "$W/mpi.sif" true 2>"$W/out.dup2"
	local rc2=$?
	MPICTR_JOB_KEY=dup$$ MPICTR_LOCAL_RANK=1 MPICTR_LOCAL_SIZE=2 $T "$MPICTR" "$W/mpi.sif" true
	local rc3=$?
	wait
	cat "$W"/out.dup?
	echo "statuses $rc $rc2 $rc3"
	[ "$rc" = 255 ] && [ "$rc2" = 255 ] && [ "$rc3" = 0 ]
}
ok "a local rank claimed twice, a size that differs: refused (255), the right one joins" dup
check "... the messages name the variables read" \
	bash -c "grep -q 'MPICTR_LOCAL_RANK.*local rank 0 is claimed by two tasks' '$W/out.dup1' && grep -q 'MPICTR_LOCAL_SIZE.*local size of 3.*claimed 2' '$W/out.dup2'"
counting() {
	# No local size: the first task's container lives while it has
	# members, a task arriving while it runs joins it.
	MPICTR_JOB_KEY=cnt$$ "$MPICTR" "$W/mpi.sif" sh -c "$NSCMD; sleep 1.5" >"$W/out.c1" 2>&1 &
	sleep 0.5
	MPICTR_JOB_KEY=cnt$$ $T "$MPICTR" -v "$W/mpi.sif" sh -c "$NSCMD" >"$W/out.c2" 2>&1
	wait
	cat "$W"/out.c?
	[ "$(cat "$W"/out.c? | grep '^NS ' | sort -u | wc -l)" = 1 ] &&
		grep -q 'counting mode.*plus 2000 ms after the last one left' "$W/out.c2"
}
ok "counting mode (MPICTR_JOB_KEY only): a task arriving later joins; -v says so" counting
# A bare PMIx/PMI-1 launcher (tests/helpers/pmi_launch: a PMIx server and
# PMI_FD per rank, no launcher variables of its own): counting mode, one
# container for the ranks it starts.
bare_pmi() {
	local L=$ROOT/build/tests/pmi_launch
	[ -x "$L" ] || { echo "build/tests/pmi_launch missing"; return 1; }
	env -u OMPI_MCA_schizo PMI_LAUNCH_TMPDIR="$W" $T "$L" -n 3 "$MPICTR" -v "$W/mpi.sif" $B/hello >"$W/out.bare" 2>&1
	local rc=$?
	cat "$W/out.bare"
	[ "$rc" = 0 ] && [ "$(grep -c '^hello rank' "$W/out.bare")" = 3 ] &&
		[ "$(grep '^hello rank' "$W/out.bare" | grep -o 'userns [^ ]* mntns [^ ]*' | sort -u | wc -l)" = 1 ] &&
		grep -q 'mode join; launcher: PMIx (no launcher variables).*counting mode\|mode join; launcher: .*PMIx.*counting' "$W/out.bare"
}
ok "a bare PMIx launcher (pmi_launch -n 3): one container, counting mode, MPI hello" bare_pmi

# ---- kill cases ------------------------------------------------------------------
# mpirun_ranks NAME TIMEOUT-PID: wait for mpirun's 2 ranks (its children:
# they exec in place), list them in $W/pids.NAME, print mpirun's pid
mpirun_ranks() {
	local m="" r=""
	for _ in $(seq 100); do
		m=$(pgrep -u "$MYUID" -x mpirun -P "$2")
		[ -n "$m" ] && r=$(pgrep -x sleep -P "$m") && [ "$(echo "$r" | wc -l)" = 2 ] && break
		sleep 0.1
	done
	echo "$r" >"$W/pids.$1"
	echo "$m"
}
kill_rank() {
	local t0=$SECONDS m
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sif" sleep 60 >"$W/out.kr" 2>&1 &
	local t=$!
	m=$(mpirun_ranks kr $t)
	[ "$(wc -l <"$W/pids.kr")" = 2 ] || { echo "no ranks"; return 1; }
	sleep 0.5
	kill -KILL "$(head -n 1 "$W/pids.kr")"
	wait $t
	echo "mpirun exit $? after $((SECONDS - t0)) s"
	[ $((SECONDS - t0)) -lt 30 ]
}
ok "kill -9 of a rank: mpirun ends the job" kill_rank
check "... nothing left behind" clean
kill_mpirun() {
	local t0=$SECONDS m
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sif" sleep 60 >"$W/out.km" 2>&1 &
	local t=$!
	m=$(mpirun_ranks km $t)
	[ -n "$m" ] && [ "$(wc -l <"$W/pids.km")" = 2 ] || { echo "no mpirun or ranks"; return 1; }
	sleep 0.5
	kill -TERM "$m"
	wait $t
	echo "exit $? after $((SECONDS - t0)) s"
	[ $((SECONDS - t0)) -lt 30 ]
}
ok "kill (TERM) of mpirun while the ranks run: the job ends" kill_mpirun
check "... nothing left behind" clean
kill_keeper() {
	local p k=""
	$T mpirun -np 2 "$MPICTR" "$W/mpi.sif" sh -c "$NSCMD; $OKEY; sleep 3; echo DONE" >"$W/out.kk" 2>&1 &
	local m=$!
	for _ in $(seq 100); do [ "$(grep -c '^NS ' "$W/out.kk")" = 2 ] && break; sleep 0.1; done
	# The keeper: the mpictr that leads a session of its own among the
	# processes with the first rank's command line (the ranks have exec'd
	# sh by now); never this test's own session.
	local mysid
	mysid=$(ps -o sid= -p $$ | tr -d ' ')
	for p in $(pgrep -u "$MYUID" -x mpictr); do
		grep -qF "$W/mpi.sif" "/proc/$p/cmdline" 2>/dev/null || continue
		[ "$p" != "$mysid" ] && [ "$(ps -o sid= -p "$p" | tr -d ' ')" = "$p" ] && k=$p
	done
	[ -n "$k" ] || { echo "no keeper"; ps -ef | grep -F "$W" ; return 1; }
	kill -KILL "$k"
	wait $m
	local rc=$?
	cat "$W/out.kk"
	# nothing of a node container outlives its keeper (docs/security.md):
	# its sweeper ends the ranks, and mpirun reports the job failed
	[ "$rc" != 0 ] && [ "$(grep -c '^DONE' "$W/out.kk")" = 0 ]
}
ok "kill -9 of the keeper: its sweeper ends the joined ranks, the job fails" kill_keeper
check "... nothing left behind (holder, FUSE workers, socket, lock)" clean

# ---- mpirun inside a Slurm step ----------------------------------------------------
. "$ROOT/tests/slurm/env.sh"
if slurm_up; then
	# The step has one task (one slot for mpirun: --oversubscribe); the
	# ranks carry its SLURM_* ("local task 0 of 1"), which must not count.
	ok "srun -n 1 mpirun -np 2 mpictr mpi.sif hello (stale SLURM_* in the ranks)" \
		run nested srun -n 1 mpirun --oversubscribe -np 2 "$MPICTR" "$W/mpi.sif" $B/hello
	check "... both ranks in one user and one mount namespace" one_ns nested 2
	# Hydra would start its proxy with srun (bootstrap slurm), which waits
	# for a CPU the step holds: -launcher fork. The ranks carry the step's
	# SLURM_* and srun's PMI_FD next to Hydra's own.
	ok "srun -n 1 --mpi=pmi2 mpiexec.hydra -n 2 mpictr mpi.sif hello-mpich" \
		run nestedh srun -n 1 --mpi=pmi2 mpiexec.hydra -launcher fork -n 2 "$MPICTR" "$W/mpi.sif" $B/hello-mpich
	check "... both ranks in one user and one mount namespace" one_ns nestedh 2
	check "... nothing left behind" clean
else
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

# ---- two nodes: the launcher inside an allocation -------------------------------------
# per_node NAME: 4 hello lines, ranks 0,1 on node1 in one namespace set,
# 2,3 on node2 in another
per_node() {
	local a b
	[ "$(count "$1" '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4 ] || return 1
	a=$(sed -nE 's/^hello rank [01]\/4 on node1 .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.$1" | sort -u)
	b=$(sed -nE 's/^hello rank [23]\/4 on node2 .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.$1" | sort -u)
	[ "$(echo "$a" | wc -l)" = 1 ] && [ "$(echo "$b" | wc -l)" = 1 ] && [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]
}
if slurm_multi_up 2; then
	# mpirun starts its orted on the other node through srun.
	ok "salloc -N 2 mpirun -np 4 mpictr mpi.sif hello (orted through srun)" \
		run nn env SLURM_CONF="$SLURM_CONF_MULTI" salloc -N 2 -n 4 mpirun -np 4 "$MPICTR" "$W/mpi.sif" $B/hello
	check "... ranks 0,1 share one namespace set on node1, 2,3 another on node2" per_node nn
	# The two nodes share one kernel; UCX tells machines apart by boot_id,
	# which cluster.sh makes per node. A 2-node cluster started by an
	# older cluster.sh has one boot_id: only then bind one per node into
	# the container (as 86-slurm-daemon.sh does).
	BOOT=
	if [ "$(SLURM_CONF="$SLURM_CONF_MULTI" $T srun -N 2 --ntasks-per-node=1 cat /proc/sys/kernel/random/boot_id 2>/dev/null | sort -u | wc -l)" != 2 ]; then
		BOOT="-B /tmp/mpictr-87-boot_id:/proc/sys/kernel/random/boot_id"
	fi
	# MPICH 4.0.2 can hang in MPI_Finalize over UCX tcp between nodes,
	# natively too (86-slurm-daemon.sh, docs/pmi.md): a run that printed
	# every hello and then failed is retried, at most 3 runs; what must
	# hold is the start, the exchange and the grouping.
	hydra_nn() {
		local try rc
		for try in 1 2 3; do
			run nnh env SLURM_CONF="$SLURM_CONF_MULTI" salloc -N 2 -n 4 bash -c "
			[ -z '$BOOT' ] || srun -N 2 -n 2 sh -c 'cat /proc/sys/kernel/random/uuid >/tmp/mpictr-87-boot_id'
			mpiexec.hydra -bootstrap slurm -n 4 '$MPICTR' $BOOT '$W/mpi.sif' $B/hello-mpich
			rc=\$?
			[ -z '$BOOT' ] || srun -N 2 -n 2 rm -f /tmp/mpictr-87-boot_id
			exit \$rc"
			rc=$?
			[ $rc = 0 ] && return 0
			[ "$(count nnh '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4 ] || return 1
			echo "# run $try: every rank said hello, then exit $rc (MPICH finalize over UCX tcp); retrying" >&2
		done
		echo "exit $rc after 3 runs that each hung in MPICH's finalize"
	}
	ok "salloc -N 2 mpiexec.hydra -bootstrap slurm -n 4 mpictr mpi.sif hello-mpich" hydra_nn
	check "... ranks 0,1 share one namespace set on node1, 2,3 another on node2" per_node nnh
	check "... nothing left behind" clean
else
	need "the two-node Slurm cluster" "tests/slurm/cluster.sh (multi-node part)"
fi
done_testing
