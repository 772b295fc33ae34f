#!/bin/bash
# 05-images.sh - the generated test images (tests/images/build.sh): valid
# squashfs and SIF, root-owned with a setuid probe, complete ELF closure,
# and usable: MPI programs run inside them without mpictr (chroot-run.sh).
. "$(dirname "$0")/lib.sh"

IMG=${MPICTR_TEST_IMAGES:-$ROOT/build/images}
BUILD=$ROOT/tests/images/build.sh
CHK=$ROOT/tests/images/elfclosure.py
RUN=$ROOT/tests/images/chroot-run.sh
T="timeout -k 5 60"
LAST=$T_TMP/last
keep() { cp "$T_OUT" "$LAST"; } # the last test's output, for the "..." checks

ok "build.sh builds the tiny and mpi images" "$BUILD" "$IMG" all
sed 's/^/# /' "$T_OUT"

t0=$(date +%s%N)
ok "a second build.sh with nothing changed does nothing" \
	bash -c "'$BUILD' '$IMG' all | grep -c 'up to date' | grep -qx 2"
ms=$((($(date +%s%N) - t0) / 1000000))
ok "... and takes under 5 s (took ${ms} ms)" test "$ms" -lt 5000

ok_status "build.sh refuses an unknown image name" 1 "$BUILD" "$T_TMP/x" huge

