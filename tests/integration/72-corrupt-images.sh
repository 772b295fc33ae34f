#!/bin/bash
# 72-corrupt-images.sh - corrupt squashfs and SIF images, built here from
# the tiny image (mksquashfs, then a few bytes patched), of the kinds that
# crashed libsquashfuse 0.1.105 (docs/fuzzing.md):
#   conf: /etc/ld.so.conf.d/zz-corrupt.conf, which the planning pass reads
#         with a profile that injects a host MPI, has its first data block
#         at position 0, marked compressed (libsquashfuse's cache hands
#         such a block back as NULL: SIGSEGV in mpictr itself);
#   data: the same for /payload, which only the command reads (through a
#         FUSE worker: SIGSEGV there);
#   bs0:  the superblock's block size is 0 (SIGFPE on any file read).
# Each run, --dry-run, single, -n 2 and join mode, must end within a bound
# with no signal and no core: 255 and a message naming the image, or (a
# corrupt file the command reads) the command's own I/O error, with the
# worker's message naming the image; nothing left running, mounted or in
# the job directories.
. "$(dirname "$0")/lib.sh"

require_userns
require_fuse "squashfs images" "/dev/fuse is not usable (chmod 0666 /dev/fuse)"
command -v mksquashfs >/dev/null || { need "mksquashfs" "squashfs-tools"; done_testing; exit; }
command -v python3 >/dev/null || { need "python3" "python3"; done_testing; exit; }
require_images tiny
cd "$T_TMP" || exit 1
private_tmpdir
LIBDIR=/usr/lib/x86_64-linux-gnu
MPILIB=$(ls "$LIBDIR"/libmpich.so.12 "$LIBDIR"/libmpi.so.40 2>/dev/null | head -n 1)
JOB=$((700000 + $$ % 90000))
JDIR=/tmp/mpictr-join-$(id -u)

# The regular file of SIZE bytes (one without a fragment: the image is
# built with -no-fragments, uncompressed): its first block moved to
# position 0 and marked compressed (inflating the superblock fails).
cat >"$T_TMP/patch.py" <<'EOF'
import struct, sys
img, size = sys.argv[1], int(sys.argv[2])
b = bytearray(open(img, 'rb').read())
inodes, dirs = struct.unpack_from('<QQ', b, 64)
hits = [o for o in range(inodes, dirs - 36)
        if struct.unpack_from('<H', b, o)[0] == 2 and
        struct.unpack_from('<III', b, o + 20) == (0xffffffff, 0, size)]
assert len(hits) == 1, hits
struct.pack_into('<I', b, hits[0] + 16, 0)
first, = struct.unpack_from('<I', b, hits[0] + 32)
struct.pack_into('<I', b, hits[0] + 32, first & ~(1 << 24))
open(img, 'wb').write(b)
EOF
build() { # NAME: the tiny tree with /payload and the conf file, packed
	rm -rf "$T_TMP/r" && cp -a "$IMG/tiny" "$T_TMP/r" && mkdir -p "$T_TMP/r/etc/ld.so.conf.d" &&
		head -c 12345 /dev/zero | tr '\0' x >"$T_TMP/r/payload" &&
		{ head -c 4314 /dev/zero | tr '\0' '#'; printf '\n/opt/\n'; } >"$T_TMP/r/etc/ld.so.conf.d/zz-corrupt.conf" &&
		mksquashfs "$T_TMP/r" "$T_TMP/$1.sqfs" -noappend -quiet -no-progress -all-root \
			-processors 1 -noI -noD -noF -no-fragments -no-xattrs >/dev/null && rm -rf "$T_TMP/r"
}
sif() { "$MPICTR" sif create -o "$T_TMP/$1.sif" "$T_TMP/$1.sqfs" >/dev/null; }
ok "build the conf image (planning reads a block at position 0)" \
	bash -c "$(declare -f build); IMG='$IMG' T_TMP='$T_TMP'; build conf && python3 '$T_TMP/patch.py' '$T_TMP/conf.sqfs' 4321"
ok "build the data image (the command reads a block at position 0)" \
	bash -c "$(declare -f build); IMG='$IMG' T_TMP='$T_TMP'; build data && python3 '$T_TMP/patch.py' '$T_TMP/data.sqfs' 12345"
ok "build the bs0 image (block size 0)" \
	bash -c "$(declare -f build); IMG='$IMG' T_TMP='$T_TMP'; build bs0 && printf '\0\0\0\0' | dd of='$T_TMP/bs0.sqfs' bs=1 seek=12 conv=notrunc status=none"
ok "wrap the conf and data images in SIF" bash -c "$(declare -f sif); MPICTR='$MPICTR' T_TMP='$T_TMP'; sif conf && sif data"
printf '[profile host]\nmpi = %s\n' "$MPILIB" >"$T_TMP/mpi.conf"
PROFILE=(--config "$T_TMP/mpi.conf" --profile host)

