/* pmix_server.c - the only user of libpmix (openpmix 4.2): server init, job
 * registration, the host module callbacks, per-rank environment.
 *
 * Prefix legend: PMIx_* / PMIX_* / pmix_* are openpmix's; pmi_pmix_* are
 * ours. libpmix is process-global, so this file keeps one static state.
 *
 * libpmix calls the module from its own progress thread; every callback here
 * answers at once. Library calls that complete asynchronously are awaited on
 * a mutex+condvar (struct waiter), never by spinning. Registration uses the
 * blocking forms (NULL cbfunc), which 4.2 documents. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "pmi/pmi_internal.h"
#include "pmi/pmix_dyn.h"
#include "pmi/pmix_gate.h"
#include "common/proc.h"
#include "common/util.h"

extern char **environ;

/* How long PMIx_server_init and the teardown may take (they take well
 * under a second): a libpmix that is stuck never holds the job. */
#define PMIX_INIT_MS 15000
#define PMIX_TEARDOWN_MS 5000

static struct {
	bool initialized;
	bool wedged; /* a call into libpmix was abandoned: no more calls */
	bool registered;
	pmix_nspace_t nspace;
	struct pmi_hooks hooks;
	struct pmix_gate *gate; /* only the job's user reaches libpmix */
	char *tmpdir;
} g;

/* ---- waiting for asynchronous completions ---- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	pmix_status_t status;
};

#define WAITER_INIT                                                            \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false,    \
		    PMIX_SUCCESS                                               \
	}

static void waiter_op_cb(pmix_status_t status, void *cbdata)
{
	struct waiter *w = cbdata;

	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static pmix_status_t waiter_wait(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return w->status;
}

static int pmix_fail(mpictr_err **err, pmix_status_t rc, const char *what)
{
	return err_set(err, 0, "pmix: %s: %s", what, PMIx_Error_string(rc));
}

static bool pmix_ok(pmix_status_t rc)
{
	return rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED;
}

/* ---- calls into libpmix that may not return ---- */

/* One call on a thread of its own, which the caller waits for at most a
 * given time, and no longer once SIGTERM, SIGINT or SIGHUP is pending (the
 * launcher blocks them and reads them from a signalfd after we return).
 * A call that does not finish in time is abandoned: its thread runs on and
 * frees the record, and libpmix is not called again (g.wedged). */
struct bounded {
	void (*fn)(struct bounded *b);
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, abandoned;
	pmix_info_t info[3]; /* PMIx_server_init's */
	pmix_status_t rc;
};

static void bounded_free(struct bounded *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(b->info); i++)
		PMIX_INFO_DESTRUCT(&b->info[i]);
	free(b);
}

static void *bounded_main(void *arg)
{
	struct bounded *b = arg;
	bool orphan;

	b->fn(b);
	pthread_mutex_lock(&b->lock);
	b->done = true;
	orphan = b->abandoned;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (orphan)
		bounded_free(b);
	return NULL;
}

static bool end_requested(void)
{
	sigset_t p;

	return sigpending(&p) == 0 &&
	       (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1 ||
		sigismember(&p, SIGHUP) == 1);
}

/* 0: b->fn returned (b is still the caller's); -1 with *err: abandoned
 * (b is the thread's now). */
static int run_bounded(struct bounded *b, long ms, const char *what,
		       mpictr_err **err)
{
	long deadline = mono_ms() + ms;
	pthread_attr_t a;
	pthread_t t;
	bool signalled = false;
	int rc;

	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, bounded_main, b);
	pthread_attr_destroy(&a);
	if (rc != 0) {
		b->fn(b); /* no thread to spare: unbounded, as before */
		return 0;
	}
	pthread_mutex_lock(&b->lock);
	while (!b->done) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
		if (b->done)
			break;
		signalled = end_requested();
		if (signalled || mono_ms() >= deadline) {
			b->abandoned = true;
			pthread_mutex_unlock(&b->lock);
			g.wedged = true;
			return err_set(err, signalled ? EINTR : ETIMEDOUT,
				       "pmix: %s %s (libpmix %s): abandoned",
				       what,
				       signalled ? "interrupted by a signal"
						 : "did not finish in time",
				       PMIx_Get_version());
		}
	}
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* ---- host module ---- */

