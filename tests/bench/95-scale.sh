#!/bin/bash
# 95-scale.sh - `make bench`: what a job costs per node and per rank as the
# node count grows, on the scale cluster (tests/slurm/cluster.sh start
# --nodes 8 --name scale), at N = 1, 2, 4, 8 nodes with 2 tasks each:
#
#   start-up  wall time of `srun -N N -n 2N mpictr mpi.sif /bin/true`
#             (join mode) against native `srun -N N -n 2N /bin/true`, the
#             variants interleaved round-robin; the ratio must not grow
#             with N (at 8 nodes <= the ratio at 1 node + 0.05)
#   per node  from the kernel, sampled from /proc while every task of a
#             job runs (one kernel: the nodes are network namespaces):
#             FUSE mounts (distinct superblocks, major:minor, of type
#             fuse* in the mountinfo of the tasks and of mpictr: a bind
#             or a copy into a new mount namespace shares the superblock
#             and is not a new mount), user namespaces (distinct
#             /proc/PID/ns/user other than the host's), mpictr processes
#             (keeper, holder, FUSE server: comm mpictr*), open file
#             descriptors on the image file, the proportional set size
#             (smaps_rollup Pss) of mpictr's processes, the CPU time of
#             all our processes of a node (schedstat), native and mpictr
#   per node  from strace -f -yy of every task of `mpictr mpi.sif hello`
#             (Open MPI, pmix): opens of the image file and bytes read from
#             it (read/pread64 on a descriptor of the image)
#   per job   requests to slurmctld by the test user (sdiag "by user"
#             delta) for the mpictr job minus those of the native job at
#             the same N: the requests mpictr made
#   per node  node daemon mode (srun -N 2 --ntasks-per-node=1 mpictr -n R):
#             PMIx fence requests written to Slurm's PMIx server (TCP on
#             the node's loopback) for R = 1, 2, 4 ranks per node (strace
#             -f -yy), per fence, against join mode with R tasks per node
#
# Output: a table on stdout and in build/bench/95-scale.md.
# Knobs: BENCH_ROUNDS (21; a step takes ~0.3 s).
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/slurm/env.sh"
MPICTR=$ROOT/build/mpictr
ROUNDS=${BENCH_ROUNDS:-21}
OUT=$ROOT/build/bench/95-scale.md
mkdir -p "$ROOT/build/bench"
NS="1 2 4 8"

[ -x "$MPICTR" ] || { echo "95-scale: build mpictr first"; exit 1; }
if ! slurm_scale_up 8; then
	echo "95-scale: the scale cluster is not up (sudo tests/slurm/cluster.sh start --nodes 8 --name scale); skipped"
	exit 0
