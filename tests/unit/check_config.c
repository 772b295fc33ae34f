/* check_config.c - config setters and the -B/--bind parser. */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "common/error.h"
#include "common/util.h"

START_TEST(test_bind_forms)
{
	struct bind_spec *b = NULL;
	size_t n = 0;
	mpictr_err *err = NULL;

	ck_assert_int_eq(bind_parse("/a", &b, &n, &err), 0);
	ck_assert_int_eq(bind_parse("/b:/c", &b, &n, &err), 0);
	ck_assert_int_eq(bind_parse("/d:/e:ro,/f:/g:rw,rel:/h", &b, &n, &err),
			 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(b[0].src, "/a");
	ck_assert_str_eq(b[0].dst, "/a");
	ck_assert(!b[0].ro);
	ck_assert_str_eq(b[1].dst, "/c");
	ck_assert(b[2].ro);
	ck_assert(!b[3].ro);
	ck_assert_str_eq(b[4].src, "rel");
	ck_assert_str_eq(b[4].dst, "/h");
	bind_specs_free(b, n);
}
END_TEST

static void expect_bad(const char *spec, const char *needle)
{
	struct bind_spec *b = NULL;
	size_t n = 0;
	mpictr_err *err = NULL;

	ck_assert_int_eq(bind_parse(spec, &b, &n, &err), -1);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(mpictr_err_message(err), needle),
		      "'%s': message '%s' lacks '%s'", spec,
		      mpictr_err_message(err), needle);
	mpictr_err_free(err);
	free(b);
}

START_TEST(test_bind_errors)
{
	expect_bad("", "empty");
	expect_bad("/a:/b:xx", "unknown option 'xx'");
	expect_bad("/a:rel", "not an absolute path");
	expect_bad("/a:/b:ro:x", "too many");
	expect_bad(":/b", "empty source");
	expect_bad("/a:", "empty destination");
	expect_bad("/a,,/b", "empty list element");
	expect_bad("rel", "relative source");
}
END_TEST

