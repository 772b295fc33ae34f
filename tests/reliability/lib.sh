# lib.sh - helpers of the reliability runs (sourced): a trial runner with a
# bounded wait and a leftover check, and the result table.
#
# Leftovers looked for after every trial (only this run's: the processes
# carry the run's environment marker, job directories live in a private
# TMPDIR, join sockets are named by this run's job ids):
#   procs   processes with the marker (holder, janitor, FUSE workers,
#           keeper, ranks), and the mounts they hold (their mountinfo)
#   dirs    $TMPDIR/mpictr-UID.* job directories
#   socks   /tmp/mpictr-join-UID/JOB.* entries of this run's jobs
#   shm     new files in the host's /dev/shm (the job's is private)
#   mounts  FUSE mounts in the host's mount table naming this run's files
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
set +u
UID_=$(id -u)
JDIR=/tmp/mpictr-join-$UID_
BOUND=${REL_BOUND:-20}     # seconds a job may take to end after the fault
TRIALS=${REL_TRIALS:-50}
REL_RESULTS=${REL_RESULTS:-$T_TMP/results}
private_tmpdir
SHM0=$T_TMP/shm0
ls -A /dev/shm 2>/dev/null | sort >"$SHM0"

# marked_procs, faster: only this user's processes are looked at
marked_procs() {
	local p
	for p in $(pgrep -u "$UID_"); do
		[ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "T_MARKER_MPICTR=$T_MARKER_MPICTR" &&
			echo "$p $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done 2>/dev/null
}
# leftovers [JOBID]: prints what was left, nothing when clean
leftovers() {
	local p
	marked_procs | grep -v -E '^[0-9]+ (sed|grep|tr|awk|pgrep|sort|comm|bash|ls|wc|head|cat /proc) ' | sed 's/^/proc /'
	for p in $(marked_procs | awk '{print $1}'); do
		[ -r /proc/$p/mountinfo ] && grep -c -e fuse -e "$T_TMP" /proc/$p/mountinfo 2>/dev/null |
			sed "s/^/mounts-of-$p /"
	done
	ls -d "$TMPDIR"/mpictr-* 2>/dev/null | sed 's/^/dir /'
	[ -n "$1" ] && ls "$JDIR" 2>/dev/null | grep "^$1\." | sed 's/^/sock /'
	ls -A /dev/shm 2>/dev/null | sort | comm -13 "$SHM0" - | sed 's/^/shm /'
	grep -e "$T_TMP" /proc/self/mountinfo | sed 's/^/mount /'
}
# settle [JOBID]: wait (bounded) until nothing is left; 0 when clean
settle() {
	local i
	for i in $(seq $((BOUND * 10))); do
		[ -z "$(leftovers "$1")" ] && return 0
		sleep 0.1
	done
	return 1
}
# kill_all_marked: end whatever a failed trial left (so the next starts clean)
kill_all_marked() {
	local p
	for p in $(marked_procs | awk '{print $1}'); do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$TMPDIR"/mpictr-* 2>/dev/null
}
rand_sleep() { sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.3f", rand() * 1.5 }')"; }
# wait_bounded PID SECONDS: wait for a background job; 124 on timeout (and
# kills it)
wait_bounded() {
	local pid=$1 lim=$2 i
	for i in $(seq $((lim * 20))); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 124
}
# row CASE TRIALS ENDED LEFTOVERS MEANINGFUL STATUSES NOTE
row() { printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$@" | tee -a "$REL_RESULTS"; }
# children PID: direct children of PID
children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep .; }
descendants() { local c; for c in $(children "$1"); do echo "$c"; descendants "$c"; done; }
comm_of() { cat /proc/"$1"/comm 2>/dev/null; }
