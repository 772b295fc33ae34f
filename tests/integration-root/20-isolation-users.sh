#!/bin/bash
# 20-isolation-users.sh - the escape probe (tests/probes/escape.c) run by
# user A (mpictr-test) inside A's container against a job of user V
# (mpictr-test2, join mode): signal and ptrace of V's task, V's /proc
# root and memory, V's keeper socket (directory closed, then opened to
# everyone: SO_PEERCRED must still refuse) are all blocked. Run as root,
# which only switches users: every mpictr here runs unprivileged.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2}
A=${MPICTR_TEST_ATTACKER:-mpictr-test}
PROBE=$ROOT/build/tests/escape-probe
require_two_users "$A" "$V" "$A"
[ -x "$PROBE" ] || { need "escape probe" "build/tests/escape-probe not built"; done_testing; exit; }
IMG=$(test_images tiny) || { need "tiny image" "tests/images/build.sh failed"; done_testing; exit; }
VUID=$(id -u "$V")
VDIR=/tmp/mpictr-join-$VUID

W=$(mktemp -d /var/tmp/mpictr-iso-users.XXXXXX) || exit 1
chmod 0755 "$W"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
mkdir "$W/probe" && cp "$PROBE" "$W/probe/" && chmod -R a+rX "$W/probe"
trap 't_cleanup; pkill -u "$VUID" -f "$W/" 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1
JOB=$((600000 + $$ % 90000))

# V's task of a simulated step expecting 2 tasks: its keeper serves on.
runuser -u "$V" -- env SLURM_JOB_ID=$JOB SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 \
	SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE=2 "$MPICTR" "$W/tiny.sif" \
	sh -c 'echo PID $$; exec sleep 60' >"$W/v.out" 2>&1 &
VTASK=$!
for _ in $(seq 300); do grep -q '^PID ' "$W/v.out" && break; sleep 0.1; done
VPID=$(sed -n 's/^PID //p' "$W/v.out")
SOCK=$(ls "$VDIR"/$JOB.0.*.sock 2>/dev/null | head -n 1)
ok "V's task runs and its keeper listens" test -S "$SOCK" -a -n "$VPID"

probe() { # as A, in A's own container
	runuser -u "$A" -- "$MPICTR" -B "$W/probe:/opt/escape" "$IMG/tiny.sif" \
		/opt/escape/escape-probe --victim "$VPID" --socket "$SOCK"
}
ok "A's probe: every attempt against V's job is blocked" probe
cp "$T_OUT" "$W/o1"
for n in kill-other-user ptrace-other-user proc-root-of-other-user proc-mem-of-other-user keeper-socket; do
	check "... $n is blocked" grep -q "^BLOCKED $n: " "$W/o1"
done
check "... the socket refused by the directory (EACCES)" grep -q '^BLOCKED keeper-socket: connect(.*Permission denied' "$W/o1"
# Defence in depth: the directory and socket opened to everyone; the
# keeper checks SO_PEERCRED and hands A nothing.
chmod 0711 "$VDIR"; chmod 0777 "$SOCK"
ok "with V's rendezvous opened to all, A's probe is still blocked" probe
cp "$T_OUT" "$W/o2"
check "... A connected but got no namespace fds (SO_PEERCRED)" grep -q '^BLOCKED keeper-socket: connected to .* 0 fds' "$W/o2"
chmod 0700 "$VDIR"
check "V's task survived A's attempts" kill -0 "$VPID"
# V's second task completes the step's count; then the first ends.
ok "V's second task joins the step" runuser -u "$V" -- env SLURM_JOB_ID=$JOB SLURM_STEP_ID=0 \
	SLURM_NODEID=0 SLURM_PROCID=1 SLURM_LOCALID=1 SLURM_STEP_TASKS_PER_NODE=2 "$MPICTR" "$W/tiny.sif" true
kill "$VPID" 2>/dev/null
wait "$VTASK" 2>/dev/null
gone() {
	for _ in $(seq 300); do
		if ! pgrep -u "$VUID" -f "$W/" >/dev/null && ! ls "$VDIR" 2>/dev/null | grep -q "^$JOB\."; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}
ok "V's keeper is gone after its task" gone
done_testing
