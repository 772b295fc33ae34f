#!/bin/bash
# 37-writable.sh - writable containers without privilege: --writable-tmpfs
# (an overlay on the image, its upper layer a tmpfs sized by the site's
# writable_tmpfs_size) and --overlay DIR (the upper layer in a directory
# the user owns, kept for the next run), on the image's single mount:
# exec on a directory, a squashfs and a SIF; -n 2 and srun (join mode)
# ranks and the members of an instance see each other's writes; the image
# file never changes (checksum); `instance save NAME PATH` packs the
# container's current state into a new image; nothing is left mounted or
# running.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"

T="timeout -k 5 60"
require_userns_fuse
require_images tiny
W=$(mktemp -d /var/tmp/mpictr-writable.XXXXXX) || exit 1
chmod 0755 "$W"
N=w$$
trap '"$MPICTR" instance stop $N >/dev/null 2>&1; "$MPICTR" instance stop ${N}r >/dev/null 2>&1; t_cleanup; chmod -R u+rwX "$W" 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1
private_tmpdir

# An image whose files are the user's (a copy of the tiny directory, and a
# squashfs and a SIF of it made without -all-root), so the user may write
# anywhere in it; tiny.sif's files are root's.
cp -a "$IMG/tiny" "$W/img" && chmod -R u+w "$W/img"
mksquashfs "$W/img" "$W/img.sqfs" -noappend -quiet >/dev/null 2>&1
"$MPICTR" sif create -o "$W/img.sif" "$W/img.sqfs" >/dev/null 2>&1
sums() { sha256sum "$W/img.sqfs" "$W/img.sif" "$IMG/tiny.sif"; (cd "$W/img" && find . -printf '%p %s %T@\n' | sort | sha256sum); }
sums >"$W/sums.before"

for f in img img.sqfs img.sif; do
	ok "--writable-tmpfs $f: a file written in /usr reads back" \
		bash -c "$T '$MPICTR' --writable-tmpfs '$W/$f' sh -c 'echo w >/usr/new && cat /usr/new && mkdir /opt/d && touch /opt/d/f' | grep -qx w"
	ok "... gone in the next run without it" bash -c "! $T '$MPICTR' '$W/$f' test -e /usr/new"
done
ok_fail "without --writable-tmpfs the image is read-only" $T "$MPICTR" "$W/img.sif" sh -c 'echo w >/usr/new'
ok "--fakeroot --writable-tmpfs tiny.sif (root's files): /usr is writable" \
	bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs '$IMG/tiny.sif' sh -c 'echo w >/usr/new && cat /usr/new' | grep -qx w"
ok "--writable-tmpfs tiny.sif as the user: root's directories stay closed (Permission denied)" \
	bash -c "$T '$MPICTR' --writable-tmpfs '$IMG/tiny.sif' sh -c 'echo w >/usr/new' 2>&1 | grep -q 'Permission denied'"

# The whole tree takes writes: /, /etc, /usr and /var, also where the
# image lacks a mount point (no /etc/hosts, /etc/resolv.conf: mpictr binds
# the host's, made in a layer of its own, never read-only over /etc);
# root's directories with --fakeroot. The files mpictr provides stay.
mkdir "$W/noetc" && cp -a "$IMG/tiny/." "$W/noetc/" && chmod -R u+w "$W/noetc" && rm -f "$W/noetc/etc/hosts" "$W/noetc/etc/resolv.conf"
mksquashfs "$W/noetc" "$W/noetc-user.sqfs" -noappend -quiet >/dev/null 2>&1
mksquashfs "$W/noetc" "$W/noetc-root.sqfs" -noappend -quiet -all-root >/dev/null 2>&1
# shellcheck disable=SC2016
WRITE='touch /newfile && echo e >/etc/x && echo u >/usr/x && echo v >/var/x && test -e /newfile && [ "$(cat /etc/x /usr/x /var/x | tr -d "\n")" = euv ] && cmp -s /etc/hosts /opt/hosts.ref && grep -q "^$(id -un):x:$(id -u):" /etc/passwd && echo files-ok'
cp /etc/hosts "$W/.hosts" 2>/dev/null || : >"$W/.hosts"
# wrote [N]: N lines (of N ranks), each saying all went well
wrote() { [ "$(grep -cx files-ok)" = "${1:-1}" ]; }
export -f wrote
for f in tiny.sif noetc-root.sqfs; do
	i=$W/$f
	[ "$f" = tiny.sif ] && i=$IMG/tiny.sif
	ok "--fakeroot --writable-tmpfs $f: /newfile, /etc/x, /usr/x, /var/x written; hosts, passwd kept" \
		bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs -B '$W/.hosts:/opt/hosts.ref' '$i' sh -c '$WRITE' | wrote"
