#!/bin/bash
# 10-sif.sh - `mpictr sif list|info|header|create` against the conformance
# images and their siftool golden output, against Debian's siftool on images
# we write and images siftool writes, and on broken input.
. "$(dirname "$0")/lib.sh"

C=$ROOT/../shared/conformance/sif
G=$C/siftool-golden

if [ ! -d "$C" ]; then
	need "conformance images" "missing $C"
	done_testing
	exit
fi

# Golden name -> image. Every image has a List/Header golden except
# one-group-signed-dsse.sif and two-groups-signed-dsse.sif (upstream has
# no golden for them): those are compared with Debian's siftool below.
# Every golden has an image.
golden_image() {
	case $1 in
	Empty) echo empty ;;
	EmptyID) echo empty-id ;;
	EmptyLaunchScript) echo empty-launch-script ;;
	OneGroup) echo one-group ;;
	OneGroupSignedLegacy) echo one-group-signed-legacy ;;
	OneGroupSignedLegacyAll) echo one-group-signed-legacy-all ;;
	OneGroupSignedLegacyGroup) echo one-group-signed-legacy-group ;;
	OneGroupSignedPGP) echo one-group-signed-pgp ;;
	OneObjectCryptMessage) echo one-object-crypt-message ;;
	OneObjectGenericJSON) echo one-object-generic-json ;;
	OneObjectOCIBlob) echo one-object-oci-blob ;;
	OneObjectOCIRootIndex) echo one-object-oci-root-index ;;
	OneObjectSBOM) echo one-object-sbom ;;
	OneObjectTime) echo one-object-time ;;
	TwoGroups) echo two-groups ;;
	TwoGroupsSignedLegacy) echo two-groups-signed-legacy ;;
	TwoGroupsSignedLegacyAll) echo two-groups-signed-legacy-all ;;
	TwoGroupsSignedLegacyGroup) echo two-groups-signed-legacy-group ;;
	TwoGroupsSignedPGP) echo two-groups-signed-pgp ;;
	*) return 1 ;;
	esac
}

