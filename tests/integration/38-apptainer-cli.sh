#!/bin/bash
# 38-apptainer-cli.sh - what an Apptainer or Enroot user types on day one:
# `mpictr shell` (through a pseudo-terminal), `mpictr inspect [--json]` on
# a SIF, a squashfs and a directory, --cleanenv, -C/--containall,
# --env-file, --home, --no-home, --nv/--rocm, APPTAINERENV_/SINGULARITYENV_
# variables, APPTAINER_/SINGULARITY_ names inside, an Enroot image's
# /etc/environment and /etc/rc, and the errors that teach (did you mean,
# a peer's option, an option after IMAGE).
. "$(dirname "$0")/lib.sh"

T="timeout -k 5 60"
require_userns_fuse
require_images tiny
cd "$T_TMP" || exit 1
private_tmpdir
SIF=$IMG/tiny.sif

# ---- shell, through a pseudo-terminal -------------------------------
cat >"$T_TMP/ptydrive.py" <<'EOF'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def read(t):
    global out
    end = time.time() + t
    while time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return
            if not d:
                return
            out += d
read(3)
os.write(fd, b"[ -t 0 ] && echo on-a-tty; echo in-$APPTAINER_NAME-$TINY_IMAGE\n")
read(2)
os.write(fd, b"exit 7\n")
read(3)
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
print("\nstatus", os.waitstatus_to_exitcode(st))
EOF
ok "shell tiny.sif through a pty" bash -c "$T python3 '$T_TMP/ptydrive.py' '$MPICTR' shell '$SIF' >'$T_TMP/sh.out' 2>&1"
check "... the prompt says where you are" grep -q 'mpictr tiny.sif:' "$T_TMP/sh.out"
check "... interactive, on the terminal, env scripts sourced" grep -q 'in-tiny.sif-1' "$T_TMP/sh.out"
check "... stdin is the terminal" grep -q '^on-a-tty' "$T_TMP/sh.out"
check "... the shell's exit status is mpictr's" grep -q '^status 7' "$T_TMP/sh.out"
ok "shell --shell /bin/ash" bash -c "$T python3 '$T_TMP/ptydrive.py' '$MPICTR' shell --shell /bin/ash '$SIF' | grep -q '^status 7'"
ok_status "shell IMAGE COMMAND: exit 255 with a hint" 255 "$MPICTR" shell "$SIF" ls
ok_status "--shell outside 'shell': exit 255" 255 "$MPICTR" --shell /bin/sh "$SIF" true
# Several ranks of an interactive shell make no sense: refused before
# anything starts (no shell prompt), under --dry-run too.
ok_status "shell -n 4: exit 255" 255 $T "$MPICTR" shell -n 4 "$SIF" </dev/null
cp "$T_OUT" "$T_TMP/last"
check "... says why and what to use" grep -q "'mpictr shell' starts one interactive shell, not -n 4 .*hint: mpictr -n 4 IMAGE COMMAND" "$T_TMP/last"
check "... and started no shell" sh -c "! grep -q 'mpictr tiny.sif:' '$T_TMP/last'"
ok_status "shell -n 4 --dry-run: exit 255 too" 255 $T "$MPICTR" shell -n 4 --dry-run "$SIF"
ok "shell -n 1 --dry-run: one shell is fine" sh -c "$T '$MPICTR' shell -n 1 --dry-run '$SIF' | jq -e '.shell.interactive' >/dev/null"
ok "shell --dry-run: the plan says a shell (chosen in the image), exec says none" \
	sh -c "$T '$MPICTR' shell --dry-run '$SIF' | jq -e '.shell == {\"path\": null, \"interactive\": true} and .mode == \"single\"' >/dev/null &&
		$T '$MPICTR' shell --shell /bin/ash --dry-run '$SIF' | jq -e '.shell.path == \"/bin/ash\"' >/dev/null &&
		$T '$MPICTR' exec --dry-run '$SIF' true | jq -e '.shell == null' >/dev/null"
