#!/bin/bash
# 77-save-fds.sh - the mksquashfs that `mpictr instance save` runs (the
# code path of the plugin's --container-save too: modes/save.c pack,
# sif_mksquashfs_keep) inherits its stdio and the stage directory only,
# never a descriptor its caller holds (slurmstepd's, in the plugin; issue
# 31, item 11; the saver's non-dumpable flag: tests/unit/check_sif.c). A
# stand-in mksquashfs (MPICTR_MKSQUASHFS) records what it was given, then
# runs the real one. Before the fix, fd 77 reached mksquashfs.
. "$(dirname "$0")/lib.sh"

T="timeout -k 5 90"
require_userns_fuse "user namespaces and /dev/fuse" "instances mount the image through FUSE in a user namespace"
require_images tiny

W=$(mktemp -d /var/tmp/mpictr-savefds.XXXXXX) || exit 1
chmod 0755 "$W"
N=savefds$$
trap '"$MPICTR" instance stop $N >/dev/null 2>&1; t_cleanup; rm -rf "$W"' EXIT
cat >"$W/mksquashfs" <<EOF2
#!/bin/sh
# the descriptors this process got (the shell's own script fd aside)
for f in /proc/\$\$/fd/*; do echo "\${f##*/} \$(readlink "\$f")"; done >"$W/fds"
exec mksquashfs "\$@"
EOF2
chmod 0755 "$W/mksquashfs"
echo marker >"$W/held"

ok "instance start" $T "$MPICTR" instance start "$IMG/tiny.sif" $N
# fd 77: held open (not close-on-exec) by whoever runs the save
save() { exec 77<"$W/held"; MPICTR_MKSQUASHFS=$W/mksquashfs $T "$MPICTR" instance save $N "$W/saved.sqfs"; }
ok "instance save through the stand-in mksquashfs" save
check "... the image was saved" unsquashfs -l "$W/saved.sqfs"
check "... mksquashfs saw its descriptors" test -s "$W/fds"
check "... and not the caller's descriptor 77" bash -c "cat '$W/fds'; ! grep -q '^77 ' '$W/fds'"
check "... nor any other file the caller held ('held')" bash -c "! grep -q '$W/held' '$W/fds'"
ok "instance stop" $T "$MPICTR" instance stop $N
done_testing
