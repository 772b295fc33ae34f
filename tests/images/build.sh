#!/bin/bash
# build.sh OUTDIR [tiny|mpi|all] - build the test images, as any user (no root).
#
#   OUTDIR/tiny/  tiny.sqfs  tiny.sif   busybox image with Apptainer metadata,
#                                       a setuid-root busybox and escape probes
#   OUTDIR/mpi/   mpi.sqfs   mpi.sif    host Open MPI 4.1 + MPICH 4.0 closure
#                                       with the tests/mpi programs in
#                                       /opt/mpictr/bin (NAME, NAME-mpich)
#
# Idempotent: OUTDIR/NAME.stamp holds a hash of the inputs (this script, the
# MPI sources, the versions of the host packages copied in); nothing is done
# when it matches, so an up-to-date OUTDIR may even be read-only. The SIF is
# made by `build/mpictr sif create` when that works, else by siftool
# (MPICTR_IMAGES_SIF=siftool|mpictr forces one).
set -euo pipefail
umask 022
HERE=$(cd "$(dirname "$0")" && pwd)
SRC_ROOT=$(cd "$HERE/../.." && pwd)
MPICTR_BIN=${MPICTR:-$SRC_ROOT/build/mpictr}
ARCH_LIB=/usr/lib/x86_64-linux-gnu

die() { echo "build.sh: $*" >&2; exit 1; }
note() { echo "build.sh: $*"; }

[ $# -ge 1 ] || die "usage: build.sh OUTDIR [tiny|mpi|all]"
OUT=$1
WHAT=${2:-all}
case $WHAT in
tiny) NAMES=tiny ;;
mpi) NAMES=mpi ;;
all) NAMES="tiny mpi" ;;
*) die "unknown image '$WHAT' (expected tiny, mpi or all)" ;;
esac

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---- input hashes -----------------------------------------------------------
pkg_versions() {
	dpkg-query -W -f '${Package} ${Version}\n' "$@" 2>/dev/null || true
}

