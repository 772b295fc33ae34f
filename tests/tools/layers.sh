#!/bin/sh
# layers.sh - the includes of runtime/, sif/ and pmi/ point down the layers
# only (docs/architecture.md, "Layers"):
#
#   main.c run.c preflight.c -> modes -> container -> plan -> host -> sched
#   -> config -> common;          sif/, pmi/ -> common (pmi/ also sif/)
#
# One grep per layer for an include of a layer above it (runtime/mpictr.h,
# the public API, is for everyone). Prints the offending lines and exits 1;
# prints "0 upward includes" otherwise. Usage: tests/tools/layers.sh [ROOT]
cd "${1:-.}" || exit 2
found=0

# above LAYER: the folders (and top-level headers) it may not include
above() {
	case $1 in
	runtime/common) echo "config sched host plan container modes" ;;
	runtime/config) echo "sched host plan container modes" ;;
	runtime/sched) echo "host plan container modes" ;;
	runtime/host) echo "plan container modes" ;;
	runtime/plan) echo "container modes" ;;
	runtime/container) echo "modes" ;;
	sif) echo "config sched host plan container modes pmi" ;;
	pmi) echo "config sched host plan container modes" ;;
	esac
}

for layer in runtime/common runtime/config runtime/sched runtime/host \
	runtime/plan runtime/container sif pmi; do
	pat=$(above "$layer" | sed 's/ /\\|/g')
	# ... nor the top level's own headers (run, preflight)
	hits=$(grep -n "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\(\($pat\)/\|preflight\.h\|run\.h\)" \
		"$layer"/*.c "$layer"/*.h 2>/dev/null)
	if [ -n "$hits" ]; then
		echo "$hits" | sed "s|^|upward include ($layer may use only what is below it): |"
		found=$((found + $(echo "$hits" | wc -l)))
	fi
done
echo "$found upward includes"
[ "$found" -eq 0 ]
