#!/bin/bash
# 62-signed.sh - `make bench`: start-up under the site's signature policy
# (require_signature = yes, docs/signing.md) against the same start
# without it, side by side, interleaved round-robin (tests/bench/
# interleave.py), for a signed ~200 MB image (the tiny test image plus 200
# MB of incompressible data, signed here with an Ed25519 key):
#   mpictr -n 8 big.sif /bin/true             plain | signed | signed, no cache
#   srun -O -n 16 mpictr big.sif /bin/true    plain | signed | signed, no cache
# "signed" is the default: the data digests come from the user's
# verified-identity cache after the first start; "no cache"
# (MPICTR_VERIFY_CACHE=off) hashes the 200 MB at every start, the cost of
# the first start of an image. Join mode verifies in the node's keeper
# only, whatever the task count. Writes build/bench/62-signed.md; with
# BENCH_DOCS=1 (default) docs/bench-signed.md.
#
# Knobs: BENCH_SIGNED_ROUNDS (10), BENCH_SIGNED_MB (200), BENCH_TASKS (16).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HERE=$ROOT/tests/bench
MPICTR=$ROOT/build/mpictr
IMG=$ROOT/build/images
ROUNDS=${BENCH_SIGNED_ROUNDS:-10}
MB=${BENCH_SIGNED_MB:-200}
NT=${BENCH_TASKS:-16}
OUT=$ROOT/build/bench/62-signed.md
JSON=$ROOT/build/bench/62-signed.json
DOC=$ROOT/docs/bench-signed.md
mkdir -p "$ROOT/build/bench"
[ -x "$MPICTR" ] || { echo "62-signed: build $MPICTR first (make)"; exit 1; }
"$ROOT/tests/images/build.sh" "$IMG" tiny >/dev/null || { echo "62-signed: building the tiny image failed"; exit 1; }
if [ -e /etc/mpictr/mpictr.conf ]; then
	echo "62-signed: /etc/mpictr/mpictr.conf exists (MPICTR_TEST_SITE_CONF is ignored); skipped"
	exit 0
fi
# in /var/tmp: srun's tasks see it
TMPDIR=/var/tmp
. "$HERE/lib.sh"
chmod 0755 "$W"

