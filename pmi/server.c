/* server.c - one object for the launcher: the private tmpdir, the PMIx
 * adapter, the PMI-1 service, the per-rank environment, and the policy that
 * keeps a job from waiting forever for a rank that is gone. No PMIx calls
 * here (see pmix_server.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmi/pmi_internal.h"
#include "common/proc.h"
#include "common/util.h"

struct rank_state {
	bool connected; /* through PMIx or PMI-1 */
	bool finalized;
	bool exited;
};

struct pmi_server {
	char *tmpdir;
	uint32_t size;
	uint32_t nlocal;
	uint32_t *local_ranks;
	pmi_abort_fn on_abort;
	void *data;
	struct pmi_hooks hooks;
	bool pmix_started;
	struct pmi1_service *pmi1;
	struct pmi_upstream *up; /* node daemon mode; not owned */
	uid_t uid;		 /* of the ranks, for spawned processes */
	gid_t gid;
	uint32_t universe;

	pthread_mutex_t lock; /* guards what follows */
	pmi_spawn_fn spawn_fn;
	void *spawn_data;
	char **unfinalized; /* "nspace:rank" of spawned processes connected */
	struct rank_state *st;
	uint32_t nconnected;
	long left_unconnected; /* a rank that exited before connecting */
	bool ended;	       /* on_abort was called */
};

static long local_index(const struct pmi_server *s, uint32_t rank)
{
	for (uint32_t i = 0; i < s->nlocal; i++)
		if (s->local_ranks[i] == rank)
			return i;
	return -1;
}

/* Call on_abort once per job; the first reason wins. Called without the
 * lock held. */
static void end_job(struct pmi_server *s, int code, const char *msg)
{
	bool first;

	pthread_mutex_lock(&s->lock);
	first = !s->ended;
	s->ended = true;
	pthread_mutex_unlock(&s->lock);
	if (first) {
		log_debug("pmi: ending job (exit code %d): %s", code, msg);
		s->on_abort(code, msg, s->data);
		/* The ranks on the other nodes would wait for ours forever:
		 * the outer launcher ends them all. */
		pmi_upstream_abort(s->up, code, msg);
	}
}

static int hook_spawn(void *ctx, struct pmi_spawn *sp);
static void hook_proc_event(void *ctx, const char *nspace, uint32_t rank,
			    enum pmi_rank_ev ev);

static void hook_abort(void *ctx, int code, const char *msg)
{
	end_job(ctx, code, msg);
}

static void hook_rank_event(void *ctx, uint32_t rank, enum pmi_rank_ev ev)
{
	struct pmi_server *s = ctx;
	long i = local_index(s, rank);
	char msg[160] = "";

	if (i < 0)
		return;
	pthread_mutex_lock(&s->lock);
	switch (ev) {
	case RANK_EV_CONNECTED:
		if (!s->st[i].connected) {
			s->st[i].connected = true;
			s->nconnected++;
		}
		if (s->left_unconnected >= 0)
			snprintf(msg, sizeof(msg),
				 "rank %u exited without initializing PMI "
				 "while rank %u did",
				 s->local_ranks[s->left_unconnected], rank);
		break;
	case RANK_EV_FINALIZED:
		s->st[i].finalized = true;
		break;
	case RANK_EV_CLOSED:
		if (s->st[i].connected && !s->st[i].finalized)
			snprintf(msg, sizeof(msg),
				 "rank %u closed its PMI connection without "
				 "finalizing",
				 rank);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&s->lock);
	if (msg[0])
		end_job(s, 1, msg);
}

void pmi_server_rank_exited(struct pmi_server *s, uint32_t rank)
{
	long i = local_index(s, rank);
	char msg[160] = "";

	if (i < 0)
		return;
	pthread_mutex_lock(&s->lock);
	s->st[i].exited = true;
	if (s->st[i].connected && !s->st[i].finalized) {
		snprintf(msg, sizeof(msg),
			 "rank %u exited without finalizing PMI", rank);
	} else if (!s->st[i].connected) {
		if (s->left_unconnected < 0)
			s->left_unconnected = i;
		if (s->nconnected > 0)
			snprintf(msg, sizeof(msg),
				 "rank %u exited without initializing PMI "
				 "while other ranks did",
				 rank);
	}
	pthread_mutex_unlock(&s->lock);
	/* A PMI-1 barrier needs every rank; this one will never come. */
	if (!msg[0] && pmi1_service_barrier_waiting(s->pmi1) > 0)
		snprintf(msg, sizeof(msg),
			 "rank %u exited while others wait in a PMI barrier",
			 rank);
	if (msg[0])
		end_job(s, 1, msg);
}

