#!/bin/bash
# 50-launch.sh - `mpictr -n N IMAGE CMD`: N ranks in ONE user and mount
# namespace, mpictr as their PMIx and PMI-1 server; Open MPI 4.1 (UCX,
# vader) and MPICH 4.0 programs built into the test image; the seed bug
# shown with --no-share; failures and cleanup.
. "$(dirname "$0")/lib.sh"

require_userns_fuse
require_images mpi
cd "$T_TMP" || exit 1
private_tmpdir
B=/opt/mpictr/bin
UCX="OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any OMPI_MCA_pml_ucx_tls=any OMPI_MCA_btl=^vader,openib,uct"
T="timeout -k 5 120"

# run NAME CMD...: output in $T_TMP/NAME.out, status returned
run() { local n=$1; shift; "$@" >"$T_TMP/$n.out" 2>&1; }

CORES=$(t_cores)
export CORES
# The universe is the cores, or N when larger (as mpirun's on one node).
hello_ok() { # OUT N
	local out=$T_TMP/$1.out n=$2 u=$(($2 > CORES ? $2 : CORES))
	[ "$(grep -c "^hello rank .*/$n on .* universe $u allreduce $((n * (n - 1) / 2)) ok" "$out")" = "$n" ] &&
	[ "$(grep '^hello rank' "$out" | sed 's/.* userns \(.*\) uid.*/\1/' | sort -u | wc -l)" = 1 ] &&
	[ "$(grep '^hello rank' "$out" | sed 's/.* uid //' | sort -u)" = "$(id -u)" ] || { cat "$out"; return 1; }
}

for I in "$IMG/mpi.sif" "$IMG/mpi.sqfs"; do
	f=${I##*.}
	for n in 1 2 4; do
		ok "$f: Open MPI hello -n $n: one userns and mntns, size, universe, allreduce" \
			bash -c "$T '$MPICTR' -n $n '$I' $B/hello >'$T_TMP/h$f$n.out' 2>&1; $(declare -f hello_ok); T_TMP='$T_TMP' hello_ok h$f$n $n"
	done
done
I=$IMG/mpi.sif
ok "MPICH hello -n 4 (PMI-1 wire server)" bash -c "$T '$MPICTR' -n 4 '$I' $B/hello-mpich >'$T_TMP/hm.out' 2>&1; $(declare -f hello_ok); T_TMP='$T_TMP' hello_ok hm 4"
ok "MPICH ping-pong 1 B .. 4 MiB -n 2" bash -c "$T '$MPICTR' -n 2 '$I' $B/pingpong-mpich 5 | grep -qx 'pingpong ok'"
ok "MPICH alltoall -n 4" bash -c "$T '$MPICTR' -n 4 '$I' $B/alltoall-mpich 3 | grep -qx 'alltoall ok'"
ok "Open MPI alltoall -n 4" bash -c "$T '$MPICTR' -n 4 '$I' $B/alltoall 3 | grep -qx 'alltoall ok'"

# The transport test: intra-node zero-copy transports work because the
# ranks share the user namespace (the point of mpictr).
pp_ok() { grep -qx 'pingpong ok' "$1" && grep -q '^size 4194304 ' "$1" || { cat "$1"; return 1; }; }
ok "UCX self,posix,cma: ping-pong 1 B .. 4 MiB under -n 2" bash -c "env $UCX UCX_TLS=self,posix,cma $T '$MPICTR' -n 2 '$I' $B/pingpong 5 >'$T_TMP/pp1' 2>&1; $(declare -f pp_ok); pp_ok '$T_TMP/pp1'"
ok "UCX self,sysv,cma: ping-pong 1 B .. 4 MiB under -n 2" bash -c "env $UCX UCX_TLS=self,sysv,cma $T '$MPICTR' -n 2 '$I' $B/pingpong 5 >'$T_TMP/pp2' 2>&1; $(declare -f pp_ok); pp_ok '$T_TMP/pp2'"
ok "Open MPI vader with CMA single-copy: ping-pong under -n 2" bash -c "env OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=cma $T '$MPICTR' -n 2 '$I' $B/pingpong 5 >'$T_TMP/pp3' 2>&1; $(declare -f pp_ok); pp_ok '$T_TMP/pp3' && ! grep -q 'not available' '$T_TMP/pp3'"

# The counter-test: one namespace set per rank and no fallback variables
# reproduce the seed bug, so the difference mpictr makes stays proven.
seed_bug() {
	env $UCX UCX_TLS=self,posix,cma $T "$MPICTR" --no-share --transport-env=off -n 2 "$I" $B/pingpong 5 >"$T_TMP/nb" 2>&1
	local rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] && grep -qE 'Permission denied|Operation not permitted' "$T_TMP/nb" || { echo "rc=$rc"; cat "$T_TMP/nb"; return 1; }
}
ok "--no-share --transport-env=off: UCX posix/cma fails (Permission denied)" seed_bug
fallback() {
	env $UCX $T "$MPICTR" --no-share -n 2 "$I" $B/pingpong 5 >"$T_TMP/fb" 2>&1 || { cat "$T_TMP/fb"; return 1; }
	grep -qx 'pingpong ok' "$T_TMP/fb" && grep -q 'CMA and UCX proc-link are off' "$T_TMP/fb"
}
ok "--no-share with the fallback environment: the UCX ping-pong passes" fallback
ok "--no-share ranks really are in different namespaces" bash -c "$T '$MPICTR' --no-share -n 2 '$I' $B/hello-mpich | sed 's/.* userns \(.*\) uid.*/\1/' | sort -u | wc -l | grep -qx 2"

