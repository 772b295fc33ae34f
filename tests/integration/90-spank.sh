#!/bin/bash
# 90-spank.sh - the SPANK plugin mpictr-spank.so under real Slurm
# (tests/slurm/cluster.sh writes the plugstack.conf line
# `optional /var/lib/mpictr-spank/mpictr-spank.so`; this test installs the
# tree's plugins there): `srun --container-image=IMAGE CMD` puts the tasks
# of a node in one user and mount namespace, exec'd by slurmstepd itself;
# Open MPI (pmix) and MPICH (pmi2); --container-mounts, -workdir, -env;
# inert without options; `#SBATCH --container-image`; --container-name
# shared by two steps; failures fail fast with their reason and leave
# nothing; two nodes; the plugin from an installed prefix.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 90"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

require_slurm
if ! spank_ready; then
	need "plugstack.conf loads $SPANK_DIR/mpictr-spank.so, writable by the test user" \
		"a cluster started by the current tests/slurm/cluster.sh (it writes plugstack.conf and $SPANK_DIR)"
	done_testing
	exit
fi
require_userns_fuse "user namespaces and /dev/fuse" "the plugin needs unprivileged user namespaces and a usable /dev/fuse"
require_images all
[ -f "$ROOT/build/plugins/mpictr-spank.so" ] || { need "mpictr-spank.so built" "libslurm-dev (Slurm's spank.h)"; done_testing; exit; }

spank_exports() {
	nm -D --defined-only "$ROOT/build/plugins/mpictr-spank.so" | awk '{ print $3 }' | sort | tr '\n' ' '
	[ "$(nm -D --defined-only "$ROOT/build/plugins/mpictr-spank.so" | awk '{ print $3 }' | sort | tr '\n' ' ')" = \
		"plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt slurm_spank_task_init spank_plugin_version " ]
}
ok "mpictr-spank.so exports the SPANK symbols only (libmpictr inside stays local)" spank_exports
ok "the tree's plugins installed where plugstack.conf names them" spank_install "$ROOT/build/plugins"

W=$(mktemp -d /var/tmp/mpictr-spank.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp" "$W/data"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
echo spank-data >"$W/data/file"
trap 'spank_install "$ROOT/build/plugins" 2>/dev/null; t_cleanup; rm -rf "$W"' EXIT
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
check "... start directory: the job's working directory" test "$(count see "^CWD $W\$")" = 3
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
		srun -n 2 --container-name=c1 --container-image=$W/tiny.sif sh -c '$NSCMD; touch /dev/shm/s\$SLURM_PROCID'
		srun -n 2 --container-name=c1 --container-image=$W/tiny.sif sh -c '$NSCMD; echo SHM \$(ls /dev/shm | tr "\\n" " ")'
		srun -n 1 --container-image=$W/tiny.sif sh -c 'echo OTHER \$(readlink /proc/self/ns/user)'
	EOF
	$T sbatch --wait -J "$NAME-named" -n 2 "$W/named.sh" || return 1
	cat "$W/out.named"
	squeue -h -t all -n "$NAME-named" -o 'JOB %i' >"$W/job.named" 2>/dev/null
	[ "$(grep -c '^NS ' "$W/out.named")" = 4 ] && one_ns named
}
ok "sbatch: two steps with --container-name=c1 share one container (namespaces)" named
check "... and its /dev/shm: the second step sees both files of the first" grep -q '^SHM s0 s1$' "$W/out.named"
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

# ---- from an installed prefix ------------------------------------------------------------
# `make install PREFIX=...` puts mpictr-spank.so beside the other plugins
# (LIBDIR/mpictr); installed alone where plugstack.conf names it, it finds
# them at the installed PLUGINDIR.
P=$W/prefix
prefix_step() {
	spank_install "$P/lib/mpictr" && rm -f "$SPANK_DIR/mpictr-squash.so" "$SPANK_DIR/mpictr-pmix.so" &&
		step prefix -O --mpi=pmix -n 2 --container-image="$W/mpi.sif" /opt/mpictr/bin/hello
}
ok "make install PREFIX=tmp installs mpictr-spank.so in lib/mpictr beside the other plugins" bash -c "
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C '$ROOT' install PREFIX='$P' >/dev/null &&
	test -f '$P/lib/mpictr/mpictr-spank.so' -a -f '$P/lib/mpictr/mpictr-squash.so' -a -f '$P/lib/mpictr/mpictr-pmix.so'"
ok "the installed plugin: srun --mpi=pmix -n 2 --container-image=mpi.sif hello" prefix_step
check "... 2 ranks of 2, allreduce ok" test "$(count prefix '^hello rank [01]/2 .* allreduce 1 ok')" = 2
check "... in one user and one mount namespace" hello_ns prefix
ok "the tree's plugins installed again" spank_install "$ROOT/build/plugins"

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

done_testing