static bool ours(const pmix_proc_t *proc)
{
	return proc && PMIX_CHECK_NSPACE(proc->nspace, g.nspace);
}

static pmix_status_t on_client_connected(const pmix_proc_t *proc,
					 void *server_object,
					 pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	/* A notification: 4.2 passes no cbfunc. */
	if (ours(proc))
		g.hooks.rank_event(g.hooks.ctx, proc->rank, RANK_EV_CONNECTED);
	else if (proc && g.hooks.proc_event)
		g.hooks.proc_event(g.hooks.ctx, proc->nspace, proc->rank,
				   RANK_EV_CONNECTED);
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

static pmix_status_t on_client_finalized(const pmix_proc_t *proc,
					 void *server_object,
					 pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	/* The client waits in PMIx_Finalize until we return, so the glue
	 * learns of it before the rank can exit. */
	if (ours(proc))
		g.hooks.rank_event(g.hooks.ctx, proc->rank, RANK_EV_FINALIZED);
	else if (proc && g.hooks.proc_event)
		g.hooks.proc_event(g.hooks.ctx, proc->nspace, proc->rank,
				   RANK_EV_FINALIZED);
	return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *server_object,
			      int status, const char msg[], pmix_proc_t procs[],
			      size_t nprocs, pmix_op_cbfunc_t cbfunc,
			      void *cbdata)
{
	char text[256];

	/* Whatever subset procs names, mpictr ends the whole job. */
	if (!proc || ours(proc))
		snprintf(text, sizeof(text), "rank %u called abort%s%.200s",
			 proc ? proc->rank : 0, msg && *msg ? ": " : "",
			 msg ? msg : "");
	else
		snprintf(text, sizeof(text),
			 "spawned process %.64s:%u called abort%s%.160s",
			 proc->nspace, proc->rank, msg && *msg ? ": " : "",
			 msg ? msg : "");
	g.hooks.abort(g.hooks.ctx, status, text);
	return PMIX_OPERATION_SUCCEEDED; /* releases the caller */
}

static void fence_release(void *cbdata)
{
	free(cbdata);
}

struct fence_op {
	pmix_modex_cbfunc_t cbfunc;
	void *cbdata;
};

static void fence_upstream_done(void *arg, int status, char *all, size_t len)
{
	struct fence_op *op = arg;

	op->cbfunc(status == 0 ? PMIX_SUCCESS : PMIX_ERROR, all, len,
		   op->cbdata, fence_release, all);
	free(op);
}

/* Called only when a fence spans more than this server's ranks (libpmix
 * completes local-only fences itself). The blob is opaque: the result is the
 * concatenation of every node's contribution, in any order. `data` is not
 * ours to keep, hence the copy. */
static pmix_status_t on_fence_nb(const pmix_proc_t procs[], size_t nprocs,
				 const pmix_info_t info[], size_t ninfo,
				 char *data, size_t ndata,
				 pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	char *copy = NULL;

	log_debug("pmix: fence_nb over %zu proc entries, %zu bytes", nprocs,
		  ndata);
	if (ndata) {
		copy = xmalloc(ndata);
		memcpy(copy, data, ndata);
	}
	if (g.hooks.upstream_fence) {
		struct fence_op *op = xmalloc(sizeof(*op));

		op->cbfunc = cbfunc;
		op->cbdata = cbdata;
		if (g.hooks.upstream_fence(g.hooks.ctx, copy, ndata,
					   fence_upstream_done, op) < 0) {
			free(op);
			free(copy);
			return PMIX_ERROR;
		}
		free(copy);
		return PMIX_SUCCESS;
	}
	/* One node: our contribution is everything. */
	cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, fence_release, copy);
	return PMIX_SUCCESS;
}

