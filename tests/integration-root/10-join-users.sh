#!/bin/bash
# 10-join-users.sh - join mode between two users (run as root, which only
# switches users: every mpictr here runs unprivileged). The victim V is
# mpictr-test2, the other user A is mpictr-test. A can neither enter V's
# rendezvous directory nor, even where the directory is opened to it, get
# V's namespaces from V's keeper (SO_PEERCRED); a rendezvous directory
# squatted by A (a directory, a symlink, a file; or V's own with a wrong
# mode) does not stop V's steps: they run in a private directory whose
# name A cannot predict, with a notice naming the squatted path. Under
# Slurm, V's and A's jobs on the node never share namespaces.
. "$(dirname "$0")/../integration/lib.sh"
. "$ROOT/tests/slurm/env.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2}
A=${MPICTR_TEST_ATTACKER:-mpictr-test}
require_two_users "$A" "$V" "$V"
VUID=$(id -u "$V")
AUID=$(id -u "$A")
VDIR=/tmp/mpictr-join-$VUID
IMG=$(test_images tiny) || { need "tiny image" "tests/images/build.sh failed"; done_testing; exit; }

W=$(mktemp -d /var/tmp/mpictr-join-users.XXXXXX) || exit 1
chmod 0755 "$W"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
trap 't_cleanup; pkill -u "$VUID" -f "$W/" 2>/dev/null; rm -rf "$W" /tmp/mpictr-join-"$VUID"-* "$(getent passwd "$V" | cut -d: -f6)/.mpictr-join-key"' EXIT
cd "$W" || exit 1
JOB=$((700000 + $$ % 90000))
NSCMD='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'

# as USER STEP TPN CMD...: one task of a simulated step (the variables srun
# sets), run unprivileged as USER
as() {
	local u=$1 step=$2 tpn=$3
	shift 3
	runuser -u "$u" -- env SLURM_JOB_ID=$JOB SLURM_STEP_ID="$step" SLURM_NODEID=0 \
		SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE="$tpn" \
		"$MPICTR" "$W/tiny.sif" "$@"
}
# connect USER SOCKET: try to get namespace fds from a keeper as USER, with
# the claim of local rank 1 of 2 (keeper-peek.py: "connect ERRNO", "closed
# ERRNO" or "got N bytes M fds"; 0 only when fds came)
cp "$ROOT/tests/integration-root/keeper-peek.py" "$W/"
connect() { runuser -u "$1" -- python3 "$W/keeper-peek.py" "$2" --claim 1 2; }
LAST=$W/last
keep() { cp "$T_OUT" "$LAST"; }
# gone: V's keeper (and all of V's processes of this test) and its
# rendezvous entries are gone (bounded wait; only these tests use V)
gone() {
	local i
	for i in $(seq 300); do
		if ! pgrep -u "$VUID" -f "$W/" >/dev/null && [ -z "$(vents)" ]; then
			return 0
		fi
		sleep 0.1
	done
	pgrep -a -u "$VUID" -f "$W/"
	vents
	return 1
}
# vents: what is left in V's rendezvous directories (the usual one, when
# it is V's, and the private ones)
vents() {
	local d
	for d in "$VDIR" /tmp/mpictr-join-"$VUID"-*; do
		[ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = "$VUID" ] && ls -A "$d" | sed "s|^|$d/|"
	done
	return 0
}

# A stale directory of V from an earlier run (only these tests use V).
pgrep -u "$VUID" -f /tmp/mpictr-join >/dev/null || rm -rf "$VDIR"

# a_own_ns STEP: A's task with V's job variables and step STEP runs in its
# own namespaces, not those of V's running task ($W/v.out); then V's task
# is ended.
a_own_ns() {
	ok "A's task with V's job and step variables gets its own namespaces" as "$A" "$1" 1 sh -c "$NSCMD"
	keep
	check "... not V's" bash -c "grep '^NS ' '$LAST' && grep '^NS ' '$W/v.out' && [ \"\$(grep '^NS ' '$LAST')\" != \"\$(grep '^NS ' '$W/v.out')\" ]"
	kill "$(sed -n 's/^PID //p' "$W/v.out")"
	wait "$VTASK" 2>/dev/null
}
# ---- V's keeper serves V only -------------------------------------------------------
# Step 1 expects 2 tasks; one comes and sleeps: the keeper serves on.
as "$V" 1 2 sh -c "$NSCMD; echo PID \$\$; exec sleep 60" >"$W/v.out" 2>&1 &
VTASK=$!
for _ in $(seq 300); do grep -q '^NS ' "$W/v.out" && break; sleep 0.1; done
SOCK=$(ls "$VDIR"/$JOB.1.*.sock 2>/dev/null | head -n 1)
ok "V's task runs and V's keeper listens in $VDIR" test -S "$SOCK"
ok "the rendezvous directory is V's, mode 0700" test "$(stat -c '%u %a' "$VDIR")" = "$VUID 700"
ok_fail "A cannot enter V's rendezvous directory" runuser -u "$A" -- ls "$VDIR"
ok_status "A cannot connect to V's keeper socket" 2 connect "$A" "$SOCK"
keep
check "... refused by the directory's permissions (EACCES)" grep -q '^connect 13 ' "$LAST"
# Defence in depth: open the directory and the socket to everyone; the
# keeper still answers A with nothing (SO_PEERCRED), and V with the fds.
chmod 0711 "$VDIR"
chmod 0777 "$SOCK"
ok_status "with the directory opened, A connects but gets no namespace fds (SO_PEERCRED)" 1 connect "$A" "$SOCK"
keep
check "... the keeper closed the connection unanswered" grep -qx 'got 0 bytes 0 fds\|closed .*' "$LAST"
ok "... while V gets them from the same socket (the check can tell)" connect "$V" "$SOCK"
keep
check "... 2 fds" grep -qE '^got [1-9][0-9]* bytes 2 fds' "$LAST" # the reply: header, verdict, digest, UCX answer
chmod 0700 "$VDIR"
a_own_ns 1
ok "V's task killed: V's keeper and socket are gone" gone

