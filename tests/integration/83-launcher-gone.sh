#!/bin/bash
# 83-launcher-gone.sh - nothing outlives the job (issue 28): when the
# launcher's daemon that started the ranks (mpirun, hydra_pmi_proxy) is
# gone, however it ended, the node's keeper ends the ranks still in the
# container, then itself, the mount and its directory, within a few
# seconds. The ranks are hung: they ignore SIGTERM. On the old code a
# SIGKILL of mpirun or of hydra_pmi_proxy left the ranks, the keeper, the
# holder, the FUSE worker and the mount running for good.
. "$(dirname "$0")/lib.sh"

T="timeout -k 5 120"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

require_userns_fuse
require_images all
if ! command -v mpirun >/dev/null || ! command -v mpiexec.hydra >/dev/null; then
	need "mpirun and mpiexec.hydra" "the host's Open MPI and MPICH (tests/deps/debian-packages.txt)"
	done_testing
	exit
fi
W=$(mktemp -d /var/tmp/mpictr-gone.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
# On the way out (a failed case), end what a case left, by pid.
reap_all() {
	local p
	for p in $(cat "$W"/pids.* 2>/dev/null) $(pgrep -u "$MYUID" -f "$W/" | grep -vx "$$"); do
		kill -KILL "$p" 2>/dev/null
	done
}
trap 't_cleanup; reap_all; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp

# A hung rank: ignores SIGTERM, prints its pid, loops (its children too).
HUNG='trap "" TERM; echo "rank $$"; while :; do sleep 1; done'
# What is left of a job: the ranks (their pids were printed), our
# processes naming $W (keeper, holder, FUSE workers), mounts of the
# image, rendezvous entries, entries in $W/tmp.
leftovers() {
	local p
	for p in $(sed -n 's/^rank //p' "$W/out.$1" 2>/dev/null); do
		[ -d "/proc/$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" != "" ] &&
			! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && echo "rank $p: still running"
	done
	for p in $(pgrep -u "$MYUID" -f "$W/$1.sif" | grep -vx "$$"); do
		echo "process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done
	ls -A "$JDIR" 2>/dev/null | sort | comm -13 "$W/jdir.$1" - | sed 's/^/rendezvous entry /'
	ls -A "$W/tmp" | grep -v '^ompi\.' | sed 's/^/tmp entry /'
}
# gone_within NAME SECONDS: nothing left of job NAME within SECONDS
gone_within() { settle $(($2 * 10)) leftovers "$1"; }
# start NAME LAUNCHER...: the job in the background, until its 2 ranks
# said their pids; the launcher's pid in $W/launcher.NAME
start() {
	local n=$1
	shift
	ln -s "$IMG/mpi.sif" "$W/$n.sif"
	ls -A "$JDIR" 2>/dev/null | sort >"$W/jdir.$n"
	$T "$@" "$MPICTR" "$W/$n.sif" sh -c "$HUNG" >"$W/out.$n" 2>&1 &
	echo $! >"$W/timeout.$n"
	for _ in $(seq 200); do
		[ "$(grep -c '^rank ' "$W/out.$n")" = 2 ] && break
		sleep 0.1
	done
	sed -n 's/^rank //p' "$W/out.$n" >"$W/pids.$n"
	[ "$(wc -l <"$W/pids.$n")" = 2 ] || { cat "$W/out.$n"; return 1; }
}
# kill_daemon NAME SIG COMM: send SIG to the job's process named COMM (the
# parent of its ranks, or its launcher)
kill_daemon() {
	local p
	p=$(pgrep -u "$MYUID" -x "$3" -P "$(ps -o ppid= -p "$(head -n 1 "$W/pids.$1")" | tr -d ' ')" 2>/dev/null)
	[ -n "$p" ] || p=$(ps -o ppid= -p "$(head -n 1 "$W/pids.$1")" | tr -d ' ')
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$3" ] || { echo "no $3 (parent $p: $(cat /proc/$p/comm))"; return 1; }
	kill "-$2" "$p"
}

ok "mpirun -np 2 mpictr around hung ranks" start tm mpirun -np 2
ok "... kill -TERM mpirun" kill_daemon tm TERM mpirun
check "... nothing of the user left within 10 s (ranks, keeper, holder, FUSE worker, directories)" gone_within tm 10

ok "mpirun -np 2 mpictr around hung ranks" start km mpirun -np 2
ok "... kill -KILL mpirun (it cannot end its ranks)" kill_daemon km KILL mpirun
check "... nothing of the user left within 10 s: the keeper ended the ranks" gone_within km 10

ok "mpiexec.hydra -n 2 mpictr around hung ranks" start kp mpiexec.hydra -n 2
ok "... kill -KILL hydra_pmi_proxy (the ranks' parent)" kill_daemon kp KILL hydra_pmi_proxy
check "... nothing of the user left within 10 s: the keeper ended the ranks" gone_within kp 10

ok "mpiexec.hydra -n 2 mpictr around hung ranks" start kh mpiexec.hydra -n 2
ok "... kill -KILL mpiexec.hydra" bash -c "kill -KILL \$(pgrep -u $MYUID -x mpiexec.hydra -P \$(cat '$W/timeout.kh'))"
check "... nothing of the user left within 10 s" gone_within kh 10

# Ranks that do not ignore SIGTERM (a hung MPI program): Hydra forwards it.
HUNG='echo "rank $$"; exec sleep 600'
ok "mpiexec.hydra -n 2 mpictr around ranks hung in sleep" start th mpiexec.hydra -n 2
ok "... kill -TERM mpiexec.hydra" bash -c "kill -TERM \$(pgrep -u $MYUID -x mpiexec.hydra -P \$(cat '$W/timeout.th'))"
check "... nothing of the user left within 10 s" gone_within th 10

done_testing
