/* pmix_dyn.c - the PMIx host upcalls behind MPI's dynamic processes:
 * spawn (handed to the launcher), connect/disconnect, and the name service
 * of publish/lookup/unpublish (pubstore.c). Every upcall runs on libpmix's
 * progress thread and returns at once; a lookup that must wait for a
 * publish is answered by that publish, or with PMIX_ERR_TIMEOUT by the
 * timer thread once its PMIX_TIMEOUT has passed. See docs/pmi.md, "Dynamic
 * processes". */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmi/pmix_dyn.h"
#include "pmi/pmix_register.h"
#include "common/proc.h"
#include "pmi/pubstore.h"
#include "common/util.h"

/* A lookup waiting for its keys to be published (PMIX_WAIT), queued in the
 * store (pubstore_wait) with its PMIX_TIMEOUT. */
struct lookup_wait {
	pmix_proc_t proc;
	char **keys;
	size_t want; /* keys that must be found */
	pmix_lookup_cbfunc_t cbfunc;
	void *cbdata;
	/* set once answerable, under the lock */
	pmix_pdata_t *pd;
	size_t npd;
};

/* Where a spawn's answer goes (struct pmi_spawn.reply). */
struct spawn_reply {
	pmix_spawn_cbfunc_t cbfunc;
	void *cbdata;
};

static struct {
	pthread_mutex_t lock; /* guards what follows */
	struct pubstore *store;
	char **spawned; /* registered namespaces of spawns */
	struct pmi_hooks hooks;
	char *tmpdir; /* the server's: spawned jobs are registered below it */
	bool multi_node;
	/* the timer thread: started by the first lookup with a timeout */
	pthread_t timer;
	pthread_cond_t timer_cond; /* on CLOCK_MONOTONIC, under lock */
	bool timer_running, timer_stop;
} d = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void value_free(void *v)
{
	pmix_value_t *pv = v;

	PMIX_VALUE_RELEASE(pv);
}

void pmix_dyn_start(const struct pmi_hooks *hooks, const struct pmi_job *job,
		    const char *tmpdir)
{
	pthread_mutex_lock(&d.lock);
	d.hooks = *hooks;
	free(d.tmpdir);
	d.tmpdir = xstrdup(tmpdir);
	d.multi_node = job->nnodes > 1;
	if (!d.store)
		d.store = pubstore_new(value_free);
	pthread_mutex_unlock(&d.lock);
}

/* ---- publish / lookup / unpublish ---- */

/* Keys of the info array that direct the operation instead of being
 * published. */
static bool is_directive(const pmix_info_t *i)
{
	return PMIX_CHECK_KEY(i, PMIX_RANGE) ||
	       PMIX_CHECK_KEY(i, PMIX_PERSISTENCE) ||
	       PMIX_CHECK_KEY(i, PMIX_TIMEOUT) ||
	       PMIX_CHECK_KEY(i, PMIX_USERID) ||
	       PMIX_CHECK_KEY(i, PMIX_GRPID) || PMIX_CHECK_KEY(i, PMIX_WAIT);
}

/* PMIX_PERSISTENCE of info is PMIX_PERSIST_FIRST_READ. Other
 * persistences keep the key until unpublished or the job ends. */
static bool read_once(const pmix_info_t info[], size_t ninfo)
{
	for (size_t i = 0; i < ninfo; i++)
		if (PMIX_CHECK_KEY(&info[i], PMIX_PERSISTENCE))
			return info[i].value.type == PMIX_PERSIST &&
			       info[i].value.data.persist ==
				   PMIX_PERSIST_FIRST_READ;
	return false;
}

/* PMIX_RANGE of info: 1 and *out, or 0 when not given. The launch is one
 * session on one node, so only the namespace and the process itself
 * narrow what others see. */
