#!/bin/bash
# 35-join.sh - join mode without Slurm: tasks started by hand with the step
# variables srun would set. Checks what does not need slurmstepd: one
# namespace set per node and step, exact counting, late tasks, separation
# of steps, nothing left behind. 85-slurm-join.sh runs it under real srun.
. "$(dirname "$0")/lib.sh"

require_userns
require_images tiny
I=$IMG/tiny.sif; have_fuse || I=$IMG/tiny
cd "$T_TMP" || exit 1
JOB=$((900000 + $$ % 90000))
JDIR=/tmp/mpictr-join-$(id -u)

# task STEP NODEID PROCID LOCALID TPN CMD... (in the background)
task() {
	local step=$1 node=$2 proc=$3 loc=$4 tpn=$5; shift 5
	SLURM_JOB_ID=$JOB SLURM_STEP_ID=$step SLURM_NODEID=$node SLURM_PROCID=$proc \
		SLURM_LOCALID=$loc SLURM_STEP_TASKS_PER_NODE=$tpn "$MPICTR" "$I" "$@"
}
nsline='echo $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'

four() {
	for i in 0 1 2 3; do task 0 0 $i $i 4 sh -c "$nsline; sleep 0.$i" >"$T_TMP/t$i" & done
	wait
	[ "$(cat "$T_TMP"/t? | sort -u | wc -l)" = 1 ] || { cat "$T_TMP"/t?; return 1; }
	[ "$(cat "$T_TMP"/t0)" != "$(sh -c "$nsline")" ]
}
ok "4 tasks of a step share one user and one mount namespace" four

late() {
	# 3 local tasks; the last arrives after the first two have exited.
	task 1 0 0 0 3 sh -c "$nsline" >"$T_TMP/l0" &
	task 1 0 1 1 3 sh -c "$nsline" >"$T_TMP/l1" &
	wait
	sleep 1
	task 1 0 2 2 3 sh -c "$nsline" >"$T_TMP/l2"
	[ "$(cat "$T_TMP"/l? | sort -u | wc -l)" = 1 ]
}
ok "a task arriving after the others finished still joins" late

steps() {
	task 2 0 0 0 1 sh -c "$nsline" >"$T_TMP/s2" &
	task 3 0 0 0 1 sh -c "$nsline" >"$T_TMP/s3" &
	wait
	[ "$(cat "$T_TMP/s2")" != "$(cat "$T_TMP/s3")" ]
}
ok "two steps never share namespaces" steps

nodes() {
	task 4 0 0 0 '1(x2)' sh -c "$nsline" >"$T_TMP/n0" &
	task 4 1 1 0 '1(x2)' sh -c "$nsline" >"$T_TMP/n1" &
	wait
	[ "$(cat "$T_TMP/n0")" != "$(cat "$T_TMP/n1")" ]
}
ok "two nodes of one step (same kernel) never share namespaces" nodes

ok "the exit status of the task is the command's" bash -c "$(declare -f task); JOB=$JOB MPICTR='$MPICTR' I='$I'; task 5 0 0 0 1 sh -c 'exit 9'; [ \$? = 9 ]"
inplace() {
	SLURM_JOB_ID=$JOB SLURM_STEP_ID=6 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 \
		SLURM_STEP_TASKS_PER_NODE=1 "$MPICTR" "$I" sh -c 'echo $$' >"$T_TMP/pid" &
	local p=$!
	wait
	[ "$(cat "$T_TMP/pid")" = "$p" ]
}
ok "a task execs in place (its pid is the command's)" inplace

gone() {
	local i
	for i in $(seq 100); do
		if [ -z "$(ls "$JDIR" 2>/dev/null | grep "^$JOB\.")" ] && [ -z "$(marked_procs)" ]; then
			return 0
		fi
		sleep 0.1
	done
	ls -la "$JDIR"; marked_procs; return 1
}
ok "the keeper is gone and the rendezvous directory empty afterwards" gone

