/* check_mode.c - the one mode decision (mode.c), fed with recorded
 * launcher environments. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "plan/mode.h"
#include "common/util.h"

/* A step of 4 tasks on one node, as srun sets it (the launcher rule
 * checks SLURM_LOCALID, SLURM_NODEID and SLURM_GTIDS). */
#define STEP                                                                   \
	"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_PROCID=0",                 \
	    "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_GTIDS=0,1,2,3",        \
	    "SLURM_STEP_TASKS_PER_NODE=4"

#define OMPI4(lr, ls)                                                          \
	"OMPI_COMM_WORLD_RANK=" lr, "OMPI_COMM_WORLD_SIZE=" ls,                \
	    "OMPI_COMM_WORLD_LOCAL_RANK=" lr,                                  \
	    "OMPI_COMM_WORLD_LOCAL_SIZE=" ls, "PMIX_NAMESPACE=1839595521",     \
	    "PMIX_RANK=" lr,                                                   \
	    "OMPI_MCA_orte_hnp_uri=1839595520.0;tcp://10.0.0.1:40001"

/* The process facts: only rules PMI and NONE (and Hydra without
 * PMI_PORT) ask; a fixed parent keeps the test independent of /proc. */
static int fake_lookup(void *ctx, pid_t pid, struct launcher_proc_info *out,
		       mpictr_err **err)
{
	(void)ctx;
	(void)err;
	memset(out, 0, sizeof(*out));
	out->ppid = pid == 0 ? 100 : 1;
	out->start_time = 42;
	snprintf(out->comm, sizeof(out->comm), "%s", pid == 0 ? "me" : "sh");
	return 0;
}

static const struct launcher_proc fake_proc = {fake_lookup, NULL};

static void decide(char *const *env, int nranks, bool no_share,
		   struct run_decision *d)
{
	struct mpictr_config cfg = {.host_env = (char **)env,
				    .nranks = nranks,
				    .no_share = no_share};

	run_decision_free(d);
	run_decide_proc(&cfg, &fake_proc, d);
}

START_TEST(test_modes)
{
	struct run_decision d = {0};

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
	/* A step's variables that fail the Slurm checks (another launcher
	 * inside a step that sets nothing of its own): not a source of
	 * peers; the bare PMI rule groups the ranks by their parent, in
	 * counting mode. */
	decide((char *[]){STEP, "PMI_RANK=3", NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_PMI);
	ck_assert_uint_eq(d.peers.local_size, LAUNCHER_UNKNOWN);
	run_decision_free(&d);
}
END_TEST

START_TEST(test_launchers)
{
	struct run_decision d = {0};
	cleanup_free char *line = NULL;

	/* mpirun (Open MPI 4): join, with its local rank and size */
	decide((char *[]){OMPI4("1", "2"), NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_OPENMPI);
	ck_assert_uint_eq(d.peers.local_rank, 1);
	ck_assert_uint_eq(d.peers.local_size, 2);
	ck_assert(d.shared_ns && d.launcher_err == NULL);
	line = run_describe(&d);
	ck_assert_ptr_nonnull(strstr(line, "mode join; launcher: Open MPI"));
	/* ... nested in a step: the inner launcher wins over stale SLURM_* */
	decide((char *[]){STEP, OMPI4("1", "2"), NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_OPENMPI);
	/* --no-share, MPICTR_JOIN=0, -n: as under srun */
	decide((char *[]){OMPI4("1", "2"), NULL}, 0, true, &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert(!d.shared_ns);
	decide((char *[]){OMPI4("1", "2"), "MPICTR_JOIN=0", NULL}, 0, false,
	       &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert(!d.shared_ns);
	decide((char *[]){OMPI4("1", "2"), NULL}, 4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
	/* Hydra */
	decide((char *[]){"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALRANKID=0",
			  "MPI_LOCALNRANKS=2", "PMI_PORT=vm:4711", NULL},
	       0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_HYDRA);
	/* the site override, counting mode */
	decide((char *[]){"MPICTR_JOB_KEY=j1", NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_uint_eq(d.peers.local_size, LAUNCHER_UNKNOWN);
	free(line);
	line = run_describe(&d);
	ck_assert_ptr_nonnull(strstr(line, "counting mode"));
	ck_assert_ptr_nonnull(strstr(line, "linger"));
	/* a malformed value: join mode, which reports it */
	decide((char *[]){"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
			  "OMPI_COMM_WORLD_LOCAL_RANK=x",
			  "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL},
	       0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_ptr_nonnull(d.launcher_err);
	/* ... but not with -n, where it is not used */
	decide((char *[]){"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
			  "OMPI_COMM_WORLD_LOCAL_RANK=x",
			  "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL},
	       4, false, &d);
	ck_assert_int_eq(d.mode, RUN_LAUNCH);
	ck_assert_ptr_null(d.launcher_err);
	/* bare PMI, bare PMIx: join in counting mode; nothing: single */
	decide((char *[]){"PMI_FD=5", "PMI_RANK=0", NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_PMI);
	ck_assert_uint_eq(d.peers.local_size, LAUNCHER_UNKNOWN);
	decide((char *[]){"PMIX_NAMESPACE=n", "PMIX_RANK=0", NULL}, 0, false,
	       &d);
	ck_assert_int_eq(d.mode, RUN_JOIN);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_PMIX);
	ck_assert_uint_eq(d.peers.local_size, LAUNCHER_UNKNOWN);
	decide((char *[]){"PMIX_NAMESPACE=n", "PMIX_RANK=0", NULL}, 0, true,
	       &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE); /* --no-share */
	decide((char *[]){NULL}, 0, false, &d);
	ck_assert_int_eq(d.mode, RUN_SINGLE);
	ck_assert_int_eq(d.peers.rule, LAUNCHER_NONE);
	run_decision_free(&d);
}
END_TEST

START_TEST(test_pmix_servers)
{
	static const char *const uris[] = {
	    "PMIX_SERVER_URI41=x", "PMIX_SERVER_URI4=x", "PMIX_SERVER_URI3=x",
	    "PMIX_SERVER_URI21=x", "PMIX_SERVER_URI2=x"};
	struct run_decision d = {0};

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
	run_decision_free(&d);
}
END_TEST

Suite *suite_mode(void);
Suite *suite_mode(void)
{
	Suite *s = suite_create("mode");
	TCase *tc = tcase_create("decide");

	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_launchers);
	tcase_add_test(tc, test_pmix_servers);
	suite_add_tcase(s, tc);
	return s;
}