# Output, input, binding.
ok "--tag-output prefixes every line with the rank" bash -c "$T '$MPICTR' --tag-output -n 3 '$I' sh -c 'echo a; echo b' | sort | tr '\n' ' ' | grep -qx '\[0\] a \[0\] b \[1\] a \[1\] b \[2\] a \[2\] b '"
ok "stdin goes to rank 0 only" bash -c "echo in | $T '$MPICTR' -n 3 '$I' cat | grep -cx in | grep -qx 1"
ok "--bind-to core binds each rank to one CPU and tells Open MPI" bash -c "$T '$MPICTR' --bind-to core -n 2 '$I' sh -c 'grep Cpus_allowed_list /proc/self/status; echo \$OMPI_MCA_orte_externally_bound' | sort -u | grep -c . | grep -qx 3"

# Exit status and failures.
ok_status "MPI_Abort(7) ends the job with 7" 7 $T "$MPICTR" -n 4 "$I" $B/abort
abort_fast() {
	local t0=$SECONDS
	$T "$MPICTR" -n 4 "$I" $B/abort-mpich >/dev/null 2>&1
	local rc=$?
	[ $rc = 7 ] && [ $((SECONDS - t0)) -le 5 ] || { echo "rc=$rc after $((SECONDS - t0)) s"; return 1; }
}
ok "MPICH MPI_Abort(7) ends the job with 7 within 5 s" abort_fast
ok_status "a failing rank's status is the job's" 3 $T "$MPICTR" -n 3 "$I" sh -c '[ "$PMIX_RANK" = 2 ] && exit 3; sleep 30'
ok_status "a command missing in the image: 127" 127 $T "$MPICTR" -n 2 "$I" /no/such/program
ok_status "a rank killed by a signal: 128+signal" 137 $T "$MPICTR" -n 2 "$I" sh -c '[ "$PMIX_RANK" = 0 ] && kill -9 $$; sleep 30'
never_init() {
	# Rank 1 exits 0 without MPI_Init while rank 0 waits in MPI_Init: the
	# job ends (status 1, docs/pmi.md) instead of hanging.
	$T "$MPICTR" -n 2 "$I" sh -c '[ "$PMIX_RANK" = 1 ] && exit 0; exec '$B'/hello' >/dev/null 2>&1
	local rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] || { echo "rc=$rc"; return 1; }
}
ok "a rank that never calls MPI_Init does not hang the job" never_init
ok_status "-n 0 is refused" 255 "$MPICTR" -n 0 "$I" true
ok_status "-n 5000 is refused" 255 "$MPICTR" -n 5000 "$I" true
ok_status "--fakeroot with -n is refused" 255 "$MPICTR" --fakeroot -n 2 "$I" true

