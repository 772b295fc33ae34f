#!/bin/bash
# 31-diagnoses.sh - the common mistakes each get their own message and
# exit code (issue 28; docs/user.md "Exit status"): a bind over /proc, /sys
# or /dev itself (255, naming -B; binds below them work), a script whose
# #! interpreter is missing or ends in \r (126), a file that is not
# executable (126), a missing command (127), a directory image that is not
# a root filesystem (255); no internal helper's name in any of them. On
# the old code: -B x:/proc was accepted, -B x:/dev and the scripts and the
# non-root directory all ended as "command not found", and the shell's
# lines said "mpictr-env:".
. "$(dirname "$0")/lib.sh"

require_userns
require_images tiny
cd "$T_TMP" || exit 1
private_tmpdir
T="timeout -k 5 60"
mkdir -p data/sub notroot/opt
echo d >data/sub/f
printf '#!/nonexistent/sh\necho hi\n' >nointerp.sh
printf '#!/bin/sh\r\necho hi\r\n' >dos.sh
printf '#!/bin/sh\necho hi\n' >noexec.sh
chmod 0755 nointerp.sh dos.sh
chmod 0644 noexec.sh

forms="$IMG/tiny"
have_fuse && forms="$forms $IMG/tiny.sif"
# says NAME STATUS REGEX CMD...: CMD exits STATUS and says REGEX on stderr,
# with no internal helper's name
says() {
	local want=$1 re=$2 rc
	shift 2
	$T "$@" >"$T_TMP/o" 2>&1
	rc=$?
	cat "$T_TMP/o"
	[ "$rc" = "$want" ] || { echo "status $rc, expected $want"; return 1; }
	grep -qE -- "$re" "$T_TMP/o" && ! grep -q 'mpictr-env' "$T_TMP/o"
}
for I in $forms; do
	n=$(basename "$I")
	for d in /proc /sys /dev /dev/ //proc; do
		ok "$n: -B data:$d is refused (255), naming the bind option" \
			says 255 "bind destination '${d%/}' \(-B/--bind\) would replace the container's own|bind destination '/proc' \(-B/--bind\)" "$MPICTR" -B "$T_TMP/data:$d" "$I" true
	done
	ok "$n: -B below /dev, /sys and /proc/.. still works (a directory)" \
		bash -c "[ \"\$($T '$MPICTR' -B '$T_TMP/data:/dev/mydata' '$I' cat /dev/mydata/sub/f)\" = d ]"
	ok "$n: -B of a device node below /dev works (/dev/null as /dev/mynull)" \
		bash -c "$T '$MPICTR' -B /dev/null:/dev/mynull '$I' sh -c 'echo x >/dev/mynull && [ -c /dev/mynull ]'"
	ok "$n: a script whose #! interpreter is missing: 126, named" \
		says 126 "command './nointerp.sh' in the container: its #! interpreter '/nonexistent/sh': No such file or directory" "$MPICTR" "$I" ./nointerp.sh
	ok "$n: a script with a \\r in its #! line: 126, DOS line endings named" \
		says 126 "command './dos.sh' in the container: its #! line ends in a carriage return .*DOS line endings" "$MPICTR" "$I" ./dos.sh
	ok "$n: a file that is not executable: 126, Permission denied" \
		says 126 "command './noexec.sh' in the container: Permission denied" "$MPICTR" "$I" ./noexec.sh
	ok "$n: a command that is not there: 127, not found" \
		says 127 "command 'nosuchcmd-$$' not found in the container" "$MPICTR" "$I" nosuchcmd-$$
	ok "$n: ./missing: 127" says 127 "command './missing' in the container: No such file or directory" "$MPICTR" "$I" ./missing
done
ok "a directory image that is not a root filesystem: 255, said" \
	says 255 "image '$T_TMP/notroot' is a directory but not a root filesystem" "$MPICTR" "$T_TMP/notroot" true
ok "the shell's own messages do not say mpictr-env" \
	bash -c "! $T '$MPICTR' '$IMG/tiny' sh -c 'exec ./noexec.sh' 2>&1 | grep -q mpictr-env"

done_testing
