#!/bin/bash
# run-integration.sh - run every tests/integration/[0-9]*.sh (or those given
# as arguments), print their TAP output, and close with one summary line.
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
export MPICTR_TEST_ROOT=$ROOT
cd "$ROOT" || exit 2
pass=0 fail=0 skipped=0 broken=0
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(tests/integration/[0-9]*.sh)
for t in "${scripts[@]}"; do
	echo "# $t"
	out=$(mktemp)
	timeout -k 10 "${MPICTR_TEST_TIMEOUT:-900}" bash "$t" >"$out" 2>&1
	rc=$?
	cat "$out"
	p=$(grep -cE '^ok [0-9]+' "$out")
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$out")
	f=$(grep -cE '^not ok [0-9]+' "$out")
	pass=$((pass + p - s)); skipped=$((skipped + s)); fail=$((fail + f))
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $t exited with status $rc"
		broken=$((broken + 1)); fail=$((fail + 1))
	fi
	rm -f "$out"
done
echo "integration: $pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