fi
export SLURM_CONF=$SLURM_CONF_SCALE
"$ROOT/tests/images/build.sh" "$ROOT/build/images" mpi >/dev/null 2>&1 || { echo "95-scale: building the mpi image failed"; exit 1; }
W=$(mktemp -d /var/tmp/mpictr-bench-scale.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 0755 "$W"
mkdir -m 0777 "$W/tmp" "$W/st"
ln -s "$ROOT/build/images/mpi.sif" "$W/mpi.sif"
IMG=$W/mpi.sif
REAL=$(realpath "$IMG")
SIZE=$(stat -L -c %s "$IMG")
export TMPDIR=$W/tmp
export MPICTR_BENCH_MARK=$$
cd "$W" || exit 1
# sdiag counts requests per user, not per job: other jobs of the same user
# on the scale cluster would be counted as mpictr's
others() { squeue -h -u "$(id -un)" -o %i 2>/dev/null | grep -c .; }
[ "$(others)" = 0 ] || echo "95-scale: WARNING: other jobs of $(id -un) on the scale cluster: the slurmctld request counts include theirs"
T="timeout -k 5 180"
HOSTUSERNS=$(readlink /proc/self/ns/user)
median() { tr ' ' '\n' | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print ""}'; }

# ---- start-up, interleaved --------------------------------------------------------
launch() { # native|mpictr N -> ns on stdout, nothing on failure
	local t0 t1 rc n=$2
	t0=$(date +%s%N)
	if [ "$1" = native ]; then
		$T srun -N "$n" -n $((2 * n)) /bin/true
	else
		$T srun -N "$n" -n $((2 * n)) "$MPICTR" "$IMG" /bin/true
	fi >"$W/out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	[ $rc = 0 ] && echo $((t1 - t0))
}
declare -A T_NS
for r in $(seq "$ROUNDS"); do
	for n in $NS; do
		vs="native mpictr"
		[ $((r % 2)) = 0 ] && vs="mpictr native" # alternate which goes first
		for v in $vs; do
			ns=$(launch $v "$n")
			[ -n "$ns" ] || { echo "round $r $v N=$n failed: $(head -3 "$W/out")"; ns=NA; }
			T_NS[$v-$n]="${T_NS[$v-$n]:-} $ns"
			printf 'round %d N=%d %-7s %s ms\n' "$r" "$n" $v "$([ "$ns" = NA ] && echo NA || echo $((ns / 1000000)))"
		done
	done
done

# ---- per node, from /proc while the job runs -----------------------------------------
# sample N: start a job whose tasks wait, look at every process of ours
# while all 2N tasks are up, print "NODES n MOUNTS m USERNS u PROCS p FDS f"
# as maxima over the nodes (a node = a network namespace)
sample() { # N [native]
	local n=$1 p net
	local -a pre=("$MPICTR" "$IMG")
	[ "${2:-}" = native ] && pre=()
	rm -f "$W/ready".*
	$T srun -N "$n" -n $((2 * n)) "${pre[@]}" sh -c "touch $W/ready.\$SLURM_PROCID; sleep 4" >"$W/out.s" 2>&1 &
	for _ in $(seq 300); do
		[ "$(ls "$W"/ready.* 2>/dev/null | wc -l)" = $((2 * n)) ] && break
		sleep 0.1
	done
	sleep 0.5
	for p in $(pgrep -u "$(id -u)"); do
		# only this benchmark's processes (they all inherit the mark)
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "MPICTR_BENCH_MARK=$$" || continue
		net=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
		[ "$net" = "$(readlink /proc/self/ns/net)" ] && continue
		echo "P $net $(readlink "/proc/$p/ns/user") $(cat "/proc/$p/comm" 2>/dev/null) $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null) $p"
		# CPU time so far (schedstat, ns; stat's ticks are too coarse): a
		# task's includes what mpictr did in it before it exec'd the
		# command (processes that ended before the sample are not seen)
		echo "C $net $p $(awk '{ print $1 }' "/proc/$p/schedstat" 2>/dev/null)"
		awk -v net="$net" '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) ~ /^fuse/) print "M", net, $3; break } }' \
			"/proc/$p/mountinfo" 2>/dev/null
		for f in /proc/$p/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "$REAL" ] && echo "F $net $p/${f##*/}"
		done
	done | sort -u >"$W/sample.$n"
	wait
	awk -v host="$HOSTUSERNS" '
		$1 == "P" { nodes[$2] = 1; if ($3 != host) u[$2 " " $3] = 1; if ($4 ~ /^mpictr/) { procs[$2]++; pss[$2] += $5 } }
		$1 == "M" { m[$2 " " $3] = 1 }
		$1 == "F" { fds[$2]++ }
		$1 == "C" { cpu[$2] += $4 }
		END {
			for (k in u) { split(k, x, " "); cu[x[1]]++ }
			for (k in m) { split(k, x, " "); cm[x[1]]++ }
			for (k in nodes) { if (cu[k] > mu) mu = cu[k]; if (cm[k] > mm) mm = cm[k]; if (procs[k] > mp) mp = procs[k]; if (fds[k] > mf) mf = fds[k]; if (pss[k] > ms) ms = pss[k]; tc += cpu[k]; nn++ }
			printf "NODES %d MOUNTS %d USERNS %d PROCS %d FDS %d PSS %d CPUMS %d\n", nn, mm, mu, mp, mf, ms, nn ? tc / 1000000 / nn : 0
		}' "$W/sample.$n"
}