static int range_of(const pmix_info_t info[], size_t ninfo, enum pub_range *out)
{
	for (size_t i = 0; i < ninfo; i++) {
		if (!PMIX_CHECK_KEY(&info[i], PMIX_RANGE))
			continue;
		switch (info[i].value.data.range) {
		case PMIX_RANGE_NAMESPACE:
			*out = PUB_RANGE_NSPACE;
			break;
		case PMIX_RANGE_PROC_LOCAL:
			*out = PUB_RANGE_PROC;
			break;
		default:
			*out = PUB_RANGE_ALL;
		}
		return 1;
	}
	*out = PUB_RANGE_ALL;
	return 0;
}

/* Under the lock: fill w->pd with the keys w->proc may see when at least
 * w->want of them are there. Returns true when answerable. */
static bool lookup_fill(struct lookup_wait *w)
{
	const struct pub_entry *found[64];
	size_t n = 0, nkeys = strv_len(w->keys);

	for (size_t k = 0; k < nkeys && n < ARRAY_SIZE(found); k++) {
		const struct pub_entry *e = pubstore_find(
		    d.store, w->proc.nspace, w->proc.rank, w->keys[k]);

		if (e)
			found[n++] = e;
	}
	if (n == 0 || n < w->want)
		return false;
	PMIX_PDATA_CREATE(w->pd, n);
	w->npd = n;
	for (size_t i = 0; i < n; i++) {
		PMIX_LOAD_PROCID(&w->pd[i].proc, found[i]->nspace,
				 found[i]->rank);
		PMIX_LOAD_KEY(w->pd[i].key, found[i]->key);
		PMIx_Value_xfer(&w->pd[i].value, found[i]->value);
	}
	pubstore_read(d.store, found, n); /* read-once entries go */
	return true;
}

static void lookup_answer(struct lookup_wait *w, pmix_status_t status)
{
	w->cbfunc(w->pd ? PMIX_SUCCESS : status, w->pd, w->npd, w->cbdata);
	if (w->pd)
		PMIX_PDATA_FREE(w->pd, w->npd);
	strv_free(w->keys);
	free(w);
}

static bool answerable(void *data, void *arg)
{
	return lookup_fill(data);
}

/* Answer and free the waits of a pubstore_take_* array. */
static void answer_all(void **ready, pmix_status_t status)
{
	for (size_t i = 0; ready && ready[i]; i++)
		lookup_answer(ready[i], status);
	free(ready);
}

/* The timer thread: answers each waiting lookup whose PMIX_TIMEOUT has
 * passed with PMIX_ERR_TIMEOUT (as PRRTE's data server does). */
static void *timer_main(void *arg)
{
	pthread_mutex_lock(&d.lock);
	while (!d.timer_stop) {
		long next = d.store ? pubstore_next_deadline(d.store) : 0;
		long now = mono_ms();
		struct timespec ts;
		void **expired;

		if (!next) {
			pthread_cond_wait(&d.timer_cond, &d.lock);
			continue;
		}
		if (next > now) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (next - now) / 1000;
			ts.tv_nsec += (next - now) % 1000 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&d.timer_cond, &d.lock, &ts);
			continue;
		}
		expired = pubstore_take_expired(d.store, now);
		pthread_mutex_unlock(&d.lock);
		log_debug("pmix: a waiting lookup timed out");
		answer_all(expired, PMIX_ERR_TIMEOUT);
		pthread_mutex_lock(&d.lock);
	}
	pthread_mutex_unlock(&d.lock);
	return NULL;
}

/* Under the lock: wake the timer thread, starting it first if needed. A
 * thread that cannot start leaves the lookup waiting, as before. */
static void timer_kick(void)
{
	pthread_condattr_t ca;

	if (d.timer_running) {
		pthread_cond_signal(&d.timer_cond);
		return;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d.timer_cond, &ca);
	pthread_condattr_destroy(&ca);
	d.timer_stop = false;
	if (pthread_create(&d.timer, NULL, timer_main, NULL) == 0)
		d.timer_running = true;
	else
		log_warn("pmix: no timer thread: lookups wait without a "
			 "timeout");
}