# judge DESC WANT IMAGE-FILE CMD...: within 60 s, no signal, no core;
# WANT 255: 255 and an "mpictr: " message naming the image and saying it
# is corrupt; WANT io: the command's I/O error (exit 1) and the worker's
# message naming the image; WANT eio: the I/O error alone (join mode:
# the holder, which the workers log to, is detached from the tasks);
# WANT 0|255: a plan, or the 255 above.
judge() {
	local d=$1 want=$2 img=$3 rc; shift 3
	rm -f core core.*
	timeout 60 "$@" >"$T_TMP/j.out" 2>&1
	rc=$?
	echo "exit status $rc" >>"$T_TMP/j.out"
	cp "$T_TMP/j.out" "$T_OUT"
	local named=1
	grep -q "^mpictr: .*image '$img'.*corrupt" "$T_TMP/j.out" && named=0
	case $want in
	255) [ $rc = 255 ] && [ $named = 0 ] ;;
	io) [ $rc = 1 ] && [ $named = 0 ] && grep -q 'Input/output error' "$T_TMP/j.out" ;;
	eio) [ $rc = 1 ] && grep -q 'Input/output error' "$T_TMP/j.out" ;;
	0\|255) [ $rc = 0 ] || { [ $rc = 255 ] && [ $named = 0 ]; } ;;
	esac &&
		! ls core core.* >/dev/null 2>&1 && ! grep -qi 'killed by signal\|segmentation\|core dumped' "$T_TMP/j.out"
	t_report "$d" $?
	echo "#   -> exit $rc: $(grep -v '^exit status' "$T_TMP/j.out" | head -n 1)"
}
CAT2=(sh -c 'cat /payload >/dev/null; cat /payload >/dev/null')
if [ -n "$MPILIB" ]; then
	for i in conf.sqfs conf.sif; do
		judge "$i, --dry-run with a host MPI profile: 255, the image named" 255 "$T_TMP/$i" \
			"$MPICTR" --dry-run "${PROFILE[@]}" "$T_TMP/$i" true
		judge "$i, single with a host MPI profile: 255" 255 "$T_TMP/$i" \
			"$MPICTR" "${PROFILE[@]}" "$T_TMP/$i" true
		judge "$i, -n 2 with a host MPI profile: 255" 255 "$T_TMP/$i" \
			"$MPICTR" -n 2 "${PROFILE[@]}" "$T_TMP/$i" true
	done
else
	need "a host MPI library for the profile" "libmpich12 or libopenmpi3"
fi
for i in data.sqfs data.sif; do
	judge "$i, single: the command's I/O error, the image named" io "$T_TMP/$i" "$MPICTR" "$T_TMP/$i" "${CAT2[@]}"
	judge "$i, -n 2: the ranks' I/O error" io "$T_TMP/$i" "$MPICTR" -n 2 "$T_TMP/$i" "${CAT2[@]}"
done
judge "bs0.sqfs, --dry-run: a plan or 255" '0|255' "$T_TMP/bs0.sqfs" "$MPICTR" --dry-run "$T_TMP/bs0.sqfs" cat /payload
judge "bs0.sqfs, single: 255, the image named" 255 "$T_TMP/bs0.sqfs" "$MPICTR" "$T_TMP/bs0.sqfs" cat /payload
judge "bs0.sqfs, -n 2: 255" 255 "$T_TMP/bs0.sqfs" "$MPICTR" -n 2 "$T_TMP/bs0.sqfs" cat /payload

# join mode (the step variables srun sets; 35-join.sh): join2 STEP IMAGE
# CMD... runs two tasks of a step, exits with the first non-zero status
cat >"$T_TMP/join2" <<EOF
#!/bin/bash
step=\$1 img=\$2 rc=0; shift 2
for i in 0 1; do
	SLURM_JOB_ID=$JOB SLURM_STEP_ID=\$step SLURM_NODEID=0 SLURM_PROCID=\$i SLURM_LOCALID=\$i \\
		SLURM_STEP_TASKS_PER_NODE=2 '$MPICTR' "\$img" "\$@" &
done
for i in 0 1; do wait -n; r=\$?; [ \$rc = 0 ] && rc=\$r; done
exit \$rc
EOF
chmod +x "$T_TMP/join2"
judge "data.sqfs, join mode (2 tasks): the tasks' I/O error" eio "$T_TMP/data.sqfs" "$T_TMP/join2" 1 "$T_TMP/data.sqfs" "${CAT2[@]}"
judge "data.sif, join mode (2 tasks)" eio "$T_TMP/data.sif" "$T_TMP/join2" 2 "$T_TMP/data.sif" "${CAT2[@]}"
judge "bs0.sqfs, join mode (2 tasks): 255" 255 "$T_TMP/bs0.sqfs" "$T_TMP/join2" 3 "$T_TMP/bs0.sqfs" cat /payload
if [ -n "$MPILIB" ]; then
	judge "conf.sqfs, join mode --dry-run with a host MPI profile: 255" 255 "$T_TMP/conf.sqfs" \
		env SLURM_JOB_ID=$JOB SLURM_STEP_ID=4 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 \
		SLURM_STEP_TASKS_PER_NODE=1 "$MPICTR" --dry-run "${PROFILE[@]}" "$T_TMP/conf.sqfs" true
fi

leftovers() {
	ls -d "$TMPDIR"/mpictr-* 2>/dev/null
	ls "$JDIR" 2>/dev/null | grep "^$JOB\."
	marked_procs | grep -v -e marked_procs -e leftovers
	grep -F "$T_TMP" /proc/self/mountinfo
}
noleft() { settle 50 leftovers; }
ok "nothing left behind (processes, mounts, job directories)" noleft
done_testing
