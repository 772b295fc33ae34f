#!/bin/bash
# cluster.sh start|stop|status [--nodes N] [--name NAME] | install-spank DIR - a real Slurm
# 22.05 for the tests (run as root; Debian's slurmctld, slurmd and munge).
#
#   --nodes 1 (default): one node named `hostname -s` on 127.0.0.1, in the
#       host's namespaces. Clients: SLURM_CONF=/etc/slurm-mpictr/slurm.conf
#   --nodes N (N >= 2): N nodes node1..nodeN, each slurmd in its own
#       network, UTS and mount namespace (private /etc/hosts and /tmp) on a
#       bridge in a "switch" namespace, 10.77.0.1N/24; slurmctld runs in
#       node1. The host namespace is the login node: a veth on the same
#       bridge with 10.77.0.1/24 and no other route, so an unprivileged
#       user's srun reaches the nodes. Nothing is routed off the machine.
#       Clients: SLURM_CONF=/etc/slurm-mpictr-nn/slurm.conf
#   --name NAME (with --nodes N, 1..8): a further cluster of N namespaced
#       nodes NAME1..NAMEN beside the two above, sharing nothing with them
#       but munged and the SPANK directory: namespaces mpictr-NAME-*,
#       subnet 10.78.0.0/24 (--subnet A.B.C to change; login A.B.C.1 on
#       the host's veth mpl-NAME), ports 16837/16838, conf dir
#       /etc/slurm-mpictr-NAME, spool, log and run dirs with the same
#       suffix. start/stop/status with the same --name touch only it.
#       `--name scale --nodes 8` is the scale cluster of the tests
#       (tests/integration/95-scale.sh, tests/bench/95-scale.sh).
#
# Every namespaced node has its own boot id: a random one bound over
# /proc/sys/kernel/random/boot_id in the node's mount namespace (what
# UCX, MPICH's transport, reads to tell machines apart), so a rank sees
# what it would on a real node; the hostname, /etc/hosts and /tmp are the
# node's too. The kernel, the file systems and the CPUs stay shared.
#
# SPANK: both clusters' plugstack.conf (beside slurm.conf) loads
# $SPANK_DIR/mpictr-spank.so with `optional` (a missing file is not an
# error) and the site policy image_dirs=$SPANK_IMAGE_DIRS, with
# registry_images=yes (93-pull-slurm.sh pulls through it). slurmstepd
# runs that plugin as root, so the directory and its files are root's
# (0755, files 0644) as on a real site: `cluster.sh install-spank DIR`
# (as root) copies DIR's mpictr-spank.so and the plugins it loads
# (mpictr-squash.so, mpictr-pmix.so, mpictr-verify*.so) there, e.g. the build/plugins of a
# tree the test user built; tests/integration/90-spank.sh checks that the
# installed plugin is its build's (cmp) and names that command otherwise.
#
# Both clusters can run at the same time (ports 16817/16818 in different
# network namespaces) and share one private munged
# (/run/munge-mpictr/munge.socket.2). Everything has mpictr in its name.
# start and stop are idempotent; stop ends exactly the daemons start
# recorded (PID files, each checked to still be the program started with
# this cluster's files: a stale PID file's number may belong to another
# process by now) and the slurmstepd processes of this cluster left stuck
# by jobs that are gone (found by their socket in this cluster's slurmd
# spool directory, never by name: another Slurm on the machine is never
# touched). StateSaveLocation is never wiped: job ids must not restart
# (stale /tmp/spmix_appdir_<uid>_<job>.<step> would collide).
set -euo pipefail
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

MUNGE_RUN=/run/munge-mpictr
MUNGE_SOCK=$MUNGE_RUN/munge.socket.2
NET=10.77.0
NS=mpictr-nn
NAME=
SUBNET=
SPANK_DIR=/var/lib/mpictr-spank
# the images the tests use: the test trees under /var/tmp (CI, developers'
# copies), /home and /tmp; tests/integration/90-spank.sh puts an image
# outside them (/dev/shm) to see the task refuse it
SPANK_IMAGE_DIRS=${MPICTR_SPANK_IMAGE_DIRS:-/var/tmp:/home:/tmp}
WAIT_S=${MPICTR_SLURM_WAIT:-60}

die() { echo "cluster.sh: $*" >&2; exit 1; }
say() { echo "cluster.sh: $*"; }

