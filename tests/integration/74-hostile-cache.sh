#!/bin/bash
# 74-hostile-cache.sh - a hostile image against the user's own image cache,
# which lies in the bound $HOME (docs/security.md, "Shared image cache"):
# a program in the container replaces the SIF of another image the user
# pulled, deletes the cache's images, and swaps tmp/ for a symlink to a
# host directory before the user's `cache clean --tmp`. A later run of the
# other image must run what was pulled, and the host directory must stay.
. "$(dirname "$0")/lib.sh"
T="timeout -k 5 120"
require_userns_fuse
for tool in docker-registry skopeo umoci; do
	command -v "$tool" >/dev/null || { need "registry tools" "$tool is not installed"; done_testing; exit; }
done
. "$ROOT/tests/integration/registry.sh"
trap 'reg_cleanup; t_cleanup' EXIT
W=$T_TMP
export HOME=$W/home
mkdir -p "$HOME"
unset XDG_CACHE_HOME MPICTR_CACHEDIR
CACHE=$HOME/.cache/mpictr

reg_start p plain || { need "registry" "docker-registry did not start"; done_testing; exit; }
img_busybox "$W/bb" && push "$W/bb" "$REG_p/test/busybox:1" ||
	{ need "test image" "umoci/skopeo failed"; done_testing; exit; }
DIGEST=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://$REG_p/v2/test/busybox/manifests/1" | sed -n 's/^Docker-Content-Digest: *\(sha256:[0-9a-f]*\).*/\1/p')
IMG="docker://$REG_p/test/busybox@$DIGEST"
SIF=$CACHE/images/sha256/${DIGEST#sha256:}.sif
export MPICTR_PULL_INSECURE=$REG_p

# the hostile image: the same busybox, GREETING=evil, with a SIF of itself
cp -r "$W/bb" "$W/evil" && umoci config --image "$W/evil:latest" --config.env GREETING=evil >/dev/null
ok "the user pulls an image into the cache in \$HOME" $T "$MPICTR" exec "$IMG" sh -c 'echo "greeting=$GREETING"'
check "... it is there" test -s "$SIF"
ok "a hostile image is pulled to a file" $T "$MPICTR" pull -q "oci:$W/evil:latest" "$W/evil.sif"
SUM=$(sha256sum <"$SIF")
mkdir -p "$W/hostdir" && for i in 1 2 3 4 5 6 7; do echo "$i" >"$W/hostdir/f$i"; done

# The hostile program: replace the other image's SIF (by rename, then in
# place), swap tmp/ for a symlink to a host directory (its name is all it
# needs). Each step may fail; what it managed is what counts.
cd "$W" || exit 1
$T "$MPICTR" exec "$W/evil.sif" sh -c '
	cp "$1" "$2.new" && mv -f "$2.new" "$2"
	cat "$1" >"$2"
	rm -rf "$3/tmp" && ln -s "$4" "$3/tmp"
	true' _ "$W/evil.sif" "$SIF" "$CACHE" "$W/hostdir" >"$W/hostile.out" 2>&1
check "the hostile program could not change the other image's SIF" test "$(sha256sum <"$SIF" 2>&1)" = "$SUM"
check "... nor swap the cache's tmp/ for a symlink" test -d "$CACHE/tmp" -a ! -L "$CACHE/tmp"
reg_stop p
check "(the registry is stopped: the run cannot pull again)" sh -c "! curl -s 'http://$REG_p/v2/' >/dev/null"
$T "$MPICTR" exec "$IMG" sh -c 'echo "greeting=$GREETING"' >"$W/after.out" 2>&1
check "a later run of the other image runs what was pulled" grep -q greeting=hello "$W/after.out"
check "... not the hostile image" sh -c "! grep -q greeting=evil '$W/after.out'"
$T "$MPICTR" cache clean --tmp >"$W/clean.out" 2>&1
check "cache clean --tmp leaves the host directory's 7 files" test "$(ls "$W/hostdir" | wc -l)" = 7
done_testing
