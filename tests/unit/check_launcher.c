/* check_launcher.c - launcher detection against the environments in
 * tests/fixtures/launchers/ (recorded here, or written from
 * shared/reference/launchers.md), and against malformed values. */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "host/launcher.h"
#include "testutil.h"
#include "common/util.h"

/* ---- a fake process table ---- */

struct fake_proc {
	pid_t pid;
	struct launcher_proc_info info;
};

struct fake_table {
	struct fake_proc p[16];
	size_t n;
};

static int fake_lookup(void *ctx, pid_t pid, struct launcher_proc_info *out,
		       mpictr_err **err)
{
	struct fake_table *t = ctx;

	if (t->n == 0)
		return err_set(err, ENOENT, "no process table");
	if (pid == 0) {
		*out = t->p[0].info;
		return 0;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].pid == pid) {
			*out = t->p[i].info;
			return 0;
		}
	return err_set(err, ENOENT, "read '/proc/%d/stat'", (int)pid);
}

/* ---- fixtures ---- */

struct task {
	char **env;
	struct fake_table procs;
	char *expect; /* "openmpi rank=0/3 local=0/3 group=a" */
	char *host;   /* "@host": the caller adds its host name to the key */
	struct launch_peers got;
	int rc;
	char *msg;
};

static char **fixture_names;

static char *fixture_path(const char *name)
{
	return xasprintf("%s/tests/fixtures/launchers/%s", test_root(), name);
}

static size_t load_fixture(const char *name, struct task **tasks)
{
	cleanup_free char *path = fixture_path(name);
	cleanup_free char *buf = read_file(path, 1 << 20, NULL);
	struct task *t = NULL;
	size_t n = 0;
	char *save = NULL;

	ck_assert_msg(buf, "read %s", path);
	for (char *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (strcmp(l, "=== task") == 0) {
			t = xrealloc(t, (n + 1) * sizeof(*t));
			memset(&t[n++], 0, sizeof(*t));
			continue;
		}
		if (l[0] == '#')
			continue;
		ck_assert_msg(n > 0, "%s: line before '=== task': %s", name, l);
		if (str_has_prefix(l, "@proc ")) {
			struct fake_table *ft = &t[n - 1].procs;
			struct fake_proc *p = &ft->p[ft->n++];
			int pid, ppid;
			unsigned long long start;
			char comm[16];

			ck_assert(ft->n <= ARRAY_SIZE(ft->p));
			ck_assert_msg(sscanf(l, "@proc %d %d %llu %15s", &pid,
					     &ppid, &start, comm) == 4,
				      "%s: %s", name, l);
			p->pid = pid;
			p->info.ppid = ppid;
			p->info.start_time = start;
			snprintf(p->info.comm, sizeof(p->info.comm), "%s",
				 comm);
		} else if (str_has_prefix(l, "@host ")) {
			t[n - 1].host = xstrdup(l + 6);
		} else if (str_has_prefix(l, "@expect ")) {
			t[n - 1].expect = xstrdup(l + 8);
		} else {
			ck_assert_msg(strchr(l, '='), "%s: %s", name, l);
			strv_push(&t[n - 1].env, l);
		}
	}
	if (!t)
		t = xcalloc(1, sizeof(*t));
	*tasks = t;
	return n;
}

static void free_tasks(struct task *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		strv_free(t[i].env);
		free(t[i].expect);
		free(t[i].host);
		free(t[i].msg);
		launch_peers_free(&t[i].got);
	}
	free(t);
}

static void fmt_pair(char *buf, size_t len, uint32_t a, uint32_t b)
{
	char x[16] = "?", y[16] = "?";

	if (a != LAUNCHER_UNKNOWN)
		snprintf(x, sizeof(x), "%u", a);
	if (b != LAUNCHER_UNKNOWN)
		snprintf(y, sizeof(y), "%u", b);
	snprintf(buf, len, "%s/%s", x, y);
}

static const char *group_of(const char *expect)
{
	const char *g = strstr(expect, "group=");
	return g ? g + 6 : "";
}

