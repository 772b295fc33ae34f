#!/bin/bash
# 38-dryrun.sh - the dry-run is the run: in every mode, the environment and
# the mounts that a rank really gets are what --dry-run of the same command
# shows (tests/tools/dryrun-diff.py compares them and says what may differ:
# what PMI adds per rank, the image's env scripts, the shell's own).
# The host is a fake IB node with two NUMA nodes (MPICTR_SYSROOT,
# tests/fixtures/mkfakesys.sh), so the transport variables depend on the
# local rank and the local size. Modes: the single process, -n (shared and
# --no-share), join (by hand, under srun and under mpirun: hybrid), node
# daemon (srun --mpi=pmix mpictr -n), the SPANK plugin (srun
# --container-image, --container-dry-run), an instance.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"

T="timeout -k 5 120"
require_userns
require_images mpi
# Slurm's nodes have a private /tmp: everything lives in /var/tmp.
W=$(mktemp -d /var/tmp/mpictr-dryrun.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
I=$IMG/mpi.sif
have_fuse || I=$IMG/mpi
bash "$ROOT/tests/fixtures/mkfakesys.sh" "$W/ib" mlx5 >/dev/null 2>&1 ||
	{ need "a fake IB host tree" "tests/fixtures/mkfakesys.sh failed"; done_testing; exit; }
export MPICTR_SYSROOT=$W/ib TMPDIR=$W/tmp
# In the container: write this rank's environment and mounts as env.K and
# mnt.K, K naming the rank ($K is expanded there).
probe() { echo "cat /proc/self/environ >'$W'/env.$1; cat /proc/self/mountinfo >'$W'/mnt.$1"; }
# same DRY K...: each rank K's view equals the dry-run's
same() {
	local dry=$1 k
	shift
	for k in "$@"; do
		[ -s "$W/env.$k" ] || { echo "rank $k wrote nothing"; return 1; }
		python3 "$ROOT/tests/tools/dryrun-diff.py" "$dry" "$W/env.$k" "$W/mnt.$k" | sed "s/^/rank $k: /"
		[ "${PIPESTATUS[0]}" = 0 ] || return 1
	done
}

single() {
	$T "$MPICTR" --dry-run "$I" true >dry.s &&
		$T "$MPICTR" "$I" sh -c "$(probe s)" && same dry.s s
}
ok "single process: the dry-run is the run" single
# docs/architecture.md ("Interface contract") names every key and their count
check "the dry-run's keys are those docs/architecture.md names, as many as it says" python3 -c '
import json, re, sys
keys = set(json.load(open(sys.argv[1])))
doc = open(sys.argv[2]).read()
doc = doc[doc.index("## Interface contract"):]
para = doc[doc.index("`--dry-run` prints"):doc.index("\n\n", doc.index("`--dry-run` prints"))]
n = int(re.search(r"JSON object with (\d+) keys", para).group(1))
missing = sorted(k for k in keys if "`%s`" % k not in para)
if missing or n != len(keys):
    sys.exit("keys the doc does not name: %s; the doc says %d keys, there are %d" % (missing, n, len(keys)))
' "$W/dry.s" "$ROOT/docs/architecture.md"
# A writable container: its root is the overlay the dry-run shows.
singlew() {
	$T "$MPICTR" --writable-tmpfs --dry-run "$I" true >dry.w &&
		$T "$MPICTR" --writable-tmpfs "$I" sh -c "$(probe w)" && same dry.w w &&
		awk '$5 == "/" { l = $9 } END { exit l != "overlay" }' "$W/mnt.w"
}
ok "single process --writable-tmpfs: the dry-run is the run (/ the overlay)" singlew

# The dry-run of -n shows rank 0's environment.
launch() {
	$T "$MPICTR" -n 2 "$@" --dry-run "$I" true >dry.l &&
		$T "$MPICTR" -n 2 "$@" "$I" sh -c "$(probe 'l$PMIX_RANK')" && same dry.l l0
}
ok "-n 2: the dry-run is rank 0's run" launch
# Launch mode knows every rank is on this node (UCX_TLS=^cma,tcp).
ok "-n 2 --no-share: the dry-run is rank 0's run" launch --no-share

# The job's PMI shape is the plan's, so --dry-run shows it: ranks, our
# PMI or not, holders, the universe (the cores, or N when larger, as the
# run gives in 50-launch.sh and 88-spawn.sh) and whether it is a limit.
shape() {
	"$MPICTR" "$@" --dry-run "$I" true | python3 -c 'import json, sys
p = json.load(sys.stdin)
print(p["ranks"], p["serves_pmi"], p["holders"], p["universe"], p["universe_hard"])'
}
CORES=$(t_cores)
U4=$((4 > CORES ? 4 : CORES))
ok "-n 4: --dry-run shows 4 ranks, our PMI, 1 holder, universe $U4" \
	test "$(shape -n 4)" = "4 True 1 $U4 False"
ok "-n 3 --no-share --universe-size 9 --no-oversubscribe: 3 holders, universe 9, a limit" \
	test "$(shape -n 3 --no-share --universe-size 9 --no-oversubscribe)" = "3 True 3 9 True"
ok "a plain exec: --dry-run shows 1 rank, no PMI of ours, no universe" \
	test "$(shape)" = "1 False 1 None False"

# Under a launcher, each task runs the dry-run, then execs the run, so
# that both see the same launcher variables. `dryrun D K ARGS...`: the
# task's command line for the task's shell, writing dry.D, the ranks
# writing env.K and mnt.K (both expanded by the task's shell; write \$ for
# what the rank's shell must expand).
dryrun() {
	local d=$1 k=$2
	shift 2
	echo "'$MPICTR' $* --dry-run '$I' true >'$W'/dry.$d && exec '$MPICTR' $* '$I' sh -c \"$(probe "$k")\""
}

# Join mode by hand: two tasks of a step, as srun would start them; each
# task's dry-run shows its own local rank of the local size.
jtask() {
	SLURM_JOB_ID=$((800000 + $$ % 90000)) SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$1 \
		SLURM_LOCALID=$1 SLURM_STEP_TASKS_PER_NODE=2 $T sh -c "$(dryrun 'j$SLURM_LOCALID' 'j$SLURM_LOCALID')"
}
join() {
	jtask 0 &
	jtask 1 &
	wait
	same dry.j0 j0 && same dry.j1 j1
}
ok "join mode (2 tasks of a step): each task's dry-run is its run" join

if command -v mpirun >/dev/null && have_fuse; then
	hybrid() {
		$T mpirun -np 2 sh -c "$(dryrun 'h$OMPI_COMM_WORLD_LOCAL_RANK' 'h$OMPI_COMM_WORLD_LOCAL_RANK')" && same dry.h0 h0 && same dry.h1 h1
	}
	ok "hybrid (mpirun -np 2 mpictr): each rank's dry-run is its run" hybrid
else
	need "hybrid: mpirun -np 2 mpictr" "the host's Open MPI and /dev/fuse"
fi

if slurm_up && have_fuse; then
	sjoin() {
		$T srun -N 1 -n 2 sh -c "$(dryrun 'r$SLURM_LOCALID' 'r$SLURM_LOCALID')" && same dry.r0 r0 && same dry.r1 r1
	}
	ok "srun -n 2 mpictr (join mode): each task's dry-run is its run" sjoin
	# the task's dry-run is its plan, the first rank's (d0)
	daemon() {
		$T srun -N 1 -n 1 --mpi=pmix sh -c "$(dryrun d 'd\$PMIX_RANK' -n 2)" && same dry.d d0
	}
	ok "node daemon mode (srun --mpi=pmix mpictr -n 2): the dry-run is rank 0's run" daemon
else
	need "srun: join and node daemon mode" "the single-node Slurm of tests/slurm/cluster.sh and /dev/fuse"
fi

# The SPANK plugin: `srun --container-dry-run --container-image=IMG CMD`
# prints each task's plan; the same srun without it runs CMD. They are two
# steps of one allocation: the variables that two plain steps' tasks see
# differently (step id, ports) may differ, nothing else
# (dryrun-diff.py --vary-from).
spank_dirs() { sed -nE "s|^[a-z]+ +$SPANK_DIR/mpictr-spank.so .*image_dirs=([^ ]+).*|\1|p" "${SLURM_CONF%/*}/plugstack.conf" 2>/dev/null; }
if slurm_up && have_fuse && spank_ready && [ -n "$(spank_dirs)" ] && [ -f "$ROOT/build/plugins/mpictr-spank.so" ] &&
	spank_installed "$ROOT/build/plugins"; then
	spank() {
		local si=$W/spank.sif k
		if spank_in_dirs "$(spank_dirs)" "$I"; then si=$I; else cp "$I" "$si" || return 1; fi
		cat >"$W/spank.sh" <<-EOF
			set -e
			srun -N 1 -n 2 -o '$W/plain1.%t' sh -c 'cat /proc/self/environ'
			srun -N 1 -n 2 -o '$W/plain2.%t' sh -c 'cat /proc/self/environ'
			srun -N 1 -n 2 -o '$W/dry.p%t' --container-dry-run --container-image='$si' sh -c "$(probe 'p\$SLURM_LOCALID')"
			srun -N 1 -n 2 --container-image='$si' sh -c "$(probe 'p\$SLURM_LOCALID')"
		EOF
		$T salloc -N 1 -n 2 bash "$W/spank.sh" || return 1
		for k in 0 1; do
			[ -s "$W/env.p$k" ] || { echo "task $k wrote nothing"; return 1; }
			python3 "$ROOT/tests/tools/dryrun-diff.py" --vary-from "$W/plain1.$k" "$W/plain2.$k" \
				"$W/dry.p$k" "$W/env.p$k" "$W/mnt.p$k" | sed "s/^/task $k: /"
			[ "${PIPESTATUS[0]}" = 0 ] || return 1
		done
	}
	ok "SPANK (srun -n 2 --container-image): each task's --container-dry-run is its run" spank
else
	need "SPANK: srun --container-dry-run --container-image" \
		"the single-node Slurm with this tree's mpictr-spank.so installed (SPANK=1 .../testas.sh; tests/integration/90-spank.sh says how) and /dev/fuse"
fi

instance() {
	local n=dr$$ rc
	$T "$MPICTR" instance start "$I" $n || return 1
	$T "$MPICTR" -n 2 --dry-run instance://$n true >dry.i &&
		$T "$MPICTR" -n 2 instance://$n sh -c "$(probe 'i$PMIX_RANK')" && same dry.i i0
	rc=$?
	$T "$MPICTR" instance stop $n
	return $rc
}
ok "-n 2 instance://NAME: the dry-run is rank 0's run" instance

done_testing
