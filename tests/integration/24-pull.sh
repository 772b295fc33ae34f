#!/bin/bash
# 24-pull.sh - `mpictr pull` from the local sources (oci:, oci-archive:,
# docker-archive:): the top-down layer merge against umoci's unpack of the
# same image, the SIF it writes, and the bad inputs it refuses. Fixtures
# are made here: layer tars by pull-fixture.py (owners, devices, xattrs
# need no privilege there), assembled into layouts by umoci, converted by
# skopeo.
. "$(dirname "$0")/lib.sh"
W=$T_TMP
FX="python3 $ROOT/tests/integration/pull-fixture.py"
T="timeout 120"

for tool in umoci skopeo sqfsdiff mksquashfs unsquashfs rdsquashfs siftool; do
	if ! command -v "$tool" >/dev/null; then
		need "pull tests" "$tool not installed (tests/deps/debian-packages.txt)"
		done_testing
		exit
	fi
done

# layout DIR TAG TAR...: an OCI layout DIR whose image TAG has the layers
layout() {
	local d=$1 tag=$2 prev=base t
	shift 2
	umoci init --layout "$d" && umoci new --image "$d:base" || return 1
	for t in "$@"; do
		umoci raw add-layer --image "$d:$prev" --tag "$tag" "$t" || return 1
		prev=$tag
	done
}
# part SIF OUT: the squashfs partition of a SIF written by mpictr pull
part() { dd if="$1" of="$2" bs=4096 skip=8 status=none; }
# nothing_left DIR: no file but those named (no temporary) in DIR
leftovers() { find "$1" -maxdepth 1 -name '.*.pull.*' | grep -q . && echo "temporary left in $1"; return 0; }

# one_layer GZ DIR: a hand-made layout of one tar+gzip layer GZ, taken as
# it is (umoci would compress it again), tag y.
one_layer() {
	python3 - "$1" "$2" <<'EOF'
import hashlib, json, os, sys
src, d = sys.argv[1:3]
os.makedirs(d + "/blobs/sha256")
def blob(b):
    h = hashlib.sha256(b).hexdigest()
    open(d + "/blobs/sha256/" + h, "wb").write(b)
    return {"digest": "sha256:" + h, "size": len(b)}
cfg = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]}}).encode())
cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
l = blob(open(src, "rb").read())
l["mediaType"] = os.environ.get("MT", "application/vnd.oci.image.layer.v1.tar+gzip")
m = blob(json.dumps({"schemaVersion": int(os.environ.get("SV", "2")),
    "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": [l]}).encode())
m["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
if os.environ.get("INDEX_ARCH"):  # wrap it in an index for that platform only
    m["platform"] = {"os": "linux", "architecture": os.environ["INDEX_ARCH"]}
    att = dict(m, platform={"os": "unknown", "architecture": "unknown"})
    m = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [att, m]}).encode())
    m["mediaType"] = "application/vnd.oci.image.index.v1+json"
m["annotations"] = {"org.opencontainers.image.ref.name": "y"}
open(d + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [m]}))
open(d + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
EOF
}
# strip_rootless DIR: drop the user.rootlesscontainers xattrs in which a
# rootless umoci unpack keeps the owners it could not set
strip_rootless() {
	python3 -c 'import os, sys
for d, ds, fs in os.walk(sys.argv[1]):
    for n in ds + fs:
        p = os.path.join(d, n)
        if "user.rootlesscontainers" in os.listxattr(p, follow_symlinks=False):
            os.removexattr(p, "user.rootlesscontainers", follow_symlinks=False)' "$1"
}
# saved: the output of the last ok/ok_status, for the checks after it
saved() { cp "$T_OUT" "$W/last"; }
cd "$W" || exit 1
mkdir fx && $FX merge fx
ok "fixture layout (3 layers) built with umoci" \
	layout fx/L img fx/l1.tar fx/l2.tar fx/l3.tar
ok "a zstd-compressed copy of the layout (skopeo)" \
	skopeo copy -q --dest-compress --dest-compress-format zstd oci:fx/L:img oci:fx/Z:img
ok "skopeo: docker-archive and oci-archive of the image" \
	sh -c 'skopeo copy -q oci:fx/L:img docker-archive:fx/d.tar:test/fx:1 &&
		skopeo copy -q oci:fx/L:img oci-archive:fx/o.tar:img'