pmix_status_t pmix_dyn_publish(const pmix_proc_t *proc,
			       const pmix_info_t info[], size_t ninfo,
			       pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	pmix_status_t rc = PMIX_SUCCESS;
	void **ready;
	enum pub_range range;
	bool once = read_once(info, ninfo);

	range_of(info, ninfo, &range);
	pthread_mutex_lock(&d.lock);
	for (size_t i = 0; d.store && i < ninfo && rc == PMIX_SUCCESS; i++) {
		pmix_value_t *v;

		if (is_directive(&info[i]))
			continue;
		log_debug("pmix: publish '%s' by %s:%u%s", info[i].key,
			  proc->nspace, proc->rank, once ? " (read once)" : "");
		PMIX_VALUE_CREATE(v, 1);
		PMIx_Value_xfer(v, &info[i].value);
		if (pubstore_publish(d.store, proc->nspace, proc->rank, range,
				     info[i].key, v, once) < 0) {
			log_debug("pmix: publish '%s' by %s:%u: %s",
				  info[i].key, proc->nspace, proc->rank,
				  strerror(errno));
			rc = errno == EEXIST   ? PMIX_ERR_DUPLICATE_KEY
			     : errno == ENOSPC ? PMIX_ERR_OUT_OF_RESOURCE
					       : PMIX_ERR_BAD_PARAM;
			PMIX_VALUE_RELEASE(v);
		}
	}
	ready = d.store ? pubstore_take_answerable(d.store, answerable, NULL)
			: NULL;
	pthread_mutex_unlock(&d.lock);
	answer_all(ready, PMIX_SUCCESS);
	cbfunc(rc, cbdata);
	return PMIX_SUCCESS;
}

/* PMIX_WAIT: 0 no wait, else the number of keys to wait for. */
static size_t wait_count(const pmix_info_t info[], size_t ninfo, size_t nkeys)
{
	for (size_t i = 0; i < ninfo; i++) {
		const pmix_value_t *v = &info[i].value;
		long n;

		if (!PMIX_CHECK_KEY(&info[i], PMIX_WAIT))
			continue;
		if (v->type == PMIX_INT)
			n = v->data.integer;
		else if (v->type == PMIX_UINT32)
			n = (long)v->data.uint32;
		else if (v->type == PMIX_SIZE)
			n = (long)v->data.size;
		else
			n = PMIX_INFO_TRUE(&info[i]) ? 0 : -1;
		if (n < 0)
			return 0;
		/* 0 means "all of them" */
		return n == 0 || (size_t)n > nkeys ? nkeys : (size_t)n;
	}
	return 0;
}

/* PMIX_TIMEOUT in seconds (an int, as Open MPI and PRRTE pass it), 0 for
 * none or a value <= 0 (wait for ever). */
static long timeout_sec(const pmix_info_t info[], size_t ninfo)
{
	for (size_t i = 0; i < ninfo; i++) {
		const pmix_value_t *v = &info[i].value;

		if (!PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT))
			continue;
		if (v->type == PMIX_INT)
			return v->data.integer > 0 ? v->data.integer : 0;
		if (v->type == PMIX_UINT32)
			return (long)v->data.uint32;
		if (v->type == PMIX_INT32)
			return v->data.int32 > 0 ? v->data.int32 : 0;
		return 0;
	}
	return 0;
}

