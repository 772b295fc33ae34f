/* upstream.c - node daemon mode: the upstream agent and its server side.
 *
 * Under `srun --ntasks-per-node=1 --mpi=pmix mpictr -n N`, mpictr's PMI
 * servers hold the ranks of one node; a fence that spans nodes must go
 * through Slurm. One process cannot be both a PMIx client and a PMIx server
 * (libpmix has one global identity), so the *agent* - a child forked before
 * any PMIx call - is Slurm's client, and the server process talks to it over
 * a socketpair (reference pmix-server.md §9):
 *
 *   server: FENCE{seq, bytes} -> agent: Put(PMIX_GLOBAL, UPSTREAM_KEY,
 *   {magic, seq, bytes}) -> Commit -> Fence(collect) -> Get the key of every
 *   agent -> RESULT{seq, concatenated bytes} -> server
 *
 * Every fence Puts the same key, overwritten, so a later collecting fence
 * does not drag the old blobs along; the sequence number in each value
 * proves the Get returned this round's value. Fences are served strictly in
 * order: one request in flight at a time. ABORT is handled at once, even
 * while a fence is in flight (PMIx_Abort makes Slurm kill the step).
 *
 * Server side: a thread takes queued fences, sends them and hands the reply
 * to the caller's done() - callers are libpmix's progress thread and the
 * PMI-1 service, which must never block. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "pmi/pmi.h"
#include "common/proc.h"
#include "common/util.h"

#define UPSTREAM_KEY "mpictr.node.fence"
#define UPSTREAM_MAGIC 0x6d706374u /* "mpct" */
/* Bound on one message: a fence blob of every node's ranks. */
#define UPSTREAM_MAX_BYTES (1ull << 31)
#define HELLO_TIMEOUT_MS 60000
#define AGENT_EXIT_TIMEOUT_MS 10000

enum up_type {
	UP_HELLO = 1, /* agent -> server: code, payload rank,size,nsdir */
	UP_FENCE,     /* server -> agent: seq, payload */
	UP_RESULT,    /* agent -> server: seq, code, payload */
	UP_ABORT,     /* server -> agent: code, payload message */
};

struct up_hdr {
	uint32_t type;
	int32_t code;
	uint64_t seq;
	uint64_t len;
};

/* The value every agent Puts: a header, then this node's bytes. */
struct up_value_hdr {
	uint32_t magic;
	uint32_t reserved;
	uint64_t seq;
};

struct up_req {
	struct up_req *next;
	char *data;
	size_t len;
	pmi_upstream_done_fn done;
	void *arg;
};

struct pmi_upstream {
	pid_t pid;
	int fd;
	uint32_t rank, size;
	char *nsdir;

	pthread_mutex_t wlock; /* one writer at a time on fd */
	pthread_mutex_t lock;  /* guards what follows */
	pthread_cond_t cond;
	struct up_req *head, **tail;
	bool stopping;
	bool broken; /* the agent is gone: every fence fails */
	bool thread_started;
	pthread_t thread;
	uint64_t seq;
};

/* ---- framing (both sides) ---- */

static int read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = TEMP_FAILURE_RETRY(read(fd, p, n));

		if (r == 0) {
			errno = EPIPE;
			return -1;
		}
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* send(), never SIGPIPE: a gone peer is an error, not a signal. */
static int send_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = TEMP_FAILURE_RETRY(send(fd, p, n, MSG_NOSIGNAL));

		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_msg(int fd, uint32_t type, int32_t code, uint64_t seq,
		    const void *a, size_t alen)
{
	struct up_hdr h = {type, code, seq, (uint64_t)alen};

	if (send_full(fd, &h, sizeof(h)) < 0 ||
	    (alen && send_full(fd, a, alen) < 0))
		return -1;
	return 0;
}

/* Read one message; *payload is malloc'ed (NUL-terminated, may be NULL
 * when empty). */
