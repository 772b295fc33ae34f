#!/bin/bash
# 71-untrusted-images.sh - hostile images, built here by the user
# (mksquashfs -all-root, pseudo files for device nodes): symlinks pointing
# outside the image (absolute host paths, "/", "../../..", /etc, /tmp,
# /home), bind destinations that are such symlinks, device nodes, a deep
# tree and a huge directory. mpictr must never follow an image symlink
# onto the host: a canary directory on the host, in a place that is not
# bound into the container (/var/tmp), which a runtime resolving image
# paths on the host would hit, must stay untouched; every run must fail
# cleanly (255 and a message) or succeed harmlessly, within a bound, and
# leave nothing behind.
. "$(dirname "$0")/lib.sh"

require_userns
require_fuse "squashfs images" "/dev/fuse is not usable (chmod 0666 /dev/fuse)"
command -v mksquashfs >/dev/null || { need "mksquashfs" "squashfs-tools"; done_testing; exit; }
require_images tiny
cd "$T_TMP" || exit 1
private_tmpdir

CANARY=$(mktemp -d /var/tmp/mpictr-canary.XXXXXX) || exit 1
trap 't_cleanup; rm -rf "$CANARY"' EXIT
echo "canary $$" >"$CANARY/keep"
snap() { (cd "$CANARY" && find . -printf '%p %y %s %m %T@\n' | sort; cat keep) | md5sum; }
SNAP0=$(snap)
mkdir -p "$T_TMP/src" && echo src >"$T_TMP/src/f"

# mkimg NAME SETUP [mksquashfs args...]: the tiny image's tree, changed by
# the shell code SETUP (run in the tree), packed as NAME.sqfs.
mkimg() {
	local n=$1 setup=$2; shift 2
	rm -rf "$T_TMP/r-$n" && cp -a "$IMG/tiny" "$T_TMP/r-$n" &&
		(cd "$T_TMP/r-$n" && eval "$setup") &&
		mksquashfs "$T_TMP/r-$n" "$T_TMP/$n.sqfs" -noappend -quiet -no-progress -all-root \
			-processors 1 "$@" >/dev/null && rm -rf "$T_TMP/r-$n"
}
ok "build the symlink image" mkimg links "
	ln -s '$CANARY' data; ln -s / rootlink; ln -s ../../.. uplink; ln -s loop loop
	ln -s /host/etc hetc"
ok "build the image whose /tmp is a symlink to the host directory" mkimg tmplink "rm -rf tmp; ln -s '$CANARY' tmp"
ok "build the image whose /home is a symlink to /" mkimg homelink "rm -rf home; ln -s / home"
ok "build the image whose /etc is a symlink out of it" mkimg etclink "mv etc etc.real; ln -s /host/etc etc"
ok "build the image whose /etc is a relative symlink up" mkimg etcup "mv etc etc.real; ln -s ../../../../etc etc"
ok "build the device-node image (pseudo files)" mkimg devs "mkdir -p hostile" \
	-p 'hostile/mem c 0666 0 0 1 1' -p 'hostile/sda b 0666 0 0 8 0' -p 'hostile/kmsg c 0666 0 0 1 11'
