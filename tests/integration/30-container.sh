#!/bin/bash
# 30-container.sh - `mpictr IMAGE CMD`: one process in the image, as the
# invoking (unprivileged) user, on the tiny image in its three forms.
. "$(dirname "$0")/lib.sh"

require_userns
require_images tiny
UID_=$(id -u); GID_=$(id -g)
cd "$T_TMP" || exit 1
private_tmpdir

forms="$IMG/tiny"
if have_fuse; then
	forms="$forms $IMG/tiny.sqfs $IMG/tiny.sif"
else
	need "squashfs and SIF images" "/dev/fuse is not usable (chmod 0666 /dev/fuse)"
fi

for I in $forms; do
	n=$(basename "$I")
	ok "$n: runs as the invoking user" bash -c "[ \"\$('$MPICTR' '$I' id -u)\" = $UID_ ] && [ \"\$('$MPICTR' '$I' id -g)\" = $GID_ ]"
	ok "$n: no capabilities, empty bounding set, no_new_privs" bash -c "
		s=\$('$MPICTR' '$I' cat /proc/self/status) &&
		echo \"\$s\" | grep -q '^CapEff:[[:space:]]*0000000000000000' &&
		echo \"\$s\" | grep -q '^CapPrm:[[:space:]]*0000000000000000' &&
		echo \"\$s\" | grep -q '^CapBnd:[[:space:]]*0000000000000000' &&
		echo \"\$s\" | grep -q '^CapAmb:[[:space:]]*0000000000000000' &&
		echo \"\$s\" | grep -q '^NoNewPrivs:[[:space:]]*1'"
	ok "$n: a setuid-root binary in the image does not elevate" bash -c "[ \"\$('$MPICTR' '$I' /usr/bin/suidprobe)\" = 'uid=$UID_ euid=$UID_ gid=$GID_ egid=$GID_' ]"
	ok "$n: the image is read-only" bash -c "'$MPICTR' '$I' touch /usr/bin/x 2>&1 | grep -q 'Read-only file system'"
	ok "$n: the root is read-only too" bash -c "'$MPICTR' '$I' mkdir /newdir 2>&1 | grep -q 'Read-only file system'"
	ok "$n: exit status is the command's" bash -c "'$MPICTR' '$I' sh -c 'exit 7'; [ \$? = 7 ]"
done

I=$IMG/tiny.sif; have_fuse || I=$IMG/tiny
n=$(basename "$I")

# Default binds.
echo "marker $$" >"$T_TMP/hostfile"
ok "host /tmp is shared" bash -c "[ \"\$('$MPICTR' '$I' cat '$T_TMP/hostfile')\" = 'marker $$' ]"
ok "the working directory is bound and is the start directory" bash -c "[ \"\$('$MPICTR' '$I' pwd)\" = '$T_TMP' ]"
ok "HOME is bound" bash -c "'$MPICTR' '$I' test -d \"\$HOME\" && [ \"\$('$MPICTR' '$I' sh -c 'echo \$HOME')\" = \"\$HOME\" ]"
ok "/etc/hosts is the host's" bash -c "[ \"\$('$MPICTR' '$I' cat /etc/hosts | md5sum)\" = \"\$(md5sum </etc/hosts)\" ]"
ok "/etc/passwd has the user's entry" bash -c "'$MPICTR' '$I' grep -q '^[^:]*:x:$UID_:' /etc/passwd"
ok "minimal /dev" bash -c "[ \"\$('$MPICTR' '$I' ls /dev | tr '\n' ' ')\" = 'fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ' ]"
ok "/dev/null works" bash -c "'$MPICTR' '$I' sh -c 'echo x >/dev/null && head -c 4 /dev/urandom | wc -c' | grep -qx 4"
ok "/dev/shm is private to the job" bash -c "'$MPICTR' '$I' sh -c 'echo s >/dev/shm/mpictr-test-$$ && cat /dev/shm/mpictr-test-$$' | grep -qx s && [ ! -e /dev/shm/mpictr-test-$$ ]"
ok "host paths that were not bound are invisible" bash -c "! '$MPICTR' '$I' test -e /usr/lib/x86_64-linux-gnu/libc.so.6 && ! '$MPICTR' '$I' test -e /etc/shadow"
ok "/sys is read-only" bash -c "'$MPICTR' '$I' cat /proc/self/mountinfo | awk '\$5 == \"/sys\" { print \$6 }' | grep -q '^ro'"