ok "pull oci:DIR:REF" $T "$MPICTR" pull oci:fx/L:img fx/oci.sif
saved
check "summary counts the 3 layers and the 2 dropped devices" \
	grep -q '3 layers, .* 2 device nodes dropped' "$W/last"
ok "pull docker-archive:FILE" $T "$MPICTR" pull -q docker-archive:fx/d.tar fx/da.sif
ok "pull docker-archive:FILE:REPO:TAG" $T "$MPICTR" pull -q docker-archive:fx/d.tar:test/fx:1 fx/da2.sif
ok "pull oci-archive:FILE:REF" $T "$MPICTR" pull -q oci-archive:fx/o.tar:img fx/oa.sif
ok "pull oci-archive:FILE (its only image)" $T "$MPICTR" pull -q oci-archive:fx/o.tar fx/oa2.sif
ok "pull oci:DIR:REF, zstd layers" $T "$MPICTR" pull -q oci:fx/Z:img fx/zst.sif
for f in oci da da2 oa oa2 zst; do part fx/$f.sif fx/$f.sqfs; done
for f in da da2 oa oa2 zst; do
	check "$f: the same squashfs, byte for byte, as from oci:" cmp fx/oci.sqfs fx/$f.sqfs
done
ok "the same image pulled again: the same SIF, byte for byte" \
	sh -c "$T '$MPICTR' pull -q oci:fx/L:img fx/again.sif && cmp fx/oci.sif fx/again.sif && cmp fx/oci.sif fx/oa.sif"
ok "pulled with TMPDIR unusable: nothing is written there" \
	env TMPDIR=/nonexistent/tmp $T "$MPICTR" pull -q oci:fx/L:img fx/notmp.sif
check "libmpictr and the mpictr executable link none of the pull libraries" \
	sh -c "! ldd '$ROOT/build/mpictr' '$ROOT'/build/libmpictr.so.* | grep -E 'libarchive|libsquashfs|libjansson|libcurl|libcrypto'"
check "the pull plugin does" sh -c "ldd '$ROOT/build/plugins/mpictr-pull.so' | grep -q libsquashfs"
ok "siftool accepts the SIF" siftool list fx/oci.sif
saved
check "siftool: a squashfs system partition and a JSON.Generic object" \
	sh -c "grep -q 'FS (Squashfs/\*System' $W/last && grep -q JSON.Generic $W/last"
ok "the JSON object is named oci-config.json" sh -c "siftool info 2 fx/oci.sif | grep -q oci-config.json"

# The reference: umoci unpack --rootless of the same image, with the
# /.singularity.d files mpictr adds, packed by mksquashfs.
ok "reference: umoci unpack --rootless" umoci unpack --rootless --image fx/L:img fx/ref
unsquashfs -f -q -d fx/ref/rootfs fx/oci.sqfs /.singularity.d >/dev/null 2>&1
strip_rootless fx/ref/rootfs
ok "reference: mksquashfs" mksquashfs fx/ref/rootfs fx/ref.sqfs -comp zstd -noappend -quiet -no-progress
sqfsdiff -O -a fx/ref.sqfs -b fx/oci.sqfs >fx/diff 2>&1
check "sqfsdiff (content, mode): equal but for the two devices umoci could not make" \
	sh -c '! grep -v -e "^< dev/null$" -e "^< dev/loop0$" fx/diff'
unsquashfs -lln fx/oci.sqfs 2>&1 | sed 's| squashfs-root| |' >fx/ls
check "owner 1234:5678 kept (pulled unprivileged)" grep -q -- '-rw-r----- 1234/5678 .* /owned$' fx/ls
check "setuid bit kept in the image" grep -q -- '-rwsr-xr-x 0/0 .* /suid$' fx/ls
check "setgid directory of 1234:5678 kept" grep -q 'drwxrwsr-x 1234/5678 .* /owned-dir$' fx/ls
check "FIFO kept" grep -q '^p.* /fifo$' fx/ls
check "devices dropped" sh -c '! grep -q -e /dev/null -e /dev/loop0 fx/ls'
check "file whiteout: etc/gone is gone" sh -c '! grep -q /etc/gone fx/ls'
check "directory whiteout, recreated above: only deleted-dir/c" \
	sh -c '[ "$(grep -c " /deleted-dir/" fx/ls)" = 1 ] && grep -q /deleted-dir/c fx/ls'