pmix_status_t pmix_dyn_lookup(const pmix_proc_t *proc, char **keys,
			      const pmix_info_t info[], size_t ninfo,
			      pmix_lookup_cbfunc_t cbfunc, void *cbdata)
{
	struct lookup_wait *w = xcalloc(1, sizeof(*w));
	size_t nkeys = strv_len(keys), wait = wait_count(info, ninfo, nkeys);
	long timeout = wait ? timeout_sec(info, ninfo) : 0;

	if (nkeys == 0) {
		free(w);
		return PMIX_ERR_BAD_PARAM;
	}
	log_debug("pmix: lookup of '%s'%s by %s:%u%s, timeout %ld s", keys[0],
		  nkeys > 1 ? " ..." : "", proc->nspace, proc->rank,
		  wait ? " (waits)" : "", timeout);
	PMIX_LOAD_PROCID(&w->proc, proc->nspace, proc->rank);
	w->keys = strv_dup(keys);
	w->want = wait ? wait : 1;
	w->cbfunc = cbfunc;
	w->cbdata = cbdata;
	pthread_mutex_lock(&d.lock);
	if (d.store && !lookup_fill(w) && wait) {
		/* answered by the publish that completes it, the timer, or
		 * at the end */
		pubstore_wait(d.store, w,
			      timeout ? mono_ms() + timeout * 1000 : 0);
		if (timeout)
			timer_kick();
		w = NULL;
	}
	pthread_mutex_unlock(&d.lock);
	if (w)
		lookup_answer(w, PMIX_ERR_NOT_FOUND);
	return PMIX_SUCCESS;
}

pmix_status_t pmix_dyn_unpublish(const pmix_proc_t *proc, char **keys,
				 const pmix_info_t info[], size_t ninfo,
				 pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	enum pub_range range;
	int given = range_of(info, ninfo, &range);
	size_t n = 0;

	pthread_mutex_lock(&d.lock);
	if (d.store)
		n = pubstore_unpublish(d.store, proc->nspace, proc->rank, keys,
				       range, !given);
	pthread_mutex_unlock(&d.lock);
	cbfunc(n == 0 && keys && keys[0] ? PMIX_ERR_NOT_FOUND : PMIX_SUCCESS,
	       cbdata);
	return PMIX_SUCCESS;
}

/* ---- connect / disconnect ---- */

/* libpmix calls these once every local participant has called
 * PMIx_Connect/PMIx_Disconnect. On one node every participant is local, so
 * the operation is complete; the data of the other namespaces is in this
 * server already. Across nodes it would need a collective between the
 * nodes' servers, which mpictr does not have. */