# ---- squatted or unsafe rendezvous directories ----------------------------------------
# A takes V's rendezvous name first (a directory, a symlink, a file; or V's
# own directory has a loose mode). V's steps must still run, the tasks of a
# step in one namespace set, in a private directory whose name A cannot
# predict (/tmp/mpictr-join-VUID-HASH, HASH keyed by V's ~/.mpictr-join-key),
# with a notice naming the squatted path and its owner. Before, every task
# of V failed with 255 until an administrator removed A's path.
KEY=$(getent passwd "$V" | cut -d: -f6)/.mpictr-join-key
squat() { # how: mode/owner/kind of the squatted path, made as A or V
	rm -rf "$VDIR"
	case $1 in
	other) runuser -u "$A" -- mkdir -m 0700 "$VDIR" ;;
	mode) runuser -u "$V" -- mkdir -m 0755 "$VDIR" ;;
	link) mkdir -p -m 0755 "$W/adir" && chown "$A" "$W/adir" && runuser -u "$A" -- ln -s "$W/adir" "$VDIR" ;;
	vlink) # a symlink to a private directory of V's: still not V's name
		mkdir -p -m 0700 "$W/vdir" && chown "$V" "$W/vdir" && runuser -u "$A" -- ln -s "$W/vdir" "$VDIR" ;;
	file) runuser -u "$A" -- touch "$VDIR" ;;
	esac
}
# vstep STEP N: N tasks of V's step STEP at once; all must exit 0 and share
# one user and mount namespace
vstep() {
	local step=$1 n=$2 i rc=0
	rm -f "$W"/t[0-9]* "$W"/e[0-9]*
	for i in $(seq 0 $((n - 1))); do
		runuser -u "$V" -- env SLURM_JOB_ID=$JOB SLURM_STEP_ID="$step" SLURM_NODEID=0 \
			SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_STEP_TASKS_PER_NODE=$n \
			"$MPICTR" "$W/tiny.sif" sh -c "$NSCMD" >"$W/t$i" 2>"$W/e$i" &
	done
	for i in $(seq $n); do wait -n || rc=$((rc + 1)); done
	cat "$W"/e[0-9]*
	[ $rc = 0 ] || { echo "$rc of $n tasks failed"; return 1; }
	[ "$(cat "$W"/t[0-9]* | grep -c '^NS ')" = "$n" ] && [ "$(cat "$W"/t[0-9]* | sort -u | wc -l)" = 1 ]
}
# the notice of the task with SLURM_LOCALID 0 names the path and its owner
noticed() {
	grep -q "rendezvous directory '$VDIR' is taken ($1): using '/tmp/mpictr-join-$VUID-[0-9a-f]\{16\}' instead" "$W/e0" || { cat "$W"/e[0-9]*; return 1; }
}
# the private directory V fell back to: one, V's, mode 0700
altdir() { find /tmp -maxdepth 1 -name "mpictr-join-$VUID-*" -user "$VUID" -type d -perm 0700; }
pgrep -u "$VUID" -f /tmp/mpictr-join >/dev/null || rm -rf "$KEY" /tmp/mpictr-join-"$VUID"-*

squat other
ok "a rendezvous directory created by A: V's 16 tasks starting at once still run, in one namespace set" vstep 5 16
keep
check "... a notice names the squatted path and its owner" noticed "a directory, owner $A (uid $AUID), mode 700"
check "... nothing was created in A's directory" test -z "$(ls -A "$VDIR")"
check "... V's tasks used one private directory of V's, mode 0700" test "$(altdir | wc -l)" = 1
check "... its name is keyed by V's key file, 0600, made once by the racing tasks" \
	bash -c "[ \"\$(stat -c '%u %a %s' '$KEY')\" = '$VUID 600 33' ] && ! ls '$KEY'.* 2>/dev/null"