/* ---- node daemon mode ---- */

static int hook_upstream_fence(void *ctx, const char *data, size_t n,
			       void (*done)(void *arg, int status, char *all,
					    size_t len),
			       void *arg)
{
	struct pmi_server *s = ctx;

	return pmi_upstream_fence(s->up, data, n, done, arg);
}

struct sync_fence {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
	char *all;
	size_t len;
};

static void sync_fence_done(void *arg, int status, char *all, size_t len)
{
	struct sync_fence *f = arg;

	pthread_mutex_lock(&f->lock);
	f->status = status;
	f->all = all;
	f->len = len;
	f->done = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Every node describes the job it registered in one line; all must agree,
 * or fences would mix ranks of different jobs (or hang on a node that
 * waits for ranks nobody runs). */
static int check_nodes(struct pmi_server *s, const struct pmi_job *job,
		       mpictr_err **err)
{
	struct sync_fence f = {PTHREAD_MUTEX_INITIALIZER,
			       PTHREAD_COND_INITIALIZER,
			       false,
			       -1,
			       NULL,
			       0};
	cleanup_free char *mine = xasprintf(
	    "mpictr-node nspace=%s size=%u nodes=%u node=%u local=%u\n",
	    job->nspace, job->size, job->nnodes, job->nodeid, job->nlocal);
	cleanup_free bool *seen = xcalloc(job->nnodes, sizeof(bool));
	uint32_t count = 0;
	int ret = -1;
	char *save = NULL;

	if (pmi_upstream_fence(s->up, mine, strlen(mine), sync_fence_done, &f) <
	    0)
		return err_set(err, 0,
			       "node daemon: the upstream agent is "
			       "gone");
	pthread_mutex_lock(&f.lock);
	while (!f.done)
		pthread_cond_wait(&f.cond, &f.lock);
	pthread_mutex_unlock(&f.lock);
	if (f.status != 0) {
		free(f.all);
		return err_set(err, 0,
			       "node daemon: exchanging the job "
			       "description between the nodes "
			       "failed (see the messages above)");
	}
	for (char *l = strtok_r(f.all ? f.all : "", "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char ns[256];
		unsigned size, nodes, node, local;

		if (sscanf(l,
			   "mpictr-node nspace=%255s size=%u nodes=%u "
			   "node=%u local=%u",
			   ns, &size, &nodes, &node, &local) != 5) {
			err_set(err, 0,
				"node daemon: malformed job "
				"description from another node");
			goto out;
		}
		if (local != job->nlocal) {
			err_set(err, 0,
				"node daemon: node %u runs %u ranks, this node "
				"(%u) runs %u: every node must run the same "
				"'mpictr -n N'",
				node, local, job->nodeid, job->nlocal);
			goto out;
		}
		if (strcmp(ns, job->nspace) != 0 || size != job->size ||
		    nodes != job->nnodes || node >= job->nnodes || seen[node]) {
			err_set(err, 0,
				"node daemon: node %u registered job '%s' of "
				"%u ranks on %u nodes, this node (%u) '%s' of "
				"%u ranks on %u nodes",
				node, ns, size, nodes, job->nodeid, job->nspace,
				job->size, job->nnodes);
			goto out;
		}
		seen[node] = true;
		count++;
	}
	if (count != job->nnodes) {
		err_set(err, 0, "node daemon: %u of %u nodes answered", count,
			job->nnodes);
		goto out;
	}
	ret = 0;
out:
	free(f.all);
	return ret;
}

/* ---- private tmpdir ---- */

static void rm_tree(const char *dir)
{
	if (rm_rf(dir) < 0)
		log_warn("pmi: remove '%s': %s", dir, strerror(errno));
}

static char *make_tmpdir(const char *base, mpictr_err **err)
{
	char *dir = xasprintf("%s/mpictr-pmi.XXXXXX", base);
	struct stat st;

	if (!mkdtemp(dir)) {
		err_set(err, errno, "create private directory in '%s'", base);
		free(dir);
		return NULL;
	}
	/* mkdtemp makes it 0700; check it is ours and nobody widened it. */
	if (lstat(dir, &st) < 0) {
		err_set(err, errno, "stat '%s'", dir);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700) {
		err_set(err, 0,
			"private directory '%s' is not a 0700 directory owned "
			"by uid %u",
			dir, (unsigned)geteuid());
		goto fail;
	}
	return dir;
fail:
	rmdir(dir);
	free(dir);
	return NULL;
}

/* ---- public ---- */

int pmi_server_start(const struct pmi_job *job, const char *tmpdir_base,
		     pmi_abort_fn on_abort, void *data, struct pmi_server **out,
		     mpictr_err **err)
{
	return pmi_server_start_upstream(job, tmpdir_base, NULL, on_abort, data,
					 out, err);
}

int pmi_server_start_upstream(const struct pmi_job *job,
			      const char *tmpdir_base, struct pmi_upstream *up,
			      pmi_abort_fn on_abort, void *data,
			      struct pmi_server **out, mpictr_err **err)
{
	struct pmi_server *s;

	*out = NULL;
	if (job->nlocal == 0 || job->size == 0 || job->nlocal > job->size)
		return err_set(err, 0, "pmi: bad job: %u local of %u ranks",
			       job->nlocal, job->size);
	if (!on_abort)
		return err_set(err, EINVAL, "pmi: no abort handler");
	s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->size = job->size;
	s->nlocal = job->nlocal;
	s->local_ranks = xcalloc(job->nlocal, sizeof(uint32_t));
	memcpy(s->local_ranks, job->local_ranks,
	       job->nlocal * sizeof(uint32_t));
	s->st = xcalloc(job->nlocal, sizeof(*s->st));
	s->left_unconnected = -1;
	s->on_abort = on_abort;
	s->data = data;
	s->uid = job->uid;
	s->gid = job->gid;
	s->universe = job->universe ? job->universe : job->size;
	s->hooks.rank_event = hook_rank_event;
	s->hooks.abort = hook_abort;
	s->hooks.spawn = hook_spawn;
	s->hooks.proc_event = hook_proc_event;
	/* On one node every fence is local: libpmix completes it and the
	 * PMI-1 barrier needs nobody else. */
	s->hooks.upstream_fence =
	    up && job->nnodes > 1 ? hook_upstream_fence : NULL;
	s->hooks.ctx = s;
	if (up) {
		if (pmi_upstream_attach(up, err) < 0)
			goto fail;
		s->up = up;
		if (job->nnodes > 1 && check_nodes(s, job, err) < 0)
			goto fail;
	}

	s->tmpdir = make_tmpdir(tmpdir_base, err);
	if (!s->tmpdir)
		goto fail;
	if (pmi1_service_start(job, &s->hooks, &s->pmi1, err) < 0)
		goto fail;
	if (pmi_pmix_start(job, s->tmpdir, &s->hooks, err) < 0)
		goto fail;
	s->pmix_started = true;
	*out = s;
	return 0;
fail:
	pmi_server_stop(s);
	return -1;
}

const char *pmi_server_tmpdir(const struct pmi_server *s)
{
	return s->tmpdir;
}

/* Variables a rank must not inherit from our own launcher: they would point
 * it at another PMI server. PMIX_MCA_* are user tunables and stay. */
static void scrub_rank_env(char ***env)
{
	char **names = NULL;

	for (char **e = *env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq && pmi_var_reserved(*e))
			strv_push_own(&names, xstrndup(*e, (size_t)(eq - *e)));
	}
	for (char **n = names; n && *n; n++)
		env_unset(env, *n);
	strv_free(names);
}

/* Open MPI 4.1 only trusts PMIx when a "schizo" component declares a
 * direct launch (Slurm, Flux, JSM); "ompi" alone means "undetermined",
 * which ess/pmi accepts. */
static void set_schizo(char ***env)
{
	if (!env_get(*env, "OMPI_MCA_schizo"))
		env_set(env, "OMPI_MCA_schizo", "ompi");
}

int pmi_server_rank_env(struct pmi_server *s, uint32_t rank, char ***env,
			int *child_fd, mpictr_err **err)
{
	char num[16];
	int fd;

	*child_fd = -1;
	if (local_index(s, rank) < 0)
		return err_set(err, 0, "pmi: rank %u is not a local rank",
			       rank);
	fd = pmi1_service_child_fd(s->pmi1, rank, err);
	if (fd < 0)
		return err_wrap(err, "pmi");
	scrub_rank_env(env);
	if (pmi_pmix_rank_env(rank, env, err) < 0)
		return -1;
	snprintf(num, sizeof(num), "%d", fd);
	env_set(env, "PMI_FD", num);
	snprintf(num, sizeof(num), "%u", rank);
	env_set(env, "PMI_RANK", num);
	snprintf(num, sizeof(num), "%u", s->size);
	env_set(env, "PMI_SIZE", num);
	set_schizo(env);
	*child_fd = fd;
	return 0;
}

/* ---- dynamic processes ---- */

static int hook_spawn(void *ctx, struct pmi_spawn *sp)
{
	struct pmi_server *s = ctx;
	pmi_spawn_fn fn;
	void *data;

	/* Called under the lock: once pmi_server_set_spawn_handler returns,
	 * the old handler runs no more. It only queues. */
	pthread_mutex_lock(&s->lock);
	fn = s->ended ? NULL : s->spawn_fn;
	data = s->spawn_data;
	if (fn)
		fn(sp, data);
	pthread_mutex_unlock(&s->lock);
	return fn ? 0 : -1;
}

/* Remove "nspace:rank" from s->unfinalized; true if it was there. Under
 * the lock. */
static bool unfinalized_take(struct pmi_server *s, const char *id)
{
	size_t n = strv_len(s->unfinalized);

	for (size_t i = 0; i < n; i++)
		if (strcmp(s->unfinalized[i], id) == 0) {
			free(s->unfinalized[i]);
			s->unfinalized[i] = s->unfinalized[n - 1];
			s->unfinalized[n - 1] = NULL;
			return true;
		}
	return false;
}

static void hook_proc_event(void *ctx, const char *nspace, uint32_t rank,
			    enum pmi_rank_ev ev)
{
	struct pmi_server *s = ctx;
	cleanup_free char *id = xasprintf("%s:%u", nspace, rank);

	pthread_mutex_lock(&s->lock);
	if (ev == RANK_EV_CONNECTED && !strv_contains(s->unfinalized, id))
		strv_push(&s->unfinalized, id);
	else if (ev == RANK_EV_FINALIZED)
		unfinalized_take(s, id);
	pthread_mutex_unlock(&s->lock);
}

bool pmi_server_spawned_unfinalized(struct pmi_server *s, const char *nspace,
				    uint32_t rank)
{
	cleanup_free char *id = xasprintf("%s:%u", nspace, rank);
	bool r;

	pthread_mutex_lock(&s->lock);
	r = unfinalized_take(s, id);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void pmi_server_set_spawn_handler(struct pmi_server *s, pmi_spawn_fn fn,
				  void *data)
{
	pthread_mutex_lock(&s->lock);
	s->spawn_fn = fn;
	s->spawn_data = data;
	pthread_mutex_unlock(&s->lock);
}

int pmi_server_spawn_register(struct pmi_server *s, struct pmi_spawn *sp,
			      mpictr_err **err)
{
	struct pmi_job job;
	int rc;

	if (pmi_job_single_node(sp->nprocs, s->uid, s->gid, &job, err) < 0)
		return -1;
	job.universe = s->universe;
	rc = pmi_pmix_spawn_register(&job, sp, err);
	pmi_job_free(&job);
	return rc < 0 ? err_wrap(err, "spawn") : 0;
}

int pmi_server_spawn_env(struct pmi_server *s, const struct pmi_spawn *sp,
			 uint32_t rank, char ***env, mpictr_err **err)
{
	uint32_t app_rank;
	size_t app = pmi_spawn_app_of(sp, rank, &app_rank);

	(void)s;
	if (app >= sp->napps || !sp->nspace)
		return err_set(err, 0, "spawn: no process %u", rank);
	scrub_rank_env(env);
	for (char **e = sp->apps[app].env; e && *e; e++) {
		char *eq = strchr(*e, '=');
		cleanup_free char *name = xstrndup(*e, (size_t)(eq - *e));

		env_set(env, name, eq + 1);
	}
	if (pmi_pmix_spawn_env(sp->nspace, rank, env, err) < 0)
		return -1;
	set_schizo(env);
	return 0;
}

void pmi_server_spawn_done(struct pmi_server *s, struct pmi_spawn *sp,
			   const mpictr_err *err)
{
	(void)s;
	if (err)
		log_error("spawn by %s:%u failed: %s", sp->parent_nspace,
			  sp->parent_rank, mpictr_err_message(err));
	pmi_pmix_spawn_done(sp, err == NULL);
	pmi_spawn_free(sp);
}

void pmi_server_rank_forked(struct pmi_server *s, uint32_t rank)
{
	pmi1_service_forked(s->pmi1, rank);
}

void pmi_server_stop(struct pmi_server *s)
{
	if (!s)
		return;
	/* Fail what is queued upstream while both servers can still take
	 * the answer. */
	pmi_upstream_detach(s->up);
	if (s->pmix_started)
		pmi_pmix_stop();
	pmi1_service_stop(s->pmi1);
	if (s->tmpdir) {
		rm_tree(s->tmpdir);
		free(s->tmpdir);
	}
	pthread_mutex_destroy(&s->lock);
	strv_free(s->unfinalized);
	free(s->st);
	free(s->local_ranks);
	free(s);
}
