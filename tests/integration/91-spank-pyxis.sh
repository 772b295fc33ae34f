#!/bin/bash
# 91-spank-pyxis.sh - the SPANK plugin as a Pyxis user drives it, on the
# test Slurm (the installed plugin must be this tree's build, as in
# 90-spank.sh): a writable named container keeps what step 1 installed for
# step 2, which gives only --container-name (Pyxis's workflow); a step of
# another job does not see it; --container-name alone without a container
# says so; --container-writable / --container-readonly,
# --container-remap-root, --[no-]container-mount-home,
# --container-entrypoint (a pulled image's Entrypoint + the command, as
# Pyxis), --container-save; nothing is left after the job; libmpictr's
# messages name the plugin's options; and the plugin
# argument prefix= renames the options so that the plugin loads beside
# Pyxis (shown on the client side with a private plugstack.conf that
# also loads a plugin registering Pyxis's option names), its messages
# naming the options as typed (--mpictr-image).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/slurm/env.sh"
. "$ROOT/tests/integration/slurm-steps.sh"

T="timeout -k 5 120"
MYUID=$(id -u)
JDIR=/tmp/mpictr-join-$MYUID
require_slurm
spank_ready || { need "plugstack.conf loads $SPANK_DIR/mpictr-spank.so" "a cluster set up by tests/slurm/cluster.sh"; done_testing; exit; }
require_userns_fuse
require_images tiny
[ -f "$ROOT/build/plugins/mpictr-spank.so" ] || { need "mpictr-spank.so built" "libslurm-dev (Slurm's spank.h)"; done_testing; exit; }
if ! spank_installed "$ROOT/build/plugins"; then
	need "the installed plugin is this tree's build (cmp)" "install it as root: $(spank_install_cmd "$ROOT/build/plugins")"
	done_testing
	exit
fi
W=$(mktemp -d /var/tmp/mpictr-pyxis.XXXXXX) || exit 1
chmod 0755 "$W"
mkdir "$W/tmp"
trap 't_cleanup; rm -rf "$W"' EXIT
cd "$W" || exit 1
export TMPDIR=$W/tmp
NAME=mpx$$
# an image whose files are the user's (writable without remapping root)
cp -a "$IMG/tiny" "$W/img" && chmod -R u+w "$W/img"
mksquashfs "$W/img" "$W/img.sqfs" -noappend -quiet >/dev/null 2>&1
SUM=$(sha256sum <"$W/img.sqfs")
ln -s "$IMG/tiny.sif" "$W/tiny.sif"

leftovers() {
	pgrep -u "$MYUID" -af "slurmstepd: \[$1\." | grep -v "^$$ " || true
	ls -A "$JDIR" 2>/dev/null | grep "^$1\." | sed 's/^/rendezvous entry /'
}

