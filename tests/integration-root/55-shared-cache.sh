#!/bin/bash
# 55-shared-cache.sh - a site's shared image cache (docs/security.md,
# "Shared image cache") attacked by one member of its group (A,
# mpictr-test2) against another (V, mpictr-test): a symlinked lock that
# would chmod V's file, symlinks at the temporary names of the layout
# files, A's SIF under the name of the image V runs, a tmp/ swapped for a
# symlink to V's directory before `cache clean`, cache.lock held forever,
# a blob of wrong content. Each check fails on the code before the cache
# was walked by descriptors. Root only switches users and makes the cache
# root (root:mpictr-share) and the group; every mpictr runs unprivileged.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test}
A=${MPICTR_TEST_ATTACKER:-mpictr-test2}
G=mpictr-share
T="timeout -k 5 120"
require_two_users "$A" "$V" "$V"
for tool in docker-registry skopeo umoci python3; do
	command -v "$tool" >/dev/null || { need "registry tools" "$tool not installed"; done_testing; exit; }
done
# the shared group (idempotent; .ci/run may have made it)
groupadd -f "$G" && usermod -aG "$G" "$V" && usermod -aG "$G" "$A" ||
	{ need "group $G" "groupadd/usermod failed"; done_testing; exit; }

W=$(mktemp -d /var/tmp/mpictr-share.XXXXXX) || exit 1
chmod 0755 "$W"
RW=$W/reg
. "$ROOT/tests/integration/registry.sh"
trap 'reg_cleanup; t_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
asv() { runuser -u "$V" -- env HOME="$W/v" MPICTR_PULL_INSECURE="$REG_p" "$@"; }
asa() { runuser -u "$A" -- env HOME="$W/a" MPICTR_PULL_INSECURE="$REG_p" "$@"; }
mkdir -m 0700 "$W/v" "$W/a" && chown "$V:" "$W/v" && chown "$A:" "$W/a"

# The site's cache as docs/admin.md says: root's, the group's, 3775; its
# layout made once by its owner (root here) with `mpictr cache list`.
newcache() {
	mkdir "$1" && chgrp "$G" "$1" && chmod 3775 "$1" &&
		"$MPICTR" cache list --cache-dir "$1" >/dev/null
}

reg_start p plain || { need "registry" "docker-registry did not start"; done_testing; exit; }
img_busybox "$W/bb" && push "$W/bb" "$REG_p/test/busybox:1" ||
	{ need "test image" "umoci/skopeo failed"; done_testing; exit; }