# Nothing left behind.
U=$(id -u)
leftovers() {
	ls -d "$TMPDIR"/mpictr-"$U".* 2>/dev/null
	marked_procs
	find /dev/shm -maxdepth 1 -user "$U" -newer "$T_TMP/start" 2>/dev/null
}
touch "$T_TMP/start"
wait_clean() { settle 50 leftovers; }
ok "after MPI jobs: no job directory, process, FUSE server or /dev/shm file" wait_clean
sigterm() {
	"$MPICTR" -n 4 "$I" sleep 60 &
	local pid=$! t0=$SECONDS
	sleep 1.5
	kill -TERM $pid
	wait $pid
	local rc=$?
	[ $rc = 143 ] && [ $((SECONDS - t0)) -le 8 ] && wait_clean || { echo "rc=$rc"; return 1; }
}
ok "SIGTERM to mpictr stops the job (143) and cleans up" sigterm
sigkill() {
	env OMPI_MCA_pml=ob1 "$MPICTR" -n 4 "$I" sh -c "$B/hello >/dev/null; exec sleep 60" &
	local pid=$!
	sleep 3
	kill -KILL $pid
	wait $pid 2>/dev/null
	wait_clean
}
ok "SIGKILL of mpictr: ranks, FUSE servers, PMIx files and directories go away" sigkill
# A killed FUSE worker takes the request it was serving with it; the holder
# must abort the mount so that readers fail instead of waiting forever.
# Data already in the page cache stays readable (the kernel opens files
# without asking the workers), so after the kill the ranks read what they
# never looked at before (MPICH's hello): that must fail, not hang and not
# succeed.
kill_fuse_worker() {
	rm -f "$T_TMP/go"
	"$MPICTR" -n 2 "$I" sh -c "while [ ! -e '$T_TMP/go' ]; do sleep 0.05; done; cat /opt/mpictr/bin/hello-mpich >/dev/null && exit 0; exit 9" 2>"$T_TMP/kf.err" &
	local pid=$! w i rc t0
	for i in $(seq 100); do
		w=$(for p in $(marked_procs 2>/dev/null | awk '{print $1}'); do [ "$(cat /proc/$p/comm 2>/dev/null)" = mpictr-sqfs ] && echo $p; done | head -1)
		[ -n "$w" ] && break
		sleep 0.05
	done
	[ -n "$w" ] || { echo "no FUSE worker found"; kill -KILL $pid; return 1; }
	sleep 0.5
	kill -KILL "$w"
	sleep 0.2
	touch "$T_TMP/go"
	t0=$SECONDS
	timeout 20 tail --pid=$pid -f /dev/null
	kill -0 $pid 2>/dev/null && kill -KILL $pid
	wait $pid
	rc=$?
	cat "$T_TMP/kf.err"
	[ $rc != 0 ] && [ $rc != 137 ] && [ $((SECONDS - t0)) -le 10 ] && grep -q "squashfs worker $w was killed by signal 9" "$T_TMP/kf.err" && wait_clean || { echo "rc=$rc after $((SECONDS - t0)) s"; return 1; }
}
ok "a killed FUSE worker aborts the mount: readers fail, the job ends, nothing is left" kill_fuse_worker
ok "-n 8 /bin/true" $T "$MPICTR" -n 8 "$I" /bin/true
done_testing
