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
