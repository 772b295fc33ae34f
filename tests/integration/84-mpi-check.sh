#!/bin/bash
# 84-mpi-check.sh - a launcher that offers no PMI the command's MPI can use
# is named before MPI_Init can hang (issue 28), and an MPI command started
# with no launcher at all runs as a singleton under mpictr's own PMI
# servers. Real launchers and MPIs: Slurm's srun (MpiDefault=none,
# --mpi=pmi2), Open MPI 4.1's mpirun, MPICH 4.0's mpiexec.hydra; the
# Open MPI (hello) and MPICH (hello-mpich) programs of mpi.sif.
# Every mismatch case failed on the old code (hang, wrong answer or
# another tool's message).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 60"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID

require_userns_fuse
require_images all

W=$(mktemp -d /var/tmp/mpictr-mpicheck.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
NAME=mpc$$
B=/opt/mpictr/bin

leftovers() {
	local p
	for p in $(pgrep -u "$MYUID" -f "$W/" | grep -vx "$$"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = srun ] && continue
		echo "process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done
	[ -z "${1:-}" ] || ls -A "$JDIR" 2>/dev/null | grep "^$1\." | sed 's/^/rendezvous entry /'
	ls -A "$W/tmp" | grep -v '^ompi\.' | sed 's/^/tmp entry /'
}
# fails_fast NAME STATUS SECONDS CMD...: CMD exits STATUS (any non-zero
# when STATUS is "nz") within SECONDS; output in $W/out.NAME
fails_fast() {
	local n=$1 want=$2 max=$3 t0 t1 rc
	shift 3
	t0=$(date +%s%N)
	${T} "$@" >"$W/out.$n" 2>&1
	rc=$?
	t1=$(date +%s%N)
	cat "$W/out.$n"
	echo "status $rc in $(((t1 - t0) / 1000000)) ms"
	if [ "$want" = nz ]; then [ "$rc" != 0 ] || return 1; else [ "$rc" = "$want" ] || return 1; fi
	[ $(((t1 - t0) / 1000000)) -lt $((max * 1000)) ]
}
# srun_fast NAME STATUS SRUN-ARGS... -- CMD...: as fails_fast, but the time
# is each task's own (a shared cluster may queue the job first)
srun_fast() {
	local n=$1 want=$2 rc max
	shift 2
	${T} srun "$@" >"$W/out.$n" 2>&1
	rc=$?
	cat "$W/out.$n"
	max=$(sed -n 's/^task ms //p' "$W/out.$n" | sort -n | tail -n 1)
	echo "status $rc, slowest task ${max:-?} ms"
	[ "$rc" = "$want" ] && [ -n "$max" ] && [ "$max" -lt 5000 ]
}
cat >"$W/timed" <<'EOS'
#!/bin/bash
t0=$(date +%s%N)
"$@"
rc=$?
echo "task ms $((($(date +%s%N) - t0) / 1000000))"
exit $rc
EOS
chmod +x "$W/timed"
says() { grep -qE -- "$2" "$W/out.$1" || { cat "$W/out.$1"; return 1; }; }

# ---- singletons: no launcher at all ---------------------------------------
ok "mpictr mpi.sif hello (Open MPI, no launcher): one rank" \
	run os $T "$MPICTR" -v "$W/mpi.sif" $B/hello
check "... 'hello rank 0/1', allreduce ok" says os '^hello rank 0/1 .*allreduce 0 ok'
check "... -v says it runs as a one-rank job" says os 'links Open MPI \(libmpi\.so\.40\) and no launcher started it: running it as a one-rank job'
check "... no [orted] or ssh error" bash -c "! grep -qE 'plm_rsh_agent|orted' '$W/out.os'"
check "... nothing left behind" settle 100 leftovers
ok "mpictr mpi.sif hello-mpich (MPICH, no launcher): one rank" \
	run ms $T "$MPICTR" "$W/mpi.sif" $B/hello-mpich
check "... 'hello rank 0/1', allreduce ok" says ms '^hello rank 0/1 .*allreduce 0 ok'
check "... nothing left behind" settle 100 leftovers
ok "a command that links no MPI runs alone (no PMIx or PMI_FD variables)" \
	bash -c "! $T '$MPICTR' '$W/mpi.sif' env | grep -qE '^(PMIX_RANK|PMI_FD)='"

# ---- singletons behind shells and scripts (issue 33) ------------------------
# MPICH's own singleton start forks `mpiexec -pmi_args`, which in mpi.sif
# is Open MPI's: it said 'unknown option "-pmi_args"' and hung. Each of
# these hung (timeout) on the old code.
cat >"$W/run.sh" <<EOS
#!/bin/sh
# two MPICH programs one after the other, then an Open MPI one
$B/hello-mpich && $B/hello-mpich && $B/hello
EOS
chmod +x "$W/run.sh"
Q="timeout -k 1 5"
ok "exec mpi.sif sh -c hello-mpich: the answer in under 5 s" \
	run shm $Q "$MPICTR" exec "$W/mpi.sif" sh -c $B/hello-mpich
check "... 'hello rank 0/1', allreduce ok" says shm '^hello rank 0/1 .*allreduce 0 ok'
ok "exec mpi.sif ./run.sh (MPICH twice, then Open MPI): in under 5 s" \
	run scr $Q "$MPICTR" exec "$W/mpi.sif" ./run.sh
check "... three one-rank answers" test "$(grep -c '^hello rank 0/1 .*allreduce 0 ok' "$W/out.scr")" = 3
ok "exec mpi.sif sh -c 'sh -c hello' (Open MPI behind two shells): in under 5 s" \
	run sho $Q "$MPICTR" exec "$W/mpi.sif" sh -c "sh -c $B/hello"
check "... 'hello rank 0/1', allreduce ok" says sho '^hello rank 0/1 .*allreduce 0 ok'
ok "run mpi.sif (a runscript around Open MPI): in under 5 s" \
	run rs $Q "$MPICTR" run "$W/mpi.sif"
check "... 'hello rank 0/1', allreduce ok" says rs '^hello rank 0/1 .*allreduce 0 ok'
ok "shell mpi.sif, hello-mpich typed in: in under 5 s" \
	run sh_in $Q "$MPICTR" shell "$W/mpi.sif" <<<"$B/hello-mpich; exit"
check "... 'hello rank 0/1', allreduce ok" says sh_in 'hello rank 0/1 .*allreduce 0 ok'
ok "exec mpi.sif env hello-mpich (an ELF wrapper): in under 5 s" \
	run envw $Q "$MPICTR" exec "$W/mpi.sif" env $B/hello-mpich
ok "a script that calls no MPI is not held up: sh -c 'echo x' in under 2 s" \
	run nompi timeout -k 1 2 "$MPICTR" exec "$W/mpi.sif" sh -c 'echo x'
check "... nothing left behind" settle 100 leftovers

# ---- Open MPI's mpirun around an MPICH program ----------------------------
if command -v mpirun >/dev/null; then
	ok "mpirun -np 2 mpictr mpi.sif hello-mpich: fails in under 5 s" \
		fails_fast orte nz 5 mpirun -np 2 "$MPICTR" "$W/mpi.sif" $B/hello-mpich
	check "... names the launcher, the MPI and mpiexec.hydra" \
		says orte "links MPICH \(libmpich\.so\.12\).*Open MPI \(ORTE\), offers PMIx.*mpiexec\.hydra"
	check "... no internal helper's name" bash -c "! grep -q 'mpictr-env' '$W/out.orte'"
	check "... nothing left behind" settle 100 leftovers
	ok "mpirun -np 2 mpictr mpi.sif hello (Open MPI): still runs" \
		run orte_ok mpirun -np 2 "$MPICTR" "$W/mpi.sif" $B/hello
else
	need "mpirun" "the host's Open MPI (tests/deps/debian-packages.txt)"
fi

# ---- MPICH's Hydra around an Open MPI program -----------------------------
if command -v mpiexec.hydra >/dev/null; then
	ok "mpiexec.hydra -n 2 mpictr mpi.sif hello: fails in under 5 s" \
		fails_fast hydra nz 5 mpiexec.hydra -n 2 "$MPICTR" "$W/mpi.sif" $B/hello
	check "... names the launcher, the MPI and Open MPI's mpirun" \
		says hydra "links Open MPI \(libmpi\.so\.40\).*MPICH Hydra, offers PMI-1.*Open MPI's mpirun"
	check "... nothing left behind" settle 100 leftovers
	ok "mpiexec.hydra -n 2 mpictr mpi.sif hello-mpich: still runs" \
		run hydra_ok mpiexec.hydra -n 2 "$MPICTR" "$W/mpi.sif" $B/hello-mpich
else
	need "mpiexec.hydra" "the host's MPICH (tests/deps/debian-packages.txt)"
fi

# ---- srun -----------------------------------------------------------------
if slurm_up; then
	ok "srun -n 2 mpictr mpi.sif hello (no --mpi): exit 255 in under 5 s" \
		srun_fast s_ompi 255 --job-name="$NAME-so" -O -n 2 "$W/timed" "$MPICTR" "$W/mpi.sif" $B/hello
	check "... names Slurm, Open MPI and --mpi=pmix" \
		says s_ompi "links Open MPI \(libmpi\.so\.40\).*Slurm, offers no PMI \(srun without --mpi.*srun --mpi=pmix"
	check "... no 'built with SLURM's PMI support' message of Open MPI's" \
		bash -c "! grep -q 'PMI support' '$W/out.s_ompi'"
	check "... nothing left behind" settle 100 leftovers
	ok "srun -n 2 mpictr mpi.sif hello-mpich (no --mpi): exit 255 in under 5 s" \
		srun_fast s_mpich 255 --job-name="$NAME-sm" -O -n 2 "$W/timed" "$MPICTR" "$W/mpi.sif" $B/hello-mpich
	check "... names --mpi=pmi2, runs no two one-rank jobs" \
		bash -c "grep -q 'srun --mpi=pmi2' '$W/out.s_mpich' && ! grep -q '^hello rank 0/1' '$W/out.s_mpich'"
	check "... nothing left behind" settle 100 leftovers
	ok "srun --mpi=pmi2 -n 2 mpictr mpi.sif hello (Open MPI): exit 255 in under 5 s" \
		srun_fast s_pmi2 255 --job-name="$NAME-sp" -O --mpi=pmi2 -n 2 "$W/timed" "$MPICTR" "$W/mpi.sif" $B/hello
	check "... names PMI-2 and --mpi=pmix" says s_pmi2 "offers PMI-2 \(srun --mpi=pmi2\).*srun --mpi=pmix"
	check "... nothing left behind" settle 100 leftovers
	ok "srun --mpi=pmix -n 2 mpictr mpi.sif hello-mpich: exit 255 in under 5 s" \
		srun_fast s_pmix 255 --job-name="$NAME-sx" -O --mpi=pmix -n 2 "$W/timed" "$MPICTR" "$W/mpi.sif" $B/hello-mpich
	check "... names PMIx and --mpi=pmi2" says s_pmix "offers PMIx \(srun --mpi=pmix\).*srun --mpi=pmi2"
	check "... nothing left behind" settle 100 leftovers
	ok_fail "MPICTR_MPI_CHECK=0 turns the check off (Open MPI's own failure)" \
		run s_off env MPICTR_MPI_CHECK=0 $T srun --job-name="$NAME-s0" -O -n 2 "$MPICTR" "$W/mpi.sif" $B/hello
	check "... Open MPI's message, not mpictr's" \
		bash -c "grep -q 'PMI support' '$W/out.s_off' && ! grep -q 'MPICTR_MPI_CHECK' '$W/out.s_off'"
	check "... nothing left behind" settle 100 leftovers
else
	need "single-node Slurm answers sinfo" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

done_testing
