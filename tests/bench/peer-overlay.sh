#!/bin/bash
# peer-overlay.sh SQFS plain|overlay CMD... - the peers' way of running a
# squashfs image writable, for 37-writable.sh to set beside mpictr's:
# squashfuse_ll mounts it (Apptainer's and Charliecloud's rootless mount)
# and, with `overlay`, kernel overlayfs puts a tmpfs upper layer on it (as
# `apptainer --writable-tmpfs` in a user namespace does); CMD then runs
# from the mount's root. Run it under `unshare -rm` (a user and mount
# namespace of its own: everything mounted goes with it).
set -eu
SQFS=$1 MODE=$2
shift 2
D=$(mktemp -d "${TMPDIR:-/tmp}/peer-overlay.XXXXXX")
trap 'set +e; cd /; umount "$D/m" 2>/dev/null; umount "$D/t" 2>/dev/null; fusermount3 -u "$D/sq" 2>/dev/null || umount "$D/sq" 2>/dev/null; rm -rf "$D"' EXIT
mkdir "$D/sq" "$D/t" "$D/m"
# In the foreground, a child in our process group: a run killed at its
# timeout (interleave.py kills the group) takes the FUSE server with it.
squashfuse_ll -f "$SQFS" "$D/sq" &
for _ in $(seq 100); do
	mountpoint -q "$D/sq" && break
	sleep 0.05
done
mountpoint -q "$D/sq" || { echo "peer-overlay.sh: squashfuse_ll did not mount $SQFS" >&2; exit 1; }
R=$D/sq
if [ "$MODE" = overlay ]; then
	mount -t tmpfs tmpfs "$D/t"
	mkdir "$D/t/u" "$D/t/w"
	mount -t overlay overlay -o "lowerdir=$D/sq,upperdir=$D/t/u,workdir=$D/t/w,userxattr" "$D/m"
	R=$D/m
fi
cd "$R"
"$@"
