#!/bin/bash
# 62-signed.sh - the site's signature policy (require_signature = yes,
# trusted_keys = FILE...): an image signed here by `mpictr sif sign` with a
# trusted key runs; an unsigned image, one signed by another key, one with
# a flipped byte, a directory and a plain squashfs are refused before
# anything is mounted, naming the image, the setting and the keys tried, in
# every mode: exec, -n 2, the library (embed_run), instance start,
# mpirun mpictr (hybrid), srun mpictr (join) and srun --container-image
# (the SPANK plugin). A user configuration cannot lift it. The verified-
# identity cache: a second start takes the data digests from it, a
# modified file is hashed again (and refused).
#
# MPICTR_TEST_SITE_CONF stands in for /etc/mpictr/mpictr.conf (honoured only
# where that file does not exist).
. "$(dirname "$0")/lib.sh"

if [ -e /etc/mpictr/mpictr.conf ]; then
	need "signature policy tests" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	done_testing; exit
fi
require_userns_fuse
require_images tiny
T="timeout -k 5 90"
MYUID=$(id -u)
# in /var/tmp: the tasks of srun see it too
W=$(mktemp -d /var/tmp/mpictr-signed.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp" "$W/home"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp HOME=$W/home
unset XDG_CACHE_HOME MPICTR_VERIFY_CACHE

openssl genpkey -algorithm ed25519 -out "$W/site.key" 2>/dev/null
openssl pkey -in "$W/site.key" -pubout -out "$W/site.pub"
openssl genpkey -algorithm ed25519 -out "$W/other.key" 2>/dev/null
cp "$IMG/tiny.sif" "$W/signed.sif"
cp "$IMG/tiny.sif" "$W/unsigned.sif"
cp "$IMG/tiny.sif" "$W/other.sif"
cp "$IMG/tiny.sqfs" "$W/plain.sqfs"
chmod u+w "$W"/*.sif
ok "sif sign the test image with the site's key" "$MPICTR" sif sign --key "$W/site.key" "$W/signed.sif"
ok "sif sign another copy with another key" "$MPICTR" sif sign --key "$W/other.key" "$W/other.sif"
cp "$W/signed.sif" "$W/tampered.sif"
# a byte of the squashfs (its superblock's mkfs time: still mountable)
OFF=$("$MPICTR" sif list "$W/signed.sif" | awk -F'|' '/FS \(Squashfs/ { split($4, a, "-"); print a[1] + 8 }')
printf 'X' | dd of="$W/tampered.sif" bs=1 seek="$OFF" conv=notrunc 2>/dev/null
cat >"$W/site.conf" <<EOF
require_signature = yes
trusted_keys = $W/site.pub
EOF
export MPICTR_TEST_SITE_CONF=$W/site.conf

keep() { cp "$T_OUT" "$W/last"; }
says() { grep -q -- "$1" "$W/last" || { echo "no '$1' in:"; cat "$W/last"; return 1; }; }
REFUSED="refused: not signed by a key the site trusts ($W/site.conf:1: require_signature = yes; keys tried: $W/site.pub)"
# nothing of ours left: no process naming $W, nothing mounted from it
nothing_left() {
	! pgrep -u "$MYUID" -af "$W/" | grep -v "^$$ " | grep -v pgrep &&
		! grep -qF "$W" /proc/self/mountinfo
}

# ---- exec ------------------------------------------------------------------------
ok "exec: the signed image runs" bash -c "$T '$MPICTR' '$W/signed.sif' echo RAN | grep -qx RAN"
ok_status "exec: an unsigned image is refused (255)" 255 $T "$MPICTR" "$W/unsigned.sif" echo RAN
keep
ok "... naming the image, the setting and the keys tried" says "image '$W/unsigned.sif' $REFUSED: group 1 (objects 1) is not signed"
ok "... and the command never ran" bash -c "! grep -q RAN '$W/last'"
ok_status "exec: an image signed by another key is refused" 255 $T "$MPICTR" "$W/other.sif" echo RAN
keep
ok "... saying no trusted key verifies its signature" says "image '$W/other.sif' $REFUSED: group 1 (objects 1): signature object 2 (dsse): no given key verifies it"
ok_status "exec: a flipped byte in the signed squashfs is refused" 255 $T "$MPICTR" "$W/tampered.sif" echo RAN
keep
ok "... naming the object whose data changed" says "the data of object 1 is not what was signed"
ok_status "exec: a plain squashfs is refused" 255 $T "$MPICTR" "$W/plain.sqfs" echo RAN
keep
ok "... it carries no signature" says "the site runs only signed SIF images"
ok_status "exec: a directory image is refused" 255 $T "$MPICTR" "$IMG/tiny" echo RAN
ok "nothing left running or mounted after the refusals" nothing_left
ok "--dry-run shows the policy (signature_policy)" bash -c "'$MPICTR' --dry-run '$W/signed.sif' true | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"signature_policy\"]; assert p[\"require_signature\"] is True and p[\"trusted_keys\"]==[sys.argv[1]]' '$W/site.pub'"

# ---- what is loaded ------------------------------------------------------------------
if command -v strace >/dev/null; then
	opened() { # SITECONF: the files a run of the signed image opens
		MPICTR_TEST_SITE_CONF=$1 $T strace -f -qq -e trace=openat -o "$W/strace" "$MPICTR" "$W/signed.sif" true && cat "$W/strace"
	}
	printf '# no policy\n' >"$W/empty.conf"
	ok "without the policy no verify plugin, no libcrypto is loaded" bash -c "$(declare -f opened); T='$T' MPICTR='$MPICTR' W='$W' opened '$W/empty.conf' >'$W/o1' && ! grep -q -e mpictr-verify -e libcrypto -e librnp '$W/o1'"
	ok "with it and a PEM key: mpictr-verify.so (OpenSSL), not RNP" bash -c "$(declare -f opened); T='$T' MPICTR='$MPICTR' W='$W' opened '$W/site.conf' >'$W/o2' && grep -q 'mpictr-verify.so\"' '$W/o2' && ! grep -q -e librnp -e mpictr-verify-pgp '$W/o2'"
else
	need "what a run loads" "strace is not installed"
fi

# ---- users cannot lift it -----------------------------------------------------------
printf 'require_signature = no\n' >"$W/user.conf"
ok_status "a user file (--config) cannot set require_signature" 255 $T "$MPICTR" --config "$W/user.conf" "$W/unsigned.sif" echo RAN
keep
ok "... it is a site-only key" says "user.conf:1: 'require_signature' may only be set in the site configuration file"
printf 'trusted_keys = %s\n' "$W/other.pub" >"$W/user2.conf"
ok_status "MPICTR_CONF cannot add trusted_keys" 255 env MPICTR_CONF="$W/user2.conf" $T "$MPICTR" "$W/other.sif" echo RAN
ok_status "MPICTR_VERIFY_CACHE=off only disables the cache" 255 env MPICTR_VERIFY_CACHE=off $T "$MPICTR" "$W/tampered.sif" echo RAN

# ---- the cache ------------------------------------------------------------------------
ok "a second start takes the data digests from the user's cache" bash -c "$T '$MPICTR' -v '$W/signed.sif' true 2>&1 | grep -q 'signed by a trusted key (data digests from the cache)'"
ok "... kept under \$HOME/.cache/mpictr/verified, private" bash -c "[ \"\$(stat -c %a '$W/home/.cache/mpictr/verified')\" = 700 ] && [ -n \"\$(ls '$W/home/.cache/mpictr/verified')\" ]"
cp "$W/signed.sif" "$W/later.sif"
ok "a new copy is verified in full" bash -c "$T '$MPICTR' -v '$W/later.sif' true 2>&1 | grep 'signed by a trusted key' | grep -vq cache"
printf 'X' | dd of="$W/later.sif" bs=1 seek="$OFF" conv=notrunc 2>/dev/null
ok_status "the verified file, modified afterwards, is refused (its ctime changed)" 255 $T "$MPICTR" "$W/later.sif" true
keep
ok "... its data hashed again" says "the data of object 1 is not what was signed"

# ---- -n, the library, instances --------------------------------------------------------------
ok "-n 2: the signed image runs both ranks" bash -c "$T '$MPICTR' -n 2 '$W/signed.sif' echo RAN | grep -c RAN | grep -qx 2"
ok_status "-n 2: the tampered image is refused" 255 $T "$MPICTR" -n 2 "$W/tampered.sif" echo RAN
keep
ok "... naming it" says "image '$W/tampered.sif' refused"
EMBED=$ROOT/build/tests/embed_run
if [ -x "$EMBED" ]; then
	ok "library (mpictr_run, site file never loaded by the embedder): signed runs" bash -c "$T '$EMBED' '$W/signed.sif' true | grep -q 'returned status=0'"
	ok_status "library: the unsigned image is refused" 255 $T "$EMBED" "$W/unsigned.sif" true
	keep
	ok "... by the site's policy" says "image '$W/unsigned.sif' $REFUSED"
else
	need "library embedder" "build/tests/embed_run missing (make check builds it)"
fi
INST=sig$$
ok_status "instance start: the tampered image is refused" 255 $T "$MPICTR" instance start "$W/tampered.sif" "$INST"
keep
ok "... naming it" says "image '$W/tampered.sif' refused"
ok "... and no instance was left" bash -c "! '$MPICTR' instance list | grep -qw '$INST'"
ok "instance start: the signed image starts" $T "$MPICTR" instance start "$W/signed.sif" "$INST"
ok "... and runs commands" bash -c "$T '$MPICTR' instance://$INST echo RAN | grep -qx RAN"
ok "... and stops" $T "$MPICTR" instance stop "$INST"

# ---- hybrid: mpirun mpictr -------------------------------------------------------------------
if command -v mpirun >/dev/null; then
	ok "mpirun -np 2 mpictr: the signed image runs" bash -c "$T mpirun --oversubscribe -np 2 '$MPICTR' '$W/signed.sif' echo RAN 2>&1 | grep -c '^RAN' | grep -qx 2"
	ok_fail "mpirun -np 2 mpictr: the tampered image is refused" $T mpirun --oversubscribe -np 2 "$MPICTR" "$W/tampered.sif" echo RAN
	keep
	ok "... naming it, and no rank ran" bash -c "grep -q \"image '$W/tampered.sif' refused\" '$W/last' && ! grep -q '^RAN' '$W/last'"
else
	need "mpirun mpictr" "Open MPI's mpirun is not installed"
fi

# ---- Slurm: srun mpictr and srun --container-image -------------------------------------------
. "$ROOT/tests/slurm/env.sh"
if ! slurm_up; then
	need "srun" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
	done_testing; exit
fi
S="$T srun -O -n 2"
ok "srun -n 2 mpictr: the signed image runs" bash -c "$S '$MPICTR' '$W/signed.sif' echo RAN 2>&1 | grep -c '^RAN' | grep -qx 2"
ok_fail "srun -n 2 mpictr: the tampered image is refused" $S "$MPICTR" "$W/tampered.sif" echo RAN
keep
ok "... every task says why, none ran" bash -c "[ \$(grep -c \"image '$W/tampered.sif' refused\" '$W/last') -ge 1 ] && ! grep -q '^RAN' '$W/last'"
ok_fail "srun -n 2 mpictr: the unsigned image is refused" $S "$MPICTR" "$W/unsigned.sif" echo RAN
CLUSTER_DIRS=$(sed -nE "s|^[a-z]+ +$SPANK_DIR/mpictr-spank.so .*image_dirs=([^ ]+).*|\1|p" "${SLURM_CONF%/*}/plugstack.conf" 2>/dev/null)
in_dirs() { spank_in_dirs "$CLUSTER_DIRS" "$1"; }
if ! spank_ready || ! spank_installed "$ROOT/build/plugins" || ! in_dirs "$W/signed.sif"; then
	need "srun --container-image" "the SPANK plugin of this build installed ($(spank_install_cmd "$ROOT/build/plugins")) with $W in its image_dirs"
elif ! cmp -s "$ROOT/build/plugins/mpictr-verify.so" "$SPANK_DIR/mpictr-verify.so"; then
	ok_fail "srun --container-image: the tampered image is refused (no verify plugin installed: closed)" $S --container-image="$W/tampered.sif" echo RAN
	need "srun --container-image runs a signed image" "$SPANK_DIR/mpictr-verify.so is not this build's ($(spank_install_cmd "$ROOT/build/plugins"))"
else
	ok "srun --container-image: the signed image runs" bash -c "$S --container-image='$W/signed.sif' echo RAN 2>&1 | grep -c '^RAN' | grep -qx 2"
	ok_fail "srun --container-image: the tampered image is refused" $S --container-image="$W/tampered.sif" echo RAN
	keep
	ok "... naming it, no task ran" bash -c "grep -q \"image '$W/tampered.sif' refused\" '$W/last' && ! grep -q '^RAN' '$W/last'"
fi
done_testing
