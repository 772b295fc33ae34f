#!/bin/bash
# 92-pull-cache.sh - `make bench`: what a pull costs once the image is in
# the cache (docs/pull.md). A loopback docker-registry with the busybox
# test image (64 MiB payload); `mpictr pull` again by tag (one HEAD) and by
# digest (no request), `mpictr exec docker://...` of the cached image by
# tag and by digest, against `skopeo inspect --raw` of the same tag (one
# manifest request: the peer's cheapest look at a registry) and `mpictr
# exec` of the cached SIF by path, interleaved round-robin, medians and
# ratios; plus the first pull's wall time and peak RSS. Writes
# build/bench/92-pull-cache.md (and docs/bench-pull-cache.md unless
# BENCH_DOCS=0). Knobs: MPICTR_BENCH_QUICK=1, BENCH_PULL_ROUNDS (20; quick 5).
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=${BENCH_PULL_ROUNDS:-$([ "$QUICK" = 1 ] && echo 5 || echo 20)}
DOC=$ROOT/docs/bench-pull-cache.md
bench_needs docker-registry skopeo umoci python3
bench_built
bench_registry
[ ${#AS[@]} -gt 0 ] && chmod 0755 "$W"
reg_start p plain >/dev/null || { echo "92-pull-cache: docker-registry did not start"; exit 1; }
PAYLOAD_MB=64 img_busybox "$W/bb" && push "$W/bb" "$REG_p/test/busybox:1" ||
	{ echo "92-pull-cache: the test image failed"; exit 1; }
D=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://$REG_p/v2/test/busybox/manifests/1" | sed -n 's/^Docker-Content-Digest: *\(sha256:[0-9a-f]*\).*/\1/p')
C=$W/cache
mkdir -p "$C" && [ ${#AS[@]} -gt 0 ] && chown "$RUNUSER" "$C" && chmod 0700 "$C"
FIRST=$("${AS[@]}" env HOME="$W" MPICTR_CACHEDIR="$C" /usr/bin/time -f '%e %M' \
	"$MPICTR" pull -q --insecure "$REG_p" "docker://$REG_p/test/busybox:1" 2>&1 | tail -1)
SIF=$C/images/sha256/${D#sha256:}.sif
[ -s "$SIF" ] || { echo "92-pull-cache: the first pull failed: $FIRST"; exit 1; }

V=$W/variants
E="MPICTR_CACHEDIR=$C MPICTR_PULL_INSECURE=$REG_p"
{
	echo "skopeo-inspect skopeo inspect --raw --tls-verify=false docker://$REG_p/test/busybox:1"
	echo "pull-tag $E $MPICTR pull -q --insecure $REG_p docker://$REG_p/test/busybox:1"
	echo "pull-digest $E $MPICTR pull -q --insecure $REG_p docker://$REG_p/test/busybox@$D"
	echo "exec-sif $E $MPICTR exec $SIF /bin/sh -c true"
	echo "exec-tag $E $MPICTR exec docker://$REG_p/test/busybox:1 /bin/sh -c true"
	echo "exec-digest $E $MPICTR exec docker://$REG_p/test/busybox@$D /bin/sh -c true"
} >"$V"
L0=$(cut -d' ' -f1-3 /proc/loadavg)
(cd "$W" && "${AS[@]}" env HOME="$W" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 2 --timeout 60 "$V" "$W/out.json") >/dev/null ||
	{ echo "92-pull-cache: the timing loop failed"; exit 1; }
L1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$W/out.json" "$OUT" "$FIRST" "$RUNUSER" "$L0" "$L1" <<'EOF' || exit 1
import json, statistics, sys, os
res = json.load(open(sys.argv[1]))
out, first, user, l0, l1 = sys.argv[2:7]
V = res["variants"]
med = {n: statistics.median(v["times"]) if v["times"] else None for n, v in V.items()}
def r(n, b):
    return "%.2f" % (med[n] / med[b]) if med[n] and med[b] else "-"
fs, rss = first.split()
L = ["Median wall time, %d interleaved rounds after 2 warm-up rounds, as `%s`, %d CPUs,"
     % (res["rounds"], user, os.cpu_count()),
     "load %s -> %s; loopback docker-registry 2.8, busybox image with a 64 MiB layer." % (l0, l1),
     "First pull (empty cache, 3 blobs, 65 MB, squashfs + SIF): %s s, peak RSS %d MB." % (fs, int(rss) // 1024),
     "", "| variant | median ms | vs skopeo-inspect | vs exec-sif | failed |", "|---|---:|---:|---:|---:|"]
for n in res["order"]:
    m = med[n]
    L.append("| %s | %s | %s | %s | %d |" % (n, "%.1f" % (m * 1e3) if m else "-",
             r(n, "skopeo-inspect"), r(n, "exec-sif"), V[n]["fail"]))
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
bad = [n for n in V if V[n]["fail"] or not V[n]["times"]]
if bad:
    print("92-pull-cache: failed runs: %s (%s)" % (bad, V[bad[0]]["errors"][:1]))
    sys.exit(1)
EOF
bench_doc "$DOC" "# Benchmark: a pull once the image is cached (tests/bench/92-pull-cache.sh)" "" \
	"Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`make bench\` (\`bash tests/bench/92-pull-cache.sh\`)."
