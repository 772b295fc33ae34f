#!/bin/bash
# 50-instance-anchor.sh - another user cannot decide when an instance ends
# (issue 23 item 3; run as root, which only switches users). V starts an
# instance in a batch job; before that, A runs a process titled as the
# job's extern slurmstepd ("slurmstepd: [JOB.extern]"; the cluster has no
# extern step, so the keeper would prefer it to the real batch step). The
# keeper must follow Slurm's own slurmstepd (root's) all the same:
#   1. A's forgery exits mid-job: V's instance still runs (it ended with
#      the forgery before);
#   2. A's forgery stays after V's job ended: V's instance ends with the
#      job (it lived on with the forgery before).
. "$(dirname "$0")/../integration/lib.sh"
. "$ROOT/tests/slurm/env.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test2} A=${MPICTR_TEST_ATTACKER:-mpictr-test}
require_two_users "$A" "$V" "$V"
slurm_up || { need "the Slurm cluster" "sinfo does not answer (tests/slurm/cluster.sh start)"; done_testing; exit; }
require_images tiny
VUID=$(id -u "$V")
W=$T_TMP
chmod 0755 "$W"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
mkdir "$W/v" && chown "$V" "$W/v"
N=ia$$
FORGED=()
trap 'for p in "${FORGED[@]}"; do kill "$p" 2>/dev/null; done; runuser -u "$V" -- "$MPICTR" instance stop --all >/dev/null 2>&1; t_cleanup' EXIT
cd "$W" || exit 1
as() { local u=$1; shift; runuser -u "$u" -- env HOME="$(getent passwd "$u" | cut -d: -f6)" SLURM_CONF="$SLURM_CONF" "$@"; }
cat >"$W/v/job.sh" <<EOF
#!/bin/bash
# waits for the forgery, starts the instance, waits to be told to end
while [ ! -e "$W/v/go.\$SLURM_JOB_ID" ]; do sleep 0.1; done
"$MPICTR" instance start "$W/tiny.sif" "\$1" && touch "$W/v/started.\$SLURM_JOB_ID"
while [ ! -e "$W/v/stop.\$SLURM_JOB_ID" ]; do sleep 0.1; done
EOF
chmod 0755 "$W/v/job.sh"
running() { as "$V" "$MPICTR" instance list 2>/dev/null | grep -qw "$1"; }
waitfor() { local i; for i in $(seq "$1"); do eval "$2" && return 0; sleep 0.2; done; return 1; }

# forge JOB: A's process with the job's extern title; its pid
forge() {
	runuser -u "$A" -- bash -c "exec -a 'slurmstepd: [$1.extern]' sleep 600" </dev/null >/dev/null 2>&1 &
	FORGED+=($!)
	waitfor 50 "grep -qa 'slurmstepd: \[$1.extern\]' /proc/$!/cmdline"
}

# 1. The forgery exits mid-job.
J1=$(as "$V" sbatch --parsable -o "$W/v/out.1" "$W/v/job.sh" ${N}a)
check "job 1 submitted" test -n "$J1"
waitfor 150 "[ \"\$(as $V squeue -h -j $J1 -o %T)\" = RUNNING ]"
forge "$J1"
P1=${FORGED[-1]}
touch "$W/v/go.$J1"
ok "V's instance started in job $J1 (A forged its extern slurmstepd)" waitfor 150 "[ -e $W/v/started.$J1 ]"
kill "$P1"
sleep 3
ok "... A's forgery exited: V's instance still runs (job $J1 still running)" running ${N}a
touch "$W/v/stop.$J1"
ok "... and ends with the job" waitfor 150 "! running ${N}a"

# 2. The forgery stays after the job.
J2=$(as "$V" sbatch --parsable -o "$W/v/out.2" "$W/v/job.sh" ${N}b)
check "job 2 submitted" test -n "$J2"
waitfor 150 "[ \"\$(as $V squeue -h -j $J2 -o %T)\" = RUNNING ]"
forge "$J2"
touch "$W/v/go.$J2"
ok "V's instance started in job $J2 (A forged its extern slurmstepd)" waitfor 150 "[ -e $W/v/started.$J2 ]"
touch "$W/v/stop.$J2"
waitfor 150 "[ -z \"\$(as $V squeue -h -j $J2 -o %T)\" ]"
ok "... job $J2 ended, A's forgery still runs: V's instance ended with the job" waitfor 100 "! running ${N}b"
check "... nothing of V's instances left" settle 50 bash -c "pgrep -u $VUID -f '$W/' ; ls -A /tmp/mpictr-join-$VUID 2>/dev/null | grep -F 'inst-$N'"

done_testing
