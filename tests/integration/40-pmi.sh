#!/bin/bash
# 40-pmi.sh - mpictr's PMI servers without containers: build/tests/pmi_launch
# starts the PMIx + PMI-1 servers and forks ranks on the host. Open MPI 4.1
# (PMIx) and MPICH 4.0 (PMI-1): sizes, universe size, shared memory,
# ping-pong, alltoall, MPI_Abort, ranks that leave early, nothing left behind.
. "$(dirname "$0")/lib.sh"

LAUNCH=$ROOT/build/tests/pmi_launch
BASE=$T_TMP/base # parent of the servers' private tmpdirs
mkdir -p "$BASE"
# Ranks must not find a stray PMI server of ours in their environment.
unset PMI_FD PMI_PORT PMI_RANK PMI_SIZE OMPI_MCA_schizo
for v in $(env | sed -n 's/^\(PMIX_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

# run N OUT CMD... : one job under pmi_launch, bounded in time.
run() {
	local n=$1 out=$2
	shift 2
	# shellcheck disable=SC2086 # LAUNCH_FLAGS: words on purpose
	PMI_LAUNCH_TMPDIR=$BASE timeout -k 5 60 "$LAUNCH" ${LAUNCH_FLAGS:-} -n "$n" "$@" \
		>"$out" 2>&1
}
# every rank of an N-rank hello printed the right size, universe and sum
hello_ok() {
	local n=$1 out=$2 r
	run "$n" "$out" "${@:3}" || { cat "$out"; return 1; }
	[ "$(grep -c '^hello rank' "$out")" = "$n" ] || { cat "$out"; return 1; }
	for ((r = 0; r < n; r++)); do
		grep -q "^hello rank $r/$n on .* universe $n allreduce $((n * (n - 1) / 2)) ok " "$out" ||
			{ cat "$out"; return 1; }
	done
}
# CMD... prints "$word ok"
prints_ok() {
	local word=$1 n=$2 out=$3
	run "$n" "$out" "${@:4}" || { cat "$out"; return 1; }
	grep -q "^$word ok" "$out" || { cat "$out"; return 1; }
}
# The job ends with status WANT within SECS seconds.
ends_with() {
	local want=$1 secs=$2 n=$3 out=$4 t0 t1 rc
	shift 4
	t0=$(date +%s%N)
	run "$n" "$out" "$@"
	rc=$?
	t1=$(date +%s%N)
	cat "$out"
	echo "status $rc (want $want) after $(((t1 - t0) / 1000000)) ms (limit ${secs}s)"
	[ "$rc" = "$want" ] && [ $(((t1 - t0) / 1000000)) -lt $((secs * 1000)) ]
}
# with_env NAME=VALUE... -- CMD... : CMD (a function too) with those exported
with_env() {
	local -a vars=()
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	(export "${vars[@]}"; "$@")
}
base_empty() { [ -z "$(ls -A "$BASE")" ] || { ls -la "$BASE"; return 1; }; }

if [ ! -x "$LAUNCH" ]; then
	need "pmi_launch is built" "build/tests/pmi_launch missing (make check builds it)"
	done_testing
	exit
fi

OMPI=0 MPICH=0
if command -v mpicc >/dev/null && mpicc --showme:version 2>&1 | grep -q 'Open MPI'; then
	OMPI=1
	for p in hello pingpong alltoall abort; do
		mpicc -O2 -o "$T_TMP/$p.ompi" "$ROOT/tests/mpi/$p.c" || OMPI=0
	done
fi
if command -v mpicc.mpich >/dev/null; then
	MPICH=1
	for p in hello pingpong alltoall abort; do
		mpicc.mpich -O2 -o "$T_TMP/$p.mpich" "$ROOT/tests/mpi/$p.c" || MPICH=0
	done
fi
O=$T_TMP/out

# A shell wrapper: rank $1 exits with status $2 before MPI_Init, others run
# the rest of the command line.
cat >"$T_TMP/leave_early" <<'SH'
#!/bin/sh
rank=$1 code=$2
shift 2
[ "$PMI_RANK" = "$rank" ] && exit "$code"
exec "$@"
SH
chmod +x "$T_TMP/leave_early"

# mpi_ends LABEL EXT NLEAVE: what every MPI's programs (*.EXT) must pass
# after their own tests: alltoall, MPI_Abort, a rank failing or leaving
# with 0 before MPI_Init (of NLEAVE ranks), no private tmpdir left.
mpi_ends() {
	local l=$1 x=$2
	ok "$l alltoall -n 4" prints_ok alltoall 4 "$O" "$T_TMP/alltoall.$x" 5 65536
	ok "$l MPI_Abort(7) in rank 1 ends the job with 7 within 5 s" \
		ends_with 7 5 4 "$O" "$T_TMP/abort.$x"
	ok "$l: a rank failing before MPI_Init ends the job with its status" \
		ends_with 3 10 2 "$O" "$T_TMP/leave_early" 1 3 "$T_TMP/hello.$x"
	ok "$l: a rank leaving with 0 before MPI_Init ends the job with 1" \
		ends_with 1 10 "$3" "$O" "$T_TMP/leave_early" 0 0 "$T_TMP/hello.$x"
	ok "no private tmpdir left after the $l runs" base_empty
}

if [ $OMPI = 1 ]; then
	for n in 1 2 4; do
		ok "open mpi hello -n $n: sizes, universe, allreduce" hello_ok $n "$O" "$T_TMP/hello.ompi"
	done
	ok "open mpi ping-pong over ucx (posix, cma)" with_env OMPI_MCA_pml=ucx \
		OMPI_MCA_pml_ucx_devices=any OMPI_MCA_pml_ucx_tls=any UCX_TLS=self,posix,cma -- \
		prints_ok pingpong 2 "$O" "$T_TMP/pingpong.ompi" 5 1048576
	# With only self+vader allowed, the run works only when local peers are
	# right: otherwise the peer is "unreachable".
	ok "open mpi ping-pong over shared memory (ob1, self+vader only)" with_env \
		OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader -- \
		prints_ok pingpong 2 "$O" "$T_TMP/pingpong.ompi" 5 1048576
	ok "open mpi hello -n 4 with self+vader only" with_env OMPI_MCA_pml=ob1 \
		OMPI_MCA_btl=self,vader -- hello_ok 4 "$O" "$T_TMP/hello.ompi"
	mpi_ends "open mpi" ompi 2
else
	need "open mpi tests" "mpicc (Open MPI) missing"
fi

if [ $MPICH = 1 ]; then
	ok "mpich hello -n 4: sizes, universe, allreduce" hello_ok 4 "$O" "$T_TMP/hello.mpich"
	ok "mpich ping-pong -n 2" prints_ok pingpong 2 "$O" "$T_TMP/pingpong.mpich" 5 1048576
	mpi_ends mpich mpich 4
else
	need "mpich tests" "mpicc.mpich missing"
fi

# A raw PMIx client sees what the server registered and can exchange keys.
probe_ok() {
	local n=$1 out=$2 r
	shift 2
	run "$n" "$out" "$@" || { cat "$out"; return 1; }
	for ((r = 0; r < n; r++)); do
		grep -q "^probe rank $r size $n univ $n local_size $n peers $(seq -s, 0 $((n - 1))) local_rank $r node_rank $r host $(hostname) exchange ok" "$out" ||
			{ cat "$out"; return 1; }
	done
}
if cc -o "$T_TMP/probe" "$ROOT/tests/mpi/pmix_probe.c" $(pkg-config --cflags --libs pmix) 2>"$T_OUT"; then
	ok "pmix client: sizes, local peers, ranks, key exchange (-n 3)" probe_ok 3 "$O" "$T_TMP/probe"
	# Turning off libpmix's local-only fence shortcut sends the fence
	# through our fence_nb (the path multi-node jobs take).
	probe_fence() { probe_ok "$@" && grep -q 'fence_nb over' "$2"; }
	ok "pmix client: key exchange through the host fence_nb" with_env \
		MPICTR_PMIX_MCA_pmix_server_fence_localonly_opt=0 LAUNCH_FLAGS=-v -- \
		probe_fence 2 "$O" "$T_TMP/probe"
else
	need "pmix client probe" "cannot build tests/mpi/pmix_probe.c against libpmix"
fi

ok "a non-MPI command runs on every rank with its PMI variables" bash -c \
	"PMI_LAUNCH_TMPDIR=$BASE timeout -k 5 30 $LAUNCH -n 3 sh -c 'echo r=\$PMI_RANK s=\$PMI_SIZE ns=\$PMIX_NAMESPACE schizo=\$OMPI_MCA_schizo' | sort | tr '\n' ' ' | grep -q '^r=0 s=3 ns=mpictr\.[0-9.]* schizo=ompi r=1 s=3 .*r=2 s=3 '"
ok_status "pmi_launch passes the first failing rank's status" 5 env PMI_LAUNCH_TMPDIR="$BASE" \
	timeout -k 5 30 "$LAUNCH" -n 2 sh -c '[ "$PMI_RANK" = 1 ] && exit 5; sleep 20'
ok_fail "an unusable tmpdir base fails to start" env PMI_LAUNCH_TMPDIR=/nonexistent/x \
	timeout -k 5 30 "$LAUNCH" -n 1 true
ok "nothing left behind: no tmpdir under the base" base_empty
# "[/]tmp/..." matches the ranks' command lines, not this pgrep's own.
ok "nothing left behind: no rank processes" bash -c "! pgrep -af '[${T_TMP:0:1}]${T_TMP:1}/'"
done_testing
