#!/bin/bash
# 39-fakeroot.sh - --fakeroot (the plugin's --container-remap-root) that
# package managers accept: in a user namespace that maps only the user
# (to 0), setgroups, setuid/setgid to other ids, chown to other ids and
# mknod of a device fail; a seccomp filter (the plugin mpictr-seccomp.so)
# makes them report success, as Enroot's and Apptainer's fakeroot do, and
# only under --fakeroot. The calls are apt's _apt sandbox's and dpkg's
# (tests/probes/fakeroot.c), in the CLI, an instance, join mode and the
# SPANK plugin; and apt-get itself, from a local file:// repository, in a
# Debian image made of the host's apt and dpkg.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 120"
require_userns_fuse
require_images tiny
PROBE=$ROOT/build/tests/fakeroot-probe
[ -x "$PROBE" ] || { need "the fakeroot probe" "build/tests/fakeroot-probe not built (make integration builds it)"; done_testing; exit; }
W=$(mktemp -d /var/tmp/mpictr-fakeroot.XXXXXX) || exit 1
chmod 0755 "$W"
N=fr$$
trap '"$MPICTR" instance stop $N >/dev/null 2>&1; t_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
private_tmpdir
mkdir "$W/p"
cp "$PROBE" "$W/p/"
I=$IMG/tiny.sif
RUNP='mkdir -p /var/fr && /opt/p/fakeroot-probe /var/fr'

ok "--fakeroot --writable-tmpfs: setgroups, setres[ug]id, chown family, mknod of a device report success" \
	bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs -B '$W/p:/opt/p' '$I' sh -c '$RUNP' | grep -qx fakeroot-ok"
ok "... the filter is on (Seccomp: 2)" \
	bash -c "$T '$MPICTR' --fakeroot '$I' grep -qx 'Seccomp:.2' /proc/self/status"
ok "... a plain mknod of a fifo still makes a fifo" \
	bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs '$I' sh -c 'mknod /var/f p && test -p /var/f'"
ok "without --fakeroot: no filter (Seccomp: 0)" \
	bash -c "$T '$MPICTR' '$I' grep -qx 'Seccomp:.0' /proc/self/status"
ok "... and the calls fail as the kernel says (chown to another id: Invalid argument)" \
	bash -c "mkdir -p '$W/d' && $T '$MPICTR' -B '$W/p:/opt/p' -B '$W/d:/var/fr' '$I' /opt/p/fakeroot-probe /var/fr | grep -qx 'chown: Invalid argument'"
