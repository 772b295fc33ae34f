/* check_slurm.c - Slurm step variable parsers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "sched/slurm.h"
#include "common/util.h"

static void tpn(const char *spec, uint32_t nn, const uint32_t *want)
{
	uint32_t *c = NULL, n = 0;
	mpictr_err *err = NULL;

	ck_assert_msg(slurm_parse_tasks_per_node(spec, &c, &n, &err) == 0,
		      "%s: %s", spec, mpictr_err_message(err));
	ck_assert_uint_eq(n, nn);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(c[i], want[i]);
	free(c);
}

START_TEST(test_tasks_per_node)
{
	tpn("4", 1, (uint32_t[]){4});
	tpn("4(x2),3", 3, (uint32_t[]){4, 4, 3});
	tpn("1,2(x3)", 4, (uint32_t[]){1, 2, 2, 2});
	tpn("16(x1)", 1, (uint32_t[]){16});
}
END_TEST

START_TEST(test_tasks_per_node_bad)
{
	static const char *bad[] = {"",      "x",     "4(",       "4(x)",
				    "4(x2",  "4,",    ",4",       "4(y2)",
				    "0",     "4(x0)", "4,,3",     "99999999999",
				    "4(x2)5", "-1",   "4(x70000)"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		uint32_t *c = NULL, n = 0;
		mpictr_err *err = NULL;
		ck_assert_msg(slurm_parse_tasks_per_node(bad[i], &c, &n,
							 &err) == -1,
			      "accepted '%s'", bad[i]);
		ck_assert(strstr(mpictr_err_message(err),
				 "SLURM_STEP_TASKS_PER_NODE"));
		mpictr_err_free(err);
	}
}
END_TEST

static void hl(const char *spec, const char *joined)
{
	char **h = NULL;
	mpictr_err *err = NULL;
	struct strbuf sb = STRBUF_INIT;

	ck_assert_msg(slurm_expand_hostlist(spec, &h, &err) == 0, "%s: %s",
		      spec, mpictr_err_message(err));
	for (size_t i = 0; h[i]; i++) {
		if (i)
			sb_putc(&sb, ' ');
		sb_puts(&sb, h[i]);
	}
	ck_assert_str_eq(sb.buf, joined);
	sb_free(&sb);
	strv_free(h);
}

START_TEST(test_hostlist)
{
	hl("vm", "vm");
	hl("node[1-3]", "node1 node2 node3");
	hl("n[01-03,7],login", "n01 n02 n03 n7 login");
	hl("a[1]b,c", "a1b c");
	{
		static const char *bad[] = {"",     "n[",   "n[1-",  "n[3-1]",
					    "n[]",  "n]",   "n[1]]", "[1]",
					    "n[1,]", "a,,b", "n[1-99999999]"};
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			char **h = NULL;
			mpictr_err *err = NULL;
			ck_assert_msg(slurm_expand_hostlist(bad[i], &h,
							    &err) == -1,
				      "accepted '%s'", bad[i]);
			mpictr_err_free(err);
		}
	}
}
END_TEST

START_TEST(test_step_from_env)
{
	char *env[] = {"SLURM_JOB_ID=12",
		       "SLURM_STEP_ID=0",
		       "SLURM_NODEID=1",
		       "SLURM_PROCID=5",
		       "SLURM_LOCALID=1",
		       "SLURM_STEP_TASKS_PER_NODE=4(x2),3",
		       NULL};
	struct slurm_step s;
	mpictr_err *err = NULL;

	ck_assert(slurm_in_step(env));
	ck_assert_int_eq(slurm_step_from_env(env, &s, &err), 0);
	ck_assert_uint_eq(s.local_tasks, 4);
	ck_assert_uint_eq(s.ntasks, 11);
	ck_assert_uint_eq(s.nnodes, 3);
	ck_assert_str_eq(s.job_id, "12");
	slurm_step_free(&s);
	env[2] = "SLURM_NODEID=3";
	ck_assert_int_eq(slurm_step_from_env(env, &s, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "SLURM_NODEID 3"));
	mpictr_err_free(err);
	err = NULL;
	env[2] = "SLURM_NODEID=1";
	env[0] = "SLURM_JOB_ID=../x";
	ck_assert_int_eq(slurm_step_from_env(env, &s, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "SLURM_JOB_ID"));
	mpictr_err_free(err);
}
END_TEST

Suite *suite_slurm(void);
Suite *suite_slurm(void)
{
	Suite *s = suite_create("slurm");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_tasks_per_node);
	tcase_add_test(tc, test_tasks_per_node_bad);
	tcase_add_test(tc, test_hostlist);
	tcase_add_test(tc, test_step_from_env);
	suite_add_tcase(s, tc);
	return s;
}
