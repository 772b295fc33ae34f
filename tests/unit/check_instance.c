/* check_instance.c - named instances: the name rule, instance:// and the
 * options refused before anything is contacted or started. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "modes/instance.h"
#include "mpictr.h"

START_TEST(test_names)
{
	static const char *const good[] = {"a", "hpc", "A-1.b_2", "0x",
					   "abcdefghijklmnopqrstuvwxyz012345"};
	static const char *const bad[] = {
	    "",	   ".x",  "-x", "_x", "a/b", "a b", "..", "x\n", "é",
	    "abcdefghijklmnopqrstuvwxyz0123456"};
	mpictr_err *err = NULL;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(instance_name_check(good[i], NULL) == 0, "%s",
			      good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(instance_name_check(bad[i], NULL) < 0, "%s",
			      bad[i]);
	ck_assert_int_lt(instance_name_check(NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err),
				     "invalid instance name"));
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_ref)
{
	ck_assert(instance_is_ref("instance://x"));
	ck_assert(!instance_is_ref("instance:/x"));
	ck_assert(!instance_is_ref("/images/instance://x"));
	ck_assert(!instance_is_ref(NULL));
}
END_TEST

/* The option a joiner may not give is named, before any connection. */
static void refused(mpictr_config *cfg, const char *option)
{
	struct instance_attach a;
	mpictr_err *err = NULL;
	char want[128];

	ck_assert_int_eq(mpictr_config_set_image(cfg, "instance://nosuch-ck",
						 NULL),
			 0);
	ck_assert_int_lt(instance_attach(cfg, &a, &err), 0);
	snprintf(want, sizeof(want),
		 "%s cannot be used with instance://nosuch-ck", option);
	ck_assert_msg(strstr(mpictr_err_message(err), want), "%s",
		      mpictr_err_message(err));
	mpictr_err_free(err);
	instance_attach_free(&a);
	mpictr_config_free(cfg);
}

/* Every option of the table that decides the container is refused from
 * a joiner, named as the table names it. */
START_TEST(test_refused_table)
{
	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];
		mpictr_config *c;

		if (!o->container)
			continue;
		c = mpictr_config_new();
		if (o->kind == CONFIG_BINDS)
			mpictr_config_add_bind(c, "/etc:/mnt", NULL);
		else
			config_opt_put(c, o, o->kind == CONFIG_BOOL ? "1" : "x");
		refused(c, o->option);
	}
}
END_TEST

START_TEST(test_refused_options)
{
	mpictr_config *c;

	c = mpictr_config_new();
	mpictr_config_add_bind(c, "/etc:/mnt", NULL);
	refused(c, "-B/--bind");
	c = mpictr_config_new();
	mpictr_config_set_flag(c, MPICTR_FLAG_CONTAIN, 1, NULL);
	refused(c, "--contain");
	c = mpictr_config_new();
	mpictr_config_set_flag(c, MPICTR_FLAG_FAKEROOT, 1, NULL);
	refused(c, "--fakeroot");
	c = mpictr_config_new();
	mpictr_config_set_devices(c, "none", NULL);
	refused(c, "--devices");
	c = mpictr_config_new();
	mpictr_config_add_profile(c, "p", NULL);
	refused(c, "--profile");
}
END_TEST

START_TEST(test_start_refusals)
{
	mpictr_config *c = mpictr_config_new();
	mpictr_err *err = NULL;

	mpictr_config_set_image(c, "/nonexistent.sif", NULL);
	mpictr_config_set_nranks(c, 2, NULL);
	ck_assert_int_lt(mpictr_instance_start(c, "x", 0, 0, &err), 0);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "-n"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_lt(mpictr_instance_start(c, "a/b", 0, 0, &err), 0);
	ck_assert_ptr_nonnull(
	    strstr(mpictr_err_message(err), "invalid instance name 'a/b'"));
	mpictr_err_free(err);
	err = NULL;
	mpictr_config_set_nranks(c, 0, NULL);
	mpictr_config_set_image(c, "instance://y", NULL);
	ck_assert_int_lt(mpictr_instance_start(c, "x", 0, 0, &err), 0);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "an instance"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_lt(mpictr_instance_start(c, "x", -1, 0, &err), 0);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "--linger"));
	mpictr_err_free(err);
	mpictr_config_free(c);
}
END_TEST

Suite *suite_instance(void);
Suite *suite_instance(void)
{
	Suite *s = suite_create("instance");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_ref);
	tcase_add_test(tc, test_refused_options);
	tcase_add_test(tc, test_refused_table);
	tcase_add_test(tc, test_start_refusals);
	suite_add_tcase(s, tc);
	return s;
}