# ---- the named-container flow ---------------------------------------------
cat >"$W/flow.sh" <<EOF
#!/bin/sh
#SBATCH --output=$W/out.flow
srun -n 1 --container-image=$W/img.sqfs --container-name=c --container-writable sh -c 'echo installed >/usr/bin/tool-file && echo STEP1 ok'
srun -n 2 --container-name=c sh -c 'echo STEP2 \$(cat /usr/bin/tool-file)'
srun -n 1 --container-image=$W/img.sqfs --container-name=other sh -c 'test -e /usr/bin/tool-file && echo OTHER sees || echo OTHER clean'
echo JOB \$SLURM_JOB_ID
EOF
ok "sbatch: step 1 writes into a writable named container" bash -c "$T sbatch --wait -J $NAME-flow -n 2 '$W/flow.sh' && grep -q '^STEP1 ok' '$W/out.flow'"
check "... step 2 with only --container-name sees it (both tasks)" test "$(grep -c '^STEP2 installed' "$W/out.flow")" = 2
check "... another named container of the job does not" grep -qx 'OTHER clean' "$W/out.flow"
JOB1=$(sed -n 's/^JOB //p' "$W/out.flow")
cat >"$W/flow2.sh" <<EOF
#!/bin/sh
#SBATCH --output=$W/out.flow2
srun -n 1 --container-name=c sh -c 'echo RAN'
echo "RC \$?"
srun -n 1 --container-image=$W/img.sqfs --container-name=c sh -c 'test -e /usr/bin/tool-file && echo NEXT sees || echo NEXT clean'
EOF
ok "a step of another job: --container-name=c alone fails (no such container)" bash -c "$T sbatch --wait -J $NAME-flow2 -n 1 '$W/flow2.sh'; grep -qE '^RC [1-9]' '$W/out.flow2' && ! grep -q '^RAN' '$W/out.flow2'"
check "... with a message that says so and how to start one" grep -q "mpictr: --container-name=c: this job has no container of that name on this node (hint: start it in an earlier step with --container-image=IMAGE --container-name=c)" "$W/out.flow2"
check "... and its own container c does not see the first job's file" grep -qx 'NEXT clean' "$W/out.flow2"
ok "the image file is unchanged" test "$(sha256sum <"$W/img.sqfs")" = "$SUM"
ok "nothing of the first job left (steps, keepers, rendezvous)" settle 100 leftovers "$JOB1"

# ---- --container-save ----------------------------------------------------------
cat >"$W/save.sh" <<EOF
#!/bin/sh
#SBATCH --output=$W/out.save
srun -n 1 --container-image=$W/img.sqfs --container-name=s --container-writable --container-save=$W/saved.sqfs sh -c 'echo saved >/etc/saved-file'
echo "SAVE rc=\$?"
srun -n 1 --container-image=$W/saved.sqfs sh -c 'echo NEXT \$(cat /etc/saved-file)'
EOF
ok "--container-save=PATH: the step's named container saved when the step ends" bash -c "$T sbatch --wait -J $NAME-save -n 1 '$W/save.sh'; grep -qx 'SAVE rc=0' '$W/out.save' && test -s '$W/saved.sqfs'"
check "... --container-image of the saved image sees the change" grep -qx 'NEXT saved' "$W/out.save"
check "... the saved file is the user's, not root's" test "$(stat -c %u "$W/saved.sqfs" 2>/dev/null)" = "$MYUID"
ok "--container-save without --container-name: the step's container is saved (as Pyxis)" \
	bash -c "$T srun -n 1 --container-image='$W/img.sqfs' --container-writable --container-save='$W/x.sqfs' sh -c 'echo u >/etc/unnamed' && $T srun -n 1 --container-image='$W/x.sqfs' cat /etc/unnamed | grep -qx u"
check "... and that container is gone after the step (no instance left)" \
	bash -c "! '$MPICTR' instance list 2>/dev/null | grep -q '\.step[0-9]'"

# ---- the other options -------------------------------------------------------
ok "--container-readonly (the default): the image is read-only" \
	bash -c "$T srun -n 1 --container-image='$W/img.sqfs' --container-readonly sh -c 'echo x >/usr/x' 2>&1 | grep -q 'Read-only file system'"
ok "--container-writable alone (no name): writable for the step" \
	bash -c "$T srun -n 1 --container-image='$W/img.sqfs' --container-writable sh -c 'echo x >/usr/x && cat /usr/x' | grep -qx x"
ok_fail "--container-writable with --container-readonly: refused" $T srun -n 1 --container-image="$W/img.sqfs" --container-writable --container-readonly true
ok "--container-remap-root: uid 0 inside, root's directories writable with --container-writable" \
	bash -c "$T srun -n 1 --container-image='$W/tiny.sif' --container-remap-root --container-writable sh -c 'id -u; echo r >/usr/r && cat /usr/r' | tr '\n' ' ' | grep -qx '0 r '"