usage() { echo "usage: cluster.sh start|stop|status [--nodes N] [--name NAME [--subnet A.B.C]] | install-spank DIR" >&2; exit 2; }
[ $# -ge 1 ] || usage
CMD=$1
shift
NODES=1
if [ "$CMD" = install-spank ]; then
	[ $# = 1 ] || usage
	FROM=$(realpath -e -- "$1") || die "install-spank: '$1': no such directory"
	shift
fi
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) NODES=${2:-}; shift 2 || usage ;;
	--nodes=*) NODES=${1#--nodes=}; shift ;;
	--name) NAME=${2:-}; shift 2 || usage ;;
	--name=*) NAME=${1#--name=}; shift ;;
	--subnet) SUBNET=${2:-}; shift 2 || usage ;;
	--subnet=*) SUBNET=${1#--subnet=}; shift ;;
	*) usage ;;
	esac
done
[[ $NODES =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 8 ] ||
	die "--nodes '$NODES': expected 1..8"
[ "$(id -u)" = 0 ] || [ "$CMD" = status ] || die "$CMD needs root"

if [ -n "$NAME" ]; then
	[[ $NAME =~ ^[a-z][a-z0-9]{1,7}$ ]] && [ "$NAME" != nn ] ||
		die "--name '$NAME': expected 2..8 lower-case letters and digits (not 'nn'), e.g. scale"
	SUBNET=${SUBNET:-10.78.0}
	[[ $SUBNET =~ ^10\.([0-9]{1,3})\.([0-9]{1,3})$ ]] && [ "$SUBNET" != "$NET" ] ||
		die "--subnet '$SUBNET': expected 10.B.C (not $NET, the 2-node cluster's)"
	MODE=multi
	NS=mpictr-$NAME
	NET=$SUBNET
	LOGIN_IF=mpl-$NAME
	NODE=$NAME
	CLUSTER=mpictr$NAME
	PORT=16837
	ETC=/etc/slurm-mpictr-$NAME
	SPOOL=/var/spool/slurm-mpictr-$NAME
	LOG=/var/log/slurm-mpictr-$NAME
	RUN=/run/slurm-mpictr-$NAME
elif [ -n "$SUBNET" ]; then
	die "--subnet needs --name"
elif [ "$NODES" = 1 ]; then
	MODE=single
	ETC=/etc/slurm-mpictr
	SPOOL=/var/spool/slurm-mpictr
	LOG=/var/log/slurm-mpictr
	RUN=/run/slurm-mpictr
	CLUSTER=mpictr
	PORT=16817
else
	MODE=multi
	LOGIN_IF=mpictr-login
	NODE=node
	CLUSTER=mpictrnn
	PORT=16817
	ETC=/etc/slurm-mpictr-nn
	SPOOL=/var/spool/slurm-mpictr-nn
	LOG=/var/log/slurm-mpictr-nn
	RUN=/run/slurm-mpictr-nn
fi
export SLURM_CONF=$ETC/slurm.conf

# ours PID PROG MARK: PID is still the PROG (slurmd, slurmctld, munged)
# that this script started with this cluster's files: its executable is
# PROG's and its command line names MARK (our slurm.conf, our munge
# socket). A PID file can outlive its process and the number be reused.
ours() {
	local exe want cmd
	[[ $1 =~ ^[0-9]+$ ]] || return 1
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	want=$(readlink -f "$(command -v "$2")") || return 1
	[ "$exe" = "$want" ] || return 1
	cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cmd == *" $3"* ]]
}
# what each PID file of ours records: the program and its mark (the
# slurm.conf of the cluster whose run directory holds the file)
pid_prog() {
	local conf
	case ${1%/*} in
	/run/slurm-mpictr) conf=/etc/slurm-mpictr/slurm.conf ;;
	/run/slurm-mpictr-nn) conf=/etc/slurm-mpictr-nn/slurm.conf ;;
	/run/slurm-mpictr-*) # a named cluster (--name NAME)
		conf=${1%/*}
		conf=/etc/slurm-mpictr-${conf#/run/slurm-mpictr-}/slurm.conf
		;;
	"$MUNGE_RUN") ;;
	*) return 1 ;;
	esac
	case ${1##*/} in
	munged.pid) echo munged "--socket=$MUNGE_SOCK" ;;
	slurmctld.pid*) [ -n "${conf:-}" ] && echo slurmctld "$conf" ;;
	slurmd*) [ -n "${conf:-}" ] && echo slurmd "$conf" ;;
	*) return 1 ;;
	esac
}

