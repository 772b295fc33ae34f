#!/bin/bash
# 25-pull-run.sh - a pulled image's config at run time: `run` = Entrypoint
# + (arguments or Cmd) in WorkingDir unless --pwd (exec: the current
# directory), the image's Env (the host's values, -e and the transport
# variables win; PATH is the image's), a non-root User noticed and ignored, an
# image without /bin/sh, --dry-run; the /.singularity.d files source
# under busybox sh; the MPI hello from a pulled image under -n 2.
. "$(dirname "$0")/lib.sh"
W=$T_TMP
T="timeout 120"
require_userns
require_fuse
for tool in umoci busybox; do
	command -v "$tool" >/dev/null || { need "pull run tests" "$tool not installed"; done_testing; exit; }
done
saved() { cp "$T_OUT" "$W/last"; }
cd "$W" || exit 1

# bb: busybox with echo/env/pwd/sh links, Env PATH=/bin GREETING=hello
# UCX_TLS=from-image, Entrypoint /bin/echo, Cmd default-cmd, WorkingDir
# /data (not in the layers), User 1000.
mkimg() { # NAME ROOTFS-SETUP CONFIG-ARGS...
	local n=$1 setup=$2
	shift 2
	umoci init --layout "$n" && umoci new --image "$n:latest" &&
		umoci unpack --rootless --image "$n:latest" "$n.b" >/dev/null &&
		mkdir -p "$n.b/rootfs/bin" && cp "$(command -v busybox)" "$n.b/rootfs/bin/" &&
		(cd "$n.b/rootfs/bin" && eval "$setup") &&
		umoci repack --image "$n:latest" "$n.b" &&
		umoci config --image "$n:latest" "$@"
}
ok "image with Entrypoint, Cmd, Env, WorkingDir, User" mkimg bb \
	'for l in sh echo env pwd cat; do ln -s busybox $l; done' \
	--config.env PATH=/bin --config.env GREETING=hello --config.env UCX_TLS=from-image \
	--config.entrypoint /bin/echo --config.cmd default-cmd --config.workingdir /data \
	--config.user 1000 --config.exposedports 8080/tcp --config.volume /vol \
	--config.stopsignal SIGINT --config.label 'org.opencontainers.image.title=bb tool' \
	--config.label "org.x.nl=a$(printf '\nEnv: FORGED')"
ok "pull it" $T "$MPICTR" pull -q oci:bb:latest bb.sif

# inspect reads the config the pull kept (oci-config.json), field by field.
ok "inspect --json: the image config's fields" sh -c "$T '$MPICTR' inspect --json bb.sif >insp.json"
check "... Entrypoint, Cmd, Env, WorkingDir, User, ExposedPorts, Volumes, StopSignal, Labels" \
	jq -e '.config.oci as $o | $o.entrypoint == ["/bin/echo"] and $o.cmd == ["default-cmd"] and
		$o.env == ["PATH=/bin", "GREETING=hello", "UCX_TLS=from-image"] and $o.working_dir == "/data" and
		$o.user == "1000" and $o.user_ignored and $o.exposed_ports == ["8080/tcp"] and $o.volumes == ["/vol"] and
		$o.stop_signal == "SIGINT" and $o.labels["org.opencontainers.image.title"] == "bb tool" and
		.config.oci_error == null and .labels["org.opencontainers.image.title"] == "bb tool"' insp.json
ok "inspect (text): one line per field" sh -c "$T '$MPICTR' inspect bb.sif >insp.txt"
check "... Entrypoint, Env, WorkingDir, User (ignored), ExposedPorts, Volumes, StopSignal, Labels" sh -c '
	grep -qx "== image config (oci-config.json) ==" insp.txt && grep -qx "Entrypoint: \[\"/bin/echo\"\]" insp.txt &&
	grep -qx "Cmd: \[\"default-cmd\"\]" insp.txt && grep -qx "Env: GREETING=hello" insp.txt &&
	grep -qx "WorkingDir: /data" insp.txt && grep -q "^User: 1000 (ignored" insp.txt &&
	grep -qx "ExposedPorts: 8080/tcp" insp.txt && grep -qx "Volumes: /vol" insp.txt &&
	grep -qx "StopSignal: SIGINT" insp.txt && grep -qx "Labels: org.opencontainers.image.title=bb tool" insp.txt'
check "... a control character in a value is shown as '?' (no forged line)" \
	sh -c 'grep -qx "Labels: org.x.nl=a?Env: FORGED" insp.txt && ! grep -qx "Env: FORGED" insp.txt'
