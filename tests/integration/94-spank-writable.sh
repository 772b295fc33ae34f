#!/bin/bash
# 94-spank-writable.sh - the SPANK plugin's writable containers (issue 32):
# under --container-writable the whole tree the image provides takes
# writes, / and /etc included (root's directories with
# --container-remap-root), also where the image lacks /etc/hosts and
# /etc/resolv.conf; the files mpictr provides stay; a named container
# keeps the writes for the job's next step and --container-save saves
# them; --container-readonly stays read-only; the plugin argument
# container_writable= (the site's default, as Enroot's
# ENROOT_ROOTFS_WRITABLE under Pyxis) is checked (shown with a private
# plugstack.conf on the client side: the tasks read the cluster's).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 120"
require_slurm
spank_ready || { need "plugstack.conf loads $SPANK_DIR/mpictr-spank.so" "a cluster set up by tests/slurm/cluster.sh"; done_testing; exit; }
require_userns_fuse
require_images tiny
[ -f "$ROOT/build/plugins/mpictr-spank.so" ] || { need "mpictr-spank.so built" "libslurm-dev (Slurm's spank.h)"; done_testing; exit; }
if ! spank_installed "$ROOT/build/plugins"; then
	need "the installed plugin is this tree's build (cmp)" "install it as root: $(spank_install_cmd "$ROOT/build/plugins")"
	done_testing
	exit
fi
W=$(mktemp -d /var/tmp/mpictr-spankw.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
NAME=mpw$$
# root's files, and no /etc/hosts, /etc/resolv.conf: mpictr binds the host's
mkdir "$W/noetc" && cp -a "$IMG/tiny/." "$W/noetc/" && chmod -R u+w "$W/noetc" && rm -f "$W/noetc/etc/hosts" "$W/noetc/etc/resolv.conf"
mksquashfs "$W/noetc" "$W/noetc.sqfs" -noappend -quiet -all-root >/dev/null 2>&1
SUM=$(sha256sum <"$W/noetc.sqfs")
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
cp /etc/hosts "$W/hosts.ref"

# shellcheck disable=SC2016
WRITE='touch /newfile && echo e >/etc/x && echo u >/usr/x && echo v >/var/x && [ "$(cat /etc/x /usr/x /var/x | tr -d "\n")" = euv ] && cmp -s /etc/hosts /opt/hosts.ref && grep -q "^$(id -un):x:$(id -u):" /etc/passwd && echo files-ok'
BIND="--container-mounts=$W/hosts.ref:/opt/hosts.ref"
# wrote [N]: N lines (of N tasks), each saying all went well
wrote() { [ "$(grep -cx files-ok)" = "${1:-1}" ]; }
export -f wrote

for f in tiny.sif noetc.sqfs; do
	ok "--container-writable --container-remap-root $f: /newfile, /etc/x, /usr/x, /var/x written; hosts, passwd kept" \
		bash -c "$T srun -n 1 --container-image='$W/$f' $BIND --container-writable --container-remap-root sh -c '$WRITE' | wrote"
done
ok "... two tasks of a step, both" \
	bash -c "$T srun -n 2 --container-image='$W/noetc.sqfs' $BIND --container-writable --container-remap-root sh -c '$WRITE' | wrote 2"
ok "--container-readonly: / and /etc are not writable" \
	bash -c "$T srun -n 1 --container-image='$W/noetc.sqfs' --container-readonly --container-remap-root sh -c 'touch /newfile || echo >/etc/x || echo refused' 2>&1 | grep -qx refused"

# Pyxis's workflow: write in step 1, use in step 2, save.
cat >"$W/flow.sh" <<EOF
#!/bin/sh
#SBATCH --output=$W/out.flow
srun -n 1 --container-image=$W/noetc.sqfs $BIND --container-name=w --container-writable --container-remap-root sh -c '$WRITE'
srun -n 2 --container-name=w sh -c 'echo STEP2 \$(cat /newfile /etc/x /usr/x /var/x | tr -d "\n")'
srun -n 1 --container-name=w --container-save=$W/saved.sqfs sh -c 'echo s >/etc/saved'
# slurmstepd saves once the step's tasks have ended: srun may return first
for i in \$(seq 100); do [ -s $W/saved.sqfs ] && break; sleep 0.2; done; sleep 1
srun -n 1 --container-image=$W/saved.sqfs sh -c 'echo SAVED \$(cat /etc/x /usr/x /var/x /etc/saved | tr -d "\n"); test -e /newfile && echo SAVED newfile'
EOF
ok "sbatch: step 1 writes /newfile, /etc/x, /usr/x, /var/x in a writable named container" \
	bash -c "$T sbatch --wait -J $NAME-flow -n 2 '$W/flow.sh'; grep -qx files-ok '$W/out.flow'"
check "... step 2 with only --container-name reads them (both tasks)" test "$(grep -c '^STEP2 euv$' "$W/out.flow")" = 2
check "... --container-save saved them" sh -c "grep -qx 'SAVED euvs' '$W/out.flow' && grep -qx 'SAVED newfile' '$W/out.flow'"
check "... and not the mount points mpictr made (the host's hosts, the bind)" \
	sh -c "unsquashfs -l '$W/saved.sqfs' | grep -qx squashfs-root/etc/x && ! unsquashfs -l '$W/saved.sqfs' | grep -qE 'squashfs-root/(etc/hosts|opt/hosts.ref)$'"
ok "the image file is unchanged" test "$(sha256sum <"$W/noetc.sqfs")" = "$SUM"

# ---- the site's default: container_writable= ----------------------------------
mkdir "$W/conf"
cp "${SLURM_CONF%/*}"/*.conf "$W/conf/" 2>/dev/null
printf 'optional %s/mpictr-spank.so image_dirs=/var/tmp container_writable=maybe\n' "$SPANK_DIR" >"$W/conf/plugstack.conf"
ok "plugstack.conf container_writable=maybe: named as not yes or no" \
	bash -c "SLURM_CONF='$W/conf/slurm.conf' srun --help 2>&1 | grep -q \"plugstack.conf: container_writable: 'maybe' is not yes or no\""
for v in yes no; do
	printf 'optional %s/mpictr-spank.so image_dirs=/var/tmp container_writable=%s\n' "$SPANK_DIR" "$v" >"$W/conf/plugstack.conf"
	ok "plugstack.conf container_writable=$v: accepted (srun loads the plugin)" \
		bash -c "SLURM_CONF='$W/conf/slurm.conf' srun --help >'$W/help' 2>&1; grep -q -- --container-writable '$W/help' && ! grep -q 'plugstack.conf' '$W/help'"
done
done_testing
