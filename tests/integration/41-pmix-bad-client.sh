#!/bin/bash
# 41-pmix-bad-client.sh - a bad client of the job's own user against the
# PMIx server of `mpictr -n 2`: a connect message whose credential length
# runs past its end (libpmix 4.2 copied that far: SIGSEGV), a real PMIx
# client that libpmix rejects (a rank the job does not have) and that then
# stays idle (libpmix's teardown used to wait for it forever, SIGTERM
# ignored), and a plain idle connection. Each job must still end by itself,
# with 0, on time.
. "$(dirname "$0")/lib.sh"

if ! pkg-config --exists pmix || ! command -v cc >/dev/null; then
	need "a C compiler and libpmix-dev" "the bad client is built in the test"
	done_testing; exit
fi
IMG=$(test_images mpi) || { need "mpi image" "tests/images/build.sh failed"; done_testing; exit; }
use_private_tmpdir

cat >"$T_TMP/client.c" <<'EOF'
/* client SECS: PMIx_Init as PMIX_RANK of PMIX_NAMESPACE; refused or not,
 * keep the connection's process alive for SECS seconds. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	pmix_proc_t me;
	pmix_status_t rc = PMIx_Init(&me, NULL, 0);
	printf("%s\n", rc == PMIX_SUCCESS ? "INIT-OK" : "INIT-FAILED");
	fflush(stdout);
	sleep((unsigned)atoi(argv[1]));
	return 0;
}
EOF
# A shim so that the client's credential names another uid: libpmix's
# own check rejects it.
cat >"$T_TMP/shim.c" <<EOF
#include <sys/types.h>
uid_t getuid(void) { return $(($(id -u) + 1)); }
uid_t geteuid(void) { return $(($(id -u) + 1)); }
EOF
# shellcheck disable=SC2046
cc -shared -fPIC -o "$T_TMP/shim.so" "$T_TMP/shim.c" &&
	cc -o "$T_TMP/client" "$T_TMP/client.c" $(pkg-config --cflags --libs pmix) ||
	{ need "the bad client" "cc failed"; done_testing; exit; }

# start_job: the job (its ranks wait 3 s before MPI starts); sets JOB, T0
start_job() {
	OUT=$T_TMP/job.$1.out
	timeout -k 5 60 "$MPICTR" -n 2 "$IMG/mpi.sif" \
		sh -c 'sleep 3; exec /opt/mpictr/bin/hello' >"$OUT" 2>&1 &
	JOB=$!
	T0=$(date +%s%N)
}
# job_port: the TCP port the launcher listens on (its own socket's inode
# in /proc/net/tcp); sets PORT and LPID
job_port() {
	local inos h
	for _ in $(seq 200); do
		LPID=$(pgrep -o -P "$JOB" -f "$MPICTR -n 2") || LPID=$JOB
		inos=$(find "/proc/$LPID/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null |
			sed 's/socket:\[\(.*\)\]/\1/' | tr '\n' '|')
		h=$(awk -v inos="|$inos" '$4 == "0A" && index(inos, "|" $10 "|") {
			sub(/^0100007F:/, "", $2); print $2; exit }' /proc/net/tcp)
		[ -n "$h" ] && { PORT=$((16#$h)); return 0; }
		sleep 0.05
	done
	return 1
}
# job_result: waits for the job (at most 30 s): sets R to "STATUS SECONDS"
job_result() {
	local st
	for _ in $(seq 300); do kill -0 "$JOB" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$JOB" 2>/dev/null; then
		R="hung 30"
		kill -KILL "$JOB" "$LPID" 2>/dev/null
		wait "$JOB" 2>/dev/null
		return
	fi
	wait "$JOB"
	st=$?
	R="$st $((($(date +%s%N) - T0) / 1000000000))"
}
judge() { # DESC COND...
	local d=$1
	shift
	{ echo "result: $R"; cat "$OUT"; } >"$T_OUT"
	"$@"
	t_report "$d" $(($? != 0))
}

# 1. A connect message with a credential length past its end.
start_job malformed
job_port || { need "the job's port" "not found"; done_testing; exit; }
printf '\377\377\377\377\377\377\377\377\100\0\0\0\0\0\0\0native\0\177\377\377\377%057d' 0 |
	timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; cat >&3; sleep 2" 2>/dev/null
job_result
judge "1. after a malformed connect message the job ends with 0 (no crash)" [ "${R%% *}" = 0 ]
judge "... every rank said hello" [ "$(grep -c '^hello rank' "$OUT")" = 2 ]

# 2. Real clients that libpmix rejects (rank 7 of 2; rank 0 with another
# uid in its credential), then idle.
start_job rejected
job_port || { need "the job's port" "not found"; done_testing; exit; }
uri="pmix-server.$LPID;tcp4://127.0.0.1:$PORT"
env -i PATH=/usr/bin:/bin PMIX_NAMESPACE="mpictr.$LPID.0" PMIX_RANK=7 \
	PMIX_SECURITY_MODE=native PMIX_SERVER_URI41="$uri" PMIX_SERVER_URI4="$uri" \
	PMIX_SERVER_URI3="$uri" PMIX_SERVER_URI2="$uri" PMIX_SERVER_URI21="$uri" \
	timeout -k 2 25 "$T_TMP/client" 20 >"$T_TMP/client.out" 2>&1 &
CL=$!
env -i PATH=/usr/bin:/bin LD_PRELOAD="$T_TMP/shim.so" PMIX_NAMESPACE="mpictr.$LPID.0" \
	PMIX_RANK=0 PMIX_SECURITY_MODE=native PMIX_SERVER_URI41="$uri" \
	PMIX_SERVER_URI4="$uri" PMIX_SERVER_URI3="$uri" PMIX_SERVER_URI2="$uri" \
	PMIX_SERVER_URI21="$uri" timeout -k 2 25 "$T_TMP/client" 20 >"$T_TMP/client2.out" 2>&1 &
CL2=$!
job_result
kill "$CL" "$CL2" 2>/dev/null; wait "$CL" "$CL2" 2>/dev/null
judge "2. rejected clients held idle: the job still ends by itself with 0" [ "${R%% *}" = 0 ]
judge "... within 15 s (ranks start after 3 s)" [ "${R##* }" -lt 15 ]

# 3. A plain idle connection held while the ranks start.
start_job idle
job_port || { need "the job's port" "not found"; done_testing; exit; }
timeout 25 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; sleep 25" 2>/dev/null &
IDLE=$!
job_result
kill "$IDLE" 2>/dev/null; wait "$IDLE" 2>/dev/null
judge "3. an idle connection held: the job ends with 0" [ "${R%% *}" = 0 ]
judge "... within 10 s" [ "${R##* }" -lt 10 ]

# 4. The guard stands for embedders too: one linked with libmpictr.so or
# with libmpictr.a serves PMIx through it (written into libpmix's own
# accept slot; libmpictr exports no accept()). Another accept() preloaded
# in front of libc's changes nothing: the slot is libpmix's, and the check
# after the server's start (the guard saw libpmix accept its test
# connection, else exit 255) shows the guard was in the way.
EMB=$ROOT/tests/helpers/embed_run.c
ln -s "$ROOT/build/plugins" "$T_TMP/plugins" # found beside the program
cat >"$T_TMP/front.c" <<'EOF'
#define _GNU_SOURCE
#include <sys/socket.h>
int accept(int fd, struct sockaddr *a, socklen_t *l) { return accept4(fd, a, l, 0); }
EOF
if cc -I"$ROOT/runtime" -o "$T_TMP/embed_shared" "$EMB" -L"$ROOT/build" \
	-Wl,-rpath,"$ROOT/build" -lmpictr &&
	cc -I"$ROOT/runtime" -o "$T_TMP/embed_static" "$EMB" "$ROOT/build/libmpictr.a" -lcap -lpthread &&
	cc -shared -fPIC -o "$T_TMP/front.so" "$T_TMP/front.c"; then
	ok "4. an embedder linked with libmpictr.so runs a 2-rank Open MPI job" \
		timeout -k 5 60 "$T_TMP/embed_shared" -n 2 "$IMG/mpi.sif" /opt/mpictr/bin/hello
	ok "... and one linked with libmpictr.a" \
		timeout -k 5 60 "$T_TMP/embed_static" -n 2 "$IMG/mpi.sif" /opt/mpictr/bin/hello
	LD_PRELOAD=$T_TMP/front.so timeout -k 5 60 "$T_TMP/embed_shared" -n 2 "$IMG/mpi.sif" \
		/opt/mpictr/bin/hello >"$T_TMP/front.out" 2>&1
	st=$?
	cp "$T_TMP/front.out" "$T_OUT"
	t_report "... with another accept() preloaded in front of libc's, the job still runs guarded (0)" $((st != 0))
	check "... both ranks said hello, and no guard error" bash -c "[ \$(grep -c '^hello rank' '$T_TMP/front.out') = 2 ] && ! grep -q 'guard' '$T_TMP/front.out'"
else
	need "the embedders" "cc failed"
fi

done_testing
