/* check_siteconf.c - the mpictr.conf parser, user-file rules, bind policy,
 * and the MPI ABI identification (sonames, versions, compatibility). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/bindpol.h"
#include "common/error.h"
#include "host/mpiinject.h"
#include "config/siteconf.h"
#include "common/util.h"

static const char site_text[] =
	"# site policy\n"
	"bind = /scratch\n"
	"env = SITE=1\n"
	"  devices = none  \n"
	"lock_devices = yes\n"
	"deny_bind = /etc/\n"
	"allow_bind = /home\n"
	"allow_bind = /scratch\n"
	"\n"
	"[profile mpich]\n"
	"description = host MPICH\n"
	"mpi = /usr/lib/x86_64-linux-gnu/libmpich.so.12\n"
	"mpi_dep = /usr/lib/x86_64-linux-gnu/libhwloc.so.15\n"
	"env_prepend = PATH=/opt/mpich/bin\n"
	"bind = /opt/mpich:/opt/mpich:ro\n"
	"[profile  ompi ]\n"
	"mpi = /usr/lib/x86_64-linux-gnu/libmpi.so.40\n"
	"mpi_abi = warn\n";

static void parse_ok(struct siteconf *sc, const char *text, bool site)
{
	mpictr_err *err = NULL;
	int rc = siteconf_parse(sc, text, strlen(text),
				site ? "mpictr.conf" : "user.conf", site, &err);
	ck_assert_msg(rc == 0, "parse failed: %s",
		      err ? mpictr_err_message(err) : "?");
}

/* Parse text (on top of the site text when site_first) and expect an error
 * message equal to want. */
static void parse_bad(const char *text, bool site, bool site_first,
		      const char *want)
{
	struct siteconf sc = {0};
	mpictr_err *err = NULL;

	if (site_first)
		parse_ok(&sc, site_text, true);
	ck_assert_int_eq(siteconf_parse(&sc, text, strlen(text),
					site ? "mpictr.conf" : "user.conf",
					site, &err),
			 -1);
	ck_assert_ptr_nonnull(err);
	ck_assert_str_eq(mpictr_err_message(err), want);
	mpictr_err_free(err);
	siteconf_free(&sc);
}

START_TEST(test_parse_site)
{
	struct siteconf sc = {0};
	const struct site_profile *p;
	char *names;

	parse_ok(&sc, site_text, true);
	ck_assert_uint_eq(sc.binds.n, 1);
	ck_assert_str_eq(sc.binds.v[0].value, "/scratch");
	ck_assert_str_eq(sc.binds.v[0].origin, "mpictr.conf:2");
	ck_assert(sc.binds.v[0].site);
	ck_assert_str_eq(sc.env.v[0].value, "SITE=1");
	ck_assert_str_eq(sc.devices.value, "none");
	ck_assert_str_eq(sc.lock_devices.origin, "mpictr.conf:5");
	ck_assert_str_eq(sc.deny_binds.v[0].value, "/etc");
	ck_assert_uint_eq(sc.allow_binds.n, 2);
	ck_assert_uint_eq(sc.nprofiles, 2);
	p = siteconf_profile(&sc, "mpich");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->description, "host MPICH");
	ck_assert_str_eq(p->mpi.value,
			 "/usr/lib/x86_64-linux-gnu/libmpich.so.12");
	ck_assert_uint_eq(p->mpi_deps.n, 1);
	ck_assert_str_eq(p->env_prepend.v[0].value, "PATH=/opt/mpich/bin");
	ck_assert_str_eq(p->binds.v[0].value, "/opt/mpich:/opt/mpich:ro");
	ck_assert(!p->mpi_warn);
	p = siteconf_profile(&sc, "ompi");
	ck_assert_ptr_nonnull(p);
	ck_assert(p->mpi_warn);
	ck_assert_str_eq(p->origin, "mpictr.conf:16");
	ck_assert_ptr_null(siteconf_profile(&sc, "nope"));
	names = siteconf_profile_names(&sc);
	ck_assert_str_eq(names, "mpich, ompi");
	free(names);
	siteconf_free(&sc);
}
END_TEST

