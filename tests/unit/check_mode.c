/* check_mode.c - the one mode decision (mode.c), fed with recorded
 * launcher environments. */
#include <check.h>
#include <stdlib.h>

#include "config.h"
#include "mode.h"
#include "util.h"

#define STEP                                                                   \
	"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_PROCID=0",                 \
	    "SLURM_STEP_TASKS_PER_NODE=4"

static void decide(char *const *env, int nranks, bool no_share,
		   struct run_decision *d)
{
	struct mpictr_config cfg = {.host_env = (char **)env,
				    .nranks = nranks,
				    .no_share = no_share};

	run_decide(&cfg, d);
}

START_TEST(test_modes)
{
	struct run_decision d;

	decide((char *[]){NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert(d.shared_ns && !d.outer_pmi);
	decide((char *[]){NULL}, 4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
	decide((char *[]){STEP, NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert(d.shared_ns);
	decide((char *[]){STEP, NULL}, 0, true, &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert(!d.shared_ns);
	decide((char *[]){STEP, "MPICTR_JOIN=0", NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert(!d.shared_ns);
	/* -n under srun without PMIx: plain launch mode */
	decide((char *[]){STEP, NULL}, 4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
}
END_TEST

START_TEST(test_pmix_servers)
{
	static const char *const uris[] = {
	    "PMIX_SERVER_URI41=x", "PMIX_SERVER_URI4=x", "PMIX_SERVER_URI3=x",
	    "PMIX_SERVER_URI21=x", "PMIX_SERVER_URI2=x"};
	struct run_decision d;

	/* Every version counts the same for the node daemon and for the
	 * outer-PMI check (--fakeroot): one list. */
	for (size_t i = 0; i < ARRAY_SIZE(uris); i++) {
		decide((char *[]){STEP, "PMIX_NAMESPACE=n", (char *)uris[i],
				  NULL},
		       4, false, &d);
		ck_assert_int_eq(d.mode, RUN_NODE_DAEMON);
		ck_assert(d.outer_pmi);
	}
	decide((char *[]){STEP, "PMIX_NAMESPACE=n", "PMIX_SERVER_URI4=x",
			  "MPICTR_NODE_DAEMON=0", NULL},
	       4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
	decide((char *[]){STEP, "PMIX_SERVER_URI4=x", NULL}, 4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH); /* no PMIX_NAMESPACE */
	decide((char *[]){"PMI_FD=5", NULL}, 0, false, &d);
	ck_assert(d.outer_pmi);
	ck_assert(run_mode_serves_pmi(RUN_LAUNCH) &&
		  run_mode_serves_pmi(RUN_NODE_DAEMON) &&
		  !run_mode_serves_pmi(RUN_JOIN) &&
		  !run_mode_serves_pmi(RUN_SINGLE));
}
END_TEST

Suite *suite_mode(void);
Suite *suite_mode(void)
{
	Suite *s = suite_create("mode");
	TCase *tc = tcase_create("decide");

	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_pmix_servers);
	suite_add_tcase(s, tc);
	return s;
}
