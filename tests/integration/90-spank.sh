#!/bin/bash
# 90-spank.sh - the SPANK plugin mpictr-spank.so under real Slurm
# (tests/slurm/cluster.sh writes the plugstack.conf line
# `optional /var/lib/mpictr-spank/mpictr-spank.so image_dirs=...`; root
# installs this tree's build there with `cluster.sh install-spank`, and
# the test checks it is that build): `srun --container-image=IMAGE CMD`
# puts the tasks of a node in one user and mount namespace, exec'd by
# slurmstepd itself; Open MPI (pmix) and MPICH (pmi2); --container-mounts,
# -workdir, -env, -dry-run; inert without options; `#SBATCH --container-image`;
# --container-name shared by steps (a later step's other mounts are
# ignored with a warning, as Pyxis); image_dirs enforced in the task, also when srun's check is
# bypassed or a symbolic link leads out; failures fail fast with their
# reason and leave nothing; two nodes.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 90"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

require_slurm
CLUSTER_DIRS=$(sed -nE "s|^[a-z]+ +$SPANK_DIR/mpictr-spank.so .*image_dirs=([^ ]+).*|\1|p" "${SLURM_CONF%/*}/plugstack.conf" 2>/dev/null)
if ! spank_ready || [ -z "$CLUSTER_DIRS" ]; then
	need "plugstack.conf loads $SPANK_DIR/mpictr-spank.so with image_dirs=" \
		"a cluster set up by the current tests/slurm/cluster.sh (sudo tests/slurm/cluster.sh start: it rewrites plugstack.conf of a running cluster)"
	done_testing
	exit
fi
require_userns_fuse "user namespaces and /dev/fuse" "the plugin needs unprivileged user namespaces and a usable /dev/fuse"
require_images all
[ -f "$ROOT/build/plugins/mpictr-spank.so" ] || { need "mpictr-spank.so built" "libslurm-dev (Slurm's spank.h)"; done_testing; exit; }
# slurmstepd runs the plugin as root: root installs it (.ci/run does),
# never the test; it must be this tree's build.
if ! spank_installed "$ROOT/build/plugins"; then
	need "the installed $SPANK_DIR/mpictr-spank.so (and -squash.so, -pmix.so) is this tree's build (cmp)" \
		"it is another build: install this one as root: $(spank_install_cmd "$ROOT/build/plugins")"
	done_testing
	exit
fi

spank_exports() {
	nm -D --defined-only "$ROOT/build/plugins/mpictr-spank.so" | awk '{ print $3 }' | sort | tr '\n' ' '
	[ "$(nm -D --defined-only "$ROOT/build/plugins/mpictr-spank.so" | awk '{ print $3 }' | sort | tr '\n' ' ')" = \
		"plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_task_exit slurm_spank_task_init spank_plugin_version " ]
}
ok "mpictr-spank.so exports the SPANK symbols only (libmpictr inside stays local)" spank_exports
root_owned() {
	local f
	for f in "$SPANK_DIR" "$SPANK_DIR"/mpictr-*.so; do
		stat -c '%U:%G %A %n' "$f"
		[ "$(stat -c %u "$f")" = 0 ] && ! [ -L "$f" ] && [ "$(( 0$(stat -c %a "$f") & 022 ))" = 0 ] || return 1
	done
}
ok "the installed plugins and their directory are root's, writable by nobody else" root_owned

