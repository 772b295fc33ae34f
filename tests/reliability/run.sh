#!/bin/bash
# run.sh - `make reliability`: fault injection (faults.sh), soak and load
# (soak.sh), and, as root with the private Slurm cluster up, scancel of a
# join-mode step (slurm.sh). Long (tens of minutes): not part of
# `make check`. As root, the unprivileged parts run as mpictr-test.
# Knobs: REL_TRIALS (50), REL_BOUND (20 s), REL_SOAK (200), REL_SOAK_MPI
# (50), REL_ROUNDS (5), REL_KEEPER_TASKS (200), REL_CASES.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export MPICTR_TEST_ROOT=$ROOT
H=$ROOT/tests/reliability
OUT=${REL_OUT:-$ROOT/build/reliability}
mkdir -p "$OUT" && chmod 0777 "$OUT"
export REL_RESULTS=$OUT/results.md
: >"$REL_RESULTS"; chmod 0666 "$REL_RESULTS"
as_user() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u mpictr-test -- env $(env | grep -E '^(REL_|MPICTR_TEST_ROOT=)' | tr '\n' ' ') bash "$@"
	else
		bash "$@"
	fi
}
echo "# mpictr reliability run, $(date -u +%FT%TZ), $(uname -n), $(nproc) cpus, kernel $(uname -r)"
echo "| case | trials | ended within ${REL_BOUND:-20} s | leftovers | status meaningful | statuses | notes |"
echo "|---|---|---|---|---|---|---|"
as_user "$H/faults.sh"
as_user "$H/soak.sh"
if [ "$(id -u)" = 0 ] && [ -x "$H/slurm.sh" ]; then bash "$H/slurm.sh"; fi
echo "# results in $REL_RESULTS"
