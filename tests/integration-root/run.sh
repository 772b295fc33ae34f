#!/bin/bash
# run.sh - `make check-root`: the integration tests that need root, i.e. two
# unprivileged users (mpictr-test and mpictr-test2) acting against each
# other (MPICTR_TEST_VICTIM and MPICTR_TEST_ATTACKER name two other users,
# for two runs side by side). Runs tests/integration-root/[0-9]*.sh (or those given) through
# tests/run-integration.sh. .ci/run calls it after `make check`.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export MPICTR_TEST_ROOT=$ROOT
cd "$ROOT" || exit 2
if [ "$(id -u)" != 0 ]; then
	echo "check-root: run as root (the tests switch between two test users)" >&2
	exit 2
fi
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(tests/integration-root/[0-9]*.sh)
exec tests/run-integration.sh "${scripts[@]}"
