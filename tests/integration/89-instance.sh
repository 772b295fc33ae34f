#!/bin/bash
# 89-instance.sh - named instances: `mpictr instance start IMAGE NAME`,
# `instance list [--json]`, `instance stop NAME|--all`, and instance://NAME
# joined by `mpictr exec|run`, `mpictr -n N`, `srun mpictr` (pmix, pmi2) and
# `mpirun -np N mpictr`: every process in the instance's user and mount
# namespaces; options that would change the container refused; names
# checked; stop, --linger, a killed keeper and the end of a batch job leave
# nothing behind; an instance started in a step (salloc, sbatch) lives
# until the job ends (also scancel), never longer; joiners plan from the
# image the instance holds, also when its file was deleted or replaced;
# two nodes (SLURM_CONF_MULTI): an instance per node, ranks join their
# node's, nothing left on either node after a stop or the job's end. A second user: tests/integration-root/40-instance-users.sh.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"

T="timeout -k 5 90"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID
require_userns_fuse "user namespaces and /dev/fuse" "instances mount the image through FUSE in a user namespace"
require_images all

# Everything lives under $W (in /var/tmp); TMPDIR=$W/tmp (mpirun's session
# directory) is inside the instance because $W, the working directory at
# its start, is bound in.
W=$(mktemp -d /var/tmp/mpictr-instance.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
ln -s "$IMG/mpi.sif" "$W/mpi.sif"
ln -s "$IMG/tiny.sif" "$W/tiny.sif"
cd "$W" || exit 1
export TMPDIR=$W/tmp
B=/opt/mpictr/bin
N=i$$ # this test's instance names start with it
trap '"$MPICTR" instance stop $N >/dev/null 2>&1; for n in a b c l k w s x t j r n m u; do "$MPICTR" instance stop $N$n >/dev/null 2>&1; done; t_cleanup; rm -rf "$W"' EXIT

# run NAME CMD...: lib.sh's (with the timeout $T, output in $W/out.NAME)
count() { grep -cE "$2" "$W/out.$1"; }
NSCMD='echo NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'
HOSTNS="NS $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)"
# in_ns OUT [N]: every "NS ..." or hello line of OUT shows the instance's
# namespaces ($W/out.ns0), N of them
in_ns() {
	local ns
	ns=$(sed -n 's/^NS //p' "$W/out.ns0")
	[ -n "$ns" ] || return 1
	if [ -n "${2:-}" ] && [ "$(grep -cE '^(NS |hello rank )' "$W/out.$1")" != "$2" ]; then
		cat "$W/out.$1"
		return 1
	fi
	sed -nE 's/^NS (.*)/\1/p; s/^hello rank .* userns ([^ ]+) mntns ([^ ]+) .*/\1 \2/p' "$W/out.$1" |
		sort -u | grep -qvxF "$ns" && { cat "$W/out.$1"; echo "expected $ns"; return 1; }
	return 0
}
# leftovers NAME: what an ended instance left: processes of this test
# (the keeper, holder, FUSE workers and members carry its marker), its
# rendezvous entries
leftovers() {
	marked_procs
	ls -A "$JDIR" 2>/dev/null | grep -F "inst-$1." | sed 's/^/rendezvous entry /'
}
# gone NAME: bounded wait (10 s) until nothing of the instance is left
gone() { settle 100 leftovers "$1"; }

# ---- start, list, exec --------------------------------------------------------
ok "instance start mpi.sif $N" "$MPICTR" instance start "$W/mpi.sif" $N
check "... its socket, lock and directory in the private rendezvous directory" \
	test -S "$JDIR/inst-$N.sock" -a -f "$JDIR/inst-$N.lock" -a -d "$JDIR/inst-$N.run"
check "... the rendezvous directory is 0700 and ours" test "$(stat -c '%a %u' "$JDIR")" = "700 $MYUID"
ok "instance list" run list "$MPICTR" instance list
check "... shows the name, the image and no members" \
	grep -qE "^$N +$IMG/mpi.sif +[0-9-]+T[0-9:]+Z +0 " "$W/out.list"
ok "instance list --json" run json "$MPICTR" instance list --json
json_ok() {
	python3 -c 'import json,sys; v=[i for i in json.load(open(sys.argv[1])) if i["name"]==sys.argv[2]]; i=v[0]; assert i["image"]==sys.argv[3] and i["members"]==0 and i["pid"]>1 and i["linger"]==0 and i["job"] is None and i["start_time"]>0 and i["started"].endswith("Z")' \
		"$W/out.json" $N "$IMG/mpi.sif"
}
check "... valid JSON with name, image, started, members, pid, linger, job" json_ok
ok "exec instance://$N (first)" run ns0 "$MPICTR" exec instance://$N sh -c "$NSCMD"
ok "exec instance://$N (second)" run ns1 "$MPICTR" instance://$N sh -c "$NSCMD"
check "... both in the same user and mount namespace" in_ns ns1 1
check "... which are not the host's" test "$(cat "$W/out.ns0")" != "$HOSTNS"
ok "-e and --pwd apply per command" run env "$MPICTR" exec -e FOO=bar --pwd /opt instance://$N sh -c 'echo "$FOO $PWD"'
check "... FOO=bar in /opt" grep -qx "bar /opt" "$W/out.env"
ok_status "a missing command: 127" 127 "$MPICTR" exec instance://$N no-such-command

# ---- MPI inside -------------------------------------------------------------------
ok "mpictr -n 2 instance://$N hello" run n2 "$MPICTR" -n 2 instance://$N $B/hello
check "... 2 ranks of 2, allreduce ok" test "$(count n2 '^hello rank [01]/2 .* allreduce 1 ok')" = 2
check "... in the instance's namespaces" in_ns n2 2
check "... no job directory left in the instance's directory" test -z "$(ls -A "$JDIR/inst-$N.run")"
if command -v mpirun >/dev/null; then
	ok "mpirun -np 2 mpictr instance://$N hello" run mpirun mpirun -np 2 "$MPICTR" instance://$N $B/hello
	check "... 2 ranks of 2, in the instance's namespaces" in_ns mpirun 2
else
	need "mpirun -np 2 mpictr instance://$N hello" "the host's Open MPI (tests/deps/debian-packages.txt)"
fi
if slurm_up; then
	ok "srun -O --mpi=pmix -n 2 mpictr instance://$N hello" \
		run srun srun -O --mpi=pmix -n 2 "$MPICTR" instance://$N $B/hello
	check "... 2 ranks of 2, in the instance's namespaces" in_ns srun 2
	check "... no PMIx dstore error (the hash store, PMIX_SERVER_TMPDIR is not inside)" \
		bash -c "! grep -q 'PMIX ERROR' '$W/out.srun'"
	ok "srun -O --mpi=pmi2 -n 2 mpictr instance://$N hello-mpich" \
		run pmi2 srun -O --mpi=pmi2 -n 2 "$MPICTR" instance://$N $B/hello-mpich
	check "... 2 ranks of 2, in the instance's namespaces" in_ns pmi2 2
else
	need "srun mpictr instance://$N" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

# ---- refusals -------------------------------------------------------------------
refused() { # OPTION ARGS...: refused with 255, the message names OPTION
	local o=$1
	shift
	"$MPICTR" "$@" instance://$N true >"$W/out.ref" 2>&1
	local rc=$?
	[ $rc = 255 ] && grep -qF -- "$o cannot be used with instance://$N" "$W/out.ref" || { cat "$W/out.ref"; echo "rc $rc"; return 1; }
}
ok "-B is refused with instance://" refused -B/--bind exec -B /etc:/mnt
ok "--contain is refused with instance://" refused --contain --contain
ok "--fakeroot is refused with instance://" refused --fakeroot --fakeroot
ok "--devices is refused with instance://" refused --devices --devices=none
ok "--gpu is refused with instance://" refused --gpu --gpu
ok_status "a second instance of the same name: 255" 255 "$MPICTR" instance start "$W/tiny.sif" $N
cp "$T_OUT" "$W/out.last"
check "... says it exists" grep -q "instance '$N' already exists" "$W/out.last"
for bad in "a/b" ".x" "-x" "a b" "$(printf 'x%.0s' $(seq 33))" ""; do
	ok_status "invalid name '$bad': 255" 255 "$MPICTR" instance start "$W/tiny.sif" "$bad"
done
cp "$T_OUT" "$W/out.last"
check "... the message gives the rule" grep -q "invalid instance name" "$W/out.last"
ok_status "exec instance://a/b: 255" 255 "$MPICTR" exec instance://a/b true
ok_status "exec instance://nosuch$N: 255" 255 "$MPICTR" exec instance://nosuch$N true
cp "$T_OUT" "$W/out.last"
check "... names the instance" grep -q "no instance 'nosuch$N'" "$W/out.last"
ok_status "--linger outside instance start: 255" 255 "$MPICTR" exec --linger 3 "$W/tiny.sif" true

# ---- stop -------------------------------------------------------------------------
"$MPICTR" exec instance://$N sleep 300 >/dev/null 2>&1 &
MEMBER=$!
members_one() {
	local i
	for i in $(seq 50); do
		"$MPICTR" instance list --json | grep -q "\"name\": \"$N\".*\"members\": 1," && return 0
		sleep 0.1
	done
	"$MPICTR" instance list
	return 1
}
check "a running command counts as a member" members_one
ok "instance stop $N" "$MPICTR" instance stop $N
member_ended() { wait $MEMBER; [ $? = 143 ]; }
check "... the member was ended with SIGTERM (143)" member_ended
check "... nothing left (processes, socket, lock, directory)" gone $N
ok_status "... exec instance://$N afterwards: 255" 255 "$MPICTR" exec instance://$N true
ok_status "instance stop of a missing instance: 255" 255 "$MPICTR" instance stop $N

# A member in a nested user namespace (unshare -U inside the instance) is
# a member too: counted, and ended by stop (it survived both before:
# issue 23 item 4).
ok "instance start ${N}u" "$MPICTR" instance start "$W/tiny.sif" ${N}u
setsid -f "$MPICTR" exec instance://${N}u unshare -U sleep 301 >/dev/null 2>&1
nested_in() { # the sleep 301 runs in a user namespace nested in the instance's
	local p
	p=$(marked_procs 2>/dev/null | awk '$2 == "sleep" && $3 == 301 { print $1 }')
	[ -n "$p" ] && [ "$(readlink /proc/$p/ns/user)" != "$(readlink /proc/self/ns/user)" ] || return 1
	"$MPICTR" instance list --json | grep -q "\"name\": \"${N}u\".*\"members\": 1,"
}
nested_wait() { local i; for i in $(seq 50); do nested_in && return 0; sleep 0.1; done; "$MPICTR" instance list; return 1; }
check "... a member in a nested user namespace (unshare -U) counts as a member" nested_wait
ok "instance stop ${N}u" "$MPICTR" instance stop ${N}u
nested_left() { marked_procs 2>/dev/null | awk '$2 == "sleep" && $3 == 301'; }
check "... ended the nested member too" settle 50 nested_left
check "... nothing left" gone ${N}u

# A program in a container of the user sees the instances' sockets through
# the default /tmp bind: it cannot stop another instance of the user
# (issue 23 item 7: it did before), neither from a plain container nor from
# inside another instance; the user's own `mpictr exec` from the host, and
# a member joining its own instance, still work.
mkdir -p "$W/probe" && cp "$ROOT/build/tests/escape-probe" "$W/probe/"
ok "instance start ${N}t (the target) and ${N}w (with escape-probe bound)" bash -c \
	"'$MPICTR' instance start '$W/tiny.sif' ${N}t && '$MPICTR' instance start -B '$W/probe:/opt/escape' '$W/tiny.sif' ${N}w"
ok "a program in a plain container cannot stop ${N}t through its socket" run stop1 \
	"$MPICTR" -B "$W/probe:/opt/escape" "$W/tiny.sif" /opt/escape/escape-probe --inst-stop "$JDIR/inst-${N}t.sock"
check "... the keeper refused (EPERM)" grep -q "^BLOCKED inst-stop: the keeper answered status 1$" "$W/out.stop1"
ok "a program in instance ${N}w cannot stop ${N}t either" run stop2 \
	"$MPICTR" exec instance://${N}w /opt/escape/escape-probe --inst-stop "$JDIR/inst-${N}t.sock"
check "... refused" grep -q "^BLOCKED inst-stop" "$W/out.stop2"
ok "... nor stop its own instance ${N}w" run stop3 \
	"$MPICTR" exec instance://${N}w /opt/escape/escape-probe --inst-stop "$JDIR/inst-${N}w.sock"
check "... ${N}t and ${N}w still run" bash -c "'$MPICTR' instance list | grep -q '^${N}t ' && '$MPICTR' instance list | grep -q '^${N}w '"
ok "... the user's own exec instance://${N}t from the host still works" "$MPICTR" exec instance://${N}t true
ok "... and stop from the host" bash -c "'$MPICTR' instance stop ${N}t && '$MPICTR' instance stop ${N}w"
both_gone() { gone ${N}t && gone ${N}w; }
check "... nothing left" both_gone

ok "instance stop --all" bash -c "'$MPICTR' instance start '$W/tiny.sif' ${N}a && '$MPICTR' instance start '$W/tiny.sif' ${N}b && '$MPICTR' instance stop --all"
check "... both gone" bash -c "! '$MPICTR' instance list | grep -q '^$N[ab] ' && ! ls '$JDIR' | grep -q 'inst-$N[ab]\.'"

# ---- the API of embedders (the SPANK plugin): an instance ending with a
# process it is told to watch
EMBED=$ROOT/build/tests/embed_instance
if [ -x "$EMBED" ]; then
	sleep 300 &
	WATCHED=$!
	ok "mpictr_instance_start() watching pid $WATCHED" "$EMBED" start "$W/tiny.sif" ${N}w $WATCHED
	ok "mpictr_instance_list() (JSON)" run elist "$EMBED" list
	check "... lists it" grep -q "\"name\": \"${N}w\"" "$W/out.elist"
	kill $WATCHED
	wait $WATCHED 2>/dev/null
	check "... it ends when the watched process ends, leaving nothing" gone ${N}w
	ok_status "mpictr_instance_stop() of a missing instance: 255" 255 "$EMBED" stop ${N}w
else
	need "embedders' instance API" "build/tests/embed_instance missing (make check builds it)"
fi

# ---- the container options of the start apply to every joiner ------------
ok "instance start --contain -B $W:/data:ro" "$MPICTR" instance start --contain -B "$W:/data:ro" "$W/mpi.sif" ${N}c
ok "... exec: the start directory is the empty home, /data is bound" \
	run contain "$MPICTR" exec instance://${N}c sh -c 'echo "$PWD $(ls -A | wc -l)"; test -L /data/mpi.sif && echo DATA'
check "... (\$HOME empty, /data there)" bash -c "grep -qx '$HOME 0' '$W/out.contain' && grep -qx DATA '$W/out.contain'"
ok "... -n 2 hello (the job directory in the instance's directory, /tmp private)" \
	run contain2 "$MPICTR" -n 2 instance://${N}c $B/hello
check "... 2 ranks of 2" test "$(count contain2 '^hello rank [01]/2 .* allreduce 1 ok')" = 2
ok "... stop" "$MPICTR" instance stop ${N}c
check "... nothing left" gone ${N}c

# ---- --linger ---------------------------------------------------------------------
ok "instance start --linger 2" "$MPICTR" instance start --linger 2 "$W/tiny.sif" ${N}l
ok "run instance://${N}l a b (the image's runscript)" run rs "$MPICTR" run instance://${N}l a b
check "... the runscript ran with the arguments" grep -qx "runscript: a b" "$W/out.rs"
ok "... a member for 3 s" "$MPICTR" exec instance://${N}l sleep 3
check "... still there right after it left" bash -c "'$MPICTR' instance list | grep -q '^${N}l '"
lingered() {
	local i
	for i in $(seq 80); do
		"$MPICTR" instance list | grep -q "^${N}l " || return 0
		sleep 0.1
	done
	return 1
}
check "... gone 2 s after its last member (within 8 s)" lingered
check "... nothing left" gone ${N}l

# ---- SIGTERM to the keeper (what Slurm sends when it ends a job it tracks)
ok "instance start (to get SIGTERM)" "$MPICTR" instance start "$W/tiny.sif" ${N}k
"$MPICTR" exec instance://${N}k sleep 300 >/dev/null 2>&1 &
MEMBER=$!
keeper_of() { "$MPICTR" instance list --json | python3 -c 'import json,sys; print([i["pid"] for i in json.load(sys.stdin) if i["name"]==sys.argv[1]][0])' "$1"; }
settle 50 bash -c "'$MPICTR' instance list | grep -q '^${N}k .* 1 ' || echo waiting" >/dev/null
ok "kill -TERM of its keeper" kill -TERM "$(keeper_of ${N}k)"
check "... ends its member with SIGTERM (143)" member_ended
check "... and leaves nothing" gone ${N}k

# ---- a killed keeper ------------------------------------------------------------
ok "instance start (to be killed)" "$MPICTR" instance start "$W/mpi.sif" ${N}k
"$MPICTR" exec instance://${N}k sleep 300 >/dev/null 2>&1 &
MEMBER=$!
sleep 0.5
KEEPER=$(keeper_of ${N}k)
ok "kill -9 of its keeper ($KEEPER)" kill -9 "$KEEPER"
member_killed() { wait $MEMBER; [ $? = 137 ]; }
check "... its member is killed (137)" member_killed
check "... nothing left (holder, FUSE workers, socket, lock, directory)" gone ${N}k
ok_status "... the next joiner: 255" 255 "$MPICTR" exec instance://${N}k true
cp "$T_OUT" "$W/out.last"
check "... with an error naming the instance" grep -q "no instance '${N}k'" "$W/out.last"

# The keeper killed together with its sweeper (and holder): the socket,
# lock and directory stay until the next command finds them stale.
ok "instance start (to be killed with its sweeper)" "$MPICTR" instance start "$W/tiny.sif" ${N}k
KEEPER=$(keeper_of ${N}k)
# Stopped first: it must not see its holder die and end cleanly.
kill_all() { kill -STOP "$1" && kill -9 $(pgrep -P "$1") && kill -9 "$1"; }
ok "kill -9 of its keeper, its sweeper and its holder" kill_all "$KEEPER"
check "... its files stay behind" settle 50 bash -c "[ -S '$JDIR/inst-${N}k.sock' ] || echo gone"
ok_status "... the next joiner: 255" 255 "$MPICTR" exec instance://${N}k true
cp "$T_OUT" "$W/out.last"
check "... says its keeper was killed" grep -q "no instance '${N}k'.*its keeper was killed" "$W/out.last"
check "... and nothing is left" gone ${N}k

# A sweeper killed halfway leaves a lock and a directory without a socket.
orphans() { touch "$JDIR/inst-${N}o.lock" && mkdir "$JDIR/inst-${N}o.run" && "$MPICTR" instance list; }
ok "a lock and a directory without a socket: instance list" orphans
check "... removed them" gone ${N}o

# ---- a batch job ------------------------------------------------------------------
if slurm_up; then
	# The member escapes the batch script's process tree (setsid, its
	# parent gone): proctrack/linuxproc does not end it; the instance does.
	cat >"$W/job.sh" <<EOF
#!/bin/bash
"$MPICTR" instance start "$W/mpi.sif" ${N}b || exit 1
setsid -f "$MPICTR" exec instance://${N}b sleep 600 >/dev/null 2>&1
setsid -f "$MPICTR" exec instance://${N}b unshare -U sleep 602 >/dev/null 2>&1
srun -O --mpi=pmix -n 2 "$MPICTR" instance://${N}b $B/hello
"$MPICTR" instance list --json
EOF
	ok "sbatch: a batch script starts an instance, srun -n 2 hello in it" \
		run batch sbatch --wait -O -n 2 -o "$W/out.job" "$W/job.sh"
	check "... 2 ranks said hello, the instance knew its job" \
		bash -c "[ \$(grep -c '^hello rank [01]/2 .* allreduce 1 ok' '$W/out.job') = 2 ] && grep -q '\"job\": \"[0-9]' '$W/out.job'"
	check "... after the job: nothing left (keeper, members, socket, directory)" gone ${N}b
	nested_job_left() { marked_procs 2>/dev/null | awk '$2 == "sleep" && $3 == 602'; }
	check "... the member in a nested user namespace (unshare -U) ended with the job" settle 50 nested_job_left
else
	need "sbatch: an instance ends with its job" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

# ---- the job, not the step: an instance started in a step ends with the job
# No extern step here (no PrologFlags=Contain): in an salloc allocation the
# keeper follows the job through squeue (jobwatch.c), in a batch job
# through the batch step's slurmstepd. Bound: JOB_WATCH_POLL_S (5 s) after
# Slurm has the job ended, plus the stop (30 s in all).
job_gone() { settle 300 leftovers "$1"; }
# step_ns OUT: the NS lines of OUT are all one set, not the test's own
step_ns() {
	[ "$(grep -c '^NS ' "$W/out.$1")" -ge 1 ] &&
		[ "$(sed -n 's/^NS //p' "$W/out.$1" | sort -u | wc -l)" = 1 ] &&
		! grep -qxF "$HOSTNS" "$W/out.$1" || { cat "$W/out.$1"; return 1; }
}
if slurm_up; then
	cat >"$W/alloc.sh" <<EOF
#!/bin/bash
srun -n 1 "$MPICTR" instance start "$W/mpi.sif" ${N}s || exit 1
srun -n 1 "$MPICTR" exec instance://${N}s sh -c '$NSCMD'
srun -O --mpi=pmix -n 2 "$MPICTR" instance://${N}s sh -c '$NSCMD'
srun -O --mpi=pmix -n 2 "$MPICTR" instance://${N}s $B/hello
"$MPICTR" instance list --json
EOF
	chmod +x "$W/alloc.sh"
	ok "salloc: srun instance start, then three more steps use it" \
		run alloc salloc -n 2 "$W/alloc.sh"
	check "... it outlived the step that started it: the next steps ran in one container" step_ns alloc
	check "... 3 commands in it, 2 ranks said hello" \
		bash -c "[ \$(grep -c '^NS ' '$W/out.alloc') = 3 ] && [ \$(grep -c '^hello rank [01]/2 .* allreduce 1 ok' '$W/out.alloc') = 2 ]"
	check "... it knew its job" grep -q '"job": "[0-9]' "$W/out.alloc"
	check "... after the allocation ended: nothing left (keeper, socket, lock, directory)" job_gone ${N}s

	# scancel of an allocation whose instance has a member that left the
	# step's process tree (proctrack/linuxproc does not end it).
	cat >"$W/cancel.sh" <<EOF
#!/bin/bash
echo JOB \$SLURM_JOB_ID
srun -n 1 "$MPICTR" instance start "$W/tiny.sif" ${N}x || exit 1
srun -n 1 setsid -f "$MPICTR" exec instance://${N}x sleep 600 >/dev/null 2>&1
srun -n 1 sleep 600
EOF
	chmod +x "$W/cancel.sh"
	$T salloc -n 1 "$W/cancel.sh" >"$W/out.cancel" 2>&1 &
	ALLOC=$!
	member_in() { "$MPICTR" instance list | grep -qE "^$1 .* 1 +[0-9]+ +0 [0-9]+\$" || echo waiting; }
	check "salloc: an instance with a member, started in a step" settle 300 member_in ${N}x
	CJOB=$(sed -n 's/^JOB //p' "$W/out.cancel")
	ok "scancel $CJOB" scancel "$CJOB"
	wait $ALLOC 2>/dev/null
	check "... the instance and its member are gone, nothing left" job_gone ${N}x

	cat >"$W/stepjob.sh" <<EOF
#!/bin/bash
srun -n 1 "$MPICTR" instance start "$W/tiny.sif" ${N}t || exit 1
srun -n 1 "$MPICTR" exec instance://${N}t sh -c '$NSCMD'
srun -n 1 "$MPICTR" exec instance://${N}t sh -c '$NSCMD'
EOF
	ok "sbatch: srun instance start in a step, two more steps use it" \
		sbatch --wait -O -n 1 -o "$W/out.stepjob" "$W/stepjob.sh"
	check "... both ran" bash -c "[ \$(grep -c '^NS ' '$W/out.stepjob') = 2 ]"
	check "... in its container (one set of namespaces)" step_ns stepjob
	check "... after the job: nothing left" job_gone ${N}t

	ok_status "instance start in a job that is not running: 255" 255 \
		env SLURM_JOB_ID=2147480000 "$MPICTR" instance start "$W/tiny.sif" ${N}j
	cp "$T_OUT" "$W/out.last"
	check "... says so" grep -q "Slurm job 2147480000 is not running" "$W/out.last"
	check "... nothing left" gone ${N}j
else
	need "an instance ends with its job, not its step" "the Slurm cluster (sudo tests/slurm/cluster.sh start)"
fi

# ---- two nodes: one instance per node, MPI ranks join their node's ----------
if slurm_multi_up 2; then
	# Each node has a private /tmp (its rendezvous directory): the job
	# looks at both, before and after the stop.
	NODECMD='echo NODE $SLURMD_NODENAME $(readlink /proc/self/ns/user) $(readlink /proc/self/ns/mnt)'
	LEFTCMD='echo LEFT $SLURMD_NODENAME $(ls -A /tmp/mpictr-join-$(id -u) 2>/dev/null | grep -c "^inst-'${N}n'\.")'
	cat >"$W/nn.sh" <<EOF
#!/bin/bash
srun -N 2 -n 2 --ntasks-per-node=1 "$MPICTR" instance start "$W/mpi.sif" ${N}n || exit 1
srun -N 2 -n 2 --ntasks-per-node=1 "$MPICTR" exec instance://${N}n sh -c '$NODECMD'
srun -N 2 -n 4 --mpi=pmix "$MPICTR" instance://${N}n $B/hello
srun -N 2 -n 2 --ntasks-per-node=1 sh -c '$LEFTCMD'
srun -N 2 -n 2 --ntasks-per-node=1 "$MPICTR" instance stop ${N}n
srun -N 2 -n 2 --ntasks-per-node=1 sh -c '$LEFTCMD'
EOF
	chmod +x "$W/nn.sh"
	ok "two nodes: srun -N 2 instance start, srun -N 2 -n 4 --mpi=pmix instance://${N}n hello, srun -N 2 instance stop" \
		run nn env SLURM_CONF="$SLURM_CONF_MULTI" salloc -N 2 -n 4 "$W/nn.sh"
	check "... an instance on each node" bash -c "[ \"\$(sed -n 's/^NODE \([^ ]*\) .*/\1/p' '$W/out.nn' | sort | tr '\n' ' ')\" = 'node1 node2 ' ]"
	check "... 4 ranks of 4, allreduce ok" test "$(count nn '^hello rank [0-3]/4 .* allreduce 6 ok')" = 4
	# nn_ns NODE: the ranks on NODE ran in that node's instance
	nn_ns() {
		local want got
		want=$(sed -n "s/^NODE $1 //p" "$W/out.nn")
		got=$(sed -nE "s/^hello rank .* on $1 .* userns ([^ ]+) mntns ([^ ]+) .*/\1 \2/p" "$W/out.nn" | sort -u)
		[ -n "$want" ] && [ "$got" = "$want" ] || { echo "node $1: instance '$want', ranks '$got'"; return 1; }
	}
	check "... the ranks of node1 in node1's instance" nn_ns node1
	check "... the ranks of node2 in node2's instance" nn_ns node2
	check "... the instances are not one" bash -c "[ \$(sed -n 's/^NODE [^ ]* //p' '$W/out.nn' | sort -u | wc -l) = 2 ]"
	check "... before the stop: socket, lock and directory on each node" \
		bash -c "[ \"\$(grep '^LEFT' '$W/out.nn' | head -n 2 | sort | tr '\n' ' ')\" = 'LEFT node1 3 LEFT node2 3 ' ]"
	check "... after it: none on either node" \
		bash -c "[ \"\$(grep '^LEFT' '$W/out.nn' | tail -n 2 | sort | tr '\n' ' ')\" = 'LEFT node1 0 LEFT node2 0 ' ]"
	check "... and no process of it on either node" gone ${N}n
	# Without a stop: in an allocation (no batch step, no extern step)
	# each node's keeper follows the job through squeue.
	cat >"$W/nn2.sh" <<EOF
#!/bin/bash
srun -N 2 -n 2 --ntasks-per-node=1 "$MPICTR" instance start "$W/tiny.sif" ${N}m || exit 1
srun -N 2 -n 2 --ntasks-per-node=1 "$MPICTR" exec instance://${N}m sh -c '$NODECMD'
EOF
	chmod +x "$W/nn2.sh"
	ok "two nodes: an instance per node, started in a step, not stopped" \
		run nn2 env SLURM_CONF="$SLURM_CONF_MULTI" salloc -N 2 -n 2 "$W/nn2.sh"
	check "... it served the next step on both nodes" bash -c "[ \$(grep -c '^NODE node[12] ' '$W/out.nn2') = 2 ]"
	check "... after the job: no process of it on either node" job_gone ${N}m
	LEFTCMD=${LEFTCMD//${N}n/${N}m}
	ok "... nor its socket, lock or directory (a new job looks)" \
		run nn3 env SLURM_CONF="$SLURM_CONF_MULTI" srun -N 2 -n 2 --ntasks-per-node=1 sh -c "$LEFTCMD"
	check "... (none on node1 and node2)" bash -c "[ \"\$(grep '^LEFT' '$W/out.nn3' | sort | tr '\n' ' ')\" = 'LEFT node1 0 LEFT node2 0 ' ]"
else
	need "two nodes: an instance per node" "the 2-node cluster (sudo tests/slurm/cluster.sh start --nodes 2)"
fi

# ---- the image file deleted or replaced after the start: joiners plan
# from the file the instance holds open
cp "$IMG/mpi.sif" "$W/own.sif"
ok "instance start own.sif (a copy)" "$MPICTR" instance start "$W/own.sif" ${N}r
printf 'not an image\n' >"$W/junk" && mv "$W/junk" "$W/own.sif"
ok "own.sif replaced by another file: exec instance://${N}r" \
	run rep "$MPICTR" exec instance://${N}r sh -c "test -x $B/hello && $NSCMD"
check "... ran in the instance" step_ns rep
rm -f "$W/own.sif"
ok "own.sif deleted: mpictr -n 2 instance://${N}r hello" run repn "$MPICTR" -n 2 instance://${N}r $B/hello
check "... 2 ranks of 2" test "$(count repn '^hello rank [01]/2 .* allreduce 1 ok')" = 2
ok "... mpictr run -n 1 instance://${N}r (its runscript, from the held file)" run reprs "$MPICTR" run -n 1 instance://${N}r
check "... ran hello" grep -q '^hello rank 0/1 .* ok' "$W/out.reprs"
ok "... instance list still names the image's path" bash -c "'$MPICTR' instance list | grep -qE '^${N}r +$W/own.sif '"
ok "... stop" "$MPICTR" instance stop ${N}r
check "... nothing left" gone ${N}r

# ---- the UCX query runs once, at the start: joiners take its answer ---------
# (a fake IB node and a fake helper that counts its runs and names a device
# sysfs does not know, as in 55-devices.sh)
bash "$ROOT/tests/fixtures/mkfakesys.sh" "$W/ib" mlx5 >/dev/null 2>&1
printf '#!/bin/sh\necho run >>"%s"\necho "md=mpictrfake0 tl=rc_mlx5 dev=mpictrfake0:1 type=net"\n' "$W/ucx.count" >"$W/fakeucx"
chmod +x "$W/fakeucx"
export MPICTR_SYSROOT=$W/ib MPICTR_TEST_UCX_QUERY=$W/fakeucx
ok "instance start on an IB node" "$MPICTR" instance start "$W/tiny.sif" ${N}u
ucx_joiners() {
	local job=$((500000 + $$ % 90000)) i
	for i in 0 1; do
		SLURM_JOB_ID=$job SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_STEP_TASKS_PER_NODE=2 \
			$T "$MPICTR" instance://${N}u sh -c 'echo $UCX_NET_DEVICES' >"$W/ucx.$i" &
	done
	wait
	$T "$MPICTR" exec instance://${N}u sh -c 'echo $UCX_NET_DEVICES' >"$W/ucx.2"
	cat "$W"/ucx.? "$W/ucx.count"
	[ "$(cat "$W"/ucx.? | sort | uniq -c | awk '{ print $1, $2 }')" = "3 mpictrfake0:1" ] && [ "$(wc -l <"$W/ucx.count")" = 1 ]
}
ok "... 2 join-mode tasks and an exec get its UCX_NET_DEVICES; the helper ran once" ucx_joiners
unset MPICTR_SYSROOT MPICTR_TEST_UCX_QUERY
ok "... stop" "$MPICTR" instance stop ${N}u
check "... nothing left" gone ${N}u

done_testing