# User binds.
mkdir -p "$T_TMP/data/sub" && echo d >"$T_TMP/data/sub/f"
ok "-B SRC:DST to a destination missing from the image" bash -c "[ \"\$('$MPICTR' -B '$T_TMP/data:/newtop/deep' '$I' cat /newtop/deep/sub/f)\" = d ]"
ok "-B into an image directory (created in the writable layer, not the image)" bash -c "[ \"\$('$MPICTR' -B '$T_TMP/data:/usr/share/mpictr-x' '$I' cat /usr/share/mpictr-x/sub/f)\" = d ]"
ok "-B comma list and :ro" bash -c "'$MPICTR' -B '$T_TMP/data:/a:ro,$T_TMP/data:/b' '$I' sh -c 'touch /b/w && ! touch /a/w2' && [ -e '$T_TMP/data/w' ] && [ ! -e '$T_TMP/data/w2' ]"
ok "-B relative source" bash -c "cd '$T_TMP' && [ \"\$('$MPICTR' -B data:/rel '$I' cat /rel/sub/f)\" = d ]"
ok_status "-B with a missing source fails with 255" 255 "$MPICTR" -B /nonexistent-$$:/x "$I" true
ok "... and names the path" bash -c "'$MPICTR' -B /nonexistent-$$:/x '$I' true 2>&1 | grep -q \"'/nonexistent-$$'\""
ok_status "-B destination with '..' is refused" 255 "$MPICTR" -B "$T_TMP/data:/../../etc" "$I" true
ok "a destination inside a host bind is refused, not created on the host" bash -c "! '$MPICTR' -B '$T_TMP/data:$T_TMP/newdir-$$' '$I' true 2>/dev/null; [ ! -e '$T_TMP/newdir-$$' ]"

# Environment.
ok "the image's env scripts are sourced" bash -c "[ \"\$('$MPICTR' '$I' sh -c 'echo \$TINY_IMAGE')\" = 1 ]"
ok "PATH is the container default plus the image's additions" bash -c "'$MPICTR' '$I' sh -c 'echo \$PATH' | grep -q '^/opt/tiny/bin:.*/usr/bin'"
ok "host variables pass through" bash -c "[ \"\$(MYVAR=hv '$MPICTR' '$I' sh -c 'echo \$MYVAR')\" = hv ]"
ok "LD_LIBRARY_PATH of the host is not passed" bash -c "[ -z \"\$(LD_LIBRARY_PATH=/host/lib '$MPICTR' '$I' sh -c 'echo \$LD_LIBRARY_PATH')\" ]"
ok "--env wins over the image's env script" bash -c "[ \"\$('$MPICTR' --env TINY_IMAGE=mine '$I' sh -c 'echo \$TINY_IMAGE')\" = mine ]"
ok "MPICTR_ENV_NAME sets NAME and wins over the image" bash -c "[ \"\$(MPICTR_ENV_TINY_IMAGE=e '$MPICTR' '$I' sh -c 'echo \$TINY_IMAGE')\" = e ]"
ok "--env wins over MPICTR_ENV_" bash -c "[ \"\$(MPICTR_ENV_X=e '$MPICTR' -e X=o '$I' sh -c 'echo \$X')\" = o ]"
ok "values with shell metacharacters survive" bash -c "[ \"\$('$MPICTR' --env 'Q=\$(id) \"x\" ;' '$I' sh -c 'echo \"\$Q\"')\" = '\$(id) \"x\" ;' ]"

# Options.
ok "--pwd sets the start directory" bash -c "[ \"\$('$MPICTR' --pwd /usr '$I' pwd)\" = /usr ]"
ok "--contain: no host /tmp, empty HOME" bash -c "'$MPICTR' --contain '$I' sh -c '[ ! -e \"$T_TMP/hostfile\" ] && [ -z \"\$(ls -A \$HOME)\" ] && [ \"\$(pwd)\" = \"\$HOME\" ]'"
ok "--fakeroot maps the user to uid 0" bash -c "[ \"\$('$MPICTR' --fakeroot '$I' id -u)\" = 0 ]"
ok "--fakeroot still has no capabilities" bash -c "'$MPICTR' --fakeroot '$I' cat /proc/self/status | grep -q '^CapEff:[[:space:]]*0000000000000000'"
ok_status "--fakeroot under a PMI server is refused" 255 env PMI_FD=9 "$MPICTR" --fakeroot "$I" true
ok "exec is the explicit verb" bash -c "[ \"\$('$MPICTR' exec '$I' echo hi)\" = hi ]"
ok "run executes the runscript with arguments" bash -c "'$MPICTR' run '$I' a 'b c' | grep -q 'runscript: a b c'"