done
ok "--writable-tmpfs noetc-user.sqfs (the user's files): the same without --fakeroot" \
	bash -c "$T '$MPICTR' --writable-tmpfs -B '$W/.hosts:/opt/hosts.ref' '$W/noetc-user.sqfs' sh -c '$WRITE' | wrote"
ok "--fakeroot --writable-tmpfs: / is an rw overlay in the run, as --dry-run shows it" \
	bash -c "'$MPICTR' --dry-run --fakeroot --writable-tmpfs '$IMG/tiny.sif' true | jq -e '.mounts[1].target == \"/\" and (.mounts[1].options | startswith(\"overlay,rw\"))' >/dev/null && $T '$MPICTR' --fakeroot --writable-tmpfs '$IMG/tiny.sif' cat /proc/self/mountinfo | awk '\$5 == \"/\" { l = \$6 \" \" \$9 } END { print l }' | grep -qx 'rw,.* overlay'"
ok "-n 2 --writable-tmpfs noetc-user.sqfs: every rank writes /newfile, /etc, /usr, /var" \
	bash -c "$T '$MPICTR' -n 2 --writable-tmpfs -B '$W/.hosts:/opt/hosts.ref' '$W/noetc-user.sqfs' sh -c '$WRITE' | wrote 2"
if slurm_up; then
	ok "srun -n 2 mpictr --writable-tmpfs (join mode): every task writes /newfile, /etc, /usr, /var" \
		bash -c "$T srun -O -n 2 '$MPICTR' --writable-tmpfs -B '$W/.hosts:/opt/hosts.ref' '$W/noetc-user.sqfs' sh -c '$WRITE' | wrote 2"
else
	need "srun --writable-tmpfs writes" "the test Slurm (tests/slurm/cluster.sh) is not up"
fi
ok "instance start --fakeroot --writable-tmpfs noetc-root.sqfs" $T "$MPICTR" instance start --fakeroot --writable-tmpfs -B "$W/.hosts:/opt/hosts.ref" "$W/noetc-root.sqfs" ${N}r
ok "... one exec writes /newfile, /etc/x, /usr/x, /var/x" bash -c "$T '$MPICTR' exec instance://${N}r sh -c '$WRITE' | wrote"
ok "... the next exec reads them" bash -c "$T '$MPICTR' exec instance://${N}r cat /newfile /etc/x /usr/x /var/x | tr '\n' ' ' | grep -qx 'e u v '"
ok "... instance save: the writes are in the saved image, the mount points mpictr made are not" \
	bash -c "$T '$MPICTR' instance save ${N}r '$W/saved-r.sqfs' && unsquashfs -l '$W/saved-r.sqfs' >'$W/saved-r.ls' && grep -qx 'squashfs-root/newfile' '$W/saved-r.ls' && grep -qx 'squashfs-root/etc/x' '$W/saved-r.ls' && ! grep -qE 'squashfs-root/(etc/hosts|etc/resolv.conf|opt/hosts.ref|\.mpictr.*)$' '$W/saved-r.ls'"
ok "... instance stop" $T "$MPICTR" instance stop ${N}r

# --overlay DIR: the writes stay in DIR/upper.
mkdir "$W/ovl"
ok "--overlay DIR: run 1 writes /etc/kept" $T "$MPICTR" --overlay "$W/ovl" "$W/img.sif" sh -c 'echo kept >/etc/kept && rm /etc/hostname 2>/dev/null; true'
ok "... run 2 reads it" bash -c "$T '$MPICTR' --overlay '$W/ovl' '$W/img.sif' cat /etc/kept | grep -qx kept"
check "... it is DIR/upper/etc/kept on the host" test "$(cat "$W/ovl/upper/etc/kept" 2>/dev/null)" = kept
check "... no mount point left in DIR/upper (only etc)" test "$(ls -A "$W/ovl/upper")" = etc
ok "... a relative DIR from another image form too (dir image)" bash -c "$T '$MPICTR' --overlay ovl '$W/img' cat /etc/kept | grep -qx kept"
ok_status "--overlay on a directory that is not the user's: exit 255" 255 $T "$MPICTR" --overlay /var/tmp "$W/img.sif" true
ok "... the message says whose it is" bash -c "'$MPICTR' --overlay /var/tmp '$W/img.sif' true 2>&1 | grep -q \"overlay '/var/tmp': the directory is not yours\""
ok_status "--overlay on a missing directory: exit 255" 255 $T "$MPICTR" --overlay "$W/nope" "$W/img.sif" true
ok_status "--writable-tmpfs with --overlay: exit 255" 255 "$MPICTR" --writable-tmpfs --overlay "$W/ovl" "$W/img.sif" true

