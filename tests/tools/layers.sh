#!/bin/sh
# layers.sh - the includes of runtime/, sif/ and pmi/ point down the layers
# only (docs/architecture.md, "Layers"):
#
#   main.c run.c preflight.c -> modes -> container -> plan -> host -> sched
#   -> config -> common;          sif/, pmi/ -> common (pmi/ also sif/)
#   main.c, cli/ (the command line) -> the public API (mpictr.h) only
#
# One grep per layer for an include of a layer above it (runtime/mpictr.h,
# the public API, is for everyone). Prints the offending lines and exits 1;
# prints "0 upward includes" otherwise. Usage: tests/tools/layers.sh [ROOT]
cd "${1:-.}" || exit 2
found=0

# above LAYER: the folders (and top-level headers) it may not include
above() {
	case $1 in
	runtime/common) echo "config sched host plan container modes cli" ;;
	runtime/config) echo "sched host plan container modes cli" ;;
	runtime/sched) echo "host plan container modes cli" ;;
	runtime/host) echo "plan container modes cli" ;;
	runtime/plan) echo "container modes cli" ;;
	runtime/container) echo "modes cli" ;;
	runtime/modes) echo "cli" ;;
	runtime/cli) echo "common config sched host plan container modes pull sif pmi" ;;
	sif) echo "config sched host plan container modes pmi cli" ;;
	pmi) echo "config sched host plan container modes cli" ;;
	esac
}

for layer in runtime/common runtime/config runtime/sched runtime/host \
	runtime/plan runtime/container runtime/modes runtime/cli sif pmi; do
	pat=$(above "$layer" | sed 's/ /\\|/g')
	# ... nor the top level's own headers (run, preflight)
	hits=$(grep -n "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\(\($pat\)/\|preflight\.h\|run\.h\)" \
		"$layer"/*.c "$layer"/*.h 2>/dev/null)
	if [ -n "$hits" ]; then
		echo "$hits" | sed "s|^|upward include ($layer may use only what is below it): |"
		found=$((found + $(echo "$hits" | wc -l)))
	fi
done
# main.c, like cli/, includes the public API and cli/ only.
hits=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' runtime/main.c |
	grep -v '"\(cli/[a-z_]*\.h\|mpictr\.h\)"')
if [ -n "$hits" ]; then
	echo "$hits" | sed "s|^|upward include (runtime/main.c may use only cli/ and mpictr.h): |"
	found=$((found + $(echo "$hits" | wc -l)))
fi
echo "$found upward includes"
[ "$found" -eq 0 ]
