# slurm-lib.sh - shared by the Slurm benchmarks (85-slurm, 88-spank;
# sourced after BENCH=NAME is set): the preamble (cluster up, user
# namespaces, test images, a work directory W under /var/tmp that every
# node sees) and the timing of one run of a variant.
#
# The sourcing script defines cmd NAME (run variant NAME once) and lists
# its variants in NAMES; variables cmd needs must be exported. Variants
# whose name ends in -ch are the peer's (Charliecloud): their failures are
# counted in $W/f.NAME and tried again, at most 5 times.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$ROOT/tests/slurm/env.sh"
ROUNDS=${BENCH_ROUNDS:-10}
export MPICTR=$ROOT/build/mpictr
OUT=$ROOT/build/bench/$BENCH.md
mkdir -p "$ROOT/build/bench"

slurm_up || { echo "$BENCH: the Slurm cluster is not up (sudo tests/slurm/cluster.sh start); skipped"; exit 0; }
if ! unshare -U true 2>/dev/null || [ ! -w /dev/fuse ]; then
	echo "$BENCH: needs user namespaces and a usable /dev/fuse; skipped"
	exit 0
fi
export IMG=${MPICTR_TEST_IMAGES:-$ROOT/build/images}
"$ROOT/tests/images/build.sh" "$IMG" all >/dev/null 2>&1 || { echo "$BENCH: tests/images/build.sh failed"; exit 1; }

W=$(mktemp -d /var/tmp/mpictr-bench-slurm.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
cd "$W" || exit 1

# one NAME: run it once, append its wall time (ms) to $W/t.NAME and the
# machine's busy CPU time during the run (ms, all CPUs, from /proc/stat)
# to $W/c.NAME: on a small node a step is bound by CPU work, and this says
# how much each variant adds. A failure of anything but the peer ends the
# benchmark.
HZ=$(getconf CLK_TCK)
busy_ms() { awk -v hz="$HZ" '/^cpu / { print int(($2 + $3 + $4 + $7 + $8) * 1000 / hz) }' /proc/stat; }
one() {
	local t0 t1 c0 c1 try
	for try in 1 2 3 4 5; do
		c0=$(busy_ms)
		t0=$(date +%s%N)
		if timeout -k 5 120 bash -c "$(declare -f cmd ch_true); cmd $1" >"$W/o" 2>&1; then
			t1=$(date +%s%N)
			c1=$(busy_ms)
			echo $(((t1 - t0) / 1000000)) >>"$W/t.$1"
			echo $((c1 - c0)) >>"$W/c.$1"
			return 0
		fi
		echo "$BENCH: $1 failed:"
		cat "$W/o"
		[ "${1%-ch}" != "$1" ] || return 1
		echo x >>"$W/f.$1"
		ch_stale
	done
	return 1
}
# A failed `ch-run --join` can leave its join state in /dev/shm (named by
# the step id only, so every later step 0 fails on it): remove it when no
# ch-run of ours runs.
ch_stale() {
	pgrep -u "$(id -u)" -x ch-run >/dev/null && return 0
	find /dev/shm -maxdepth 1 -user "$(id -u)" \( -name 'ch-run_shm-*' -o -name 'sem.ch-run_sem-*' \) -delete 2>/dev/null
	return 0
}
median() { sort -n "$W/t.$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
ratio() { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2fx", b / a }'; }
cpu_mean() { awk '{ s += $1 } END { printf "%.0f", s / NR }' "$W/c.$1"; }
# rounds: one warm-up round, then ROUNDS rounds of NAMES, round-robin
# (this class of VM drifts by up to 4x for minutes).
rounds() {
	local n r
	echo "$BENCH: warm-up, then $ROUNDS rounds of ${#NAMES[@]} variants (round-robin)"
	for n in "${NAMES[@]}"; do one "$n" || exit 1; done
	rm -f "$W"/t.* "$W"/f.* "$W"/c.*
	for r in $(seq "$ROUNDS"); do
		for n in "${NAMES[@]}"; do one "$n" || exit 1; done
	done
}
# with_ch: add the peer's variant true-ch to NAMES where ch-run is
# installed (BENCH_NO_CH=1: never): Charliecloud's ch-run --join on the same
# image (its squashfs; ch-run mounts it with the squashfuse binary, and
# ignores the image's environment scripts, which mpictr sources). Sets
# HAVE_CH.
HAVE_CH=0
with_ch() {
	if command -v ch-run >/dev/null && [ "${BENCH_NO_CH:-0}" = 0 ]; then
		HAVE_CH=1
		NAMES+=(true-ch)
	fi
}
ch_true() { USER=${USER:-$(id -un)} srun -O -n "$NT" ch-run --join "$IMG/tiny.sqfs" -- /bin/true; }
# peer_failures NAME: the note on the peer's failed runs, if any
peer_failures() {
	[ -s "$W/f.$1" ] || return 0
	echo
	echo "Charliecloud's \`--join\` failed $(wc -l <"$W/f.$1") of" \
		"$(($(wc -l <"$W/t.$1") + $(wc -l <"$W/f.$1"))) runs (tried again; the failed runs are not timed)."
}
# cpu_table: busy CPU and wall time of every variant
cpu_table() {
	local n
	echo
	echo "Busy CPU time of the machine during a run (all $(nproc) CPUs, /proc/stat, mean ms):"
	echo
	echo "| variant | busy CPU (ms) | wall (median ms) |"
	echo "|---|---:|---:|"
	for n in "${NAMES[@]}"; do
		echo "| $n | $(cpu_mean "$n") | $(median "$n") |"
	done
	echo
	echo "$ROUNDS rounds, variants interleaved round-robin after one warm-up round;" \
		"wall time of the whole srun as $(id -un), $(nproc) CPUs, $(date -u +%Y-%m-%d)."
}