START_TEST(test_fixture)
{
	const char *name = fixture_names[_i];
	struct task *t;
	size_t n = load_fixture(name, &t);

	ck_assert_msg(n > 0, "%s: no task", name);
	for (size_t i = 0; i < n; i++) {
		struct launcher_proc proc = {fake_lookup, &t[i].procs};
		mpictr_err *err = NULL;
		char rank[40], loc[40], got[200];
		cleanup_free char *line = NULL;

		ck_assert_msg(t[i].expect, "%s task %zu: no @expect", name, i);
		t[i].rc = launcher_detect(t[i].env, &proc, &t[i].got, &err);
		if (str_has_prefix(t[i].expect, "error ")) {
			ck_assert_msg(t[i].rc == -1, "%s task %zu: no error",
				      name, i);
			ck_assert_msg(
			    strstr(mpictr_err_message(err), t[i].expect + 6),
			    "%s task %zu: '%s'", name, i,
			    mpictr_err_message(err));
			mpictr_err_free(err);
			continue;
		}
		ck_assert_msg(t[i].rc == 0, "%s task %zu: %s", name, i,
			      mpictr_err_message(err));
		fmt_pair(rank, sizeof(rank), t[i].got.rank, t[i].got.size);
		fmt_pair(loc, sizeof(loc), t[i].got.local_rank,
			 t[i].got.local_size);
		snprintf(got, sizeof(got), "%s rank=%s local=%s group=%s",
			 launcher_rule_name(t[i].got.rule), rank, loc,
			 group_of(t[i].expect));
		line = launcher_describe(&t[i].got);
		ck_assert_msg(strcmp(got, t[i].expect) == 0,
			      "%s task %zu: got '%s', want '%s' (%s)", name, i,
			      got, t[i].expect, line);
		ck_assert(str_has_prefix(line, "launcher: "));
		ck_assert(t[i].got.key && *t[i].got.key);
		ck_assert(str_has_prefix(t[i].got.key,
					 launcher_rule_name(t[i].got.rule)));
	}
	/* Same group, same host and key; different groups, a different
	 * host or key. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			bool same_group = strcmp(group_of(t[i].expect),
						 group_of(t[j].expect)) == 0;
			bool same_key = streq0(t[i].host, t[j].host) &&
					strcmp(t[i].got.key, t[j].got.key) == 0;
			if (t[i].rc || t[j].rc)
				continue;
			ck_assert_msg(same_group == same_key,
				      "%s: tasks %zu and %zu: keys '%s' and "
				      "'%s' on %s and %s",
				      name, i, j, t[i].got.key, t[j].got.key,
				      t[i].host ? t[i].host : "one host",
				      t[j].host ? t[j].host : "one host");
		}
	free_tasks(t, n);
}
END_TEST

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_fixtures(void)
{
	cleanup_free char *dir = fixture_path("");
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n;

	strv_free(fixture_names);
	fixture_names = NULL;
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strlen(de->d_name) > 4 &&
		    strcmp(de->d_name + strlen(de->d_name) - 4, ".env") == 0)
			strv_push(&fixture_names, de->d_name);
	closedir(d);
	n = strv_len(fixture_names);
	if (n)
		qsort(fixture_names, n, sizeof(char *), cmp_str);
	return n;
}

START_TEST(test_fixture_count)
{
	/* Recorded: 20 files; written from the reference: 13. */
	ck_assert_uint_ge(list_fixtures(), 33);
}
END_TEST

/* ---- single environments ---- */

static int detect(char **env, struct launch_peers *p, mpictr_err **err)
{
	static struct fake_table procs = {{{100, {99, 1000, "mpictr"}},
					   {99, {98, 990, "hydra_pmi_proxy"}},
					   {98, {1, 980, "mpiexec.hydra"}}},
					  3};
	struct launcher_proc proc = {fake_lookup, &procs};

	return launcher_detect(env, &proc, p, err);
}

static void want_error(char **env, const char *what)
{
	struct launch_peers p;
	mpictr_err *err = NULL;

	ck_assert_msg(detect(env, &p, &err) == -1, "accepted (%s): %s", what,
		      p.key);
	ck_assert_msg(strstr(mpictr_err_message(err), what), "'%s' lacks '%s'",
		      mpictr_err_message(err), what);
	mpictr_err_free(err);
	launch_peers_free(&p);
}