static int recv_msg(int fd, struct up_hdr *h, char **payload)
{
	*payload = NULL;
	if (read_full(fd, h, sizeof(*h)) < 0)
		return -1;
	if (h->len > UPSTREAM_MAX_BYTES) {
		errno = EMSGSIZE;
		return -1;
	}
	*payload = xmalloc(h->len + 1);
	if (read_full(fd, *payload, h->len) < 0) {
		free(*payload);
		*payload = NULL;
		return -1;
	}
	(*payload)[h->len] = '\0';
	return 0;
}

/* ---- the agent (child process, Slurm's PMIx client) ---- */

static struct {
	int fd;
	pmix_proc_t me;
	uint32_t size;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool busy; /* a fence is being served */
	struct up_hdr req;
	char *data;
} agent = {
    .fd = -1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static void agent_hello_fail(const char *what, pmix_status_t rc)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s: %s", what, PMIx_Error_string(rc));
	send_msg(agent.fd, UP_HELLO, -1, 0, msg, strlen(msg));
	_exit(1);
}

static int agent_get_u32(const char *key, uint32_t *out)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&wild, agent.me.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&wild, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS)
		return rc;
	if (v->type == PMIX_UINT32)
		*out = v->data.uint32;
	else
		rc = PMIX_ERR_TYPE_MISMATCH;
	PMIX_VALUE_RELEASE(v);
	return rc;
}

static char *agent_get_string(const char *key)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	char *s = NULL;

	PMIX_LOAD_PROCID(&wild, agent.me.nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&wild, key, NULL, 0, &v) != PMIX_SUCCESS)
		return NULL;
	if (v->type == PMIX_STRING && v->data.string)
		s = xstrdup(v->data.string);
	PMIX_VALUE_RELEASE(v);
	return s;
}

/* One round; on failure *why says what failed and -1 is returned. */
static int agent_fence(uint64_t seq, const char *data, size_t len,
		       struct strbuf *out, char *why, size_t whylen)
{
	struct up_value_hdr vh = {UPSTREAM_MAGIC, 0, seq};
	char *buf = xmalloc(sizeof(vh) + len);
	pmix_value_t val;
	pmix_info_t info;
	bool yes = true;
	pmix_status_t rc;

	memcpy(buf, &vh, sizeof(vh));
	if (len)
		memcpy(buf + sizeof(vh), data, len);
	PMIX_VALUE_CONSTRUCT(&val);
	val.type = PMIX_BYTE_OBJECT;
	val.data.bo.bytes = buf;
	val.data.bo.size = sizeof(vh) + len;
	rc = PMIx_Put(PMIX_GLOBAL, UPSTREAM_KEY, &val); /* copies */
	free(buf);
	if (rc != PMIX_SUCCESS) {
		snprintf(why, whylen, "put: %s", PMIx_Error_string(rc));
		return -1;
	}
	rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		snprintf(why, whylen, "commit: %s", PMIx_Error_string(rc));
		return -1;
	}
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence(NULL, 0, &info, 1);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		snprintf(why, whylen, "fence: %s", PMIx_Error_string(rc));
		return -1;
	}
	for (uint32_t r = 0; r < agent.size; r++) {
		pmix_proc_t p;
		pmix_value_t *v = NULL;
		struct up_value_hdr got;
		bool good;

		PMIX_LOAD_PROCID(&p, agent.me.nspace, r);
		rc = PMIx_Get(&p, UPSTREAM_KEY, NULL, 0, &v);
		if (rc != PMIX_SUCCESS) {
			snprintf(why, whylen,
				 "get the data of node task %u: %s", r,
				 PMIx_Error_string(rc));
			return -1;
		}
		good = v->type == PMIX_BYTE_OBJECT &&
		       v->data.bo.size >= sizeof(got);
		if (good) {
			memcpy(&got, v->data.bo.bytes, sizeof(got));
			good = got.magic == UPSTREAM_MAGIC && got.seq == seq;
		}
		if (good)
			sb_add(out, v->data.bo.bytes + sizeof(got),
			       v->data.bo.size - sizeof(got));
		PMIX_VALUE_RELEASE(v);
		if (!good) {
			snprintf(
			    why, whylen,
			    "node task %u answered fence %llu with stale "
			    "or foreign data (the nodes' fences are out of "
			    "step)",
			    r, (unsigned long long)seq);
			return -1;
		}
	}
	return 0;
}

