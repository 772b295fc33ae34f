#!/bin/bash
# 85-slurm-join.sh - join mode under real srun (tests/slurm/cluster.sh):
# `srun mpictr IMAGE CMD` puts the tasks of a node and step in one user and
# one mount namespace with one image mount, each task exec'd in place under
# slurmstepd with Slurm's PMI environment intact. Open MPI (pmix), MPICH
# (pmi2), UCX shared memory, separation of steps and jobs, cleanup after
# scancel, crashes and failures, repetition, two nodes.
# 35-join.sh covers the same code without Slurm; tests/integration-root/
# covers what needs a second user.
#
# Knobs: MPICTR_TEST_REPEAT (100) runs of `srun -O -n 8 mpictr tiny.sif
# /bin/true` in the repetition test.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 90"
REPEAT=${MPICTR_TEST_REPEAT:-100}
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

require_slurm
require_userns_fuse "user namespaces and /dev/fuse" "join mode needs unprivileged user namespaces and a usable /dev/fuse"
require_images all

# Everything of this test lives under $W (in /var/tmp: the nodes of the
# multi-node cluster have a private /tmp). The images are reached through
# links in $W, so every process of ours (task, keeper, holder, FUSE
# worker) names $W in its command line; the tasks' TMPDIR is $W/tmp.
W=$(mktemp -d /var/tmp/mpictr-slurm-join.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
NAME=mpj$$

# ours PATTERN-for-pgrep: our processes still alive (any user namespace)
ours() { pgrep -u "$MYUID" -f "$W/" | grep -vx "$$" || true; }
# leftovers JOBID: print what a finished job left behind, if anything
leftovers() {
	local p
	for p in $(ours); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = srun ] && continue
		echo "process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done
	ls -A "$JDIR" 2>/dev/null | grep "^$1\." | sed 's/^/rendezvous entry /'
	ls -A "$W/tmp" | sed 's/^/tmp entry /'
}
out() { cat "$W/out.$1"; }

# ---- MPI programs ----------------------------------------------------------
ok "srun -O --mpi=pmix -n 4 mpictr mpi.sif hello (Open MPI)" \
	step ompi -O --mpi=pmix -n 4 "$MPICTR" "$W/mpi.sif" /opt/mpictr/bin/hello
check "... 4 ranks of 4, allreduce ok, the user's uid" \
	test "$(count ompi "^hello rank [0-3]/4 .* allreduce 6 ok .* uid $MYUID\$")" = 4
ompi_ns() {
	[ "$(sed -nE 's/^hello rank .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.ompi" | sort -u | wc -l)" = 1 ] &&
		! grep -q "userns $(readlink /proc/self/ns/user) " "$W/out.ompi"
}
check "... all 4 ranks in one user and one mount namespace (not the host's)" ompi_ns
check "... no PMIx dstore error (PMIX_SERVER_TMPDIR seen at its path)" bash -c "! grep -q gds_ds12_lock_pthread '$W/out.ompi'"
check "... nothing left behind (keeper, holder, FUSE workers, rendezvous)" clean "$(jobid ompi)"

ok "srun -O --mpi=pmi2 -n 4 mpictr mpi.sif hello-mpich (MPICH)" \
	step mpich -O --mpi=pmi2 -n 4 "$MPICTR" "$W/mpi.sif" /opt/mpictr/bin/hello-mpich
check "... 4 ranks of 4, allreduce ok" test "$(count mpich '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
mpich_ns() {
	[ "$(sed -nE 's/^hello rank .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.mpich" | sort -u | wc -l)" = 1 ]
}
check "... all 4 ranks in one user and one mount namespace" mpich_ns