#define OMPI4(r, s, lr, ls)                                                    \
	"OMPI_COMM_WORLD_RANK=" r, "OMPI_COMM_WORLD_SIZE=" s,                  \
	    "OMPI_COMM_WORLD_LOCAL_RANK=" lr,                                  \
	    "OMPI_COMM_WORLD_LOCAL_SIZE=" ls, "PMIX_NAMESPACE=77"

START_TEST(test_malformed)
{
	static const char *bad_nums[] = {"-1",		"abc",	   "",	 " 1",
					 "1 ",		"+1",	   "1x", "0x10",
					 "99999999999", "16777216"};

	for (size_t i = 0; i < ARRAY_SIZE(bad_nums); i++) {
		cleanup_free char *v =
		    xasprintf("OMPI_COMM_WORLD_LOCAL_RANK=%s", bad_nums[i]);
		char *env[] = {"OMPI_COMM_WORLD_RANK=0",
			       "OMPI_COMM_WORLD_SIZE=2",
			       v,
			       "OMPI_COMM_WORLD_LOCAL_SIZE=2",
			       "PMIX_NAMESPACE=77",
			       NULL};
		want_error(env, "OMPI_COMM_WORLD_LOCAL_RANK '");
	}
	{
		char *env[] = {OMPI4("0", "2", "2", "2"), NULL};
		want_error(env, "OMPI_COMM_WORLD_LOCAL_RANK 2 is not below "
				"OMPI_COMM_WORLD_LOCAL_SIZE 2");
	}
	{
		char *env[] = {OMPI4("2", "2", "0", "2"), NULL};
		want_error(env, "OMPI_COMM_WORLD_RANK 2 is not below");
	}
	{
		char *env[] = {OMPI4("0", "2", "0", "3"), NULL};
		want_error(env, "OMPI_COMM_WORLD_LOCAL_SIZE 3 is above");
	}
	{
		/* a stale outer Open MPI under an inner PMIx launcher */
		char *env[] = {OMPI4("0", "2", "0", "2"), "PMIX_RANK=1", NULL};
		want_error(env, "OMPI_COMM_WORLD_RANK 0 and PMIX_RANK 1 "
				"disagree");
	}
	{
		char *env[] = {"OMPI_COMM_WORLD_RANK=0",
			       "OMPI_COMM_WORLD_SIZE=2",
			       "OMPI_COMM_WORLD_LOCAL_RANK=0",
			       "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL};
		want_error(env, "no job id");
	}
	{
		char *env[] = {"MPI_LOCALRANKID=3", "MPI_LOCALNRANKS=2",
			       "PMI_RANK=0", NULL};
		want_error(env, "MPI_LOCALRANKID 3 is not below "
				"MPI_LOCALNRANKS 2");
	}
	{
		char *env[] = {"MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=4",
			       "PMI_RANK=0", "PMI_SIZE=2", NULL};
		want_error(env, "MPI_LOCALNRANKS 4 is above PMI_SIZE 2");
	}
	{
		char *env[] = {"FLUX_JOB_ID=f1", "FLUX_TASK_RANK=1",
			       "FLUX_TASK_LOCAL_ID=0", "PMI_RANK=0", NULL};
		want_error(env, "FLUX_TASK_RANK 1 and PMI_RANK 0 disagree");
	}
	{
		char *env[] = {"FLUX_JOB_ID=f1",       "FLUX_TASK_RANK=0",
			       "FLUX_TASK_LOCAL_ID=0", "FLUX_JOB_SIZE=1",
			       "PMI_SIZE=2",	       NULL};
		want_error(env, "FLUX_JOB_SIZE 1 and PMI_SIZE 2 disagree");
	}
	{
		char *env[] = {"PALS_APID=a",	      "PALS_RANKID=0",
			       "PALS_LOCAL_RANKID=0", "PALS_LOCAL_SIZE=2",
			       "PMI_LOCAL_SIZE=3",    NULL};
		want_error(env, "PALS_LOCAL_SIZE 2 and PMI_LOCAL_SIZE 3");
	}
	{
		char *env[] = {"PALS_APID=a", "PALS_RANKID=0",
			       "PALS_LOCAL_RANKID=2", "PALS_LOCAL_SIZE=2",
			       NULL};
		want_error(env, "PALS_LOCAL_RANKID 2 is not below");
	}
	{
		char *env[] = {"JSM_NAMESPACE_RANK=0",
			       "JSM_NAMESPACE_LOCAL_RANK=x",
			       "JSM_NAMESPACE_LOCAL_SIZE=2", NULL};
		want_error(env, "JSM_NAMESPACE_LOCAL_RANK 'x'");
	}
	{
		char *env[] = {"ALPS_APP_ID=1", "ALPS_APP_PE=-3", NULL};
		want_error(env, "ALPS_APP_PE '-3'");
	}
	{
		char *env[] = {"MPICTR_JOB_KEY=", NULL};
		want_error(env, "MPICTR_JOB_KEY is empty");
	}
	{
		char *env[] = {"MPICTR_JOB_KEY=k", "MPICTR_LOCAL_RANK=2",
			       "MPICTR_LOCAL_SIZE=2", NULL};
		want_error(env, "MPICTR_LOCAL_RANK 2 is not below "
				"MPICTR_LOCAL_SIZE 2");
	}
	{
		char *env[] = {"MPICTR_JOB_KEY=k", "MPICTR_LOCAL_SIZE=two",
			       NULL};
		want_error(env, "MPICTR_LOCAL_SIZE 'two'");
	}
	{
		/* MPICTR_LOCAL_SIZE without a key must match the launcher */
		char *env[] = {OMPI4("0", "4", "0", "2"), "MPICTR_LOCAL_SIZE=4",
			       NULL};
		want_error(env, "MPICTR_LOCAL_SIZE 4 contradicts");
	}
	{
		char *env[] = {"ALPS_APP_ID=1", "ALPS_APP_PE=0",
			       "MPICTR_LOCAL_RANK=3", "MPICTR_LOCAL_SIZE=2",
			       NULL};
		want_error(env, "local rank 3 is not below local size 2");
	}
	{
		char *env[] = {"PMIX_NAMESPACE=x", "PMIX_RANK=1e3", NULL};
		want_error(env, "PMIX_RANK '1e3'");
	}
	{
		char *env[] = {"PMI_RANK=5", "PMI_SIZE=5", NULL};
		want_error(env, "PMI_RANK 5 is not below PMI_SIZE 5");
	}
}
END_TEST

#define SLURM_STEP(extra...)                                                   \
	"SLURM_JOB_ID=12", "SLURM_STEP_ID=3", "SLURM_NODEID=1",                \
	    "SLURM_PROCID=5", "SLURM_LOCALID=1",                               \
	    "SLURM_STEP_TASKS_PER_NODE=4(x2),3", ##extra, NULL

START_TEST(test_slurm)
{
	struct launch_peers p;
	mpictr_err *err = NULL;

	{
		char *env[] = {SLURM_STEP("SLURM_GTIDS=4,5,6,7",
					  "SLURMD_NODENAME=n2",
					  "SLURM_JOB_SLUID=sl1")};
		cleanup_free char *line = NULL;

		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_SLURM);
		ck_assert_uint_eq(p.rank, 5);
		ck_assert_uint_eq(p.size, 11);
		ck_assert_uint_eq(p.local_rank, 1);
		ck_assert_uint_eq(p.local_size, 4);
		ck_assert_uint_eq(p.node_id, 1);
		ck_assert_str_eq(p.node_name, "n2");
		ck_assert_str_eq(p.key, "slurm|12|3|sl1");
		line = launcher_describe(&p);
		ck_assert_str_eq(
		    line, "launcher: Slurm, rank 5 of 11, local rank 1 of 4, "
			  "node n2, key slurm|12|3|sl1, read SLURM_JOB_ID, "
			  "SLURM_STEP_ID, SLURM_PROCID, SLURM_LOCALID, "
			  "SLURM_NODEID, SLURM_STEP_TASKS_PER_NODE, "
			  "SLURM_GTIDS, SLURMD_NODENAME, SLURM_JOB_SLUID");
		launch_peers_free(&p);
	}
	{
		char *env[] = {SLURM_STEP("SLURM_GTIDS=4,6,7")};
		want_error(env, "SLURM_GTIDS '4,6,7' does not contain "
				"SLURM_PROCID 5");
	}
	{
		char *env[] = {SLURM_STEP("SLURM_GTIDS=4,5,6")};
		want_error(env, "SLURM_GTIDS has 3 tasks, "
				"SLURM_STEP_TASKS_PER_NODE 4");
	}
	{
		static const char *bad[] = {"4,,5", "5,",	  ",5", "5 ",
					    "a",    "1234567890", ""};
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			cleanup_free char *v =
			    xasprintf("SLURM_GTIDS=%s", bad[i]);
			char *env[] = {SLURM_STEP(v)};
			want_error(env, "SLURM_GTIDS '");
		}
	}
	{
		char *env[] = {"SLURM_JOB_ID=12",
			       "SLURM_STEP_ID=3",
			       "SLURM_NODEID=1",
			       "SLURM_PROCID=5",
			       "SLURM_LOCALID=4",
			       "SLURM_STEP_TASKS_PER_NODE=4(x2),3",
			       NULL};
		/* slurm.c's own checks, wrapped with what was read */
		want_error(env, "SLURM_LOCALID 4 / SLURM_PROCID 5 do not fit");
		want_error(env, "Slurm launcher (read SLURM_JOB_ID");
	}
	{
		char *env[] = {"SLURM_JOB_ID=12", "SLURM_STEP_ID=x3",
			       "SLURM_PROCID=0", "SLURM_LOCALID=0", NULL};
		want_error(env, "SLURM_STEP_ID 'x3' is malformed");
	}
	{
		char *env[] = {"SLURM_JOB_ID=12", "SLURM_STEP_ID=0",
			       "SLURM_PROCID=0",  "SLURM_LOCALID=0",
			       "SLURM_NODEID=0",  NULL};
		want_error(env, "SLURM_STEP_TASKS_PER_NODE");
	}
	{
		/* stale srun --mpi=pmix variables under a PMIx launcher that
		 * is not Open MPI: Slurm passed over, with a note */
		char *env[] = {SLURM_STEP("PMIX_NAMESPACE=slurm.pmix.12.3",
					  "PMIX_RANK=6")};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_PMIX);
		ck_assert_uint_eq(p.rank, 6);
		ck_assert_uint_eq(p.local_size, LAUNCHER_UNKNOWN);
		ck_assert(p.notes && strstr(p.notes[0], "slurm: PMIX_RANK"));
		ck_assert(!strstr(p.key, "slurm|"));
		launch_peers_free(&p);
	}
	{
		char *env[] = {SLURM_STEP("PMIX_NAMESPACE=slurm.pmix.12.3",
					  "PMIX_RANK=5")};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_SLURM);
		launch_peers_free(&p);
	}
	{
		char *env[] = {
		    SLURM_STEP("PMI_JOBID=12.3", "PMI_RANK=5", "PMI_SIZE=11")};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_SLURM);
		launch_peers_free(&p);
	}
	{
		/* PMI_JOBID of another step */
		char *env[] = {
		    SLURM_STEP("PMI_JOBID=12.2", "PMI_RANK=5", "PMI_SIZE=11")};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_PMI);
		ck_assert_uint_eq(p.anchor_pid, 99);
		launch_peers_free(&p);
	}
}
END_TEST