static void resolve(const char *src, const char *dst, const char *cwd,
		    const char *origin, const char *want_src,
		    const char *want_dst, const char *needle)
{
	struct bind_spec b = {(char *)src, (char *)dst, false};
	char *rs = NULL, *rd = NULL;
	mpictr_err *err = NULL;
	int rc = bind_resolve(&b, cwd, origin, &rs, &rd, &err);

	if (needle) {
		ck_assert_int_eq(rc, -1);
		ck_assert_ptr_null(rs);
		ck_assert_ptr_null(rd);
		ck_assert_msg(strstr(mpictr_err_message(err), needle),
			      "'%s:%s': message '%s' lacks '%s'", src, dst,
			      mpictr_err_message(err), needle);
		mpictr_err_free(err);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(rs, want_src);
	ck_assert_str_eq(rd, want_dst);
	free(rs);
	free(rd);
}

START_TEST(test_bind_resolve)
{
	resolve("/", "/mnt//x/./", NULL, NULL, "/", "/mnt/x", NULL);
	resolve(".", "/d", "/", NULL, "/", "/d", NULL);
	resolve("/nonexistent-mpictr", "/d", NULL, NULL, NULL, NULL,
		"bind source '/nonexistent-mpictr'");
	resolve("/", "/a/../b", NULL, NULL, NULL, NULL, "contains '..'");
	resolve("/", "/a/..", NULL, "f.conf", NULL, NULL,
		"'/a/..' (from f.conf) contains '..'");
	resolve("/", "/a..b", NULL, NULL, "/", "/a..b", NULL);
	resolve("/", "//.", NULL, NULL, NULL, NULL,
		"would replace the image root");
	resolve("/", "/", NULL, "f.conf", NULL, NULL,
		"'/' (from f.conf) would replace");
	/* the system directories mpictr mounts itself; below them is fine */
	resolve("/", "/proc", NULL, NULL, NULL, NULL,
		"bind destination '/proc' (-B/--bind) would replace the "
		"container's own /proc");
	resolve("/", "//sys/", NULL, NULL, NULL, NULL, "'/sys' (-B/--bind)");
	resolve("/", "/dev", NULL, "f.conf", NULL, NULL,
		"'/dev' (from f.conf) would replace");
	resolve("/", "/dev/x", NULL, NULL, "/", "/dev/x", NULL);
	resolve("/", "/proc/x", NULL, NULL, "/", "/proc/x", NULL);
	resolve("/", "/device", NULL, NULL, "/", "/device", NULL);
}
END_TEST

START_TEST(test_setters)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	char *argv[] = {"prog", "arg", NULL};

	ck_assert(cfg->transport_env);
	ck_assert_int_eq(mpictr_config_set_image(cfg, "x.sif", &err), 0);
	ck_assert_int_eq(mpictr_config_set_command(cfg, 2, argv, &err), 0);
	ck_assert_str_eq(cfg->argv[1], "arg");
	ck_assert_int_eq(mpictr_config_set_env(cfg, "A_1", "v", &err), 0);
	ck_assert_int_eq(mpictr_config_set_env(cfg, "1A", "v", &err), -1);
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(mpictr_config_set_nranks(cfg, 5000, &err), -1);
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(mpictr_config_set_universe_size(cfg, 65537, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "universe size 65537"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(mpictr_config_set_universe_size(cfg, 8, &err), 0);
	ck_assert_int_eq(mpictr_config_set_bind_to(cfg, "socket", &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "'socket'"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(mpictr_config_set_pwd(cfg, "rel", &err), -1);
	mpictr_err_free(err);
	mpictr_config_free(cfg);
}
END_TEST

/* The string setters: a missing config or value, the setter's own rule
 * (each message exact, with its errno), and a valid value kept as given. */
typedef int (*str_setter)(mpictr_config *, const char *, mpictr_err **);

static void setter_fails(str_setter set, mpictr_config *cfg, const char *value,
			 int errnum, const char *msg)
{
	mpictr_err *err = NULL;

	ck_assert_int_eq(set(cfg, value, &err), -1);
	ck_assert_ptr_nonnull(err);
	ck_assert_str_eq(mpictr_err_message(err), msg);
	ck_assert_int_eq(mpictr_err_errno(err), errnum);
	mpictr_err_free(err);
}

START_TEST(test_string_setters)
{
	static const struct {
		str_setter set;
		size_t at;	  /* the field a valid value lands in */
		const char *what; /* "missing WHAT" for a NULL value */
		const char *bad;  /* a value the setter refuses */
		const char *msg;  /* what it says of it */
		const char *good, *good2;
	} t[] = {
	    {mpictr_config_set_image, offsetof(mpictr_config, image),
	     "image path", "", "empty image path", "x.sif", "y.sif"},
	    {mpictr_config_set_pwd, offsetof(mpictr_config, pwd), "directory",
	     "rel", "invalid --pwd 'rel': not an absolute path", "/w", "/v"},
	    {mpictr_config_set_devices, offsetof(mpictr_config, devices),
	     "device list", "",
	     "invalid --devices '': empty (use none, all or a comma list)",
	     "gpu", "none"},
	    {mpictr_config_set_bind_to, offsetof(mpictr_config, bind_to),
	     "binding policy", "socket",
	     "invalid --bind-to 'socket' (expected core or none)", "core",
	     "none"},
	    {mpictr_config_set_overlay, offsetof(mpictr_config, overlay_dir),
	     "overlay directory", "", "invalid --overlay '': empty path",
	     "./o/", "/o"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		mpictr_config *cfg = mpictr_config_new();
		char *missing = NULL, **field;

		setter_fails(t[i].set, NULL, t[i].good, EINVAL,
			     "missing config: Invalid argument");
		missing = xasprintf("missing %s: Invalid argument", t[i].what);
		setter_fails(t[i].set, cfg, NULL, EINVAL, missing);
		free(missing);
		setter_fails(t[i].set, cfg, t[i].bad, 0, t[i].msg);
		field = (char **)((char *)cfg + t[i].at);
		ck_assert_ptr_null(*field);
		ck_assert_int_eq(t[i].set(cfg, t[i].good, NULL), 0);
		ck_assert_str_eq(*field, t[i].good);
		/* a second value replaces the first */
		ck_assert_int_eq(t[i].set(cfg, t[i].good2, NULL), 0);
		ck_assert_str_eq(*field, t[i].good2);
		mpictr_config_free(cfg);
	}
}
END_TEST

static void push_value(void *data, const char *value)
{
	strv_push(data, value);
}

/* Give option o a non-default value. */
static void opt_give(mpictr_config *cfg, const struct config_opt *o)
{
	if (o->kind == CONFIG_BINDS)
		ck_assert_int_eq(mpictr_config_add_bind(cfg, "/a:/b", NULL), 0);
	else
		config_opt_put(cfg, o, o->kind == CONFIG_BOOL ? "1" : "x");
}

/* Every row of the option table that decides the container changes the
 * digest the join key and the plan's digest hash, and is the one an
 * instance names when a joiner gives it; the others change neither. */
START_TEST(test_container_options)
{
	mpictr_config *base = mpictr_config_new();
	uint64_t d0 = config_container_digest(base);
	size_t ncontainer = 0;

	ck_assert_ptr_null(config_container_given(base));
	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];
		mpictr_config *c = mpictr_config_new();

		opt_give(c, o);
		ck_assert_msg(config_opt_given(c, o), "%s", o->option);
		if (o->container) {
			ncontainer++;
			ck_assert_msg(config_container_digest(c) != d0, "%s",
				      o->option);
			ck_assert_ptr_eq(config_container_given(c), o);
		} else {
			ck_assert_msg(config_container_digest(c) == d0, "%s",
				      o->option);
			ck_assert_ptr_null(config_container_given(c));
		}
		config_opt_clear(c, o);
		ck_assert_msg(!config_opt_given(c, o), "%s", o->option);
		ck_assert_uint_eq(config_container_digest(c), d0);
		mpictr_config_free(c);
	}
	ck_assert_uint_ge(ncontainer, 8);
	mpictr_config_free(base);
}
END_TEST

/* A flag is set through its row; the list's values round-trip. */
START_TEST(test_option_rows)
{
	mpictr_config *c = mpictr_config_new();
	const struct config_opt *prof = NULL;
	char **seen = NULL;

	ck_assert_int_eq(mpictr_config_set_flag(c, MPICTR_FLAG_GPU, 1, NULL),
			 0);
	ck_assert(c->gpu);
	ck_assert_int_eq(
	    mpictr_config_set_flag(c, MPICTR_FLAG_TRANSPORT_ENV, 0, NULL), 0);
	ck_assert(!c->transport_env && c->transport_env_set);
	ck_assert_int_lt(
	    mpictr_config_set_flag(c, (enum mpictr_flag)99, 1, NULL), 0);
	for (size_t i = 0; i < config_nopts; i++)
		if (strcmp(config_opts[i].option, "--profile") == 0)
			prof = &config_opts[i];
	ck_assert_ptr_nonnull(prof);
	config_opt_put(c, prof, "a");
	config_opt_put(c, prof, "b");
	config_opt_values(c, prof, push_value, &seen);
	ck_assert_int_eq((int)strv_len(seen), 2);
	ck_assert_str_eq(seen[1], "b");
	strv_free(seen);
	mpictr_config_free(c);
}
END_TEST

Suite *suite_config(void);
Suite *suite_config(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_bind_forms);
	tcase_add_test(tc, test_bind_errors);
	tcase_add_test(tc, test_bind_resolve);
	tcase_add_test(tc, test_setters);
	tcase_add_test(tc, test_string_setters);
	tcase_add_test(tc, test_container_options);
	tcase_add_test(tc, test_option_rows);
	suite_add_tcase(s, tc);
	return s;
}
