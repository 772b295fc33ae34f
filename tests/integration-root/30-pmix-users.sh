#!/bin/bash
# 30-pmix-users.sh - another local user against the PMIx server of a
# launch-mode job (`mpictr -n`). libpmix 4.2 listens on TCP 127.0.0.1 only,
# and its "native" security over TCP trusts the uid/gid the client sends.
# The attacker A (mpictr-test) finds the victim V's (mpictr-test2) port in
# /proc/net/tcp and the namespace from the launcher's pid, and runs a real
# PMIx client (libpmix) behind an LD_PRELOAD shim that reports V's uid/gid:
#   1. read the job's data and PMIx_Abort(77) it;
#   1b. connect as rank 0 before the ranks start (their MPI_Init failed);
#   2. connect without the shim (libpmix rejects it: the launcher used to
#      deadlock at teardown);
#   3. hold an idle TCP connection to the port (the job's MPI start used to
#      stall for as long as it was held).
# Each must leave V's job unharmed: exit 0, on time, nothing read.
# Run as root, which only switches users: every mpictr here runs
# unprivileged.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2}
A=${MPICTR_TEST_ATTACKER:-mpictr-test}
require_two_users "$A" "$V" "$V"
if ! pkg-config --exists pmix || ! command -v cc >/dev/null; then
	need "a C compiler and libpmix-dev" "the attacker's PMIx client is built in the test"
	done_testing; exit
fi
IMG=$(test_images mpi) || { need "mpi image" "tests/images/build.sh failed"; done_testing; exit; }
VUID=$(id -u "$V")
VGID=$(id -g "$V")

W=$(mktemp -d /var/tmp/mpictr-pmix-users.XXXXXX) || exit 1
chmod 0755 "$W"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
trap 't_cleanup; pkill -KILL -u "$VUID" -f "$W/" 2>/dev/null; pkill -KILL -u "$A" -f "$W/" 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1
: >"$W/log"

