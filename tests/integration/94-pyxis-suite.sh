#!/bin/bash
# 94-pyxis-suite.sh - Pyxis's own test suite (tests/*.bats of the public
# NVIDIA/pyxis repository, release 0.24) against mpictr-spank.so, case by
# case, in this project's words and images: each check is named
# "pyxis FILE: CASE" after the bats case it ports. Docker Hub images are
# replaced by local ones (the tiny test image, two variants of it that
# tell themselves apart, and busybox images pushed to a local registry,
# tests/integration/registry.sh); `findmnt` by /proc/self/mountinfo;
# `apt-get install` by a file written into a writable container. Not
# ported: what checks Enroot itself (`enroot exec`, `enroot export`,
# Enroot's hooks), GPUs, images this machine cannot build (distribution
# releases, NGC, package installs from the network), the seccomp cases
# (tested with the seccomp filter, 91-spank-pyxis.sh), and the deliberate
# differences of docs/slurm.md ("mpictr and Pyxis"), which are checked
# here as the clear refusals they are. Item 1 of issue 32 too: a registry
# image lands in the job user's own cache (~/.cache/mpictr) without
# MPICTR_CACHEDIR, whatever slurmd's HOME is.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 120"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID
require_slurm
spank_ready || { need "plugstack.conf loads $SPANK_DIR/mpictr-spank.so" "a cluster set up by tests/slurm/cluster.sh"; done_testing; exit; }
require_userns_fuse
require_images tiny
if ! spank_installed "$ROOT/build/plugins"; then
	need "the installed plugin is this tree's build (cmp)" "install it as root: $(spank_install_cmd "$ROOT/build/plugins")"
	done_testing
	exit
fi
for tool in docker-registry skopeo umoci busybox; do
	command -v "$tool" >/dev/null || { need "registry tools" "$tool is not installed"; done_testing; exit; }
