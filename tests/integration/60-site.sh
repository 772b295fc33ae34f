#!/bin/bash
# 60-site.sh - site configuration and profiles: line-numbered errors, unknown
# profiles, deny/allow rules a user file cannot lift, MPICTR_SYSROOT ignored
# under restrictions, profile env and binds; host MPI injection with the ABI
# check (host MPICH into an MPICH image runs and is the library loaded; Open
# MPI into an MPICH-only image is refused, or only warned about). deny_bind
# on every bind (issue 18 item 5): -B /:/host, a parent of the denied path,
# the working directory, $HOME, PMIX_SERVER_TMPDIR, a rule naming a symlink,
# and a path component swapped for a symlink while mpictr runs.
#
# MPICTR_TEST_SITE_CONF stands in for /etc/mpictr/mpictr.conf (honoured only
# where that file does not exist). Deny rules apply to the automatic binds
# too (/tmp, $HOME, the working directory), so the test's files live outside
# /tmp, and the commands run beside the denied directory with a home of
# their own.
if [ -d /var/tmp ] && [ -w /var/tmp ]; then export TMPDIR=/var/tmp; fi
. "$(dirname "$0")/lib.sh"

if [ -e /etc/mpictr/mpictr.conf ]; then
	need "site configuration tests" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	done_testing; exit