# ---- what a task sees ----------------------------------------------------------
# Each task: its namespaces, its parent's name, the PMIx/PMI variables,
# whether PMIX_SERVER_TMPDIR and PMI_FD are there, the image mounts.
SEECMD=$NSCMD'; echo PARENT $(cat /proc/$PPID/comm);
echo PMIX ${PMIX_NAMESPACE:-none} ${PMIX_RANK:-none} ${PMIX_SERVER_URI41:+uri};
[ -n "$PMIX_SERVER_TMPDIR" ] && [ -d "$PMIX_SERVER_TMPDIR" ] && ls "$PMIX_SERVER_TMPDIR" | grep -q pmix_dstor && echo TMPDIR ok;
[ -n "$PMI_FD" ] && [ -e /proc/self/fd/$PMI_FD ] && echo PMI_FD ok;
echo FUSE $(grep " - fuse" /proc/self/mountinfo | awk "{print \$3}" | sort -u | wc -l)'
ok "srun -O --mpi=pmix -n 4 mpictr tiny.sif (what a task sees)" \
	step see -O --mpi=pmix -n 4 "$MPICTR" "$W/tiny.sif" sh -c "$SEECMD"
check "... one user and one mount namespace" one_ns see
check "... every task's parent is slurmstepd (exec in place)" test "$(count see '^PARENT slurmstepd$')" = 4
check "... PMIx namespace, rank and server URI reach the program" \
	test "$(count see '^PMIX slurm\.pmix\.[0-9]+\.[0-9]+ [0-3] uri$')" = 4
check "... PMIX_SERVER_TMPDIR (the dstore) is visible at the same path" test "$(count see '^TMPDIR ok$')" = 4
check "... one image mount in the node's namespace" test "$(count see '^FUSE 1$')" = 4

ok "srun -O --mpi=pmi2 -n 2 mpictr tiny.sif (PMI_FD)" \
	step pmi2 -O --mpi=pmi2 -n 2 "$MPICTR" "$W/tiny.sif" sh -c "$SEECMD"
check "... PMI_FD is open in the program" test "$(count pmi2 '^PMI_FD ok$')" = 2

# Task 0 starts the keeper (the others start 0.5 s later) and exits at
# once: the keeper is not the first task's, the others still join it and
# read the image 2 s later.
ok "the task that started the keeper exits first: the others join and read the image" \
	step first -O -n 4 sh -c 'if [ "$SLURM_PROCID" = 0 ]; then exec "$0" "$1" true; fi; sleep 0.5; exec "$0" "$1" sh -c "sleep 2; echo NS \$(readlink /proc/self/ns/user) \$(readlink /proc/self/ns/mnt); [ -x /bin/busybox ] && echo IMG ok"' \
	"$MPICTR" "$W/tiny.sif"
check "... 3 tasks joined one namespace set and read the image" bash -c "[ \$(grep -c '^IMG ok' '$W/out.first') = 3 ] && [ \$(grep '^NS ' '$W/out.first' | sort -u | wc -l) = 1 ]"

