#!/bin/bash
# 76-signed-run.sh - the signature policy for the whole run (issue 31,
# items 5 and 9). Under require_signature the job reads the image lazily
# (squashfuse), for as long as it runs, so the bytes it reads must be the
# bytes that were verified:
#   - a signed image whose file its group may write (mode 0664) is refused
#     before anything runs: the attack (rewrite the squashfs in place after
#     the check, while the job sleeps) made the job print the attacker's
#     payload before;
#   - so is one that a process holds open for writing (opened before a
#     chmod 0644): its write after the check reached the job before;
#   - replacing the file's name while the job runs (rename over it) changes
#     nothing: the job reads the verified file;
#   - --overlay DIR is refused unless the site allows it (signed_overlay),
#     --writable-tmpfs and instance saves are allowed unless the site
#     forbids them (signed_writable_tmpfs, signed_save); without the policy
#     none of these keys matters.
# The other user's side (a file another uid owns or can write) is in
# tests/integration-root/56-signed-users.sh.
. "$(dirname "$0")/lib.sh"

if [ -e /etc/mpictr/mpictr.conf ]; then
	need "signature policy tests" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	done_testing; exit
fi
require_userns_fuse
require_images tiny
T="timeout -k 5 60"
W=$(mktemp -d /var/tmp/mpictr-signed-run.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp" "$W/home"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp HOME=$W/home
unset XDG_CACHE_HOME MPICTR_VERIFY_CACHE

# Two squashfs images that differ only in the 12 bytes of /payload (data
# stored uncompressed, no fragments, times fixed): the attacker's rewrite
# of the signed image's partition changes what the job reads and nothing
# the kernel or squashfuse already cached.
cp -a "$IMG/tiny" "$W/root"
chmod -R u+w "$W/root"
sq() { mksquashfs "$W/root" "$1" -noappend -quiet -no-progress -noD -noF -no-fragments -all-root -mkfs-time 0 -all-time 0 >/dev/null; }
printf 'GOOD-PAYLOAD\n' >"$W/root/payload"
sq "$W/good.sqfs"
printf 'EVIL-PAYLOAD\n' >"$W/root/payload"
sq "$W/evil.sqfs"
openssl genpkey -algorithm ed25519 -out "$W/site.key" 2>/dev/null
openssl pkey -in "$W/site.key" -pubout -out "$W/site.pub"
ok "a signed image with /payload" bash -c "'$MPICTR' sif create -o '$W/signed.sif' '$W/good.sqfs' >/dev/null && '$MPICTR' sif sign --key '$W/site.key' '$W/signed.sif'"
OFF=$("$MPICTR" sif list "$W/signed.sif" | awk -F'|' '/FS \(Squashfs/ { split($4, a, "-"); print a[1] }')
chmod 0644 "$W/signed.sif"
cat >"$W/site.conf" <<EOF
require_signature = yes
trusted_keys = $W/site.pub
EOF
export MPICTR_TEST_SITE_CONF=$W/site.conf
POLICY="$W/site.conf:1: require_signature = yes"

keep() { cp "$T_OUT" "$W/last"; }
says() { grep -qF -- "$1" "$W/last" || { echo "no '$1' in:"; cat "$W/last"; return 1; }; }
JOB='echo STARTED; sleep 3; cat /payload'
# attack IMAGE HOW: run the job on a fresh copy of the signed image made by
# `prepare` (its name in $V), wait until it started (or ended), then let
# HOW change the image; the job's output in $W/job, its status in $W/rc.
attack() {
	local how=$1 i
	rm -f "$W/job" "$W/rc"
	(
		$T "$MPICTR" "$V" sh -c "$JOB" >"$W/job" 2>&1 9>&-
		echo $? >"$W/rc"
	) &
	for i in $(seq 300); do
		grep -q STARTED "$W/job" 2>/dev/null && break
		[ -e "$W/rc" ] && break
		sleep 0.1
	done
	$how
	wait
}
rewrite() { dd if="$W/evil.sqfs" of="$V" bs=1 seek="$OFF" conv=notrunc status=none; }
read_what() { echo "job exit $(cat "$W/rc"):"; cat "$W/job"; ! grep -q EVIL-PAYLOAD "$W/job"; }

ok "the signed image (mode 0644) runs and reads its payload" bash -c "$T '$MPICTR' '$W/signed.sif' cat /payload | grep -qx GOOD-PAYLOAD"

# ---- item 5: a file its group may write ---------------------------------------
V=$W/group.sif
cp "$W/signed.sif" "$V"
chmod 0664 "$V"
attack rewrite
ok "a group-writable signed image rewritten during the run: the job never reads the new bytes" read_what
ok "... it was refused before it ran (255)" bash -c "[ \"\$(cat '$W/rc')\" = 255 ] && ! grep -q STARTED '$W/job'"
cp "$W/job" "$W/last"
ok "... saying why, with the policy and a hint" says "image '$V' refused: its mode 0664 lets its group write it while the job runs ($POLICY runs only image files that nobody but root and the user can write; hint:"
cp "$W/signed.sif" "$V"
chmod 0646 "$V"
ok_status "a world-writable signed image is refused" 255 $T "$MPICTR" "$V" true
keep
ok "... naming every user" says "its mode 0646 lets every user write it"

# ---- item 5: a writer that opened the file before it was made 0644 --------------
V=$W/held.sif
cp "$W/signed.sif" "$V"
chmod 0664 "$V"
exec 9<>"$V"
chmod 0644 "$V"
held_write() { python3 -c 'import os,sys; d=open(sys.argv[1],"rb").read(); os.pwrite(9, d, int(sys.argv[2]))' "$W/evil.sqfs" "$OFF"; }
attack held_write
ok "an image held open for writing, written during the run: the job never reads the new bytes" read_what
cp "$W/job" "$W/last"
ok "... it was refused: a process holds it open for writing" says "image '$V' refused: a process holds it open for writing"
exec 9>&-
cp "$W/signed.sif" "$V"
ok "with the writer gone, the same file runs" bash -c "$T '$MPICTR' '$V' cat /payload | grep -qx GOOD-PAYLOAD"

# ---- item 5: the name replaced during the run -------------------------------------
V=$W/renamed.sif
cp "$W/signed.sif" "$V"
cp "$W/signed.sif" "$W/evil.sif"
dd if="$W/evil.sqfs" of="$W/evil.sif" bs=1 seek="$OFF" conv=notrunc status=none
replace() { mv -f "$W/evil.sif" "$V"; }
attack replace
ok "the image's name replaced by another file during the run: the job reads the verified one" bash -c "[ \"\$(cat '$W/rc')\" = 0 ] && grep -qx GOOD-PAYLOAD '$W/job'"

# ---- item 9: --overlay, --writable-tmpfs, instance save --------------------------
mkdir -p "$W/ovl/upper"
printf 'UNSIGNED\n' >"$W/ovl/upper/payload"
ok_status "--overlay DIR over a signed image is refused by default" 255 $T "$MPICTR" --overlay "$W/ovl" "$W/signed.sif" cat /payload
keep
ok "... naming the option, the policy and the key that allows it" says "--overlay '$W/ovl' refused under the site's signature policy ($POLICY; default signed_overlay = no): no signature covers the files of an overlay directory"
ok "... and the unsigned file was never read" bash -c "! grep -q UNSIGNED '$W/last'"
ok "--writable-tmpfs over a signed image runs by default (and writes)" bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs '$W/signed.sif' sh -c 'echo x >/usr/new && cat /usr/new /payload' | tr '\\n' ' ' | grep -qx 'x GOOD-PAYLOAD '"
NAME=sr$$
ok "instance start of the signed image with --writable-tmpfs" $T "$MPICTR" instance start --writable-tmpfs "$W/signed.sif" "$NAME"
ok "instance save is allowed by default" $T "$MPICTR" instance save "$NAME" "$W/saved.sqfs"
ok "... and wrote an image" test -s "$W/saved.sqfs"

cp "$W/site.conf" "$W/strict.conf"
cat >>"$W/strict.conf" <<EOF
signed_overlay = yes
signed_writable_tmpfs = no
signed_save = no
EOF
export MPICTR_TEST_SITE_CONF=$W/strict.conf
POLICY="$W/strict.conf:1: require_signature = yes"
ok "--dry-run shows the three settings in signature_policy" bash -c "'$MPICTR' --dry-run '$W/signed.sif' true | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"signature_policy\"]; assert (p[\"signed_overlay\"], p[\"signed_writable_tmpfs\"], p[\"signed_save\"]) == (True, False, False), p'"
ok "signed_overlay = yes: --overlay DIR runs, its file over the image's" bash -c "$T '$MPICTR' --overlay '$W/ovl' '$W/signed.sif' cat /payload | grep -qx UNSIGNED"
ok_status "signed_writable_tmpfs = no: --writable-tmpfs is refused" 255 $T "$MPICTR" --writable-tmpfs "$W/signed.sif" true
keep
ok "... naming the setting" says "--writable-tmpfs refused under the site's signature policy ($POLICY; $W/strict.conf:4: signed_writable_tmpfs = no)"
rm -f "$W/saved.sqfs"
ok_status "signed_save = no: instance save is refused" 255 $T "$MPICTR" instance save "$NAME" "$W/saved.sqfs"
keep
ok "... naming the instance and the setting, no file written" bash -c "grep -qF \"saving instance '$NAME' refused under the site's signature policy ($POLICY; $W/strict.conf:5: signed_save = no)\" '$W/last' && [ ! -e '$W/saved.sqfs' ]"
ok "instance stop" $T "$MPICTR" instance stop "$NAME"
printf 'signed_overlay = yes\n' >"$W/user.conf"
ok_status "a user file cannot set signed_overlay" 255 $T "$MPICTR" --config "$W/user.conf" --overlay "$W/ovl" "$W/signed.sif" true
keep
ok "... a site-only key" says "user.conf:1: 'signed_overlay' may only be set in the site configuration file"
printf 'signed_overlay = no\nsigned_writable_tmpfs = no\n' >"$W/nopolicy.conf"
export MPICTR_TEST_SITE_CONF=$W/nopolicy.conf
ok "without require_signature the keys change nothing: --overlay runs" bash -c "$T '$MPICTR' --overlay '$W/ovl' '$W/signed.sif' cat /payload | grep -qx UNSIGNED"
ok "... so does a group-writable image" bash -c "chmod 0664 '$W/group.sif' && $T '$MPICTR' '$W/group.sif' true"

done_testing