# the image: tiny plus $MB MB of random bytes, signed
cp -a "$IMG/tiny" "$W/root"
head -c "$((MB << 20))" /dev/urandom >"$W/root/payload"
"$MPICTR" sif create -o "$W/big.sif" "$W/root" >/dev/null || { echo "62-signed: sif create failed"; exit 1; }
rm -rf "$W/root"
openssl genpkey -algorithm ed25519 -out "$W/site.key" 2>/dev/null
openssl pkey -in "$W/site.key" -pubout -out "$W/site.pub"
"$MPICTR" sif sign --key "$W/site.key" "$W/big.sif" >/dev/null || { echo "62-signed: sif sign failed"; exit 1; }
printf 'require_signature = yes\ntrusted_keys = %s\n' "$W/site.pub" >"$W/signed.conf"
printf '# no policy\n' >"$W/plain.conf"
mkdir -p "$W/home"
[ ${#AS[@]} -gt 0 ] && chown -R "$RUNUSER" "$W"
SIZE=$(stat -c %s "$W/big.sif")

PLAIN="MPICTR_TEST_SITE_CONF=$W/plain.conf"
SIGNED="MPICTR_TEST_SITE_CONF=$W/signed.conf"
NOCACHE="MPICTR_TEST_SITE_CONF=$W/signed.conf MPICTR_VERIFY_CACHE=off"
V=$W/variants
{
	echo "n8-plain $PLAIN $MPICTR -n 8 $W/big.sif /bin/true"
	echo "n8-signed $SIGNED $MPICTR -n 8 $W/big.sif /bin/true"
	echo "n8-nocache $NOCACHE $MPICTR -n 8 $W/big.sif /bin/true"
} >"$V"
HAVE_SRUN=0
. "$ROOT/tests/slurm/env.sh"
if slurm_up; then
	HAVE_SRUN=1
	{
		echo "srun-plain $PLAIN srun -O -n $NT $MPICTR $W/big.sif /bin/true"
		echo "srun-signed $SIGNED srun -O -n $NT $MPICTR $W/big.sif /bin/true"
		echo "srun-nocache $NOCACHE srun -O -n $NT $MPICTR $W/big.sif /bin/true"
	} >>"$V"
else
	echo "62-signed: no Slurm cluster (tests/slurm/cluster.sh start): srun rows skipped"
fi

echo "62-signed: $ROUNDS interleaved rounds as $RUNUSER, image $((SIZE >> 20)) MiB, $(nproc) CPUs, load $LOAD0"
(cd "$W" && "${AS[@]}" env HOME="$W/home" python3 "$HERE/interleave.py" \
	--rounds "$ROUNDS" --warmup 2 --timeout 120 "$V" "$W/out.json") |
	awk 'NR % 5 == 1 || /FAIL/' || { echo "62-signed: the timing loop failed"; exit 1; }
cp "$W/out.json" "$JSON"
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$JSON" "$OUT" "$RUNUSER" "$LOAD0" "$LOAD1" "$SIZE" "$NT" <<'EOF' || { echo "62-signed: the report failed"; exit 1; }
import json, os, sys
res = json.load(open(sys.argv[1]))
out, user, l0, l1, size, nt = sys.argv[2:8]
V = res["variants"]
def med(n):
    t = sorted(V[n]["times"]) if n in V else []
    if not t:
        return None
    k = (len(t) - 1) / 2
    return (t[int(k)] + t[min(int(k) + 1, len(t) - 1)]) / 2
def paired(base, n):
    # the median of the per-round ratios: the two runs of a round are
    # seconds apart, so they share the machine's load (it drifts by
    # several x over minutes); only when neither variant failed a run
    a, b = V[base]["times"], V[n]["times"]
    if V[base]["fail"] or V[n]["fail"] or len(a) != len(b) or not a:
        return None
    r = sorted(y / x for x, y in zip(a, b))
    return (r[(len(r) - 1) // 2] + r[len(r) // 2]) / 2
def row(label, base, n):
    b, m = med(base), med(n)
    if b is None or m is None:
        return "| %s | %s | %s | - | - |" % (label, "-" if b is None else "%.1f" % (b * 1e3),
                                             "failed" if m is None else "%.1f" % (m * 1e3))
    p = paired(base, n)
    return "| %s | %.1f | %.1f | %.2f | %s |" % (label, b * 1e3, m * 1e3, m / b,
                                                 "-" if p is None else "%.2f" % p)
L = ["Median wall time (ms) of a whole start, %d interleaved rounds after 2 warm-up rounds, as `%s`,"
     % (res["rounds"], user),
     "%d CPUs, load %s -> %s; image %.0f MiB (Ed25519 DSSE signature)." % (os.cpu_count(), l0, l1, int(size) / 2**20),
     "",
     "Ratio: of the medians; paired: the median of the per-round ratios (the two runs of a",
     "round share the machine's load, which drifts over minutes).",
     "",
     "| start | without require_signature | with require_signature | ratio | paired |",
     "|---|---:|---:|---:|---:|"]
L.append(row("`mpictr -n 8 big.sif /bin/true` (cache)", "n8-plain", "n8-signed"))
L.append(row("`mpictr -n 8 big.sif /bin/true`, MPICTR_VERIFY_CACHE=off (first start)", "n8-plain", "n8-nocache"))
if "srun-plain" in V:
    L.append(row("`srun -O -n %s mpictr big.sif /bin/true` (cache)" % nt, "srun-plain", "srun-signed"))
    L.append(row("`srun -O -n %s mpictr big.sif /bin/true`, MPICTR_VERIFY_CACHE=off (first start)" % nt,
                 "srun-plain", "srun-nocache"))
for n in res["order"]:
    if V[n]["fail"]:
        L.append("")
        L.append("%s failed %d time(s): %s" % (n, V[n]["fail"], V[n]["errors"][0]))
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
fails = sum(V[n]["fail"] for n in V)
sys.exit(1 if fails else 0)
EOF
rc=$?
if [ "${BENCH_DOCS:-1}" = 1 ]; then
	{
		echo "# Benchmark: start-up of a signed image under require_signature"
		echo
		echo "Written by \`tests/bench/62-signed.sh\` (\`make bench\`; rerun alone with"
		echo "\`tests/bench/run.sh tests/bench/62-signed.sh\`). Started $START on a shared"
		echo "machine (other sessions were running tests): only the ratios of the same run"
		echo "mean something; see [benchmarks.md](benchmarks.md) and [signing.md](signing.md)."
		echo
		echo "Each row compares the same start with the site's signature policy off"
		echo "(an empty site file) and on (\`require_signature = yes\`, \`trusted_keys\`"
		echo "naming the signing key), run round-robin in one loop. With the policy on,"
		echo "the namespace holder (one per node: the keeper's, in join mode) checks the"
		echo "signature, the header and the descriptors at every start; the 200 MB of"
		echo "object data are hashed at the first start of the image file and then"
		echo "taken from the user's verified-identity cache (\"cache\"). The"
		echo "\`MPICTR_VERIFY_CACHE=off\` rows hash them at every start: what the first"
		echo "start of an image costs."
		echo
		cat "$OUT"
	} >"$DOC"
	echo "results: $DOC"
fi
echo "results: $OUT"
exit $rc
