#!/bin/bash
# 20-mount.sh - sif/squash.c through the squashmount driver: every compressor
# mpictr supports, lzma refused, offsets (SIF and unaligned), read-only,
# parallel service by several workers, SIGKILL cleanup, bad images, missing
# or inaccessible /dev/fuse. Runs unprivileged (CI) or as root.
. "$(dirname "$0")/lib.sh"

SM=$ROOT/build/tests/squashmount
T=$T_TMP
chmod 0755 "$T" # setpriv'd runs below must reach it

require_userns "squashfs mount tests" "unprivileged user namespaces"
require_fuse "squashfs mount tests" "/dev/fuse readable and writable (chmod 0666 /dev/fuse)"
if ! command -v mksquashfs >/dev/null; then
	need "squashfs mount tests" "mksquashfs (squashfs-tools)"
	done_testing
	exit
fi

# Run the driver in a session of its own; afterwards nothing of that session
# may remain (workers, readers). Usage: sm OUTFILE ARGS... ; returns its rc.
sm() {
	local out=$1 rc
	shift
	setsid -w sh -c 'echo $$ > "$0"; exec "$@"' "$T/sid" "$SM" "$@" >"$out" 2>&1
	rc=$?
	local sid left
	sid=$(cat "$T/sid")
	left=$(pgrep -s "$sid")
	if [ -n "$left" ]; then
		echo "LEFTOVER processes of session $sid: $left" >>"$out"
		pkill -KILL -s "$sid"
		return 99
	fi
	return $rc
}

# A process is gone when /proc has no entry or only a zombie.
alive() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# ---- the source tree --------------------------------------------------------
src=$T/tree
mkdir -p "$src"/bin "$src"/lib/deep/er/still "$src"/empty-dir "$src"/private
(
	cd "$src" || exit 1
	printf 'hello from squashfs\n' >etc-motd
	: >empty-file
	head -c 200000 /dev/urandom >lib/random.bin # several blocks, tail fragment
	head -c 131072 /dev/urandom >lib/exactly-one-block.bin
	seq 1 200000 >lib/compressible.txt
	for i in $(seq 1 60); do echo "file $i" >"bin/f$i"; done
	printf '#!/bin/sh\necho hi\n' >bin/script && chmod 0755 bin/script
	chmod 0700 private && echo secret >private/key && chmod 0400 private/key
	chmod 0444 etc-motd
	ln -s ../etc-motd bin/motd-link
	ln -s /nonexistent/target dangling
	ln -s lib/deep/er/still deep-link
	ln lib/compressible.txt hardlink.txt
	echo deep >lib/deep/er/still/leaf
	mkfifo fifo
	touch -d '2001-02-03 04:05:06' etc-motd
	long=$(printf 'n%.0s' $(seq 1 255))
	echo long >"$long"
) || echo "building the source tree failed" >&2

# Listing with everything squashfs keeps (directory sizes differ by design).
listing() { # DIR
	(cd "$1" && find . -printf '%p %y %m %U %G %Ts %l ' \
		\( -type d -printf '-\n' -o -printf '%s %n\n' \) | LC_ALL=C sort)
}
sums() { # DIR
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum)
}
listing "$src" >"$T/src.list"
sums "$src" >"$T/src.sums"

mkdir -p "$T/mnt"
check_image() { # DESC IMAGE [driver options]
	local d=$1 img=$2
	shift 2
	sm "$T/out" -w 2 "$@" "$img" "$T/mnt" -- sh -c '
		cd "$0" || exit 1
		(find . -printf "%p %y %m %U %G %Ts %l " \( -type d -printf "-\n" \
			-o -printf "%s %n\n" \) | LC_ALL=C sort) >"$1/got.list"
		(find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) \
			>"$1/got.sums"' "$T/mnt" "$T"
	local rc=$?
	ok "$d: mounted and walked" test "$rc" = 0
	ok "$d: listing (modes, owners, mtimes, sizes, links, targets)" \
		diff -u "$T/src.list" "$T/got.list"
	ok "$d: every file's content" diff -u "$T/src.sums" "$T/got.sums"
	rm -f "$T/got.list" "$T/got.sums"
}