ok "instance start --fakeroot --writable-tmpfs" $T "$MPICTR" instance start --fakeroot --writable-tmpfs -B "$W/p:/opt/p" "$I" $N
ok "... exec: the calls report success" bash -c "$T '$MPICTR' exec instance://$N sh -c '$RUNP' | grep -qx fakeroot-ok"
ok "... instance stop" $T "$MPICTR" instance stop $N
# apt-get itself: an image of the host's apt and dpkg (with their
# libraries: tests/images/elfclosure.py) on the busybox image, and a local
# repository (file:, no network) with a package whose files are owned by
# an id the user namespace does not map (the user's own, packed without
# --root-owner-group), which dpkg chowns to.
deb_image() {
	local R=$W/deb/root f files=""
	mkdir -p "$W/deb" && cp -a "$IMG/tiny" "$R" && chmod -R u+w "$R" || return 1
	for f in /usr/bin/apt-get /usr/bin/apt-config /usr/bin/dpkg /usr/bin/dpkg-deb \
		/usr/bin/dpkg-split /usr/bin/dpkg-query /usr/sbin/start-stop-daemon \
		/usr/sbin/ldconfig /usr/bin/tar /usr/bin/diff /usr/lib/apt/methods/file \
		/usr/lib/apt/methods/copy /usr/lib/apt/methods/store /usr/lib/apt/methods/gpgv \
		/usr/lib/apt/apt-helper; do
		[ -e "$f" ] && files="$files $f"
	done
	# shellcheck disable=SC2086
	python3 "$ROOT/tests/images/elfclosure.py" copy "$R" $files || return 1
	mkdir -p "$R/usr/share/dpkg" "$R/etc/apt/apt.conf.d" "$R/etc/apt/sources.list.d" \
		"$R/etc/apt/preferences.d" "$R/etc/apt/trusted.gpg.d" "$R/var/lib/dpkg/info" \
		"$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$R/var/lib/apt/lists/partial" \
		"$R/var/cache/apt/archives/partial" "$R/var/log/apt" "$R/etc/dpkg/dpkg.cfg.d" "$R/repo" || return 1
	cp /usr/share/dpkg/*table "$R/usr/share/dpkg/" || return 1
	: >"$R/var/lib/dpkg/status"
	: >"$R/var/lib/dpkg/available"
	echo 12 >"$R/etc/debian_version"
	echo '_apt:x:42:65534::/nonexistent:/bin/false' >>"$R/etc/passwd"
	echo 'deb [trusted=yes] file:/repo ./' >"$R/etc/apt/sources.list"
	mkdir -p "$W/deb/pkg/DEBIAN" "$W/deb/pkg/usr/share/mpictr-hello" "$W/deb/repo" || return 1
	printf 'Package: mpictr-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: mpictr <t@example.org>\nDescription: test\n' >"$W/deb/pkg/DEBIAN/control"
	echo hello-from-deb >"$W/deb/pkg/usr/share/mpictr-hello/hello"
	dpkg-deb --build "$W/deb/pkg" "$W/deb/repo/mpictr-hello_1.0_all.deb" >/dev/null &&
		(cd "$W/deb/repo" && dpkg-scanpackages . /dev/null >Packages 2>/dev/null) &&
		mksquashfs "$R" "$W/deb.sqfs" -noappend -quiet -all-root >/dev/null
}
if command -v apt-get >/dev/null && command -v dpkg-scanpackages >/dev/null && deb_image; then
	APT='apt-get -q update >/dev/null && apt-get -q install -y mpictr-hello >/dev/null && cat /usr/share/mpictr-hello/hello && dpkg-query -W -f "\${Status}\n" mpictr-hello'
	ok "--fakeroot --writable-tmpfs: apt-get update and install from a file: repository" \
		bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs -B '$W/deb/repo:/repo' '$W/deb.sqfs' sh -c '$APT' | tr '\n' ' ' | grep -qx 'hello-from-deb install ok installed '"
	ok "... apt's sandbox user is root there (as Enroot's aptfix)" \
		bash -c "$T '$MPICTR' --fakeroot --writable-tmpfs '$W/deb.sqfs' grep -qx 'APT::Sandbox::User \"root\";' /etc/apt/apt.conf.d/mpictr-fakeroot"
	ok "... without --fakeroot, none of it (apt-get update is refused)" \
		bash -c "! $T '$MPICTR' --writable-tmpfs -B '$W/deb/repo:/repo' '$W/deb.sqfs' sh -c 'test -e /etc/apt/apt.conf.d/mpictr-fakeroot || apt-get -q update' >/dev/null 2>&1"
else
	need "apt-get in a Debian image" "apt-get, dpkg-scanpackages (dpkg-dev) or the image build failed"
fi

if slurm_up; then
	ok "srun mpictr --fakeroot (join mode): the calls report success" \
		bash -c "$T srun -n 1 '$MPICTR' --fakeroot --writable-tmpfs -B '$W/p:/opt/p' '$I' sh -c '$RUNP' | grep -qx fakeroot-ok"
	if spank_ready && [ -f "$ROOT/build/plugins/mpictr-spank.so" ] && spank_installed "$ROOT/build/plugins"; then
		ok "srun --container-remap-root (the plugin): the calls report success" \
			bash -c "$T srun -n 1 --container-image='$I' --container-remap-root --container-writable --container-mounts='$W/p:/opt/p' sh -c '$RUNP' | grep -qx fakeroot-ok"
		ok "... without --container-remap-root: no filter" \
			bash -c "$T srun -n 1 --container-image='$I' grep -qx 'Seccomp:.0' /proc/self/status"
	else
		need "the plugin's --container-remap-root filter" "the installed plugin is not this tree's build: $(spank_install_cmd "$ROOT/build/plugins")"
	fi
else
	need "srun --fakeroot" "the test Slurm (tests/slurm/cluster.sh) is not up"
fi
done_testing