alive() { # FILE: the process it records runs, and is ours
	local pm
	pm=$(pid_prog "$1") && [ -f "$1" ] && ours "$(cat "$1")" $pm
}

stop_pidfile() { # FILE: end exactly the recorded process, if it is ours
	local f=$1 p pm
	[ -f "$f" ] || return 0
	p=$(cat "$f")
	pm=$(pid_prog "$f") || die "$f: not a PID file of this script"
	if ours "$p" $pm; then
		kill "$p" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		ours "$p" $pm && kill -9 "$p" 2>/dev/null
	elif [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
		say "$f names PID $p, which is not the $pm this script started: left alone"
	fi
	rm -f "$f"
}

# ---- munge ------------------------------------------------------------------
start_munge() {
	id munge >/dev/null 2>&1 || die "user munge missing: install the munge package"
	mkdir -p /etc/munge /var/log/munge /var/lib/munge
	if ! [ -s /etc/munge/munge.key ]; then
		mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
			dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
	fi
	chown munge:munge /etc/munge/munge.key /var/log/munge /var/lib/munge
	chmod 0400 /etc/munge/munge.key
	mkdir -p "$MUNGE_RUN"
	chown munge:munge "$MUNGE_RUN"
	chmod 0755 "$MUNGE_RUN"
	alive "$MUNGE_RUN/munged.pid" && return 0
	rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
	runuser -u munge -- munged --socket="$MUNGE_SOCK" --pid-file="$MUNGE_RUN/munged.pid" \
		--log-file=/var/log/munge/munged-mpictr.log --seed-file=/var/lib/munge/munged-mpictr.seed
	for _ in $(seq 50); do
		munge -S "$MUNGE_SOCK" -n 2>/dev/null | unmunge -S "$MUNGE_SOCK" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "munged did not answer on $MUNGE_SOCK (log: /var/log/munge/munged-mpictr.log)"
}

stop_munge_if_unused() { # while any cluster (also a named one) runs, munged stays
	local f
	for f in /run/slurm-mpictr/slurmd.pid /run/slurm-mpictr/slurmctld.pid /run/slurm-mpictr-*/slurmctld.pid.fg; do
		alive "$f" && return 0
	done
	stop_pidfile "$MUNGE_RUN/munged.pid"
}

# ---- stuck slurmstepd ------------------------------------------------------------
# After a refused PMIx client slurmstepd can hang in PMIx_server_finalize,
# ignoring SIGTERM, its job gone. Kill those of this cluster and remove
# their PMIx app dirs. A slurmstepd of this cluster listens on
# SPOOL/NODE_JOB.STEP in this cluster's slurmd spool directory ($SPOOL/d,
# or $SPOOL/NODEi in node i's network namespace): `ss` names the process
# that holds each such socket. No process is chosen by its name, so a
# slurmstepd of another Slurm on the machine (its own spool directory) is
# never touched.
our_stepds() { # prints "PID JOB STEP" for each slurmstepd of this cluster
	local i dir
	if [ "$MODE" = single ]; then
		ss -xlpn 2>/dev/null | stepd_sockets "$SPOOL/d"
	else
		for i in $(seq "$NODES"); do
			[ -e /run/netns/$NS-n$i ] || continue
			nsenter --net=/run/netns/$NS-n$i ss -xlpn 2>/dev/null | stepd_sockets "$SPOOL/$NODE$i"
		done
	fi
}
stepd_sockets() { # DIR: from ss -xlpn, the sockets DIR/NODE_JOB.STEP and their PIDs
	awk -v d="$1/" '{
		for (i = 1; i <= NF; i++)
			if (index($i, d) == 1) path = $i
		if (!path || !match($0, /pid=[0-9]+/)) { path = ""; next }
		pid = substr($0, RSTART + 4, RLENGTH - 4)
		name = substr(path, length(d) + 1)
		if (match(name, /_[0-9]+\.[0-9a-z]+$/)) {
			js = substr(name, RSTART + 1)
			split(js, a, ".")
			print pid, a[1], a[2]
		}
		path = ""
	}' | sort -u
}
kill_stuck_stepd() {
	local p j st
	while read -r p j st; do
		if [ "${1:-}" = all ] || [ -z "$(timeout 10 squeue -h -j "$j" -o %i 2>/dev/null)" ]; then
			say "killing stuck slurmstepd $p (job $j.$st gone)"
			kill -9 "$p" 2>/dev/null || true
			rm -rf /tmp/spmix_appdir_*_"$j.$st"
		fi
	done < <(our_stepds)
}