ok_status "-n 4 shell IMAGE (the verb after options): exit 255" 255 $T "$MPICTR" -n 4 shell "$SIF" </dev/null
cp "$T_OUT" "$T_TMP/last"
check "... says the verb comes first" grep -q "'shell' after options: the verb comes first ('mpictr shell \[OPTIONS\] ...')" "$T_TMP/last"

# ---- inspect ---------------------------------------------------------
for f in tiny.sif tiny.sqfs tiny; do
	ok "inspect --json $f: labels, env scripts, runscript" \
		bash -c "'$MPICTR' inspect --json '$IMG/$f' | jq -e '.labels[\"org.mpictr.test.image\"] == \"tiny\" and ([.environment[].path] == [\"/.singularity.d/env/10-tiny.sh\", \"/.singularity.d/env/90-environment.sh\"]) and (.runscript | test(\"runscript: \"))'"
done
ok "inspect --json tiny.sif: its SIF objects" bash -c "'$MPICTR' inspect --json '$SIF' | jq -e '.image.kind == \"sif\" and (.sif_objects | length) >= 1 and .sif_objects[0].type == \"FS\"'"
ok "inspect --json tiny (directory): no SIF objects" bash -c "'$MPICTR' inspect --json '$IMG/tiny' | jq -e '.image.kind == \"dir\" and .sif_objects == null'"
ok "inspect (text): sections" bash -c "'$MPICTR' inspect '$SIF' | grep -q '^== runscript ==' && '$MPICTR' inspect '$SIF' | grep -q '^== SIF objects =='"
ok_status "inspect of a missing image: 255" 255 "$MPICTR" inspect "$T_TMP/none.sif"
mkdir -p "$T_TMP/badlab/.singularity.d" && echo '{"a": [1, 2' >"$T_TMP/badlab/.singularity.d/labels.json"
ok "inspect --json: labels that are not JSON come as a string, the output stays JSON" \
	bash -c "'$MPICTR' inspect --json '$T_TMP/badlab' | jq -e '.labels | type == \"string\"'"

# ---- flags and variables ---------------------------------------------
ok "APPTAINERENV_, SINGULARITYENV_, MPICTR_ENV_ set inside (Apptainer's wins over Singularity's)" \
	bash -c "APPTAINERENV_FOO=a SINGULARITYENV_FOO=s SINGULARITYENV_BAR=b MPICTR_ENV_BAZ=m $T '$MPICTR' '$SIF' sh -c 'echo \$FOO \$BAR \$BAZ' | grep -qx 'a b m'"
ok "... the prefixed variables themselves are not passed" \
	bash -c "APPTAINERENV_FOO=a $T '$MPICTR' '$SIF' env | grep -c ENV_FOO | grep -qx 0"
ok "APPTAINER_CONTAINER, APPTAINER_NAME, SINGULARITY_CONTAINER, SINGULARITY_NAME inside" \
	bash -c "$T '$MPICTR' '$SIF' sh -c 'echo \$APPTAINER_CONTAINER \$APPTAINER_NAME \$SINGULARITY_CONTAINER \$SINGULARITY_NAME' | grep -qx '$SIF tiny.sif $SIF tiny.sif'"
printf '# comment\n\nexport QUX="q v"\nFOO=file\n' >"$T_TMP/env.list"
ok "--env-file: NAME=VALUE lines; it wins over APPTAINERENV_, --env wins over it" \
	bash -c "APPTAINERENV_FOO=a APPTAINERENV_ZZ=z $T '$MPICTR' --env-file '$T_TMP/env.list' -e QUX=e '$SIF' sh -c 'echo \$FOO \$QUX \$ZZ' | grep -qx 'file e z'"