# A corrupt oci-config.json (same length, no longer JSON): inspect still
# shows the image and says what is wrong with the config.
ok "a SIF with a corrupt oci-config.json" python3 -c '
import sys
b = open("bb.sif", "rb").read(); o = b"\"WorkingDir\":\"/data\""
assert b.count(o) == 1
open("badcfg.sif", "wb").write(b.replace(o, b"\"WorkingDir\":/data\"\""))'
ok "... inspect --json: the error, the raw text, the rest of the image" \
	sh -c "$T '$MPICTR' inspect --json badcfg.sif | jq -e '(.config.oci_error | test(\"oci-config.json: invalid JSON\")) and .config.oci == null and (.config.sif_json | type) == \"string\" and (.runscript | test(\"/bin/echo\"))'"
ok "... inspect (text) says it is unreadable" \
	sh -c "$T '$MPICTR' inspect badcfg.sif | grep -q '^== image config (oci-config.json, unreadable: oci-config.json: invalid JSON'"

ok "run: Entrypoint + Cmd" sh -c "$T '$MPICTR' run bb.sif 2>&1 | grep -qx default-cmd"
ok "run ARGS: Entrypoint + the arguments" sh -c "$T '$MPICTR' run bb.sif a 'b c' | grep -qx 'a b c'"
ok "exec ignores the Entrypoint" sh -c "$T '$MPICTR' exec bb.sif echo hi | grep -qx hi"
# exec starts where you are and the host's variables win over the image's
# Env (PATH excepted), as under Apptainer (issue 33: both failed before).
ok "exec starts in the current directory, not WorkingDir (as Apptainer)" \
	sh -c "$T '$MPICTR' exec bb.sif pwd | grep -qx '$W'"
ok "... so a file of the current directory is found by its name" \
	sh -c "echo here >myfile && $T '$MPICTR' exec bb.sif cat myfile | grep -qx here"
check "WorkingDir (missing in the layers) was created" \
	sh -c "$T '$MPICTR' exec --pwd /data bb.sif pwd | grep -qx /data"
ok "run starts the Entrypoint in WorkingDir (--dry-run)" \
	sh -c "$T '$MPICTR' run --dry-run bb.sif | jq -e '.cwd == \"/data\"' >/dev/null"
ok "--pwd wins over WorkingDir" sh -c "$T '$MPICTR' run --dry-run --pwd / bb.sif | jq -e '.cwd == \"/\"' >/dev/null"
ok "the image's Env reaches the command (GREETING, PATH)" \
	sh -c "env -u GREETING $T '$MPICTR' exec bb.sif env >env.out && grep -qx GREETING=hello env.out && grep -qx PATH=/bin env.out"
ok "the host's value wins over the image's Env (as Apptainer)" \
	sh -c "GREETING=host $T '$MPICTR' exec bb.sif env | grep -qx GREETING=host"
ok "... an empty host value does not" \
	sh -c "GREETING= $T '$MPICTR' exec bb.sif env | grep -qx GREETING=hello"
ok "... the image's PATH still wins over the container default" \
	sh -c "$T '$MPICTR' exec bb.sif env | grep -qx PATH=/bin"
ok "-e wins over the image's Env" \
	sh -c "$T '$MPICTR' exec -e GREETING=x bb.sif env | grep -qx GREETING=x"
ok "-e PATH wins over the image's PATH" \
	sh -c "$T '$MPICTR' exec -e PATH=/bin:/x bb.sif env | grep -qx PATH=/bin:/x"
