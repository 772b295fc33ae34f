#!/bin/bash
# 65-shm-cgroup.sh - the default size of a job's private /dev/shm is half of
# the memory the job may use: under a memory cgroup limit (what Slurm's
# ConstrainRAMSpace sets), half of that limit, not of the node's memory;
# a site percentage is of the same. Root only creates the cgroup (1 GiB)
# and puts a shell in it; every mpictr runs as mpictr-test.
. "$(dirname "$0")/../integration/lib.sh"

U=${MPICTR_TEST_VICTIM:-mpictr-test}
if [ "$(id -u)" != 0 ]; then
	need "run as root" "tests/integration-root/ needs root (make check-root)"
	done_testing
	exit
fi
if ! id "$U" >/dev/null 2>&1 || ! runuser -u "$U" -- unshare -U true 2>/dev/null; then
	need "user $U with user namespaces" "the test user (.ci/run creates it)"
	done_testing
	exit
fi
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "shm_size in the site file" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	done_testing
	exit
fi
IMG=$(test_images tiny) || { need "tiny image" "tests/images/build.sh failed"; done_testing; exit; }

# A memory cgroup with a 1 GiB limit: v2 where the memory controller is
# enabled below the root, else v1.
CG= LIMIT=
if grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	CG=/sys/fs/cgroup/mpictr-shm-$$ LIMIT=memory.max
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/mpictr-shm-$$ LIMIT=memory.limit_in_bytes
fi
if [ -z "$CG" ] || ! mkdir "$CG" 2>/dev/null; then
	skip "/dev/shm under a memory cgroup limit" "no writable memory cgroup (v2 memory controller or v1 hierarchy)"
	done_testing
	exit
fi
if ! echo $((1 << 30)) >"$CG/$LIMIT"; then
	rmdir "$CG"
	skip "/dev/shm under a memory cgroup limit" "cannot set $CG/$LIMIT"
	done_testing
	exit
fi
trap 't_cleanup; rmdir "$CG" 2>/dev/null' EXIT
chmod 0755 "$T_TMP"
echo "shm_size = 25%" >"$T_TMP/site.conf"
chmod 0644 "$T_TMP/site.conf"

# in_cg CMD...: run CMD as $U inside the cgroup.
in_cg() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" \
		runuser -u "$U" -- env HOME=/tmp T_MARKER_MPICTR="$T_MARKER_MPICTR" "$@"
}
shm_k() { # [SITE-CONF]: the /dev/shm size of the plan, then in the 2 ranks
	local site=${1:-}
	in_cg env MPICTR_TEST_SITE_CONF="$site" "$MPICTR" --dry-run "$IMG/tiny" true |
		sed -n 's/.*"target": "\/dev\/shm".*,size=\([0-9]*\)k".*/\1/p'
	in_cg env MPICTR_TEST_SITE_CONF="$site" "$MPICTR" -n 2 "$IMG/tiny" sh -c 'df -k /dev/shm | tail -1' |
		awk '{ print $2 }' | sort -u
}
ok "under a 1 GiB memory cgroup: /dev/shm is 512 MiB (--dry-run and df in mpictr -n 2)" \
	bash -c "$(declare -f in_cg shm_k); CG='$CG' U='$U' MPICTR='$MPICTR' IMG='$IMG' T_MARKER_MPICTR='$T_MARKER_MPICTR'; out=\$(shm_k); echo \"\$out\"; [ \"\$(echo \$out)\" = '524288 524288' ]"
ok "under a 1 GiB memory cgroup, site shm_size = 25%: 256 MiB" \
	bash -c "$(declare -f in_cg shm_k); CG='$CG' U='$U' MPICTR='$MPICTR' IMG='$IMG' T_MARKER_MPICTR='$T_MARKER_MPICTR'; out=\$(shm_k '$T_TMP/site.conf'); echo \"\$out\"; [ \"\$(echo \$out)\" = '262144 262144' ]"
done_testing