# One image mount per node, seen from outside while the step runs: all FUSE
# workers of the step have one parent (one holder) and live in the tasks'
# user namespace.
onemount() {
	srun --job-name="$NAME-mount" -O -n 4 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; sleep 5" >"$W/out.mount" 2>&1 &
	local pid=$! i p ns parents=() uns=()
	for i in $(seq 300); do
		[ "$(grep -c '^NS ' "$W/out.mount")" = 4 ] && break
		sleep 0.1
	done
	ns=$(awk '/^NS / {print $2}' "$W/out.mount" | sort -u)
	for p in $(pgrep -u "$MYUID" -x mpictr-sqfs); do
		grep -qF "$W/" "/proc/$p/cmdline" 2>/dev/null || continue
		parents+=("$(awk '{print $4}' "/proc/$p/stat")")
		uns+=("$(readlink "/proc/$p/ns/user")")
	done
	wait $pid
	echo "tasks' userns: $ns; FUSE workers: ${#parents[@]}, parents: ${parents[*]}, userns: ${uns[*]}"
	[ "$(echo "$ns" | wc -l)" = 1 ] && [ ${#parents[@]} -ge 1 ] &&
		[ "$(printf '%s\n' "${parents[@]}" | sort -u | wc -l)" = 1 ] &&
		[ "$(printf '%s\n' "${uns[@]}" | sort -u)" = "$ns" ]
}
clean none >/dev/null # the earlier steps' keepers are gone
ok "one holder and its FUSE workers per node, in the tasks' user namespace" onemount

# ---- UCX shared memory (posix, cma) -------------------------------------------------
ucx() {
	OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any OMPI_MCA_pml_ucx_tls=any \
		OMPI_MCA_btl='^vader,openib,uct' UCX_TLS=self,posix,cma \
		step ucx -O --mpi=pmix -n 2 "$MPICTR" "$W/mpi.sif" /opt/mpictr/bin/pingpong 5
}
ok "UCX self,posix,cma ping-pong under srun (2 ranks)" ucx
check "... reaches 4 MiB and prints pingpong ok" bash -c "grep -q '^size 4194304 ' '$W/out.ucx' && grep -qx 'pingpong ok' '$W/out.ucx'"

# ---- steps and jobs never share ---------------------------------------------------------
twosteps() {
	$T salloc -O -n 2 --job-name="$NAME-alloc" bash -c "
		srun --overlap -O -n 2 '$MPICTR' '$W/tiny.sif' sh -c '$NSCMD; sleep 2' >'$W/out.st1' 2>&1 &
		srun --overlap -O -n 2 '$MPICTR' '$W/tiny.sif' sh -c '$NSCMD; sleep 2' >'$W/out.st2' 2>&1 &
		wait" || return 1
	cat "$W"/out.st?
	one_ns st1 && one_ns st2 && [ "$(grep -h '^NS ' "$W"/out.st? | sort -u | wc -l)" = 2 ]
}
ok "two concurrent steps of one allocation: one namespace set each, never shared" twosteps
twojobs() {
	srun --job-name="$NAME-j1" -O -n 2 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; sleep 2" >"$W/out.j1" 2>&1 &
	srun --job-name="$NAME-j2" -O -n 2 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; sleep 2" >"$W/out.j2" 2>&1 &
	wait
	cat "$W"/out.j?
	one_ns j1 && one_ns j2 && [ "$(grep -h '^NS ' "$W"/out.j? | sort -u | wc -l)" = 2 ]
}
ok "two jobs at once on the node: one namespace set each, never shared" twojobs
# srun --multi-prog, tasks with different options (issue 18 item 7): tasks
# 0 and 2 bind x read-write, 1 and 3 ask for --contain and x read-only.
# Each set shares one container; the --contain tasks see no $HOME and
# cannot write x. Before, all four got the first task's container.
multiprog() {
	local mark=$HOME/.mpictr-85-join.$$ rc=0
	rm -rf "$W/x" && mkdir "$W/x" && touch "$mark" || return 1
	cat >"$W/x/mp.sh" <<-EOF
		echo "NS\$1 \$(readlink /proc/self/ns/user) \$(readlink /proc/self/ns/mnt)"
		touch /y/w\$SLURM_PROCID 2>/dev/null && echo "WROTE\$1"
		[ -e '$mark' ] && echo "HOME\$1"
		sleep 1
	EOF
	cat >"$W/mp.conf" <<-EOF
		0,2 $MPICTR -B $W/x:/y $W/tiny.sif sh /y/mp.sh rw
		1,3 $MPICTR --contain -B $W/x:/y:ro $W/tiny.sif sh /y/mp.sh ro
	EOF
	step mprog -O -n 4 --multi-prog "$W/mp.conf" || rc=1
	rm -f "$mark"
	[ $rc = 0 ] && [ "$(count mprog '^NSrw ')" = 2 ] && [ "$(count mprog '^NSro ')" = 2 ] || return 1
	[ "$(grep '^NSrw ' "$W/out.mprog" | sort -u | wc -l)" = 1 ] && [ "$(grep '^NSro ' "$W/out.mprog" | sort -u | wc -l)" = 1 ] || return 1
	[ "$(grep '^NSrw ' "$W/out.mprog" | cut -d' ' -f2-)" != "$(grep '^NSro ' "$W/out.mprog" | cut -d' ' -f2-)" ] || { echo "one container for both sets"; return 1; }
	[ "$(count mprog '^WROTErw$')" = 2 ] && [ "$(count mprog '^HOMErw$')" = 2 ] || { echo "the rw tasks miss their bind or \$HOME"; return 1; }
	[ "$(count mprog '^(WROTE|HOME)ro$')" = 0 ] && [ ! -e "$W/x/w1" ] && [ ! -e "$W/x/w3" ] || { echo "a --contain task saw \$HOME or wrote its read-only bind"; return 1; }
}
ok "srun --multi-prog, tasks with different options: one container per set of options" multiprog
check "... nothing left behind (both keepers follow slurmstepd)" clean "$(jobid mprog)"

# ---- refusals ---------------------------------------------------------------------
fakeroot() {
	step fakeroot --mpi=pmix -n 1 "$MPICTR" --fakeroot "$W/tiny.sif" true
	local rc=$?
	[ $rc != 124 ] && [ $rc != 137 ] && [ $rc != 0 ] && grep -q -- '--fakeroot cannot be used under a PMI server' "$W/out.fakeroot"
}
ok "srun --mpi=pmix mpictr --fakeroot is refused with a clear error (no hang)" fakeroot
# (but jobwatch.c: an instance's keeper asks squeue for its job's state every
# 5 s where no slurmstepd of the job runs on its node; never a task)
ok "the sources never name a Slurm command in a string (scontrol, squeue, ...)" \
	bash -c "! grep -rnE '\"[^\"]*\\<(scontrol|squeue|sinfo|sacct|sbcast|sstat)\\>' '$ROOT/runtime' '$ROOT/sif' '$ROOT/pmi' --include='*.[ch]' --exclude=jobwatch.c"
noexec() {
	step strace -O -n 2 sh -c 'exec strace -f -qq -e trace=execve -o "$0.$SLURM_PROCID" "$@"' \
		"$W/strace" "$MPICTR" "$W/tiny.sif" /bin/true || return 1
	cat "$W"/strace.*
	# every execve: mpictr itself, the container's environment wrapper
	# (/bin/sh -c TEXT mpictr ..., its $0 a name users know) or the task's command
	[ "$(cat "$W"/strace.* | grep -c 'execve(')" -ge 2 ] &&
		! grep -h 'execve(' "$W"/strace.* | grep -vE "execve\(\"($MPICTR|/bin/true)\"|execve\(\"/bin/sh\", .*\"mpictr\""
}
if command -v strace >/dev/null; then
	ok "no program but the task's command is executed per task (strace -f)" noexec
else
	skip "no program but the task's command is executed per task (strace -f)" "strace is not installed"
fi

# ---- failures: nothing left behind -------------------------------------------------------
# running_step TAG SECS: in the background, srun -n 4 of the tiny image,
# each task printing its namespaces and sleeping SECS; once all four have
# printed (or after 30 s), STEP_PID is srun's pid and STEP_JOB its job id;
# fails when the job is not there.
running_step() {
	local i
	srun --job-name="$NAME-$1" -O -n 4 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; exec sleep $2" >"$W/out.$1" 2>&1 &
	STEP_PID=$!
	for i in $(seq 300); do
		[ "$(grep -c '^NS ' "$W/out.$1")" = 4 ] && break
		sleep 0.1
	done
	STEP_JOB=$(squeue -h -n "$NAME-$1" -o %i)
	[ -n "$STEP_JOB" ]
}
scancel_step() {
	running_step scancel 60 || return 1
	scancel "$STEP_JOB.0"
	wait "$STEP_PID"
	clean "$STEP_JOB"
}
ok "scancel of a running step: no keeper, holder, FUSE worker or socket left" scancel_step

pkill_tasks() {
	# pkill -f aimed at the tasks also hits the keeper and holder (they
	# carry the first task's command line): all must end cleanly
	running_step pkill 61 || return 1
	pkill -TERM -u "$MYUID" -f "$W/tiny.sif sh -c" || return 1
	wait "$STEP_PID"
	clean "$STEP_JOB"
}
ok "pkill -f of the tasks' command line (keeper included): nothing left" pkill_tasks

ok_fail "a rank crashing (SIGSEGV) with srun -K fails the step" \
	step crash -O -K -n 4 "$MPICTR" "$W/tiny.sif" sh -c '[ "$SLURM_PROCID" = 2 ] && kill -SEGV $$; exec sleep 60'
check "... nothing left behind" clean "$(jobid crash)"
ok_fail "MPI_Abort in one rank (Open MPI) fails the step" \
	step abort -O --mpi=pmix -n 4 "$MPICTR" "$W/mpi.sif" /opt/mpictr/bin/abort
check "... nothing left behind" clean "$(jobid abort)"
ok_status "all tasks of the node failing: the command's status" 3 \
	step fail3 -O -n 4 "$MPICTR" "$W/tiny.sif" sh -c 'exit 3'
check "... nothing left behind" clean "$(jobid fail3)"
ok_fail "all tasks of the node failing to exec (no such command)" \
	step noent -O -n 4 "$MPICTR" "$W/tiny.sif" /no/such/command
check "... nothing left behind" clean "$(jobid noent)"
ok_fail "a task failing before it joins (one rank's image is missing)" \
	step missing -O -n 4 sh -c '[ "$SLURM_PROCID" = 1 ] && exec "$0" /no/such.sif true; exec "$0" "$1" sh -c "sleep 1"' \
	"$MPICTR" "$W/tiny.sif"
check "... nothing left behind (the keeper follows slurmstepd)" clean "$(jobid missing)"

# ---- repetition -------------------------------------------------------------------------
repeat() {
	local i t0 t1 failed=0
	t0=$(date +%s%N)
	for i in $(seq "$REPEAT"); do
		$T srun -O -n 8 "$MPICTR" "$W/tiny.sif" /bin/true >"$W/out.rep" 2>&1 || {
			failed=$((failed + 1))
			echo "run $i failed:"
			cat "$W/out.rep"
		}
	done
	t1=$(date +%s%N)
	echo "$REPEAT runs, $failed failed, $(((t1 - t0) / 1000000)) ms"
	[ $failed = 0 ]
}
ok "$REPEAT x srun -O -n 8 mpictr tiny.sif /bin/true: no failure" repeat
echo "# $(tail -n 1 "$T_OUT")"
check "... nothing left behind" clean none

# ---- two nodes ------------------------------------------------------------------------------
if ! slurm_multi_up 2; then
	need "2-node Slurm (namespaces) answers sinfo" "the multi-node cluster (sudo tests/slurm/cluster.sh start --nodes 2)"
else
	ok "srun -N 2 -n 4 --mpi=pmix mpictr mpi.sif hello across two nodes" \
		env SLURM_CONF="$SLURM_CONF_MULTI" $T srun -O -N 2 -n 4 --mpi=pmix "$MPICTR" "$W/mpi.sif" /opt/mpictr/bin/hello
	cp "$T_OUT" "$W/out.nn"
	check "... 4 ranks, allreduce ok" test "$(count nn '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
	nodes() {
		local a b
		a=$(sed -nE 's/^hello rank [01]\/4 on node1 .*(userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.nn" | sort -u)
		b=$(sed -nE 's/^hello rank [23]\/4 on node2 .*(userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.nn" | sort -u)
		echo "node1: $a; node2: $b"
		[ "$(echo "$a" | wc -l)" = 1 ] && [ "$(echo "$b" | wc -l)" = 1 ] && [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]
	}
	check "... ranks 0,1 share one namespace set on node1, 2,3 another on node2" nodes
fi
done_testing