echo 'not a pair' >"$T_TMP/bad.list"
ok "--env-file: a bad line is named (file and line)" bash -c "'$MPICTR' --env-file '$T_TMP/bad.list' '$SIF' true 2>&1 | grep -q \"env file '$T_TMP/bad.list', line 1\""
ok "--cleanenv: host variables gone, HOME, USER, TERM and the launcher's kept" \
	bash -c "XYZ=1 SLURM_FOO=2 TERM=dumb $T '$MPICTR' --cleanenv '$SIF' sh -c 'echo x\$XYZ \$SLURM_FOO \$TERM \$HOME \$USER' | grep -qx 'x 2 dumb $HOME $(id -un)'"
ok "-e stays --env (not Apptainer's -e = --cleanenv)" bash -c "XYZ=1 $T '$MPICTR' -e A=1 '$SIF' sh -c 'echo \$XYZ\$A' | grep -qx 11"
mkdir -p "$T_TMP/h" && echo mine >"$T_TMP/h/file"
ok "--home SRC:DST: SRC at DST, HOME=DST" bash -c "$T '$MPICTR' --home '$T_TMP/h:/home/me' --pwd / '$SIF' sh -c 'echo \$HOME; cat ~/file' | tr '\n' ' ' | grep -qx '/home/me mine '"
ok "--home SRC: at the user's home path" bash -c "$T '$MPICTR' --home '$T_TMP/h' --pwd / '$SIF' cat '$HOME/file' | grep -qx mine"
ok_status "--home with a relative DST: 255" 255 "$MPICTR" --home "$T_TMP/h:rel" "$SIF" true
ok "--no-home: the home directory is not bound" bash -c "$T '$MPICTR' --no-home --pwd / '$SIF' sh -c 'test -e \"$HOME\" && echo bound || echo absent' | grep -qx absent"
ok "-C/--containall: empty home, private /tmp and a clean environment" \
	bash -c "touch /tmp/h24-mark-$$; XYZ=1 $T '$MPICTR' -C '$SIF' sh -c 'ls -A \$HOME | wc -l; ls /tmp/h24-mark-$$ 2>/dev/null | wc -l; echo x\$XYZ' | tr '\n' ' ' | grep -qx '0 0 x '; rc=\$?; rm -f /tmp/h24-mark-$$; exit \$rc"
ok "--nv and --rocm are --gpu (the plan is the same)" \
	bash -c "a=\$('$MPICTR' --dry-run --gpu '$SIF' true | jq -c .mounts); b=\$('$MPICTR' --dry-run --nv '$SIF' true | jq -c .mounts); c=\$('$MPICTR' --dry-run --rocm '$SIF' true | jq -c .mounts); [ \"\$a\" = \"\$b\" ] && [ \"\$a\" = \"\$c\" ]"

# ---- an Enroot image -------------------------------------------------
cp -a "$IMG/tiny" "$T_TMP/enroot" && chmod -R u+w "$T_TMP/enroot" && rm -rf "$T_TMP/enroot/.singularity.d" "$T_TMP/enroot/singularity" "$T_TMP/enroot/environment"
mkdir -p "$T_TMP/enroot/opt/enr/bin"
printf '#!/bin/sh\necho enroot-tool "$ENR_VAR"\n' >"$T_TMP/enroot/opt/enr/bin/enrtool" && chmod 755 "$T_TMP/enroot/opt/enr/bin/enrtool"
printf 'PATH=/opt/enr/bin:/usr/bin:/bin\nENR_VAR="from etc environment"\n' >"$T_TMP/enroot/etc/environment"
printf 'echo "rc: $*"\nif [ $# -gt 0 ]; then exec "$@"; else exec /bin/sh; fi\n' >"$T_TMP/enroot/etc/rc"
mksquashfs "$T_TMP/enroot" "$T_TMP/enroot.sqsh" -noappend -quiet >/dev/null 2>&1
for f in enroot enroot.sqsh; do
	ok "Enroot image ($f): PATH and variables from /etc/environment" bash -c "$T '$MPICTR' '$T_TMP/$f' enrtool | grep -qx 'enroot-tool from etc environment'"
	ok "Enroot image ($f): run uses /etc/rc as the entrypoint" bash -c "$T '$MPICTR' run '$T_TMP/$f' enrtool | tr '\n' ' ' | grep -qx 'rc: enrtool enroot-tool from etc environment '"