DIGEST=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://$REG_p/v2/test/busybox/manifests/1" | sed -n 's/^Docker-Content-Digest: *\(sha256:[0-9a-f]*\).*/\1/p')
HEX=${DIGEST#sha256:}
IMG="docker://$REG_p/test/busybox@$DIGEST"

# ---- 1. a lock symlinked to V's file (locks are made when first needed) -------------
C=$W/c1
newcache "$C"
printf 'secret\n' >"$W/v/secret" && chown "$V:" "$W/v/secret" && chmod 0600 "$W/v/secret"
chmod 0711 "$W/v" # A may name the path, not list or read it
asa ln -s "$W/v/secret" "$C/locks/image-$HEX.lock"
asv $T env MPICTR_CACHEDIR="$C" "$MPICTR" pull -q --insecure "$REG_p" "$IMG" "$W/v/one.sif" >"$W/out1" 2>&1
check "1. a member's symlink at the image's lock: V's file keeps mode 0600" \
	test "$(stat -c %a "$W/v/secret")" = 600
check "... and the symlink is refused (named), not followed" grep -q "image-$HEX.lock" "$W/out1"

# ---- 2. symlinks at the temporary names of the layout files --------------------------
C=$W/c2
newcache "$C"
rm -f "$C/index.json" "$C/oci-layout" # as a member could, were the root not sticky
printf 'mine\n' >"$W/v/file" && chown "$V:" "$W/v/file" && chmod 0644 "$W/v/file"
rm -f "$W/go" "$W/v/pid"
runuser -u "$V" -- bash -c 'echo $$ >"$1/v/pid.tmp"; mv "$1/v/pid.tmp" "$1/v/pid"
	while [ ! -e "$1/go" ]; do sleep 0.05; done
	exec env HOME="$1/v" "$2" cache list --cache-dir "$3"' _ "$W" "$MPICTR" "$C" >/dev/null 2>&1 &
VJOB=$!
for _ in $(seq 100); do [ -s "$W/v/pid" ] && break; sleep 0.05; done
VPID=$(cat "$W/v/pid")
asa bash -c 'for n in oci-layout index.json; do ln -s "$2" "$1/tmp/$n.$3"; done' _ "$C" "$W/v/file" "$VPID"
touch "$W/go"
wait "$VJOB"
check "2. symlinks at tmp/index.json.PID: V's file is not overwritten" \
	test "$(cat "$W/v/file")" = mine
check "... and the layout files are there all the same" test -s "$C/index.json" -a -s "$C/oci-layout"

# ---- 3. A's SIF under the name of the image V runs ----------------------------------
C=$W/c3
newcache "$C"
cp -r "$W/bb" "$W/evil" && umoci config --image "$W/evil:latest" --config.env GREETING=evil >/dev/null &&
	chmod -R a+rX "$W/evil"
asa $T "$MPICTR" pull -q "oci:$W/evil:latest" "$W/a/evil.sif"
ok "3. A's SIF planted as images/sha256/HEX.sif (A's file)" \
	asa cp "$W/a/evil.sif" "$C/images/sha256/$HEX.sif"
asv $T env MPICTR_CACHEDIR="$C" "$MPICTR" exec "$IMG" sh -c 'echo "greeting=$GREETING"' >"$W/out3" 2>&1
check "... V's exec of that digest does not run A's image" sh -c "! grep -q greeting=evil '$W/out3'"
check "... it runs the image V pulled" grep -q greeting=hello "$W/out3"
check "... V's own SIF beside A's, writable by V only" \
	test "$(stat -c '%U %a' "$C/images/sha256/$HEX.$(id -u "$V").sif")" = "$V 755"
reg_stop p
asv $T env MPICTR_CACHEDIR="$C" "$MPICTR" exec "$IMG" sh -c 'echo "greeting=$GREETING"' >"$W/out3b" 2>&1
check "... and runs again from it, registry stopped" grep -q greeting=hello "$W/out3b"
reg_start p plain && push "$W/bb" "$REG_p/test/busybox:1"
IMG="docker://$REG_p/test/busybox@$DIGEST"

# ---- 4. tmp/ swapped for a symlink to V's directory, then `cache clean` ------------
# (a) the layout docs/pull.md advised before: 2775, its directories made
# 2775 by the first member to use it (V, as mpictr did then)
C=$W/c4
mkdir "$C" && chgrp "$G" "$C" && chmod 2775 "$C"
mkdir -m 0700 "$W/v/keep" && for i in 1 2 3 4 5 6 7; do echo "$i" >"$W/v/keep/f$i"; done
chown -R "$V:" "$W/v/keep"
asv bash -c 'for s in blobs blobs/sha256 images images/sha256 refs locks tmp; do
	mkdir -m 2775 "$1/$s"; done' _ "$C"
asa bash -c 'mv "$1/tmp" "$1/tmp.old" && ln -s "$2" "$1/tmp"' _ "$C" "$W/v/keep"
asv $T "$MPICTR" cache clean --tmp --cache-dir "$C" >"$W/out4" 2>&1
check "4. a member's symlink at tmp/: cache clean leaves V's 7 files" \
	test "$(ls "$W/v/keep" | wc -l)" = 7
# (b) the layout now advised: sticky, so a member cannot even swap it
C=$W/c4b
newcache "$C"
ok_fail "... in a sticky (3775) cache a member cannot rename tmp/" \
	asa mv "$C/tmp" "$C/tmp.old"
asa ln -s "$W/v/keep" "$C/tmp/link"
asa mkdir "$C/tmp/adir"
asa ln -s "$W/v/keep" "$C/tmp/adir/link"
ok "... V's clean of it succeeds (A's entries kept)" asv $T "$MPICTR" cache clean --tmp --cache-dir "$C"
check "... and removes nothing through A's links" test "$(ls "$W/v/keep" | wc -l)" = 7

# ---- 12a. cache.lock held forever by a member -----------------------------------------
C=$W/c12
newcache "$C"
asv $T "$MPICTR" cache list --cache-dir "$C" >/dev/null 2>&1
asa python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").write("locked")
for _ in range(600):
	if not os.path.exists(sys.argv[2]): break
	time.sleep(0.1)' "$C/locks/cache.lock" "$W/a/locked" &
HOLDER=$!
for _ in $(seq 100); do [ -s "$W/a/locked" ] && break; sleep 0.05; done
S=$SECONDS
asv timeout -k 2 30 env MPICTR_CACHE_LOCK_WAIT=3 "$MPICTR" cache list --cache-dir "$C" >"$W/out12" 2>&1
RC=$?
check "12a. cache.lock held by a member: V's run ends (exit 255)" test "$RC" = 255
check "... after the bound (3 s), not sooner, not much later" test $((SECONDS - S)) -ge 3 -a $((SECONDS - S)) -le 15
check "... naming the holder's uid" grep -q "uid $(id -u "$A")" "$W/out12"
rm -f "$W/a/locked" # the holder ends
wait "$HOLDER" 2>/dev/null

# ---- 12b. a blob of wrong content planted by a member -------------------------------
C=$W/c12b
newcache "$C"
LAYER=$(skopeo inspect --raw --tls-verify=false "docker://$REG_p/test/busybox:1" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"])')
SIZE=$(curl -sI "http://$REG_p/v2/test/busybox/blobs/$LAYER" | sed -n 's/^Content-Length: *\([0-9]*\).*/\1/Ip' | tr -d '\r')
asa bash -c 'head -c "$2" /dev/zero >"$1"; chmod 0644 "$1"' _ "$C/blobs/sha256/${LAYER#sha256:}" "$SIZE"
check "12b. (A's blob is planted: $SIZE bytes)" test "$(stat -c '%U %s' "$C/blobs/sha256/${LAYER#sha256:}")" = "$A $SIZE"
ok "... a planted blob of the right size, wrong content: V's pull succeeds" \
	asv $T env MPICTR_CACHEDIR="$C" "$MPICTR" pull -q --insecure "$REG_p" "$IMG" "$W/v/pulled.sif"
asv $T "$MPICTR" exec "$W/v/pulled.sif" sh -c 'echo "greeting=$GREETING"' >"$W/out12b" 2>&1
check "... the image is the registry's" grep -q greeting=hello "$W/out12b"
check "... A's blob is left as it was, V's copy beside it" \
	test -s "$C/blobs/sha256/${LAYER#sha256:}.$(id -u "$V")"

# ---- members share the cache: pulls by tag, one after the other ---------------------
C=$W/c13
newcache "$C"
ok "both members pull by tag into the shared cache (V, then A)" sh -c "
	runuser -u '$V' -- env HOME='$W/v' MPICTR_CACHEDIR='$C' $T '$MPICTR' pull -q --insecure '$REG_p' --dir '$W/v' 'docker://$REG_p/test/busybox:1' &&
	runuser -u '$A' -- env HOME='$W/a' MPICTR_CACHEDIR='$C' $T '$MPICTR' pull -q --insecure '$REG_p' --dir '$W/a' 'docker://$REG_p/test/busybox:1'"
asa env MPICTR_CACHEDIR="$C" "$MPICTR" cache list >"$W/list" 2>&1
check "... cache list names the tag" grep -q "test/busybox:1" "$W/list"
done_testing
