#!/bin/bash
# soak.sh - soak and load: REL_SOAK (200) back-to-back `mpictr -n 4
# tiny.sif /bin/true`, REL_SOAK_MPI (50) `-n 4 mpi.sif hello`, 10
# concurrent jobs of one user in launch and in join mode (simulated step
# variables), fd and memory growth of a long-lived join keeper, and a
# valgrind leak check of the launcher for one job. Prints table rows.
. "$(dirname "$0")/lib.sh"
IMG=$(test_images all) || { echo "test images failed" >&2; exit 2; }
TINY=$IMG/tiny.sif
MPI=$IMG/mpi.sif
cd "$T_TMP" || exit 2
JOB=$((400000 + $$ % 90000))

series() { # NAME COUNT CMD...: back to back, counts failures
	local name=$1 n=$2 k fail=0 t0; shift 2
	t0=$(date +%s.%N)
	for k in $(seq "$n"); do
		timeout 60 "$@" >"$T_TMP/s.out" 2>&1 || { fail=$((fail + 1)); sed 's/^/#   /' "$T_TMP/s.out" | head -5 >&2; }
	done
	settle; local left; left=$(leftovers | wc -l)
	row "$name" "$n" "$((n - fail)) ok" "$left" "-" "failures: $fail" "$(awk -v a="$t0" -v b="$(date +%s.%N)" -v n="$n" 'BEGIN{printf "%.2f s/job", (b-a)/n}')"
}
series "soak: -n 4 tiny.sif /bin/true" "${REL_SOAK:-200}" "$MPICTR" -n 4 "$TINY" /bin/true
series "soak: -n 4 mpi.sif hello" "${REL_SOAK_MPI:-50}" "$MPICTR" -n 4 "$MPI" /opt/mpictr/bin/hello

concurrent_launch() { # 10 jobs at once, REL_ROUNDS rounds
	local r k fail=0 pids=()
	for r in $(seq "${REL_ROUNDS:-5}"); do
		pids=()
		for k in $(seq 10); do timeout 120 "$MPICTR" -n 4 "$TINY" sh -c 'cat /probe/marker >/dev/null' >/dev/null 2>&1 & pids+=($!); done
		for k in "${pids[@]}"; do wait "$k" || fail=$((fail + 1)); done
	done
	settle; row "load: 10 concurrent launch jobs" "$((10 * ${REL_ROUNDS:-5}))" "$((10 * ${REL_ROUNDS:-5} - fail)) ok" "$(leftovers | wc -l)" - "failures: $fail" "-n 4 each"
}
concurrent_launch

concurrent_join() { # 10 simulated jobs of 4 tasks each, at once
	local r k i fail=0 pids=()
	for r in $(seq "${REL_ROUNDS:-5}"); do
		pids=()
		for k in $(seq 10); do
			JOB=$((JOB + 1))
			for i in 0 1 2 3; do
				SLURM_JOB_ID=$JOB SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$i SLURM_LOCALID=$i \
					SLURM_STEP_TASKS_PER_NODE=4 timeout 120 "$MPICTR" "$TINY" sh -c 'cat /probe/marker >/dev/null' >/dev/null 2>&1 &
				pids+=($!)
			done
		done
		for k in "${pids[@]}"; do wait "$k" || fail=$((fail + 1)); done
	done
	settle; local socks; socks=$(ls "$JDIR" 2>/dev/null | grep -c "^4[0-9]*\.")
	row "load: 10 concurrent join jobs (4 tasks)" "$((40 * ${REL_ROUNDS:-5})) tasks" "$((40 * ${REL_ROUNDS:-5} - fail)) ok" "$(( $(leftovers | wc -l) + socks ))" - "failures: $fail" "simulated SLURM_* env"
}
concurrent_join

keeper_growth() { # one step of N+1 tasks: N arrive one after the other
	local n=${REL_KEEPER_TASKS:-200} k kp= fd0 rss0 fd1 rss1 fail=0
	JOB=$((JOB + 1))
	t() { SLURM_JOB_ID=$JOB SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$1 SLURM_LOCALID=$1 \
		SLURM_STEP_TASKS_PER_NODE=$((n + 1)) timeout 60 "$MPICTR" "$TINY" true >/dev/null 2>&1; }
	for k in $(seq 0 $((n - 1))); do
		t "$k" || fail=$((fail + 1))
		if [ -z "$kp" ]; then
			for p in $(marked_procs | awk '{print $1}'); do
				pp=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
				[ "$(comm_of "$p")" = mpictr ] && [ "$(comm_of "$pp")" != mpictr ] && kp=$p && break
			done
		fi
		if [ "$k" = 9 ]; then fd0=$(ls /proc/$kp/fd | wc -l); rss0=$(awk '/VmRSS/ {print $2}' /proc/$kp/status); fi
	done
	fd1=$(ls /proc/$kp/fd | wc -l); rss1=$(awk '/VmRSS/ {print $2}' /proc/$kp/status)
	t "$n" || fail=$((fail + 1))
	settle $JOB
	row "keeper growth: one step, $n tasks in sequence" "$((n + 1)) tasks" "$((n + 1 - fail)) ok" "$(leftovers $JOB | wc -l)" - \
		"keeper $kp fds $fd0→$fd1, VmRSS $rss0→$rss1 kB (after task 10→$n)" "failures: $fail"
}
keeper_growth

leakcheck() {
	command -v valgrind >/dev/null || { row "valgrind leak check of the launcher" 0 - - - "valgrind not installed" -; return; }
	valgrind --leak-check=full --errors-for-leak-kinds=definite --suppressions="$ROOT/tests/valgrind.supp" --error-exitcode=99 --child-silent-after-fork=yes \
		--log-file="$T_TMP/vg.log" "$MPICTR" -n 4 "$TINY" /bin/true >/dev/null 2>&1
	local rc=$?
	settle
	row "valgrind leak check of the launcher (-n 4)" 1 "exit $rc" "$(leftovers | wc -l)" - \
		"$(grep -E 'definitely lost|ERROR SUMMARY' "$T_TMP/vg.log" | sed 's/^==[0-9]*== *//' | tr '\n' ';')" "-"
	cp "$T_TMP/vg.log" "${REL_RESULTS%/*}/valgrind-launcher.log" 2>/dev/null
}
leakcheck
