#!/bin/bash
# faults.sh - fault injection: each case REL_TRIALS times (default 50; the
# non-kill cases a fifth of that), then a bounded wait (REL_BOUND s) and a
# leftover check. Prints one table row per case. Run as the test user
# (the join cases simulate the step variables srun sets).
. "$(dirname "$0")/lib.sh"
IMG=$(test_images all) || { echo "test images failed" >&2; exit 2; }
TINY=$IMG/tiny.sif
MPI=$IMG/mpi.sif
cd "$T_TMP" || exit 2
# The ranks read the image all along, so a dead mount shows.
R='for i in 1 2 3 4; do cat /probe/marker >/dev/null || exit 5; sleep 0.4; done'
CASES=${REL_CASES:-"kill-launcher kill-holder kill-rank kill-fuse abort no-finalize image-removed image-truncated kill-keeper"}

# find_target CASE LAUNCHER: the pid to kill, retried for 3 s
find_target() {
	local c=$1 l=$2 i p
	for i in $(seq 60); do
		case $c in
		kill-launcher) echo "$l"; return 0 ;;
		kill-holder)
			for p in $(descendants "$l"); do
				[ "$(comm_of "$p")" = mpictr-sqfs ] && { awk '{print $4}' /proc/$p/stat; return 0; }
			done ;;
		kill-rank)
			for p in $(children "$l"); do
				[ "$(comm_of "$p")" = sh ] && { echo "$p"; return 0; }
			done ;;
		kill-fuse)
			for p in $(descendants "$l"); do
				[ "$(comm_of "$p")" = mpictr-sqfs ] && { echo "$p"; return 0; }
			done ;;
		kill-keeper)
			for p in $(marked_procs | awk '{print $1}'); do
				[ "$(comm_of "$p")" = mpictr ] || continue
				local pp; pp=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
				[ -n "$pp" ] && [ "$pp" != "$$" ] && [ "$(comm_of "$pp")" != mpictr ] && { echo "$p"; return 0; }
			done ;;
		esac
		kill -0 "$l" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

JOB=$((500000 + $$ % 90000))
# one CASE: run one trial; sets RC, LEFT, HIT
one() {
	local c=$1 l t pids=() i
	HIT=1
	JOB=$((JOB + 1))
	case $c in
	kill-keeper)
		for i in 0 1 2 3; do
			SLURM_JOB_ID=$JOB SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$i SLURM_LOCALID=$i \
				SLURM_STEP_TASKS_PER_NODE=4 "$MPICTR" "$TINY" sh -c "$R" >/dev/null 2>&1 &
			pids+=($!)
		done
		l=${pids[0]} ;;
	abort) "$MPICTR" -n 4 "$MPI" /opt/mpictr/bin/abort >/dev/null 2>&1 & l=$! ;;
	no-finalize)
		"$MPICTR" -n 4 "$MPI" sh -c '[ "${PMIX_RANK:-$PMI_RANK}" = 1 ] && exit 3; exec /opt/mpictr/bin/hello' >/dev/null 2>&1 &
		l=$! ;;
	image-*)
		cp "$TINY" "$T_TMP/copy.sif"
		"$MPICTR" -n 2 "$T_TMP/copy.sif" sh -c "$R" >/dev/null 2>&1 & l=$! ;;
	*) "$MPICTR" -n 4 "$TINY" sh -c "$R" >/dev/null 2>&1 & l=$! ;;
	esac
	case $c in
	kill-*)
		rand_sleep
		t=$(find_target "$c" "$l") && kill -KILL "$t" 2>/dev/null || HIT=0 ;;
	image-removed) rand_sleep; rm -f "$T_TMP/copy.sif" ;;
	image-truncated) rand_sleep; truncate -s 40000 "$T_TMP/copy.sif" ;;
	esac
	if [ ${#pids[@]} -gt 0 ]; then
		RC=0
		for i in "${pids[@]}"; do wait_bounded "$i" "$BOUND"; local r=$?; [ $r -gt $RC ] && RC=$r; done
	else
		wait_bounded "$l" "$BOUND"; RC=$?
	fi
	if settle $JOB; then LEFT=; else LEFT=$(leftovers $JOB); kill_all_marked; rm -f "$JDIR/$JOB".* 2>/dev/null; fi
	rm -f "$T_TMP/copy.sif"
}
# meaningful CASE RC HIT: the status tells what happened
meaningful() {
	local c=$1 rc=$2 hit=$3
	[ "$rc" = 124 ] && return 1
	[ "$hit" = 0 ] && return 0 # nothing was killed: any clean end
	case $c in
	kill-launcher | kill-rank) [ "$rc" = 137 ] ;;
	kill-holder | abort) [ "$rc" != 0 ] ;;
	# another FUSE worker (or the page cache) may serve on: 0 is fine,
	# so is an I/O error of the ranks
	kill-fuse | kill-keeper) true ;;
	no-finalize) [ "$rc" = 3 ] ;;
	image-removed) [ "$rc" = 0 ] ;; # the image is open: unlinking changes nothing
	image-truncated) true ;;        # 0 when cached, else an I/O error: any clean end
	esac
}

for c in $CASES; do
	n=$TRIALS
	case $c in kill-*) ;; *) n=$(( (TRIALS + 4) / 5 )) ;; esac
	ended=0 left=0 mean=0 nohit=0 t0=$(date +%s)
	declare -A st=()
	for k in $(seq "$n"); do
		one "$c"
		[ "$RC" != 124 ] && ended=$((ended + 1))
		[ -n "$LEFT" ] && { left=$((left + 1)); echo "# $c trial $k: left behind:" >&2; echo "$LEFT" | sed 's/^/#   /' >&2; }
		meaningful "$c" "$RC" "$HIT" && mean=$((mean + 1))
		[ "$HIT" = 0 ] && nohit=$((nohit + 1))
		st[$RC]=$(( ${st[$RC]:-0} + 1 ))
	done
	s=$(for k in "${!st[@]}"; do echo "$k×${st[$k]}"; done | sort -n | tr '\n' ' ')
	row "$c" "$n" "$ended" "$left" "$mean" "$s" "no target: $nohit; $(( $(date +%s) - t0 )) s"
	unset st
done