for comp in gzip xz zstd lz4 lzo; do
	if mksquashfs "$src" "$T/img.$comp" -comp "$comp" -noappend -quiet \
		-no-progress >"$T/mk.out" 2>&1; then
		check_image "$comp image" "$T/img.$comp"
	else
		need "$comp image" "mksquashfs -comp $comp: $(head -1 "$T/mk.out")"
	fi
done

# ---- lzma is refused --------------------------------------------------------
if mksquashfs "$src" "$T/img.lzma" -comp lzma -noappend -quiet -no-progress \
	>/dev/null 2>&1; then
	sm "$T/out" "$T/img.lzma" "$T/mnt" -- true
	ok "lzma image refused with 255" test $? = 255
	ok "lzma refusal names the compressor and the alternatives" \
		grep -q "compression 'lzma' is not supported (supported: gzip, xz, zstd, lz4, lzo)" "$T/out"
else
	need "lzma image refused" "mksquashfs cannot make lzma images here"
fi

# ---- offsets ------------------------------------------------------------------
if command -v siftool >/dev/null; then
	siftool new "$T/img.sif" >/dev/null 2>&1 &&
		siftool add "$T/img.sif" "$T/img.gzip" --datatype 4 --parttype 2 \
			--partfs 1 --partarch 2 >/dev/null 2>&1
	ok "siftool puts the partition at 32768" \
		sh -c "siftool list '$T/img.sif' | grep -q '|32768-'"
	check_image "SIF partition at offset 32768" "$T/img.sif" -o 32768
	sm "$T/out" -o 4096 "$T/img.sif" "$T/mnt" -- true
	ok "SIF at a wrong offset: 255" test $? = 255
	ok "wrong offset: 'not a squashfs image' with file and offset" \
		grep -q "squashfs '$T/img.sif' at offset 4096: not a squashfs image" "$T/out"
else
	need "SIF partition at offset 32768" "siftool"
fi
head -c 12345 /dev/zero >"$T/pad"
cat "$T/pad" "$T/img.zstd" >"$T/unaligned.img"
check_image "zstd image at unaligned offset 12345" "$T/unaligned.img" -o 12345

# ---- read-only ----------------------------------------------------------------
sm "$T/out" "$T/img.gzip" "$T/mnt" -- sh -c '
	m=$0 n=0
	(echo x >"$m/new-file") 2>&1 || n=$((n+1))
	(exec 3<>"$m/etc-motd") 2>&1 || n=$((n+1))
	(: >>"$m/lib/random.bin") 2>&1 || n=$((n+1))
	mkdir "$m/new-dir" 2>&1 || n=$((n+1))
	rm -f "$m/bin/f1" 2>&1 || n=$((n+1))
	touch "$m/bin/f2" 2>&1 || n=$((n+1))
	echo "failed writes: $n of 6"
	grep " $m " /proc/self/mountinfo
	grep -q "^[^ ]* [^ ]* [^ ]* [^ ]* $m ro,nosuid,nodev" /proc/self/mountinfo &&
		[ "$n" = 6 ]' "$T/mnt"
ok "writes into the mount all fail; mounted ro,nosuid,nodev" test $? = 0
ok "write failures are EROFS" sh -c "test \$(grep -c 'Read-only file system' '$T/out') -ge 6"

# ---- parallel service ------------------------------------------------------------
mkdir -p "$T/par"
for i in 1 2 3 4 5 6 7 8; do head -c 4M /dev/urandom >"$T/par/big$i"; done
(cd "$T/par" && sha256sum big* >"$T/par.sums")
mksquashfs "$T/par" "$T/par.img" -comp zstd -noappend -quiet -no-progress >/dev/null 2>&1
sm "$T/out" -v -w 4 "$T/par.img" "$T/mnt" -- sh -c '
	cd "$0" || exit 1
	for i in 1 2 3 4 5 6 7 8; do sha256sum big$i >"$1/par.$i" & done
	wait
	cat "$1"/par.[1-8] >"$1/par.got"' "$T/mnt" "$T"
