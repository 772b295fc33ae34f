#!/bin/bash
# 39-apptainer-env.sh - the environment and bind variables an Apptainer
# user (or the site's login scripts) sets, as Apptainer's own end-to-end
# cases check them (its e2e/env: PATH with APPTAINERENV_PREPEND_PATH,
# _APPEND_PATH and _PATH, --env lists and --env-file, the image's variables
# against the host's, odd host variables; and the bind variables
# APPTAINER_BIND / SINGULARITY_BINDPATH), in mpictr's images: tiny.sif,
# whose env script sets TINY_IMAGE=1 and puts /opt/tiny/bin first on PATH
# (Apptainer's "custom path" image), and a copy of it without env scripts
# (the "default path" image). Before issue 33 the PREPEND/APPEND cases
# gave a variable PREPEND_PATH and an unchanged PATH, --env A=1,B=2 one
# variable A, and the bind variables were ignored.
. "$(dirname "$0")/lib.sh"

T="timeout -k 5 60"
require_userns_fuse
require_images tiny
cd "$T_TMP" || exit 1
private_tmpdir
CUSTOM=$IMG/tiny.sif
DEF=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CPATH=/opt/tiny/bin:$DEF
cp -a "$IMG/tiny" "$T_TMP/plain" && rm -f "$T_TMP"/plain/.singularity.d/env/*.sh
PLAIN=$T_TMP/plain

# is NAME WANT [ENV...] -- [OPTIONS...] IMAGE: the container's $NAME is
# exactly WANT, with ENV in mpictr's environment.
is() {
	local name=$1 want=$2 got
	shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	got=$(env "${envs[@]}" $T "$MPICTR" exec "$@" /bin/sh -c "printf '%s' \"\${$name}\"") || return 1
	[ "$got" = "$want" ] || { echo "$name: got '$got', expected '$want'"; return 1; }
}

# ---- PATH (Apptainer's apptainerEnv table) --------------------------
ok "default PATH" is PATH "$DEF" -- "$PLAIN"
ok "an image's own PATH (env script)" is PATH "$CPATH" -- "$CUSTOM"
ok "APPTAINERENV_APPEND_PATH on the default PATH" is PATH "$DEF:/foo" APPTAINERENV_APPEND_PATH=/foo -- "$PLAIN"
ok "APPTAINERENV_APPEND_PATH on an image's PATH" is PATH "$CPATH:/foo" APPTAINERENV_APPEND_PATH=/foo -- "$CUSTOM"
ok "APPTAINERENV_PREPEND_PATH on the default PATH" is PATH "/foo:$DEF" APPTAINERENV_PREPEND_PATH=/foo -- "$PLAIN"
ok "APPTAINERENV_PREPEND_PATH on an image's PATH" is PATH "/foo:$CPATH" APPTAINERENV_PREPEND_PATH=/foo -- "$CUSTOM"
ok "APPTAINERENV_PATH overwrites the default PATH" is PATH /usr/bin:/bin APPTAINERENV_PATH=/usr/bin:/bin -- "$PLAIN"
ok "APPTAINERENV_PATH overwrites an image's PATH" is PATH /usr/bin:/bin APPTAINERENV_PATH=/usr/bin:/bin -- "$CUSTOM"
ok "APPTAINERENV_PATH with a trailing comma" is PATH /usr/bin:/bin, APPTAINERENV_PATH=/usr/bin:/bin, -- "$PLAIN"
ok "SINGULARITYENV_PREPEND_PATH and _APPEND_PATH" is PATH "/p:$CPATH:/a" SINGULARITYENV_PREPEND_PATH=/p SINGULARITYENV_APPEND_PATH=/a -- "$CUSTOM"
ok "PREPEND_PATH is no variable of its own" is PREPEND_PATH "" APPTAINERENV_PREPEND_PATH=/foo -- "$CUSTOM"

# ---- --env (Apptainer's apptainerEnvOption table) -------------------
ok "--env PATH=/ on the default PATH" is PATH / -- --env PATH=/ "$PLAIN"
ok "--env APPEND_PATH=/foo" is PATH "$DEF:/foo" -- --env APPEND_PATH=/foo "$PLAIN"
ok "--env PREPEND_PATH=/foo" is PATH "/foo:$DEF" -- --env PREPEND_PATH=/foo "$PLAIN"
ok "--env PATH=/ over an image's PATH" is PATH / -- --env PATH=/ "$CUSTOM"
ok "--env APPEND_PATH=/foo on an image's PATH" is PATH "$CPATH:/foo" -- --env APPEND_PATH=/foo "$CUSTOM"
ok "--env PREPEND_PATH=/foo on an image's PATH" is PATH "/foo:$CPATH" -- --env PREPEND_PATH=/foo "$CUSTOM"
ok "the image's variable by default" is TINY_IMAGE 1 -- "$CUSTOM"
ok "--env overrides the image's variable" is TINY_IMAGE 2 -- --env TINY_IMAGE=2 "$CUSTOM"
ok "a host variable does not override the image's env script" is TINY_IMAGE 1 TINY_IMAGE=5 -- "$CUSTOM"
ok "APPTAINERENV_ overrides the image's variable" is TINY_IMAGE 3 APPTAINERENV_TINY_IMAGE=3 -- "$CUSTOM"
ok "--env wins over APPTAINERENV_" is TINY_IMAGE 4 APPTAINERENV_TINY_IMAGE=3 -- --env TINY_IMAGE=4 "$CUSTOM"
ok "--env NAME= sets it empty" is TINY_IMAGE "" -- --env TINY_IMAGE= "$CUSTOM"
ok "--env wins over the host's variable" is FOO foo FOO=bar -- --env FOO=foo "$CUSTOM"
ok "a host variable with a newline passes" is MULTI $'Hello\nWorld' MULTI=$'Hello\nWorld' -- "$CUSTOM"
ok "a host variable with an escaped newline passes" is ESCAPED 'Hello\nWorld' 'ESCAPED=Hello\nWorld' -- "$CUSTOM"
ok "a host variable with an invalid name is left out, silently" \
	bash -c "env 'BASH_FUNC_ml%%=TEST' $T '$MPICTR' exec '$CUSTOM' /bin/sh -c 'env | grep -c BASH_FUNC' 2>err.out | grep -qx 0 && ! [ -s err.out ]"
ok "--env A=1,B=2: two variables" is B 2 -- --env A=1,B=2 "$CUSTOM"
ok "... and A is 1" is A 1 -- --env A=1,B=2 "$CUSTOM"
ok "--env P=/a,/b: a comma inside a value stays" is P /a,/b -- --env P=/a,/b "$CUSTOM"
ok "--env P=/foo,: a trailing comma stays" is P /foo, -- --env P=/foo, "$CUSTOM"
ok_status "--env ,A=1: a list that starts with no NAME= is refused" 255 \
	$T "$MPICTR" exec --env ,A=1 "$CUSTOM" true

# ---- --env-file (Apptainer's apptainerEnvFile table) ----------------
printf 'PATH=/\n' >f0
printf 'PATH=/etc\n' >f1
printf 'APPEND_PATH=/\n' >fa
printf 'PREPEND_PATH=/\n' >fp
ok "--env-file PATH=/" is PATH / -- --env-file f0 "$CUSTOM"
ok "--env wins over --env-file" is PATH /etc -- --env PATH=/etc --env-file f0 "$CUSTOM"
ok "the last --env-file wins" is PATH /etc -- --env-file f0 --env-file f1 "$CUSTOM"
ok "--env-file APPEND_PATH=/" is PATH "$CPATH:/" -- --env-file fa "$CUSTOM"
ok "--env-file PREPEND_PATH=/" is PATH "/:$CPATH" -- --env-file fp "$CUSTOM"

# ---- bind variables (Apptainer's APPTAINER_BIND and friends) --------
mkdir -p d1 d2
echo one >d1/f
echo two >d2/f
ok "APPTAINER_BIND=SRC:DST binds" bash -c "APPTAINER_BIND='$T_TMP/d1:/mnt/one' $T '$MPICTR' exec '$CUSTOM' cat /mnt/one/f | grep -qx one"
ok "SINGULARITY_BINDPATH=SRC binds at the same path" bash -c "SINGULARITY_BINDPATH='$T_TMP/d2' $T '$MPICTR' exec --contain '$CUSTOM' cat '$T_TMP/d2/f' | grep -qx two"
ok "APPTAINER_BIND with two binds, comma-separated" bash -c "APPTAINER_BIND='$T_TMP/d1:/mnt/one,$T_TMP/d2:/mnt/two' $T '$MPICTR' exec '$CUSTOM' cat /mnt/one/f /mnt/two/f | tr '\n' ' ' | grep -qx 'one two '"
ok "APPTAINER_BIND SRC:DST:ro is read-only" bash -c "APPTAINER_BIND='$T_TMP/d1:/mnt/one:ro' $T '$MPICTR' exec '$CUSTOM' sh -c 'echo x >/mnt/one/g' 2>&1 | grep -q 'Read-only'"
ok "APPTAINER_BIND wins over SINGULARITY_BINDPATH" bash -c "APPTAINER_BIND='$T_TMP/d1:/mnt/b' SINGULARITY_BINDPATH='$T_TMP/d2:/mnt/b' $T '$MPICTR' exec '$CUSTOM' cat /mnt/b/f | grep -qx one"
ok "-B adds to APPTAINER_BIND" bash -c "APPTAINER_BIND='$T_TMP/d1:/mnt/one' $T '$MPICTR' exec -B '$T_TMP/d2:/mnt/two' '$CUSTOM' cat /mnt/one/f /mnt/two/f | tr '\n' ' ' | grep -qx 'one two '"
ok_status "APPTAINER_BIND with a bad option: exit 255" 255 env APPTAINER_BIND="$T_TMP/d1:/mnt/one:bad" $T "$MPICTR" exec "$CUSTOM" true
cp "$T_OUT" last
check "... the error names the variable" grep -q "APPTAINER_BIND: invalid bind" last
ok_status "SINGULARITY_BINDPATH with a missing source: exit 255" 255 env SINGULARITY_BINDPATH="$T_TMP/nonexistent" $T "$MPICTR" exec "$CUSTOM" true
cp "$T_OUT" last
check "... the error names the source" grep -q "nonexistent" last
check "nothing left running" settle 50 marked_procs

done_testing
