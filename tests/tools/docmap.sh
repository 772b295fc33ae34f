#!/bin/sh
# docmap.sh - every source file of runtime/, sif/ and pmi/ (every .c, and
# every header without a .c) is named, by its path in backquotes, in the
# module map of docs/architecture.md (the table under "## Module map").
# Prints the missing ones and exits 1; prints "0 files missing from the
# module map" otherwise. Usage: tests/tools/docmap.sh [ROOT]
cd "${1:-.}" || exit 2
map=$(sed -n '/^## Module map/,/^## /p' docs/architecture.md | grep '^|')
missing=0
for f in runtime/*.c runtime/*/*.c sif/*.c pmi/*.c runtime/*.h runtime/*/*.h sif/*.h pmi/*.h; do
	case $f in *.h) [ -f "${f%.h}.c" ] && continue ;; esac
	if ! printf '%s\n' "$map" | grep -qF "\`$f\`"; then
		echo "not in the module map of docs/architecture.md: $f"
		missing=$((missing + 1))
	fi
done
echo "$missing files missing from the module map"
[ "$missing" -eq 0 ]
