#!/bin/bash
# 73-cleanup-race.sh - a hostile program in the container against mpictr's
# cleanup (issue 23 item 2). The program (escape-probe --swap-race)
# detaches inside the job's user namespace (double fork, setsid: launch
# mode does not know it) and keeps exchanging a directory of the job's
# PMIx directory with a symlink to a host directory the container does not
# see, while mpictr removes the job's tree: a cleanup by path (nftw +
# unlink of the full path) deleted the files of that directory. Three
# canaries, one per run in turn: a directory in $HOME under --contain
# (not bound), one in /var/tmp (not bound), one on the host's /dev/shm
# (the job has its own). Over many runs: no canary file touched, the
# daemon did not outlive the job, no job directory left.
. "$(dirname "$0")/lib.sh"

require_userns_fuse
PROBE=$ROOT/build/tests/escape-probe
[ -x "$PROBE" ] || { need "escape probe" "build/tests/escape-probe not built (make check builds it)"; done_testing; exit; }
require_images tiny
I=$IMG/tiny.sif
cd "$T_TMP" || exit 1
private_tmpdir
mkdir -p "$T_TMP/probe" && cp "$PROBE" "$T_TMP/probe/"
UID_=$(id -u)
RUNS=${MPICTR_RACE_RUNS:-30}

C_HOME=$(mktemp -d "$HOME/.mpictr-race-canary.XXXXXX") || exit 1
C_VAR=$(mktemp -d /var/tmp/mpictr-race-canary.XXXXXX) || exit 1
C_SHM=$(mktemp -d /dev/shm/mpictr-race-canary.XXXXXX) || exit 1
trap 't_cleanup; rm -rf "$C_HOME" "$C_VAR" "$C_SHM"' EXIT
CANARIES=("$C_HOME" "$C_VAR" "$C_SHM")
for c in "${CANARIES[@]}"; do
	for n in $(seq -w 1 20); do echo "canary $n" >"$c/f$n"; done
	mkdir "$c/sub" && echo deep >"$c/sub/keep"
done
snap() { for c in "${CANARIES[@]}"; do (cd "$c" && find . -printf '%p %y %s\n' | sort); done | md5sum; }
SNAP0=$(snap)

leftovers() { ls -d "$TMPDIR"/mpictr-"$UID_".* 2>/dev/null; marked_procs | grep -v -e marked_procs -e leftovers; }
check "the canaries are invisible in the container (--contain)" \
	"$MPICTR" --contain -B "$T_TMP/probe:/opt/escape" "$I" sh -c "! ls '$C_HOME' && ! ls '$C_VAR' && ! ls '$C_SHM'"

race_runs() {
	local i t bad=0 rc
	for i in $(seq "$RUNS"); do
		t=${CANARIES[$((i % 3))]}
		timeout 60 "$MPICTR" --contain -n 1 -B "$T_TMP/probe:/opt/escape" "$I" \
			sh -c '/opt/escape/escape-probe --swap-race "$PMIX_SERVER_TMPDIR" "$1" 10' sh "$t" >"$T_TMP/run.out" 2>&1
		rc=$?
		grep -q '^DETACHED' "$T_TMP/run.out" || { echo "run $i: the daemon did not start (exit $rc)"; cat "$T_TMP/run.out"; return 1; }
		settle 50 leftovers >"$T_TMP/left" 2>&1 || { echo "run $i ($t): left behind:"; cat "$T_TMP/left"; bad=1; }
		[ "$(snap)" = "$SNAP0" ] || { echo "run $i: canary $t changed: $(cd "$t" && ls | tr '\n' ' ')"; return 1; }
		[ $bad = 0 ] || return 1
	done
	echo "$RUNS runs, canaries unchanged, nothing left"
}
ok "$RUNS runs of mpictr --contain -n 1 with a daemon swapping the PMIx directory for symlinks to host directories: no host file touched, nothing left" race_runs
check "... the canaries in \$HOME, /var/tmp and /dev/shm are unchanged" test "$(snap)" = "$SNAP0"
check "... no process or job directory left" settle 50 leftovers

done_testing