check "opaque directory: only opq/new1, mode of the upper entry" \
	sh -c '[ "$(grep -c " /opq/" fx/ls)" = 1 ] && grep -q "drwxr-xr-x .* /opq$" fx/ls'
check "symlink replaced by a directory" grep -q '^d.* /link-to-dir$' fx/ls
check "200-character name and a 40-deep path" \
	sh -c 'grep -q "/nnnnnnnnnnnnnnnnnnnn" fx/ls && grep -q "deep/deep/leaf$" fx/ls'
check "upper file wins (etc/passwd of layer 3)" \
	sh -c '[ "$(unsquashfs -cat fx/oci.sqfs /etc/passwd)" = "root:x:0:0::/:/bin/sh" ]'
check "hardlink to a same-layer target hidden from above keeps layer 2's data" \
	sh -c '[ "$(unsquashfs -cat fx/oci.sqfs /shadow-link)" = "layer 2'"'"'s shadow" ] &&
		[ "$(unsquashfs -cat fx/oci.sqfs /shadow)" = "layer 3'"'"'s shadow" ]'
check "hardlink across layers has its target's data" \
	sh -c '[ "$(unsquashfs -cat fx/oci.sqfs /hl-cross)" = "cross-layer hardlink target" ]'
check "hardlinks within a layer share one inode, nlink 3" \
	sh -c 'for f in same-a same-b same-c; do rdsquashfs -s /$f fx/oci.sqfs | grep -i -e "inode number" -e "link count"; done | sort | uniq -c | grep -c "^ *3 " | grep -qx 2'
check "xattr user.mpictr kept" sh -c 'rdsquashfs -x /xattr fx/oci.sqfs | grep -q "user.mpictr=yes"'

# Differential: random stacks of whiteouts, opaque directories, files,
# directories and symlinks, merged by mpictr and by umoci (rootless
# unpack, then mksquashfs), compared by sqfsdiff (content, mode).
diff_stack() { # SEED
	local s=$1 d=rand/$1 i prev=base
	mkdir -p "$d" && $FX random "$s" "$d" && umoci init --layout "$d/L" && umoci new --image "$d/L:base" || return 1
	for i in 0 1 2; do
		umoci raw add-layer --image "$d/L:$prev" --tag "t$i" "$d/r$i.tar" || return 1
		prev=t$i
	done
	"$MPICTR" pull -q "oci:$d/L:t2" "$d/x.sif" || { echo "seed $s: mpictr refused"; return 1; }
	umoci unpack --rootless --image "$d/L:t2" "$d/ref" >/dev/null 2>&1 || { echo "seed $s: umoci refused"; return 1; }
	part "$d/x.sif" "$d/x.sqfs"
	unsquashfs -f -q -d "$d/ref/rootfs" "$d/x.sqfs" /.singularity.d >/dev/null 2>&1
	strip_rootless "$d/ref/rootfs"
	mksquashfs "$d/ref/rootfs" "$d/ref.sqfs" -noappend -quiet -no-progress >/dev/null 2>&1 &&
		sqfsdiff -O -a "$d/ref.sqfs" -b "$d/x.sqfs" >"$d/diff" 2>&1 || { echo "seed $s:"; head -5 "$d/diff"; return 1; }
}
diff_stacks() {
	local s bad=0
	for s in $(seq "${PULL_DIFF_SEEDS:-30}"); do diff_stack "$s" >>rand.log 2>&1 || bad=$((bad + 1)); done
	cat rand.log
	[ "$bad" = 0 ]
}
mkdir rand
ok "${PULL_DIFF_SEEDS:-30} random layer stacks: mpictr pull equals umoci unpack --rootless + mksquashfs (sqfsdiff: content, mode)" diff_stacks

mkdir ro && $FX rootopq ro && layout ro/L img ro/r1.tar ro/r2.tar >/dev/null 2>&1
ok "an opaque root directory: pulled" $T "$MPICTR" pull -q oci:ro/L:img ro/ro.sif
part ro/ro.sif ro/ro.sqfs
check "... hides every top-level entry of the lower layer" \
	sh -c '[ "$(unsquashfs -lc ro/ro.sqfs 2>/dev/null | sed "s|^squashfs-root/||" | grep -v "^\.singularity\.d" | sort | tr "\n" " ")" = "c " ]'

# An existing OUT.
ok_status "existing OUT refused without --force" 255 "$MPICTR" pull -q oci:fx/L:img fx/oci.sif
saved
check "the message names the file and the option" grep -q "fx/oci.sif.*exists.*--force" "$W/last"
ok "--force replaces it" "$MPICTR" pull -q --force oci:fx/L:img fx/oci.sif
check "no temporary left beside the target" sh -c "! leftovers fx | grep -q ."

# Bad inputs: each refused with exit 255 naming the image and the cause,
# no OUT, no temporary.
mkdir bad
bad_case() { # NAME PATTERN
	local b=$1 pat=$2
	$FX bad "$b" bad/$b.tar && layout bad/$b y bad/$b.tar >/dev/null 2>&1
	ok_status "bad layer ($b): exit 255" 255 $T "$MPICTR" pull oci:bad/$b:y bad/$b.sif
	saved
	check "bad layer ($b): names the image, the member and the cause" \
		grep -q "oci:bad/$b:y.*layer 1.*$pat" "$W/last"
	check "bad layer ($b): no SIF, no temporary" \
		sh -c "[ ! -e bad/$b.sif ] && ! find bad -name '.$b.sif.*' | grep -q ."
}
bad_case dotdot "member '../escape'.*'\.\.'"
bad_case absolute "member '/etc/evil'.*absolute"
bad_case under-symlink "member 'esc/f'.*under a symlink"
bad_case hardlink-outside "member 'hl'.*hardlink outside the image"
bad_case hardlink-dir "member 'hl'.*hardlink to a directory"
bad_case hardlink-nothing "member 'hl'.*hardlink to nothing"
bad_case bare-whiteout "bin/\.wh\.'.*bare whiteout"

$FX bomb bad/bomb.tar.gz 400 && one_layer bad/bomb.tar.gz bad/bomb
gzip -9 -n -c fx/l2.tar | gzip -1 -n >bad/twice.tar.gz
one_layer bad/twice.tar.gz bad/twice
ok_status "a layer compressed twice (gzip over gzip): exit 255" 255 $T "$MPICTR" pull oci:bad/twice:y bad/twice.sif
saved
check "... says so" grep -q "layer 1 (sha256:.*) is compressed twice (gzip over gzip)" "$W/last"

gzip -n -c fx/l3.tar >bad/l3.tar.gz
SV=1 one_layer bad/l3.tar.gz bad/schema1
ok_status "schema 1 manifest: exit 255" 255 $T "$MPICTR" pull oci:bad/schema1:y bad/s1.sif
saved
check "... says only schema 2 is supported" grep -q "manifest schema version 1: only schema 2" "$W/last"
MT=application/vnd.docker.image.rootfs.foreign.diff.tar.gzip one_layer bad/l3.tar.gz bad/foreign
ok_status "foreign layer: exit 255" 255 $T "$MPICTR" pull oci:bad/foreign:y bad/foreign.sif
saved
check "... names it" grep -q "layer 1 is a foreign layer" "$W/last"
INDEX_ARCH=s390x one_layer bad/l3.tar.gz bad/arm
ok_status "an index with only linux/s390x: exit 255" 255 $T "$MPICTR" pull oci:bad/arm:y bad/arm.sif
saved
check "... lists the platforms there are (not the attestation) and names --arch, as a registry pull does" \
	grep -q "no manifest for linux/[a-z0-9/]* in its index (it has: linux/s390x).*--arch" "$W/last"
ok "--arch s390x picks it" $T "$MPICTR" pull -q --arch s390x oci:bad/arm:y bad/arm.sif
ok_status "a layer expanding more than 100x: exit 255" 255 $T "$MPICTR" pull oci:bad/bomb:y bad/bomb.sif
saved
check "... says so and names the flag" grep -q "expands to more than 100 times.*--no-expansion-limit" "$W/last"
ok "--no-expansion-limit lifts it" $T "$MPICTR" pull -q --no-expansion-limit oci:bad/bomb:y bad/bomb.sif

cp -a fx/L bad/flip
m=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "img") | .digest' fx/L/index.json)
blob=bad/flip/blobs/sha256/$(jq -r '.layers[1].digest' "fx/L/blobs/sha256/${m#sha256:}" | cut -c8-)
chmod u+w "$blob" && printf 'X' | dd of="$blob" bs=1 seek=100 conv=notrunc status=none
ok_status "layer digest mismatch in a layout: exit 255" 255 $T "$MPICTR" pull oci:bad/flip:img bad/flip.sif
saved
check "... names the layer and both digests" grep -q "layer 2: digest mismatch: the blob is sha256:.*the manifest says" "$W/last"
check "... no SIF" test ! -e bad/flip.sif
cp -a fx/L bad/long && chmod -R u+w bad/long && printf 'X' >>"bad/long/${blob#bad/flip/}"
ok_status "layer longer than its descriptor: exit 255" 255 $T "$MPICTR" pull oci:bad/long:img bad/long.sif
saved
check "... names the layer and both sizes" grep -q "layer 2 (sha256:.*) is [0-9]* bytes, the manifest says [0-9]*" "$W/last"

