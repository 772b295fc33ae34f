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

# Issue 18: image symlinks that led mount points onto the host, through a
# host directory bound into the container (/tmp) or through the old root
# while it was still attached (/.mpictr-oldroot). Nothing may be created
# on the host, nor read from it into the container's /etc/passwd. The
# second canary is in the host's /tmp (bound into the container). Each run
# is judged on its own: a canary found changed is restored afterwards.
TCAN=$(mktemp -d /tmp/mpictr-canary.XXXXXX) || exit 1
echo "canary $$" >"$TCAN/keep"
tsnap() { (cd "$TCAN" && find . -printf '%p %y %s %m %T@\n' | sort; cat keep) | md5sum; }
TSNAP0=$(tsnap)
HU=${HOME#/home/}
[ "$HU" != "$HOME" ] && [ -n "$HU" ] && [ "${HU#*/}" = "$HU" ] || HU=
tmpuser() { [ -z "$HU" ] || stat -c '%i %Y' "/tmp/$HU" 2>/dev/null || echo none; }
TU0=$(tmpuser)
# A process whose /proc/PID/root is the host's root (the kernel refuses it
# across user namespaces, and mpictr refuses magic links: two guards).
env -u T_MARKER_MPICTR sleep 600 &
SLEEPER=$!
trap 't_cleanup; rm -rf "$CANARY" "$TCAN"; [ "$TU0" = none ] && rmdir "/tmp/$HU" 2>/dev/null; kill $SLEEPER 2>/dev/null' EXIT
OLD=/.mpictr-oldroot
ok "build the image whose /home is a symlink to /tmp" mkimg hometmp "rm -rf home; ln -s /tmp home"
ok "build the image whose /home is a symlink to a directory in /tmp" mkimg homecan "rm -rf home; ln -s '$TCAN' home"
ok "build the image whose /etc is a symlink into the old root" mkimg etcold "mv etc etc.real; ln -s '$OLD$CANARY' etc"
ok "build the image whose /etc/{hosts,resolv.conf,passwd,group} are symlinks into the old root" mkimg etcfiles "
	for f in hosts resolv.conf passwd group; do rm -f etc/\$f; ln -s '$OLD$CANARY/'\$f etc/\$f; done"
ok "build the image whose /data and /ocan are symlinks into the old root" mkimg oldlinks "
	ln -s '$OLD$CANARY' data; ln -s '$OLD$TCAN' ocan"
ok "build the image whose /etc/passwd is a symlink to a host file through the old root" mkimg pwold "
	rm -f etc/passwd; ln -s '$OLD$CANARY/keep' etc/passwd"
ok "build the image whose /etc is a symlink through /proc/PID/root" mkimg etcproc "mv etc etc.real; ln -s '/proc/$SLEEPER/root$CANARY' etc"
# hostile DESC PATH IMAGE ARGS...: nothing created on the host (both
# canaries byte-for-byte, no /tmp/$USER-like entry); exit 0, or 255 with
# an mpictr message naming PATH.
hostile() {
	local d=$1 path=$2; shift 2
	run "$@" >"$T_TMP/h.out" 2>&1
	local rc=$?
	echo "exit status $rc" >>"$T_TMP/h.out"
	cp "$T_TMP/h.out" "$T_OUT"
	{ [ $rc = 0 ] || { [ $rc = 255 ] && grep -q "^mpictr: .*'$path" "$T_TMP/h.out"; }; } &&
		[ "$(snap)" = "$SNAP0" ] && [ "$(tsnap)" = "$TSNAP0" ] && [ "$(tmpuser)" = "$TU0" ]
	t_report "$d" $?
	echo "#   -> exit $rc: $(grep -v '^exit status' "$T_TMP/h.out" | head -n 1)"
	if [ "$(snap)" != "$SNAP0" ] || [ "$(tsnap)" != "$TSNAP0" ]; then
		(cd "$CANARY" && find . | sed 's/^/#   created on the host: /')
		(cd "$TCAN" && find . | sed 's/^/#   created on the host: /')
		rm -rf "$CANARY" "$TCAN" && mkdir -m 700 "$CANARY" "$TCAN" &&
			echo "canary $$" >"$CANARY/keep" && echo "canary $$" >"$TCAN/keep"
		SNAP0=$(snap) TSNAP0=$(tsnap)
	fi
	if [ "$(tmpuser)" != "$TU0" ]; then
		echo "#   created on the host: /tmp/$HU"
		[ "$TU0" = none ] && rmdir "/tmp/$HU"
	fi
}
RUNCMD=(true)
if [ -n "$HU" ]; then
	hostile "image /home -> /tmp, HOME and /tmp bound: no /tmp/$HU on the host" /home hometmp
else
	skip "image /home -> /tmp" "HOME ($HOME) is not /home/NAME"
fi
hostile "image /home -> a directory in the host's /tmp, HOME bound: nothing created there" /home homecan
hostile "image /etc -> $OLD/...: no hosts, resolv.conf, passwd, group created on the host" /etc etcold
hostile "image /etc/hosts, resolv.conf, passwd, group -> $OLD/...: nothing created" /etc etcfiles
ok "... a dangling image symlink is replaced in the layer: /etc/hosts is the host's" \
	bash -c "'$MPICTR' '$T_TMP/etcfiles.sqfs' cat /etc/hosts | cmp - /etc/hosts"
hostile "bind onto /data/new, /data -> $OLD/var/tmp/...: no directory created on the host" /data oldlinks -B "$T_TMP/src:/data/new"
hostile "bind onto /ocan/y, /ocan -> $OLD/tmp/...: nothing created in the host's /tmp" /ocan oldlinks -B "$T_TMP/src:/ocan/y"
hostile "image /etc -> /proc/PID/root/... (a host process's root): nothing created" /etc etcproc
kill $SLEEPER 2>/dev/null
pwcheck() {
	timeout 120 "$MPICTR" "$T_TMP/pwold.sqfs" cat /etc/passwd >"$T_TMP/pw.out" 2>&1
	cat "$T_TMP/pw.out"
	grep -q "^$(id -un):" "$T_TMP/pw.out" && ! grep -q canary "$T_TMP/pw.out"
}
ok "image /etc/passwd -> $OLD/...: the container gets the user's entry, nothing of the host file" pwcheck
check "the canary in the host's /tmp is untouched" test "$(tsnap)" = "$TSNAP0"
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