/* Serves fences one at a time, in the order they came. */
static void *agent_worker(void *arg)
{
	for (;;) {
		struct strbuf out = STRBUF_INIT;
		struct up_hdr req;
		char *data, why[256] = "";
		int rc;

		pthread_mutex_lock(&agent.lock);
		while (!agent.data)
			pthread_cond_wait(&agent.cond, &agent.lock);
		req = agent.req;
		data = agent.data;
		pthread_mutex_unlock(&agent.lock);

		rc =
		    agent_fence(req.seq, data, req.len, &out, why, sizeof(why));
		free(data);
		if (rc == 0)
			rc = send_msg(agent.fd, UP_RESULT, 0, req.seq, out.buf,
				      out.len);
		else
			rc = send_msg(agent.fd, UP_RESULT, -1, req.seq, why,
				      strlen(why));
		sb_free(&out);
		pthread_mutex_lock(&agent.lock);
		agent.data = NULL;
		agent.busy = false;
		pthread_mutex_unlock(&agent.lock);
		if (rc < 0)
			_exit(1); /* the server is gone */
	}
	return NULL;
}

static __attribute__((noreturn)) void agent_main(int fd)
{
	struct strbuf hello = STRBUF_INIT;
	cleanup_free char *nsdir = NULL;
	pthread_t worker;
	pmix_status_t rc;
	bool busy;

	agent.fd = fd;
	/* The inherited environment names Slurm's server: PMIx_Init is the
	 * first PMIx call in this process. */
	rc = PMIx_Init(&agent.me, NULL, 0);
	if (rc != PMIX_SUCCESS)
		agent_hello_fail("init as a client of Slurm's PMIx server", rc);
	rc = agent_get_u32(PMIX_JOB_SIZE, &agent.size);
	if (rc != PMIX_SUCCESS)
		agent_hello_fail("get the size of the Slurm step", rc);
	/* Slurm's per-step directory, removed by slurmstepd when the step
	 * ends, however it ends. */
	nsdir = agent_get_string(PMIX_NSDIR);
	sb_add(&hello, (const char *)&agent.me.rank, sizeof(uint32_t));
	sb_add(&hello, (const char *)&agent.size, sizeof(uint32_t));
	if (nsdir)
		sb_puts(&hello, nsdir);
	if (send_msg(fd, UP_HELLO, 0, 0, hello.buf, hello.len) < 0)
		_exit(1);
	sb_free(&hello);
	if (pthread_create(&worker, NULL, agent_worker, NULL) != 0)
		_exit(1);

	for (;;) {
		struct up_hdr h;
		char *payload;

		if (recv_msg(fd, &h, &payload) < 0)
			break; /* EOF: the local job has ended */
		if (h.type == UP_FENCE) {
			pthread_mutex_lock(&agent.lock);
			if (agent.busy) {
				/* The server sends one at a time. */
				pthread_mutex_unlock(&agent.lock);
				_exit(1);
			}
			agent.busy = true;
			agent.req = h;
			agent.data = payload;
			pthread_cond_signal(&agent.cond);
			pthread_mutex_unlock(&agent.lock);
		} else if (h.type == UP_ABORT) {
			/* Slurm kills the whole step (every node). */
			rc = PMIx_Abort(h.code, payload, NULL, 0);
			if (rc != PMIX_SUCCESS)
				log_warn("upstream agent: abort: %s",
					 PMIx_Error_string(rc));
			free(payload);
		} else {
			free(payload);
			_exit(1);
		}
	}
	pthread_mutex_lock(&agent.lock);
	busy = agent.busy;
	pthread_mutex_unlock(&agent.lock);
	if (busy)
		_exit(1); /* a fence can never complete now: no finalize */
	rc = PMIx_Finalize(NULL, 0);
	_exit(rc == PMIX_SUCCESS ? 0 : 1);
}