fi
case $T_TMP in /tmp/*)
	need "site configuration tests" "no writable /var/tmp: the test's denied directory would be under /tmp"
	done_testing; exit ;;
esac
mkdir -p "$T_TMP/work" "$T_TMP/home"
cd "$T_TMP/work" || exit 1
export HOME=$T_TMP/home
LIBDIR=/usr/lib/x86_64-linux-gnu
export MPICTR_TEST_SITE_CONF=$T_TMP/site.conf
mkdir -p "$T_TMP/site-data" "$T_TMP/deny/sub" "$T_TMP/allow"
echo site-data >"$T_TMP/site-data/marker"
echo secret >"$T_TMP/deny/sub/file"
echo mine >"$T_TMP/allow/file"
cat >"$T_TMP/site.conf" <<EOF
# test site
bind = $T_TMP/site-data:/site/data:ro
env = SITE_DEFAULT=1
deny_bind = $T_TMP/deny
lock_devices = yes

[profile mpich]
description = host MPICH (Debian)
mpi = $LIBDIR/libmpich.so.12
env_prepend = PATH=/opt/site/bin
env = SITE_PROFILE=mpich

[profile openmpi]
description = host Open MPI
mpi = $LIBDIR/libmpi.so.40

[profile openmpi-warn]
mpi = $LIBDIR/libmpi.so.40
mpi_abi = warn
EOF
# a directory image: enough for --dry-run (nothing is mounted)
DIR_IMG=$T_TMP/img
mkdir -p "$DIR_IMG/bin"
dry() { "$MPICTR" --dry-run "$@"; }
# st: ok_status, keeping the output in $L for the checks that follow
L=$T_TMP/last.out
st() { ok_status "$@"; cp "$T_OUT" "$L"; }

# ---- configuration errors -------------------------------------------------
printf 'bind = /tmp\n\nfoo = 1\n' >"$T_TMP/bad.conf"
st "bad site file: exit 255" 255 env MPICTR_TEST_SITE_CONF="$T_TMP/bad.conf" "$MPICTR" --dry-run "$DIR_IMG" true
check "bad site file: 'FILE:3: unknown key' message" grep -qx "mpictr: $T_TMP/bad.conf:3: unknown key 'foo'" "$L"
st "bad user file (--config): exit 255" 255 dry --config "$T_TMP/bad.conf" "$DIR_IMG" true
check "bad user file: line-numbered message" grep -q "bad.conf:3: unknown key 'foo'" "$L"
st "unknown profile: exit 255" 255 dry --profile nope "$DIR_IMG" true
check "unknown profile lists the known ones" grep -qx "mpictr: unknown profile 'nope' (known: mpich, openmpi, openmpi-warn)" "$L"
ok "--list-profiles" bash -c "'$MPICTR' --list-profiles | cut -f1,2 | grep -qx 'mpich	host MPICH (Debian)'"

# ---- policy ------------------------------------------------------------------
st "user bind below a deny rule: refused" 255 dry -B "$T_TMP/deny/sub:/x" "$DIR_IMG" true
check "the refusal quotes the rule and where it is" grep -qx "mpictr: bind '$T_TMP/deny/sub' refused: '$T_TMP/deny/sub' is denied by $T_TMP/site.conf:4: deny_bind = $T_TMP/deny" "$L"
ln -s "$T_TMP/deny/sub" "$T_TMP/allow/link"
st "a symlink into a denied tree: refused (resolved path)" 255 dry -B "$T_TMP/allow/link:/x" "$DIR_IMG" true
ok "a bind outside the deny rules is planned" bash -c "'$MPICTR' --dry-run -B '$T_TMP/allow:/mine' '$DIR_IMG' true | grep -q '\"target\": \"/mine\"'"
printf 'deny_bind = /nothing\n' >"$T_TMP/lift.conf"
st "a user file cannot set restrictions" 255 dry --config "$T_TMP/lift.conf" "$DIR_IMG" true
check "... and says so" grep -q "lift.conf:1: 'deny_bind' may only be set in the site configuration file" "$L"
printf 'devices = all\n' >"$T_TMP/dev.conf"
st "a user file cannot change locked devices" 255 dry --config "$T_TMP/dev.conf" "$DIR_IMG" true
st "--devices refused when the site locks them" 255 dry --devices all "$DIR_IMG" true
check "... naming the rule" grep -q "lock_devices = yes" "$L"
printf 'bind = %s:/y\n' "$T_TMP/deny/sub" >"$T_TMP/sneak.conf"
st "a user file's bind is checked like -B" 255 env MPICTR_CONF="$T_TMP/sneak.conf" "$MPICTR" --dry-run "$DIR_IMG" true
check "... naming the user file and line" grep -q "(from $T_TMP/sneak.conf:1) refused" "$L"
printf '[profile mpich]\n' >"$T_TMP/redef.conf"
st "a user file cannot redefine a site profile" 255 dry --config "$T_TMP/redef.conf" "$DIR_IMG" true
# ---- deny_bind on every bind -------------------------------------------------
RULE="denied by $T_TMP/site.conf:4: deny_bind = $T_TMP/deny"
st "-B /:/host (contains the denied path): refused" 255 dry -B /:/host "$DIR_IMG" true
check "... naming the site file, the rule and the path" grep -qx "mpictr: bind '/' refused: '/' contains '$T_TMP/deny', $RULE" "$L"
st "-B of the denied path's parent: refused" 255 dry -B "$T_TMP:/x" "$DIR_IMG" true
check "... as containing it" grep -qx "mpictr: bind '$T_TMP' refused: '$T_TMP' contains '$T_TMP/deny', $RULE" "$L"
st "working directory inside the denied path: refused" 255 bash -c "cd '$T_TMP/deny/sub' && '$MPICTR' --dry-run '$DIR_IMG' true"
check "... naming the rule, with a hint" grep -qx "mpictr: working directory '$T_TMP/deny/sub' refused: '$T_TMP/deny/sub' is $RULE (hint: run from another directory, or use --contain)" "$L"
st "... --contain binds no working directory: accepted" 0 bash -c "cd '$T_TMP/deny/sub' && '$MPICTR' --dry-run --contain '$DIR_IMG' true"
st "\$HOME containing the denied path: refused" 255 env HOME="$T_TMP" "$MPICTR" --dry-run "$DIR_IMG" true
check "... as containing it" grep -qx "mpictr: home directory '$T_TMP' refused: '$T_TMP' contains '$T_TMP/deny', $RULE (hint: --contain binds neither /tmp, \$HOME nor the working directory)" "$L"
st "\$HOME inside the denied path: refused" 255 env HOME="$T_TMP/deny/sub" "$MPICTR" --dry-run "$DIR_IMG" true
st "PMIX_SERVER_TMPDIR inside the denied path: refused" 255 env PMIX_SERVER_TMPDIR="$T_TMP/deny/sub" "$MPICTR" --dry-run "$DIR_IMG" true
check "... naming the variable" grep -q "PMIx server directory '$T_TMP/deny/sub' (PMIX_SERVER_TMPDIR) refused" "$L"
printf 'allow_bind = /nonexistent\n' >"$T_TMP/allow.conf"
st "allow_bind is not applied to \$HOME and the working directory (as documented)" 0 \
	env MPICTR_TEST_SITE_CONF="$T_TMP/allow.conf" "$MPICTR" --dry-run "$DIR_IMG" true

st "MPICTR_SYSROOT is ignored under bind restrictions" 0 env MPICTR_SYSROOT=/nonexistent "$MPICTR" --dry-run "$DIR_IMG" true
st "... but honoured without a site file (control)" 255 env MPICTR_TEST_SITE_CONF= MPICTR_SYSROOT=/nonexistent "$MPICTR" --dry-run "$DIR_IMG" true

# ---- what a profile and the site add ---------------------------------------
dry --profile mpich "$DIR_IMG" true >"$T_TMP/plan.json" 2>"$T_TMP/plan.err"
ok "dry-run with a profile succeeds" test -s "$T_TMP/plan.json"
check "site bind planned read-only" grep -q "\"source\": \"$T_TMP/site-data\", \"target\": \"/site/data\", \"options\": \"rbind,ro" "$T_TMP/plan.json"
check "site env and profile env" bash -c "grep -q '\"SITE_DEFAULT=1\"' '$T_TMP/plan.json' && grep -q '\"SITE_PROFILE=mpich\"' '$T_TMP/plan.json'"
check "env_prepend puts the profile's PATH first" grep -q '"PATH=/opt/site/bin:/usr/local/sbin:' "$T_TMP/plan.json"
check "host MPICH bound under both MPICH ABI names" bash -c "grep -q '\"target\": \"/.mpictr/mpi/lib/libmpich.so.12\"' '$T_TMP/plan.json' && grep -q '\"target\": \"/.mpictr/mpi/lib/libmpi.so.12\"' '$T_TMP/plan.json'"
check "LD_LIBRARY_PATH starts with the injection directory" grep -q '"LD_LIBRARY_PATH=/.mpictr/mpi/lib' "$T_TMP/plan.json"
check "plan lists profiles and the MPI to inject" bash -c "grep -q '\"profiles\": \[\"mpich\"\]' '$T_TMP/plan.json' && grep -q '\"soname\": \"libmpich.so.12\", \"family\": \"MPICH\", \"abi_check\": \"enforce\"' '$T_TMP/plan.json'"
printf '[profile bad]\nmpi = %s/libc.so.6\n' "$LIBDIR" >"$T_TMP/notmpi.conf"
st "a profile whose 'mpi' is not MPI is refused" 255 dry --config "$T_TMP/notmpi.conf" --profile bad "$DIR_IMG" true
check "... with the soname it found" grep -q "soname 'libc.so.6') is not an MPI library of a known ABI" "$L"

# ---- running: injection and the ABI check ------------------------------------
require_userns_fuse
T="timeout -k 5 120"

# ---- deny_bind, running: the secret never reaches the container --------------
require_images tiny TINY
TI=$TINY/tiny.sif
SECRET=$T_TMP/deny/sub/file
# no process of this test's jobs is left (within 2 s)
no_job_left() {
	local i left
	for i in $(seq 20); do
		left=$(marked_procs)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "$left"; return 1
}
# nosecret DESC STATUS CMD...: exit STATUS, the secret's content not shown
nosecret() {
	local d=$1 want=$2; shift 2
	st "$d: exit $want" "$want" "$@"
	check "$d: the secret is not shown" bash -c "! grep -q '^secret' '$L'"
}
nosecret "-B /:/host, cat /host\$SECRET" 255 $T "$MPICTR" -B /:/host "$TI" cat "/host$SECRET"
nosecret "cd into the denied path, cat it through the working directory" 255 \
	bash -c "cd '$T_TMP/deny/sub' && $T '$MPICTR' '$TI' cat '$SECRET'"
nosecret "\$HOME containing the denied path, cat it through \$HOME" 255 env HOME="$T_TMP" $T "$MPICTR" "$TI" cat "$SECRET"
check "... nothing of the job left running" no_job_left
# A deny rule naming a symlink: the path check cannot see that the source
# lies below it, the check of the opened source (rootfs.c step 2) does.
ln -s "$T_TMP/deny" "$T_TMP/denylink"
printf 'deny_bind = %s/denylink\n' "$T_TMP" >"$T_TMP/linkrule.conf"
nosecret "deny rule naming a symlink to the denied directory: -B of a file below" 255 \
	env MPICTR_TEST_SITE_CONF="$T_TMP/linkrule.conf" $T "$MPICTR" -B "$SECRET:/f" "$TI" cat /f
check "... refused on the opened source, naming the rule" grep -q "bind source '$SECRET' refused: it is or lies below '$T_TMP/denylink', denied by $T_TMP/linkrule.conf:1: deny_bind = $T_TMP/denylink" "$L"
check "... nothing of the job left running (the holder refused it)" no_job_left
# The race: x swaps (renameat2 RENAME_EXCHANGE, in a loop) between a real
# directory holding a harmless "file" and a symlink to the denied
# directory, while mpictr binds x/file (odd runs) or x (even runs) 40 times.
mkdir -p "$T_TMP/race/x"
echo harmless >"$T_TMP/race/x/file"
ln -s "$T_TMP/deny/sub" "$T_TMP/race/y"
cat >"$T_TMP/swap.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	for (;;)
		if (argc < 3 || renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2],
					  RENAME_EXCHANGE) < 0)
			return perror("renameat2"), 1;
}
EOF
ok "swapper compiled" cc -O2 -o "$T_TMP/swap" "$T_TMP/swap.c"
"$T_TMP/swap" "$T_TMP/race/x" "$T_TMP/race/y" &
swap_pid=$!
: >"$T_TMP/race.out"
for i in $(seq 40); do
	if [ $((i % 2)) = 1 ]; then
		$T "$MPICTR" -B "$T_TMP/race/x/file:/f" "$TI" cat /f
	else
		$T "$MPICTR" -B "$T_TMP/race/x:/d" "$TI" cat /d/file
	fi >>"$T_TMP/race.out" 2>&1
	echo "rc=$?" >>"$T_TMP/race.out"
done
kill "$swap_pid"; wait "$swap_pid" 2>/dev/null
echo "# race: $(grep -c '^harmless' "$T_TMP/race.out") harmless, $(grep -c "^mpictr: bind '.*refused" "$T_TMP/race.out") refused when planned, $(grep -c '^mpictr: bind source .* refused' "$T_TMP/race.out") refused on the opened source, $(grep -c '^secret' "$T_TMP/race.out") leaked, of 40"
check "40 runs against a swapping path component: the secret never appears" bash -c "! grep -q '^secret' '$T_TMP/race.out'"
check "... every run read the harmless file or failed with 255" bash -c "! grep '^rc=' '$T_TMP/race.out' | grep -qv '^rc=\\(0\\|255\\)\$' && [ \$(grep -c '^rc=0\$' '$T_TMP/race.out') = \$(grep -c '^harmless' '$T_TMP/race.out') ]"
require_images mpi
[ -e "$LIBDIR/libmpich.so.12" ] && [ -e "$LIBDIR/libmpi.so.40" ] || {
	need "host MPICH and Open MPI" "libmpich.so.12 or libmpi.so.40 missing on the host"; done_testing; exit; }
# The test image carries both MPIs; an MPICH-only copy, without Open MPI.
ok "MPICH-only image (test image minus Open MPI)" mksquashfs "$IMG/mpi" "$T_TMP/mpich.sqfs" -noappend -quiet \
	-no-progress -all-root -noI -noD -noF -noX -wildcards \
	-e 'usr/lib/x86_64-linux-gnu/libmpi.so*' 'usr/lib/x86_64-linux-gnu/libmpi_*' 'usr/lib/x86_64-linux-gnu/openmpi'
M=$T_TMP/mpich.sqfs
ok "MPICH image + host MPICH injected: hello-mpich -n 2 exits 0" bash -c \
	"$T '$MPICTR' -n 2 --profile mpich -e LD_DEBUG=libs '$M' /opt/mpictr/bin/hello-mpich >'$T_TMP/inj.out' 2>&1 || { tail -20 '$T_TMP/inj.out'; exit 1; }"
check "both ranks say hello" bash -c "[ \$(grep -c '^hello rank [01]/2 .* allreduce 1 ok' '$T_TMP/inj.out') = 2 ]"
check "the loader initialised the injected libmpich in both ranks" bash -c "[ \$(grep -c 'calling init: /.mpictr/mpi/lib/libmpich.so.12\$' '$T_TMP/inj.out') = 2 ]"
host_id=$(stat -L -c %d:%i "$LIBDIR/libmpich.so.12")
ok "the injected file is the host's (same device and inode)" bash -c "[ \"\$($T '$MPICTR' --profile mpich '$M' stat -L -c %d:%i /.mpictr/mpi/lib/libmpich.so.12)\" = '$host_id' ]"
ok "the image's own libmpich is still in place beside it" bash -c "$T '$MPICTR' --profile mpich '$M' test -e /usr/lib/x86_64-linux-gnu/libmpich.so.12"
st "Open MPI into the MPICH-only image: refused (255)" 255 $T "$MPICTR" --profile openmpi "$M" true
check "... with a clear error" grep -q "profile 'openmpi': MPI ABI check: the image has no Open MPI library for host libmpi.so.40 .* (image: MPICH libmpich.so.12" "$L"
st "Open MPI into the MPICH-only image with mpi_abi = warn: runs" 0 $T "$MPICTR" --profile openmpi-warn "$M" true
check "... and warns" grep -q "warning: profile 'openmpi-warn': MPI ABI check: .*(continuing: mpi_abi = warn)" "$L"
st "Open MPI into the image that has Open MPI too: accepted" 0 $T "$MPICTR" --profile openmpi "$IMG/mpi.sif" true
# The check is a plan step: decided before mounting where the image can be
# read (--dry-run reads the squashfs, never mounts it), by the holder in
# join mode (a joining task does not read the image).
ok "--dry-run of Open MPI into the MPICH-only image shows the refusal" bash -c "'$MPICTR' --dry-run --profile openmpi '$M' true | jq -e '.checks[] | select(.check == \"mpi_abi\" and .decided == \"plan\") | .refused | test(\"profile .openmpi.: MPI ABI check: the image has no Open MPI library for host libmpi.so.40 .* [(]image: MPICH libmpich.so.12\")'"
ok "--dry-run lists the check, decided by the plan" bash -c "'$MPICTR' --dry-run --profile openmpi-warn '$M' true | jq -e '.checks[] | select(.check == \"mpi_abi\" and .profile == \"openmpi-warn\" and .action == \"warn\" and .decided == \"plan\" and (.warnings[0] | test(\"no Open MPI library\")))'"
jtask() { SLURM_JOB_ID=$((600000 + $$ % 90000)) SLURM_STEP_ID=$1 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE=1 $T "$MPICTR" "${@:2}"; }
st "join mode: Open MPI into the MPICH-only image refused by the holder" 255 jtask 1 --profile openmpi "$M" true
check "... with the same error" grep -q "profile 'openmpi': MPI ABI check: the image has no Open MPI library for host libmpi.so.40 .* (image: MPICH libmpich.so.12" "$L"
st "join mode: host MPICH into it: runs" 0 jtask 2 --profile mpich "$M" test -e /.mpictr/mpi/lib/libmpich.so.12
done_testing
