#!/bin/bash
# 93-pull-slurm.sh - a registry image under the real srun (docs/pull.md):
# `srun -n 4 mpictr docker://...` pulls it into the cache once on the node
# (one task pulls, the others wait on its lock; each blob GET once in the
# registry's log), the 4 tasks run it in one container, a second step
# downloads nothing; Pyxis's --container-image=REGISTRY#IMAGE through the
# SPANK plugin when the installed plugin is this build's.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"
T="timeout -k 5 120"

require_slurm
require_userns_fuse "user namespaces and /dev/fuse" "join mode needs unprivileged user namespaces and a usable /dev/fuse"
for tool in docker-registry skopeo umoci; do
	command -v "$tool" >/dev/null || { need "registry tools" "$tool is not installed"; done_testing; exit; }
done

# Under /var/tmp: the nodes of the multi-node cluster have a private /tmp.
W=$(mktemp -d /var/tmp/mpictr-pull-slurm.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
RW=$W/reg
. "$ROOT/tests/integration/registry.sh"
trap 'reg_cleanup; t_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp MPICTR_CACHEDIR=$W/cache
NAME=mpp$$

reg_start p plain || { need "plain registry" "docker-registry did not start"; done_testing; exit; }
img_busybox "$W/bb" && push "$W/bb" "$REG_p/test/busybox:1" ||
	{ need "test image" "umoci or skopeo failed"; done_testing; exit; }
NBLOBS=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://$REG_p/v2/test/busybox/manifests/1" | grep -o 'sha256:[0-9a-f]\{64\}' | sort -u | wc -l)
export MPICTR_PULL_INSECURE=$REG_p

SEE='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt); ls /data/payload'
ok "srun -n 4 mpictr docker://HOST/test/busybox:1 (cache empty)" \
	step pull1 -O -n 4 "$MPICTR" "docker://$REG_p/test/busybox:1" /bin/sh -c "$SEE"
check "... 4 tasks saw the image's /data/payload" test "$(count pull1 '^/data/payload$')" = 4
check "... in one container (one user and mount namespace)" one_ns pull1
check "... each blob downloaded once for the 4 tasks (registry log)" test "$(reg_blob_gets p test/busybox)" = "$NBLOBS"
check "... one SIF in the cache" test "$(ls "$MPICTR_CACHEDIR/images/sha256" | wc -l)" = 1
ok "a second step, Pyxis form REGISTRY#IMAGE" \
	step pull2 -O -n 4 "$MPICTR" "$REG_p#test/busybox:1" /bin/sh -c "$SEE"
check "... 4 tasks ran" test "$(count pull2 '^/data/payload$')" = 4
check "... no blob downloaded" test "$(reg_blob_gets p test/busybox)" = "$NBLOBS"

# --container-image through the SPANK plugin: the installed plugin must be
# this build's, with mpictr-pull.so beside it.
if ! spank_ready; then
	need "SPANK --container-image=REGISTRY#IMAGE" "plugstack.conf does not load $SPANK_DIR/mpictr-spank.so"
elif ! spank_installed "$ROOT/build/plugins" || ! cmp -s "$ROOT/build/plugins/mpictr-pull.so" "$SPANK_DIR/mpictr-pull.so"; then
	skip "SPANK --container-image=REGISTRY#IMAGE" "the installed SPANK plugin is another build's (install this one: $(spank_install_cmd "$ROOT/build/plugins"))"
else
	rm -rf "$MPICTR_CACHEDIR"
	G0=$(reg_blob_gets p test/busybox)
	ok "srun -n 4 --container-image=$REG_p#test/busybox:1 (SPANK, cache empty)" \
		step spank1 -O -n 4 "--container-image=$REG_p#test/busybox:1" /bin/sh -c "$SEE"
	check "... 4 tasks saw the image" test "$(count spank1 '^/data/payload$')" = 4
	check "... each blob downloaded once" test "$(($(reg_blob_gets p test/busybox) - G0))" = "$NBLOBS"
	ok "... a second step (docker://)" \
		step spank2 -O -n 4 "--container-image=docker://$REG_p/test/busybox:1" /bin/sh -c "$SEE"
	check "... no blob downloaded" test "$(($(reg_blob_gets p test/busybox) - G0))" = "$NBLOBS"
fi
done_testing