START_TEST(test_read_list)
{
	char *env[] = {OMPI4("1", "4", "1", "4"),
		       "OMPI_MCA_orte_hnp_uri=1.0;tcp://10.0.0.1:5",
		       "PMIX_RANK=1",
		       "PMIX_HOSTNAME=vm",
		       "SLURM_JOB_ID=3",
		       NULL};
	struct launch_peers p;
	mpictr_err *err = NULL;
	cleanup_free char *rd = NULL, *line = NULL;

	ck_assert_int_eq(detect(env, &p, &err), 0);
	rd = launcher_read_list(&p);
	ck_assert_str_eq(rd, "read OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, "
			     "OMPI_COMM_WORLD_LOCAL_RANK, "
			     "OMPI_COMM_WORLD_LOCAL_SIZE, PMIX_RANK, "
			     "PMIX_NAMESPACE, OMPI_MCA_orte_hnp_uri, "
			     "PMIX_HOSTNAME");
	line = launcher_describe(&p);
	ck_assert_str_eq(line,
			 "launcher: Open MPI (ORTE), rank 1 of 4, local rank 1 "
			 "of 4, node vm, key openmpi|77|1.0;tcp://10.0.0.1:5, "
			 "read OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, "
			 "OMPI_COMM_WORLD_LOCAL_RANK, "
			 "OMPI_COMM_WORLD_LOCAL_SIZE, PMIX_RANK, "
			 "PMIX_NAMESPACE, OMPI_MCA_orte_hnp_uri, "
			 "PMIX_HOSTNAME");
	launch_peers_free(&p);
}
END_TEST

