#!/bin/bash
# 70-isolation.sh - the escape probe (tests/probes/escape.c, static) run
# inside the container as the invoking user: every escape attempt must be
# reported BLOCKED (image and root writes, mknod, the image's device node,
# host paths not bound, image symlinks pointing outside, setuid/setgid,
# a setuid-root binary, capset, chroot/pivot_root/mount/umount, open by
# handle, a nested user namespace, signals and ptrace of another user's
# process). Cross-user attempts against another test user's job are in
# tests/integration-root/20-isolation-users.sh.
. "$(dirname "$0")/lib.sh"

PROBE=$ROOT/build/tests/escape-probe
require_userns
[ -x "$PROBE" ] || { need "escape probe" "build/tests/escape-probe not built (make check builds it)"; done_testing; exit; }
require_images tiny
I=$IMG/tiny.sif; have_fuse || I=$IMG/tiny
cd "$T_TMP" || exit 1
private_tmpdir

# The probe travels into the container through a bind; a canary in a host
# directory that is not bound (/var/tmp) must be invisible there.
mkdir -p "$T_TMP/probe" "$T_TMP/mark" && cp "$PROBE" "$T_TMP/probe/"
CANARY=$(mktemp -d /var/tmp/mpictr-canary.XXXXXX) || exit 1
chmod 0755 "$CANARY"; echo canary >"$CANARY/secret"; chmod 0644 "$CANARY/secret"
trap 't_cleanup; rm -rf "$CANARY"' EXIT
ARGS=(--host-path "$CANARY/secret" --host-path "$CANARY" --nested-mark "$T_TMP/mark")
# A process of another user: pid 1 (root), for a non-root caller only.
MINB=34
[ "$(id -u)" != 0 ] && ARGS+=(--victim 1) && MINB=41
case $HOME in /root*) ;; *) ARGS+=(--host-path /root/.bashrc) ;; esac

probe() { "$MPICTR" "$@" -B "$T_TMP/probe:/opt/escape" "$I" /opt/escape/escape-probe "${ARGS[@]}"; }

ok "the probe reports every escape attempt blocked" probe
cp "$T_OUT" "$T_TMP/out"
check "... and tried them all (at least $MINB BLOCKED lines, no ESCAPED)" bash -c "[ \$(grep -c '^BLOCKED ' '$T_TMP/out') -ge $MINB ] && ! grep -q '^ESCAPED ' '$T_TMP/out'"
for n in write-image-root write-usr mknod image-device host-path follow-escape-link follow-shadow-link \
	setuid-binary capset chroot pivot_root mount nested-remount-rw nested-unlock-nodev nested-mknod \
	nested-chroot-escape nested-mount-leak; do
	check "... $n is blocked" grep -q "^BLOCKED $n: " "$T_TMP/out"
done
if [ "$(id -u)" != 0 ]; then
	check "... kill and ptrace of another user's process are blocked" bash -c "grep -q '^BLOCKED kill-other-user: ' '$T_TMP/out' && grep -q '^BLOCKED ptrace-other-user: ' '$T_TMP/out'"
	check "... setuid(0) is blocked" grep -q '^BLOCKED setuid: ' "$T_TMP/out"
else
	skip "... kill and ptrace of another user's process" "run as root: the container user is root (make check runs as mpictr-test)"
	skip "... setuid(0) is blocked" "run as root"
fi
check "the nested namespace's mount did not reach the host" test ! -e "$T_TMP/mark/nested-was-here"
check "the image was not written (host view of the image directory)" bash -c "[ ! -e '$IMG/tiny/.escape-probe' ] && [ ! -e '$IMG/tiny/usr/.escape-probe' ]"
ok "with --fakeroot (uid 0 in the container) every attempt is still blocked" probe --fakeroot
cp "$T_OUT" "$T_TMP/outf"
check "... capset, mknod, the image's device and the host canary included" bash -c "grep -q '^BLOCKED capset: ' '$T_TMP/outf' && grep -q '^BLOCKED mknod: ' '$T_TMP/outf' && grep -q '^BLOCKED image-device: ' '$T_TMP/outf' && grep -q '^BLOCKED host-path: ' '$T_TMP/outf'"
# The probe can tell: on the host, outside any container, it sees the canary.
ok_fail "control: run on the host, the probe reports an escape" "$PROBE" --host-path "$CANARY/secret"
cp "$T_OUT" "$T_TMP/outh"
check "... naming the host path" grep -q "^ESCAPED host-path: $CANARY/secret is visible" "$T_TMP/outh"
done_testing