START_TEST(test_parse_errors)
{
	parse_bad("bind = /a\nfoo = 1\n", true, false,
		  "mpictr.conf:2: unknown key 'foo'");
	parse_bad("[profile x]\nfoo = 1\n", true, false,
		  "mpictr.conf:2: unknown key 'foo' in profile 'x'");
	parse_bad("just words\n", true, false,
		  "mpictr.conf:1: expected 'key = value' or '[profile NAME]'");
	parse_bad("[profile x\n", true, false,
		  "mpictr.conf:1: unterminated section header");
	parse_bad("[global]\n", true, false,
		  "mpictr.conf:1: unknown section '[global]' (expected "
		  "[profile NAME])");
	parse_bad("[profile a/b]\n", true, false,
		  "mpictr.conf:1: invalid profile name 'a/b' (1 to 64 "
		  "letters, digits, '_', '.', '-')");
	parse_bad("[profile a]\n[profile a]\n", true, false,
		  "mpictr.conf:2: profile 'a' is already defined at "
		  "mpictr.conf:1");
	parse_bad("bind = rel:/x\n", true, false,
		  "mpictr.conf:1: bind source 'rel' is not an absolute path");
	parse_bad("bind = /a:rel\n", true, false,
		  "mpictr.conf:1: invalid bind '/a:rel': destination 'rel' "
		  "is not an absolute path");
	parse_bad("env = 1X=2\n", true, false,
		  "mpictr.conf:1: invalid 'env' value '1X=2' (expected "
		  "NAME=VALUE, NAME of letters, digits and '_')");
	parse_bad("lock_devices = maybe\n", true, false,
		  "mpictr.conf:1: invalid value 'maybe' for 'lock_devices' "
		  "(expected yes or no)");
	parse_bad("mpi = /x\n", true, false,
		  "mpictr.conf:1: 'mpi' belongs in a [profile NAME] section");
	parse_bad("[profile p]\nmpi_abi = loose\n", true, false,
		  "mpictr.conf:2: invalid value 'loose' for 'mpi_abi' "
		  "(expected enforce or warn)");
	parse_bad("[profile p]\nmpi = /a\nmpi = /b\n", true, false,
		  "mpictr.conf:3: 'mpi' given twice in profile 'p' (first at "
		  "mpictr.conf:2)");
	parse_bad("devices =\n", true, false,
		  "mpictr.conf:1: empty value for 'devices'");
	parse_bad("transport_env = maybe\n", true, false,
		  "mpictr.conf:1: invalid value 'maybe' for 'transport_env' "
		  "(expected on or off)");
}
END_TEST