static pmix_status_t connect_local(pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	if (d.multi_node)
		return PMIX_ERR_NOT_SUPPORTED;
	cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

pmix_status_t pmix_dyn_connect(const pmix_proc_t procs[], size_t nprocs,
			       const pmix_info_t info[], size_t ninfo,
			       pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	log_debug("pmix: connect of %zu proc entries", nprocs);
	return connect_local(cbfunc, cbdata);
}

pmix_status_t pmix_dyn_disconnect(const pmix_proc_t procs[], size_t nprocs,
				  const pmix_info_t info[], size_t ninfo,
				  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	log_debug("pmix: disconnect of %zu proc entries", nprocs);
	return connect_local(cbfunc, cbdata);
}

/* ---- spawn ---- */

/* The app's working directory: PMIX_WDIR among its info wins over cwd. */
static const char *app_cwd(const pmix_app_t *a)
{
	for (size_t i = 0; i < a->ninfo; i++)
		if (PMIX_CHECK_KEY(&a->info[i], PMIX_WDIR) &&
		    a->info[i].value.type == PMIX_STRING)
			return a->info[i].value.data.string;
	return a->cwd;
}

pmix_status_t pmix_dyn_spawn(const pmix_proc_t *proc,
			     const pmix_info_t job_info[], size_t ninfo,
			     const pmix_app_t apps[], size_t napps,
			     pmix_spawn_cbfunc_t cbfunc, void *cbdata)
{
	struct pmi_spawn *sp;
	struct spawn_reply *reply;
	mpictr_err *err = NULL;

	if (!d.hooks.spawn)
		return PMIX_ERR_NOT_SUPPORTED;
	sp = xcalloc(1, sizeof(*sp));
	sp->parent_nspace = xstrdup(proc->nspace);
	sp->parent_rank = proc->rank;
	for (size_t i = 0; i < napps; i++)
		if (pmi_spawn_add_app(sp, apps[i].cmd, apps[i].argv,
				      apps[i].env, app_cwd(&apps[i]),
				      apps[i].maxprocs, &err) < 0) {
			log_error("pmix: %s:%u: %s", proc->nspace, proc->rank,
				  mpictr_err_message(err));
			mpictr_err_free(err);
			pmi_spawn_free(sp);
			return PMIX_ERR_BAD_PARAM;
		}
	reply = xmalloc(sizeof(*reply));
	reply->cbfunc = cbfunc;
	reply->cbdata = cbdata;
	sp->reply = reply;
	if (d.hooks.spawn(d.hooks.ctx, sp) < 0) {
		free(reply);
		pmi_spawn_free(sp);
		return PMIX_ERR_NOT_SUPPORTED;
	}
	return PMIX_SUCCESS;
}

int pmi_pmix_spawn_register(const struct pmi_job *job, struct pmi_spawn *sp,
			    mpictr_err **err)
{
	if (pmix_register_job(job, sp, d.tmpdir, err) < 0)
		return -1;
	free(sp->nspace);
	sp->nspace = xstrdup(job->nspace);
	pthread_mutex_lock(&d.lock);
	strv_push(&d.spawned, job->nspace);
	pthread_mutex_unlock(&d.lock);
	return 0;
}

int pmi_pmix_spawn_env(const char *nspace, uint32_t rank, char ***env,
		       mpictr_err **err)
{
	return pmix_setup_fork(nspace, rank, env, err);
}

static void forget_spawned(const char *nspace)
{
	size_t i, n;

	pthread_mutex_lock(&d.lock);
	n = strv_len(d.spawned);
	for (i = 0; i < n && strcmp(d.spawned[i], nspace) != 0; i++)
		;
	if (i < n) {
		free(d.spawned[i]);
		memmove(&d.spawned[i], &d.spawned[i + 1],
			(n - i) * sizeof(char *));
	}
	pthread_mutex_unlock(&d.lock);
}

void pmi_pmix_spawn_done(struct pmi_spawn *sp, bool ok)
{
	struct spawn_reply *reply = sp->reply;
	pmix_nspace_t ns;

	PMIX_LOAD_NSPACE(ns, ok && sp->nspace ? sp->nspace : "");
	if (!ok && sp->nspace) {
		forget_spawned(sp->nspace);
		pmix_deregister_nspace(sp->nspace);
	}
	if (reply)
		reply->cbfunc(ok ? PMIX_SUCCESS : PMIX_ERR_OUT_OF_RESOURCE, ns,
			      reply->cbdata);
	free(reply);
	sp->reply = NULL;
}

void pmix_dyn_stop(void)
{
	void **waits;
	char **spawned;
	bool timer;

	pthread_mutex_lock(&d.lock);
	waits = d.store ? pubstore_take_all(d.store) : NULL;
	timer = d.timer_running;
	d.timer_stop = true;
	d.timer_running = false;
	if (timer)
		pthread_cond_signal(&d.timer_cond);
	spawned = d.spawned;
	d.spawned = NULL;
	pubstore_free(d.store);
	d.store = NULL;
	memset(&d.hooks, 0, sizeof(d.hooks));
	free(d.tmpdir);
	d.tmpdir = NULL;
	pthread_mutex_unlock(&d.lock);
	if (timer) {
		pthread_join(d.timer, NULL);
		pthread_cond_destroy(&d.timer_cond);
	}
	answer_all(waits, PMIX_ERR_NOT_FOUND);
	for (char **n = spawned; n && *n; n++)
		pmix_deregister_nspace(*n);
	strv_free(spawned);
}