# Every task fails building its plan (a missing bind source): each says so
# and exits 255, and no keeper, socket or lock file is left. Before, the
# lock file of the task that tried first stayed.
planfail() {
	local i rc=0
	for i in 0 1 2; do
		SLURM_JOB_ID=$JOB SLURM_STEP_ID=20 SLURM_NODEID=0 SLURM_PROCID=$i SLURM_LOCALID=$i \
			SLURM_STEP_TASKS_PER_NODE=3 "$MPICTR" -B "$T_TMP/none:/x" "$I" true 2>"$T_TMP/pf$i" &
	done
	for i in 0 1 2; do wait -n || rc=$((rc + $?)); done
	[ "$rc" = $((3 * 255)) ] || { echo "statuses sum $rc"; return 1; }
	grep -l "bind source '$T_TMP/none'" "$T_TMP"/pf? | wc -l | grep -qx 3 || { cat "$T_TMP"/pf?; return 1; }
	gone
}
ok "a plan error in every task: 255 each, no keeper, socket or lock left" planfail
killed() {
	# Two tasks; both are killed while running: the keeper must notice.
	local v="SLURM_JOB_ID=$JOB SLURM_STEP_ID=7 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2"
	env $v SLURM_PROCID=0 SLURM_LOCALID=0 "$MPICTR" "$I" sleep 60 & local a=$!
	env $v SLURM_PROCID=1 SLURM_LOCALID=1 "$MPICTR" "$I" sleep 60 & local b=$!
	sleep 1.5
	kill -KILL $a $b; wait
	gone
}
ok "tasks killed with SIGKILL: keeper, mounts and socket go away" killed

ok "the rendezvous directory is private" bash -c "[ \"\$(stat -c %a '$JDIR')\" = 700 ]"
ok_status "a malformed SLURM_STEP_TASKS_PER_NODE is an error naming it" 255 \
	env SLURM_JOB_ID=$JOB SLURM_STEP_ID=9 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 \
	SLURM_STEP_TASKS_PER_NODE='4(x' "$MPICTR" "$I" true
ok "MPICTR_JOIN=0 runs the task in its own namespaces" bash -c "$(declare -f task); JOB=$JOB MPICTR='$MPICTR' I='$I'; export MPICTR_JOIN=0; task 10 0 0 0 2 sh -c '$nsline' >'$T_TMP/j0' & task 10 0 1 1 2 sh -c '$nsline' >'$T_TMP/j1' & wait; [ \"\$(cat '$T_TMP/j0')\" != \"\$(cat '$T_TMP/j1')\" ]"

# Tasks of one step with different options (srun --multi-prog): task 0
# binds x read-write and keeps running; task 1 asks for --contain and the
# same bind read-only. Task 1 must get a container of its own: no $HOME,
# the bind read-only. Before, it joined task 0's (saw $HOME, wrote to x).
multiopt() {
	local mark=$HOME/.mpictr-35-join.$$ v="SLURM_JOB_ID=$JOB SLURM_STEP_ID=30 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2" p rc=0
	mkdir -p "$T_TMP/x" && touch "$mark" || return 1
	env $v SLURM_PROCID=0 SLURM_LOCALID=0 "$MPICTR" -B "$T_TMP/x:/y" "$I" \
		sh -c "$nsline; touch /y/a && echo WROTE; test -e '$mark' && echo HOME; exec sleep 3" >"$T_TMP/m0" 2>&1 &
	for _ in $(seq 100); do grep -q WROTE "$T_TMP/m0" && break; sleep 0.1; done
	env $v SLURM_PROCID=1 SLURM_LOCALID=1 "$MPICTR" --contain -B "$T_TMP/x:/y:ro" "$I" \
		sh -c "$nsline; touch /y/b && echo WROTE; test -e '$mark' && echo HOME; true" >"$T_TMP/m1" 2>&1 || rc=$?
	wait
	rm -f "$mark"
	cat "$T_TMP/m0" "$T_TMP/m1"
	[ "$rc" = 0 ] || { echo "task 1 exited $rc"; return 1; }
	grep -q WROTE "$T_TMP/m0" && grep -q HOME "$T_TMP/m0" || { echo "task 0 misses its bind or \$HOME"; return 1; }
	! grep -q HOME "$T_TMP/m1" || { echo "the --contain task sees \$HOME"; return 1; }
	! grep -q WROTE "$T_TMP/m1" && [ ! -e "$T_TMP/x/b" ] || { echo "the --contain task wrote to its read-only bind"; return 1; }
	[ "$(head -n 1 "$T_TMP/m0")" != "$(head -n 1 "$T_TMP/m1")" ] || { echo "one user and mount namespace for both"; return 1; }
	# Each keeper saw one of the 2 tasks and would wait JOIN_IDLE_S for
	# the other (under srun: until slurmstepd ends): stop them.
	for p in $(marked_procs | grep -F "$T_TMP/x:/y" | cut -d' ' -f1); do kill -TERM "$p" 2>/dev/null; done
	gone
}
ok "tasks of a step with different options (--contain, -B x:y:ro) never share a container" multiopt
# Tasks of one step whose site files differ in a key that decides the
# container (shm_size: the join key's digest once missed it, and task 1
# joined task 0's keeper, only to fail its plan check): each gets its own
# container with its own /dev/shm. MPICTR_TEST_SITE_CONF stands in for
# the site file (only where /etc/mpictr/mpictr.conf is absent).
sitediff() {
	local v="SLURM_JOB_ID=$JOB SLURM_STEP_ID=31 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2" p rc=0
	echo "shm_size = 8m" >"$T_TMP/site8.conf" && echo "shm_size = 16m" >"$T_TMP/site16.conf" || return 1
	env $v SLURM_PROCID=0 SLURM_LOCALID=0 MPICTR_TEST_SITE_CONF="$T_TMP/site8.conf" "$MPICTR" "$I" \
		sh -c "$nsline; df -k /dev/shm | tail -n 1; echo UP; exec sleep 3" >"$T_TMP/s0" 2>&1 &
	for _ in $(seq 100); do grep -q UP "$T_TMP/s0" && break; sleep 0.1; done
	env $v SLURM_PROCID=1 SLURM_LOCALID=1 MPICTR_TEST_SITE_CONF="$T_TMP/site16.conf" "$MPICTR" "$I" \
		sh -c "$nsline; df -k /dev/shm | tail -n 1" >"$T_TMP/s1" 2>&1 || rc=$?
	wait
	cat "$T_TMP/s0" "$T_TMP/s1"
	[ "$rc" = 0 ] || { echo "task 1 exited $rc"; return 1; }
	grep -qE '^[^ ]+ +8192 ' "$T_TMP/s0" && grep -qE '^[^ ]+ +16384 ' "$T_TMP/s1" || { echo "a /dev/shm of the other site file"; return 1; }
	[ "$(head -n 1 "$T_TMP/s0")" != "$(head -n 1 "$T_TMP/s1")" ] || { echo "one user and mount namespace for both"; return 1; }
	# each keeper waits for the other task: stop them
	for p in $(marked_procs | cut -d' ' -f1); do kill -TERM "$p" 2>/dev/null; done
	gone
}
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "tasks of a step with different site files" "no /etc/mpictr/mpictr.conf (MPICTR_TEST_SITE_CONF is ignored beside it)"
else
	ok "tasks of a step whose site files differ in shm_size never share a container" sitediff