START_TEST(test_counting_and_override)
{
	struct launch_peers p;
	mpictr_err *err = NULL;

	{
		char *env[] = {"ALPS_APP_ID=9", "ALPS_APP_PE=3", NULL};
		cleanup_free char *line = NULL;

		ck_assert_int_eq(detect(env, &p, &err), 0);
		line = launcher_describe(&p);
		ck_assert_str_eq(line,
				 "launcher: Cray ALPS, rank 3 of ?, local rank "
				 "? of ? (counting mode), key alps|9, read "
				 "ALPS_APP_PE, ALPS_APP_ID");
		launch_peers_free(&p);
	}
	{
		char *env[] = {"ALPS_APP_ID=9", "ALPS_APP_PE=3",
			       "MPICTR_LOCAL_RANK=1", "MPICTR_LOCAL_SIZE=4",
			       NULL};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_uint_eq(p.local_rank, 1);
		ck_assert_uint_eq(p.local_size, 4);
		launch_peers_free(&p);
	}
	{
		/* agreeing with the launcher is fine */
		char *env[] = {OMPI4("0", "4", "0", "2"), "MPICTR_LOCAL_SIZE=2",
			       NULL};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_uint_eq(p.local_size, 2);
		launch_peers_free(&p);
	}
	{
		/* explicit key: as given, escaped */
		char *env[] = {"MPICTR_JOB_KEY=a|b\\c\x01", NULL};
		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_str_eq(p.key, "explicit|a\\x7cb\\x5cc\\x01");
		ck_assert_uint_eq(p.local_size, LAUNCHER_UNKNOWN);
		launch_peers_free(&p);
	}
	{
		char *env[] = {NULL};
		cleanup_free char *line = NULL;

		ck_assert_int_eq(detect(env, &p, &err), 0);
		ck_assert_int_eq(p.rule, LAUNCHER_NONE);
		ck_assert_str_eq(p.key, "none|99:990");
		line = launcher_describe(&p);
		ck_assert_str_eq(line, "launcher: no launcher, local rank ? of "
				       "? (counting mode), anchor pid 99, key "
				       "none|99:990, read no variables");
		launch_peers_free(&p);
	}
	{
		/* a key part over 4096 bytes is refused, not cut */
		cleanup_free char *big = xmalloc(5000);
		memset(big, 'x', 4999);
		big[4999] = '\0';
		cleanup_free char *v = xasprintf("MPICTR_JOB_KEY=%s", big);
		char *env[] = {v, NULL};
		want_error(env, "MPICTR_JOB_KEY is longer than 4096");
	}
}
END_TEST