# The attacker's tools, built as the attacker would.
cat >"$W/shim.c" <<EOF
#include <sys/types.h>
uid_t getuid(void) { return $VUID; }
uid_t geteuid(void) { return $VUID; }
gid_t getgid(void) { return $VGID; }
gid_t getegid(void) { return $VGID; }
EOF
cat >"$W/client.c" <<'EOF'
/* client [abort|hold SECONDS]: PMIx_Init as the rank in PMIX_RANK of
 * PMIX_NAMESPACE, print the job size, then abort the job with 77 or hold
 * the connection. Prints INIT-FAILED when the server refuses it. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	pmix_proc_t me, job;
	pmix_value_t *v = NULL;
	pmix_status_t rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		printf("INIT-FAILED %s\n", PMIx_Error_string(rc));
		return 3;
	}
	printf("INIT-OK %s.%u\n", me.nspace, me.rank);
	PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS)
		printf("JOB-SIZE %u\n", v->data.uint32);
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "abort") == 0) {
		rc = PMIx_Abort(77, "attacker", NULL, 0);
		printf("ABORT %s\n", PMIx_Error_string(rc));
	} else if (argc > 2) {
		sleep((unsigned)atoi(argv[2]));
	}
	PMIx_Finalize(NULL, 0);
	return 0;
}
EOF
# shellcheck disable=SC2046
if ! cc -shared -fPIC -o "$W/shim.so" "$W/shim.c" ||
	! cc -o "$W/client" "$W/client.c" $(pkg-config --cflags --libs pmix); then
	need "the attacker's client" "cc failed"
	done_testing; exit
fi
chmod a+rx "$W/shim.so" "$W/client"

# start_victim SECS-BEFORE-MPI: V's 2-rank job; each rank waits, then runs
# the MPI hello. Sets VJOB (the launcher's pid) and VOUT.
start_victim() {
	VOUT=$W/v.$1.out
	runuser -u "$V" -- env TMPDIR=/tmp "$MPICTR" -n 2 "$W/mpi.sif" \
		sh -c "sleep $1; exec /opt/mpictr/bin/hello" >"$VOUT" 2>&1 &
	VJOB=$!
	VSTART=$(date +%s%N)
}
# victim_port: the TCP port V's launcher listens on (what any user can
# read in /proc/net/tcp: state 0A, uid V, 127.0.0.1); empty when none yet
victim_port() {
	local h
	h=$(awk -v uid="$VUID" '$4 == "0A" && $8 == uid && $2 ~ /^0100007F:/ {
		sub(/^0100007F:/, "", $2); print $2; exit }' /proc/net/tcp)
	[ -n "$h" ] && echo $((16#$h))
}
wait_port() {
	local p
	for _ in $(seq 200); do
		p=$(victim_port)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}
# as_attacker [--shim] RANK ARGS...: the client against V's server
as_attacker() {
	local pre=
	[ "$1" = --shim ] && { pre=$W/shim.so; shift; }
	local rank=$1
	shift
	local ns="mpictr.$VPID.0" uri="pmix-server.$VPID;tcp4://127.0.0.1:$PORT"
	runuser -u "$A" -- env -i PATH=/usr/bin:/bin LD_PRELOAD="$pre" \
		PMIX_NAMESPACE="$ns" PMIX_RANK="$rank" PMIX_SECURITY_MODE=native \
		PMIX_SERVER_URI41="$uri" PMIX_SERVER_URI4="$uri" PMIX_SERVER_URI3="$uri" \
		PMIX_SERVER_URI2="$uri" PMIX_SERVER_URI21="$uri" \
		PMIX_SERVER_TMPDIR=/tmp PMIX_SYSTEM_TMPDIR=/tmp \
		timeout -k 2 20 "$W/client" "$@"
}
# victim_pid: V's launcher (the oldest process of V running the job; the
# namespace is named after it), what A sees in /proc
victim_pid() {
	for _ in $(seq 100); do
		VPID=$(pgrep -o -u "$VUID" -f "^$MPICTR -n 2 $W/mpi.sif") && return 0
		sleep 0.05
	done
	return 1
}
# victim_result: waits (at most 60 s) for V's job; sets R to "STATUS SECONDS"
victim_result() {
	local st
	for _ in $(seq 600); do kill -0 "$VJOB" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$VJOB" 2>/dev/null; then
		pkill -KILL -u "$VUID" -f "$W/" 2>/dev/null
		wait "$VJOB" 2>/dev/null
		R="hung 60"
		return
	fi
	wait "$VJOB"
	st=$?
	R="$st $((($(date +%s%N) - VSTART) / 1000000000))"
}

# judge DESC FILE COND...: like check, showing FILE when COND fails
judge() {
	local d=$1 f=$2 rc
	shift 2
	"$@" >/dev/null 2>&1
	rc=$?
	cp "$f" "$T_OUT"
	t_report "$d" $((rc != 0))
}

# Control: the shim makes the client pass for V (so the test can fail).
ok "control: the shim reports V's uid to the attacker's programs" \
	runuser -u "$A" -- env LD_PRELOAD="$W/shim.so" sh -c "[ \$(id -u) = $VUID ]"

# 1. Read the job's data and abort it, as V (forged uid).
start_victim 4
PORT=$(wait_port)
victim_pid
judge "V's launcher listens on a TCP port another user can see" "$W/log" [ -n "$PORT" ]
as_attacker --shim 1 abort >"$W/a1.out" 2>&1
judge "1. A's forged-uid PMIx client is refused (no INIT-OK)" "$W/a1.out" bash -c "! grep -q INIT-OK '$W/a1.out'"
judge "... and reads nothing of the job" "$W/a1.out" bash -c "! grep -q JOB-SIZE '$W/a1.out'"
victim_result
{ echo "$R"; cat "$W/a1.out" "$VOUT"; } >"$W/log"
judge "... V's job ends with 0, not A's 77" "$W/log" [ "${R%% *}" = 0 ]
judge "... every rank of V's job said hello" "$W/log" [ "$(grep -c '^hello rank' "$VOUT")" = 2 ]

# 1b. Connect as rank 0 before V's ranks start, and hold the connection.
start_victim 4
PORT=$(wait_port)
victim_pid
as_attacker --shim 0 hold 12 >"$W/a1b.out" 2>&1 &
ATT=$!
victim_result
kill "$ATT" 2>/dev/null; wait "$ATT" 2>/dev/null
{ echo "$R"; cat "$W/a1b.out" "$VOUT"; } >"$W/log"
judge "1b. A holding rank 0's place before MPI_Init: V's job still ends with 0" "$W/log" [ "${R%% *}" = 0 ]
judge "... and A was refused" "$W/log" bash -c "! grep -q INIT-OK '$W/a1b.out'"

# 2. A plain connection of A (libpmix itself rejects the uid): V's
# launcher must still end on its own.
start_victim 3
PORT=$(wait_port)
victim_pid
as_attacker 1 abort >"$W/a2.out" 2>&1
victim_result
{ echo "$R"; cat "$W/a2.out" "$VOUT"; } >"$W/log"
judge "2. after A's rejected connection V's launcher ends (no teardown deadlock), status 0" "$W/log" [ "${R%% *}" = 0 ]

# 3. An idle TCP connection of A to the port while V's ranks start.
start_victim 0
PORT=$(wait_port)
victim_pid
runuser -u "$A" -- timeout 25 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; sleep 25" >/dev/null 2>&1 &
IDLE=$!
victim_result
kill "$IDLE" 2>/dev/null; wait "$IDLE" 2>/dev/null
{ echo "$R"; cat "$VOUT"; } >"$W/log"
judge "3. with A's idle connection held, V's job ends with 0" "$W/log" [ "${R%% *}" = 0 ]
judge "... without stalling (under 10 s; about 2 s alone)" "$W/log" [ "${R##* }" -lt 10 ]
judge "... and V's launcher logged the refused connections" "$W/log" grep -q "refused a PMIx connection from uid $(id -u "$A")" "$VOUT"

done_testing
