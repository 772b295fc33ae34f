#!/bin/bash
# run.sh - `make bench`: run every tests/bench/[0-9]*.sh (or those given).
# Each benchmark measures mpictr side by side with native or peer runs in the
# same run, interleaved (this class of machine drifts by up to 4x for
# minutes), and prints ratios; results also land in build/bench/.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export MPICTR_TEST_ROOT=$ROOT
cd "$ROOT" || exit 2
mkdir -p build/bench
rc=0
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(tests/bench/[0-9]*.sh)
for b in "${scripts[@]}"; do
	[ -e "$b" ] || continue
	echo "== $b"
	bash "$b" || { echo "benchmark $b failed"; rc=1; }
done
exit $rc