done
ok "Enroot image: --env wins over /etc/environment" bash -c "$T '$MPICTR' -e ENR_VAR=mine '$T_TMP/enroot' enrtool | grep -qx 'enroot-tool mine'"
ok "Enroot image: inspect shows /etc/environment and /etc/rc" bash -c "'$MPICTR' inspect --json '$T_TMP/enroot.sqsh' | jq -e '(.config.enroot_environment | test(\"ENR_VAR\")) and (.config.enroot_entrypoint | test(\"rc: \"))'"
ok "an Apptainer image's /etc/environment is not read (it has /.singularity.d)" bash -c "$T '$MPICTR' '$SIF' sh -c 'echo x\$ENR_VAR' | grep -qx x"

# ---- errors that teach ------------------------------------------------
ok_status "a mistyped verb: 255" 255 "$MPICTR" shel "$SIF"
ok "... did you mean 'shell'" bash -c "'$MPICTR' shel '$SIF' 2>&1 | grep -q \"unknown verb 'shel' (did you mean 'shell'?)\""
ok "a peer's verb (build) says what mpictr does" bash -c "'$MPICTR' build x.sif x.def 2>&1 | grep -q \"unknown verb 'build': mpictr builds no images\""
ok "a mistyped option: did you mean" bash -c "'$MPICTR' --bnd /x '$SIF' true 2>&1 | grep -q \"unknown option '--bnd' (did you mean '--bind'?)\""
ok "Apptainer's --writable (not taken as --writable-tmpfs): mpictr's way" bash -c "'$MPICTR' --writable '$SIF' true 2>&1 | grep -q \"unknown option '--writable': .*--writable-tmpfs or --overlay DIR\""
ok "Enroot's --rw: --writable-tmpfs" bash -c "'$MPICTR' --rw '$SIF' true 2>&1 | grep -q 'use --writable-tmpfs'"
ok "Pyxis's --container-mounts: -B" bash -c "'$MPICTR' --container-mounts=/a:/b '$SIF' true 2>&1 | grep -q 'use -B/--bind'"
ok "--sharens: not needed" bash -c "'$MPICTR' --sharens '$SIF' true 2>&1 | grep -q 'all ranks of a node share one container by default'"
ok_status "an option after IMAGE: 255" 255 "$MPICTR" "$SIF" --pwd / true
ok "... options go before the image" bash -c "'$MPICTR' '$SIF' --pwd / true 2>&1 | grep -q \"'--pwd' comes after IMAGE '$SIF': options go before the image\""
ok "run IMAGE --flag: the runscript's argument, not an error" bash -c "$T '$MPICTR' run '$SIF' --pwd | grep -qx 'runscript: --pwd'"
# ---- mpirun habits and Apptainer's short and global flags (issue 33) --
# Each failed on the old code: -np 3 said "invalid rank count 'p'", --np
# (no --timeout: an unknown option),
# suggested --nv, -n 3 on fewer cores said nothing, -H/-f/-w were unknown
# or hintless, -e took IMAGE as a variable, `mpictr -q exec` was refused.
CORES=$(t_cores)
N=$((CORES + 1))
ok "-np 2 (mpirun's spelling) runs 2 ranks" bash -c "$T '$MPICTR' -np 2 '$SIF' sh -c 'echo r\$PMIX_RANK' | sort | tr '\n' ' ' | grep -qx 'r0 r1 '"
ok "--np 2 as well" bash -c "$T '$MPICTR' --np 2 '$SIF' sh -c 'echo r\$PMIX_RANK' | sort | tr '\n' ' ' | grep -qx 'r0 r1 '"
ok "-np2 as well" bash -c "$T '$MPICTR' -np2 '$SIF' true"
ok "-n $N on $CORES cores: runs, and says so once" \
	bash -c "$T '$MPICTR' -n $N '$SIF' true 2>'$T_TMP/over.err' && [ \"\$(grep -c 'oversubscribe them' '$T_TMP/over.err')\" = 1 ]"