ok "--no-container-mount-home: \$HOME is not bound" \
	bash -c "$T srun -n 1 --chdir=/ --container-image='$W/tiny.sif' --no-container-mount-home sh -c 'test -e \"$HOME\" && echo bound || echo absent' | grep -qx absent"
ok "--container-mount-home (the default): \$HOME is bound" \
	bash -c "$T srun -n 1 --container-image='$W/tiny.sif' --container-mount-home sh -c 'test -d \"$HOME\" && echo bound' | grep -qx bound"
ok "--container-entrypoint: the command runs through the image's runscript" \
	bash -c "$T srun -n 1 --container-image='$W/tiny.sif' --container-entrypoint echo a b | grep -qx 'runscript: echo a b'"
ok "--no-container-entrypoint (the default): the command alone" \
	bash -c "$T srun -n 1 --container-image='$W/tiny.sif' --no-container-entrypoint echo a b | grep -qx 'a b'"

# libmpictr's messages name the plugin's options, not the CLI's.
ok_fail "--container-remap-root under --mpi=pmix: refused" $T srun -n 1 --mpi=pmix --container-image="$W/tiny.sif" --container-remap-root true
cp "$T_OUT" "$W/last"
check "... naming --container-remap-root (not the CLI's --fakeroot)" \
	sh -c "grep -q 'mpictr: --container-remap-root cannot be used under a PMI server.*hint: drop --container-remap-root' '$W/last' && ! grep -q -- '--fakeroot' '$W/last'"

# ---- a pulled image's Entrypoint, as Pyxis runs it ----------------------------
# ep.sif: busybox, Entrypoint ["/bin/echo", "EP"], Cmd ["default-cmd"], Env
# GREETING=hello, pulled from a local OCI layout (no network).
if command -v umoci >/dev/null && command -v busybox >/dev/null; then
	mkep() {
		umoci init --layout ep && umoci new --image ep:latest &&
			umoci unpack --rootless --image ep:latest ep.b >/dev/null &&
			mkdir -p ep.b/rootfs/bin && cp "$(command -v busybox)" ep.b/rootfs/bin/ &&
			(cd ep.b/rootfs/bin && for l in sh echo env; do ln -s busybox $l; done) &&
			umoci repack --image ep:latest ep.b &&
			umoci config --image ep:latest --config.entrypoint /bin/echo --config.entrypoint EP \
				--config.cmd default-cmd --config.env PATH=/bin --config.env GREETING=hello &&
			$T "$MPICTR" pull -q oci:ep:latest "$W/ep.sif"
	}
	ok "a pulled image with an Entrypoint" mkep
	ok "--container-entrypoint CMD: the image's Entrypoint + CMD" \
		bash -c "$T srun -n 1 --container-image='$W/ep.sif' --container-entrypoint echo a b | grep -qx 'EP echo a b'"
	ok "--no-container-entrypoint CMD: CMD alone" \
		bash -c "$T srun -n 1 --container-image='$W/ep.sif' --no-container-entrypoint echo a b | grep -qx 'a b'"
	ok "neither (the default, as Pyxis's): CMD alone, with the image's Env" \
		bash -c "$T srun -n 1 --container-image='$W/ep.sif' env | grep -qx GREETING=hello"
	ok "--container-entrypoint with --container-name: Entrypoint + CMD in the named container" \
		bash -c "$T srun -n 1 --container-image='$W/ep.sif' --container-name=ep --container-entrypoint echo n | grep -qx 'EP echo n'"
else
	need "a pulled image's Entrypoint under the plugin" "umoci or busybox not installed"
fi