W=$(mktemp -d /var/tmp/mpictr-spank.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp" "$W/data"
# in_dirs PATH: is PATH's real path in the cluster's image_dirs?
in_dirs() { spank_in_dirs "$CLUSTER_DIRS" "$1"; }
# the test images, linked (or copied when they are outside image_dirs)
for i in mpi.sif tiny.sif; do
	if in_dirs "$IMG/$i"; then ln -s "$IMG/$i" "$W/$i"; else cp "$IMG/$i" "$W/$i"; fi
done
echo spank-data >"$W/data/file"
SHM_IMG=/dev/shm/mpictr-spank-$$.sif
trap 't_cleanup; rm -rf "$W" "$SHM_IMG"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
NAME=mps$$

# leftovers JOBID: what the job left (processes of the job's steps, the
# keeper's rendezvous entries), if anything
leftovers() {
	pgrep -u "$MYUID" -af "slurmstepd: \[$1\." | grep -v "^$$ " || true
	ls -A "$JDIR" 2>/dev/null | grep "^$1\." | sed 's/^/rendezvous entry /'
}

# ---- inert without options ----------------------------------------------------
ok "plain srun (no --container-image): runs as before" step plain -O -n 2 sh -c "$NSCMD; echo PATH=\$PATH"
check "... in the host's user namespace, PATH untouched" bash -c "[ \$(grep -cF 'NS $HOSTNS ' '$W/out.plain') = 2 ] && grep -qxF 'PATH=$PATH' '$W/out.plain'"

# ---- MPI ---------------------------------------------------------------------------
ok "srun --mpi=pmix -n 4 --container-image=mpi.sif hello (Open MPI)" \
	step ompi -O --mpi=pmix -n 4 --container-image="$W/mpi.sif" /opt/mpictr/bin/hello
check "... 4 ranks of 4, allreduce ok, the user's uid" \
	test "$(count ompi "^hello rank [0-3]/4 .* allreduce 6 ok .* uid $MYUID\$")" = 4
hello_ns() {
	[ "$(sed -nE 's/^hello rank .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.$1" | sort -u | wc -l)" = 1 ] &&
		! grep -qF "userns $HOSTNS " "$W/out.$1"
}
check "... all 4 ranks in one user and one mount namespace (not the host's)" hello_ns ompi
check "... nothing left behind (keeper, holder, rendezvous)" clean "$(jobid ompi)"

ok "srun --mpi=pmi2 -n 4 --container-image=mpi.sif hello-mpich (MPICH)" \
	step mpich -O --mpi=pmi2 -n 4 --container-image="$W/mpi.sif" /opt/mpictr/bin/hello-mpich
check "... 4 ranks of 4, allreduce ok" test "$(count mpich '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
check "... all 4 ranks in one user and one mount namespace" hello_ns mpich

# ---- what a task sees ---------------------------------------------------------------
SEECMD=$NSCMD'; echo PARENT $(cat /proc/$PPID/comm); echo TINY ${TINY_IMAGE:-none} ${TINY_ORDER:-none};
echo PMIX ${PMIX_NAMESPACE:-none} ${PMIX_RANK:-none}; echo CWD $(pwd); echo CAPS $(grep CapEff /proc/self/status);
[ -n "$PMI_FD" ] && [ -e /proc/self/fd/$PMI_FD ] && echo PMI_FD ok; echo VAR ${SPANK_T_VAR:-unset}'
ok "srun --mpi=pmix -n 3 --container-image=tiny.sif (what a task sees)" \
	step see -O --mpi=pmix -n 3 --container-image="$W/tiny.sif" sh -c "$SEECMD"
check "... one user and one mount namespace" one_ns see
check "... every task's parent is slurmstepd (no process in between)" test "$(count see '^PARENT slurmstepd$')" = 3
check "... the image's env scripts ran, in order" test "$(count see '^TINY 1 10 90$')" = 3
check "... PMIx namespace and rank reach the program" test "$(count see '^PMIX slurm\.pmix\.[0-9]+\.[0-9]+ [0-2]$')" = 3
check "... start directory: / (the image has no WorkingDir; not the job's directory, as Pyxis)" test "$(count see "^CWD /\$")" = 3
check "... no capabilities" test "$(count see '^CAPS CapEff:[[:space:]]+0+$')" = 3
ok "srun --mpi=pmi2 --container-image=tiny.sif: PMI_FD open in the program" \
	step pmi2 -O --mpi=pmi2 -n 2 --container-image="$W/tiny.sif" sh -c "$SEECMD"
check "... PMI_FD ok in both tasks" test "$(count pmi2 '^PMI_FD ok$')" = 2

# An image without env scripts: slurmstepd execs the command itself, found
# on the container's PATH (no shell in between, no wrapper descriptor).
noenv_step() {
	rm -rf "$W/noenv" && cp -a "$IMG/tiny" "$W/noenv" && rm -f "$W"/noenv/.singularity.d/env/*.sh &&
		mksquashfs "$W/noenv" "$W/noenv.sqfs" -quiet -noappend -all-root >/dev/null &&
		step noenv -O -n 2 --container-image="$W/noenv.sqfs" busybox sh -c \
			'echo EXE $(readlink /proc/$$/exe) PARENT $(cat /proc/$PPID/comm) TINY ${TINY_IMAGE:-none}; ls -l /proc/$$/fd 2>/dev/null | grep -c mpictr-env; true'
}
ok "an image without env scripts: srun --container-image=noenv.sqfs busybox sh -c ..." noenv_step
check "... the command (a name looked up on the container's PATH) is slurmstepd's child" \
	test "$(count noenv '^EXE /usr/bin/busybox PARENT slurmstepd TINY none$')" = 2
check "... no env-script wrapper descriptor" test "$(count noenv '^0$')" = 2

# ---- options -------------------------------------------------------------------------
ok "--container-mounts=$W/data:/data:ro --container-workdir=/data" \
	step mnt -O -n 2 --container-image="$W/tiny.sif" --container-mounts="$W/data:/data:ro" \
	--container-workdir=/data sh -c 'echo CWD $(pwd) $(cat file); touch x 2>/dev/null && echo WROTE; true'
check "... both tasks start in /data and read the bound file" test "$(count mnt '^CWD /data spank-data$')" = 2
check "... read-only: nothing written" test "$(count mnt '^WROTE')" = 0
env_step() (
	export SPANK_T_VAR=host-value
	step env -O -n 1 --container-image="$W/tiny.sif" --container-env=SPANK_T_VAR sh -c 'echo VAR $SPANK_T_VAR'
)
ok "--container-env=SPANK_T_VAR: the host's value wins over the image's" env_step
check "... SPANK_T_VAR=host-value inside" test "$(count env '^VAR host-value$')" = 1

# --container-dry-run: each task prints its plan (JSON, as mpictr
# --dry-run) and runs nothing (tests/integration/38-dryrun.sh compares
# the plan with the run)
dry_step() {
	rm -f "$W/dry-ran"
	step dry -n 2 -o "$W/out.dry.%t" --container-image="$W/tiny.sif" --container-dry-run \
		--container-mounts="$W/data:/data:ro" sh -c "touch '$W/dry-ran'"
}
dry_plan() { # FILE...: plans of tiny.sif with $W/data bound at /data
	local f
	for f in "$@"; do
		python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
assert p["image"]["path"].endswith("/tiny.sif"), p["image"]
assert any(m["target"] == "/data" and m["source"] == sys.argv[2] and ",ro," in m["options"] for m in p["mounts"]), p["mounts"]
assert p["env"], "no environment"' "$f" "$W/data" || return 1
	done
}
ok "srun --container-dry-run -n 2 --container-image=tiny.sif: exits 0" dry_step
check "... each task printed its plan (the image, the bind)" dry_plan "$W/out.dry.0" "$W/out.dry.1"
check "... and ran nothing" test ! -e "$W/dry-ran"
check "... nothing left behind" clean "$(jobid dry)"
ok_fail "--container-dry-run with --container-save: refused" \
	step drysave -n 1 --container-image="$W/tiny.sif" --container-name=d --container-save="$W/d.sqfs" --container-dry-run true
check "... saying why" grep -q "mpictr: --container-dry-run runs nothing: --container-save=$W/d.sqfs would save nothing" "$W/out.drysave"

# ---- failures: fast, with the reason, nothing left -------------------------------------------
fails_fast() { # SUFFIX PATTERN SRUN-ARGS...: non-zero within 30 s, PATTERN in the output
	local s=$1 pat=$2 t0 rc
	shift 2
	t0=$(date +%s)
	step "$s" "$@"
	rc=$?
	echo "rc=$rc in $(($(date +%s) - t0)) s"
	[ $rc != 0 ] && [ $rc != 124 ] && [ $(($(date +%s) - t0)) -lt 30 ] && grep -qE "$pat" "$W/out.$s"
}
ok "missing image: srun fails before launching, naming the image" \
	fails_fast noimg "mpictr: --container-image '$W/nope.sif': No such file or directory" -O -n 2 --container-image="$W/nope.sif" true
check "... no job step ran" bash -c "! grep -q 'task' '$W/out.noimg'"
ok "a bind whose source is missing: the tasks fail at once with the reason" \
	fails_fast badbind "mpictr: .*$W/absent" -O -n 2 --container-image="$W/tiny.sif" --container-mounts="$W/absent:/x" true
check "... nothing left behind" clean "$(jobid badbind)"
ok "command not in the image: exit 127 with the container's PATH" \
	fails_fast nocmd "command 'no-such-cmd' not found in the container" -O -n 2 --container-image="$W/tiny.sif" no-such-cmd
check "... srun reports exit code 127" grep -q "exit code 127" "$W/out.nocmd"
check "... nothing left behind" clean "$(jobid nocmd)"

# scancel while the tasks run in the container: the keeper sees its tasks
# go and ends; the holder and the mount go with it.
cancelled() {
	local pid i
	srun --job-name="$NAME-cancel" -O -n 2 --container-image="$W/tiny.sif" sh -c "$NSCMD; sleep 60" >"$W/out.cancel" 2>&1 &
	pid=$!
	for i in $(seq 300); do
		[ "$(grep -c '^NS ' "$W/out.cancel")" = 2 ] && break
		sleep 0.1
	done
	squeue -h -t all -n "$NAME-cancel" -o 'JOB %i' >"$W/job.cancel"
	scancel -n "$NAME-cancel"
	wait $pid
	cat "$W/out.cancel"
	[ "$(grep -c '^NS ' "$W/out.cancel")" = 2 ]
}
ok "scancel of a running step in the container" cancelled
check "... nothing left behind (keeper, holder, FUSE worker, rendezvous)" clean "$(jobid cancel)"

# ---- site policy: plugstack.conf's image_dirs, the site file -------------------------------------
# srun reads plugstack.conf beside its SLURM_CONF: a copy of the cluster's
# with image_dirs= checks the image in srun, before anything is launched
# (on its real path: a symbolic link into image_dirs is not enough).
policy_conf() {
	mkdir -p "$W/conf" "$W/allowed" && cp "$SLURM_CONF" "$W/conf/slurm.conf" &&
		cp "$IMG/tiny.sif" "$W/allowed/tiny.sif" &&
		echo "optional $SPANK_DIR/mpictr-spank.so image_dirs=$W/allowed:/nonexistent" >"$W/conf/plugstack.conf"
}
policy_step() { # SUFFIX IMAGE
	(export SLURM_CONF=$W/conf/slurm.conf && step "$1" -O -n 1 --container-image="$2" sh -c 'echo IN $TINY_IMAGE')
}
ok "a plugstack.conf with image_dirs=$W/allowed (a copy read by srun)" policy_conf
ok_fail "an image outside image_dirs: srun refuses before launching" policy_step outside "$W/tiny.sif"
check "... naming the site's directories" grep -q "images must come from $W/allowed:/nonexistent (the site's image_dirs)" "$W/out.outside"
ok "an image inside image_dirs runs" policy_step inside "$W/allowed/tiny.sif"
check "... in the image" grep -qx 'IN 1' "$W/out.inside"
# Registry images under image_dirs= (issue 31 item 8): a digest names
# whatever SIF the user's cache holds under it, so a made-up one, planted
# by the user, ran any image of theirs. image_dirs= alone now allows no
# registry; registries= names those it allows (registry_images=yes: all).
HEX=$(printf planted | sha256sum | cut -c1-64)
plant() {
	mkdir -p "$W/cache/images/sha256" && chmod 0700 "$W/cache" &&
		cp "$IMG/tiny.sif" "$W/cache/images/sha256/$HEX.sif"
}
reg_step() { # SUFFIX IMAGE [SLURM_CONF]
	(export SLURM_CONF=${3:-$W/conf/slurm.conf} MPICTR_CACHEDIR=$W/cache && step "$1" -O -n 1 --container-image="$2" sh -c 'echo IN $TINY_IMAGE')
}
DIGEST="docker://127.0.0.1:5/planted/x@sha256:$HEX"
ok "a SIF planted in the user's cache under a made-up digest" plant
ok_fail "image_dirs= alone: srun refuses that digest before launching" reg_step digest "$DIGEST"
check "... naming the image and the rule; nothing ran" bash -c "grep -qF \"mpictr: --container-image '$DIGEST': the site runs image files from its image_dirs only, and allows no registry (hint: the site may name some with registries=HOST[,HOST...] in plugstack.conf)\" '$W/out.digest' && ! grep -q '^IN' '$W/out.digest' && ! grep -q 'exit code' '$W/out.digest'"
ok_fail "... and a tag in Pyxis's form (REGISTRY#IMAGE)" reg_step tag "127.0.0.1:5#planted/x:1"
check "... refused the same way" grep -q "the site runs image files from its image_dirs only, and allows no registry" "$W/out.tag"
echo "optional $SPANK_DIR/mpictr-spank.so image_dirs=$W/allowed registries=registry.example.org,docker.io" >"$W/conf/plugstack.conf"
ok_fail "registries= without the image's registry: refused" reg_step other "$DIGEST"
check "... naming the registry and the site's list" grep -qF "registry '127.0.0.1:5' is not one the site allows (registries=registry.example.org,docker.io)" "$W/out.other"
echo "optional $SPANK_DIR/mpictr-spank.so image_dirs=$W/allowed registries=127.0.0.1" >"$W/conf/plugstack.conf"
CLUSTER_LINE=$(grep "mpictr-spank.so" "${SLURM_CONF%/*}/plugstack.conf")
case "$CLUSTER_LINE" in
*registry_images=yes* | *registries=127.0.0.1*)
	# the tasks (the cluster's plugstack.conf) allow it too: what a digest
	# reaches once its registry is allowed is any SIF the cache holds
	ok "registries=127.0.0.1 (any port): srun lets the digest through, and the tasks run the planted SIF" reg_step listed "$DIGEST"
	check "... the planted image ran: an allowed registry is no check of the cache" grep -qx 'IN 1' "$W/out.listed"
	;;
*)
	ok_fail "srun's check passed (registries=127.0.0.1), the tasks (cluster: image_dirs= alone) refuse the digest" reg_step listed "$DIGEST"
	check "... the refusal is the task's, nothing ran" bash -c "grep -q 'slurmstepd.*: error: mpictr: --container-image' '$W/out.listed' && grep -q 'allows no registry' '$W/out.listed' && ! grep -q '^IN' '$W/out.listed'"
	;;
esac
echo "optional $SPANK_DIR/mpictr-spank.so image_dirs=$W/allowed:/nonexistent" >"$W/conf/plugstack.conf"
# The enforcement is in the task: srun is the user's, and so is the
# plugstack.conf it reads. A SLURM_CONF copy whose plugstack.conf has no
# image_dirs skips srun's check; the task (slurmstepd reads the cluster's
# plugstack.conf, image_dirs=$CLUSTER_DIRS) still refuses an image
# outside, and one reached through a symbolic link from an allowed
# directory (the link, or a linked directory on the way, is resolved).
open_conf() {
	mkdir -p "$W/open" && cp "$SLURM_CONF" "$W/open/slurm.conf" &&
		echo "optional $SPANK_DIR/mpictr-spank.so" >"$W/open/plugstack.conf" &&
		cp "$IMG/tiny.sif" "$SHM_IMG" && ! in_dirs "$SHM_IMG" &&
		ln -s "$SHM_IMG" "$W/link.sif" && ln -s /dev/shm "$W/shmdir"
}
open_fails() { # SUFFIX IMAGE PATTERN
	(export SLURM_CONF=$W/open/slurm.conf && fails_fast "$1" "$3" -O -n 2 --container-image="$2" sh -c 'echo RAN')
}
if [ -w /dev/shm ]; then
	ok "a plugstack.conf without image_dirs (a copy read by srun); an image in /dev/shm, outside image_dirs" open_conf
	ok "srun's check bypassed: the tasks refuse an image outside image_dirs, at once" \
		open_fails shm "$SHM_IMG" "mpictr: --container-image '$SHM_IMG': images must come from $CLUSTER_DIRS \(the site's image_dirs\)"
	check "... the refusal is the task's: the step ran and its tasks exited 255, the command did not" \
		bash -c "grep -q 'slurmstepd.*: error: mpictr: --container-image' '$W/out.shm' && grep -q 'exit code 255' '$W/out.shm' && ! grep -q '^RAN' '$W/out.shm'"
	check "... nothing left behind" clean "$(jobid shm)"
	ok "a symbolic link in an allowed directory to that image: refused by the tasks, naming the real path" \
		open_fails link "$W/link.sif" "'$W/link.sif' \(really '$SHM_IMG'\): images must come from"
	check "... the command did not run" bash -c "! grep -q '^RAN' '$W/out.link'"
	check "... nothing left behind" clean "$(jobid link)"
	ok "a path through a linked directory (shmdir -> /dev/shm): refused by the tasks" \
		open_fails shmdir "$W/shmdir/${SHM_IMG##*/}" "really '$SHM_IMG'\): images must come from"
	ok "with the cluster's plugstack.conf, srun refuses the link before launching" \
		fails_fast linksrun "mpictr: --container-image '$W/link.sif' \(really '$SHM_IMG'\)" -O -n 2 --container-image="$W/link.sif" true
	check "... no job step ran" bash -c "! grep -q 'exit code' '$W/out.linksrun'"