/* ---- server side ---- */

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	long end = mono_ms() + timeout_ms;

	for (;;) {
		long left = end - mono_ms();
		int r = poll(&p, 1, left > 0 ? (int)left : 0);

		if (r > 0)
			return 0;
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

int pmi_upstream_start(struct pmi_upstream **out, mpictr_err **err)
{
	struct pmi_upstream *u;
	int sv[2];
	struct up_hdr h;
	char *payload = NULL;
	sigset_t mask;

	*out = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(err, errno, "upstream agent: socketpair");
	u = xcalloc(1, sizeof(*u));
	u->fd = sv[0];
	pthread_mutex_init(&u->wlock, NULL);
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->tail = &u->head;
	/* Die with the supervisor; keep its signal mask (SIGTERM and friends
	 * stay blocked: the agent ends on EOF, after the ranks). */
	sigprocmask(SIG_BLOCK, NULL, &mask);
	u->pid = proc_fork_child(&mask, "the upstream agent", err);
	if (u->pid < 0) {
		close(sv[1]);
		u->pid = 0;
		goto fail;
	}
	if (u->pid == 0) {
		close_all_fds_except(&sv[1], 1);
		agent_main(sv[1]);
	}
	close(sv[1]);
	if (wait_readable(u->fd, HELLO_TIMEOUT_MS) < 0 ||
	    recv_msg(u->fd, &h, &payload) < 0 || h.type != UP_HELLO) {
		err_set(err, errno == EPIPE ? 0 : errno,
			"upstream agent: no answer from the agent");
		goto fail;
	}
	if (h.code != 0) {
		err_set(err, 0, "upstream agent: %s", payload ? payload : "");
		err_hint(err, "node daemon mode needs srun --mpi=pmix");
		goto fail;
	}
	if (h.len < 2 * sizeof(uint32_t)) {
		err_set(err, 0, "upstream agent: short hello");
		goto fail;
	}
	memcpy(&u->rank, payload, sizeof(uint32_t));
	memcpy(&u->size, payload + sizeof(uint32_t), sizeof(uint32_t));
	if (h.len > 2 * sizeof(uint32_t) && payload[8] == '/')
		u->nsdir = xstrdup(payload + 8);
	free(payload);
	log_debug("upstream agent %d: task %u of %u, step directory '%s'",
		  (int)u->pid, u->rank, u->size, u->nsdir ? u->nsdir : "");
	*out = u;
	return 0;
fail:
	free(payload);
	pmi_upstream_stop(u);
	return -1;
}

uint32_t pmi_upstream_rank(const struct pmi_upstream *u)
{
	return u->rank;
}

uint32_t pmi_upstream_size(const struct pmi_upstream *u)
{
	return u->size;
}

const char *pmi_upstream_step_dir(const struct pmi_upstream *u)
{
	return u->nsdir;
}

static void fail_all(struct up_req *r)
{
	while (r) {
		struct up_req *n = r->next;

		r->done(r->arg, -1, NULL, 0);
		free(r->data);
		free(r);
		r = n;
	}
}

/* One fence: send, wait for the answer. Returns the done() status. */
static int client_round(struct pmi_upstream *u, struct up_req *r, char **all,
			size_t *len)
{
	uint64_t seq = ++u->seq;
	struct up_hdr h;
	char *payload = NULL;
	int rc;

	*all = NULL;
	*len = 0;
	pthread_mutex_lock(&u->wlock);
	rc = send_msg(u->fd, UP_FENCE, 0, seq, r->data, r->len);
	pthread_mutex_unlock(&u->wlock);
	if (rc < 0 || recv_msg(u->fd, &h, &payload) < 0) {
		log_error("upstream agent: fence %llu: the agent is gone",
			  (unsigned long long)seq);
		return -2;
	}
	if (h.type != UP_RESULT || h.seq != seq) {
		log_error("upstream agent: fence %llu: unexpected reply",
			  (unsigned long long)seq);
		free(payload);
		return -2;
	}
	if (h.code != 0) {
		log_error("upstream agent: fence %llu failed: %s",
			  (unsigned long long)seq, payload ? payload : "");
		free(payload);
		return -1;
	}
	*all = payload;
	*len = h.len;
	return 0;
}

static void *client_main(void *arg)
{
	struct pmi_upstream *u = arg;

	for (;;) {
		struct up_req *r;
		char *all;
		size_t len;
		int rc;

		pthread_mutex_lock(&u->lock);
		while (!u->head && !u->stopping)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stopping || u->broken) {
			pthread_mutex_unlock(&u->lock);
			break;
		}
		r = u->head;
		u->head = r->next;
		if (!u->head)
			u->tail = &u->head;
		pthread_mutex_unlock(&u->lock);

		rc = client_round(u, r, &all, &len);
		if (rc == -2) {
			pthread_mutex_lock(&u->lock);
			u->broken = true;
			pthread_mutex_unlock(&u->lock);
		}
		r->done(r->arg, rc == 0 ? 0 : -1, all, len);
		free(r->data);
		free(r);
	}
	/* Whatever is still queued will never be served. */
	pthread_mutex_lock(&u->lock);
	struct up_req *rest = u->head;
	u->head = NULL;
	u->tail = &u->head;
	pthread_mutex_unlock(&u->lock);
	fail_all(rest);
	return NULL;
}