# --dry-run: the layer is a mount, sized by the site like /dev/shm.
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "writable_tmpfs_size in the site file" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
else
	echo "writable_tmpfs_size = 64m" >"$W/site.conf"
	ok "--dry-run: the overlay mount, its size from writable_tmpfs_size" \
		bash -c "MPICTR_TEST_SITE_CONF='$W/site.conf' '$MPICTR' --dry-run --writable-tmpfs '$W/img.sif' true | jq -e '.mounts[1] == {\"source\": \"tmpfs\", \"target\": \"/\", \"options\": \"overlay,rw,nosuid,nodev,size=65536k\"}'"
	echo "writable_tmpfs_size = lots" >"$W/bad.conf"
	ok "a bad writable_tmpfs_size names the key" bash -c "MPICTR_TEST_SITE_CONF='$W/bad.conf' '$MPICTR' --dry-run --writable-tmpfs '$W/img.sif' true 2>&1 | grep -q \"invalid value 'lots' for 'writable_tmpfs_size'\""
fi
ok "--dry-run --overlay: source DIR, upper and work in it" \
	bash -c "'$MPICTR' --dry-run --overlay ovl '$W/img.sif' true | jq -e '.mounts[1].source == \"$W/ovl\" and (.mounts[1].options | test(\"upperdir=$W/ovl/upper,workdir=$W/ovl/work\"))'"

# All ranks of a node share the one overlay.
# shellcheck disable=SC2016
SHARE='r=${PMIX_RANK:-${PMI_RANK:-$SLURM_PROCID}}; echo $r >/etc/rank$r; for i in $(seq 50); do [ -e /etc/rank0 ] && [ -e /etc/rank1 ] && break; sleep 0.1; done; ls /etc/rank0 /etc/rank1'
ok "-n 2 --writable-tmpfs: each rank sees the other's file" \
	bash -c "$T '$MPICTR' -n 2 --writable-tmpfs '$W/img.sif' sh -c '$SHARE' | grep -c '^/etc/rank' | grep -qx 4"
ok "-n 2 --overlay DIR: the same, and kept" \
	bash -c "$T '$MPICTR' -n 2 --overlay '$W/ovl' '$W/img.sif' sh -c '$SHARE' >/dev/null && ls '$W/ovl/upper/etc/rank0' '$W/ovl/upper/etc/rank1'"
if slurm_up; then
	ok "srun -n 2 mpictr --writable-tmpfs (join mode): each task sees the other's file" \
		bash -c "$T srun -O -n 2 '$MPICTR' --writable-tmpfs '$W/img.sif' sh -c '$SHARE' | grep -c '^/etc/rank' | grep -qx 4"
else
	need "srun --writable-tmpfs" "the test Slurm (tests/slurm/cluster.sh) is not up"
fi
ok "instance start --writable-tmpfs" $T "$MPICTR" instance start --writable-tmpfs "$W/img.sif" $N
ok "... one exec writes" $T "$MPICTR" exec instance://$N sh -c 'echo inst >/etc/inst'
ok "... the next exec reads it" bash -c "$T '$MPICTR' exec instance://$N cat /etc/inst | grep -qx inst"
ok "... a joiner's --writable-tmpfs or --overlay is refused (the instance decided)" \
	bash -c "'$MPICTR' --writable-tmpfs instance://$N true 2>&1 | grep -q -- '--writable-tmpfs cannot be used with instance://$N' && '$MPICTR' --overlay '$W/ovl' instance://$N true 2>&1 | grep -q -- '--overlay cannot be used with instance://$N'"
ok "... instance save NAME PATH" $T "$MPICTR" instance save $N "$W/saved.sqfs"
ok "... the saved image has the change, and none of the mounts (no home, /proc empty)" \
	bash -c "$T '$MPICTR' '$W/saved.sqfs' sh -c 'cat /etc/inst; ls -A /proc | wc -l' | tr '\n' ' ' | grep -qx 'inst [0-9]* ' && ! unsquashfs -l '$W/saved.sqfs' | grep -qE 'squashfs-root(/proc/.|$HOME|/dev/.)'"
ok "... and it runs as an image (env scripts, runscript)" bash -c "$T '$MPICTR' run '$W/saved.sqfs' x | grep -qx 'runscript: x'"
ok_status "instance save of no such instance: 255" 255 $T "$MPICTR" instance save nope$$ "$W/nope.sqfs"
ok "... instance stop" $T "$MPICTR" instance stop $N

sums >"$W/sums.after"
ok "the image files never changed (sha256 of the squashfs, the SIFs, the directory tree)" cmp "$W/sums.before" "$W/sums.after"
ok "nothing left running" settle 50 marked_procs
ok "nothing left mounted on the host (no overlay, no tmpfs of ours)" bash -c "! grep -E 'overlay|$W' /proc/self/mountinfo"
done_testing