static pmix_status_t on_direct_modex(const pmix_proc_t *proc,
				     const pmix_info_t info[], size_t ninfo,
				     pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	/* Every rank's data comes with the collecting fence; remote lookups
	 * on demand are not implemented. */
	return PMIX_ERR_NOT_FOUND;
}

static pmix_server_module_t module = {
    .client_connected = on_client_connected,
    .client_finalized = on_client_finalized,
    .abort = on_abort,
    .fence_nb = on_fence_nb,
    .direct_modex = on_direct_modex,
    .publish = pmix_dyn_publish,
    .lookup = pmix_dyn_lookup,
    .unpublish = pmix_dyn_unpublish,
    .spawn = pmix_dyn_spawn,
    .connect = pmix_dyn_connect,
    .disconnect = pmix_dyn_disconnect,
};

/* ---- environment hygiene ---- */

/* PMIx_server_init reads PMIX_* variables (MCA parameters, tmpdirs, security
 * mode, a launcher's rendezvous URI). Under srun this process inherits
 * Slurm's, which describe Slurm's server, not ours: drop them all. A user
 * who wants an MCA parameter for our server says MPICTR_PMIX_MCA_<name>.
 * The library must not leave the caller's environ changed: returns every
 * PMIX_* variable as it was, for restore_environment() right after
 * PMIx_server_init has read them. */
static char **scrub_environment(void)
{
	char **names = NULL, **saved = NULL;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq && str_has_prefix(*e, "PMIX_"))
			strv_push(&saved, *e);
		if (eq && (str_has_prefix(*e, "PMIX_") ||
			   str_has_prefix(*e, "MPICTR_PMIX_MCA_")))
			strv_push_own(&names, xstrndup(*e, (size_t)(eq - *e)));
	}
	for (char **n = names; n && *n; n++)
		if (str_has_prefix(*n, "PMIX_"))
			unsetenv(*n);
	for (char **n = names; n && *n; n++) {
		if (str_has_prefix(*n, "MPICTR_PMIX_MCA_")) {
			const char *v = getenv(*n);

			if (v)
				setenv(*n + strlen("MPICTR_"), v, 1);
		}
	}
	strv_free(names);
	return saved;
}

/* Undo scrub_environment: the PMIX_* variables are those of saved again
 * (whatever libpmix or the scrub set is removed). Frees saved. */
static void restore_environment(char **saved)
{
	char **names = NULL;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq && str_has_prefix(*e, "PMIX_"))
			strv_push_own(&names, xstrndup(*e, (size_t)(eq - *e)));
	}
	for (char **n = names; n && *n; n++)
		unsetenv(*n);
	for (char **kv = saved; kv && *kv; kv++) {
		char *eq = strchr(*kv, '=');

		*eq = '\0';
		setenv(*kv, eq + 1, 1);
	}
	strv_free(names);
	strv_free(saved);
}

/* ---- job registration ---- */

static int list_add(void *list, const char *key, const void *value,
		    pmix_data_type_t type, mpictr_err **err)
{
	pmix_status_t rc = PMIx_Info_list_add(list, key, value, type);

	if (rc != PMIX_SUCCESS)
		return err_set(err, 0, "pmix: add job key '%s': %s", key,
			       PMIx_Error_string(rc));
	return 0;
}

static int add_regex(void *list, const char *key, const char *input, bool ppn,
		     mpictr_err **err)
{
	char *regex = NULL;
	pmix_status_t rc = ppn ? PMIx_generate_ppn(input, &regex)
			       : PMIx_generate_regex(input, &regex);
	int r;

	if (rc != PMIX_SUCCESS)
		return err_set(err, 0, "pmix: generate %s: %s", key,
			       PMIx_Error_string(rc));
	/* The result may be a binary blob with NULs (zlib form); only the
	 * PMIX_REGEX type copies it by its real length. */
	r = list_add(list, key, regex, PMIX_REGEX, err);
	free(regex);
	return r;
}