done
W=$(mktemp -d /var/tmp/mpictr-pyxis-suite.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
RW=$W/reg
. "$ROOT/tests/integration/registry.sh"
trap 'reg_cleanup; t_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
unset MPICTR_CACHEDIR XDG_CACHE_HOME
NAME=pxs$$
S="$T srun -n 1"
# A --container-save ends after srun returned (Pyxis's tests sleep 1 s
# after one): saved PATH waits until a save newer than $W/stamp is there.
saved() {
	local i
	for i in $(seq 100); do
		[ "$1" -nt "$W/stamp" ] && return 0
		sleep 0.1
	done
	return 1
}

# Images: a.sqfs and b.sqfs (the tiny image, /etc/os-release telling them
# apart; files the user's, so that they are writable without remapping
# root), ep.sif (busybox; Entrypoint /ep.sh sets EP_RAN and prints a
# banner; /docker-entrypoint.sh edits /etc/ep.conf, as nginx's does), and
# bb (img_busybox: Env GREETING=hello, WorkingDir /data) in a registry.
mkimg() { # NAME ID
	cp -a "$IMG/tiny" "$W/$1" && chmod -R u+w "$W/$1" && rm -f "$W/$1/etc/os-release" &&
		printf 'ID=%s\nPRETTY_NAME="pyxis test %s"\n' "$2" "$2" >"$W/$1/etc/os-release" &&
		printf '%s\n' '#!/bin/sh' \
			'# mnt DIR: a mount point that is not the image'"'"'s own, as findmnt lists' \
			'# (mpictr mounts the image'"'"'s top directories, /root among them)' \
			'awk -v m="$1" '"'"'$5 == m && !/ - fuse[.]squashfuse / { f = 1 } END { exit !f }'"'"' /proc/self/mountinfo' \
			>"$W/$1/usr/bin/mnt" && chmod 755 "$W/$1/usr/bin/mnt" &&
		mksquashfs "$W/$1" "$W/$1.sqfs" -noappend -quiet >/dev/null 2>&1
}
mkep() {
	local u=$W/ep.unpack
	umoci init --layout "$W/ep" >/dev/null && umoci new --image "$W/ep:latest" >/dev/null &&
		umoci unpack --rootless --image "$W/ep:latest" "$u" >/dev/null || return 1
	mkdir -p "$u/rootfs/bin" "$u/rootfs/etc"
	cp "$(command -v busybox)" "$u/rootfs/bin/"
	for l in sh echo cat env id test grep touch pwd readlink sleep ls true mkdir; do ln -s busybox "$u/rootfs/bin/$l"; done
	printf '#!/bin/sh\nexport EP_RAN=yes\necho "== EP banner =="\nexec "$@"\n' >"$u/rootfs/ep.sh"
	printf '#!/bin/sh\necho "listen [::]:80;" >>/etc/ep.conf\nexec "$@"\n' >"$u/rootfs/docker-entrypoint.sh"
	printf '#!/bin/sh\necho found\n' >"$u/rootfs/bin/only-in-image"
	echo "listen 80;" >"$u/rootfs/etc/ep.conf"
	chmod 755 "$u/rootfs/ep.sh" "$u/rootfs/docker-entrypoint.sh" "$u/rootfs/bin/only-in-image"
	umoci repack --image "$W/ep:latest" "$u" >/dev/null &&
		umoci config --image "$W/ep:latest" --config.entrypoint /ep.sh --config.env PATH=/bin \
			--config.env GREETING=hello >/dev/null &&
		$T "$MPICTR" pull -q "oci:$W/ep:latest" "$W/ep.sif"
}
ok "test images: a.sqfs, b.sqfs" bash -c "$(declare -f mkimg); IMG='$IMG' W='$W'; mkimg a pyxis-a && mkimg b pyxis-b"
ok "test image: ep.sif (an Entrypoint script)" mkep
reg_start p plain || { need "plain registry" "docker-registry did not start"; done_testing; exit; }
img_busybox "$W/bb" && push "$W/bb" "$REG_p/test/busybox:1" ||
	{ need "test image" "umoci or skopeo failed"; done_testing; exit; }
export MPICTR_PULL_INSECURE=$REG_p
BB=docker://$REG_p/test/busybox:1
A=$W/a.sqfs
B=$W/b.sqfs
EP=$W/ep.sif

# sbatch JOBNAME: run $W/JOBNAME.sh (a bash script of steps of one job:
# Pyxis's tests run in one allocation) and print its output.
job() {
	local n=$1
	$T sbatch --wait -J "$NAME-$n" -n 4 --overcommit -o "$W/out.$n" "$W/$n.sh" >/dev/null 2>&1
	local rc=$?
	cat "$W/out.$n"
	return $rc
}

# ---- item 1: the job user's image cache ---------------------------------------------
CACHE=$HOME/.cache/mpictr
ok "pyxis docker_image: docker:// explicit import (a local registry; no MPICTR_CACHEDIR)" \
	bash -c "$S --container-image='$BB' sh -c 'echo \$GREETING' | grep -qx hello"
check "... the image is in the job user's cache ($CACHE), not slurmstepd's HOME's" \
	bash -c "[ \"\$(ls '$CACHE/images/sha256' 2>/dev/null | wc -l)\" -ge 1 ] && [ -n \"\$(find '$CACHE' -newer '$W/bb' -type f 2>/dev/null | head -1)\" ]"
ok "... with HOME and XDG_CACHE_HOME not in the job's environment: the user database's home" \
	bash -c "env -u HOME -u XDG_CACHE_HOME $S --container-image='$BB' sh -c 'echo \$GREETING' | grep -qx hello"

# ---- env_vars.bats: the PYXIS_CONTAINER_* variables --------------------------------
osid() { grep -q "^ID=$1\$" /etc/os-release 2>/dev/null; }
ok "pyxis env_vars: PYXIS_CONTAINER_IMAGE environment variable" \
	bash -c "PYXIS_CONTAINER_IMAGE='$A' $S grep -qx ID=pyxis-a /etc/os-release"
ok "pyxis env_vars: PYXIS_CONTAINER_IMAGE: command line precedence" \
	bash -c "PYXIS_CONTAINER_IMAGE='$A' $S --container-image='$B' grep -qx ID=pyxis-b /etc/os-release"
ok "pyxis env_vars: PYXIS_CONTAINER_MOUNTS environment variable" \
	bash -c "PYXIS_CONTAINER_MOUNTS=/home:/test-mnt $S --container-image='$A' sh -c 'mnt /test-mnt'"
ok "pyxis env_vars: PYXIS_CONTAINER_MOUNTS: command line precedence" \
	bash -c "PYXIS_CONTAINER_MOUNTS=/home:/mnt-env $S --container-image='$A' --container-mounts=/tmp:/mnt-cli sh -c 'mnt /mnt-cli && ! mnt /mnt-env'"
ok "pyxis env_vars: PYXIS_CONTAINER_WORKDIR environment variable" \
	bash -c "PYXIS_CONTAINER_WORKDIR=/usr/bin $S --container-image='$A' pwd | tail -n 1 | grep -qx /usr/bin"
ok "pyxis env_vars: PYXIS_CONTAINER_WORKDIR: command line precedence" \
	bash -c "PYXIS_CONTAINER_WORKDIR=/usr/bin $S --container-image='$A' --container-workdir=/tmp pwd | tail -n 1 | grep -qx /tmp"
cat >"$W/envname.sh" <<EOF
#!/bin/bash
PYXIS_CONTAINER_NAME=env-test srun -n 1 --container-image=$A --container-writable sh -c 'echo f >/usr/bin/file-tool' || exit 1
srun -n 1 --container-name=env-test test -e /usr/bin/file-tool && echo NAME-OK
PYXIS_CONTAINER_NAME=env-test srun -n 1 --container-image=$A --container-name=env-test2 --container-writable sh -c 'echo m >/usr/bin/make-tool' || exit 1
srun -n 1 --container-name=env-test2 test -e /usr/bin/make-tool && echo PREC-OK
srun -n 1 --container-name=env-test test -e /usr/bin/make-tool || echo PREC-NOT-IN-OTHER
EOF
job envname >/dev/null
check "pyxis env_vars: PYXIS_CONTAINER_NAME environment variable" grep -qx NAME-OK "$W/out.envname"
check "pyxis env_vars: PYXIS_CONTAINER_NAME: command line precedence" \
	bash -c "grep -qx PREC-OK '$W/out.envname' && grep -qx PREC-NOT-IN-OTHER '$W/out.envname'"
ok "pyxis env_vars: PYXIS_CONTAINER_SAVE environment variable" \
	bash -c "$(declare -f saved); W='$W'; touch '$W/stamp'; PYXIS_CONTAINER_SAVE='$W/env-test.sqsh' $S --container-image='$A' --container-writable sh -c 'echo pyxis >/etc/test' && saved '$W/env-test.sqsh' && $S --container-image='$W/env-test.sqsh' cat /etc/test | tail -n 1 | grep -qx pyxis"
ok "pyxis env_vars: PYXIS_CONTAINER_SAVE: command line precedence" \
	bash -c "$(declare -f saved); W='$W'; touch '$W/stamp'; PYXIS_CONTAINER_SAVE='$W/env-test2.sqsh' $S --container-image='$A' --container-writable --container-save='$W/cli-test.sqsh' sh -c 'echo pyxis >/etc/test' && saved '$W/cli-test.sqsh' && $S --container-image='$W/cli-test.sqsh' cat /etc/test | tail -n 1 | grep -qx pyxis && [ ! -e '$W/env-test2.sqsh' ]"
ok "pyxis env_vars: PYXIS_CONTAINER_MOUNT_HOME=1 environment variable" \
	bash -c "PYXIS_CONTAINER_MOUNT_HOME=1 $S --container-remap-root --container-image='$A' sh -c 'mnt /root'"
ok "pyxis env_vars: PYXIS_CONTAINER_MOUNT_HOME=0 environment variable" \
	bash -c "PYXIS_CONTAINER_MOUNT_HOME=0 $S --container-remap-root --container-image='$A' sh -c '! mnt /root && echo none' | grep -qx none"
ok "pyxis env_vars: PYXIS_CONTAINER_MOUNT_HOME: command line precedence" \
	bash -c "PYXIS_CONTAINER_MOUNT_HOME=1 $S --no-container-mount-home --container-remap-root --container-image='$A' sh -c '! mnt /root && echo none' | grep -qx none"
uidmap() { awk '{ print $1, $2, $3 }' | tail -n 1; }
ok "pyxis env_vars: PYXIS_CONTAINER_REMAP_ROOT=1 environment variable" \
	bash -c "PYXIS_CONTAINER_REMAP_ROOT=1 $S --container-image='$A' cat /proc/self/uid_map | awk '{ print \$1, \$2, \$3 }' | grep -qx '0 $MYUID 1'"
ok "pyxis env_vars: PYXIS_CONTAINER_REMAP_ROOT=0 environment variable" \
	bash -c "PYXIS_CONTAINER_REMAP_ROOT=0 $S --container-image='$A' cat /proc/self/uid_map | awk '{ print \$1, \$2, \$3 }' | grep -qx '$MYUID $MYUID 1'"
ok "pyxis env_vars: PYXIS_CONTAINER_REMAP_ROOT: command line precedence" \
	bash -c "PYXIS_CONTAINER_REMAP_ROOT=1 $S --no-container-remap-root --container-image='$A' cat /proc/self/uid_map | awk '{ print \$1, \$2, \$3 }' | grep -qx '$MYUID $MYUID 1'"
ok "pyxis env_vars: PYXIS_CONTAINER_ENTRYPOINT=1 environment variable" \
	bash -c "PYXIS_CONTAINER_ENTRYPOINT=1 $S --container-image='$EP' sh -c 'echo EP=\${EP_RAN:-no}' | grep -qx EP=yes"
ok "pyxis env_vars: PYXIS_CONTAINER_ENTRYPOINT=0 environment variable" \
	bash -c "PYXIS_CONTAINER_ENTRYPOINT=0 $S --container-image='$EP' sh -c 'echo EP=\${EP_RAN:-no}' | grep -qx EP=no"
ok "pyxis env_vars: PYXIS_CONTAINER_ENTRYPOINT: command line precedence" \
	bash -c "PYXIS_CONTAINER_ENTRYPOINT=0 $S --container-entrypoint --container-image='$EP' sh -c 'echo EP=\${EP_RAN:-no}' | grep -qx EP=yes"
ok "pyxis env_vars: PYXIS_CONTAINER_ENTRYPOINT_LOG=1 environment variable" \
	bash -c "PYXIS_CONTAINER_ENTRYPOINT_LOG=1 $S --container-entrypoint --container-image='$EP' true 2>&1 | grep -q '== EP banner =='"
# (PYXIS_CONTAINER_ENTRYPOINT_LOG=0: a difference, below)
ok "pyxis env_vars: PYXIS_CONTAINER_WRITABLE=1 environment variable" \
	bash -c "PYXIS_CONTAINER_WRITABLE=1 $S --container-image='$A' touch /usr/newfile"
ok "pyxis env_vars: PYXIS_CONTAINER_WRITABLE=0 environment variable" \
	bash -c "PYXIS_CONTAINER_WRITABLE=0 $S --container-image='$A' touch /usr/newfile 2>&1 | grep -q 'Read-only file system'"
ok "pyxis env_vars: PYXIS_CONTAINER_WRITABLE: command line precedence" \
	bash -c "PYXIS_CONTAINER_WRITABLE=1 $S --container-readonly --container-image='$A' touch /usr/newfile 2>&1 | grep -q 'Read-only file system'"
ok "pyxis env_vars: PYXIS_CONTAINER_READONLY=1 environment variable" \
	bash -c "PYXIS_CONTAINER_READONLY=1 $S --container-image='$A' touch /usr/newfile 2>&1 | grep -q 'Read-only file system'"
ok "pyxis env_vars: PYXIS_CONTAINER_READONLY=0 environment variable" \
	bash -c "PYXIS_CONTAINER_READONLY=0 $S --container-image='$A' touch /usr/newfile"
ok "pyxis env_vars: PYXIS_CONTAINER_READONLY: command line precedence" \
	bash -c "PYXIS_CONTAINER_READONLY=0 $S --container-readonly --container-image='$A' touch /usr/newfile 2>&1 | grep -q 'Read-only file system'"
ok "pyxis env_vars: PYXIS_CONTAINER_ENV environment variable" \
	bash -c "GREETING=host PYXIS_CONTAINER_ENV=GREETING $S --no-container-mount-home --container-image='$BB' sh -c 'echo \$GREETING' | tail -n 1 | grep -qx host"
ok "pyxis env_vars: PYXIS_CONTAINER_ENV: command line precedence" \
	bash -c "GREETING=host LD_LIBRARY_PATH=/host/lib PYXIS_CONTAINER_ENV=GREETING $S --no-container-mount-home --container-image='$BB' --container-env=LD_LIBRARY_PATH sh -c 'echo \$GREETING \$LD_LIBRARY_PATH' | tail -n 1 | grep -qx 'hello /host/lib'"

# ---- invalid_args.bats ------------------------------------------------------------------
ok_fail "pyxis invalid_args: --container-image= (without argument)" $S --container-image= true
ok_fail "pyxis invalid_args: --container-image=<very long invalid image name>" \
	$S --container-image="$(head -c 2048 /dev/urandom | base64 -w0)" true
ok_fail "pyxis invalid_args: --container-image=./" $S --container-image=./ true
ok_fail "pyxis invalid_args: --container-image=/dev/urandom" $S --container-image=/dev/urandom true
ok_fail "pyxis invalid_args: --container-name without --container-image" $S --container-name=pyxis-args-test true
ok_fail "pyxis invalid_args: --container-name=/tmp/foo" $S --container-name=/tmp/foo --container-image="$A" true
ok_fail "pyxis invalid_args: --container-mounts= (without argument)" $S --container-mounts= --container-image="$A" true
ok_fail "pyxis invalid_args: --container-mounts=:" $S --container-mounts=: --container-image="$A" true
ok_fail "pyxis invalid_args: --container-mounts=/tmp:" $S --container-mounts=/tmp: --container-image="$A" true
ok_fail "pyxis invalid_args: --container-workdir= (without argument)" $S --container-workdir= --container-image="$A" true

# ---- mounts.bats ----------------------------------------------------------------------------
echo script >"$W/script.bats"
ok "pyxis mounts: --container-mounts absolute directory" \
	$S --container-mounts=/home:/test-mnt --container-image="$A" sh -c "mnt /test-mnt"
ok "pyxis mounts: --container-mounts regular file" \
	$S --container-mounts="$W/script.bats:/script.bats" --container-image="$A" cat /script.bats
ok "pyxis mounts: --container-mounts character device file" \
	$S --container-mounts=/dev/null:/null --container-image="$A" sh -c '[ -c /null ]'
ok "pyxis mounts: --container-mounts current working directory" \
	$S --container-mounts=./:/test-mnt --container-image="$A" sh -c "mnt /test-mnt"
ok "pyxis mounts: --container-mounts multiple entries" \
	$S --container-mounts=./:/test-mnt,/dev/null:/null,/home:/host/home --container-image="$A" sh -c "mnt /test-mnt && mnt /null && mnt /host/home"
ok "pyxis mounts: --container-mounts /etc/shadow (bound, not readable)" \
	bash -c "$S --container-mounts=/etc/shadow:/shadow --container-image='$A' sh -c 'mnt /shadow' && ! $S --container-mounts=/etc/shadow:/shadow --container-image='$A' cat /shadow >'$W/shadow.out' 2>&1 && grep -q 'Permission denied' '$W/shadow.out'"
ok "pyxis mounts: --container-mounts read-only directory" \
	bash -c "$S --container-mounts=/tmp:/mnt:ro --container-image='$A' touch /mnt/foo 2>&1 | grep -q 'Read-only file system'"
ok "pyxis mounts: --container-mounts multiple flags (ro+rprivate, rbind+rw)" \
	bash -c "$S --container-mounts=/tmp:/mnt:ro+rprivate --container-image='$A' touch /mnt/foo 2>&1 | grep -q 'Read-only file system' && $S --container-mounts='$W:/mnt:rbind+rw' --container-image='$A' touch /mnt/rbind-ok && test -e '$W/rbind-ok'"
ok_fail "pyxis mounts: --container-mounts path escape attempt" $S --container-mounts=/home:../home --container-image="$A" true
ok "pyxis mounts: --container-mounts short-form" \
	bash -c "$S --container-image='$A' sh -c '! mnt /var/lib' && $S --container-mounts=/var/lib --container-image='$A' sh -c 'mnt /var/lib'"

# ---- name.bats --------------------------------------------------------------------------------
cat >"$W/unnamed.sh" <<EOF
#!/bin/bash
srun -n 1 --container-image=$A sh -c 'echo JS \$SLURM_JOB_ID.\$SLURM_STEP_ID'
EOF
unnamed_gone() {
	local js
	js=$(awk '/^JS / { print $2 }' "$W/out.unnamed")
	[ -n "$js" ] || return 1
	settle 100 sh -c "ls -A '$JDIR' 2>/dev/null | grep '^${js%%.*}\\.'; '$MPICTR' instance list 2>/dev/null | grep '^${js%%.*}\\.'"
}
ok "pyxis name: unnamed container cleanup" bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job unnamed"
check "... nothing of it left on the node (keeper, rendezvous, instance)" unnamed_gone
cat >"$W/persist.sh" <<EOF
#!/bin/bash
fail() { echo "FAIL \$*"; exit 1; }
srun -n 1 --container-image=$A sh -c '! test -e /usr/bin/file-tool' || fail 1
srun -n 1 --container-image=$A --container-name=name-test --container-writable sh -c 'echo f >/usr/bin/file-tool' || fail 2
srun -n 1 --container-image=$A --container-name=name-test test -e /usr/bin/file-tool || fail 3
srun -n 1 --container-name=name-test test -e /usr/bin/file-tool || fail 4
srun -n 1 --container-image=$A sh -c '! test -e /usr/bin/file-tool' || fail 5
srun -n 1 --container-image=$A --container-name=name-test2 true || fail 6
srun -n 1 --container-image=$A sh -c '! test -e /usr/bin/file-tool' || fail 7
echo PASS
EOF
ok "pyxis name: named container persistence" bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job persist | grep -qx PASS"
cat >"$W/remove.sh" <<EOF
#!/bin/bash
fail() { echo "FAIL \$*"; exit 1; }
srun -n 1 --container-image=$A --container-name=name-test --container-writable sh -c 'echo f >/usr/bin/file-tool' || fail 1
srun -n 1 --container-name=name-test test -e /usr/bin/file-tool || fail 2
$MPICTR instance stop \$SLURM_JOB_ID.name-test || fail 3
srun -n 1 --container-name=name-test test -e /usr/bin/file-tool && fail 4
srun -n 1 --container-image=$A --container-name=name-test sh -c '! test -e /usr/bin/file-tool' || fail 5
srun -n 1 --container-name=name-test sh -c '! test -e /usr/bin/file-tool' || fail 6
echo PASS
EOF
ok "pyxis name: named container manual remove (mpictr instance stop)" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job remove | grep -qx PASS"

# ---- entrypoint.bats -------------------------------------------------------------------------
ok "pyxis entrypoint: --container-entrypoint (an entrypoint that sets a variable)" \
	bash -c "$S --container-image='$EP' --container-entrypoint sh -c 'echo EP=\${EP_RAN:-no}' | grep -qx EP=yes && $S --container-image='$EP' --no-container-entrypoint sh -c 'echo EP=\${EP_RAN:-no}' | grep -qx EP=no"
cat >"$W/manualep.sh" <<EOF
#!/bin/bash
fail() { echo "FAIL \$*"; exit 1; }
srun -n 1 --container-image=$EP --container-name=ep-test --container-remap-root --container-writable true || fail 1
srun -n 1 --container-name=ep-test cat /etc/ep.conf | grep -qx 'listen 80;' || fail 2
srun -n 1 --container-name=ep-test --container-remap-root /docker-entrypoint.sh true || fail 3
srun -n 1 --container-name=ep-test cat /etc/ep.conf | grep -qxF 'listen [::]:80;' || fail 4
echo PASS
EOF
ok "pyxis entrypoint: manual execution of entrypoint" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job manualep | grep -qx PASS"

# ---- env.bats --------------------------------------------------------------------------------
ok "pyxis env: passthrough of environment variable" \
	bash -c "FOO=bar $S --container-image='$A' sh -c 'echo \$FOO' | tail -n 1 | grep -qx bar"
ok "pyxis env: \$TERM special case" \
	bash -c "TERM=dumb $S --no-container-mount-home --container-image='$A' sh -c 'echo \$TERM' | tail -n 1 | grep -qx dumb"
ok "pyxis env: \$HOME special case (HOME=$W/tmp is /root's source under remap-root)" \
	bash -c "HOME='$W/tmp' $S --container-mount-home --container-remap-root --container-image='$A' sh -c 'echo sees >/root/home-file' && test -e '$W/tmp/home-file'"
ok "pyxis env: \$LANG special case (the host's LANG does not reach the container)" \
	bash -c "LANG=en_US.UTF-8 $S --container-image='$A' --no-container-mount-home sh -c 'echo LANG=\${LANG-unset}' | tail -n 1 | grep -qx LANG=unset"
ok "pyxis env: --container-env overriding container variable" \
	bash -c "export GREETING=host LD_LIBRARY_PATH=/host/lib; $S --no-container-mount-home --container-image='$BB' sh -c 'echo \$GREETING' | tail -n 1 | grep -qx hello &&
		$S --no-container-mount-home --container-image='$BB' --container-env GREETING sh -c 'echo \$GREETING' | tail -n 1 | grep -qx host &&
		$S --no-container-mount-home --container-image='$BB' --container-env GREETING,LD_LIBRARY_PATH sh -c 'echo \$LD_LIBRARY_PATH' | tail -n 1 | grep -qx /host/lib &&
		$S --no-container-mount-home --container-image='$BB' --container-env LD_LIBRARY_PATH,GREETING sh -c 'echo \$GREETING' | tail -n 1 | grep -qx host"
ok "pyxis env: --container-env forcing \$LANG passthrough" \
	bash -c "LANG=en_US.UTF-8 $S --container-image='$A' --container-env LANG --no-container-mount-home sh -c 'echo LANG=\$LANG' | tail -n 1 | grep -qx LANG=en_US.UTF-8"
ok_fail "pyxis env (args.c): --container-env with an empty name (FOO,) is refused" \
	$S --container-image="$A" --container-env=FOO, true

# ---- workdir.bats ----------------------------------------------------------------------------
ok "pyxis workdir: --container-workdir absolute target" \
	bash -c "$S --container-workdir=/usr/bin --container-image='$A' pwd | tail -n 1 | grep -qx /usr/bin"
ok "pyxis workdir: --container-workdir path escape attempt" \
	bash -c "$S --container-workdir=../ --container-image='$A' pwd | tail -n 1 | grep -qx /"
ok "pyxis workdir: --container-workdir target doesn't exist" \
	bash -c "! $S --container-workdir=/pyxis --container-image='$A' true >'$W/wd.out' 2>&1 && grep -q '/pyxis: No such file or directory' '$W/wd.out'"
ok "pyxis workdir: container image workdir (WorkingDir /data)" \
	bash -c "$S --container-image='$BB' pwd | tail -n 1 | grep -qx /data"
ok "pyxis workdir (exec.bats): without WorkingDir the start directory is /" \
	bash -c "$S --container-image='$A' pwd | tail -n 1 | grep -qx /"

# ---- remap_root.bats -------------------------------------------------------------------------
ok "pyxis remap_root: --container-remap-root uid map" \
	bash -c "$S --container-remap-root --container-image='$A' cat /proc/self/uid_map | awk '{ print \$1, \$2, \$3 }' | grep -qx '0 $MYUID 1'"
ok "pyxis remap_root: --no-container-remap-root uid map" \
	bash -c "$S --no-container-remap-root --container-image='$A' cat /proc/self/uid_map | awk '{ print \$1, \$2, \$3 }' | grep -qx '$MYUID $MYUID 1'"

# ---- mount_home.bats -------------------------------------------------------------------------
ok "pyxis mount_home: --container-mount-home --container-remap-root" \
	$S --container-mount-home --container-remap-root --container-image="$A" sh -c "mnt /root"
ok "pyxis mount_home: --container-mount-home --no-container-remap-root" \
	$S --container-mount-home --no-container-remap-root --container-image="$A" sh -c "mnt '$HOME'"
ok "pyxis mount_home: --no-container-mount-home --container-remap-root" \
	$S --no-container-mount-home --container-remap-root --container-image="$A" sh -c "! mnt /root"
ok "pyxis mount_home: --no-container-mount-home --no-container-remap-root" \
	$S --no-container-mount-home --no-container-remap-root --container-image="$A" sh -c "! mnt '$HOME'"

# ---- exec.bats -------------------------------------------------------------------------------
cat >"$W/attach.sh" <<EOF
#!/bin/bash
fail() { echo "FAIL \$*"; exit 1; }
srun -n 1 --container-image=$A --container-name=exec-test --container-writable mkdir /usr/mymnt || fail 1
srun -n 1 --container-name=exec-test sh -c 'touch /dev/shm/attached; sleep 10' &
for i in \$(seq 50); do srun -n 1 --overlap --container-name=exec-test test -e /dev/shm/attached && break; sleep 0.2; done
srun -n 1 --overlap --container-name=exec-test sh -c 'test -e /dev/shm/attached && test -d /usr/mymnt' && echo ATTACHED
srun -n 1 --overlap --container-name=exec-test pwd | grep -qx / && echo PWD-ROOT
srun -n 1 --overlap --container-name=exec-test --container-mounts /tmp:/mnt/pyxis_test sh -c '[ ! -d /mnt/pyxis_test ] && echo NOT-MOUNTED' 2>&1
srun -n 1 --overlap --container-name=exec-test:exec true && echo EXEC-RUNNING
srun -n 1 --overlap --container-name=exec-none:exec true || echo EXEC-NONE-FAILS
wait
EOF
ok "pyxis exec: attach to running container (a running step's /dev/shm)" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job attach | grep -qx ATTACHED"
check "pyxis exec: attach to running container after directory change (starts in /)" grep -qx PWD-ROOT "$W/out.attach"
check "pyxis exec: attach to running container with --container-mounts (ignored, warned)" \
	bash -c "grep -qx NOT-MOUNTED '$W/out.attach' && grep -q 'ignoring --container-mounts' '$W/out.attach'"
check "pyxis exec: --container-name exec flag (running: joins it; none in the job: fails)" \
	bash -c "grep -qx EXEC-RUNNING '$W/out.attach' && grep -qx EXEC-NONE-FAILS '$W/out.attach'"
cat >"$W/create.sh" <<EOF
#!/bin/bash
srun -n 1 --container-image=$A --container-name=c-test:create true && echo CREATED
srun -n 1 --container-image=$A --container-name=c-test:create true || echo CREATE-AGAIN-FAILS
EOF
ok "pyxis (args.c): --container-name create flag (a second create fails)" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job create >/dev/null; grep -qx CREATED '$W/out.create' && grep -qx CREATE-AGAIN-FAILS '$W/out.create'"

# ---- unshare*.bats: mpictr shares the host's net, ipc and uts (docs/slurm.md) -------------
ok "pyxis unshare: --container-unshare=foo (unknown namespace)" \
	bash -c "! $S --container-unshare=foo --container-image='$A' true >'$W/u.out' 2>&1 && grep -q 'unknown namespace' '$W/u.out'"
ok "pyxis unshare: --container-unshare=net,foo (unknown namespace)" \
	bash -c "! $S --container-unshare=net,foo --container-image='$A' true >'$W/u.out' 2>&1 && grep -q 'unknown namespace' '$W/u.out'"
for ns in net ipc uts; do
	ok "pyxis unshare_$ns: no --container-unshare shares host ${ns}ns" \
		bash -c "[ \"\$($S --container-image='$A' readlink /proc/self/ns/$ns | tail -n 1)\" = \"\$(readlink /proc/self/ns/$ns)\" ]"
done

# ---- squashfs_image.bats -------------------------------------------------------------------
ok "pyxis squashfs_image: a squashfs image given by a relative path" \
	bash -c "$S --container-image=./a.sqfs grep -qx ID=pyxis-a /etc/os-release"
# (Pyxis's third step installs a package with --container-remap-root:
# here the user writes the file; a writable remapped root over a saved
# image is the writable-container work of issue 32)
save_chain() { # IMAGE-PATH-AS-GIVEN
	local i=$1
	touch "$W/stamp"
	$S --container-image="$A" --container-writable --container-save="$i" sh -c 'echo pyxis >/etc/test' &&
		saved "$i" && touch "$W/stamp" &&
		$S --container-image="$i" --container-writable --container-save="$i" sh -c 'echo slurm >/etc/test2' &&
		saved "$i" && touch "$W/stamp" &&
		$S --container-image="$i" --container-writable --container-save="$i" sh -c 'echo f >/usr/bin/file-tool' &&
		saved "$i" &&
		$S --container-image="$i" test -e /usr/bin/file-tool &&
		[ "$($S --container-image="$i" cat /etc/test | tail -n 1)" = pyxis ] &&
		[ "$($S --container-image="$i" cat /etc/test2 | tail -n 1)" = slurm ]
}
ok "pyxis squashfs_image: --container-save absolute path" save_chain "$W/modified.sqsh"
ok "pyxis squashfs_image: --container-save relative path" save_chain ./modified-rel.sqsh

# ---- writable.bats, path.bats, sbatch.bats, concurrency.bats, mpi.bats, pytorch.bats ------
ok "pyxis writable: --container-readonly" \
	bash -c "$S --container-readonly --container-image='$A' touch /usr/newfile 2>&1 | grep -q 'Read-only file system'"
ok "pyxis writable: --container-writable" $S --container-writable --container-image="$A" touch /usr/newfile
ok "pyxis path: a command that only the image has, found on its PATH (redis-server, rabbitmqctl)" \
	bash -c "! command -v only-in-image >/dev/null && $S --container-image='$EP' only-in-image | grep -qx found"
sbatch_os() {
	printf '#!/bin/sh\n%sgrep -qx ID=pyxis-a /etc/os-release && echo IN-A\n' "$1" >"$W/sb.sh"
	shift
	$T sbatch --wait -o "$W/out.sb" "$@" "$W/sb.sh" >/dev/null 2>&1 && grep -qx IN-A "$W/out.sb"
}
ok "pyxis sbatch: sbatch --container-image (command line and #SBATCH)" \
	bash -c "$(declare -f sbatch_os); T='$T' W='$W'; sbatch_os '' --container-image='$A' && sbatch_os '#SBATCH --container-image=$A
'"
cat >"$W/conc.sh" <<EOF
#!/bin/bash
pids=()
for i in 0 1 2 3 4; do
	srun -n 1 --overlap --container-image=$A --container-name=concurrent-test-\$i sleep 2 & pids+=(\$!)
done
for p in "\${pids[@]}"; do wait \$p || { echo FAIL; exit 1; }; done
echo PASS
EOF
ok "pyxis concurrency: concurrent container creation" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job conc | grep -qx PASS"
cat >"$W/mpi.sh" <<EOF
#!/bin/bash
srun -n 1 --container-name=mpi-test --container-image=$A true || exit 1
srun --mpi=pmix -n 4 --overcommit --container-name=mpi-test sh -c 'echo R \$PMIX_RANK'
EOF
ok "pyxis mpi: PMIx mount" \
	$T srun --mpi=pmix -n 4 --overcommit --container-image="$A" sh -c "[ -n \"\$PMIX_SERVER_TMPDIR\" ] && mnt \"\${PMIX_SERVER_TMPDIR%/}\""
ok "pyxis mpi: PMIx environment variables (PMIX_RANK in a named container)" \
	bash -c "$(declare -f job); T='$T' NAME=$NAME W='$W'; job mpi >/dev/null; [ \"\$(awk '/^R / { print \$2 }' '$W/out.mpi' | sort -n | tr '\n' ' ')\" = '0 1 2 3 ' ]"
ok "pyxis mpi: PMI2 file descriptor" \
	$T srun --mpi=pmi2 -n 4 --overcommit --container-image="$A" sh -c '[ -n "$PMI_FD" ] && readlink /proc/self/fd/$PMI_FD | grep -q socket'
ok "pyxis mpi: PMI2 environment variables" \
	$T srun --mpi=pmi2 -n 4 --overcommit --container-image="$A" sh -c '[ -n "$PMI_RANK" ] && [ "$PMI_SIZE" -eq 4 ]'
ok "pyxis pytorch: RANK and LOCAL_RANK for an image with PYTORCH_VERSION" \
	bash -c "[ \"\$(PYTORCH_VERSION=1.0 $T srun -n 4 --overcommit --container-image='$A' sh -c '[ \"\$RANK\" = \"\$SLURM_PROCID\" ] && echo \$LOCAL_RANK' | sort -n | tr '\n' ' ')\" = '0 1 2 3 ' ]"

# ---- the deliberate differences (docs/slurm.md): clear refusals --------------------------
ok "difference: --container-unshare=net,ipc,uts is refused, saying why" \
	bash -c "! $S --container-unshare=net,ipc,uts --container-image='$A' true >'$W/u.out' 2>&1 && grep -q 'not supported: mpictr runs the tasks in the host' '$W/u.out'"
ok "difference: --container-name=NAME:no_exec is refused, saying why" \
	bash -c "! $S --container-name=x:no_exec --container-image='$A' true >'$W/n.out' 2>&1 && grep -q 'no_exec: not supported' '$W/n.out'"
ok "difference: --container-mounts flag unbindable is refused, naming it" \
	bash -c "! $S --container-mounts=/tmp:/mnt:unbindable+ro --container-image='$A' true >'$W/m.out' 2>&1 && grep -q \"mount flag 'unbindable' is not supported\" '$W/m.out'"
ok "difference: --container-mounts tmpfs: and umount: are refused, naming them" \
	bash -c "! $S --container-mounts=tmpfs:/scratch --container-image='$A' true >'$W/m.out' 2>&1 && grep -q \"'tmpfs:' mounts are not supported\" '$W/m.out' && ! $S --container-mounts=umount:/tmp --container-image='$A' true"
done_testing
