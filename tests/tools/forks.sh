#!/bin/sh
# forks.sh - every fork of the library and its plugins goes through
# runtime/common/proc.c (docs/architecture.md, "Processes of each mode"):
# a call of fork, vfork, clone, clone3 or posix_spawn in any other .c file
# of runtime/, sif/ or pmi/ fails, except the one the docs name, the SPANK
# plugin's for --container-save (runtime/spank/mpictr_spank.c).
#
# Prints each call found and exits 1; prints "0 forks outside proc.c"
# otherwise. Usage: tests/tools/forks.sh [ROOT]
cd "${1:-.}" || exit 2

hits=$(grep -nE '(^|[^[:alnum:]_.>])(fork|vfork|clone3?|posix_spawnp?)[[:space:]]*\(' \
	runtime/*.c runtime/*/*.c sif/*.c pmi/*.c 2>/dev/null |
	grep -v '^runtime/common/proc\.c:' |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' |
	grep -v '^runtime/spank/mpictr_spank\.c:.*pid = fork();')
found=0
if [ -n "$hits" ]; then
	echo "$hits" | sed 's/^/a fork outside runtime\/common\/proc.c: /'
	found=$(echo "$hits" | wc -l)
fi
echo "$found forks outside proc.c"
[ "$found" -eq 0 ]
