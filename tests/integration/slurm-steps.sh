# slurm-steps.sh - helpers of the tests that run srun steps (85-slurm-join,
# 90-spank; sourced after lib.sh). The test sets W (its work directory),
# NAME (a job-name prefix), T (the timeout command) and defines
# leftovers JOBID (what a finished job left behind, empty when nothing).
#
#   step SUFFIX SRUN-ARGS...   srun as job $NAME-SUFFIX; output in
#                              $W/out.SUFFIX, the job id in $W/job.SUFFIX
#   jobid SUFFIX               that job's id (also finished)
#   clean JOBID                bounded wait (30 s) until leftovers is empty
#   count SUFFIX REGEX         lines of the step's output matching REGEX
#   one_ns SUFFIX              the step's "NS <userns> <mntns>" lines (as
#                              NSCMD prints them) are all equal and not the
#                              test's own namespaces
#   require_slurm              end the test here (a skip, a failure under
#                              CI=true) unless the single-node cluster is up
NSCMD='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'
HOSTNS=$(readlink /proc/self/ns/user)

require_slurm() {
	slurm_up && return 0
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
	done_testing
	exit
}
step() {
	local s=$1
	shift
	$T srun --job-name="$NAME-$s" "$@" >"$W/out.$s" 2>&1
	local rc=$?
	cat "$W/out.$s"
	squeue -h -t all -n "$NAME-$s" -o 'JOB %i' >"$W/job.$s" 2>/dev/null
	return $rc
}
jobid() { sed -n 's/^JOB //p' "$W/job.$1" | tail -n 1; }
clean() {
	settle 300 leftovers "$1"
}
count() { grep -cE "$2" "$W/out.$1"; }
one_ns() {
	[ "$(grep '^NS ' "$W/out.$1" | sort -u | wc -l)" = 1 ] || { grep '^NS ' "$W/out.$1"; return 1; }
	! grep -qF "NS $HOSTNS " "$W/out.$1"
}