ok "8 concurrent readers through 4 workers" test $? = 0
ok "8 concurrent readers: checksums" diff -u "$T/par.sums" "$T/par.got"
awk '/squashfs worker [0-9]+: served/ && $(NF-2) > 0 {n++} END {exit !(n >= 2)}' "$T/out"
ok "reads were served by more than one worker" test $? = 0
grep 'squashfs worker' "$T/out" | sed 's/^/# /'
ok "every worker exited cleanly at unmount" \
	test "$(grep -c 'squashfs worker [0-9]*: served' "$T/out")" = 4

# ---- SIGKILL of the mounting process ---------------------------------------------
rm -f "$T/k.w" "$T/k.ns" "$T/k.r" "$T/k.d" "$T/k.fail"
setsid "$SM" -w 3 "$T/par.img" "$T/mnt" -- sh -c '
	echo "$MPICTR_SQUASH_WORKERS" >"$1/k.w"
	readlink /proc/self/ns/mnt >"$1/k.ns"
	echo $$ >"$1/k.r"
	echo $PPID >"$1/k.d"
	i=0
	while :; do
		i=$((i + 1))
		cat "$0/big1" >/dev/null 2>&1 || echo fail >>"$1/k.fail"
		# a name never looked up: a LOOKUP each time (cached data
		# stays readable after the abort, it needs no request)
		ls "$0/none.$i" 2>&1 | grep -q "not connected" && echo enotconn >>"$1/k.fail"
	done' \
	"$T/mnt" "$T" >"$T/out" 2>&1 &
drv=$!
for _ in $(seq 100); do [ -s "$T/k.r" ] && break; sleep 0.05; done
sleep 0.3
workers=$(cat "$T/k.w" 2>/dev/null)
reader=$(cat "$T/k.r" 2>/dev/null)
ns=$(cat "$T/k.ns" 2>/dev/null)
exec 3>&2 2>/dev/null # no "Killed" job report from bash
kill -KILL "$(cat "$T/k.d")" "$drv"
wait "$drv"
exec 2>&3 3>&-
gone=no
for _ in $(seq 100); do
	gone=yes
	for p in $workers; do alive "$p" && gone=no; done
	[ $gone = yes ] && break
	sleep 0.05
done
ok "SIGKILL of the driver: all workers are gone (${workers:-none found})" \
	sh -c "[ -n '$workers' ] && [ $gone = yes ]"
for _ in $(seq 100); do [ -s "$T/k.fail" ] && break; sleep 0.05; done
ok "the orphaned reader gets errors (ENOTCONN), it does not hang" grep -q enotconn "$T/k.fail"
[ -n "$reader" ] && kill -KILL "$reader" 2>/dev/null
sleep 0.2
leftover=
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && leftover="$leftover ${p#/proc/}"
done
ok "no process is left in the mount namespace (so no mount either)" \
	sh -c "[ -n '$ns' ] && [ -z '$leftover' ]"

# ---- bad images -----------------------------------------------------------------
head -c 100000 /dev/urandom >"$T/random.img"
sm "$T/out" "$T/random.img" "$T/mnt" -- true
ok "random bytes: 255" test $? = 255
ok "random bytes: not a squashfs image" \
	grep -q "squashfs '$T/random.img' at offset 0: not a squashfs image" "$T/out"
head -c 60000 "$T/img.gzip" >"$T/trunc.img"
sm "$T/out" "$T/trunc.img" "$T/mnt" -- true
ok "truncated image: 255" test $? = 255
ok "truncated image: says so with both sizes" \
	grep -q "at offset 0: truncated image (the superblock says [0-9]* bytes, the file has 60000" "$T/out"
sm "$T/out" -o 99999999 "$T/img.gzip" "$T/mnt" -- true
ok "offset beyond the end: 255 and a message" \
	sh -c "test $? = 255 && grep -q 'offset is beyond the end of the file' '$T/out'"
