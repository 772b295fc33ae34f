#!/bin/bash
# 36-embed.sh - libmpictr as an embedder sees it (build/tests/embed_run, a
# program linked against the library that calls mpictr_run()): control
# comes back with the status in join mode (no exec in place unless asked
# for), and the caller's environ is left as it was, PMIx server included.
. "$(dirname "$0")/lib.sh"

EMBED=$ROOT/build/tests/embed_run
if ! have_userns; then
	need "user namespaces" "unprivileged user namespaces are not available"
	done_testing; exit
fi
[ -x "$EMBED" ] || { need "embed_run is built" "build/tests/embed_run missing (make check builds it)"; done_testing; exit; }
IMG=$(test_images tiny) || { need "tiny image" "tests/images/build.sh failed"; done_testing; exit; }
I=$IMG/tiny.sif; have_fuse || I=$IMG/tiny
cd "$T_TMP" || exit 1
JOB=$((800000 + $$ % 90000))
nsline='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'

# task STEP PROCID LOCALID TPN CMD... : embed_run with the step variables
# srun would set (as in 35-join.sh).
task() {
	local step=$1 proc=$2 loc=$3 tpn=$4; shift 4
	SLURM_JOB_ID=$JOB SLURM_STEP_ID=$step SLURM_NODEID=0 SLURM_PROCID=$proc \
		SLURM_LOCALID=$loc SLURM_STEP_TASKS_PER_NODE=$tpn "$EMBED" "$I" "$@"
}

join_back() {
	task 0 0 0 2 sh -c "$nsline; exit 7" >"$T_TMP/e0" 2>&1 &
	task 0 1 1 2 sh -c "$nsline; exit 0" >"$T_TMP/e1" 2>&1 &
	wait
	cat "$T_TMP/e0" "$T_TMP/e1"
	grep -qx 'returned status=7' "$T_TMP/e0" && grep -qx 'returned status=0' "$T_TMP/e1" &&
		[ "$(grep -h ^NS "$T_TMP"/e? | sort -u | wc -l)" = 1 ] &&
		[ "$(grep -h ^NS "$T_TMP/e0")" != "NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)" ] &&
		grep -qx 'environ unchanged' "$T_TMP/e0" && grep -qx 'environ unchanged' "$T_TMP/e1"
}
ok "join mode: mpictr_run() returns with the status, tasks share the node's namespaces" join_back

join_pid() {
	# The command runs in a child: its pid is not the embedder's.
	task 1 0 0 1 sh -c 'echo PID $$; echo PPID $PPID' >"$T_TMP/p" 2>&1 &
	local p=$!
	wait
	cat "$T_TMP/p"
	grep -qx 'returned status=0' "$T_TMP/p" && ! grep -qx "PID $p" "$T_TMP/p"
}
ok "join mode without MPICTR_RUN_EXEC_IN_PLACE: the command is a child, not the caller" join_pid

notfound() {
	task 2 0 0 1 no-such-command-here >"$T_TMP/nf" 2>&1
	local rc=$?
	cat "$T_TMP/nf"
	# The tiny image has env scripts: its shell reports 127 as the status.
	grep -qx 'returned status=127' "$T_TMP/nf" || [ "$rc" = 127 ]
}
ok "join mode: a command not found gives 127" notfound

leftover() {
	local i
	for i in $(seq 100); do
		[ -z "$(ls "/tmp/mpictr-join-$(id -u)" 2>/dev/null | grep "^$JOB\.")" ] && [ -z "$(marked_procs)" ] && return 0
		sleep 0.1
	done
	ls -la "/tmp/mpictr-join-$(id -u)"; marked_procs; return 1
}
ok "join mode: the keeper is gone afterwards" leftover

launch_env() {
	PMIX_MCA_mpictr_embed_test=1 MPICTR_PMIX_MCA_ptl_base_if_include=lo \
		"$EMBED" -n 2 "$I" true >"$T_TMP/l" 2>&1
	cat "$T_TMP/l"
	grep -qx 'returned status=0' "$T_TMP/l" && grep -qx 'environ unchanged' "$T_TMP/l"
}
ok "launch mode (-n 2, PMIx server): the caller's environ is unchanged" launch_env

single() {
	"$EMBED" "$I" sh -c 'exit 3' >"$T_TMP/s" 2>&1
	cat "$T_TMP/s"
	grep -qx 'returned status=3' "$T_TMP/s" && grep -qx 'environ unchanged' "$T_TMP/s"
}
ok "single process: mpictr_run() returns the status, environ unchanged" single

done_testing