# ---- beside Pyxis: prefix= ---------------------------------------------------
# A stand-in for Pyxis: a SPANK plugin named pyxis registering its options.
cat >"$W/pyxis.c" <<'EOF'
#include <stddef.h>
#include <slurm/spank.h>
SPANK_PLUGIN(pyxis, 1)
static int cb(int v, const char *a, int r) { return 0; }
static struct spank_option o[] = {
    {"container-image", "IMAGE", "[pyxis] image", 1, 0, cb},
    {"container-name", "NAME", "[pyxis] name", 1, 1, cb},
    {"container-writable", NULL, "[pyxis] writable", 0, 2, cb},
    SPANK_OPTIONS_TABLE_END};
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	for (int i = 0; o[i].name; i++)
		if (spank_option_register(sp, &o[i]) != ESPANK_SUCCESS)
			return -1;
	return 0;
}
EOF
if cc -shared -fPIC -o "$W/pyxis.so" "$W/pyxis.c" 2>"$W/cc.out"; then
	mkdir "$W/conf"
	cp "${SLURM_CONF%/*}"/*.conf "$W/conf/" 2>/dev/null
	printf 'required %s\noptional %s/mpictr-spank.so image_dirs=/var/tmp prefix=mpictr\n' "$W/pyxis.so" "$SPANK_DIR" >"$W/conf/plugstack.conf"
	ok "prefix=mpictr beside a plugin with Pyxis's option names: srun loads both, no collision" \
		bash -c "SLURM_CONF='$W/conf/slurm.conf' srun --help >'$W/help' 2>&1; SLURM_CONF='$W/conf/slurm.conf' $T srun -n 1 true >'$W/run' 2>&1 && ! grep -q 'provided by both' '$W/help' '$W/run' && grep -q -- '--container-image' '$W/help' && grep -q -- '--mpictr-image' '$W/help' && grep -q -- '--mpictr-name' '$W/help' && grep -q -- '--no-mpictr-entrypoint' '$W/help' && grep -q -- '--mpictr-writable' '$W/help'"
	# the plugin's messages name the options as the user typed them
	ok_fail "prefix=mpictr: a missing --mpictr-image is refused in srun" \
		env SLURM_CONF="$W/conf/slurm.conf" $T srun -n 1 --mpictr-image="$W/none.sif" true
	cp "$T_OUT" "$W/last"
	check "... naming --mpictr-image, never --container-image" \
		sh -c "grep -q \"mpictr: --mpictr-image '$W/none.sif': No such file or directory\" '$W/last' && ! grep -q -- '--container-' '$W/last'"
	ok_fail "prefix=mpictr: a bad --mpictr-name is refused" \
		env SLURM_CONF="$W/conf/slurm.conf" $T srun -n 1 --mpictr-image="$W/img.sqfs" --mpictr-name='bad name' true
	cp "$T_OUT" "$W/last"
	check "... naming --mpictr-name" grep -q "mpictr: --mpictr-name 'bad name': at most 20" "$W/last"
	ok_fail "prefix=mpictr: Pyxis's variables take the prefix too: PYXIS_MPICTR_IMAGE is read in srun" \
		env SLURM_CONF="$W/conf/slurm.conf" PYXIS_MPICTR_IMAGE="$W/none.sif" $T srun -n 1 true
	cp "$T_OUT" "$W/last"
	check "... as --mpictr-image" grep -q "mpictr: --mpictr-image '$W/none.sif': No such file or directory" "$W/last"
	printf 'required %s\noptional %s/mpictr-spank.so image_dirs=/var/tmp\n' "$W/pyxis.so" "$SPANK_DIR" >"$W/conf/plugstack.conf"
	ok "... without prefix= the names collide (what the argument is for)" \
		bash -c "SLURM_CONF='$W/conf/slurm.conf' $T srun -n 1 true 2>&1 | grep -q 'option \"container-image\" provided by both'"
	printf 'optional %s/mpictr-spank.so prefix=Bad_Name\n' "$SPANK_DIR" >"$W/conf/plugstack.conf"
	ok "... a bad prefix is named" bash -c "SLURM_CONF='$W/conf/slurm.conf' srun --help 2>&1 | grep -q \"prefix: 'Bad_Name' is not a word\""
else
	need "a stand-in Pyxis plugin" "cc could not build it: $(head -1 "$W/cc.out")"
fi
done_testing
