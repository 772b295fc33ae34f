#!/bin/bash
# 56-signed-users.sh - require_signature between two users (issue 31, item
# 5; run as root, which only switches users and builds the images). The
# victim V (mpictr-test) runs a signed image; the other user A
# (mpictr-test2) rewrites it in place after the check, while V's job
# sleeps, so that squashfuse, reading lazily, would hand V's job A's bytes:
#   - an image file that A owns (mode 0644): refused before it runs;
#   - one of V's that A may write (mode 0666): refused before it runs;
#   - one of V's (0644) in a directory A may write: A cannot rewrite it,
#     and replacing its name (rename over it) leaves V's job reading the
#     verified file;
#   - root's (0644): runs.
# Before the change the first two printed A's payload inside V's job.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test} A=${MPICTR_TEST_ATTACKER:-mpictr-test2}
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "signature policy tests" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	done_testing; exit
fi
require_two_users "$A" "$V" "$V"
require_images tiny
T="timeout -k 5 60"
AUID=$(id -u "$A")
W=$T_TMP
chmod 0755 "$W"
cd "$W" || exit 1

# two squashfs images differing only in /payload (as 76-signed-run.sh)
cp -a "$IMG/tiny" "$W/root"
sq() { mksquashfs "$W/root" "$1" -noappend -quiet -no-progress -noD -noF -no-fragments -all-root -mkfs-time 0 -all-time 0 >/dev/null; }
printf 'GOOD-PAYLOAD\n' >"$W/root/payload"
sq "$W/good.sqfs"
printf 'EVIL-PAYLOAD\n' >"$W/root/payload"
sq "$W/evil.sqfs"
chmod 0644 "$W/evil.sqfs"
openssl genpkey -algorithm ed25519 -out "$W/site.key" 2>/dev/null
openssl pkey -in "$W/site.key" -pubout -out "$W/site.pub"
chmod 0644 "$W/site.pub"
ok "a signed image with /payload" bash -c "'$MPICTR' sif create -o '$W/signed.sif' '$W/good.sqfs' >/dev/null && '$MPICTR' sif sign --key '$W/site.key' '$W/signed.sif' && chmod 0644 '$W/signed.sif'"
OFF=$("$MPICTR" sif list "$W/signed.sif" | awk -F'|' '/FS \(Squashfs/ { split($4, a, "-"); print a[1] }')
cat >"$W/site.conf" <<EOF
require_signature = yes
trusted_keys = $W/site.pub
EOF
chmod 0644 "$W/site.conf"
POLICY="$W/site.conf:1: require_signature = yes"
mkdir -m 0777 "$W/shared"
as() { local u=$1; shift; runuser -u "$u" -- env HOME="$(getent passwd "$u" | cut -d: -f6)" MPICTR_TEST_SITE_CONF="$W/site.conf" "$@"; }
# a copy of the signed image at $1, owned by $2, mode $3
copy() { cp "$W/signed.sif" "$1" && chown "$2:" "$1" && chmod "$3" "$1"; }

# attack HOW: V runs the job on $IMAGE; once it started (or ended) A runs
# HOW; the job's output in $W/job, its status in $W/rc.
attack() {
	local how=$1 i
	rm -f "$W/job" "$W/rc"
	(
		as "$V" $T "$MPICTR" "$IMAGE" sh -c 'echo STARTED; sleep 3; cat /payload' >"$W/job" 2>&1
		echo $? >"$W/rc"
	) &
	for i in $(seq 300); do
		grep -q STARTED "$W/job" 2>/dev/null && break
		[ -e "$W/rc" ] && break
		sleep 0.1
	done
	as "$A" bash -c "$how" >"$W/how" 2>&1
	wait
}
REWRITE="dd if='$W/evil.sqfs' of=\"\$IMAGE\" bs=1 seek=$OFF conv=notrunc status=none"
read_what() { echo "job exit $(cat "$W/rc"):"; cat "$W/job"; ! grep -q EVIL-PAYLOAD "$W/job"; }
keep() { cp "$W/job" "$W/last"; }
says() { grep -qF -- "$1" "$W/last" || { echo "no '$1' in:"; cat "$W/last"; return 1; }; }

export IMAGE=$W/root.sif
copy "$IMAGE" root 0644
good_run() { as "$V" $T "$MPICTR" "$IMAGE" cat /payload | grep -qx GOOD-PAYLOAD; }
ok "V runs root's signed image (0644)" good_run

# ---- A's file -----------------------------------------------------------------------
export IMAGE=$W/shared/a-owned.sif
copy "$IMAGE" "$A" 0644
attack "$REWRITE"
ok "A's signed image, rewritten by A during V's run: V's job never reads A's bytes" read_what
keep
ok "... V's job was refused before it ran (255), naming the owner" bash -c "[ \"\$(cat '$W/rc')\" = 255 ] && ! grep -q STARTED '$W/job' && grep -qF \"image '$IMAGE' refused: it belongs to uid $AUID, who could rewrite it while the job runs ($POLICY\" '$W/job'"

# ---- V's file that A may write ----------------------------------------------------------
export IMAGE=$W/shared/v-open.sif
copy "$IMAGE" "$V" 0666
attack "$REWRITE"
ok "V's signed image opened to every user (0666), rewritten by A during V's run: V's job never reads A's bytes" read_what
keep
ok "... V's job was refused before it ran" bash -c "[ \"\$(cat '$W/rc')\" = 255 ] && grep -qF 'its mode 0666 lets every user write it' '$W/job'"

# ---- V's file (0644) in a directory A may write -------------------------------------------
export IMAGE=$W/shared/v-own.sif
copy "$IMAGE" "$V" 0644
attack "$REWRITE"
ok "V's own signed image (0644): A cannot rewrite it" grep -q "Permission denied" "$W/how"
ok "... V's job ran and read the verified payload" bash -c "[ \"\$(cat '$W/rc')\" = 0 ] && grep -qx GOOD-PAYLOAD '$W/job'"
copy "$W/shared/evil.sif" "$A" 0644
dd if="$W/evil.sqfs" of="$W/shared/evil.sif" bs=1 seek="$OFF" conv=notrunc status=none
attack "mv -f '$W/shared/evil.sif' \"\$IMAGE\""
ok "A replaces the name of V's image during V's run (the directory is A's to write)" bash -c "[ \"\$(stat -c %u '$IMAGE')\" = $AUID ]"
ok "... V's job still reads the verified file" bash -c "[ \"\$(cat '$W/rc')\" = 0 ] && grep -qx GOOD-PAYLOAD '$W/job'"
ok_status "... and the next start refuses what A put there" 255 as "$V" $T "$MPICTR" "$IMAGE" true

done_testing