static int add_proc_data(void *list, const struct pmi_job *job,
			 const struct pmi_spawn *sp, uint32_t r,
			 mpictr_err **err)
{
	void *pl = PMIx_Info_list_start();
	pmix_data_array_t darray;
	pmix_rank_t rank = r, ldr = 0, app_rank = r;
	uint32_t appnum = 0, nodeid = job->rank_node[r];
	long li = pmi_job_local_index(job, r);
	int ret = -1;
	pmix_status_t rc;

	if (sp) {
		/* MPI_Comm_spawn_multiple: ranks app by app (MPI_APPNUM) */
		appnum = (uint32_t)pmi_spawn_app_of(sp, r, &app_rank);
		ldr = r - app_rank;
	}
	if (list_add(pl, PMIX_RANK, &rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_APPNUM, &appnum, PMIX_UINT32, err) < 0 ||
	    list_add(pl, PMIX_APPLDR, &ldr, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_GLOBAL_RANK, &rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_APP_RANK, &app_rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_HOSTNAME, job->hostnames[nodeid], PMIX_STRING,
		     err) < 0 ||
	    list_add(pl, PMIX_NODEID, &nodeid, PMIX_UINT32, err) < 0)
		goto out;
	if (li >= 0) {
		/* One app per job, so the node rank is the local rank. */
		uint16_t lr = (uint16_t)li;

		if (list_add(pl, PMIX_LOCAL_RANK, &lr, PMIX_UINT16, err) < 0 ||
		    list_add(pl, PMIX_NODE_RANK, &lr, PMIX_UINT16, err) < 0)
			goto out;
	}
	memset(&darray, 0, sizeof(darray));
	rc = PMIx_Info_list_convert(pl, &darray);
	if (rc != PMIX_SUCCESS) {
		pmix_fail(err, rc, "build proc data");
		goto out;
	}
	ret = list_add(list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY, err);
	PMIx_Data_array_destruct(&darray);
out:
	PMIx_Info_list_release(pl);
	return ret;
}

/* The parent of a spawned job: PMIX_PARENT_ID tells Open MPI's
 * MPI_Comm_get_parent whom to connect to. */
static int add_parent(void *list, const struct pmi_spawn *sp, mpictr_err **err)
{
	pmix_proc_t parent;
	bool yes = true;

	PMIX_LOAD_PROCID(&parent, sp->parent_nspace, sp->parent_rank);
	if (list_add(list, PMIX_PARENT_ID, &parent, PMIX_PROC, err) < 0)
		return -1;
	return list_add(list, PMIX_SPAWNED, &yes, PMIX_BOOL, err);
}

static int build_job_info(const struct pmi_job *job, const struct pmi_spawn *sp,
			  const char *tmpdir, void *list, mpictr_err **err)
{
	cleanup_free char *nodes = pmi_job_node_list(job);
	cleanup_free char *procs = pmi_job_proc_list(job);
	cleanup_free char *peers = pmi_job_local_peers(job);
	cleanup_free char *nsdir = xasprintf("%s/%s", tmpdir, job->nspace);
	bool no = false, yes = true;
	pmix_rank_t ldr = job->nlocal ? job->local_ranks[0] : 0;
	uint32_t nnodes = job->nnodes, nlocal = job->nlocal;
	uint32_t univ = job->universe ? job->universe : job->size;

	if ((sp ? add_parent(list, sp, err)
		: list_add(list, PMIX_SPAWNED, &no, PMIX_BOOL, err)) < 0 ||
	    list_add(list, PMIX_TMPDIR, tmpdir, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_NSDIR, nsdir, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_TDIR_RMCLEAN, &yes, PMIX_BOOL, err) < 0 ||
	    list_add(list, PMIX_JOBID, job->nspace, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_NODEID, &job->nodeid, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_UNIV_SIZE, &univ, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_JOB_SIZE, &job->size, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_MAX_PROCS, &univ, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_NUM_NODES, &nnodes, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_LOCAL_SIZE, &nlocal, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_NODE_SIZE, &nlocal, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_LOCALLDR, &ldr, PMIX_PROC_RANK, err) < 0 ||
	    add_regex(list, PMIX_NODE_MAP, nodes, false, err) < 0 ||
	    add_regex(list, PMIX_PROC_MAP, procs, true, err) < 0)
		return -1;
	for (uint32_t r = 0; r < job->size; r++)
		if (add_proc_data(list, job, sp, r, err) < 0)
			return -1;
	/* Open MPI creates its session directories below PMIX_NSDIR; making
	 * it here keeps everything inside the private tmpdir. */
	if (mkdir(nsdir, 0700) < 0 && errno != EEXIST)
		return err_set(err, errno, "create '%s'", nsdir);
	return 0;
}

