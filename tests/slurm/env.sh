# env.sh - sourced by tests that use the Slurm of tests/slurm/cluster.sh.
#
#   SLURM_CONF          the single-node cluster (exported)
#   SLURM_CONF_MULTI    the multi-node cluster (node1..nodeN in namespaces)
#   slurm_up            true when the single-node cluster answers sinfo
#                       with an idle node
#   slurm_multi_up [N]  true when the multi-node cluster has N (default 2)
#                       usable nodes; run its clients with
#                       SLURM_CONF=$SLURM_CONF_MULTI
#   SLURM_CONF_SCALE    the scale cluster (cluster.sh start --nodes 8
#                       --name scale: scale1..scale8 in namespaces)
#   slurm_scale_up [N]  true when it has N (default 8) usable nodes
#
# Shared directories for multi-node jobs: every node has a private /tmp, so
# programs and working directories must live elsewhere (e.g. the build tree).
export SLURM_CONF=${MPICTR_SLURM_CONF:-/etc/slurm-mpictr/slurm.conf}
SLURM_CONF_MULTI=${MPICTR_SLURM_CONF_MULTI:-/etc/slurm-mpictr-nn/slurm.conf}
SLURM_CONF_SCALE=${MPICTR_SLURM_CONF_SCALE:-/etc/slurm-mpictr-scale/slurm.conf}

_slurm_usable_nodes() { # CONF
	[ -r "$1" ] && command -v sinfo >/dev/null || { echo 0; return; }
	SLURM_CONF=$1 timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u |
		awk '$2 ~ /^(idle|mixed|allocated|completing)$/ { n++ } END { print n + 0 }'
}
slurm_up() { [ "$(_slurm_usable_nodes "$SLURM_CONF")" -ge 1 ]; }
# A tree under /tmp is not on the namespaced nodes (each mounts its own
# /tmp): their tasks cannot exec its build/mpictr. Said once per test file;
# the multi-node checks are then left out (a failure under CI=true, whose
# tree is a copy under /var/tmp: .ci/run).
_slurm_tree_on_nodes() {
	case ${ROOT:-} in
	/tmp/*)
		[ -n "${_SLURM_TREE_SAID:-}" ] ||
			echo "# the tree $ROOT is under /tmp, which every namespaced node replaces with its own: the multi-node checks need a tree elsewhere (e.g. /var/tmp, as .ci/run uses)"
		_SLURM_TREE_SAID=1
		return 1 ;;
	esac
}
slurm_multi_up() { _slurm_tree_on_nodes && [ "$(_slurm_usable_nodes "$SLURM_CONF_MULTI")" -ge "${1:-2}" ]; }
slurm_scale_up() { _slurm_tree_on_nodes && [ "$(_slurm_usable_nodes "$SLURM_CONF_SCALE")" -ge "${1:-8}" ]; }

# The SPANK plugin: cluster.sh's plugstack.conf loads
# $SPANK_DIR/mpictr-spank.so (optional), a root-owned directory that root
# fills with `tests/slurm/cluster.sh install-spank DIR`.
#   spank_ready             true when plugstack.conf names it
#   spank_installed DIR     true when SPANK_DIR holds exactly DIR's
#                           mpictr-spank.so, -squash.so and -pmix.so (cmp)
#   spank_install_cmd DIR   the command that installs them (for messages)
SPANK_DIR=${MPICTR_SPANK_DIR:-/var/lib/mpictr-spank}
spank_ready() {
	grep -qs "^[a-z]* *$SPANK_DIR/mpictr-spank.so" "${SLURM_CONF%/*}/plugstack.conf"
}
spank_installed() {
	local n
	for n in mpictr-spank.so mpictr-squash.so mpictr-pmix.so; do
		cmp -s "$1/$n" "$SPANK_DIR/$n" || return 1
	done
	# the verify and seccomp plugins, where the build has them
	for n in mpictr-verify.so mpictr-verify-pgp.so mpictr-seccomp.so; do
		[ ! -f "$1/$n" ] || cmp -s "$1/$n" "$SPANK_DIR/$n" || return 1
	done
}
# spank_in_dirs DIRS PATH: is PATH's real path below one of the
# colon-separated DIRS (the plugin's image_dirs)?
spank_in_dirs() {
	local real d
	real=$(realpath "$2") || return 1
	for d in ${1//:/ }; do
		d=$(realpath -q "$d") || continue
		[ "$d" = / ] || [ "$real" = "$d" ] || [ "${real#"$d"/}" != "$real" ] && return 0
	done
	return 1
}
spank_install_cmd() {
	echo "sudo $(cd "${BASH_SOURCE[0]%/*}" && pwd)/cluster.sh install-spank $(cd "$1" && pwd)"
}