START_TEST(test_nul_and_long_lines)
{
	struct siteconf sc = {0};
	mpictr_err *err = NULL;
	char *big = xmalloc(SITECONF_MAX_LINE + 16);

	ck_assert_int_eq(siteconf_parse(&sc, "a\0b", 3, "f", true, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "f: contains a NUL byte (not a text file?)");
	mpictr_err_free(err);
	err = NULL;
	memset(big, '#', SITECONF_MAX_LINE + 1);
	big[SITECONF_MAX_LINE + 1] = '\0';
	ck_assert_int_eq(siteconf_parse(&sc, big, strlen(big), "f", true,
					&err),
			 -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "f:1: line longer than 4096 bytes");
	mpictr_err_free(err);
	free(big);
	ck_assert_uint_eq(sc.nprofiles, 0);
	siteconf_free(&sc);
}
END_TEST

START_TEST(test_shm_size)
{
	static const struct {
		const char *s;
		unsigned long long bytes;
		unsigned pct;
	} good[] = {
	    {"1", 1, 0},
	    {"4096", 4096, 0},
	    {"64k", 64ULL << 10, 0},
	    {"512m", 512ULL << 20, 0},
	    {"8G", 8ULL << 30, 0},
	    {"8g", 8ULL << 30, 0},
	    {"1048576g", 1ULL << 50, 0},
	    {"1%", 0, 1},
	    {"25%", 0, 25},
	    {"100%", 0, 100},
	};
	static const char *const bad[] = {
	    "",	   "0",	   "0%",    "101%",	 "-1",	"1.5g", "8x",
	    "8gb", "g",	   "%",	    "25 %",	 "8 g", "50%%", "1048577g",
	    "1125899906842625", "99999999999999999999999999", "0x10", " 1"};
	struct siteconf sc = {0};
	unsigned long long bytes;
	unsigned pct;

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		ck_assert_msg(siteconf_parse_size(good[i].s, &bytes, &pct) ==
				  0,
			      "'%s' refused", good[i].s);
		ck_assert_uint_eq(bytes, good[i].bytes);
		ck_assert_uint_eq(pct, good[i].pct);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(siteconf_parse_size(bad[i], &bytes, &pct) < 0,
			      "'%s' accepted", bad[i]);

	parse_ok(&sc, "bind = /x\nshm_size = 25%\n", true);
	ck_assert_str_eq(sc.shm_size.value, "25%");
	ck_assert_str_eq(sc.shm_size.origin, "mpictr.conf:2");
	parse_ok(&sc, "shm_size = 8g\n", true); /* the last one wins */
	ck_assert_str_eq(sc.shm_size.value, "8g");
	parse_ok(&sc, "tmp_size = 5%\n", true);
	ck_assert_str_eq(sc.tmp_size.value, "5%");
	ck_assert_str_eq(sc.shm_size.value, "8g");
	siteconf_free(&sc);
	parse_bad("env = A=1\nshm_size = 8x\n", true, false,
		  "mpictr.conf:2: invalid value '8x' for 'shm_size' "
		  "(expected a size such as 512m or 8g: a number of bytes "
		  "with an optional k, m or g suffix; or a percentage from "
		  "1% to 100% of the memory the job may use)");
	parse_bad("tmp_size = 0\n", true, false,
		  "mpictr.conf:1: invalid value '0' for 'tmp_size' "
		  "(expected a size such as 512m or 8g: a number of bytes "
		  "with an optional k, m or g suffix; or a percentage from "
		  "1% to 100% of the memory the job may use)");
	parse_bad("shm_size = 101%\n", true, false,
		  "mpictr.conf:1: invalid value '101%' for 'shm_size' "
		  "(expected a size such as 512m or 8g: a number of bytes "
		  "with an optional k, m or g suffix; or a percentage from "
		  "1% to 100% of the memory the job may use)");
	parse_bad("shm_size =\n", true, false,
		  "mpictr.conf:1: empty value for 'shm_size'");
	/* A user file cannot raise (or set) it. */
	parse_bad("shm_size = 100%\n", false, true,
		  "user.conf:1: 'shm_size' may only be set in the site "
		  "configuration file");
	parse_bad("tmp_size = 100%\n", false, true,
		  "user.conf:1: 'tmp_size' may only be set in the site "
		  "configuration file");
}
END_TEST

/* require_signature and trusted_keys: site file only, paths absolute,
 * keys accumulate across lines and blanks. */
START_TEST(test_signature_keys)
{
	struct siteconf sc = {0};

	parse_ok(&sc,
		 "require_signature = yes\ntrusted_keys = /k/a.pem  /k/b.asc\n"
		 "trusted_keys = /k/c.pem\n",
		 true);
	ck_assert_str_eq(sc.require_signature.value, "yes");
	ck_assert_str_eq(sc.require_signature.origin, "mpictr.conf:1");
	ck_assert_uint_eq(sc.trusted_keys.n, 3);
	ck_assert_str_eq(sc.trusted_keys.v[1].value, "/k/b.asc");
	ck_assert_str_eq(sc.trusted_keys.v[2].origin, "mpictr.conf:3");
	siteconf_free(&sc);
	parse_ok(&sc, "require_signature = off\n", true);
	ck_assert_str_eq(sc.require_signature.value, "no");
	siteconf_free(&sc);
	parse_bad("require_signature = maybe\n", true, false,
		  "mpictr.conf:1: invalid value 'maybe' for "
		  "'require_signature' (expected yes or no)");
	parse_bad("trusted_keys = /k/a.pem k.pem\n", true, false,
		  "mpictr.conf:1: 'trusted_keys' needs an absolute path, not "
		  "'k.pem'");
	parse_bad("require_signature = no\n", false, true,
		  "user.conf:1: 'require_signature' may only be set in the site "
		  "configuration file");
	parse_bad("trusted_keys = /home/u/mine.pem\n", false, true,
		  "user.conf:1: 'trusted_keys' may only be set in the site "
		  "configuration file");
	/* what may change a signed image: site file only, yes or no */
	parse_ok(&sc,
		 "signed_overlay = yes\nsigned_writable_tmpfs = no\n"
		 "signed_save = off\n",
		 true);
	ck_assert_str_eq(sc.signed_overlay.value, "yes");
	ck_assert_str_eq(sc.signed_writable_tmpfs.value, "no");
	ck_assert_str_eq(sc.signed_save.value, "no");
	ck_assert_str_eq(sc.signed_save.origin, "mpictr.conf:3");
	siteconf_free(&sc);
	parse_bad("signed_overlay = always\n", true, false,
		  "mpictr.conf:1: invalid value 'always' for "
		  "'signed_overlay' (expected yes or no)");
	parse_bad("signed_save = yes\n", false, true,
		  "user.conf:1: 'signed_save' may only be set in the site "
		  "configuration file");
}
END_TEST

/* A user file can add, never lift. */
START_TEST(test_user_file_rules)
{
	struct siteconf sc = {0};

	parse_bad("deny_bind = /x\n", false, true,
		  "user.conf:1: 'deny_bind' may only be set in the site "
		  "configuration file");
	parse_bad("user_binds = yes\n", false, true,
		  "user.conf:1: 'user_binds' may only be set in the site "
		  "configuration file");
	parse_bad("lock_devices = no\n", false, true,
		  "user.conf:1: 'lock_devices' may only be set in the site "
		  "configuration file");
	parse_bad("devices = all\n", false, true,
		  "user.conf:1: 'devices' is locked by the site "
		  "(mpictr.conf:5)");
	parse_bad("[profile mpich]\n", false, true,
		  "user.conf:1: profile 'mpich' is already defined at "
		  "mpictr.conf:10");

	/* a user file adds, unprivileged; a site file after it is refused */
	parse_ok(&sc, site_text, true);
	parse_ok(&sc, "bind = /home/u/data\n[profile mine]\nenv = A=1\n",
		 false);
	ck_assert_uint_eq(sc.binds.n, 2);
	ck_assert(!sc.binds.v[1].site);
	ck_assert_str_eq(sc.binds.v[1].origin, "user.conf:1");
	ck_assert(!siteconf_profile(&sc, "mine")->site);
	ck_assert(siteconf_profile(&sc, "mpich")->site);
	{
		mpictr_err *err = NULL;
		ck_assert_int_eq(siteconf_parse(&sc, "", 0, "late.conf", true,
						&err),
				 -1);
		ck_assert_str_eq(mpictr_err_message(err),
				 "late.conf: the site configuration must be "
				 "loaded before user configuration files");
		mpictr_err_free(err);
	}
	siteconf_free(&sc);
}
END_TEST

START_TEST(test_bind_policy)
{
	struct siteconf sc = {0};
	mpictr_err *err = NULL;

	ck_assert(!siteconf_restricts_binds(&sc));
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/etc", "bind", &err),
			 0);
	parse_ok(&sc, site_text, true);
	ck_assert(siteconf_restricts_binds(&sc));
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/home/u", "b", &err),
			 0);
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/scratch", "b", &err),
			 0);
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/etc/shadow",
						  "bind '/etc/shadow'", &err),
			 -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "bind '/etc/shadow' refused: '/etc/shadow' is denied "
			 "by mpictr.conf:6: deny_bind = /etc");
	mpictr_err_free(err);
	err = NULL;
	/* prefixes match whole components */
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/homework", "bind "
								  "'/homework'",
						  &err),
			 -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "bind '/homework' refused: '/homework' is outside "
			 "the paths the site allows (mpictr.conf:7: "
			 "allow_bind = /home; mpictr.conf:8: allow_bind = "
			 "/scratch)");
	mpictr_err_free(err);
	err = NULL;
	siteconf_free(&sc);
	parse_ok(&sc, "user_binds = no\n", true);
	ck_assert_int_eq(siteconf_check_user_bind(&sc, "/home", "bind '/home'",
						  &err),
			 -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "bind '/home' refused: the site allows no user binds "
			 "(mpictr.conf:1: user_binds = no)");
	mpictr_err_free(err);
	siteconf_free(&sc);
	/* oversubscribe: a boolean, in a user file too */
	parse_ok(&sc, "oversubscribe = no\n", false);
	ck_assert_str_eq(sc.oversubscribe.value, "no");
	ck_assert(!sc.oversubscribe.site);
	siteconf_free(&sc);
	parse_ok(&sc, "oversubscribe = yes\n", true);
	ck_assert_str_eq(sc.oversubscribe.value, "yes");
	siteconf_free(&sc);
	parse_bad("oversubscribe = maybe\n", true, false,
		  "mpictr.conf:1: invalid value 'maybe' for 'oversubscribe' "
		  "(expected yes or no)");
	ck_assert(siteconf_path_below("/a/b", "/a"));
	ck_assert(siteconf_path_below("/a", "/a"));
	ck_assert(!siteconf_path_below("/ab", "/a"));
	ck_assert(siteconf_path_below("/x", "/"));
}
END_TEST

