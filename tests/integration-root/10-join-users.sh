#!/bin/bash
# 10-join-users.sh - join mode between two users (run as root, which only
# switches users: every mpictr here runs unprivileged). The victim V is
# mpictr-test2, the other user A is mpictr-test. A can neither enter V's
# rendezvous directory nor, even where the directory is opened to it, get
# V's namespaces from V's keeper (SO_PEERCRED); a rendezvous directory
# squatted by A (or V's own with a wrong mode, a symlink, a file) is
# refused with an error naming it. Under Slurm, V's and A's jobs on the
# node never share namespaces.
. "$(dirname "$0")/../integration/lib.sh"
. "$ROOT/tests/slurm/env.sh"

V=mpictr-test2
A=mpictr-test
if [ "$(id -u)" != 0 ]; then
	need "run as root" "tests/integration-root/ needs root (make check-root)"
	done_testing
	exit
fi
if ! id "$V" >/dev/null 2>&1 || ! id "$A" >/dev/null 2>&1; then
	need "users $A and $V" "the test users (.ci/run creates them)"
	done_testing
	exit
fi
VUID=$(id -u "$V")
AUID=$(id -u "$A")
VDIR=/tmp/mpictr-join-$VUID
if ! runuser -u "$V" -- unshare -U true 2>/dev/null || ! [ -w /dev/fuse ] || [ "$(stat -c %a /dev/fuse)" != 666 ]; then
	need "user namespaces and /dev/fuse for $V" "unprivileged user namespaces and /dev/fuse mode 0666"
	done_testing
	exit
fi
IMG=$(test_images tiny) || { need "tiny image" "tests/images/build.sh failed"; done_testing; exit; }

W=$(mktemp -d /var/tmp/mpictr-join-users.XXXXXX) || exit 1
chmod 0755 "$W"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
trap 't_cleanup; pkill -u "$VUID" -f "$W/" 2>/dev/null; rm -rf "$W"' EXIT
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
# connect USER SOCKET: try to get namespace fds from a keeper as USER;
# prints "connect ERRNO" or "got N bytes M fds"; 0 only when fds came
cat >"$W/connect.py" <<'EOF'
import array, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect", e.errno, e.strerror)
    sys.exit(2)
msg, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(4 * array.array("i").itemsize))
fds = array.array("i")
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
print("got", len(msg), "bytes", len(fds), "fds")
sys.exit(0 if len(fds) else 1)
EOF
connect() { runuser -u "$1" -- python3 "$W/connect.py" "$2"; }
LAST=$W/last
keep() { cp "$T_OUT" "$LAST"; }
# gone: V's keeper (and all of V's processes of this test) and its
# rendezvous entries are gone (bounded wait; only these tests use V)
gone() {
	local i
	for i in $(seq 300); do
		if ! pgrep -u "$VUID" -f "$W/" >/dev/null && [ -z "$(ls -A "$VDIR" 2>/dev/null)" ]; then
			return 0
		fi
		sleep 0.1
	done
	pgrep -a -u "$VUID" -f "$W/"
	ls -la "$VDIR"
	return 1
}

# A stale directory of V from an earlier run (only these tests use V).
pgrep -u "$VUID" -f /tmp/mpictr-join >/dev/null || rm -rf "$VDIR"

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
check "... the keeper closed the connection unanswered" grep -q '^got 0 bytes 0 fds' "$LAST"
ok "... while V gets them from the same socket (the check can tell)" connect "$V" "$SOCK"
keep
check "... 2 fds" grep -q '^got 8 bytes 2 fds' "$LAST"
chmod 0700 "$VDIR"
ok "A's task with V's job and step variables gets its own namespaces" as "$A" 1 1 sh -c "$NSCMD"
keep
check "... not V's" bash -c "grep '^NS ' '$LAST' && grep '^NS ' '$W/v.out' && [ \"\$(grep '^NS ' '$LAST')\" != \"\$(grep '^NS ' '$W/v.out')\" ]"
kill "$(sed -n 's/^PID //p' "$W/v.out")"
wait "$VTASK" 2>/dev/null
ok "V's task killed: V's keeper and socket are gone" gone

# ---- squatted or unsafe rendezvous directories ----------------------------------------
# refused WHAT: V's task must fail with an error naming the directory
refused() {
	as "$V" 2 1 true
	local rc=$?
	[ $rc = 255 ] || { echo "exit status $rc, expected 255"; return 1; }
}
squat() { # how: mode/owner/kind of the squatted path, made as A or V
	rm -rf "$VDIR"
	case $1 in
	other) runuser -u "$A" -- mkdir -m 0700 "$VDIR" ;;
	mode) runuser -u "$V" -- mkdir -m 0755 "$VDIR" ;;
	link) mkdir -p -m 0755 "$W/adir" && chown "$A" "$W/adir" && runuser -u "$A" -- ln -s "$W/adir" "$VDIR" ;;
	file) runuser -u "$A" -- touch "$VDIR" ;;
	esac
}
squat other
ok "a rendezvous directory created by A is refused" refused
keep
check "... the error names it, its owner and the fix" bash -c "grep -q \"rendezvous directory '$VDIR' is not a private directory owned by uid $VUID (a directory, owner uid $AUID, mode 700): refusing to use it\" '$LAST' && grep -q 'MPICTR_JOIN=0' '$LAST'"
check "... and nothing was created in it" test -z "$(ls -A "$VDIR")"
squat mode
ok "V's own rendezvous directory with mode 0755 is refused" refused
keep
check "... the error names the mode" grep -q "(a directory, owner uid $VUID, mode 755)" "$LAST"
squat link
ok "a symlink planted by A at the rendezvous path is refused" refused
keep
check "... the error says it is a symbolic link, nothing created behind it" bash -c "grep -q 'a symbolic link' '$LAST' && [ -z \"\$(ls -A '$W/adir')\" ]"
squat file
ok "a file planted by A at the rendezvous path is refused" refused
keep
check "... the error says it is not a directory" grep -q 'not a directory' "$LAST"
ok "MPICTR_JOIN=0 runs the task anyway (no rendezvous)" bash -c "$(declare -f as); V=$V JOB=$JOB W=$W MPICTR=$MPICTR; MPICTR_JOIN=0 as \$V 3 1 true"
rm -rf "$VDIR"
ok "with the squatter's path removed, V's task joins again" as "$V" 4 1 true
ok "... and leaves nothing behind" gone

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