else
	need "an image outside image_dirs refused by the tasks" "/dev/shm is not writable (the test's place outside image_dirs)"
fi
# The site file applies in the task (MPICTR_TEST_SITE_CONF stands in for
# /etc/mpictr/mpictr.conf where that does not exist): a denied bind fails.
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "the site file's deny_bind applies to --container-mounts" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
else
	denied() {
		mkdir -p "$W/secret" && printf 'deny_bind = %s\n' "$W/secret" >"$W/site.conf" &&
			MPICTR_TEST_SITE_CONF=$W/site.conf fails_fast denied "deny_bind|denied" -O -n 2 \
				--container-image="$W/tiny.sif" --container-mounts="$W/secret:/s" true
	}
	ok "the site file's deny_bind: --container-mounts of a denied path fails at once" denied
	check "... naming the rule and the path" grep -q "$W/secret" "$W/out.denied"
	check "... nothing left behind" clean "$(jobid denied)"
fi

# ---- sbatch -----------------------------------------------------------------------------------
batch() {
	cat >"$W/job.sh" <<-EOF
		#!/bin/sh
		#SBATCH --container-image=$W/tiny.sif
		#SBATCH --output=$W/out.batch
		echo NS \$(readlink /proc/self/ns/user) \$(readlink /proc/self/ns/mnt)
		echo TINY \$TINY_IMAGE
		[ -x /bin/busybox ] && echo IMG ok
	EOF
	$T sbatch --wait -J "$NAME-batch" -n 1 "$W/job.sh" || return 1
	cat "$W/out.batch"
	grep -q '^TINY 1$' "$W/out.batch" && grep -q '^IMG ok$' "$W/out.batch" && one_ns batch
}
ok "#SBATCH --container-image: the batch script runs in the image" batch

