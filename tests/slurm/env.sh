# env.sh - sourced by tests that use the Slurm of tests/slurm/cluster.sh.
#
#   SLURM_CONF          the single-node cluster (exported)
#   SLURM_CONF_MULTI    the multi-node cluster (node1..nodeN in namespaces)
#   slurm_up            true when the single-node cluster answers sinfo
#                       with an idle node
#   slurm_multi_up [N]  true when the multi-node cluster has N (default 2)
#                       usable nodes; run its clients with
#                       SLURM_CONF=$SLURM_CONF_MULTI
#
# Shared directories for multi-node jobs: every node has a private /tmp, so
# programs and working directories must live elsewhere (e.g. the build tree).
export SLURM_CONF=${MPICTR_SLURM_CONF:-/etc/slurm-mpictr/slurm.conf}
SLURM_CONF_MULTI=${MPICTR_SLURM_CONF_MULTI:-/etc/slurm-mpictr-nn/slurm.conf}

_slurm_usable_nodes() { # CONF
	[ -r "$1" ] && command -v sinfo >/dev/null || { echo 0; return; }
	SLURM_CONF=$1 timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u |
		awk '$2 ~ /^(idle|mixed|allocated|completing)$/ { n++ } END { print n + 0 }'
}
slurm_up() { [ "$(_slurm_usable_nodes "$SLURM_CONF")" -ge 1 ]; }
slurm_multi_up() { [ "$(_slurm_usable_nodes "$SLURM_CONF_MULTI")" -ge "${1:-2}" ]; }

# The SPANK plugin: cluster.sh's plugstack.conf loads
# $SPANK_DIR/mpictr-spank.so (optional), a directory the test user owns.
#   spank_ready         true when plugstack.conf names it and it is ours
#   spank_install DIR   copy DIR's mpictr-*.so there, each replaced
#                       atomically (other users' steps load it any time)
SPANK_DIR=${MPICTR_SPANK_DIR:-/var/lib/mpictr-spank}
spank_ready() {
	[ -d "$SPANK_DIR" ] && [ -w "$SPANK_DIR" ] &&
		grep -qs "$SPANK_DIR/mpictr-spank.so" "${SLURM_CONF%/*}/plugstack.conf"
}
spank_install() {
	local f
	for f in "$1"/mpictr-*.so; do
		cp "$f" "$SPANK_DIR/.new.$$" && mv -f "$SPANK_DIR/.new.$$" "$SPANK_DIR/${f##*/}" || return 1
	done
}