# ---- per node, image traffic from strace ----------------------------------------------
traffic() { # N -> "OPENS o BYTES b" maxima over the nodes, and the hello check
	local n=$1
	rm -f "$W"/st/*
	$T srun -N "$n" -n $((2 * n)) --mpi=pmix sh -c "exec strace -f -qq -yy -e trace=openat,open,read,pread64,preadv -o $W/st/\$SLURMD_NODENAME.\$SLURM_PROCID \"\$@\"" sh \
		"$MPICTR" "$IMG" /opt/mpictr/bin/hello >"$W/out.t" 2>&1
	[ "$(grep -c "allreduce $((2 * n * (2 * n - 1) / 2)) ok" "$W/out.t")" = $((2 * n)) ] || { echo "FAILED $(head -3 "$W/out.t")"; return; }
	for f in "$W"/st/*; do
		node=${f##*/}
		node=${node%.*}
		awk -v node="$node" -v img="$REAL" '
			index($0, "\"" img "\"") && /open/ && $NF ~ /^[0-9]+</ { print "O", node }
			/^[0-9]+ +(read|pread64|preadv)\(/ && index($0, "<" img ">") { if ($NF ~ /^[0-9]+$/) print "B", node, $NF }' "$f"
	done | awk '$1 == "O" { o[$2]++ } $1 == "B" { b[$2] += $3 }
		END { for (k in o) if (o[k] > mo) mo = o[k]; for (k in b) if (b[k] > mb) mb = b[k]; printf "OPENS %d BYTES %d\n", mo, mb }'
}

# ---- requests to slurmctld ---------------------------------------------------------------
rpcs() { sdiag 2>/dev/null | awk -v u="$(id -un)" '/by user/ { f = 1 } f && $1 == u { sub(/.*count:/, ""); print $1 + 0; exit }'; }
ctld() { # N -> requests of the mpictr job minus those of the native job
	local n=$1 a b c
	a=$(rpcs)
	$T srun -N "$n" -n $((2 * n)) /bin/true >/dev/null 2>&1
	b=$(rpcs)
	$T srun -N "$n" -n $((2 * n)) "$MPICTR" "$IMG" /bin/true >/dev/null 2>&1
	c=$(rpcs)
	echo "NATIVE $((b - a - 1)) MPICTR $((c - b - 1))" # minus sdiag's own request
	[ "$(others)" = 0 ] || echo "95-scale: WARNING: other jobs of $(id -un) ran during the request count at N=$n" >&2
}

# ---- node daemon mode: fence messages to Slurm's PMIx server ------------------------
# upstream R daemon|join -> "UP u FENCES f" per node (max): PMIx fence
# requests (a writev whose payload starts with the fence command, \2\3)
# written to Slurm's PMIx server of the node (TCP, the port of the task's
# PMIX_SERVER_URI41), and the fences of the job (the fence requests of
# the ranks: to mpictr's server in node daemon mode, divided by R)
upstream() {
	local r=$1 node f port
	rm -f "$W"/st/*
	local wrap="echo \${PMIX_SERVER_URI41##*:} >$W/st/port.\$SLURMD_NODENAME; exec strace -f -qq -yy -e trace=writev -o $W/st/trace.\$SLURMD_NODENAME.\$SLURM_PROCID \"\$@\""
	if [ "$2" = daemon ]; then
		$T srun -N 2 -n 2 --ntasks-per-node=1 --mpi=pmix sh -c "$wrap" sh "$MPICTR" -n "$r" "$IMG" /opt/mpictr/bin/hello
	else # (no --ntasks-per-node: Slurm refuses more than the node's CPUs even with -O; block distribution gives R each)
		$T srun -O -N 2 -n $((2 * r)) --mpi=pmix sh -c "$wrap" sh "$MPICTR" "$IMG" /opt/mpictr/bin/hello
	fi >"$W/out.u" 2>&1
	[ "$(grep -c "allreduce $((2 * r * (2 * r - 1) / 2)) ok" "$W/out.u")" = $((2 * r)) ] || { echo "FAILED"; return; }
	for f in "$W"/st/port.*; do
		node=${f##*/port.}
		port=$(cat "$f")
		cat "$W"/st/trace."$node".* | awk -v port="$port" -v node="$node" -v r="$r" -v mode="$2" '
			index($0, "}, {iov_base=\"\\2\\3") && /writev\([0-9]+<TCP:\[127\.0\.0\.1:[0-9]+->127\.0\.0\.1:[0-9]+\]>/ {
				if (index($0, "->127.0.0.1:" port "]")) up++; else other++ }
			END { f = (mode == "daemon" ? other / r : up / r); printf "%s %d %d\n", node, up, f }'
	done | awk '{ if ($2 > u) u = $2; if ($3 > f) f = $3 } END { printf "UP %d FENCES %d\n", u, f }'
}

