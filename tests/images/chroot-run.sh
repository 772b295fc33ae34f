#!/bin/bash
# chroot-run.sh IMAGE CMD [ARGS...] - run CMD inside IMAGE without mpictr,
# as the calling user: the reference that tests compare mpictr against.
#
# IMAGE is a rootfs directory, a squashfs file or a SIF (mounted with
# squashfuse_ll -f at the squashfs offset). One root-mapped user namespace
# mounts the image and binds /dev /proc /sys, a private /tmp and the host's
# /etc/hosts; a nested user namespace maps the caller's uid back (PMIx
# rejects uid 0) and chroots into the image. Nothing outlives the command.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: chroot-run.sh IMAGE CMD [ARGS...]" >&2; exit 2; }
IMG=$(realpath "$1")
shift
U=$(id -u) G=$(id -g)
MNT=$(mktemp -d "${TMPDIR:-/tmp}/chroot-run.XXXXXX")
trap 'rm -rf "$MNT/tmp"; rmdir "$MNT/root" "$MNT" 2>/dev/null || true' EXIT
mkdir "$MNT/root" "$MNT/tmp"

off=
if [ -f "$IMG" ]; then
	if [ "$(head -c 4 "$IMG" | tr -d "\\0")" = hsqs ]; then
		off=0
	else # SIF: the first squashfs partition
		off=$(siftool list "$IMG" | awk -F'|' '/Squashfs/ { split($4, r, "-"); gsub(/ /, "", r[1]); print r[1]; exit }')
		[ -n "$off" ] || { echo "chroot-run.sh: no squashfs partition in $IMG" >&2; exit 2; }
	fi
fi

# shellcheck disable=SC2016
unshare -Urm --propagation private bash -c '
	set -e
	IMG=$1 OFF=$2 M=$3 U=$4 G=$5; shift 5
	R=$IMG
	if [ -n "$OFF" ]; then
		R=$M/root
		squashfuse_ll -f -o offset="$OFF" "$IMG" "$R" & F=$!
		for _ in $(seq 500); do mountpoint -q "$R" && break; kill -0 $F 2>/dev/null || exit 2; sleep 0.01; done
	fi
	mount --rbind /dev "$R/dev"; mount --rbind /proc "$R/proc"; mount --rbind /sys "$R/sys"
	mount --bind "$M/tmp" "$R/tmp"; mount --bind /etc/hosts "$R/etc/hosts"
	rc=0
	unshare --map-user="$U" --map-group="$G" --root="$R" --wd=/tmp "$@" || rc=$?
	if [ -n "$OFF" ]; then
		umount -R "$R" 2>/dev/null || umount -l "$R"
		for _ in $(seq 100); do kill -0 $F 2>/dev/null || break; sleep 0.05; done
		kill $F 2>/dev/null || true; wait $F 2>/dev/null || true
	fi
	exit $rc' chroot-run "$IMG" "$off" "$MNT" "$U" "$G" "$@" || exit $?