START_TEST(test_no_process_info)
{
	char *env[] = {"MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=1", "PMI_RANK=0",
		       NULL};
	struct launch_peers p;
	mpictr_err *err = NULL;

	ck_assert_int_eq(launcher_detect(env, NULL, &p, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "MPICH Hydra launcher"));
	ck_assert(strstr(mpictr_err_message(err), "needs the parent process"));
	mpictr_err_free(err);
	launch_peers_free(&p);
	/* port mode needs none */
	char *env2[] = {"MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=1", "PMI_ID=0",
			"PMI_PORT=vm:4000", NULL};
	ck_assert_int_eq(launcher_detect(env2, NULL, &p, &err), 0);
	ck_assert_str_eq(p.key, "hydra|vm:4000");
	launch_peers_free(&p);
}
END_TEST

START_TEST(test_ancestor_cycle)
{
	/* a looping process table ends at the depth bound: no proxy found,
	 * the parent is the key, with a note */
	static struct fake_table procs = {{{100, {99, 1000, "mpictr"}},
					   {99, {98, 990, "sh"}},
					   {98, {99, 980, "sh"}}},
					  3};
	struct launcher_proc proc = {fake_lookup, &procs};
	char *env[] = {"MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=1", "PMI_RANK=0",
		       NULL};
	struct launch_peers p;
	mpictr_err *err = NULL;

	ck_assert_int_eq(launcher_detect(env, &proc, &p, &err), 0);
	ck_assert_str_eq(p.key, "hydra|99:990");
	ck_assert(p.notes && strstr(p.notes[0], "no hydra_pmi_proxy"));
	launch_peers_free(&p);
}
END_TEST