ok "-n $CORES: nothing said" bash -c "$T '$MPICTR' -n $CORES '$SIF' true 2>&1 | grep -c oversubscribe | grep -qx 0"
ok_status "-n $N --no-oversubscribe: refused (255), as mpirun" 255 $T "$MPICTR" -n $N --no-oversubscribe "$SIF" true
cp "$T_OUT" "$T_TMP/last"
check "... naming the cores and the option" grep -q "more ranks than the $CORES cores this node may use, and --no-oversubscribe refuses" "$T_TMP/last"
ok "-H SRC:DST is --home (Apptainer's short flag)" bash -c "$T '$MPICTR' exec -H '$T_TMP:/home/h' '$SIF' sh -c 'echo \$HOME' | grep -qx /home/h"
ok "-f is --fakeroot" bash -c "$T '$MPICTR' exec -f '$SIF' id -u | grep -qx 0"
ok_status "-w: refused (255)" 255 "$MPICTR" exec -w "$SIF" true
cp "$T_OUT" "$T_TMP/last"
check "... with the hint: Apptainer's -w is --writable, use --writable-tmpfs" grep -q "Apptainer's -w is --writable" "$T_TMP/last"
ok_status "-e IMAGE (Apptainer's --cleanenv): refused (255)" 255 "$MPICTR" exec -e "$SIF" true
cp "$T_OUT" "$T_TMP/last"
check "... the error says mpictr's -e is --env" grep -q "mpictr's -e is --env, Apptainer's -e is --cleanenv" "$T_TMP/last"
ok_status "-n 2 --timeout 2, rank 1 sleeps: the job ends with 124" 124 \
	$T "$MPICTR" -n 2 --timeout 2 "$SIF" sh -c 'if [ "$PMIX_RANK" = 1 ]; then sleep 60; fi; echo done'
cp "$T_OUT" "$T_TMP/last"
check "... naming the rank still running" grep -q "error: --timeout 2 s passed: rank 1 still running (of 2); ending the job" "$T_TMP/last"
ok "... within a few seconds (SIGTERM, not the 60 s sleep)" bash -c "s=\$(date +%s); $T '$MPICTR' -n 2 --timeout 1 '$SIF' sleep 60 >/dev/null 2>&1; [ \$((\$(date +%s) - s)) -lt 10 ]"
ok_status "exec --timeout 1 sleep 30: 124" 124 $T "$MPICTR" exec --timeout 1 "$SIF" sleep 30
ok_status "--timeout x: a usage error (255)" 255 "$MPICTR" exec --timeout x "$SIF" true
ok_status "inspect --runscript IMAGE (Apptainer's section flag): 255" 255 "$MPICTR" inspect --runscript "$SIF"
cp "$T_OUT" "$T_TMP/last"
check "... says every section is printed, and where --json has it" grep -q "inspect prints every section at once (no '--runscript').*\.runscript" "$T_TMP/last"
# (not run for real: -a stops every instance of the test user, other
# tests' too)
ok_status "instance stop -a NAME: a usage error that names -a (255)" 255 "$MPICTR" instance stop -a extra
cp "$T_OUT" "$T_TMP/last"
check "... usage: instance stop NAME|-a|--all" grep -q "usage: instance stop NAME|-a|--all" "$T_TMP/last"
ok "mpictr -q exec IMAGE (a global flag before the verb)" bash -c "$T '$MPICTR' -q exec '$SIF' echo hi | grep -qx hi"
ok "mpictr -v run IMAGE: -v applies" bash -c "$T '$MPICTR' -v run '$SIF' 2>&1 | grep -q '^mpictr: mode single'"
ok "mpictr -d exec IMAGE: -d is -v" bash -c "$T '$MPICTR' -d exec '$SIF' true 2>&1 | grep -q '^mpictr: mode single'"

ok "nothing left running" settle 50 marked_procs
done_testing