# Exit codes.
ok_status "command not found: 127" 127 "$MPICTR" "$I" no-such-command
ok "... and the message names it" bash -c "'$MPICTR' '$I' no-such-command 2>&1 | grep -q \"'no-such-command' not found\""
echo 'echo x' >"$T_TMP/noexec"; chmod 644 "$T_TMP/noexec"
ok_status "not executable: 126" 126 "$MPICTR" "$I" "$T_TMP/noexec"
ok_status "killed by a signal: 128+signal" 137 "$MPICTR" "$I" sh -c 'kill -9 $$'
ok_status "missing image: 255" 255 "$MPICTR" "$T_TMP/no-such-image" true
ok_status "not an image: 255" 255 "$MPICTR" "$T_TMP/hostfile" true

# Errors that help, in namespaces of the test's own where it can break
# things: a user-namespace limit of 0, an unusable /dev/fuse.
ok "user namespaces unavailable: exit 255 and a hint naming the sysctl" bash -c "unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_user_namespaces; \"\$0\" \"\$1\" true' '$MPICTR' '$IMG/tiny' 2>&1 | grep -q 'hint: .*user.max_user_namespaces'"
if [ "$UID_" = 0 ]; then
	skip "/dev/fuse not accessible: exit 255 and a hint" "root can open any /dev/fuse (run as a normal user, as CI does)"
elif have_fuse; then
	ok "/dev/fuse not accessible: exit 255 and a hint" bash -c "unshare -U -r -m sh -c 'mount --bind /etc/gshadow /dev/fuse && \"\$0\" \"\$1\" true; echo rc=\$?' '$MPICTR' '$IMG/tiny.sif' 2>&1 | tr '\n' ' ' | grep -q \"open '/dev/fuse': Permission denied (hint: .*chmod 0666 /dev/fuse.* rc=255\""
fi

# Signals are forwarded.
sig_test() {
	"$MPICTR" "$I" sh -c 'trap "echo got-TERM; exit 42" TERM; echo ready; while :; do sleep 0.1; done' >"$T_TMP/sig.out" 2>&1 &
	local pid=$! i
	for i in $(seq 50); do grep -q ready "$T_TMP/sig.out" && break; sleep 0.1; done
	kill -TERM $pid
	wait $pid
	local rc=$?
	grep -q got-TERM "$T_TMP/sig.out" && [ $rc = 42 ]
}
ok "SIGTERM is forwarded to the command" sig_test