ok_status "non-root User: still runs (as you)" 0 $T "$MPICTR" exec bb.sif true
saved
# Quiet by default (issue 33: the notice came on every run of a registry
# image, naming the cache path); -v says it.
check "... and says nothing about it by default" test ! -s "$W/last"
ok "... -v says the User is ignored" sh -c "$T '$MPICTR' exec -v bb.sif true 2>&1 | grep -q \"User '1000' is ignored\""
ok "--dry-run shows what came from the image" sh -c "$T '$MPICTR' run --dry-run bb.sif >dry.json"
check "... entrypoint, cmd, env, working_dir, user_ignored" \
	sh -c 'jq -e ".image_config.entrypoint == [\"/bin/echo\"] and .image_config.cmd == [\"default-cmd\"] and
		(.image_config.env | index(\"GREETING=hello\")) and .image_config.working_dir == \"/data\" and
		.image_config.user_ignored and .command == [\"/bin/echo\", \"default-cmd\"] and .cwd == \"/data\"" dry.json'
ok "the transport variables win over the image's Env (UCX_TLS, -n 2 --no-share)" \
	sh -c "$T '$MPICTR' -n 2 --no-share --dry-run bb.sif env | jq -e 'any(.env[]; startswith(\"UCX_TLS=^cma\")) and (.env | index(\"UCX_TLS=from-image\") | not)' >/dev/null"
ok "... while the image's value stays where mpictr sets none" \
	sh -c "$T '$MPICTR' -n 2 --dry-run bb.sif env | jq -e '.env | index(\"UCX_TLS=from-image\")' >/dev/null"
ok "/.singularity.d env file and runscript source cleanly under busybox sh" \
	sh -c "$T '$MPICTR' exec bb.sif sh -ec '. /.singularity.d/env/10-docker2singularity.sh; [ \"\$GREETING\" = hello ]; /.singularity.d/runscript x y' | grep -qx 'x y'"
ok "Apptainer's action scripts run under busybox sh (actions/run, actions/exec)" \
	sh -c "$T '$MPICTR' exec bb.sif /.singularity.d/actions/run p q | grep -qx 'p q' &&
		$T '$MPICTR' exec bb.sif /.singularity.d/actions/exec sh -c 'echo \$GREETING' | grep -qx hello"
ok "the runscript with no arguments runs Entrypoint + Cmd" \
	sh -c "$T '$MPICTR' exec bb.sif /.singularity.d/runscript | grep -qx default-cmd"

# A setuid-root binary that mpictr pull keeps (owner 0, mode 4755: what a
# rootless unpack could not keep) gives no privilege at run time.
python3 - "$(command -v busybox)" suid.tar <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as t:
    i = t.gettarinfo(sys.argv[1], "bin/busybox.suid")
    i.uid = i.gid = 0; i.uname = i.gname = "root"; i.mode = 0o4755
    t.addfile(i, open(sys.argv[1], "rb"))
EOF
ok "a layer with a setuid-root busybox" umoci raw add-layer --image bb:latest --tag suid suid.tar
ok "pull it" $T "$MPICTR" pull -q oci:bb:suid suid.sif
ok "the setuid bit is in the image" sh -c "$T '$MPICTR' exec suid.sif /bin/busybox stat -c %a /bin/busybox.suid | grep -qx 4755"
ok "... and gives no privilege: the setuid-root binary runs as you" \
	sh -c "[ \"\$($T '$MPICTR' exec suid.sif /bin/busybox.suid id -u)\" = $(id -u) ]"

# An image without /bin/sh: only busybox, Entrypoint ["/bin/busybox", "echo"].
ok "image without /bin/sh" mkimg nosh ':' \
	--config.entrypoint /bin/busybox --config.entrypoint echo --config.cmd no-shell-needed \
	--config.env GREETING=nosh
ok "pull it" $T "$MPICTR" pull -q oci:nosh:latest nosh.sif
ok "inspect: an Entrypoint of two words, no Cmd label or port" sh -c "$T '$MPICTR' inspect --json nosh.sif |
	jq -e '.config.oci.entrypoint == [\"/bin/busybox\", \"echo\"] and .config.oci.exposed_ports == null and .config.oci.labels == null'"
ok "run without a shell in the image" sh -c "$T '$MPICTR' run nosh.sif | grep -qx no-shell-needed"
ok "... with the image's Env" sh -c "$T '$MPICTR' exec nosh.sif /bin/busybox env | grep -qx GREETING=nosh"
ok "run ARGS without a shell" sh -c "$T '$MPICTR' run nosh.sif 1 2 | grep -qx '1 2'"

# The MPI hello from the mpi test image, packaged as an OCI image.
if IMG=$(test_images mpi 2>/dev/null) && [ -d "$IMG/mpi" ]; then
	ok "mpi rootfs as an OCI layout (tar + umoci raw add-layer)" sh -c "
		tar -C '$IMG/mpi' -cf mpi.tar . 2>/dev/null; umoci init --layout mpi &&
		umoci new --image mpi:base && umoci raw add-layer --image mpi:base --tag latest mpi.tar"
	ok "pull it" $T "$MPICTR" pull -q oci:mpi:latest mpi.sif
	ok "MPI hello from the pulled image under mpictr -n 2" \
		sh -c "$T '$MPICTR' -n 2 mpi.sif /opt/mpictr/bin/hello >hello.out 2>&1 && [ \"\$(grep -c '^hello rank .* allreduce 1 ok' hello.out)\" = 2 ]"
	saved
else
	need "MPI hello from a pulled image" "the mpi test image could not be built"
fi
done_testing
