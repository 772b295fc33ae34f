#!/bin/bash
# 40-instance-users.sh - named instances between two users (run as root,
# which only switches users: every mpictr here runs unprivileged). The
# victim V is mpictr-test2, the other user A is mpictr-test. Both may use
# the same name; A neither lists nor enters nor stops V's instance: its
# socket lives in V's private rendezvous directory, and even with the
# directory and the socket opened to A, V's keeper answers A with nothing
# (SO_PEERCRED).
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2} A=${MPICTR_TEST_ATTACKER:-mpictr-test}
require_two_users "$A" "$V" "$V"
require_images tiny
VUID=$(id -u "$V")
VDIR=/tmp/mpictr-join-$VUID
# Both users reach the image and the helper through $W (this test's
# private directory, opened for reading).
W=$T_TMP
chmod 0755 "$W"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
N=iu$$
trap 'runuser -u "$V" -- "$MPICTR" instance stop $N >/dev/null 2>&1; runuser -u "$A" -- "$MPICTR" instance stop $N >/dev/null 2>&1; t_cleanup' EXIT
cd "$W" || exit 1
NSCMD='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'
as() { local u=$1; shift; runuser -u "$u" -- env HOME="$(getent passwd "$u" | cut -d: -f6)" "$MPICTR" "$@"; }
LAST=$W/last
keep() { cp "$T_OUT" "$LAST"; }

# join USER SOCKET: ask the keeper at SOCKET for the namespaces (an
# instance's JOIN request) as USER (keeper-peek.py: "connect ERRNO",
# "closed ERRNO" or "got N bytes M fds"; 0 only when fds came)
cp "$ROOT/tests/integration-root/keeper-peek.py" "$W/"
join() { runuser -u "$1" -- python3 "$W/keeper-peek.py" "$2" --instance; }

ok "V starts instance $N" as "$V" instance start "$W/tiny.sif" $N
ok "A starts an instance of the same name" as "$A" instance start "$W/tiny.sif" $N
ok "V's exec instance://$N" as "$V" exec instance://$N sh -c "$NSCMD"
keep; cp "$LAST" "$W/ns.v"
ok "A's exec instance://$N" as "$A" exec instance://$N sh -c "$NSCMD"
keep; cp "$LAST" "$W/ns.a"
check "... A is in its own instance, not V's" bash -c "grep -q '^NS ' '$W/ns.a' && [ \"\$(cat '$W/ns.a')\" != \"\$(cat '$W/ns.v')\" ]"
vkeeper() { as "$V" instance list --json | python3 -c 'import json,sys; print([i["pid"] for i in json.load(sys.stdin) if i["name"]==sys.argv[1]][0])' $N; }
VK=$(vkeeper)
ok "A's instance list" as "$A" instance list --json
keep
check "... shows A's instance only (not V's keeper $VK)" \
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert [i["name"] for i in v].count(sys.argv[2]) == 1 and all(i["pid"] != int(sys.argv[3]) for i in v)' "$LAST" $N "$VK"
check "V's rendezvous directory is 0700 and V's" test "$(stat -c '%a %u' "$VDIR")" = "700 $VUID"
ok_fail "A cannot connect to V's instance socket" join "$A" "$VDIR/inst-$N.sock"
keep
check "... permission denied" grep -q "connect 13" "$LAST"
# Open the directory and the socket to A: the keeper still refuses A.
chmod 0711 "$VDIR"
chmod 0777 "$VDIR/inst-$N.sock"
ok_fail "with V's directory and socket opened to A, V's keeper gives A nothing" join "$A" "$VDIR/inst-$N.sock"
keep
check "... no fds, the connection closed" grep -qx "got 0 bytes 0 fds\|closed .*" "$LAST"
chmod 0700 "$VDIR"
chmod 0755 "$VDIR/inst-$N.sock"
ok "V's keeper still serves V" join "$V" "$VDIR/inst-$N.sock"
ok "A stops its own instance $N" as "$A" instance stop $N
ok "... V's instance is still running (same keeper)" test "$(vkeeper)" = "$VK"
ok "... and still serves V" as "$V" exec instance://$N true
ok "V stops its instance" as "$V" instance stop $N
vgone() {
	local i
	for i in $(seq 100); do
		! pgrep -u "$VUID" -f "$W/" >/dev/null && ! ls -A "$VDIR" | grep -q "inst-$N\." && return 0
		sleep 0.1
	done
	pgrep -a -u "$VUID" -f "$W/"
	ls -A "$VDIR"
	return 1
}
check "... nothing of it left" vgone

done_testing
