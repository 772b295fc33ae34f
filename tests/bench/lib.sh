# lib.sh - shared preamble of the MPI benchmarks (sourced): a private work
# directory W removed on exit; as root, the runs go through mpictr-test
# (AS, RUNUSER), or Open MPI is allowed to run as root when that user does
# not exist; LOAD0 and START for the report's header.
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
# bench_mpi NAME: what an MPI benchmark needs before it runs: mpirun and
# python3 (else it is skipped: exit 0), the built mpictr ($MPICTR), the mpi
# test image in $IMG; sets BIN, the image's MPI programs.
bench_mpi() {
	local t
	for t in mpirun python3; do
		command -v $t >/dev/null || { echo "$1: needs $t; skipped"; exit 0; }
	done
	[ -x "$MPICTR" ] || { echo "$1: build $MPICTR first (make)"; exit 1; }
	"$ROOT/tests/images/build.sh" "$IMG" mpi >/dev/null ||
		{ echo "$1: building the mpi image failed"; exit 1; }
	BIN=$IMG/mpi/opt/mpictr/bin
}