START_TEST(test_parse_stat)
{
	struct launcher_proc_info pi;
	static const char ok[] =
	    "4000 (hydra_pmi_proxy) S 3990 4000 3900 0 -1 4194560 100 0 0 0 "
	    "1 2 0 0 20 0 1 0 150378 1000 10 ...";
	static const char odd[] = "12 (a) b) (c d) R 7 12 12 0 -1 0 0 0 0 0 0 "
				  "0 0 0 -20 -5 1 0 42 0 0";
	static const char *bad[] = {
	    "",
	    "12",
	    "12 (x",
	    "12 x) S 1 2",
	    "12 (x) S 1 2 3",
	    "12 (x) S -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
	    "12 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5",
	    "12 (x) S 99999999999 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
	    "12 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
	    "99999999999999999999999"};

	ck_assert_int_eq(launcher_parse_stat(ok, strlen(ok), &pi), 0);
	ck_assert_str_eq(pi.comm, "hydra_pmi_proxy");
	ck_assert_int_eq(pi.ppid, 3990);
	ck_assert_uint_eq(pi.start_time, 150378);
	ck_assert_int_eq(launcher_parse_stat(odd, strlen(odd), &pi), 0);
	ck_assert_str_eq(pi.comm, "a) b) (c d");
	ck_assert_int_eq(pi.ppid, 7);
	ck_assert_uint_eq(pi.start_time, 42);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(
		    launcher_parse_stat(bad[i], strlen(bad[i]), &pi) == -1,
		    "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(test_proc_host)
{
	struct launcher_proc_info self, parent;
	mpictr_err *err = NULL;
	char *env[] = {"PMI_FD=5", NULL};
	struct launch_peers p;
	cleanup_free char *want = NULL;

	ck_assert_int_eq(launcher_proc_host.lookup(NULL, 0, &self, &err), 0);
	ck_assert_int_eq(self.ppid, getppid());
	ck_assert_int_eq(
	    launcher_proc_host.lookup(NULL, self.ppid, &parent, &err), 0);
	ck_assert_uint_le(parent.start_time, self.start_time);
	ck_assert_int_eq(
	    launcher_proc_host.lookup(NULL, 0x7ffffffe, &parent, &err), -1);
	ck_assert(strstr(mpictr_err_message(err), "/proc/2147483646/stat"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(launcher_detect(env, &launcher_proc_host, &p, &err),
			 0);
	want = xasprintf("pmi|%d:", (int)getppid());
	ck_assert(str_has_prefix(p.key, want));
	launch_peers_free(&p);
}
END_TEST

Suite *suite_launcher(void);
Suite *suite_launcher(void)
{
	Suite *s = suite_create("launcher");
	TCase *tc = tcase_create("detect");
	int n = (int)list_fixtures();

	tcase_add_test(tc, test_fixture_count);
	tcase_add_loop_test(tc, test_fixture, 0, n);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_slurm);
	tcase_add_test(tc, test_read_list);
	tcase_add_test(tc, test_counting_and_override);
	tcase_add_test(tc, test_no_process_info);
	tcase_add_test(tc, test_ancestor_cycle);
	tcase_add_test(tc, test_parse_stat);
	tcase_add_test(tc, test_proc_host);
	suite_add_tcase(s, tc);
	return s;
}