: >"$T/empty.img"
sm "$T/out" "$T/empty.img" "$T/mnt" -- true
ok "empty file: 255" test $? = 255
# A gzip image whose tables are intact but one data block is garbage (gzip
# blocks are inflated by libdeflate): reading that file fails with EIO, the
# rest of the image stays readable, and nothing crashes or hangs.
mkdir -p "$T/bad"
seq 1 120000 >"$T/bad/big.txt" # ~700 KB of text: several compressed blocks
echo small >"$T/bad/small.txt"
mksquashfs "$T/bad" "$T/badblock.img" -comp gzip -noappend -quiet -no-progress >/dev/null 2>&1
# Data blocks follow the 96-byte superblock, big.txt's first: overwrite the
# middle of its first compressed block.
head -c 64 /dev/urandom | dd of="$T/badblock.img" bs=1 seek=4000 conv=notrunc status=none
sm "$T/out" "$T/badblock.img" "$T/mnt" -- sh -c \
	"if cat '$T/mnt/big.txt' >/dev/null 2>'$T/bb.err'; then echo READ-OK; fi; cat '$T/mnt/small.txt'; tail -c 7 '$T/mnt/big.txt'"
ok "a corrupt gzip data block: the mount still works (status 0)" test $? = 0
ok "... reading the damaged file fails with an I/O error" grep -q "Input/output error" "$T/bb.err"
ok "... the other files and the file's intact blocks read correctly" \
	sh -c "! grep -q READ-OK '$T/out' && grep -qx small '$T/out' && grep -qx 120000 '$T/out'"
sm "$T/out" "$T/no-such.img" "$T/mnt" -- true
ok "missing image: open error names the file" \
	sh -c "grep -q \"open squashfs image '$T/no-such.img': No such file or directory\" '$T/out'"
sm "$T/out" "$T/img.gzip" "$T/no-such-dir" -- true
ok "missing mount point: named" \
	sh -c "grep -q \"mount point '$T/no-such-dir': No such file or directory\" '$T/out'"
ok "mount point untouched after the failures" \
	sh -c "[ -z \"\$(ls -A '$T/mnt')\" ]"

# ---- /dev/fuse missing or not accessible -------------------------------------
# Inside an outer user+mount namespace of our own: /dev replaced by a tmpfs
# without fuse, or a root-only file bound over /dev/fuse. Root runs this as
# nobody, since root would be allowed to open the stand-in.
as_user=()
mkdir -p "$T/odev" && chmod 0777 "$T/odev"
[ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
"${as_user[@]}" unshare -Urm sh -c '
	mount --rbind /dev "$0/odev" &&
	mount -t tmpfs none /dev && : >/dev/null && mount --bind "$0/odev/null" /dev/null &&
	exec "$1" "$0/img.gzip" "$0/mnt" -- true' "$T" "$SM" >"$T/out" 2>&1
ok "no /dev/fuse: 255" test $? = 255
ok "no /dev/fuse: named, with a hint" \
	grep -q "open '/dev/fuse': No such file or directory (hint: load the kernel's FUSE support (modprobe fuse) and install fuse3)" "$T/out"
stand_in=
for f in /etc/gshadow /etc/shadow; do
	[ -e "$f" ] && [ "$(stat -c %u "$f")" = 0 ] && [ $(($(stat -c %#a "$f") & 6)) = 0 ] &&
		{ stand_in=$f; break; }
done
if [ -n "$stand_in" ]; then
	"${as_user[@]}" unshare -Urm sh -c 'mount --bind "$2" /dev/fuse &&
		exec "$1" "$0/img.gzip" "$0/mnt" -- true' "$T" "$SM" "$stand_in" >"$T/out" 2>&1
	ok "inaccessible /dev/fuse: 255" test $? = 255
	ok "inaccessible /dev/fuse: names the fix (chmod 0666)" \
		grep -q "open '/dev/fuse': Permission denied (hint: .*chmod 0666 /dev/fuse" "$T/out"
else
	need "inaccessible /dev/fuse" "a root-only file to stand in for /dev/fuse"
fi
rmdir "$T/odev" 2>/dev/null

done_testing