# Nothing left behind, also after SIGKILL of mpictr.
leftovers() { ls -d "$TMPDIR"/mpictr-"$UID_".* 2>/dev/null; marked_procs | grep -v -e marked_procs -e leftovers; }
noleft() { "$MPICTR" "$I" true; sleep 0.2; [ -z "$(leftovers)" ] || { leftovers; return 1; }; }
ok "no job directory or process left after a run" noleft
kill_test() {
	"$MPICTR" "$I" sleep 30 &
	local pid=$! i
	sleep 1
	kill -KILL $pid
	wait $pid 2>/dev/null
	for i in $(seq 50); do
		[ -z "$(leftovers)" ] && return 0
		sleep 0.1
	done
	leftovers
	return 1
}
ok "SIGKILL of mpictr leaves no process, mount or directory" kill_test
# A SIGKILL to the launcher's whole process group (timeout -s KILL, a
# batch system killing by group) reaches every process of the job at once,
# the cleanup process included unless it left the group: the job directory
# must still go, and no process of the job may stay.
wait_clean() {
	settle 50 leftovers 2>/dev/null
}
# No mount of the job is in the host's namespace, before or after.
host_mounts() { grep -c -e "$TMPDIR" -e fuse /proc/self/mountinfo; }
M0=$(host_mounts)
group_kill_timeout() {
	timeout -s KILL 3 "$MPICTR" -n 2 "$I" sleep 100 2>/dev/null
	local rc=$?
	[ $rc = 137 ] || { echo "timeout: exit $rc, expected 137"; return 1; }
	wait_clean && [ "$(host_mounts)" = "$M0" ]
}
ok "timeout -s KILL 3 mpictr -n 2: no job directory, process or host mount left" group_kill_timeout
group_kill_setsid() {
	setsid "$MPICTR" -n 2 "$I" sleep 100 &
	local pid=$! pgid i
	for i in $(seq 100); do
		[ "$(marked_procs 2>/dev/null | grep -c '^[0-9]* sleep 100 $')" = 2 ] && break
		sleep 0.05
	done
	pgid=$(ps -o pgid= -p $pid | tr -d ' ')
	[ -n "$pgid" ] && [ "$pgid" != "$(ps -o pgid= -p $$ | tr -d ' ')" ] || { echo "pgid '$pgid'"; kill -KILL $pid; return 1; }
	ls -d "$TMPDIR"/mpictr-"$UID_".* >/dev/null || { echo "no job directory"; kill -KILL -- -$pgid; return 1; }
	kill -KILL -- -"$pgid"
	wait $pid 2>/dev/null
	wait_clean && [ "$(host_mounts)" = "$M0" ]
}
ok "kill -KILL -- -PGID of a setsid mpictr -n 2: no job directory, process or host mount left" group_kill_setsid
# A SIGKILL of every process of the job, the cleanup process's too (what a
# cgroup kill does), leaves the job directory: the user's next job sweeps
# it (issue 23 item 9: they piled up before); a job directory whose
# janitor lives is left alone.
jobdirs() { ls -d "$TMPDIR"/mpictr-"$UID_".* 2>/dev/null; }
stale_sweep() {
	local pid pids live i dir adir
	"$MPICTR" -n 2 "$I" sleep 100 &
	pid=$!
	for i in $(seq 100); do
		[ "$(marked_procs 2>/dev/null | grep -c '^[0-9]* sleep 100 $')" = 2 ] && break
		sleep 0.05
	done
	dir=$(jobdirs)
	[ -n "$dir" ] && [ "$(echo "$dir" | wc -l)" = 1 ] || { echo "job directories: '$dir'"; kill -KILL $pid; return 1; }
	pids=$(marked_procs 2>/dev/null | awk '{ print $1 }')
	kill -KILL $pids 2>/dev/null
	wait $pid 2>/dev/null
	settle 50 marked_procs >/dev/null 2>&1
	[ -d "$dir" ] || { echo "$dir: not left by the kill"; return 1; }
	echo "left: $dir"
	"$MPICTR" -n 1 "$I" sleep 5 &
	live=$!
	for i in $(seq 100); do
		adir=$(jobdirs | grep -vxF "$dir")
		[ -n "$adir" ] && break
		sleep 0.05
	done
	[ ! -e "$dir" ] || { echo "$dir: not swept by the next job"; kill $live; return 1; }
	echo "swept at the next start; live: $adir"
	"$MPICTR" -n 1 "$I" true || { kill $live; return 1; }
	[ -d "$adir" ] || { echo "$adir: a live job's directory was swept"; return 1; }
	wait $live && wait_clean
}
ok "SIGKILL of every process of a job (its janitor's too): the next job sweeps the directory left, not a live job's" stale_sweep

