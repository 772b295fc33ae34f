#!/bin/bash
# 50-pull-reference.sh - `mpictr pull` against a root `umoci unpack` +
# mksquashfs of the same image, compared by sqfsdiff with owners and
# modes (the unprivileged 24-pull.sh can compare content and modes only:
# a rootless unpack loses the owners). The fixture is 24-pull.sh's
# (tests/integration/pull-fixture.py): whiteouts, an opaque directory, a
# symlink replaced by a directory, hardlinks within and across layers,
# 1234:5678, setuid, a FIFO, two devices. The pull runs as
# MPICTR_TEST_VICTIM (mpictr-test), unprivileged; only the reference
# needs root.
. "$(dirname "$0")/../integration/lib.sh"
V=${MPICTR_TEST_VICTIM:-mpictr-test}
W=$(mktemp -d /var/tmp/mpictr-pullref.XXXXXX)
trap 'rm -rf "$W"; t_cleanup' EXIT
chmod 0755 "$W"
for tool in umoci sqfsdiff mksquashfs unsquashfs; do
	command -v "$tool" >/dev/null || { need "pull reference" "$tool not installed"; done_testing; exit; }
done
id "$V" >/dev/null 2>&1 || { need "pull reference" "no user $V"; done_testing; exit; }
cd "$W" || exit 1
python3 "$ROOT/tests/integration/pull-fixture.py" merge "$W"
ok "fixture layout" sh -c 'umoci init --layout L && umoci new --image L:base &&
	umoci raw add-layer --image L:base --tag t1 l1.tar &&
	umoci raw add-layer --image L:t1 --tag t2 l2.tar &&
	umoci raw add-layer --image L:t2 --tag img l3.tar && chmod -R a+rX L'
mkdir out && chown "$V" out
ok "mpictr pull as $V (unprivileged)" runuser -u "$V" -- "$MPICTR" pull -q oci:L:img out/img.sif
dd if=out/img.sif of=img.sqfs bs=4096 skip=8 status=none
ok "reference: umoci unpack as root" umoci unpack --image L:img ref
unsquashfs -f -q -d ref/rootfs img.sqfs /.singularity.d >/dev/null 2>&1
ok "reference: mksquashfs" mksquashfs ref/rootfs ref.sqfs -comp zstd -noappend -quiet -no-progress
sqfsdiff -a ref.sqfs -b img.sqfs >diff.out 2>&1
check "sqfsdiff (content, owner, mode): equal but for the two dropped devices" \
	sh -c '! grep -v -e "^< dev/null$" -e "^< dev/loop0$" diff.out'
check "... and the devices are what differs" sh -c 'grep -q "^< dev/null$" diff.out'
done_testing
