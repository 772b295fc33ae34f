# lib.sh - shared preamble of the benchmarks (sourced): ROOT (the tree),
# HERE (tests/bench), MPICTR (the built CLI), IMG (the test images,
# MPICTR_BENCH_IMAGES or build/images), QUICK (MPICTR_BENCH_QUICK), BENCH
# (the script's name, for messages) and its results OUT and JSON in
# build/bench/; a private work directory W removed on exit; as root, the
# runs go through mpictr-test (AS, RUNUSER), or Open MPI is allowed to run
# as root when that user does not exist; LOAD0 and START for the report's
# header.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/bench
MPICTR=$ROOT/build/mpictr
IMG=${MPICTR_BENCH_IMAGES:-$ROOT/build/images}
QUICK=${MPICTR_BENCH_QUICK:-0}
BENCH=$(basename "$0" .sh)
OUT=$ROOT/build/bench/$BENCH.md
JSON=$ROOT/build/bench/$BENCH.json
mkdir -p "$ROOT/build/bench"
W=$(mktemp -d "${TMPDIR:-/tmp}/mpictr-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
AS=()
RUNUSER=$(id -un)
if [ "$(id -u)" = 0 ]; then
	if id mpictr-test >/dev/null 2>&1; then
		AS=(runuser -u mpictr-test --)
		RUNUSER=mpictr-test
		chown mpictr-test "$W"
	else
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
fi
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date -u '+%Y-%m-%d %H:%M UTC')
# bench_needs TOOL...: each on PATH, else the benchmark is skipped (exit 0).
bench_needs() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "$BENCH: needs $t; skipped"; exit 0; }
	done
}
# bench_built: the built mpictr ($MPICTR), else exit 1.
bench_built() {
	[ -x "$MPICTR" ] || { echo "$BENCH: build $MPICTR first (make)"; exit 1; }
}
# bench_image KIND: the test image KIND (tests/images/build.sh) in $IMG.
bench_image() {
	"$ROOT/tests/images/build.sh" "$IMG" "$1" >/dev/null ||
		{ echo "$BENCH: building the $1 image failed"; exit 1; }
}
# bench_mpi: what an MPI benchmark needs before it runs: mpirun and python3
# (else it is skipped: exit 0), the built mpictr, the mpi test image; sets
# BIN, the image's MPI programs.
bench_mpi() {
	bench_needs mpirun python3
	bench_built
	bench_image mpi
	BIN=$IMG/mpi/opt/mpictr/bin
}
# bench_registry: tests/integration/registry.sh's loopback registries,
# under $W/reg, all stopped on exit (W kept too when KEEP is set).
bench_registry() {
	T_TMP=$W
	RW=$W/reg
	. "$ROOT/tests/integration/registry.sh"
	trap 'reg_cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
}
# bench_doc DOC [LINE...]: unless BENCH_DOCS=0, write DOC: the LINEs and a
# blank line (when there are any), then the report $OUT.
bench_doc() {
	local doc=$1 l keep=""
	shift
	[ "${BENCH_DOCS:-1}" = 1 ] || return 0
	# what follows the marker line is written by hand: kept
	[ -f "$doc" ] && keep=$(sed -n '/^<!-- kept by make bench -->$/,$p' "$doc")
	{
		for l; do echo "$l"; done
		[ $# -eq 0 ] || echo
		cat "$OUT"
		[ -z "$keep" ] || printf '\n%s\n' "$keep"
	} >"$doc"
}