# ---- --container-name: the job's steps share one container ------------------------------------
named() {
	cat >"$W/named.sh" <<-EOF
		#!/bin/sh
		#SBATCH --output=$W/out.named
		srun -n 2 --container-name=c1 --container-image=$W/tiny.sif --container-mounts=$W/data:/data:ro sh -c '$NSCMD; touch /dev/shm/s\$SLURM_PROCID'
		srun -n 2 --container-name=c1 --container-image=$W/tiny.sif sh -c '$NSCMD; echo SHM \$(ls /dev/shm | tr "\\n" " ")'
		srun -n 1 --container-name=c1 --container-image=$W/tiny.sif --container-mounts=$W/data:/data:ro sh -c 'echo SAME \$(cat /data/file)'
		srun -n 1 --container-name=c1 --container-image=$W/tiny.sif --container-mounts=$W/tmp:/other sh -c 'test -e /other && echo LATE mounted || echo LATE without'
		echo "LATE rc=\$?"
		srun -n 1 --container-image=$W/tiny.sif sh -c 'echo OTHER \$(readlink /proc/self/ns/user)'
	EOF
	$T sbatch --wait -J "$NAME-named" -n 2 "$W/named.sh" || return 1
	cat "$W/out.named"
	squeue -h -t all -n "$NAME-named" -o 'JOB %i' >"$W/job.named" 2>/dev/null
	[ "$(grep -c '^NS ' "$W/out.named")" = 4 ] && one_ns named
}
ok "sbatch: two steps with --container-name=c1 share one container (namespaces)" named
check "... and its /dev/shm: the second step sees both files of the first" grep -q '^SHM s0 s1$' "$W/out.named"
check "... a later step that repeats the first one's --container-mounts joins (and reads the bound file)" \
	grep -qx 'SAME spank-data' "$W/out.named"