int pmi_upstream_attach(struct pmi_upstream *u, mpictr_err **err)
{
	int rc;

	if (u->thread_started)
		return 0;
	rc = pthread_create(&u->thread, NULL, client_main, u);
	if (rc != 0)
		return err_set(err, rc, "upstream agent: start thread");
	u->thread_started = true;
	return 0;
}

int pmi_upstream_fence(struct pmi_upstream *u, const char *data, size_t n,
		       pmi_upstream_done_fn done, void *arg)
{
	struct up_req *r;

	pthread_mutex_lock(&u->lock);
	if (!u->thread_started || u->stopping || u->broken) {
		pthread_mutex_unlock(&u->lock);
		return -1;
	}
	r = xcalloc(1, sizeof(*r));
	if (n) {
		r->data = xmalloc(n);
		memcpy(r->data, data, n);
	}
	r->len = n;
	r->done = done;
	r->arg = arg;
	*u->tail = r;
	u->tail = &r->next;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

void pmi_upstream_abort(struct pmi_upstream *u, int code, const char *msg)
{
	if (!u || u->fd < 0)
		return;
	pthread_mutex_lock(&u->wlock);
	if (send_msg(u->fd, UP_ABORT, code, 0, msg, msg ? strlen(msg) : 0) < 0)
		log_warn("upstream agent: cannot send abort: %s",
			 strerror(errno));
	pthread_mutex_unlock(&u->wlock);
}

void pmi_upstream_detach(struct pmi_upstream *u)
{
	if (!u || !u->thread_started)
		return;
	pthread_mutex_lock(&u->lock);
	u->stopping = true;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
	/* Unblock a round in flight. The write side stays open, so an abort
	 * can still be sent; the agent sees EOF when the socket closes. */
	shutdown(u->fd, SHUT_RD);
	pthread_join(u->thread, NULL);
	u->thread_started = false;
}

void pmi_upstream_stop(struct pmi_upstream *u)
{
	long end;

	if (!u)
		return;
	pmi_upstream_detach(u);
	if (u->fd >= 0) {
		shutdown(u->fd, SHUT_RDWR);
		close(u->fd);
		u->fd = -1;
	}
	/* EOF makes the agent finalize and exit; a stuck one is killed. */
	end = mono_ms() + AGENT_EXIT_TIMEOUT_MS;
	while (u->pid > 0) {
		pid_t r = waitpid(u->pid, NULL, WNOHANG);

		if (r == u->pid || (r < 0 && errno != EINTR))
			break; /* reaped here, or by the caller's loop */
		if (mono_ms() >= end) {
			log_warn("upstream agent %d did not exit; killing it",
				 (int)u->pid);
			kill(u->pid, SIGKILL);
			TEMP_FAILURE_RETRY(waitpid(u->pid, NULL, 0));
			break;
		}
		usleep(10000);
	}
	pthread_mutex_destroy(&u->wlock);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u->nsdir);
	free(u);
}