# ---- configuration ------------------------------------------------------------------
write_conf() {
	local ctld nodes n
	mkdir -p "$ETC" "$SPOOL/ctld" "$LOG" "$RUN"
	chmod 0755 "$SPOOL" "$LOG"
	if [ "$MODE" = single ]; then
		n=$(hostname -s)
		ctld="$n(127.0.0.1)"
		nodes="NodeName=$n NodeAddr=127.0.0.1"
		mkdir -p "$SPOOL/d"
	else
		ctld="${NODE}1($NET.11)"
		nodes=$(for i in $(seq "$NODES"); do echo "NodeName=$NODE$i NodeAddr=$NET.1$i"; done)
		for i in $(seq "$NODES"); do mkdir -p "$SPOOL/$NODE$i"; done
	fi
	cat >"$SLURM_CONF.new" <<EOF
# written by tests/slurm/cluster.sh ($MODE, $NODES node(s))
ClusterName=$CLUSTER
SlurmctldHost=$ctld
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
CredType=cred/munge
StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/$([ "$MODE" = multi ] && echo %n || echo d)
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd$([ "$MODE" = multi ] && echo -%n).pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd$([ "$MODE" = multi ] && echo -%n).log
SlurmctldDebug=info
SlurmdDebug=${SLURMD_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=DEFAULT CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
$nodes
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
	mv "$SLURM_CONF.new" "$SLURM_CONF"
	chmod 0644 "$SLURM_CONF"
}

# The plugstack.conf of the cluster: written on every start (also when the
# cluster runs already: slurmstepd and srun read it for every step).
write_plugstack() {
	mkdir -p "$ETC"
	spank_dir
	cat >"$ETC/plugstack.conf.new" <<EOF
# written by tests/slurm/cluster.sh: mpictr's SPANK plugin (installed with
# 'cluster.sh install-spank DIR', as root); inert without its options
optional $SPANK_DIR/mpictr-spank.so image_dirs=$SPANK_IMAGE_DIRS registry_images=yes
EOF
	chmod 0644 "$ETC/plugstack.conf.new"
	mv "$ETC/plugstack.conf.new" "$ETC/plugstack.conf"
}

# SPANK_DIR: a root-owned 0755 directory (also converts one made by an
# older cluster.sh, owned by the test user), its files root's, 0644.
spank_dir() {
	[ -L "$SPANK_DIR" ] && die "$SPANK_DIR: a symbolic link"
	mkdir -p "$SPANK_DIR"
	chown root:root "$SPANK_DIR"
	chmod 0755 "$SPANK_DIR"
	find "$SPANK_DIR" -mindepth 1 -maxdepth 1 -type f -exec chown root:root {} + -exec chmod 0644 {} +
}

# install-spank DIR: DIR's mpictr-spank.so and the plugins it loads into
# SPANK_DIR, each replaced atomically (steps load them at any time).
install_spank() {
	local f n
	[ -f "$FROM/mpictr-spank.so" ] || die "install-spank: no mpictr-spank.so in '$FROM' (build it: make; needs libslurm-dev)"
	spank_dir
	for n in mpictr-spank.so mpictr-squash.so mpictr-pmix.so; do
		f=$FROM/$n
		[ -f "$f" ] || die "install-spank: '$f' missing"
		install -o root -g root -m 0644 "$f" "$SPANK_DIR/.new.$n"
		mv -f "$SPANK_DIR/.new.$n" "$SPANK_DIR/$n"
	done
	# optional: the pull plugin (--container-image=docker://...), the
	# verify plugins (signed images, require_signature), the seccomp
	# plugin (--container-remap-root's system call filter)
	for n in mpictr-pull.so mpictr-verify.so mpictr-verify-pgp.so mpictr-seccomp.so; do
		f=$FROM/$n
		[ -f "$f" ] || continue
		install -o root -g root -m 0644 "$f" "$SPANK_DIR/.new.$n"
		mv -f "$SPANK_DIR/.new.$n" "$SPANK_DIR/$n"
	done
	say "installed $FROM/{mpictr-spank,mpictr-squash,mpictr-pmix}.so and the optional plugins it has in $SPANK_DIR (root's, 0644)"
}

# ---- waiting -------------------------------------------------------------------------
nodes_idle() { # all NODES nodes idle/mixed/allocated
	local n
	n=$(timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u |
		awk '$2 ~ /^(idle|mixed|allocated|completing)$/ { n++ } END { print n + 0 }')
	[ "$n" = "$NODES" ]
}

wait_idle() {
	local t=0 resumed=0
	while ! nodes_idle; do
		if [ $t -ge $((WAIT_S * 10)) ]; then
			echo "cluster.sh: $MODE cluster not idle after ${WAIT_S} s" >&2
			timeout 10 sinfo -N -l >&2 || true
			fail_logs
			return 1
		fi
		# a node kept "down"/"drain" in the saved state: resume it once
		if [ $resumed = 0 ] && [ $t -ge 50 ] &&
			timeout 10 sinfo -h -N -o '%T' 2>/dev/null | grep -qE 'down|drain'; then
			timeout 10 sinfo -h -N -o '%N' | sort -u | while read -r n; do
				timeout 10 scontrol update NodeName="$n" State=RESUME 2>/dev/null || true
			done
			resumed=1
		fi
		sleep 0.1
		t=$((t + 1))
	done
}

fail_logs() {
	echo "cluster.sh: logs: $LOG/ (slurmctld.log, slurmd*.log, *.stdout), /var/log/munge/munged-mpictr.log" >&2
	local f
	for f in "$LOG"/*.log "$LOG"/*.stdout; do
		[ -f "$f" ] || continue
		echo "---- tail $f" >&2
		tail -n 8 "$f" >&2
	done
}

# ---- single node --------------------------------------------------------------------------
start_single() {
	local n
	n=$(hostname -s)
	getent hosts "$n" >/dev/null || echo "127.0.0.1 $n" >>/etc/hosts
	if alive "$RUN/slurmctld.pid" && alive "$RUN/slurmd.pid"; then
		say "single-node cluster already running"
	else
		write_conf
		start_munge
		kill_stuck_stepd
		alive "$RUN/slurmctld.pid" || slurmctld -f "$SLURM_CONF" || { fail_logs; die "slurmctld failed to start"; }
		alive "$RUN/slurmd.pid" || slurmd -f "$SLURM_CONF" || { fail_logs; die "slurmd failed to start"; }
	fi
	write_plugstack
	wait_idle || die "single-node cluster did not come up"
	say "single-node cluster up: node $n, SLURM_CONF=$SLURM_CONF"
}

stop_single() {
	kill_stuck_stepd
	stop_pidfile "$RUN/slurmd.pid"
	stop_pidfile "$RUN/slurmctld.pid"
	kill_stuck_stepd all
}

# ---- several nodes in namespaces -------------------------------------------------------------
net_up() {
	local i
	mkdir -p "$RUN"
	if ! [ -e /run/netns/$NS-sw ]; then
		ip netns add $NS-sw
		ip -n $NS-sw link set lo up
		ip -n $NS-sw link add br0 type bridge
		ip -n $NS-sw link set br0 up
		# the login side: the host namespace, $NET.1, nothing else routed
		ip link add $LOGIN_IF type veth peer name login netns $NS-sw
		ip -n $NS-sw link set login master br0 up
		ip addr add $NET.1/24 dev $LOGIN_IF
		ip link set $LOGIN_IF up
	fi
	for i in $(seq "$NODES"); do
		[ -e /run/netns/$NS-n$i ] && continue
		ip netns add $NS-n$i
		ip link add eth0 netns $NS-n$i type veth peer name port$i netns $NS-sw
		ip -n $NS-sw link set port$i master br0 up
		ip -n $NS-n$i link set lo up
		ip -n $NS-n$i addr add $NET.1$i/24 dev eth0
		ip -n $NS-n$i link set eth0 up
	done
	{
		echo "127.0.0.1 localhost"
		echo "$NET.1 login $(hostname -s)"
		for i in $(seq "$NODES"); do echo "$NET.1$i $NODE$i"; done
	} >"$RUN/hosts"
	# each node's boot id, fixed for the node's life (in_node binds it)
	for i in $(seq "$NODES"); do
		cat /proc/sys/kernel/random/uuid >"$RUN/boot_id-$NODE$i"
		chmod 0444 "$RUN/boot_id-$NODE$i"
	done
}

net_down() {
	local f
	for f in /run/netns/$NS-n*; do
		[ -e "$f" ] && ip netns del "$(basename "$f")"
	done
	ip link del $LOGIN_IF 2>/dev/null || true
	[ -e /run/netns/$NS-sw ] && ip netns del $NS-sw
	return 0
}

# in_node N CMD...: exec CMD in node N's network namespace (nsenter, not
# `ip netns exec`, which remounts /sys and hides /sys/fs/cgroup from
# slurmd), a new UTS namespace (hostname nodeN) and a new mount namespace
# with private /etc/hosts, /tmp and boot id. Everything execs: $! is CMD's
# PID.
in_node() {
	local n=$1
	shift
	exec setsid nsenter --net=/run/netns/$NS-n"$n" unshare --uts --mount --propagation private \
		sh -c 'hostname "$0"; mount --bind "$1" /etc/hosts; mount -t tmpfs -o mode=1777 tmpfs /tmp
			mount --bind "$2" /proc/sys/kernel/random/boot_id; shift 2; exec "$@"' \
		"$NODE$n" "$RUN/hosts" "$RUN/boot_id-$NODE$n" "$@"
}

multi_alive() {
	local i
	alive "$RUN/slurmctld.pid.fg" && [ -f "$RUN/nodes" ] && [ "$(cat "$RUN/nodes")" = "$NODES" ] || return 1
	for i in $(seq "$NODES"); do alive "$RUN/slurmd-$NODE$i.fg.pid" || return 1; done
}

start_multi() {
	local i
	if multi_alive; then
		say "$NODES-node cluster already running"
	else
		stop_multi quiet
		net_up
		write_conf
		start_munge
		echo "$NODES" >"$RUN/nodes"
		(in_node 1 slurmctld -D -f "$SLURM_CONF" </dev/null >"$LOG/slurmctld.stdout" 2>&1) &
		echo $! >"$RUN/slurmctld.pid.fg"
		for i in $(seq "$NODES"); do
			(in_node "$i" slurmd -D -f "$SLURM_CONF" </dev/null >"$LOG/slurmd-$NODE$i.stdout" 2>&1) &
			echo $! >"$RUN/slurmd-$NODE$i.fg.pid"
		done
	fi
	write_plugstack
	wait_idle || die "$NODES-node cluster did not come up"
	say "$NODES-node cluster up: ${NODE}1..$NODE$NODES ($NET.11..), login $NET.1, SLURM_CONF=$SLURM_CONF"
}

stop_multi() {
	local f
	[ "${1:-}" = quiet ] || kill_stuck_stepd
	for f in "$RUN"/slurmd-"$NODE"*.fg.pid "$RUN/slurmctld.pid.fg"; do
		[ -e "$f" ] && stop_pidfile "$f"
	done
	rm -f "$RUN/slurmctld.pid" "$RUN"/slurmd-"$NODE"*.pid "$RUN/nodes" "$RUN"/boot_id-*
	[ "${1:-}" = quiet ] || kill_stuck_stepd all
	net_down
}

# ---- main -------------------------------------------------------------------------------------
case $CMD in
install-spank) install_spank ;;
start)
	command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
		die "slurmctld, slurmd and munge must be installed (tests/deps/debian-packages.txt)"
	mountpoint -q /sys/fs/cgroup || die "/sys/fs/cgroup is not mounted: slurmd cannot start"
	# The daemons start in /, a directory every node has: slurmstepd
	# returns to the directory it inherited after forking each task, and a
	# caller's directory under /tmp does not exist in a node's private
	# /tmp ("Unable to return to working directory" on every step).
	cd /
	"start_$MODE"
	;;
stop)
	if [ "$MODE" = single ]; then stop_single; else stop_multi; fi
	stop_munge_if_unused
	say "$MODE cluster${NAME:+ $NAME} stopped"
	;;
status)
	if [ "$MODE" = multi ] && ! [ -e /run/netns/$NS-sw ] || ! [ -f "$SLURM_CONF" ]; then
		echo "$MODE cluster: not running"
		exit 1
	fi
	if nodes_idle; then
		echo "$MODE cluster: up (SLURM_CONF=$SLURM_CONF)"
		timeout 10 sinfo -N
	else
		echo "$MODE cluster: not up (SLURM_CONF=$SLURM_CONF)"
		timeout 10 sinfo -N 2>&1 || true
		exit 1
	fi
	;;
*) usage ;;
esac