fi
# A program in another container of the user sees the step's keeper socket
# through the /tmp bind: the keeper hands it nothing and it takes no rank
# slot (issue 23 item 7: it got the namespaces, and the step's last task
# was refused as one too many). A leftover daemon of a task (double fork,
# setsid) ends with the keeper (issue 23 item 2: it outlived the step).
PROBE=$ROOT/build/tests/escape-probe
if [ -x "$PROBE" ]; then
	mkdir -p "$T_TMP/probe" && cp "$PROBE" "$T_TMP/probe/"
	intruder() {
		local t0 sock i
		task 21 0 0 0 2 sh -c 'echo up; sleep 4' >"$T_TMP/i0" 2>&1 &
		t0=$!
		for i in $(seq 100); do
			sock=$(ls "$JDIR"/$JOB.21.*.sock 2>/dev/null | head -n 1)
			[ -n "$sock" ] && grep -q up "$T_TMP/i0" && break
			sleep 0.1
		done
		[ -S "$sock" ] || { echo "no keeper socket"; kill $t0; return 1; }
		"$MPICTR" -B "$T_TMP/probe:/opt/escape" "$I" /opt/escape/escape-probe --socket "$sock" >"$T_TMP/iprobe" 2>&1
		grep keeper-socket "$T_TMP/iprobe"
		grep -q '^BLOCKED keeper-socket: connected to .* 0 fds' "$T_TMP/iprobe" || { kill $t0; return 1; }
		task 21 0 1 1 2 true || { echo "the step's second task was refused"; kill $t0; return 1; }
		wait $t0
	}
	ok "a program in another container gets nothing from a step's keeper, and takes no rank slot" intruder
	daemon_left() { marked_procs 2>/dev/null | awk '$2 == "sleep" && $3 == 397'; }
	daemon() {
		task 22 0 0 0 1 sh -c 'setsid sh -c "sleep 397" </dev/null >/dev/null 2>&1 & true'
		settle 100 daemon_left
	}
	ok "a daemon a task left in the container ends with the step's keeper" daemon
else
	need "a program in another container gets nothing from a step's keeper" "build/tests/escape-probe not built (make check builds it)"
fi

done_testing