field() { sed -nE "s/.*\\<$1 ([0-9-]+).*/\\1/p" <<<"$2"; }
declare -A S SN TR C
for n in $NS; do
	S[$n]=$(sample "$n")
	SN[$n]=$(sample "$n" native)
	TR[$n]=$(traffic "$n")
	C[$n]=$(ctld "$n")
	echo "N=$n ${S[$n]} ${TR[$n]} ${C[$n]} native CPUMS $(field CPUMS "${SN[$n]}")"
done
declare -A U
for r in 1 2 4; do
	U[daemon-$r]=$(upstream $r daemon)
	U[join-$r]=$(upstream $r join)
	echo "R=$r daemon ${U[daemon-$r]} join ${U[join-$r]}"
done

{
	echo "Scale: one job on N simulated nodes (network namespaces on one $(nproc)-CPU machine,"
	echo "tests/slurm/cluster.sh --name scale), 2 tasks per node, image mpi.sif ($SIZE bytes)."
	echo "Start-up: wall time of the whole srun, median of $ROUNDS interleaved rounds."
	echo
	echo "| N | native srun ms | srun mpictr ms | ratio | CPU ms/node native, mpictr | FUSE mounts/node | userns/node | mpictr procs/node | image fds/node | mpictr PSS kB/node | image opens/node | image bytes read/node | slurmctld requests (native, mpictr) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for n in $NS; do
		a=$(echo "${T_NS[native-$n]}" | median)
		b=$(echo "${T_NS[mpictr-$n]}" | median)
		ratio=NA
		[ -n "$a" ] && [ -n "$b" ] && ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
		echo "| $n | $((${a:-0} / 1000000)) | $((${b:-0} / 1000000)) | $ratio | $(field CPUMS "${SN[$n]}"), $(field CPUMS "${S[$n]}") | $(field MOUNTS "${S[$n]}") | $(field USERNS "${S[$n]}") | $(field PROCS "${S[$n]}") | $(field FDS "${S[$n]}") | $(field PSS "${S[$n]}") | $(field OPENS "${TR[$n]}") | $(field BYTES "${TR[$n]}") | $(field NATIVE "${C[$n]}"), $(field MPICTR "${C[$n]}") |"
		eval "R_$n=$ratio"
	done
	echo
	echo "PMIx fence requests written to Slurm's PMIx server of a node (slurmstepd, TCP on the"
	echo "node's loopback) per job by all of the node's processes (strace -f), 2 nodes, MPI hello"
	echo "(Open MPI): node daemon mode against join mode; F = fences of the job."
	echo
	echo "| ranks/node R | node daemon: requests (F) | per fence | join: requests (F) | per fence |"
	echo "|---|---|---|---|---|"
	for r in 1 2 4; do
		du=$(field UP "${U[daemon-$r]}") df=$(field FENCES "${U[daemon-$r]}")
		ju=$(field UP "${U[join-$r]}") jf=$(field FENCES "${U[join-$r]}")
		echo "| $r | ${du:-NA} (${df:-NA}) | $(awk -v u="${du:-0}" -v f="${df:-0}" 'BEGIN { if (f) printf "%.2f", u / f; else print "NA" }') | ${ju:-NA} (${jf:-NA}) | $(awk -v u="${ju:-0}" -v f="${jf:-0}" 'BEGIN { if (f) printf "%.2f", u / f; else print "NA" }') |"
	done
	echo
	# shellcheck disable=SC2154
	awk -v a="$R_1" -v b="$R_8" 'BEGIN { if (a == "NA" || b == "NA") print "ratio check: NA"; else printf "ratio check: at 8 nodes %.2f, at 1 node %.2f + 0.05 = %.2f: %s\n", b, a, a + 0.05, (b <= a + 0.05 ? "pass" : "FAIL") }'
} | tee "$OUT"