# squashfs partition of a SIF: "ID |GROUP |LINK |START-END |TYPE"
sif_range() { siftool list "$1" | awk -F'|' '/Squashfs/ { gsub(/ /, "", $4); print $4; exit }'; }
sif_matches_sqfs() { # SIF SQFS: the partition holds exactly the squashfs bytes
	local r s e
	r=$(sif_range "$1") || return 1
	s=${r%-*} e=${r#*-}
	[ -n "$s" ] && [ $((e - s)) = "$(stat -c %s "$2")" ] &&
		tail -c +$((s + 1)) "$1" | head -c $((e - s)) | cmp -s - "$2"
}

for n in tiny mpi; do
	ok "$n.sqfs is a gzip squashfs" bash -c "unsquashfs -s '$IMG/$n.sqfs' | grep -q '^Compression gzip'"
	ok "$n.sif lists one squashfs partition" bash -c "siftool list '$IMG/$n.sif' | grep -q 'FS (Squashfs/\*System/amd64)'"
	ok "$n.sif partition is byte-identical to $n.sqfs" sif_matches_sqfs "$IMG/$n.sif" "$IMG/$n.sqfs"
	ok "$n.sqfs: every file is owned by root" bash -c \
		"unsquashfs -lls '$IMG/$n.sqfs' | awk 'NR > 3 && \$2 != \"root/root\" { bad++; print } END { exit bad > 0 }'"
	ok "$n.sqfs has the mount points a runtime binds over" bash -c "
		L=\$(unsquashfs -lls '$IMG/$n.sqfs')
		for p in dev proc sys tmp home var/tmp; do echo \"\$L\" | grep -qE \"^d.* squashfs-root/\$p\$\" || { echo missing dir \$p; exit 1; }; done
		for p in etc/hosts etc/resolv.conf etc/passwd etc/group; do echo \"\$L\" | grep -qE \"^-.* squashfs-root/\$p\$\" || { echo missing file \$p; exit 1; }; done
		echo \"\$L\" | grep -qE '^drwxrwxrwt .* squashfs-root/tmp$'"
	ok "$n: ELF closure complete (elfclosure.py check)" python3 "$CHK" check "$IMG/$n"
done

LS=$T_TMP/tiny.lls
unsquashfs -lls "$IMG/tiny.sqfs" >"$LS"
check "tiny.sqfs: /usr/bin/suidbox is setuid root (4755 root/root)" \
	grep -qE '^-rwsr-xr-x root/root .* squashfs-root/usr/bin/suidbox$' "$LS"
check "tiny.sqfs: /usr/bin/suidprobe is 6755 root/root" \
	grep -qE '^-rwsr-sr-x root/root .* squashfs-root/usr/bin/suidprobe$' "$LS"
check "tiny.sqfs: /probe/null is a char device 1,3" \
	grep -qE '^crw-rw-rw- root/root +1, +3 .* squashfs-root/probe/null$' "$LS"
check "tiny.sqfs: escape links /escape and /etc-link" \
	bash -c "grep -q 'squashfs-root/escape -> /host/etc' '$LS' && grep -q 'squashfs-root/etc-link -> ../../../../etc' '$LS'"
check "tiny: busybox applets are links to busybox" \
	bash -c "for a in sh ls cat id env mount mknod; do [ \"\$(readlink '$IMG/tiny/usr/bin/'\$a)\" = busybox ] || exit 1; done"
check "tiny: usrmerge layout" bash -c "[ \"\$(readlink '$IMG/tiny/bin')\" = usr/bin ] && [ \"\$(readlink '$IMG/tiny/lib64')\" = usr/lib64 ]"
check "tiny: 90-environment.sh sets TINY_IMAGE and PATH" \
	bash -c "grep -q 'export TINY_IMAGE=1' '$IMG/tiny/.singularity.d/env/90-environment.sh' && grep -q '/opt/tiny/bin:' '$IMG/tiny/.singularity.d/env/90-environment.sh'"

for c in "$ROOT"/tests/mpi/*.c; do
	grep -q '#include <mpi.h>' "$c" || continue # raw PMIx clients stay out
	p=$(basename "$c" .c)
	check "mpi: /opt/mpictr/bin/$p and $p-mpich are executables" \
		test -x "$IMG/mpi/opt/mpictr/bin/$p" -a -x "$IMG/mpi/opt/mpictr/bin/$p-mpich"
done
check "mpi: Open MPI links libmpi, MPICH build links libmpich" bash -c "
	readelf -d '$IMG/mpi/opt/mpictr/bin/hello' | grep -q 'libmpi.so.40' &&
	readelf -d '$IMG/mpi/opt/mpictr/bin/hello-mpich' | grep -q 'libmpich.so.12'"
check "mpi: Open MPI, PMIx and UCX plugins are in the image" bash -c "
	cd '$IMG/mpi/usr/lib/x86_64-linux-gnu' && test -f openmpi/lib/openmpi3/mca_pml_ucx.so &&
	test -f openmpi/lib/openmpi3/mca_pmix_ext3x.so && ls pmix2/lib/pmix/*.so >/dev/null &&
	ls ucx/libuct_cma.so* >/dev/null && test -f /$IMG/mpi/etc/openmpi/openmpi-mca-params.conf"
check "mpi: ld.so.cache made by ldconfig -r" test -s "$IMG/mpi/etc/ld.so.cache"

# the checker must be able to fail: a program without its libraries
broken_root() {
	mkdir -p "$T_TMP/broken/usr/bin" "$T_TMP/broken/usr/lib64"
	ln -s usr/lib64 "$T_TMP/broken/lib64"
	cp "$IMG/mpi/opt/mpictr/bin/hello" "$T_TMP/broken/usr/bin/"
	python3 "$CHK" check "$T_TMP/broken"
}
ok_status "elfclosure.py check fails on a root missing libraries" 1 broken_root
keep
check "... and names the missing library" grep -q 'needs libmpi.so.40, not in the image' "$LAST"

# the images work: run them without mpictr
if ! have_userns; then
	need "images run (chroot-run.sh)" "unprivileged user namespaces"
elif ! have_fuse; then
	need "images run (chroot-run.sh)" "/dev/fuse usable (chmod 0666 /dev/fuse)"
else
	ok "tiny.sif: env scripts in order, PATH, runscript" $T "$RUN" "$IMG/tiny.sif" sh -c \
		'for f in /.singularity.d/env/*.sh; do . $f; done; echo "order=$TINY_ORDER image=$TINY_IMAGE"; hello-tiny x y; /.singularity.d/runscript a b'
	keep
	check "... output is right" bash -c "grep -qx 'order=10 90 image=1' '$LAST' &&
		grep -qx 'hello-tiny: uid $(id -u) args x y' '$LAST' && grep -qx 'runscript: a b' '$LAST'"
	ok "tiny.sqfs: static suidprobe runs under squashfuse" $T "$RUN" "$IMG/tiny.sqfs" /usr/bin/suidprobe
	keep
	# the squashfuse mount belongs to chroot-run's root-mapped namespace:
	# the image's root owner is the caller, so setuid changes nothing
	check "... and prints the caller's ids" grep -qx "uid=$(id -u) euid=$(id -u) gid=$(id -g) egid=$(id -g)" "$LAST"

	OMPI_ENV="OMPI_MCA_plm_rsh_agent=false OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
	# shellcheck disable=SC2086
	ok "mpi.sif: Open MPI hello, mpirun -n 2 inside the image" $T "$RUN" "$IMG/mpi.sif" \
		env $OMPI_ENV mpirun --oversubscribe -n 2 /opt/mpictr/bin/hello
	keep
	check "... 2 ranks, allreduce ok" test "$(grep -c '^hello rank [01]/2 .* allreduce 1 ok' "$LAST")" = 2
	# shellcheck disable=SC2086
	ok "mpi.sqfs: Open MPI UCX ping-pong (pml ucx, posix+cma) inside the image" $T "$RUN" "$IMG/mpi.sqfs" \
		env $OMPI_ENV OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any OMPI_MCA_pml_ucx_tls=any \
		OMPI_MCA_btl='^vader,openib,uct' UCX_TLS=self,posix,cma \
		mpirun --oversubscribe -n 2 /opt/mpictr/bin/pingpong 5 1048576
	keep
	check "... data checked" grep -qx 'pingpong ok' "$LAST"
	ok "mpi rootfs: MPICH hello-mpich, mpiexec.hydra -n 2 inside the image" $T "$RUN" "$IMG/mpi" \
		mpiexec.mpich -n 2 /opt/mpictr/bin/hello-mpich
	keep
	check "... 2 ranks, allreduce ok" test "$(grep -c '^hello rank [01]/2 .* allreduce 1 ok' "$LAST")" = 2
	check "no squashfuse_ll left running" bash -c "! pgrep -u '$(id -u)' -x squashfuse_ll"
fi
done_testing