inputs_hash() { # NAME
	{
		echo "format 1"
		# contents only: the same inputs in another checkout are the same
		(cd "$HERE" && sha256sum build.sh elfclosure.py suidprobe.c)
		mksquashfs -version 2>/dev/null | head -1
		sha256sum "$(busybox_path)"
		if [ "$1" = mpi ]; then
			(cd "$SRC_ROOT/tests/mpi" && sha256sum ./*.c)
			pkg_versions libc6 libopenmpi3 openmpi-bin openmpi-common libmpich12 mpich \
				libucx0 libpmix2 libhwloc15 libfabric1 libibverbs1 librdmacm1 \
				libevent-core-2.1-7 gcc
		fi
	} | sha256sum | cut -d' ' -f1
}

busybox_path() {
	local b
	for b in /usr/bin/busybox /bin/busybox; do
		[ -x "$b" ] && { echo "$b"; return; }
	done
	die "busybox not found: install busybox-static"
}

# ---- common skeleton ----------------------------------------------------------
# usrmerge layout and the mount points a runtime binds over (squashfs is
# read-only, so they must exist in the image).
skeleton() { # ROOT
	local R=$1
	mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib/x86_64-linux-gnu "$R"/usr/lib64 \
		"$R"/etc "$R"/dev "$R"/proc "$R"/sys "$R"/tmp "$R"/run "$R"/home "$R"/root \
		"$R"/var/tmp "$R"/var/spool "$R"/mnt "$R"/opt "$R"/.singularity.d/env
	ln -s usr/bin "$R/bin"
	ln -s usr/sbin "$R/sbin"
	ln -s usr/lib "$R/lib"
	ln -s usr/lib64 "$R/lib64"
	chmod 1777 "$R/tmp" "$R/var/tmp"
	chmod 0700 "$R/root"
	: >"$R/etc/hosts"
	: >"$R/etc/resolv.conf"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
		'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' >"$R/etc/passwd"
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$R/etc/group"
	ln -s .singularity.d/env/90-environment.sh "$R/environment"
	ln -s .singularity.d/runscript "$R/singularity"
}

install_busybox() { # ROOT APPLET...
	local R=$1 a
	shift
	cp "$(busybox_path)" "$R/usr/bin/busybox"
	chmod 0755 "$R/usr/bin/busybox"
	for a in "$@"; do
		[ -e "$R/usr/bin/$a" ] || ln -s busybox "$R/usr/bin/$a"
	done
}

APPLETS="sh ash ls cat id env echo test [ mkdir rmdir touch stat grep egrep readlink
realpath sleep mount umount mknod chmod chown chgrp ln rm cp mv true false pwd
hostname uname ps kill head tail wc sed awk tr cut sort uniq find xargs printf
basename dirname whoami groups date df du dd nproc seq expr tee timeout nsenter
unshare chroot which mountpoint mktemp sha256sum md5sum hexdump od xxd setpriv
taskset sync truncate ln usleep yes"

# ---- tiny ---------------------------------------------------------------------
build_tiny() { # ROOT
	local R=$1
	skeleton "$R"
	# shellcheck disable=SC2086
	install_busybox "$R" $APPLETS
	# a setuid-root copy (mksquashfs -all-root makes it root-owned): a
	# runtime must mount the image nosuid, so this never gains privileges
	cp "$R/usr/bin/busybox" "$R/usr/bin/suidbox"
	chmod 4755 "$R/usr/bin/suidbox"
	# busybox drops setuid for most applets: suidprobe (static, 6755)
	# prints real and effective ids
	cc -static -O2 -o "$R/usr/bin/suidprobe" "$HERE/suidprobe.c"
	chmod 6755 "$R/usr/bin/suidprobe"

	mkdir -p "$R/opt/tiny/bin"
	cat >"$R/opt/tiny/bin/hello-tiny" <<'EOF'
#!/bin/sh
echo "hello-tiny: uid $(id -u) args $*"
EOF
	chmod 0755 "$R/opt/tiny/bin/hello-tiny"

	# Apptainer metadata: env scripts are sourced in lexical order
	cat >"$R/.singularity.d/env/10-tiny.sh" <<'EOF'
# sourced before 90-environment.sh
export TINY_ORDER="${TINY_ORDER:+$TINY_ORDER }10"
EOF
	cat >"$R/.singularity.d/env/90-environment.sh" <<'EOF'
#!/bin/sh
# Custom environment shell code should follow
export TINY_IMAGE=1
export TINY_ORDER="${TINY_ORDER:+$TINY_ORDER }90"
export PATH="/opt/tiny/bin:$PATH"
EOF
	cat >"$R/.singularity.d/runscript" <<'EOF'
#!/bin/sh
echo "runscript: $*"
EOF
	chmod 0755 "$R/.singularity.d/runscript" "$R"/.singularity.d/env/*.sh
	printf '{\n  "org.mpictr.test.image": "tiny"\n}\n' >"$R/.singularity.d/labels.json"

	# escape probes: links that point outside the image when resolved on the
	# host instead of in the container
	ln -s /host/etc "$R/escape"
	ln -s ../../../../etc "$R/etc-link"
	mkdir -p "$R/probe"
	ln -s /etc/shadow "$R/probe/shadow-link"
	ln -s ../../../../../../../../proc/self/root "$R/probe/proc-root-link"
	echo "tiny image: marker file" >"$R/probe/marker"
	# /probe/null (char 1:3, mode 0666) is added by mksquashfs -p: a
	# runtime must mount the image nodev
}

# ---- mpi ----------------------------------------------------------------------
# Copy FILEs and every library they load (transitively) into ROOT; the
# same resolver checks the result (elfclosure.py check).
copy_closure() { # ROOT FILE...
	python3 "$HERE/elfclosure.py" copy "$@" || die "closure of the MPI image is incomplete"
}

compile_mpi() { # DIR
	local d=$1 c n
	for c in "$SRC_ROOT"/tests/mpi/*.c; do
		# MPI programs only (pmix_probe.c is a raw PMIx client).
		grep -q '#include <mpi.h>' "$c" || continue
		n=$(basename "$c" .c)
		mpicc -O2 -o "$d/$n" "$c"
		mpicc.mpich -O2 -o "$d/$n-mpich" "$c"
	done
}

build_mpi() { # ROOT
	local R=$1 bin plugins f
	skeleton "$R"
	# shellcheck disable=SC2086
	install_busybox "$R" $APPLETS
	bin=$R/opt/mpictr/bin
	mkdir -p "$bin"
	compile_mpi "$bin"

	# dlopen()ed components never show in ldd: take the component
	# directories whole, with their own closures
	local dirs=() d
	for d in openmpi/lib/openmpi3 pmix2/lib/pmix ucx libfabric; do
		[ -d "$ARCH_LIB/$d" ] && dirs+=("$ARCH_LIB/$d")
	done
	plugins=$(find "${dirs[@]}" -name '*.so*' \( -type f -o -type l \) | sort)
	# shellcheck disable=SC2086
	copy_closure "$R" "$bin"/* /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info \
		/usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy $plugins
	ln -s orterun "$R/usr/bin/mpirun"
	ln -s orterun "$R/usr/bin/mpiexec"
	ln -s mpiexec.hydra "$R/usr/bin/mpiexec.mpich"
	# library symlinks the plugins' RUNPATH dir holds (libmca_common_*.so ...)
	cp -a "$ARCH_LIB/openmpi/lib/"*.so "$R$ARCH_LIB/openmpi/lib/" 2>/dev/null || true
	find "$R$ARCH_LIB/openmpi/lib" -maxdepth 1 -xtype l -delete
	# data the MPI libraries read at run time
	for f in /etc/openmpi /usr/share/openmpi "$ARCH_LIB/pmix2/share" /usr/share/pmix \
		/etc/ld.so.conf /etc/ld.so.conf.d/x86_64-linux-gnu.conf /etc/ld.so.conf.d/libc.conf; do
		[ -e "$f" ] || continue
		mkdir -p "$R$(dirname "$f")"
		cp -a "$f" "$R$f"
	done
	rm -f "$R/usr/share/openmpi/"*wrapper-data.txt 2>/dev/null || true

	cat >"$R/.singularity.d/env/90-environment.sh" <<'EOF'
#!/bin/sh
export MPICTR_MPI_IMAGE=1
export PATH="/opt/mpictr/bin:$PATH"
EOF
	cat >"$R/.singularity.d/runscript" <<'EOF'
#!/bin/sh
exec /opt/mpictr/bin/hello "$@"
EOF
	chmod 0755 "$R/.singularity.d/runscript" "$R/.singularity.d/env/90-environment.sh"
	printf '{\n  "org.mpictr.test.image": "mpi"\n}\n' >"$R/.singularity.d/labels.json"

	# the loader cache; ldconfig -r chroots, which needs a user namespace
	# when we are not root (the loader's default dirs work without it)
	if [ "$(id -u)" = 0 ]; then
		ldconfig -r "$R"
	else
		unshare -r ldconfig -r "$R" 2>/dev/null ||
			note "no user namespace for 'ldconfig -r': image has no ld.so.cache"
	fi
}

# ---- squashfs and SIF -----------------------------------------------------------
make_sqfs() { # NAME ROOT OUT.sqfs
	local pseudo=()
	[ "$1" = tiny ] && pseudo=(-p 'probe/null c 0666 0 0 1 3')
	mksquashfs "$2" "$3" -noappend -quiet -no-progress -all-root -comp gzip \
		-processors 2 "${pseudo[@]}" >/dev/null
}

sif_method=
make_sif() { # SQFS OUT.sif
	local sqfs=$1 sif=$2 why
	rm -f "$sif"
	if [ "${MPICTR_IMAGES_SIF:-}" != siftool ] && [ -x "$MPICTR_BIN" ]; then
		if why=$("$MPICTR_BIN" sif create -o "$sif" "$sqfs" 2>&1) &&
			siftool list "$sif" 2>/dev/null | grep -q Squashfs; then
			sif_method="mpictr sif create"
			return 0
		fi
		[ "${MPICTR_IMAGES_SIF:-}" != mpictr ] ||
			die "mpictr sif create failed: $why"
		why=$(echo "$why" | tail -1)
		rm -f "$sif"
	else
		why="${MPICTR_IMAGES_SIF:+forced by MPICTR_IMAGES_SIF}"
		why=${why:-$MPICTR_BIN not built}
	fi
	command -v siftool >/dev/null || die "siftool not found: install siftool"
	siftool new "$sif" >/dev/null
	siftool add "$sif" "$sqfs" --datatype 4 --parttype 2 --partfs 1 --partarch 2 >/dev/null
	sif_method="siftool (mpictr sif create: ${why:-unusable})"
}

mpictr_hash() {
	if [ -x "$MPICTR_BIN" ] && [ "${MPICTR_IMAGES_SIF:-}" != siftool ]; then
		sha256sum "$MPICTR_BIN" | cut -d' ' -f1
	else
		echo "none ${MPICTR_IMAGES_SIF:-}"
	fi
}

up_to_date() { # NAME HASH
	[ -f "$OUT/$1.stamp" ] && [ "$(cat "$OUT/$1.stamp")" = "$2" ] &&
		[ -d "$OUT/$1" ] && [ -f "$OUT/$1.sqfs" ] && [ -f "$OUT/$1.sif" ]
}

build_one() { # NAME
	local n=$1 h sh t0 tmp
	h=$(inputs_hash "$n")
	sh="$h $(mpictr_hash)"
	if up_to_date "$n" "$sh"; then
		note "$n: up to date ($OUT/$n.sif)"
		return 0
	fi
	tmp=$OUT/.build-$n
	if ! [ -f "$OUT/$n.stamp" ] || [ "$(cut -d' ' -f1 "$OUT/$n.stamp")" != "$h" ] ||
		! [ -d "$OUT/$n" ] || ! [ -f "$OUT/$n.sqfs" ]; then
		chmod -R u+w "$tmp" 2>/dev/null || true
		rm -rf "$tmp"
		mkdir -p "$tmp"
		t0=$(now)
		"build_$n" "$tmp/root"
		note "$n: rootfs built in $(since "$t0") s ($(du -sh "$tmp/root" | cut -f1), $(find "$tmp/root" -type f | wc -l) files)"
		t0=$(now)
		make_sqfs "$n" "$tmp/root" "$tmp/$n.sqfs"
		note "$n: mksquashfs in $(since "$t0") s ($(du -h "$tmp/$n.sqfs" | cut -f1))"
		rm -f "$OUT/$n.stamp"
		rm -rf "$OUT/$n"
		mv "$tmp/root" "$OUT/$n"
		mv "$tmp/$n.sqfs" "$OUT/$n.sqfs"
	fi
	mkdir -p "$tmp"
	make_sif "$OUT/$n.sqfs" "$tmp/$n.sif"
	mv "$tmp/$n.sif" "$OUT/$n.sif"
	rm -rf "$tmp"
	echo "$sh" >"$OUT/$n.stamp"
	note "$n: $OUT/$n.sif made with $sif_method"
}

# Nothing to do (possibly in a directory we cannot write): say so and stop.
all_fresh=1
for n in $NAMES; do
	up_to_date "$n" "$(inputs_hash "$n") $(mpictr_hash)" || all_fresh=0
done
if [ "$all_fresh" = 1 ]; then
	for n in $NAMES; do note "$n: up to date ($OUT/$n.sif)"; done
	exit 0
fi

# Not writable (another user's build tree): images whose contents are up to
# date but whose SIF came from an older mpictr binary are good enough.
if [ -d "$OUT" ] && ! [ -w "$OUT" ]; then
	for n in $NAMES; do
		[ -f "$OUT/$n.stamp" ] && [ -f "$OUT/$n.sif" ] &&
			[ "$(cut -d' ' -f1 "$OUT/$n.stamp")" = "$(inputs_hash "$n")" ] ||
			die "cannot write to '$OUT' and its $n image is out of date"
		note "$n: up to date ($OUT/$n.sif; SIF made by an older mpictr, '$OUT' not writable)"
	done
	exit 0
fi
mkdir -p "$OUT"
[ -w "$OUT" ] || die "cannot write to '$OUT' and its images are out of date"
exec 9>"$OUT/.lock"
flock -w 600 9 || die "timed out waiting for the lock on '$OUT/.lock'"
for n in $NAMES; do build_one "$n"; done