check "... a later step with other --container-mounts runs without them (as Pyxis)" \
	bash -c "grep -qx 'LATE rc=0' '$W/out.named' && grep -qx 'LATE without' '$W/out.named'"
check "... with Pyxis's warning, naming the mount and the container" \
	grep -qF -- "mpictr: ignoring --container-mounts when attaching to a running container ('$W/tmp:/other' is not a mount of '$(sed -n 's/^JOB //p' "$W/job.named" 2>/dev/null | tail -n 1).c1'" "$W/out.named"
other_ns() {
	local ns o
	ns=$(awk '/^NS / { print $2; exit }' "$W/out.named")
	o=$(awk '/^OTHER / { print $2 }' "$W/out.named")
	[ -n "$o" ] && [ "$o" != "$ns" ] && [ "$o" != "$HOSTNS" ]
}
check "... a step without the name gets a container of its own" other_ns
check "... the named container ended with the job" clean "$(jobid named)"

# ---- two nodes --------------------------------------------------------------------------------
if slurm_multi_up 2; then
	nn_step() (
		export SLURM_CONF=$SLURM_CONF_MULTI
		step nn -N 2 -n 4 --mpi=pmix --container-image="$W/mpi.sif" /opt/mpictr/bin/hello
	)
	ok "two nodes: srun -N 2 -n 4 --mpi=pmix --container-image=mpi.sif hello" nn_step
	check "... 4 ranks of 4, allreduce ok" test "$(count nn '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
	check "... one namespace set per node (2 in all)" \
		test "$(sed -nE 's/^hello rank .* (userns [^ ]+ mntns [^ ]+) .*/\1/p' "$W/out.nn" | sort -u | wc -l)" = 2