ok "... V's keeper gone, nothing left behind" gone
ALT=$(altdir)
# V's task stays; A knows the private name (it is visible in /tmp) but
# cannot get V's namespaces from there.
as "$V" 6 1 sh -c "$NSCMD; echo PID \$\$; exec sleep 60" >"$W/v.out" 2>&1 &
VTASK=$!
for _ in $(seq 300); do grep -q '^NS ' "$W/v.out" && break; sleep 0.1; done
SOCK=$(ls "$ALT"/$JOB.6.*.sock 2>/dev/null | head -n 1)
ok "V's keeper listens in the private directory" test -S "$SOCK"
ok_status "A cannot connect to V's keeper there" 2 connect "$A" "$SOCK"
keep
check "... refused by the directory's permissions (EACCES)" grep -q '^connect 13 ' "$LAST"
a_own_ns 6
ok "... V's task killed: keeper and socket gone" gone
ok "A squatting V's private name too (once seen): V's next step takes the next name" \
	bash -c "rm -rf '$ALT' && runuser -u '$A' -- mkdir -m 0700 '$ALT'"
ok "... and runs" vstep 7 2
check "... in another private directory" eval '[ "$(altdir)" != "$ALT" ] && [ "$(altdir | wc -l)" = 1 ]'
ok "... and leaves nothing behind" gone
rm -rf "$ALT"
squat mode
ok "V's own rendezvous directory with mode 0755: V's step runs elsewhere" vstep 8 2
keep
check "... the notice names the mode" noticed "a directory, owner $V (uid $VUID), mode 755"
check "... and nothing was created in the loose directory" test -z "$(ls -A "$VDIR")"
squat link
ok "a symlink planted by A at the rendezvous path: V's step runs" vstep 9 2
check "... the notice says it is a symbolic link, nothing created behind it" bash -c "$(declare -f noticed); W=$W VDIR=$VDIR VUID=$VUID; noticed 'a symbolic link, owner $A (uid $AUID), mode 777' && [ -z \"\$(ls -A '$W/adir')\" ]"
squat vlink
ok "a symlink planted by A to a private directory of V: V's step runs" vstep 10 2
check "... nothing created behind it" test -z "$(ls -A "$W/vdir")"
squat file
ok "a file planted by A at the rendezvous path: V's step runs" vstep 11 2
check "... the notice says it is not a directory" grep -q "is taken (not a directory, owner $A" "$W/e0"
ok "MPICTR_JOIN=0 runs the task anyway (no rendezvous)" bash -c "$(declare -f as); V=$V JOB=$JOB W=$W MPICTR=$MPICTR; MPICTR_JOIN=0 as \$V 3 1 true"
chmod 0644 "$KEY"
ok_status "a key file readable by others is refused (exit 255)" 255 as "$V" 12 1 true
keep
check "... with an error naming it" grep -q "join key '$KEY' is not a private file of uid $VUID" "$LAST"
rm -f "$KEY"
rm -rf "$VDIR"
unsquatted() {
	local out
	out=$(as "$V" 4 1 true 2>&1) || { echo "$out"; return 1; }
	! grep -q 'is taken' <<<"$out" && [ "$(stat -c '%u %a' "$VDIR")" = "$VUID 700" ]
}
ok "with the squatter's path removed, V's task joins in $VDIR again" unsquatted
ok "... and leaves nothing behind" gone
rm -rf /tmp/mpictr-join-"$VUID"-* "$KEY"

# ---- under Slurm: two users' jobs on one node ------------------------------------------
if ! slurm_up; then
	need "single-node Slurm answers sinfo" "the Slurm cluster (tests/slurm/cluster.sh start)"
else
	twousers() {
		runuser -u "$V" -- timeout -k 5 60 srun -O -n 2 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; sleep 2" >"$W/s.v" 2>&1 &
		runuser -u "$A" -- timeout -k 5 60 srun -O -n 2 "$MPICTR" "$W/tiny.sif" sh -c "$NSCMD; sleep 2" >"$W/s.a" 2>&1 &
		wait
		cat "$W/s.v" "$W/s.a"
		[ "$(grep -c '^NS ' "$W/s.v")" = 2 ] && [ "$(grep -c '^NS ' "$W/s.a")" = 2 ] &&
			[ "$(grep '^NS ' "$W/s.v" | sort -u | wc -l)" = 1 ] &&
			[ "$(grep '^NS ' "$W/s.a" | sort -u | wc -l)" = 1 ] &&
			[ "$(grep -h '^NS ' "$W/s.v" "$W/s.a" | sort -u | wc -l)" = 2 ]
	}
	ok "srun jobs of two users at once: one namespace set each, never shared" twousers
	ok "... and V leaves nothing behind" gone
fi
done_testing