# A config with a duplicate key, and an oversize manifest (made by hand:
# umoci writes neither).
edit_manifest() { # DIR PYTHON-ON-m-AND-c
	python3 - "$1" "$2" <<'EOF'
import hashlib, json, os, sys
d, code = sys.argv[1], sys.argv[2]
def blob(b):
    h = hashlib.sha256(b).hexdigest()
    p = os.path.join(d, "blobs/sha256", h)
    if not os.path.exists(p):
        open(p, "wb").write(b)
    return "sha256:" + h, len(b)
idx = json.load(open(os.path.join(d, "index.json")))
md = [x for x in idx["manifests"] if x["annotations"]["org.opencontainers.image.ref.name"] == "img"][0]
m = json.load(open(os.path.join(d, "blobs/sha256", md["digest"][7:])))
c = open(os.path.join(d, "blobs/sha256", m["config"]["digest"][7:]), "rb").read()
exec(code)
m["config"]["digest"], m["config"]["size"] = blob(c)
mb = json.dumps(m).encode()
if "pad" in dir():
    mb = mb[:-1] + b', "x": "' + b"p" * pad + b'"}'
md["digest"], md["size"] = blob(mb)
idx["manifests"] = [md]
open(os.path.join(d, "index.json"), "w").write(json.dumps(idx))
EOF
}
cp -a fx/L bad/dup && chmod -R u+w bad/dup
edit_manifest bad/dup 'c = c[:c.rindex(b"}")] + b", \"os\": \"linux\"}"'
ok_status "duplicate JSON key in the config: exit 255" 255 $T "$MPICTR" pull oci:bad/dup:img bad/dup.sif
saved
check "... names the document and the key" grep -q "image config: invalid JSON.*duplicate.*os" "$W/last"
cp -a fx/L bad/big && chmod -R u+w bad/big
edit_manifest bad/big 'pad = 5 << 20'
ok_status "manifest over 4 MiB: exit 255" 255 $T "$MPICTR" pull oci:bad/big:img bad/big.sif
saved
check "... says how big and the limit" grep -q "manifest: [0-9]* bytes, at most 4194304" "$W/last"

# A full disk: a 20 KiB tmpfs in a user namespace.
if have_userns; then
	mkdir full
	ok_status "full disk: exit 255" 255 unshare -rm sh -c \
		"mount -t tmpfs -o size=20k none full && $MPICTR pull oci:fx/L:img full/x.sif; rc=\$?; ls -A full; exit \$rc"
	saved
	check "... says 'No space left on device'" grep -q "No space left on device" "$W/last"
	check "... and leaves nothing in the directory" sh -c "! grep -v '^mpictr' $W/last"
else
	need "full disk" "no user namespaces"
fi

ok_status "no SOURCE: usage error" 255 "$MPICTR" pull
ok_status "unknown transport" 255 "$MPICTR" pull ftp://x/y
saved
check "... names the reference" grep -q "image reference 'ftp://x/y'" "$W/last"
done_testing
