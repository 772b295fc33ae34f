#!/bin/bash
# 62-check-config.sh - `mpictr check` loads the site's configuration file
# and the user's (MPICTR_CONF) as every job does, plans a job with them, and
# fails (exit 1, "problem:") on what would fail every job, naming the file
# and line (issue 28: it passed with a site file that made every job exit
# 255). MPICTR_TEST_SITE_CONF stands in for /etc/mpictr/mpictr.conf.
if [ -d /var/tmp ] && [ -w /var/tmp ]; then export TMPDIR=/var/tmp; fi
. "$(dirname "$0")/lib.sh"

if [ -e /etc/mpictr/mpictr.conf ]; then
	need "site configuration tests" "/etc/mpictr/mpictr.conf exists: MPICTR_TEST_SITE_CONF is ignored"
	# A signature policy whose key file is missing refuses every image
# (issue 33: check said all was well).
printf 'require_signature = yes\ntrusted_keys = %s/missing-%s.pub\n' "$T_TMP" "$$" >nokey.conf
ok_status "require_signature with a missing trusted_keys file: check exits 1" 1 chk MPICTR_TEST_SITE_CONF="$T_TMP/nokey.conf"
check "... naming the key file, the setting and the error" says "problem: signature policy: trusted key '$T_TMP/missing-$$.pub' ($T_TMP/nokey.conf:1: require_signature = yes): No such file or directory"
printf 'require_signature = yes\n' >nokeys.conf
ok_status "require_signature with no trusted_keys at all: check exits 1" 1 chk MPICTR_TEST_SITE_CONF="$T_TMP/nokeys.conf"
check "... says every image is refused" says "no trusted_keys: every image is refused"
echo key >"$T_TMP/site.pub"
printf 'require_signature = yes\ntrusted_keys = %s/site.pub\n' "$T_TMP" >key.conf
ok "require_signature with a readable key file: check passes" chk MPICTR_TEST_SITE_CONF="$T_TMP/key.conf"
check "... and says so" says "ok: signature policy: every trusted key file is readable"

done_testing; exit
fi
cd "$T_TMP" || exit 1
mkdir -p img/bin data
chk() { # CONF-VAR=FILE...: mpictr check with these, output in $T_TMP/chk.out
	env "$@" "$MPICTR" check >"$T_TMP/chk.out" 2>&1
}
says() { grep -qF -- "$1" "$T_TMP/chk.out" || { cat "$T_TMP/chk.out"; return 1; }; }

printf 'bind = %s:/site/data:ro\n' "$T_TMP/data" >good.conf
ok "a good site file: check passes" chk MPICTR_TEST_SITE_CONF="$T_TMP/good.conf"
check "... and says the configuration plans" says "ok: configuration: a job can be planned"

printf '# site\nbind = /tmp\nfoo = 1\n' >bad.conf
ok_status "a site file that does not parse: check exits 1" 1 chk MPICTR_TEST_SITE_CONF="$T_TMP/bad.conf"
check "... naming the file and line" says "problem: configuration: every job would fail: $T_TMP/bad.conf:3: unknown key 'foo'"
ok_status "... and every job fails with it (255)" 255 env MPICTR_TEST_SITE_CONF="$T_TMP/bad.conf" "$MPICTR" --dry-run "$T_TMP/img" true

printf 'env = A=1\nbind = %s/missing-%s:/x\n' "$T_TMP" "$$" >nosrc.conf
ok_status "a site bind whose source is missing: check exits 1" 1 chk MPICTR_TEST_SITE_CONF="$T_TMP/nosrc.conf"
check "... naming the source" says "missing-$$"
ok_status "... and every job fails with it (255)" 255 env MPICTR_TEST_SITE_CONF="$T_TMP/nosrc.conf" "$MPICTR" --dry-run "$T_TMP/img" true

printf 'deny_bind = /x\n' >user.conf
ok_status "a user file (MPICTR_CONF) that sets a site-only key: check exits 1" 1 \
	chk MPICTR_TEST_SITE_CONF="$T_TMP/good.conf" MPICTR_CONF="$T_TMP/user.conf"
check "... naming the user's file and line" says "$T_TMP/user.conf:1: 'deny_bind' may only be set in the site configuration file"

done_testing