for g in "$G"/TestApp_List/*.golden; do
	n=$(basename "$g" .golden)
	img=$(golden_image "$n") || { ok_fail "golden $n has an image" true; continue; }
	ok "list $img.sif = golden $n" bash -c "'$MPICTR' sif list '$C/$img.sif' | cmp - '$g'"
done
for g in "$G"/TestApp_Header/*.golden; do
	n=$(basename "$g" .golden)
	img=$(golden_image "$n") || { ok_fail "golden $n has an image" true; continue; }
	ok "header $img.sif = golden $n" bash -c "'$MPICTR' sif header '$C/$img.sif' | cmp - '$g'"
done
# Info goldens: upstream's TestApp_Info cases (two-groups-signed-pgp for the
# partitions and the signature).
while read -r n img id; do
	ok "info $img.sif $id = golden $n" bash -c "'$MPICTR' sif info '$C/$img.sif' $id | cmp - '$G/TestApp_Info/$n.golden'"
done <<'EOF'
Time one-object-time 1
GenericJSON one-object-generic-json 1
CryptMessage one-object-crypt-message 1
DataPartitionRaw two-groups-signed-pgp 1
DataPartitionSquashFS two-groups-signed-pgp 2
DataPartitionEXT3 two-groups-signed-pgp 3
DataSignature two-groups-signed-pgp 4
OCIBlob one-object-oci-blob 1
OCIRootIndex one-object-oci-root-index 1
SBOM one-object-sbom 1
EOF

have_siftool=0
command -v siftool >/dev/null && have_siftool=1

# Same output as siftool for list, header and every object of an image.
# Debian's siftool 2.8.3 prints "Unknown" for OCI objects (the goldens
# name them), so those images are only compared with the goldens above.
same_as_siftool() { # FILE
	local f=$1 id
	cmp <("$MPICTR" sif list "$f") <(siftool list "$f") || return 1
	cmp <("$MPICTR" sif header "$f") <(siftool header "$f") || return 1
	for id in $("$MPICTR" sif list "$f" | awk -F'|' 'NR>3 {print $1+0}'); do
		cmp <("$MPICTR" sif info "$f" "$id") <(siftool info "$id" "$f") || return 1
	done
}

if [ $have_siftool = 1 ]; then
	for img in one-group-signed-dsse two-groups-signed-dsse; do
		ok "$img.sif (no golden) = siftool list/header/info" same_as_siftool "$C/$img.sif"
	done
else
	need "dsse images vs siftool" "siftool not installed"
fi

# ---- create ------------------------------------------------------------
W=$T_TMP/w
mkdir -p "$W/root/etc" "$W/root/bin"
echo hello >"$W/root/hello.txt"
echo 'Bootstrap: scratch' >"$W/def"
echo 'export FOO=bar' >"$W/env.sh"
echo '{"org.label":"x"}' >"$W/labels.json"
mksquashfs "$W/root" "$W/root.sqfs" -noappend -quiet -no-progress -comp xz >/dev/null

ok_status "create from a squashfs file" 0 "$MPICTR" sif create -o "$W/a.sif" "$W/root.sqfs"
ok "create from a directory with deffile, env and labels" \
	"$MPICTR" sif create -o "$W/b.sif" "$W/root" --deffile "$W/def" --env-script "$W/env.sh" --labels "$W/labels.json"
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; i?86) arch=386 ;; *) arch=$(uname -m) ;; esac
types=$("$MPICTR" sif list "$W/b.sif" | awk -F'|' 'NR>3 {print $5}' | tr '\n' ';')
ok "b.sif lists deffile, env, labels and a primary squashfs partition ($types)" \
	test "$types" = "Def.FILE;Env.Vars;JSON.Labels;FS (Squashfs/*System/$arch);"
ok "partitions are 4 KiB aligned, launch script set" bash -c "
	'$MPICTR' sif info '$W/b.sif' 4 | grep -Eq '^  Offset: +32768$' &&
	head -c 31 '$W/b.sif' | grep -q '^#!/usr/bin/env run-singularity'"
ok "the partition holds the squashfs (unsquashfs at the offset)" bash -c "
	off=\$('$MPICTR' sif info '$W/b.sif' 4 | awk '/Offset:/ {print \$2}') &&
	unsquashfs -o \$off -cat '$W/b.sif' hello.txt | grep -qx hello"
ok "deffile object holds the file" bash -c "
	off=\$('$MPICTR' sif info '$W/b.sif' 1 | awk '/Offset:/ {print \$2}') &&
	tail -c +\$((off + 1)) '$W/b.sif' | head -c 19 | cmp - '$W/def'"
if [ $have_siftool = 1 ]; then
	ok "siftool shows the same as mpictr for a squashfs-made SIF" same_as_siftool "$W/a.sif"
	ok "siftool shows the same as mpictr for a directory-made SIF" same_as_siftool "$W/b.sif"

	# siftool-made images read back exactly.
	S=$W/s.sif
	printf '{}' >"$W/j.json"
	head -c 100 /dev/urandom >"$W/raw"
	ok "siftool new + add (every type it knows)" bash -c "
		siftool new '$S' &&
		siftool add '$S' '$W/def' --datatype 1 &&
		siftool add '$S' '$W/env.sh' --datatype 2 &&
		siftool add '$S' '$W/labels.json' --datatype 3 &&
		siftool add '$S' '$W/root.sqfs' --datatype 4 --parttype 2 --partfs 1 --partarch 2 --groupid 1 &&
		siftool add '$S' '$W/raw' --datatype 4 --parttype 3 --partfs 4 --partarch 4 --groupid 2 &&
		siftool add '$S' '$W/raw' --datatype 5 --signhash 2 --signentity 433FE984155206BD962725E20E8713472A879943 --link 4 &&
		siftool add '$S' '$W/j.json' --datatype 6 --filename meta.json &&
		siftool add '$S' '$W/raw' --datatype 7 --alignment 512 &&
		siftool add '$S' '$W/j.json' --datatype 9 --sbomformat spdx-json"
	ok "siftool-made image: list/header/info identical" same_as_siftool "$S"
else
	need "siftool comparisons" "siftool not installed"
fi
ok "no temporary files left by successful creates" bash -c "[ -z \"\$(ls -A '$W' | grep '^\.')\" ]"

# ---- failures --------------------------------------------------------------
F=$T_TMP/f
mkdir -p "$F"
cat "$C/one-group.sif" >"$F/good.sif"
head -c 100 "$C/one-group.sif" >"$F/short.sif"
cat "$C/one-group.sif" >"$F/magic.sif"
printf 'X' | dd of="$F/magic.sif" bs=1 seek=40 conv=notrunc status=none
cat "$C/one-group.sif" >"$F/beyond.sif"
# descriptor 2's offset (4096 + 585 + 17) := 99999
printf '\x9f\x86\x01\x00\x00\x00\x00\x00' | dd of="$F/beyond.sif" bs=1 seek=4698 conv=notrunc status=none
head -c 20000 "$C/one-group.sif" >"$F/cut.sif"

ok_status "truncated header: exit 255" 255 "$MPICTR" sif list "$F/short.sif"
ok "truncated header: message names the file" bash -c "'$MPICTR' sif list '$F/short.sif' 2>&1 | grep -q \"sif '$F/short.sif': file is too small for a SIF header\""
ok_status "wrong magic: exit 255" 255 "$MPICTR" sif list "$F/magic.sif"
ok "wrong magic: message names the field" bash -c "'$MPICTR' sif list '$F/magic.sif' 2>&1 | grep -q \"sif '$F/magic.sif': not a SIF file (Magic is 'SIF_MAGIX'\""
ok_status "object beyond the end: exit 255" 255 "$MPICTR" sif info "$F/beyond.sif" 1
ok "object beyond the end: exact message" bash -c "'$MPICTR' sif list '$F/beyond.sif' 2>&1 | grep -qx \"mpictr: sif '$F/beyond.sif': descriptor 2 (id 2): object offset 99999 + size 4096 is beyond the end of the file (40960 bytes)\""
ok_status "table cut short: exit 255" 255 "$MPICTR" sif header "$F/cut.sif"
ok "table cut short: one line naming the table" bash -c "[ \$('$MPICTR' sif list '$F/cut.sif' 2>&1 | wc -l) = 1 ] && '$MPICTR' sif list '$F/cut.sif' 2>&1 | grep -q 'descriptor table'"
ok_status "missing file: exit 255" 255 "$MPICTR" sif list "$F/none.sif"
ok_status "unknown object ID: exit 255" 255 "$MPICTR" sif info "$F/good.sif" 7
ok "good image lists after the broken ones" "$MPICTR" sif list "$F/good.sif"

ok_status "create from a non-squashfs file: exit 255" 255 "$MPICTR" sif create -o "$F/out.sif" "$F/magic.sif"
ok "create from a non-squashfs file: message names it" bash -c "'$MPICTR' sif create -o '$F/out.sif' '$F/magic.sif' 2>&1 | grep -q \"source '$F/magic.sif' is neither a squashfs file\""
ok_status "create with a missing --deffile: exit 255" 255 "$MPICTR" sif create -o "$F/out.sif" "$W/root.sqfs" --deffile "$F/nope"
ok_status "create into a missing directory: exit 255" 255 "$MPICTR" sif create -o "$F/no/dir/out.sif" "$W/root.sqfs"
ok_status "create with a failing mksquashfs: exit 255" 255 env MPICTR_MKSQUASHFS=false "$MPICTR" sif create -o "$F/out.sif" "$W/root"
# overwriting (issue 28: it used to replace the file silently)
cp "$W/a.sif" "$F/keep.sif"
ok_status "create over an existing file without --force: exit 255" 255 "$MPICTR" sif create -o "$F/keep.sif" "$W/root"
ok "... says so, names --force, and leaves the file as it was" bash -c "
	'$MPICTR' sif create -o '$F/keep.sif' '$W/root' 2>&1 | grep -q \"sif create: '$F/keep.sif' exists (hint: --force replaces it)\" &&
	cmp -s '$W/a.sif' '$F/keep.sif'"
ok "... refused before mksquashfs runs (no pack, no scratch file)" bash -c "
	! MPICTR_MKSQUASHFS=/nonexistent-mksquashfs '$MPICTR' sif create -o '$F/keep.sif' '$W/root' 2>&1 | grep -q nonexistent-mksquashfs"
ok "create --force replaces it" bash -c "'$MPICTR' sif create --force -o '$F/keep.sif' '$W/root' && ! cmp -s '$W/a.sif' '$F/keep.sif' && '$MPICTR' sif list '$F/keep.sif' | grep -q Squashfs"
rm -f "$F/keep.sif"
if command -v script >/dev/null; then
	ok "on a terminal, create says what it does and shows mksquashfs's progress" bash -c "
		script -qec \"'$MPICTR' sif create -o '$T_TMP/tty.sif' '$W/root'\" /dev/null >'$T_TMP/tty.out' 2>&1
		grep -aq \"packing '$W/root' with mksquashfs\" '$T_TMP/tty.out' && grep -aq '100%' '$T_TMP/tty.out' && grep -aq \"writing '$T_TMP/tty.sif'\" '$T_TMP/tty.out'"
	ok "... and off a terminal, nothing" bash -c "[ -z \"\$('$MPICTR' sif create -o '$T_TMP/notty.sif' '$W/root' 2>&1)\" ]"
else
	need "script (bsdutils)" "a pseudo-terminal for the progress test"
fi
ok "failed creates leave nothing behind" bash -c "[ \"\$(ls -A '$F' | sort | tr '\n' ' ')\" = 'beyond.sif cut.sif good.sif magic.sif short.sif ' ]"

done_testing
