#!/bin/bash
# slurm.sh - scancel of a join-mode step at a random moment of start-up or
# run (REL_TRIALS times), then a bounded wait and the leftover check of
# lib.sh (processes, mounts, job directories, this job's rendezvous socket
# and lock). Needs the private Slurm (tests/slurm/cluster.sh start). Run by
# run.sh as root; the trials run as mpictr-test.
if [ "$(id -u)" = 0 ]; then
	exec runuser -u mpictr-test -- env $(env | grep -E '^(REL_|MPICTR_TEST_ROOT=)' | tr '\n' ' ') bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
if ! slurm_up; then
	row "scancel of a join-mode step" 0 - - - - "Slurm is not running: not measured"
	exit 0
fi
TINY=$(test_images tiny)/tiny.sif
name=mpictr-rel-$$
n=$TRIALS ended=0 left=0 meaningful=0 statuses=""
for i in $(seq "$n"); do
	srun -O -n 4 -J "$name" "$MPICTR" "$TINY" sleep 30 >/dev/null 2>&1 &
	pid=$!
	jid=
	for _ in $(seq 100); do
		jid=$(squeue -h -u "$UID_" -n "$name" -o %i 2>/dev/null | head -1)
		[ -n "$jid" ] && break
		sleep 0.05
	done
	rand_sleep
	[ -n "$jid" ] && scancel "$jid" 2>/dev/null
	wait_bounded "$pid" "$BOUND"
	rc=$?
	[ "$rc" != 124 ] && ended=$((ended + 1))
	# srun reports a cancelled step as a failure (non-zero), never 0
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && meaningful=$((meaningful + 1))
	statuses="$statuses $rc"
	if ! settle "$jid"; then
		left=$((left + 1))
		leftovers "$jid" | head -5 | sed 's/^/# /' >&2
		kill_all_marked
		rm -f "$JDIR/$jid".* 2>/dev/null
	fi
done
summary=$(echo "$statuses" | tr ' ' '\n' | grep . | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')
row "scancel of a join-mode step (srun -n 4)" "$n" "$ended" "$left" "$meaningful" "$summary" "random moment 0–1.5 s"
