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