/* Refused with a message that contains want (or accepted: want NULL). */
static void bind_is(const struct siteconf *sc, const char *src,
		    enum bind_who who, const char *want)
{
	mpictr_err *err = NULL;
	int rc = siteconf_check_bind(sc, src, who, "b", &err);

	if (!want) {
		ck_assert_msg(rc == 0, "'%s' refused: %s", src,
			      mpictr_err_message(err));
		return;
	}
	ck_assert_msg(rc == -1, "'%s' accepted", src);
	ck_assert_msg(strstr(mpictr_err_message(err), want), "'%s' lacks '%s'",
		      mpictr_err_message(err), want);
	mpictr_err_free(err);
}

/* The path rules: a source below a denied path, or one that contains it,
 * is refused for user and automatic binds alike; allow_bind and
 * user_binds = no concern user binds only; what mpictr or the site plans
 * is not checked. */
START_TEST(test_bind_contains)
{
	struct siteconf sc = {0};

	parse_ok(&sc,
		 "deny_bind = /secret\n"
		 "deny_bind = /var/spool/slurmd/\n"
		 "allow_bind = /home\n",
		 true);
	bind_is(&sc, "/secret/x", BIND_USER, "'/secret/x' is denied by");
	bind_is(&sc, "/secret", BIND_AUTO, "deny_bind = /secret");
	bind_is(&sc, "/", BIND_USER,
		"b refused: '/' contains '/secret', denied by "
		"mpictr.conf:1: deny_bind = /secret");
	bind_is(&sc, "/", BIND_AUTO, "'/' contains '/secret'");
	bind_is(&sc, "/var", BIND_AUTO,
		"'/var' contains '/var/spool/slurmd', denied by "
		"mpictr.conf:2");
	bind_is(&sc, "/var/spool", BIND_USER, "contains");
	/* whole components only */
	bind_is(&sc, "/secretive", BIND_AUTO, NULL);
	bind_is(&sc, "/var/spool/slurm", BIND_AUTO, NULL);
	bind_is(&sc, "/sec", BIND_AUTO, NULL);
	/* allow_bind is for user binds: an automatic bind of a working
	 * directory outside it is not refused */
	bind_is(&sc, "/work/u", BIND_AUTO, NULL);
	bind_is(&sc, "/work/u", BIND_USER, "outside the paths the site allows");
	bind_is(&sc, "/home/u", BIND_USER, NULL);
	bind_is(&sc, "/", BIND_TRUSTED, NULL);
	bind_is(&sc, "/secret", BIND_TRUSTED, NULL);
	siteconf_free(&sc);
	parse_ok(&sc, "user_binds = no\n", true);
	bind_is(&sc, "/home/u", BIND_USER, "allows no user binds");
	bind_is(&sc, "/home/u", BIND_AUTO, NULL);
	siteconf_free(&sc);
}
END_TEST