int pmix_register_job(const struct pmi_job *job, const struct pmi_spawn *sp,
		      mpictr_err **err)
{
	void *list = PMIx_Info_list_start();
	pmix_data_array_t darray;
	pmix_nspace_t ns;
	pmix_status_t rc;
	int ret = -1;

	memset(&darray, 0, sizeof(darray));
	PMIX_LOAD_NSPACE(ns, job->nspace);
	if (build_job_info(job, sp, g.tmpdir, list, err) < 0)
		goto out;
	rc = PMIx_Info_list_convert(list, &darray);
	if (rc != PMIX_SUCCESS) {
		pmix_fail(err, rc, "build job info");
		goto out;
	}
	/* Blocking form: NULL cbfunc. nlocalprocs must be exact, since
	 * libpmix completes local collectives when that many have joined. */
	rc = PMIx_server_register_nspace(ns, (int)job->nlocal, darray.array,
					 darray.size, NULL, NULL);
	if (!pmix_ok(rc)) {
		pmix_fail(err, rc, "register namespace");
		goto out;
	}
	if (!sp)
		g.registered = true;
	for (uint32_t i = 0; i < job->nlocal; i++) {
		pmix_proc_t proc;

		PMIX_LOAD_PROCID(&proc, ns, job->local_ranks[i]);
		/* The client sends the ids it sees in its own user namespace;
		 * they must match these exactly. */
		rc = PMIx_server_register_client(&proc, job->uid, job->gid,
						 NULL, NULL, NULL);
		if (!pmix_ok(rc)) {
			pmix_fail(err, rc, "register client");
			err_wrap(err, "rank %u", job->local_ranks[i]);
			if (sp)
				pmix_deregister_nspace(job->nspace);
			goto out;
		}
	}
	ret = 0;
out:
	PMIx_Data_array_destruct(&darray);
	PMIx_Info_list_release(list);
	return ret;
}

static void server_init(struct bounded *b)
{
	b->rc = PMIx_server_init(&module, b->info, ARRAY_SIZE(b->info));
}

