#!/bin/bash
# 91-pull.sh - `make bench`: a first pull of a ~300 MB, 4-layer image
# (docs/pull.md "Speed"): `mpictr pull` from a loopback docker-registry
# (empty cache) against the peers' pipeline, skopeo copy + `umoci unpack
# --rootless` + `mksquashfs -comp zstd -Xcompression-level 3`, side by
# side, alternating, BENCH_PULL_ROUNDS rounds (3; quick 1); and the local
# form (`mpictr pull oci:DIR` against umoci unpack + mksquashfs of the same
# layout). Reports medians, the ratio, the extra disk each leaves (all of
# it exists at the end, so that is its peak) and the peak RSS of the
# biggest step. The image: host files (python3.11, C headers, perl,
# documentation; gzip), a layer of whiteouts and one with an opaque
# directory; and `ch-image pull` of the same image (Charliecloud, from a
# TLS registry) when installed. Writes build/bench/91-pull.md and docs/bench-pull.md (unless
# BENCH_DOCS=0).
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=${BENCH_PULL_ROUNDS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
DOC=$ROOT/docs/bench-pull.md
bench_needs docker-registry skopeo umoci mksquashfs python3 /usr/bin/time
bench_built
bench_registry
chmod 0755 "$W"
X=("${AS[@]}" env HOME="$W")

# The image.
I=$W/img
mkdir -p "$I"
tar -C / -cf "$I/l1.tar" usr/lib/python3.11 usr/include usr/lib/x86_64-linux-gnu/perl \
	usr/share/perl 2>/dev/null
tar -C / -cf "$I/l2.tar" --exclude='usr/share/doc/[n-z]*' usr/share/doc 2>/dev/null
python3 - "$I" <<'EOF'
import io, os, sys, tarfile
d = sys.argv[1]
def wh(t, name):
    i = tarfile.TarInfo(name); t.addfile(i)
with tarfile.open(d + "/l3.tar", "w", format=tarfile.PAX_FORMAT) as t:
    hs = sorted(os.listdir("/usr/include/linux"))[:100]
    for h in hs:
        wh(t, "usr/include/linux/.wh." + h)
    wh(t, "usr/share/doc/.wh." + sorted(os.listdir("/usr/share/doc"))[0])
with tarfile.open(d + "/l4.tar", "w", format=tarfile.PAX_FORMAT) as t:
    i = tarfile.TarInfo("usr/include/x86_64-linux-gnu"); i.type = tarfile.DIRTYPE; i.mode = 0o755
    t.addfile(i)
    wh(t, "usr/include/x86_64-linux-gnu/.wh..wh..opq")
    i = tarfile.TarInfo("usr/include/x86_64-linux-gnu/only.h"); data = b"/* opaque */\n"
    i.size = len(data); t.addfile(i, io.BytesIO(data))
EOF
(cd "$I" && umoci init --layout L && umoci new --image L:base &&
	umoci raw add-layer --image L:base --tag a l1.tar && umoci raw add-layer --image L:a --tag b l2.tar &&
	umoci raw add-layer --image L:b --tag c l3.tar && umoci raw add-layer --image L:c --tag img l4.tar &&
	umoci gc --layout L) >/dev/null 2>&1 || { echo "91-pull: building the image failed"; exit 1; }
chmod -R a+rX "$I"
reg_start p plain >/dev/null || { echo "91-pull: docker-registry did not start"; exit 1; }
skopeo copy -q --dest-tls-verify=false oci:"$I/L":img docker://"$REG_p"/bench/img:1 >/dev/null ||
	{ echo "91-pull: skopeo push failed"; exit 1; }
# Charliecloud's ch-image pull (HTTPS only): the same image from a TLS
# registry with Basic auth, when charliecloud-builders is installed.
CH=$(command -v ch-image || true)
if [ -n "$CH" ] && /usr/bin/python3 "$CH" --version >/dev/null 2>&1 && reg_start t tls >/dev/null &&
	skopeo copy -q --dest-cert-dir "$RW/ca" --dest-creds alice:s3cret oci:"$I/L":img \
		docker://"$REG_t"/bench/img:1 >/dev/null; then
	chmod -R a+rX "$RW"
else
	CH=
fi
ZSIZE=$(du -sb "$I/L/blobs" | cut -f1)
USIZE=$(cat "$I"/l1.tar "$I"/l2.tar | wc -c)
rm -f "$I"/l1.tar "$I"/l2.tar

# timed NAME CMD...: wall seconds and peak RSS (KiB) of CMD appended to
# $W/t.NAME ("secs rss"); the command's failure fails the benchmark.
timed() {
	local n=$1 t0 t1 rss
	shift
	t0=$(date +%s.%N)
	"${X[@]}" /usr/bin/time -f '%M' -o "$W/rss" "$@" >"$W/log.$n" 2>&1 ||
		{ echo "91-pull: $n failed:" >&2; tail -5 "$W/log.$n" >&2; exit 1; }
	t1=$(date +%s.%N)
	rss=$(tail -1 "$W/rss")
	echo "$t0 $t1 $rss" | awk '{printf "%.3f %d\n", $2 - $1, $3}'
}
one_round() { # ROUND
	local r=$1 a b c
	# mpictr from the registry, empty cache
	mkdir -p "$W/c$r" && [ ${#AS[@]} -gt 0 ] && chown "$RUNUSER" "$W/c$r"
	a=$(timed mpictr-reg env MPICTR_CACHEDIR="$W/c$r" "$MPICTR" pull -q --force --dir "$W" --insecure "$REG_p" \
		"docker://$REG_p/bench/img:1") || exit 1
	echo "$a $(du -sb "$W/c$r" | cut -f1)" >>"$W/t.mpictr-reg"
	rm -rf "$W/c$r"
	# the peers' pipeline from the registry
	a=$(timed skopeo skopeo copy -q --src-tls-verify=false "docker://$REG_p/bench/img:1" "oci:$W/b$r:img") || exit 1
	b=$(timed umoci umoci unpack --rootless --image "$W/b$r:img" "$W/u$r") || exit 1
	c=$(timed mksquashfs mksquashfs "$W/u$r/rootfs" "$W/s$r.sqfs" -comp zstd -Xcompression-level 3 \
		-noappend -quiet -no-progress) || exit 1
	echo "$a $b $c $(du -sbc "$W/b$r" "$W/u$r" "$W/s$r.sqfs" | tail -1 | cut -f1)" >>"$W/t.peer-reg"
	rm -rf "$W/b$r" "$W/s$r.sqfs"
	# ch-image pull (unpacks to a directory: no squashfs)
	if [ -n "$CH" ]; then
		a=$(timed ch-image env USER="$RUNUSER" REQUESTS_CA_BUNDLE="$RW/reg.crt" \
			CH_IMAGE_USERNAME=alice CH_IMAGE_PASSWORD=s3cret /usr/bin/python3 "$CH" \
			-s "$W/ch$r" --no-cache pull --auth "$REG_t/bench/img:1") || exit 1
		echo "$a $(du -sb "$W/ch$r" | cut -f1)" >>"$W/t.ch-image"
		chmod -R u+rwX "$W/ch$r" 2>/dev/null
		rm -rf "$W/ch$r"
	fi
	# local: the layout as it is
	a=$(timed mpictr-oci "$MPICTR" pull -q oci:"$I/L":img "$W/o$r.sif") || exit 1
	echo "$a $(du -sb "$W/o$r.sif" | cut -f1)" >>"$W/t.mpictr-oci"
	rm -f "$W/o$r.sif"
	chmod -R u+rwX "$W/u$r" 2>/dev/null
	rm -rf "$W/u$r"
	b=$(timed umoci umoci unpack --rootless --image "$I/L:img" "$W/u$r") || exit 1
	c=$(timed mksquashfs mksquashfs "$W/u$r/rootfs" "$W/s$r.sqfs" -comp zstd -Xcompression-level 3 \
		-noappend -quiet -no-progress) || exit 1
	echo "$b $c $(du -sbc "$W/u$r" "$W/s$r.sqfs" | tail -1 | cut -f1)" >>"$W/t.peer-oci"
	chmod -R u+rwX "$W/u$r" 2>/dev/null
	rm -rf "$W/u$r" "$W/s$r.sqfs"
}
L0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do one_round "$r"; done
L1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$W" "$OUT" "$ROUNDS" "$RUNUSER" "$L0" "$L1" "$ZSIZE" "$USIZE" <<'EOF' || exit 1
import os, statistics, sys
w, out, rounds, user, l0, l1, zs, us = sys.argv[1:9]
def rows(n):
    return [list(map(float, l.split())) for l in open(os.path.join(w, "t." + n))]
def med(xs):
    return statistics.median(xs)
mr, pr, mo, po = rows("mpictr-reg"), rows("peer-reg"), rows("mpictr-oci"), rows("peer-oci")
m_reg = med([r[0] for r in mr]); p_reg = med([r[0] + r[2] + r[4] for r in pr])
m_oci = med([r[0] for r in mo]); p_oci = med([r[0] + r[2] for r in po])
MB = 1e6
L = ["A first pull of a 4-layer image (%.0f MB compressed layers, %.0f MB unpacked; host files,"
     % (int(zs) / MB, int(us) / MB),
     "gzip, then a layer of 101 whiteouts and one with an opaque directory), median of %s"
     % rounds,
     "rounds run alternately, as `%s`, %d CPUs, load %s -> %s; loopback docker-registry 2.8,"
     % (user, os.cpu_count(), l0, l1),
     "skopeo 1.9, umoci 0.4.7, mksquashfs 4.5.1 `-comp zstd -Xcompression-level 3`.", "",
     "| pipeline | wall s | vs peer | extra disk MB | peak RSS MB |", "|---|---:|---:|---:|---:|",
     "| `mpictr pull docker://...` (empty cache: blobs + SIF) | %.2f | **%.2f** | %.0f | %.0f |"
     % (m_reg, m_reg / p_reg, med([r[2] for r in mr]) / MB, max(r[1] for r in mr) / 1024),
     "| skopeo copy + umoci unpack --rootless + mksquashfs | %.2f (%.2f + %.2f + %.2f) | 1 | %.0f | %.0f |"
     % (p_reg, med([r[0] for r in pr]), med([r[2] for r in pr]), med([r[4] for r in pr]),
        med([r[6] for r in pr]) / MB, max(max(r[1], r[3], r[5]) for r in pr) / 1024),
     "| `mpictr pull oci:DIR` (SIF) | %.2f | **%.2f** | %.0f | %.0f |"
     % (m_oci, m_oci / p_oci, med([r[2] for r in mo]) / MB, max(r[1] for r in mo) / 1024),
     "| umoci unpack --rootless + mksquashfs (same layout) | %.2f (%.2f + %.2f) | 1 | %.0f | %.0f |"
     % (p_oci, med([r[0] for r in po]), med([r[2] for r in po]), med([r[4] for r in po]) / MB,
        max(max(r[1], r[3]) for r in po) / 1024)]
if os.path.exists(os.path.join(w, "t.ch-image")):
    ch = rows("ch-image"); c = med([r[0] for r in ch])
    L.insert(9, "| `ch-image pull` (Charliecloud 0.31, TLS registry; a directory, no squashfs) | %.2f | %.2f; mpictr **%.2f×** | %.0f | %.0f |"
             % (c, c / p_reg, m_reg / c, med([r[2] for r in ch]) / MB, max(r[1] for r in ch) / 1024))
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
bench_doc "$DOC" "# Benchmark: a first pull (tests/bench/91-pull.sh)" "" \
	"Generated by \`make bench\` ($START); see docs/pull.md for what is measured and why."