else
	need "two nodes: srun -N 2 --container-image" "the 2-node cluster (sudo tests/slurm/cluster.sh start --nodes 2)"
fi

# ---- --container-name in an allocation: it outlives the step that started
# it (no batch or extern step: its keeper follows the job through squeue)
# and ends with the job
named_alloc() {
	cat >"$W/named-alloc.sh" <<-EOF
		#!/bin/sh
		echo JOB \$SLURM_JOB_ID
		srun -n 1 --container-name=c2 --container-image=$W/tiny.sif sh -c '$NSCMD'
		srun -n 1 --container-name=c2 --container-image=$W/tiny.sif sh -c '$NSCMD'
	EOF
	chmod +x "$W/named-alloc.sh"
	$T salloc -J "$NAME-nalloc" -n 1 "$W/named-alloc.sh" >"$W/out.nalloc" 2>&1
	cat "$W/out.nalloc"
	[ "$(grep -c '^NS ' "$W/out.nalloc")" = 2 ] && one_ns nalloc
}
ok "salloc: two steps in a row with --container-name=c2 share one container" named_alloc
named_left() { # JOBID: its processes and its instances' rendezvous entries
	leftovers "$1"
	ls -A "$JDIR" 2>/dev/null | grep "^inst-$1\." | sed 's/^/rendezvous entry /'
}
named_gone() { settle 300 named_left "$1"; }
check "... after the allocation: nothing left (30 s)" named_gone "$(sed -n 's/^JOB //p' "$W/out.nalloc")"