# The job's private /dev/shm has a size: by default 50% of the memory the
# job may use (physical memory, or its memory cgroup's limit if lower), or
# the site's shm_size; writing past it fails with ENOSPC in the container.
shm_plan_k() { # the size= of /dev/shm in the --dry-run plan, in KiB
	"$MPICTR" --dry-run "$I" true | grep '"target": "/dev/shm"' | sed -n 's/.*,size=\([0-9]*\)k".*/\1/p'
}
shm_df_k() { # the 1K-blocks of /dev/shm as each of the 2 ranks sees it
	"$MPICTR" -n 2 "$I" sh -c 'df -k /dev/shm | tail -1' | awk '{ print $2 }' | sort -u
}
job_mem_k() { # physical memory, or the memory cgroup limit if lower (KiB)
	local mem lim line path f file
	mem=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	while IFS= read -r line; do
		case $line in
		0::/*) path=${line#0::}; f=/sys/fs/cgroup file=memory.max ;;
		*:*memory*:/*) path=${line#*:*:}; f=/sys/fs/cgroup/memory file=memory.limit_in_bytes ;;
		*) continue ;;
		esac
		while :; do
			lim=$(cat "$f$path/$file" 2>/dev/null)
			case $lim in ''|max|*[!0-9]*) ;; *) [ $((lim / 1024)) -lt "$mem" ] && mem=$((lim / 1024)) ;; esac
			[ -z "$path" ] || [ "$path" = / ] && break
			path=${path%/*}
		done
	done </proc/self/cgroup
	echo "$mem"
}
shm_default() {
	local plan mem df want
	plan=$(shm_plan_k)
	mem=$(job_mem_k)
	want=$(((mem * 512 + 4095) / 4096 * 4)) # half, rounded up to a page
	df=$(shm_df_k)
	echo "plan ${plan}k, job memory ${mem}k, want ${want}k, df in the ranks: $df"
	[ "$plan" = "$want" ] && [ "$df" = "$want" ]
}
if [ -e /etc/mpictr/mpictr.conf ]; then
	need "shm_size in the site file" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
else
	ok "/dev/shm: default size 50% of the job's memory (--dry-run and df in mpictr -n 2)" shm_default
	echo "shm_size = 64m" >"$T_TMP/shm.conf"
	shm_site() {
		local -x MPICTR_TEST_SITE_CONF=$T_TMP/shm.conf
		local plan df out rc
		plan=$(shm_plan_k)
		df=$(shm_df_k)
		echo "plan ${plan}k, df in the ranks: $df"
		[ "$plan" = 65536 ] && [ "$df" = 65536 ] || return 1
		out=$("$MPICTR" -n 2 "$I" sh -c '[ "$PMIX_RANK" = 0 ] || exit 0; dd if=/dev/zero of=/dev/shm/fill bs=1M count=40 2>&1 || exit 9; dd if=/dev/zero of=/dev/shm/more bs=1M count=40 2>&1; echo "dd=$?"' 2>&1)
		rc=$?
		echo "$out"
		[ $rc = 0 ] && echo "$out" | grep -q 'No space left on device' && echo "$out" | grep -qx 'dd=1'
	}
	ok "site shm_size = 64m: 64 MiB in mpictr -n 2, writing 80 MiB fails with ENOSPC" shm_site
	shm_pct() {
		local def plan
		def=$(shm_plan_k)
		echo "shm_size = 10%" >"$T_TMP/shm-pct.conf"
		plan=$(export MPICTR_TEST_SITE_CONF=$T_TMP/shm-pct.conf; shm_plan_k)
		echo "default ${def}k, 10%: ${plan}k"
		# 10% is a fifth of the default 50% (give or take a page).
		[ -n "$plan" ] && [ $((plan * 5 - def)) -le 20 ] && [ $((def - plan * 5)) -le 20 ]
	}
	ok "site shm_size = 10%: a fifth of the default" shm_pct
	echo "shm_size = 8x" >"$T_TMP/shm-bad.conf"
	ok_status "site shm_size = 8x: refused with 255" 255 env MPICTR_TEST_SITE_CONF="$T_TMP/shm-bad.conf" "$MPICTR" "$I" true
	cp "$T_OUT" "$T_TMP/shm-bad.out"
	check "... naming the file, the line and the key" grep -q "shm-bad.conf:1: invalid value '8x' for 'shm_size'" "$T_TMP/shm-bad.out"
	# Under --contain the private /tmp and $HOME are tmpfs too, sized by
	# the site's tmp_size (each), by default 10% of the job's memory.
	# They had no size before (half the RAM each).
	tmp_plan_k() { # TARGET: the size= of that tmpfs in the --contain plan
		"$MPICTR" --dry-run --contain "$I" true | grep "\"source\": \"tmpfs\", \"target\": \"$1\"" | sed -n 's/.*,size=\([0-9]*\)k".*/\1/p'
	}
	tmp_default() {
		local mem want t h
		mem=$(job_mem_k)
		want=$(((mem / 100 * 10 + mem % 100 * 10 / 100) * 1024))
		want=$(((want + 4095) / 4096 * 4))
		t=$(tmp_plan_k /tmp) h=$(tmp_plan_k "$HOME")
		echo "job memory ${mem}k, want ${want}k: /tmp ${t}k, \$HOME ${h}k"
		[ "$t" = "$want" ] && [ "$h" = "$want" ]
	}
	ok "--contain: /tmp and \$HOME tmpfs sized 10% of the job's memory in --dry-run" tmp_default
	echo "tmp_size = 16m" >"$T_TMP/tmp.conf"
	tmp_site() {
		local -x MPICTR_TEST_SITE_CONF=$T_TMP/tmp.conf
		local out rc
		echo "plan: /tmp $(tmp_plan_k /tmp)k, \$HOME $(tmp_plan_k "$HOME")k"
		[ "$(tmp_plan_k /tmp)" = 16384 ] && [ "$(tmp_plan_k "$HOME")" = 16384 ] || return 1
		out=$("$MPICTR" --contain "$I" sh -c 'df -k /tmp "$HOME" | tail -2; for d in /tmp "$HOME"; do dd if=/dev/zero of=$d/fill bs=1M count=20 2>&1; echo "dd=$?"; done' 2>&1)
		rc=$?
		echo "$out"
		[ $rc = 0 ] && [ "$(echo "$out" | awk '$2 == 16384' | wc -l)" = 2 ] &&
			[ "$(echo "$out" | grep -c 'No space left on device')" -ge 2 ] && [ "$(echo "$out" | grep -cx 'dd=1')" = 2 ]
	}
	ok "site tmp_size = 16m: /tmp and \$HOME of --contain 16 MiB each, writing 20 MiB fails with ENOSPC" tmp_site
	echo "tmp_size = 1.5g" >"$T_TMP/tmp-bad.conf"
	ok_status "site tmp_size = 1.5g: refused with 255" 255 env MPICTR_TEST_SITE_CONF="$T_TMP/tmp-bad.conf" "$MPICTR" --contain "$I" true
	cp "$T_OUT" "$T_TMP/tmp-bad.out"
	check "... naming the file, the line and the key" grep -q "tmp-bad.conf:1: invalid value '1.5g' for 'tmp_size'" "$T_TMP/tmp-bad.out"