int pmi_pmix_start(const struct pmi_job *job, const char *tmpdir,
		   const struct pmi_hooks *hooks, mpictr_err **err)
{
	struct bounded *b;
	uint32_t uid = geteuid();
	struct pmix_gate_snapshot before;
	char **saved_env;
	pmix_status_t rc;

	if (g.initialized || g.wedged)
		return err_set(err, EBUSY,
			       "pmix: a server already runs in "
			       "this process");
	if (strlen(job->nspace) > PMIX_MAX_NSLEN)
		return err_set(err, 0, "pmix: namespace '%s' too long",
			       job->nspace);
	saved_env = scrub_environment();
	g.hooks = *hooks;
	PMIX_LOAD_NSPACE(g.nspace, job->nspace);
	free(g.tmpdir);
	g.tmpdir = xstrdup(tmpdir);

	b = xcalloc(1, sizeof(*b));
	b->fn = server_init;
	PMIX_INFO_LOAD(&b->info[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&b->info[1], PMIX_SYSTEM_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&b->info[2], PMIX_USERID, &uid, PMIX_UINT32);
	pmix_gate_snapshot(&before);
	if (run_bounded(b, PMIX_INIT_MS, "server init", err) < 0) {
		/* libpmix may still read the environment: left scrubbed. */
		strv_free(saved_env);
		return -1;
	}
	restore_environment(saved_env);
	rc = b->rc;
	bounded_free(b);
	if (rc != PMIX_SUCCESS)
		return pmix_fail(err, rc, "server init");
	g.initialized = true;
	/* Before any rank exists: libpmix trusts the uid a TCP client
	 * sends, the gate asks the kernel (pmix_gate.c). */
	if (pmix_gate_start(&before, tmpdir, &g.gate, err) < 0) {
		err_wrap(err, "libpmix %s", PMIx_Get_version());
		pmi_pmix_stop();
		return -1;
	}
	pmix_dyn_start(&g.hooks, job);
	if (pmix_register_job(job, NULL, err) < 0) {
		pmi_pmix_stop();
		return -1;
	}
	return 0;
}

int pmi_pmix_rank_env(uint32_t rank, char ***env, mpictr_err **err)
{
	if (!g.registered)
		return err_set(err, 0, "pmix: server not started");
	return pmix_setup_fork(g.nspace, rank, env, err);
}

int pmix_setup_fork(const char *nspace, uint32_t rank, char ***env,
		    mpictr_err **err)
{
	pmix_proc_t proc;
	char **penv = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&proc, nspace, rank);
	rc = PMIx_server_setup_fork(&proc, &penv);
	if (rc != PMIX_SUCCESS) {
		strv_free(penv);
		pmix_fail(err, rc, "setup fork");
		return err_wrap(err, "rank %u", rank);
	}
	for (char **e = penv; e && *e; e++) {
		char *eq = strchr(*e, '=');

		if (!eq)
			continue;
		*eq = '\0';
		env_set(env, *e, eq + 1);
	}
	strv_free(penv); /* malloc'ed strings in a malloc'ed array */
	return 0;
}

void pmix_deregister_nspace(const char *nspace)
{
	struct waiter w = WAITER_INIT;
	pmix_nspace_t ns;

	PMIX_LOAD_NSPACE(ns, nspace);
	PMIx_server_deregister_nspace(ns, waiter_op_cb, &w);
	waiter_wait(&w);
}

/* Pending lookups answered, spawned namespaces deregistered, then ours,
 * then finalize. */
static void server_teardown(struct bounded *b)
{
	pmix_dyn_stop();
	if (g.registered)
		pmix_deregister_nspace(g.nspace);
	b->rc = PMIx_server_finalize();
	if (b->rc != PMIX_SUCCESS)
		log_warn("pmix: server finalize: %s", PMIx_Error_string(b->rc));
}

void pmi_pmix_stop(void)
{
	/* No new connection, and the relayed ones closed, before libpmix
	 * tears down. */
	pmix_gate_stop(g.gate);
	g.gate = NULL;
	if (g.initialized && !g.wedged) {
		struct bounded *b = xcalloc(1, sizeof(*b));
		mpictr_err *e = NULL;

		b->fn = server_teardown;
		if (run_bounded(b, PMIX_TEARDOWN_MS, "teardown", &e) < 0) {
			log_warn("%s: the job goes on ending without it",
				 e->msg);
			mpictr_err_free(e);
		} else {
			bounded_free(b);
		}
	}
	g.initialized = g.registered = false;
	memset(&g.hooks, 0, sizeof(g.hooks));
	free(g.tmpdir);
	g.tmpdir = NULL;
}

const char *pmi_library_version(void)
{
	return PMIx_Get_version();
}
