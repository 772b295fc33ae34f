/* pmix_server.c - the PMIx server (openpmix 4.2): init, the host module
 * callbacks, per-rank environment, finalize. Job registration is
 * pmix_register.c; dynamic processes and the name service pmix_dyn.c.
 *
 * Prefix legend: PMIx_* / PMIX_* / pmix_* are openpmix's; pmi_pmix_* are
 * ours. libpmix is process-global, so this file keeps one static state.
 *
 * libpmix calls the module from its own progress thread; every callback here
 * answers at once. */
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
#include "pmi/pmix_register.h"
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

/* A client's event to the glue: of one of our ranks, or of another
 * namespace's process (a spawned job) where the glue wants those. */
static void client_event(const pmix_proc_t *proc, enum pmi_rank_ev ev)
{
	if (ours(proc))
		g.hooks.rank_event(g.hooks.ctx, proc->rank, ev);
	else if (proc && g.hooks.proc_event)
		g.hooks.proc_event(g.hooks.ctx, proc->nspace, proc->rank, ev);
}

static pmix_status_t on_client_connected(const pmix_proc_t *proc,
					 void *server_object,
					 pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	/* A notification: 4.2 passes no cbfunc. */
	client_event(proc, RANK_EV_CONNECTED);
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
	client_event(proc, RANK_EV_FINALIZED);
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
	pmix_dyn_start(&g.hooks, job, g.tmpdir);
	if (pmix_register_job(job, NULL, g.tmpdir, err) < 0) {
		pmi_pmix_stop();
		return -1;
	}
	g.registered = true;
	return 0;
}

int pmi_pmix_rank_env(uint32_t rank, char ***env, mpictr_err **err)
{
	if (!g.registered)
		return err_set(err, 0, "pmix: server not started");
	return pmix_setup_fork(g.nspace, rank, env, err);
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