# ---- --container-name obeys image_dirs (issue 23 item 5): a named
# container the plugin did not start is refused, whatever its image. The
# user starts JOBID.c3 on an image outside image_dirs (/dev/shm) and
# JOBID.c4 on an allowed one, then joins them by --container-name: the
# step ran in the other image before.
OTHER=${SHM_IMG%.sif}-other.sqfs
trap 't_cleanup; rm -rf "$W" "$SHM_IMG" "$OTHER"' EXIT
bypass() {
	rm -rf "$W/other" && cp -a "$IMG/tiny" "$W/other" && echo other-image >"$W/other/other-image" &&
		mksquashfs "$W/other" "$OTHER" -noappend -quiet -no-progress -all-root >/dev/null && ! in_dirs "$OTHER" || return 1
	cat >"$W/bypass.sh" <<-EOF
		#!/bin/sh
		echo JOB \$SLURM_JOB_ID
		"$MPICTR" instance start "$OTHER" \$SLURM_JOB_ID.c3 || echo "START failed"
		srun -n 1 --container-name=c3 --container-image=$W/tiny.sif sh -c 'cat /other-image; echo RAN'
		echo "BYPASS rc=\$?"
		"$MPICTR" instance start "$W/tiny.sif" \$SLURM_JOB_ID.c4 || echo "START failed"
		srun -n 1 --container-name=c4 --container-image=$W/tiny.sif sh -c 'echo RAN4'
		echo "ALLOWED rc=\$?"
	EOF
	chmod +x "$W/bypass.sh"
	$T salloc -J "$NAME-bypass" -n 1 "$W/bypass.sh" >"$W/out.bypass" 2>&1
	cat "$W/out.bypass"
	! grep -q '^START failed' "$W/out.bypass" && grep -qE '^BYPASS rc=[1-9]' "$W/out.bypass" &&
		! grep -qE '^(other-image|RAN)$' "$W/out.bypass"
}
if [ -w /dev/shm ] && command -v mksquashfs >/dev/null; then
	ok "--container-name=c3 of an instance the user started on an image outside image_dirs: refused, nothing ran" bypass
	check "... naming the instance and the rule" \
		grep -q "instance '[0-9]*\.c3' was started by 'mpictr instance start', not by the SPANK plugin: refused" "$W/out.bypass"
	check "... an instance of an allowed image the user started is refused too (the plugin's only)" \
		bash -c "grep -qE '^ALLOWED rc=[1-9]' '$W/out.bypass' && ! grep -q '^RAN4' '$W/out.bypass'"
	check "... after the allocation: nothing left (30 s)" named_gone "$(sed -n 's/^JOB //p' "$W/out.bypass")"
else
	need "--container-name of an instance outside image_dirs refused" "/dev/shm is not writable or mksquashfs missing"
fi

done_testing
