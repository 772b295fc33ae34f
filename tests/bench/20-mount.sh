#!/bin/bash
# 20-mount.sh - `make bench`: squashfs read speed through mpictr's in-process
# mount (1 worker and N workers) against Debian's squashfuse_ll (run with -f
# in the same kind of user+mount namespace) and, as root, the kernel's
# squashfs. Variants are interleaved round-robin, medians reported with
# ratios, because this class of VM drifts by up to 4x for minutes. As root
# the page cache is dropped before every run (cold); otherwise the numbers
# are warm-cache and say so.
#
# Knobs: BENCH_ROUNDS (3), BENCH_SEQ_MB (256), BENCH_SMALL_FILES (20000),
# BENCH_PAR_MB (16, per reader), BENCH_WORKERS (4).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SM=$ROOT/build/tests/squashmount
ROUNDS=${BENCH_ROUNDS:-3}
SEQ_MB=${BENCH_SEQ_MB:-256}
NSMALL=${BENCH_SMALL_FILES:-20000}
PAR_MB=${BENCH_PAR_MB:-16}
NW=${BENCH_WORKERS:-4}
OUT=$ROOT/build/bench/20-mount.md
mkdir -p "$ROOT/build/bench"

for t in mksquashfs squashfuse_ll unshare; do
	command -v $t >/dev/null || { echo "20-mount: needs $t; skipped"; exit 0; }
done
[ -x "$SM" ] || { echo "20-mount: build $SM first (make bench builds it)"; exit 1; }
if ! unshare -Urm true 2>/dev/null || [ ! -w /dev/fuse ]; then
	echo "20-mount: needs user namespaces and a usable /dev/fuse; skipped"
	exit 0
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/mpictr-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
ROOTUSER=no
[ "$(id -u)" = 0 ] && ROOTUSER=yes

echo "building the image: ${SEQ_MB} MiB file, $NSMALL small files, 8 x ${PAR_MB} MiB"
mkdir -p "$W/tree/small" "$W/tree/par" "$W/mnt"
head -c "${SEQ_MB}M" /dev/urandom >"$W/tree/big.bin"
for i in 1 2 3 4 5 6 7 8; do head -c "${PAR_MB}M" /dev/urandom >"$W/tree/par/p$i"; done
# Small files: 100 directories, 1-8 KiB of text each (like a software tree).
python3 - "$W/tree/small" "$NSMALL" <<'EOF'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
random.seed(1)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write(("line %d of file %d\n" % (i, i)) * random.randint(60, 480))
EOF
mksquashfs "$W/tree" "$W/img.sqfs" -comp zstd -noappend -quiet -no-progress >/dev/null ||
	{ echo "mksquashfs failed"; exit 1; }
rm -rf "$W/tree"
echo "image: $(du -m "$W/img.sqfs" | cut -f1) MiB (zstd)"

# Workloads: run with the image mounted on $1, print elapsed ns on stdout.
cat >"$W/work.sh" <<'EOF'
m=$1 what=$2
t0=$(date +%s%N)
case $what in
seq) cat "$m/big.bin" >/dev/null ;;
small) find "$m/small" -type f -print0 | xargs -0 cat >/dev/null ;;
par) for i in 1 2 3 4 5 6 7 8; do cat "$m/par/p$i" >/dev/null & done; wait ;;
esac
t1=$(date +%s%N)
echo $((t1 - t0))
EOF

drop() { [ $ROOTUSER = yes ] && sync && echo 3 >/proc/sys/vm/drop_caches; }

run() { # VARIANT WORKLOAD -> ns on stdout
	local v=$1 w=$2
	drop
	case $v in
	mpictr-1) "$SM" -w 1 "$W/img.sqfs" "$W/mnt" -- sh "$W/work.sh" "$W/mnt" "$w" ;;
	mpictr-N) "$SM" -w "$NW" "$W/img.sqfs" "$W/mnt" -- sh "$W/work.sh" "$W/mnt" "$w" ;;
	squashfuse_ll) unshare -Urm sh -c '
		squashfuse_ll -f "$0/img.sqfs" "$0/mnt" & p=$!
		for i in $(seq 200); do grep -q " $0/mnt " /proc/self/mountinfo && break; sleep 0.01; done
		sh "$0/work.sh" "$0/mnt" "$1"
		umount "$0/mnt"; wait $p' "$W" "$w" ;;
	kernel) unshare -m sh -c '
		mount -t squashfs -o loop,ro "$0/img.sqfs" "$0/mnt" || exit 1
		sh "$0/work.sh" "$0/mnt" "$1"; umount "$0/mnt"' "$W" "$w" ;;
	esac
}

VARIANTS="mpictr-1 mpictr-N squashfuse_ll"
[ $ROOTUSER = yes ] && VARIANTS="$VARIANTS kernel"
WORKLOADS="seq small par"
declare -A T
for r in $(seq "$ROUNDS"); do
	for w in $WORKLOADS; do
		for v in $VARIANTS; do
			ns=$(run "$v" "$w" 2>"$W/err" | tail -1)
			case $ns in '' | *[!0-9]*)
				echo "run $v/$w failed: $(head -3 "$W/err")"; ns=NA ;; esac
			T[$v,$w]="${T[$v,$w]:-} $ns"
			printf 'round %d %-6s %-14s %s ms\n' "$r" "$w" "$v" \
				"$([ "$ns" = NA ] && echo NA || echo $((ns / 1000000)))"
		done
	done
done

median() { tr ' ' '\n' | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print ""}'; }
cache=warm
[ $ROOTUSER = yes ] && cache="cold (page cache dropped before every run)"
{
	echo "Workloads: seq = cat one ${SEQ_MB} MiB incompressible file; small = cat all"
	echo "$NSMALL small files (1-8 KiB, 100 dirs) found by find; par = 8 concurrent"
	echo "readers, one ${PAR_MB} MiB incompressible file each. Image zstd, 128 KiB blocks."
	echo "Median of $ROUNDS interleaved rounds, $cache cache, $(nproc) CPUs."
	echo "mpictr-N = $NW workers. Ratio = variant time / squashfuse_ll time (lower is faster)."
	echo
	printf '| workload | variant | median s | vs squashfuse_ll |%s\n' \
		"$([ $ROOTUSER = yes ] && echo ' vs kernel |')"
	printf '|---|---|---|---|%s\n' "$([ $ROOTUSER = yes ] && echo '---|')"
	for w in $WORKLOADS; do
		base=$(echo "${T[squashfuse_ll,$w]}" | median)
		kern=
		[ $ROOTUSER = yes ] && kern=$(echo "${T[kernel,$w]}" | median)
		for v in $VARIANTS; do
			m=$(echo "${T[$v,$w]}" | median)
			[ -n "$m" ] || { printf '| %s | %s | failed | |\n' "$w" "$v"; continue; }
			line=$(awk -v m="$m" -v b="${base:-0}" -v k="${kern:-0}" -v root=$ROOTUSER \
				'BEGIN { printf "%.3f | %s |", m/1e9, b ? sprintf("%.2f", m/b) : "-";
				if (root == "yes") printf " %s |", k ? sprintf("%.2f", m/k) : "-" }')
			printf '| %s | %s | %s\n' "$w" "$v" "$line"
		done
	done
} | tee "$OUT"
echo "results: $OUT"
