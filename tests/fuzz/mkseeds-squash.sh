#!/bin/sh
# mkseeds-squash.sh OUTDIR - the seed images of fuzz_squash: tiny trees
# with symlinks (relative, absolute, "..", loops, dangling), deep paths and
# a few files, made with mksquashfs. Most seeds are uncompressed (-noI -noD
# -noF -noX: the fuzzer mutates the tables themselves); one each is gzip
# and xz compressed.
set -eu
out=${1:?usage: mkseeds-squash.sh OUTDIR}
mkdir -p "$out"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mk() { # NAME OPTIONS...: the tree in $t/root as $out/NAME
	name=$1
	shift
	mksquashfs "$t/root" "$out/$name" -noappend -no-progress -quiet \
		-all-root -mkfs-time 0 -all-time 0 -no-xattrs -nopad "$@" >/dev/null
	rm -rf "$t/root"
}

mkdir -p "$t/root/etc/profile.d" "$t/root/d/e"
echo 'export A=1' >"$t/root/etc/profile.d/a.sh"
echo 'root:x:0:0::/root:/bin/sh' >"$t/root/etc/passwd"
printf 'x' >"$t/root/d/e/f"
ln -s /etc "$t/root/l"
ln -s ../../etc/passwd "$t/root/d/e/up"
ln -s loop "$t/root/loop"
ln -s nowhere "$t/root/dangling"
mk links.sqfs -noI -noD -noF -noX

mkdir -p "$t/root"
ln -s b "$t/root/a"
ln -s a "$t/root/b"
ln -s ./c/../c "$t/root/c"
ln -s / "$t/root/r"
ln -s /r/r/r/r "$t/root/rr"
mk loops.sqfs -noI -noD -noF -noX

mkdir -p "$t/root/long/1/2/3/4/5/6/7/8/9/10/11/12"
echo deep >"$t/root/long/1/2/3/4/5/6/7/8/9/10/11/12/f"
ln -s 1/2/3/4/5/6/7/8/9/10/11/12 "$t/root/long/l"
mkdir -p "$t/root/many"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	: >"$t/root/many/f$i"
done
mk deep.sqfs -noI -noD -noF -noX

mkdir -p "$t/root/etc"
head -c 9000 /dev/zero | tr '\0' 'a' >"$t/root/etc/big"
printf 'tail' >>"$t/root/etc/big"
ln -s etc/big "$t/root/l"
mk frag-gzip.sqfs -comp gzip -b 4096

mkdir -p "$t/root/etc"
echo 'export B=2' >"$t/root/etc/profile"
ln -s /etc "$t/root/l"
mk xz.sqfs -comp xz -b 4096