fi

# --dry-run lists the image's env scripts in the order the exec wrapper
# sources them, read without mounting the image (a directory through
# descriptors below its root, squashfs through the squash plugin). An
# image of our own: the tiny rootfs plus scripts that record their order,
# a file that is not a script, and in a second image the env directory an
# absolute symlink inside the image, in a third one a symlink that tries to
# leave it.
env_scripts_tests() {
	local e=$T_TMP/envimg/.singularity.d/env f
	cp -a "$IMG/tiny" "$T_TMP/envimg" && chmod -R u+w "$T_TMP/envimg" || return
	for f in 05-a.sh 5-b.sh 50-c.sh A.sh a.sh; do
		echo "export ORDER=\"\${ORDER}${f%.sh} \"" >"$e/$f"
	done
	echo 'export ORDER="${ORDER}notes "' >"$e/notes.txt"
	want='["/.singularity.d/env/05-a.sh","/.singularity.d/env/10-tiny.sh","/.singularity.d/env/5-b.sh","/.singularity.d/env/50-c.sh","/.singularity.d/env/90-environment.sh","/.singularity.d/env/A.sh","/.singularity.d/env/a.sh"]'
	ok "--dry-run lists the image's env scripts, in order (directory)" bash -c "'$MPICTR' --dry-run '$T_TMP/envimg' true | jq -ce .env_scripts | grep -qxF '$want'"
	ok "... the order they run in" bash -c "[ \"\$('$MPICTR' '$T_TMP/envimg' sh -c 'echo \$ORDER')\" = '05-a 5-b 50-c A a' ]"
	cp -a "$T_TMP/envimg" "$T_TMP/envlink" && mkdir -p "$T_TMP/envlink/opt/envs" &&
		mv "$T_TMP/envlink/.singularity.d/env/"* "$T_TMP/envlink/opt/envs/" &&
		rmdir "$T_TMP/envlink/.singularity.d/env" &&
		ln -s /opt/envs "$T_TMP/envlink/.singularity.d/env"
	ok "... an absolute symlink is followed inside the image" bash -c "'$MPICTR' --dry-run '$T_TMP/envlink' true | jq -ce .env_scripts | grep -qxF '$want'"
	cp -a "$T_TMP/envimg" "$T_TMP/envesc" && mkdir -p "$T_TMP/hostenv" &&
		echo 'echo escaped' >"$T_TMP/hostenv/evil.sh" &&
		rm -r "$T_TMP/envesc/.singularity.d/env" &&
		ln -s "../../../../../../../..$T_TMP/hostenv" "$T_TMP/envesc/.singularity.d/env"
	ok "... a symlink out of the image lists nothing of the host" bash -c "'$MPICTR' --dry-run '$T_TMP/envesc' true | jq -e '.env_scripts == []'"
	cp -a "$T_TMP/envesc" "$T_TMP/envloop" && rm "$T_TMP/envloop/.singularity.d/env" &&
		ln -s ../.singularity.d/env "$T_TMP/envloop/.singularity.d/env"
	ok "... a symlink loop: none, and no hang" timeout 20 bash -c "'$MPICTR' --dry-run '$T_TMP/envloop' true | jq -e '.env_scripts == []'"
	if command -v mksquashfs >/dev/null; then
		mksquashfs "$T_TMP/envimg" "$T_TMP/envimg.sqfs" -quiet -no-progress -all-root >/dev/null 2>&1
		mksquashfs "$T_TMP/envlink" "$T_TMP/envlink.sqfs" -quiet -no-progress -all-root >/dev/null 2>&1
		mksquashfs "$T_TMP/envesc" "$T_TMP/envesc.sqfs" -quiet -no-progress -all-root >/dev/null 2>&1
		mksquashfs "$T_TMP/envloop" "$T_TMP/envloop.sqfs" -quiet -no-progress -all-root >/dev/null 2>&1
		ok "--dry-run lists them for a squashfs image too (not mounted)" bash -c "'$MPICTR' --dry-run '$T_TMP/envimg.sqfs' true | jq -ce .env_scripts | grep -qxF '$want'"
		ok "... through an absolute symlink inside the squashfs" bash -c "'$MPICTR' --dry-run '$T_TMP/envlink.sqfs' true | jq -ce .env_scripts | grep -qxF '$want'"
		ok "... and nothing out of it" bash -c "'$MPICTR' --dry-run '$T_TMP/envesc.sqfs' true | jq -e '.env_scripts == []'"
		ok "... a symlink loop in the squashfs: none, and no hang" timeout 20 bash -c "'$MPICTR' --dry-run '$T_TMP/envloop.sqfs' true | jq -e '.env_scripts == []'"
		if have_fuse; then
			ok "... in the order they run in" bash -c "[ \"\$('$MPICTR' '$T_TMP/envimg.sqfs' sh -c 'echo \$ORDER')\" = '05-a 5-b 50-c A a' ]"
		fi
	else
		need "squashfs env scripts" "mksquashfs is not installed"
	fi
	ok "--dry-run of the SIF image lists its env scripts" bash -c "'$MPICTR' --dry-run '$IMG/tiny.sif' true | jq -ce .env_scripts | grep -qxF '[\"/.singularity.d/env/10-tiny.sh\",\"/.singularity.d/env/90-environment.sh\"]'"
}