# 1000 levels: mksquashfs itself fails on trees near PATH_MAX
# (2000 levels of "d/" is 4000 characters plus the build directory).
deep() { local i; mkdir deep && cd deep && for i in $(seq 1000); do mkdir d && cd d || return 1; done; echo bottom >f; }
ok "build the deep image (1000 levels)" mkimg deep "$(declare -f deep); deep"
ok "build the huge-directory image (100000 entries)" mkimg huge "mkdir big && python3 -c '
import os
for i in range(100000): open(\"big/f%06d\" % i, \"w\").close()'"

# run IMAGE ARGS...: mpictr within a bound; 0 or 255 (clean), never a hang
run() { local img=$1; shift; timeout 120 "$MPICTR" "$@" "$T_TMP/$img.sqfs" "${RUNCMD[@]}"; }
# clean RC: the run ended by itself (no timeout) with 0 or a clean 255
clean_or_ok() { [ "$1" = 0 ] || [ "$1" = 255 ]; }
harmless() { # DESC IMAGE ARGS...: canary unchanged, exit 0 or 255
	local d=$1; shift
	run "$@" >"$T_TMP/h.out" 2>&1
	local rc=$?
	echo "exit status $rc" >>"$T_TMP/h.out"
	cp "$T_TMP/h.out" "$T_OUT"
	clean_or_ok $rc && [ "$(snap)" = "$SNAP0" ]
	t_report "$d" $?
	[ $rc = 255 ] && ! grep -q '^mpictr: ' "$T_TMP/h.out" && echo "# note: 255 without an mpictr message"
	echo "#   -> exit $rc: $(grep -v '^exit status' "$T_TMP/h.out" | head -n 1)"
}
RUNCMD=(sh -c 'echo pwn >/data/w 2>/dev/null; echo pwn >/data/sub/w 2>/dev/null; echo pwn >/tmp/w 2>/dev/null; echo pwn >/x/w 2>/dev/null; true')
harmless "bind onto /data (a symlink to a host directory): the host directory is untouched" links -B "$T_TMP/src:/data"
harmless "bind onto /data/sub (below that symlink): nothing created on the host" links -B "$T_TMP/src:/data/sub"
harmless "bind onto /rootlink (a symlink to /)" links -B "$T_TMP/src:/rootlink"
harmless "bind onto /rootlink/x (through a symlink to /)" links -B "$T_TMP/src:/rootlink/x"
harmless "bind onto /uplink/x (through a symlink to ../../..)" links -B "$T_TMP/src:/uplink/x"
harmless "bind onto /loop (a symlink loop)" links -B "$T_TMP/src:/loop"
harmless "image /tmp is a symlink to the host directory; default binds" tmplink
harmless "image /home is a symlink to /; HOME bound" homelink --pwd /
harmless "bind onto /hetc/x (a symlink to /host/etc)" links -B "$T_TMP/src:/hetc/x"
harmless "image /etc is a symlink to /host/etc" etclink
harmless "image /etc is a symlink to ../../../../etc" etcup
RUNCMD=(cat /data/f)
check "the canary directory is untouched after all symlink runs" test "$(snap)" = "$SNAP0"
ok "a bind through a symlink to / lands in the container, showing the source" bash -c "'$MPICTR' -B '$T_TMP/src:/rootlink/x' '$T_TMP/links.sqfs' cat /x/f | grep -qx src"

ok "device nodes of the image are visible" "$MPICTR" "$T_TMP/devs.sqfs" sh -c 'test -c /hostile/mem && test -b /hostile/sda'
ok_fail "... but /hostile/mem (c 1:1) cannot be opened (nodev)" "$MPICTR" "$T_TMP/devs.sqfs" head -c 1 /hostile/mem
cp "$T_OUT" "$T_TMP/d.out"
check "... Permission denied" grep -q 'Permission denied' "$T_TMP/d.out"
ok_fail "... nor /hostile/sda (b 8:0)" "$MPICTR" "$T_TMP/devs.sqfs" head -c 1 /hostile/sda
ok_fail "... nor /hostile/kmsg (c 1:11), even for writing" "$MPICTR" "$T_TMP/devs.sqfs" sh -c 'echo x >/hostile/kmsg'
ok_fail "... nor with --fakeroot" "$MPICTR" --fakeroot "$T_TMP/devs.sqfs" head -c 1 /hostile/mem

deepcheck() {
	local p; p=/deep$(printf '/d%.0s' $(seq 1000))/f
	timeout 120 "$MPICTR" "$T_TMP/deep.sqfs" cat "$p" >"$T_TMP/deep.out" 2>&1
	cat "$T_TMP/deep.out" | tail -c 300
	[ "$(cat "$T_TMP/deep.out")" = bottom ]
}
ok "the deep tree (1000 levels) is readable to the bottom" deepcheck
RUNCMD=(true)
harmless "a bind into the deep tree's top" deep -B "$T_TMP/src:/deep/new"
hugecheck() { [ "$(timeout 120 "$MPICTR" "$T_TMP/huge.sqfs" sh -c 'ls /big | wc -l')" = 100000 ]; }
ok "the huge directory (100000 entries) is listed in full" hugecheck
t0=$(date +%s)
RUNCMD=(sh -c 'ls /big | wc -l; cat /big/new/f')
harmless "a bind into the huge directory (its entries re-bound in a tmpfs, or a clean error)" huge -B "$T_TMP/src:/big/new"
echo "# bind into the huge directory took $(( $(date +%s) - t0 )) s"

leftovers() { ls -d "$TMPDIR"/mpictr-* 2>/dev/null; marked_procs | grep -v -e marked_procs -e leftovers; }
noleft() { sleep 0.3; [ -z "$(leftovers)" ] || { leftovers; return 1; }; }
ok "nothing left behind (processes, job directories)" noleft
done_testing
