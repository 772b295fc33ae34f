#!/bin/bash
# 88-spank.sh - `make bench`: srun start-up with the SPANK plugin
# (mpictr-spank.so, installed by root where cluster.sh's plugstack.conf
# names it: tests/slurm/cluster.sh install-spank)
# against native srun, `srun mpictr` (join mode) and Charliecloud's
# `ch-run --join`, on the single-node cluster of tests/slurm/cluster.sh:
#   srun -O -n 16 /bin/true
#   srun -O -n 16 --container-image=tiny.sif /bin/true       (the plugin)
#   srun -O -n 16 mpictr tiny.sif /bin/true                  (join mode)
#   srun -O -n 16 ch-run --join tiny.sqfs -- /bin/true       (the peer)
#   srun -O -n 16 --container-image=tiny-noenv.sqfs /bin/true
# The last image is tiny without its environment scripts: the command is
# exec'd directly, with no shell in between. Variants run round-robin
# (tests/bench/slurm-lib.sh); the table goes to build/bench/88-spank.md
# (docs/bench-spank.md keeps a copy of a run).
#
# Knobs: BENCH_ROUNDS (10), BENCH_TASKS (16).
set -u
BENCH=88-spank
. "$(dirname "$0")/slurm-lib.sh"
export NT=${BENCH_TASKS:-16}
spank_ready || { echo "$BENCH: plugstack.conf does not load $SPANK_DIR/mpictr-spank.so (sudo tests/slurm/cluster.sh start); skipped"; exit 0; }
[ -f "$ROOT/build/plugins/mpictr-spank.so" ] || { echo "$BENCH: mpictr-spank.so not built (libslurm-dev); skipped"; exit 0; }
spank_installed "$ROOT/build/plugins" || { echo "$BENCH: $SPANK_DIR holds another build of the plugin: install this one as root ($(spank_install_cmd "$ROOT/build/plugins")); skipped"; exit 0; }

NAMES=(true-native true-spank true-join)
if command -v mksquashfs >/dev/null; then
	cp -a "$IMG/tiny" "$W/tiny-noenv" && rm -f "$W"/tiny-noenv/.singularity.d/env/*.sh &&
		mksquashfs "$W/tiny-noenv" "$W/tiny-noenv.sqfs" -quiet -noappend -all-root >/dev/null || exit 1
	NAMES+=(true-spank-noenv)
fi
export W
with_ch
cmd() {
	case $1 in
	true-native) srun -O -n "$NT" /bin/true ;;
	true-spank) srun -O -n "$NT" --container-image="$IMG/tiny.sif" /bin/true ;;
	true-spank-noenv) srun -O -n "$NT" --container-image="$W/tiny-noenv.sqfs" /bin/true ;;
	true-join) srun -O -n "$NT" "$MPICTR" "$IMG/tiny.sif" /bin/true ;;
	true-ch) ch_true ;;
	esac
}
rounds

{
	echo "| srun -O -n $NT ... /bin/true | median ms | vs native | busy CPU (mean ms) |"
	echo "|---|---:|---:|---:|"
	row() { echo "| $2 | $(median "$1") | $(ratio true-native "$1") | $(cpu_mean "$1") |"; }
	row true-native "native"
	row true-spank "--container-image=tiny.sif (the plugin)"
	[ -f "$W/t.true-spank-noenv" ] && row true-spank-noenv "--container-image=tiny-noenv.sqfs (the plugin, no env scripts)"
	row true-join "mpictr tiny.sif (join mode)"
	[ "$HAVE_CH" = 1 ] && row true-ch "ch-run --join tiny.sqfs (Charliecloud)"
	peer_failures true-ch
	cpu_table
} >"$OUT"
cat "$OUT"