# --dry-run.
if command -v jq >/dev/null; then
	ok "--dry-run prints the plan as JSON with the contract's keys" bash -c "'$MPICTR' --dry-run -B '$T_TMP/data:/d:ro' '$I' echo hi | jq -e '(.command == [\"echo\",\"hi\"]) and (.mounts|length > 5) and (.mounts[0].target == \"/\") and (.env|type == \"array\") and (.env_scripts|type == \"array\") and (.devices|type == \"array\") and ([.mounts[] | select(.target == \"/d\" and (.options|test(\"ro\")))] | length == 1)'"
	ok "--dry-run executes nothing" bash -c "'$MPICTR' --dry-run '$I' touch '$T_TMP/dry-$$' >/dev/null && [ ! -e '$T_TMP/dry-$$' ]"
	ok "--dry-run env has the --env value and no host PATH" bash -c "'$MPICTR' --dry-run -e A=b '$I' true | jq -e '(.env | index(\"A=b\")) and (.env | map(select(startswith(\"PATH=\"))) == [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"])'"
	env_scripts_tests
else
	need "--dry-run JSON" "jq is not installed"
fi
ok_status "--dry-run of a missing image fails" 255 "$MPICTR" --dry-run "$T_TMP/nope" true

ok "mpictr check reports user namespaces and FUSE" bash -c "'$MPICTR' check | grep -q '^ok: .*user namespaces' && '$MPICTR' check | grep -q 'fuse'"
done_testing