/* ---- the descriptor check ---------------------------------------------- */

static char fd_root[] = "/tmp/check-bindpol.XXXXXX";

static void fd_tree(void)
{
	char p[256];
	static const char *const dirs[] = {"deny", "deny/sub", "other",
					   "other/in", "allow"};

	ck_assert_ptr_nonnull(mkdtemp(fd_root));
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/%s", fd_root, dirs[i]);
		ck_assert_int_eq(mkdir(p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/deny/sub/file", fd_root);
	ck_assert_int_eq(write_file(p, "secret\n", O_CREAT | O_EXCL), 0);
	snprintf(p, sizeof(p), "%s/other/file", fd_root);
	ck_assert_int_eq(write_file(p, "mine\n", O_CREAT | O_EXCL), 0);
	{
		char t[256];
		snprintf(t, sizeof(t), "%s/deny/sub", fd_root);
		snprintf(p, sizeof(p), "%s/other/link", fd_root);
		ck_assert_int_eq(symlink(t, p), 0);
		/* a hard link of the denied file, elsewhere */
		snprintf(t, sizeof(t), "%s/deny/sub/file", fd_root);
		snprintf(p, sizeof(p), "%s/other/in/hard", fd_root);
		ck_assert_int_eq(link(t, p), 0);
	}
}

static void fd_tree_rm(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fd_root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Open fd_root/rel (following symlinks, as rootfs.c does) and check it. */
static void fd_is(const struct bind_policy *bp, const char *rel,
		  enum bind_who who, const char *want)
{
	char p[256];
	mpictr_err *err = NULL;
	int fd, rc;

	snprintf(p, sizeof(p), "%s%s%s", fd_root, *rel ? "/" : "", rel);
	fd = open(p, O_PATH | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open '%s'", p);
	rc = bind_policy_check_fd(bp, who, fd, p, &err);
	close(fd);
	if (!want) {
		ck_assert_msg(rc == 0, "'%s' refused: %s", rel,
			      mpictr_err_message(err));
		return;
	}
	ck_assert_msg(rc == -1, "'%s' accepted", rel);
	ck_assert_msg(strstr(mpictr_err_message(err), want), "'%s' lacks '%s'",
		      mpictr_err_message(err), want);
	mpictr_err_free(err);
}

/* Parse tmpl, each '@' replaced by fd_root, as the site file. */
static void fd_policy(struct siteconf *sc, struct bind_policy *bp,
		      const char *tmpl)
{
	struct strbuf sb = STRBUF_INIT;

	for (const char *c = tmpl; *c; c++)
		if (*c == '@')
			sb_puts(&sb, fd_root);
		else
			sb_putc(&sb, *c);
	parse_ok(sc, sb.buf, true);
	bind_policy_init(bp, sc);
	sb_free(&sb);
}

START_TEST(test_bind_policy_fd)
{
	struct siteconf sc = {0};
	struct bind_policy bp;
	char want[512];

	fd_tree();
	fd_policy(&sc, &bp,
		  "deny_bind = @/deny\ndeny_bind = @/nonexistent\n");
	/* below, the denied directory itself, and through a symlink (the
	 * descriptor is where the link led) */
	snprintf(want, sizeof(want),
		 "bind source '%s/deny/sub/file' refused: it is or lies below "
		 "'%s/deny', denied by mpictr.conf:1: deny_bind = %s/deny",
		 fd_root, fd_root, fd_root);
	fd_is(&bp, "deny/sub/file", BIND_AUTO, want);
	fd_is(&bp, "deny", BIND_USER, "is or lies below");
	snprintf(want, sizeof(want), "(opened as '%s/deny/sub') refused",
		 fd_root);
	fd_is(&bp, "other/link", BIND_USER, want);
	/* containing: the parent, and / (-B /:/host) */
	snprintf(want, sizeof(want),
		 "refused: it contains '%s/deny', denied by mpictr.conf:1",
		 fd_root);
	fd_is(&bp, "", BIND_AUTO, want);
	{
		mpictr_err *err = NULL;
		int fd = open("/", O_PATH | O_CLOEXEC);
		ck_assert_int_eq(
		    bind_policy_check_fd(&bp, BIND_USER, fd, "/", &err), -1);
		ck_assert(strstr(mpictr_err_message(err), "contains"));
		mpictr_err_free(err);
		close(fd);
	}
	/* beside it: fine, and so is a hard link elsewhere of a file below
	 * a denied directory (a different path the user may name) */
	fd_is(&bp, "other", BIND_USER, NULL);
	fd_is(&bp, "other/file", BIND_AUTO, NULL);
	fd_is(&bp, "other/in/hard", BIND_USER, NULL);
	/* trusted binds are not checked */
	fd_is(&bp, "deny/sub", BIND_TRUSTED, NULL);
	bind_policy_free(&bp);
	siteconf_free(&sc);

	/* a denied file: the file (also under another hard link) and the
	 * directories above it are refused */
	fd_policy(&sc, &bp, "deny_bind = @/deny/sub/file\n");
	fd_is(&bp, "deny/sub/file", BIND_USER, "is or lies below");
	fd_is(&bp, "other/in/hard", BIND_USER, "is or lies below");
	fd_is(&bp, "deny/sub", BIND_USER, "contains");
	fd_is(&bp, "deny", BIND_AUTO, "contains");
	fd_is(&bp, "other/file", BIND_USER, NULL);
	bind_policy_free(&bp);
	siteconf_free(&sc);

	/* allow_bind: the descriptor must lie below an allowed path, for
	 * user binds; automatic binds are not held to it */
	fd_policy(&sc, &bp, "allow_bind = @/other\n");
	fd_is(&bp, "other/file", BIND_USER, NULL);
	fd_is(&bp, "other", BIND_USER, NULL);
	fd_is(&bp, "other/link", BIND_USER,
	      "refused: it is outside the paths the site allows "
	      "(mpictr.conf:1: allow_bind = ");
	fd_is(&bp, "allow", BIND_USER, "outside");
	fd_is(&bp, "allow", BIND_AUTO, NULL);
	bind_policy_free(&bp);
	siteconf_free(&sc);
	fd_tree_rm();
}
END_TEST

/* ---- MPI ABI ----------------------------------------------------------- */

START_TEST(test_mpi_family)
{
	int major;

	ck_assert_int_eq(mpiabi_family("libmpich.so.12", &major),
			 MPI_FAMILY_MPICH);
	ck_assert_int_eq(major, 12);
	ck_assert_int_eq(mpiabi_family("libmpi.so.12", &major),
			 MPI_FAMILY_MPICH);
	ck_assert_int_eq(mpiabi_family("libmpi.so.40", &major),
			 MPI_FAMILY_OPENMPI);
	ck_assert_int_eq(major, 40);
	ck_assert_int_eq(mpiabi_family("libmpi_cxx.so.40", &major),
			 MPI_FAMILY_NONE);
	ck_assert_int_eq(mpiabi_family("libmpi.so.40.30.4", &major),
			 MPI_FAMILY_NONE);
	ck_assert_int_eq(mpiabi_family("libc.so.6", &major), MPI_FAMILY_NONE);
	ck_assert_int_eq(mpiabi_family(NULL, &major), MPI_FAMILY_NONE);
	ck_assert_int_eq(mpiabi_file_minor("libmpich.so.12.2.2"), 2);
	ck_assert_int_eq(mpiabi_file_minor("libmpi.so.12.10"), 10);
	ck_assert_int_eq(mpiabi_file_minor("libmpich.so.12"), -1);
	ck_assert_int_eq(mpiabi_file_minor("libmpi.so.40.x"), -1);
	ck_assert_int_eq(mpiabi_file_minor("libfoo"), -1);
}
END_TEST

static struct mpi_lib lib(const char *soname, const char *file)
{
	struct mpi_lib l = {.path = (char *)"/p", .soname = (char *)soname,
			    .file = (char *)file};
	l.family = mpiabi_family(soname, &l.major);
	l.minor = mpiabi_file_minor(file);
	return l;
}

static void incompatible(struct mpi_lib h, struct mpi_lib i, const char *want)
{
	mpictr_err *err = NULL;

	ck_assert_int_eq(mpiabi_compatible(&h, &i, &err), -1);
	ck_assert_msg(strstr(mpictr_err_message(err), want),
		      "'%s' lacks '%s'", mpictr_err_message(err), want);
	mpictr_err_free(err);
}

START_TEST(test_mpi_compatible)
{
	mpictr_err *err = NULL;
	struct mpi_lib deb = lib("libmpich.so.12", "libmpich.so.12.2.2");
	struct mpi_lib cray = lib("libmpi.so.12", "libmpi.so.12.3.0");
	struct mpi_lib old = lib("libmpi.so.12", "libmpi.so.12.1.0");
	struct mpi_lib ompi = lib("libmpi.so.40", "libmpi.so.40.30.4");
	struct mpi_lib ompi20 = lib("libmpi.so.20", "libmpi.so.20.10.1");

	/* newer or equal host MPICH across the two ABI names */
	ck_assert_int_eq(mpiabi_compatible(&cray, &deb, &err), 0);
	ck_assert_int_eq(mpiabi_compatible(&deb, &deb, &err), 0);
	ck_assert_int_eq(mpiabi_compatible(&deb, &old, &err), 0);
	ck_assert_int_eq(mpiabi_compatible(&ompi, &ompi, &err), 0);
	incompatible(old, deb, "minor version 1 < 2");
	incompatible(ompi, deb, "different MPI families");
	incompatible(deb, ompi, "different MPI families");
	incompatible(ompi20, ompi, "different major versions (20, 40)");
	ck_assert_ptr_null(err);
}
END_TEST

START_TEST(test_elf_soname_real)
{
	/* Real libraries of the host: their sonames. */
	static const struct {
		const char *path, *soname;
	} libs[] = {
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", "libmpich.so.12"},
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", "libmpi.so.40"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(libs); i++) {
		struct mpi_lib l;
		mpictr_err *err = NULL;
		if (access(libs[i].path, R_OK) != 0)
			continue;
		ck_assert_int_eq(mpiabi_inspect_host(libs[i].path, &l, &err), 0);
		ck_assert_str_eq(l.soname, libs[i].soname);
		ck_assert(l.minor >= 0);
		ck_assert_int_ne(l.family, MPI_FAMILY_NONE);
		mpi_lib_free(&l);
	}
}
END_TEST

START_TEST(test_elf_soname_malformed)
{
	unsigned char buf[128] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	char *so = NULL;
	mpictr_err *err = NULL;

	ck_assert_int_eq(mpiabi_elf_soname_mem("abc", 3, &so, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "'buffer': too short for an ELF header");
	mpictr_err_free(err);
	err = NULL;
	buf[16] = 3; /* ET_DYN */
	buf[58] = 64; /* e_shentsize */
	buf[60] = 2;  /* e_shnum */
	buf[40] = 200; /* e_shoff beyond the buffer */
	ck_assert_int_eq(mpiabi_elf_soname_mem(buf, sizeof(buf), &so, &err),
			 -1);
	ck_assert_msg(strstr(mpictr_err_message(err), "outside the file"),
		      "%s", mpictr_err_message(err));
	mpictr_err_free(err);
	err = NULL;
	buf[4] = 1; /* ELFCLASS32 */
	ck_assert_int_eq(mpiabi_elf_soname_mem(buf, sizeof(buf), &so, &err),
			 -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "'buffer': not a 64-bit little-endian ELF object");
	mpictr_err_free(err);
	ck_assert_ptr_null(so);
}
END_TEST

/* "[profile p]\n" for a profile key, then "NAME = VALUE\n". */
static char *key_text(const struct site_key *k, const char *value)
{
	return xasprintf("%s%s = %s\n", k->profile ? "[profile p]\n" : "",
			 k->name, value);
}

/* The field of k in sc (a profile key: in profile p). */
static const void *key_field(const struct siteconf *sc,
			     const struct site_key *k)
{
	const struct site_profile *p = siteconf_profile(sc, "p");

	if (!k->profile)
		return siteconf_key_field(sc, k);
	ck_assert_ptr_nonnull(p);
	return siteconf_key_field(p, k);
}

/* Every key of the table parses its example into its own field, in the
 * site file; site-only keys are refused in a user file, the others not; a
 * key of one section only is refused in the other. */
START_TEST(test_key_table_parses)
{
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];
		cleanup_free char *text = key_text(k, k->example);
		struct siteconf sc = {0};
		const void *f;
		mpictr_err *err = NULL;
		size_t words = 1;

		for (const char *c = k->example; *c; c++)
			words += *c == ' ';
		parse_ok(&sc, text, true);
		f = key_field(&sc, k);
		switch (k->kind) {
		case SITE_KEY_ITEM:
			ck_assert_msg(((const struct site_item *)f)->value,
				      "%s", k->name);
			break;
		case SITE_KEY_LIST:
		case SITE_KEY_WORDS:
			ck_assert_msg(((const struct site_items *)f)->n ==
					  (k->kind == SITE_KEY_WORDS ? words
								     : 1),
				      "%s", k->name);
			break;
		case SITE_KEY_TEXT:
			ck_assert_str_eq(*(char *const *)f, k->example);
			break;
		case SITE_KEY_FLAG:
		default:
			ck_assert_msg(*(const bool *)f, "%s", k->name);
			break;
		}
		if (k->lock) {
			bool found = false;

			for (size_t j = 0; j < siteconf_nkeys; j++)
				found |= !siteconf_keys[j].profile &&
					 strcmp(siteconf_keys[j].name,
						k->lock) == 0;
			ck_assert_msg(found, "%s: lock %s", k->name, k->lock);
		}
		siteconf_free(&sc);
		if (k->site_only) {
			cleanup_free char *want = xasprintf(
			    "user.conf:1: '%s' may only be set in the site "
			    "configuration file",
			    k->name);
			parse_bad(text, false, false, want);
		} else {
			parse_ok(&sc, text, false);
			siteconf_free(&sc);
		}
		/* the other section */
		{
			cleanup_free char *other = xasprintf(
			    "%s%s = %s\n", k->profile ? "" : "[profile p]\n",
			    k->name, k->example);
			bool both = false;

			for (size_t j = 0; j < siteconf_nkeys; j++)
				both |= siteconf_keys[j].profile !=
					    k->profile &&
					strcmp(siteconf_keys[j].name,
					       k->name) == 0;
			if (both)
				continue;
			ck_assert_int_eq(siteconf_parse(&sc, other,
							strlen(other),
							"mpictr.conf", true,
							&err),
					 -1);
			ck_assert_msg(strstr(mpictr_err_message(err),
					     k->profile ? "belongs in a "
							: "unknown key"),
				      "%s: %s", k->name,
				      mpictr_err_message(err));
			mpictr_err_free(err);
			err = NULL;
			siteconf_free(&sc);
		}
	}
}
END_TEST

static size_t kind_size(enum site_key_kind kind)
{
	switch (kind) {
	case SITE_KEY_ITEM:
		return sizeof(struct site_item);
	case SITE_KEY_LIST:
	case SITE_KEY_WORDS:
		return sizeof(struct site_items);
	case SITE_KEY_TEXT:
		return sizeof(char *);
	case SITE_KEY_FLAG:
	default:
		return sizeof(bool);
	}
}

/* The table's fields cover the structs: every field of struct siteconf
 * before the profiles, and of struct site_profile after its site flag, is
 * a key's (a new field without a key fails here). */
static void check_tiles(bool profile, size_t from, size_t to)
{
	size_t at = from;

	for (;;) {
		const struct site_key *next = NULL;

		for (size_t i = 0; i < siteconf_nkeys; i++)
			if (siteconf_keys[i].profile == profile &&
			    siteconf_keys[i].offset >= at &&
			    (!next || siteconf_keys[i].offset < next->offset))
				next = &siteconf_keys[i];
		if (!next)
			break;
		ck_assert_msg(next->offset == at,
			      "%s: a field at offset %zu has no key (next: "
			      "'%s' at %zu)",
			      profile ? "profile" : "siteconf", at, next->name,
			      next->offset);
		at = next->offset + kind_size(next->kind);
	}
	ck_assert_msg(at <= to && to - at < sizeof(void *),
		      "%s: fields from offset %zu to %zu have no key",
		      profile ? "profile" : "siteconf", at, to);
}

START_TEST(test_key_table_fields)
{
	check_tiles(false, 0, offsetof(struct siteconf, profiles));
	check_tiles(true, offsetof(struct site_profile, description),
		    sizeof(struct site_profile));
}
END_TEST

/* Two configurations that differ in a key that decides the container have
 * different digests, whatever the key; one that does not decide it does
 * not change the digest; nor does where a value was set. */
START_TEST(test_container_digest)
{
	struct siteconf base = {0}, pbase = {0}, a = {0}, b = {0};
	uint64_t d0, p0;
	size_t ndeciding = 0;

	parse_ok(&pbase, "[profile p]\n", true);
	d0 = siteconf_container_digest(&base);
	p0 = siteconf_container_digest(&pbase);
	ck_assert_uint_ne(d0, p0);
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];
		cleanup_free char *text = key_text(k, k->example);
		struct siteconf sc = {0};
		uint64_t d;

		parse_ok(&sc, text, true);
		d = siteconf_container_digest(&sc);
		if (k->container)
			ck_assert_msg(d != (k->profile ? p0 : d0), "%s",
				      k->name);
		else
			ck_assert_msg(d == (k->profile ? p0 : d0), "%s",
				      k->name);
		ndeciding += k->container;
		siteconf_free(&sc);
	}
	ck_assert_uint_gt(ndeciding, 0);
	/* the sizes, the signature policy: once forgotten by a hand list */
	parse_ok(&a, "shm_size = 1g\n", true);
	parse_ok(&b, "shm_size = 2g\n", true);
	ck_assert_uint_ne(siteconf_container_digest(&a),
			  siteconf_container_digest(&b));
	siteconf_free(&b);
	parse_ok(&b, "\n[profile q]\n", true);
	ck_assert_uint_ne(siteconf_container_digest(&a),
			  siteconf_container_digest(&b));
	siteconf_free(&b);
	parse_ok(&b, "\n\nshm_size = 1g\n", true);
	ck_assert_uint_eq(siteconf_container_digest(&a),
			  siteconf_container_digest(&b));
	siteconf_free(&a);
	siteconf_free(&b);
	siteconf_free(&pbase);
}
END_TEST

Suite *suite_siteconf(void);
Suite *suite_siteconf(void)
{
	Suite *s = suite_create("siteconf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_site);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_key_table_parses);
	tcase_add_test(tc, test_key_table_fields);
	tcase_add_test(tc, test_container_digest);
	tcase_add_test(tc, test_nul_and_long_lines);
	tcase_add_test(tc, test_shm_size);
	tcase_add_test(tc, test_signature_keys);
	tcase_add_test(tc, test_user_file_rules);
	tcase_add_test(tc, test_bind_policy);
	tcase_add_test(tc, test_bind_contains);
	tcase_add_test(tc, test_bind_policy_fd);
	tcase_add_test(tc, test_mpi_family);
	tcase_add_test(tc, test_mpi_compatible);
	tcase_add_test(tc, test_elf_soname_real);
	tcase_add_test(tc, test_elf_soname_malformed);
	suite_add_tcase(s, tc);
	return s;
}
