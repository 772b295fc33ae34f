/* pmi1_server.c - the PMI-1 "simple" wire server for MPICH ranks: one
 * AF_UNIX socketpair per local rank (the child end becomes PMI_FD), served
 * by one thread with poll(). One key-value space per job, named after the
 * namespace; barrier_in completes when every local rank is in.
 *
 * In node daemon mode (hooks->upstream_fence set) a barrier is also an
 * allgather: once every local rank is in, the puts made here since the last
 * barrier go upstream as length-prefixed key/value records, and the
 * records of every node are stored before barrier_out.
 *
 * The server never blocks on a rank: replies are sent with MSG_DONTWAIT and
 * a rank that does not read them, sends a malformed line or an unsupported
 * command is dropped (its socket closed) and logged. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pmi/pmi1_wire.h"
#include "pmi/pmi_internal.h"
#include "common/util.h"

#define KV_BUCKETS 1024
/* Bounds on what ranks may store: MPICH stores a few keys per rank. */
#define KV_MAX_BYTES (64u << 20)

struct kv {
	struct kv *next;
	char *key;
	char *value;
};

struct conn {
	int fd;	      /* server end; -1 once closed */
	int child_fd; /* child end until the parent forked; -1 after */
	uint32_t rank;
	size_t inlen;
	bool in_barrier;
	/* inside a multi-line "mcmd=spawn" ... "endcmd" segment */
	bool in_spawn;
	uint32_t spawn_lines, spawn_sofar, spawn_total;
	char in[PMI1_MAXLINE];
};

struct pmi1_service {
	pthread_t thread;
	bool thread_started;
	int wake[2]; /* write a byte to stop the thread */
	struct pmi_hooks hooks;
	char *kvsname;
	uint32_t size;
	uint32_t universe;
	uint32_t nlocal;
	struct conn *conns;
	atomic_uint in_barrier;
	bool barrier_upstream; /* an upstream allgather is in flight */
	int fence_pipe[2];     /* its result, as a struct fence_result * */
	char **new_keys;       /* put since the last barrier */
	size_t kv_bytes;
	struct kv *kv[KV_BUCKETS];
};

static size_t kv_hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % KV_BUCKETS;
}

static struct kv *kv_find(struct pmi1_service *s, const char *key)
{
	for (struct kv *e = s->kv[kv_hash(key)]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

/* Returns 0, or -1 when the store is full. A key put again is replaced. */
static int kv_put(struct pmi1_service *s, const char *key, const char *value)
{
	struct kv *e = kv_find(s, key);
	size_t add = strlen(value) + (e ? 0 : strlen(key));

	if (s->kv_bytes + add > KV_MAX_BYTES)
		return -1;
	s->kv_bytes += add;
	if (e) {
		s->kv_bytes -= strlen(e->value);
		free(e->value);
		e->value = xstrdup(value);
		return 0;
	}
	e = xmalloc(sizeof(*e));
	e->key = xstrdup(key);
	e->value = xstrdup(value);
	e->next = s->kv[kv_hash(key)];
	s->kv[kv_hash(key)] = e;
	return 0;
}

static void kv_free_all(struct pmi1_service *s)
{
	for (size_t i = 0; i < KV_BUCKETS; i++) {
		struct kv *e = s->kv[i];

		while (e) {
			struct kv *n = e->next;

			free(e->key);
			free(e->value);
			free(e);
			e = n;
		}
		s->kv[i] = NULL;
	}
}

static void conn_drop(struct pmi1_service *s, struct conn *c, const char *why)
{
	if (c->fd < 0)
		return;
	if (why)
		log_warn("pmi-1: dropping rank %u: %s", c->rank, why);
	close(c->fd);
	c->fd = -1;
	c->inlen = 0;
	if (c->in_barrier) {
		c->in_barrier = false;
		atomic_fetch_sub(&s->in_barrier, 1);
	}
	s->hooks.rank_event(s->hooks.ctx, c->rank, RANK_EV_CLOSED);
}

static void conn_send(struct pmi1_service *s, struct conn *c, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));
static void conn_send(struct pmi1_service *s, struct conn *c, const char *fmt,
		      ...)
{
	char line[PMI1_MAXLINE + 1];
	va_list ap;
	int n;
	ssize_t w;

	if (c->fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PMI1_MAXLINE) {
		conn_drop(s, c, "reply longer than 1024 bytes");
		return;
	}
	line[n++] = '\n';
	/* A reply is far smaller than the socket buffer; if it does not fit,
	 * the rank has stopped reading and cannot be served anyway. */
	w = TEMP_FAILURE_RETRY(
	    send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT));
	if (w != n)
		conn_drop(s, c, "cannot send reply");
}

static void barrier_release(struct pmi1_service *s, int rc)
{
	s->barrier_upstream = false;
	for (uint32_t i = 0; i < s->nlocal; i++) {
		struct conn *c = &s->conns[i];

		if (!c->in_barrier)
			continue;
		c->in_barrier = false;
		atomic_fetch_sub(&s->in_barrier, 1);
		conn_send(s, c, "cmd=barrier_out rc=%d", rc);
	}
}

/* ---- node daemon mode: the barrier as an allgather of the puts ---- */

struct fence_result {
	int status;
	char *all;
	size_t len;
};

struct kv_rec {
	uint32_t klen, vlen;
};

/* Records of the keys put since the last barrier: {klen, vlen}, key,
 * value (host byte order: every node runs the same build). */
static char *encode_new_keys(struct pmi1_service *s, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	for (char **k = s->new_keys; k && *k; k++) {
		struct kv *e = kv_find(s, *k);
		struct kv_rec rec;

		if (!e)
			continue;
		rec.klen = (uint32_t)strlen(e->key);
		rec.vlen = (uint32_t)strlen(e->value);
		sb_add(&sb, (const char *)&rec, sizeof(rec));
		sb_add(&sb, e->key, rec.klen);
		sb_add(&sb, e->value, rec.vlen);
	}
	strv_free(s->new_keys);
	s->new_keys = NULL;
	*len = sb.len;
	if (!sb.len) {
		sb_free(&sb);
		return NULL;
	}
	return sb_steal(&sb);
}

/* Store every node's records; -1 when one is malformed or does not fit. */
static int store_records(struct pmi1_service *s, const char *p, size_t len)
{
	while (len > 0) {
		struct kv_rec rec;
		cleanup_free char *key = NULL, *val = NULL;

		if (len < sizeof(rec))
			return -1;
		memcpy(&rec, p, sizeof(rec));
		p += sizeof(rec);
		len -= sizeof(rec);
		if (rec.klen == 0 || rec.klen > PMI1_KEYLEN_MAX ||
		    rec.vlen > PMI1_VALLEN_MAX ||
		    (size_t)rec.klen + rec.vlen > len)
			return -1;
		key = xstrndup(p, rec.klen);
		val = xstrndup(p + rec.klen, rec.vlen);
		if (strlen(key) != rec.klen || strlen(val) != rec.vlen ||
		    kv_put(s, key, val) < 0)
			return -1;
		p += rec.klen + rec.vlen;
		len -= rec.klen + rec.vlen;
	}
	return 0;
}

/* From the upstream thread: hand the result to the service thread. */
static void fence_done(void *arg, int status, char *all, size_t len)
{
	struct pmi1_service *s = arg;
	struct fence_result *r = xmalloc(sizeof(*r));

	r->status = status;
	r->all = all;
	r->len = len;
	/* A pointer is far below PIPE_BUF: the write is atomic. */
	if (write_full(s->fence_pipe[1], &r, sizeof(r)) < 0) {
		log_error("pmi-1: hand over a barrier result: %s",
			  strerror(errno));
		free(all);
		free(r);
	}
}

static void fence_finish(struct pmi1_service *s)
{
	struct fence_result *r;
	int rc = -1;

	if (read(s->fence_pipe[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
		return;
	if (r->status == 0) {
		rc = store_records(s, r->all, r->len) < 0 ? -1 : 0;
		if (rc < 0)
			log_error("pmi-1: the barrier data of the other nodes "
				  "is malformed or exceeds the store");
	}
	free(r->all);
	free(r);
	barrier_release(s, rc);
}

static void barrier_check(struct pmi1_service *s)
{
	size_t len;
	cleanup_free char *blob = NULL;

	if (atomic_load(&s->in_barrier) < s->nlocal)
		return;
	if (!s->hooks.upstream_fence) {
		barrier_release(s, 0);
		return;
	}
	if (s->barrier_upstream)
		return;
	blob = encode_new_keys(s, &len);
	s->barrier_upstream = true;
	if (s->hooks.upstream_fence(s->hooks.ctx, blob, len, fence_done, s) <
	    0) {
		log_error("pmi-1: barrier: the upstream agent is gone");
		barrier_release(s, -1);
	}
}

static void handle_put(struct pmi1_service *s, struct conn *c,
		       const struct pmi1_msg *m)
{
	const char *kvs = pmi1_get(m, "kvsname"), *key = pmi1_get(m, "key"),
		   *val = pmi1_get(m, "value");

	if (!kvs || !key || !val) {
		conn_send(s, c, "cmd=put_result rc=-1 msg=missing_argument");
		return;
	}
	if (strcmp(kvs, s->kvsname) != 0) {
		conn_send(s, c, "cmd=put_result rc=-1 msg=unknown_kvsname");
		return;
	}
	if (strlen(key) > PMI1_KEYLEN_MAX || strlen(val) > PMI1_VALLEN_MAX) {
		conn_send(s, c, "cmd=put_result rc=-1 msg=too_long");
		return;
	}
	if (kv_put(s, key, val) < 0) {
		conn_send(s, c, "cmd=put_result rc=-1 msg=store_full");
		return;
	}
	if (s->hooks.upstream_fence)
		strv_push(&s->new_keys, key);
	conn_send(s, c, "cmd=put_result rc=0");
}

static void handle_get(struct pmi1_service *s, struct conn *c,
		       const struct pmi1_msg *m)
{
	const char *kvs = pmi1_get(m, "kvsname"), *key = pmi1_get(m, "key");
	struct kv *e;

	if (!kvs || !key) {
		conn_send(s, c, "cmd=get_result rc=-1 msg=missing_argument");
		return;
	}
	if (strcmp(kvs, s->kvsname) != 0) {
		conn_send(s, c, "cmd=get_result rc=-1 msg=unknown_kvsname");
		return;
	}
	e = kv_find(s, key);
	if (!e)
		conn_send(s, c, "cmd=get_result rc=-1 msg=key_not_found");
	else
		conn_send(s, c, "cmd=get_result rc=0 value=%s", e->value);
}

/* MPICH's PMI_Spawn_multiple sends one "mcmd=spawn" segment per app, a
 * "key=value" a line, each ending with "endcmd", and waits for one
 * spawn_result after the last. MPICH 4.0.2 (ch4) cannot spawn even under
 * its own Hydra, so the answer is a clean refusal (docs/pmi.md). */
/* "name=N\n" -> N, or 0 when line is another key or no number. */
static uint32_t spawn_count(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);
	char num[16];
	long v;

	if (n <= k + 1 || strncmp(line, name, k) != 0 || line[k] != '=')
		return 0;
	snprintf(num, sizeof(num), "%.*s", (int)(n - k - 1), line + k + 1);
	num[strcspn(num, "\n")] = '\0';
	return parse_long(num, 0, INT32_MAX, &v) == 0 ? (uint32_t)v : 0;
}

static void spawn_line(struct pmi1_service *s, struct conn *c, const char *line,
		       size_t n)
{
	if (n >= 6 && strncmp(line, "endcmd", 6) == 0 &&
	    (n == 6 || line[6] == '\n')) {
		c->in_spawn = false;
		if (c->spawn_sofar >= c->spawn_total) {
			log_warn("pmi1: rank %u asked to spawn processes: "
				 "not supported for MPICH",
				 c->rank);
			conn_send(s, c,
				  "cmd=spawn_result rc=-1 "
				  "msg=spawn_not_supported");
		}
		return;
	}
	if (++c->spawn_lines > 4096) {
		conn_drop(s, c, "spawn command longer than 4096 lines");
		return;
	}
	if (str_has_prefix(line, "spawnssofar="))
		c->spawn_sofar = spawn_count(line, n, "spawnssofar");
	else if (str_has_prefix(line, "totspawns="))
		c->spawn_total = spawn_count(line, n, "totspawns");
}

static void handle_line(struct pmi1_service *s, struct conn *c,
			const char *line, size_t n)
{
	struct pmi1_msg m;
	int rc;
	const char *cmd;

	if (c->in_spawn) {
		spawn_line(s, c, line, n);
		return;
	}
	rc = pmi1_parse(line, n, &m);

	if (rc != PMI1_OK) {
		char why[128];

		snprintf(why, sizeof(why), "malformed line: %s",
			 pmi1_strerror(rc));
		conn_drop(s, c, why);
		return;
	}
	cmd = m.cmd;
	if (m.multi) {
		if (strcmp(cmd, "spawn") != 0) {
			conn_drop(s, c, "unsupported multi-line command");
			return;
		}
		c->in_spawn = true;
		c->spawn_lines = c->spawn_sofar = c->spawn_total = 0;
	} else if (strcmp(cmd, "init") == 0) {
		const char *v = pmi1_get(&m, "pmi_version");

		if (!v || strcmp(v, "1") != 0) {
			conn_send(s, c,
				  "cmd=response_to_init rc=-1 pmi_version=1 "
				  "pmi_subversion=1");
			return;
		}
		conn_send(s, c,
			  "cmd=response_to_init rc=0 pmi_version=1 "
			  "pmi_subversion=1");
		s->hooks.rank_event(s->hooks.ctx, c->rank, RANK_EV_CONNECTED);
	} else if (strcmp(cmd, "get_maxes") == 0) {
		conn_send(s, c,
			  "cmd=maxes rc=0 kvsname_max=%d keylen_max=%d "
			  "vallen_max=%d",
			  PMI1_KVSNAME_MAX, PMI1_KEYLEN_MAX, PMI1_VALLEN_MAX);
	} else if (strcmp(cmd, "get_appnum") == 0) {
		conn_send(s, c, "cmd=appnum rc=0 appnum=0");
	} else if (strcmp(cmd, "get_my_kvsname") == 0) {
		conn_send(s, c, "cmd=my_kvsname rc=0 kvsname=%s", s->kvsname);
	} else if (strcmp(cmd, "get_universe_size") == 0) {
		conn_send(s, c, "cmd=universe_size rc=0 size=%u", s->universe);
	} else if (strcmp(cmd, "put") == 0) {
		handle_put(s, c, &m);
	} else if (strcmp(cmd, "get") == 0) {
		handle_get(s, c, &m);
	} else if (strcmp(cmd, "barrier_in") == 0) {
		if (!c->in_barrier) {
			c->in_barrier = true;
			atomic_fetch_add(&s->in_barrier, 1);
		}
		barrier_check(s);
	} else if (strcmp(cmd, "finalize") == 0) {
		/* Recorded before the ack, so the rank cannot have exited
		 * before the glue knows it finalized. */
		s->hooks.rank_event(s->hooks.ctx, c->rank, RANK_EV_FINALIZED);
		conn_send(s, c, "cmd=finalize_ack rc=0");
	} else if (strcmp(cmd, "abort") == 0) {
		const char *v = pmi1_get(&m, "exitcode");
		long code = 1;
		char msg[96];

		if (!v || parse_long(v, INT32_MIN, INT32_MAX, &code) < 0)
			code = 1;
		snprintf(msg, sizeof(msg), "rank %u called PMI abort", c->rank);
		s->hooks.abort(s->hooks.ctx, (int)code, msg);
	} else {
		char why[96];

		snprintf(why, sizeof(why), "unsupported command '%.40s'", cmd);
		conn_drop(s, c, why);
	}
}

struct line_ctx {
	struct pmi1_service *s;
	struct conn *c;
};

static bool take_line(void *ctx, const char *line, size_t n)
{
	struct line_ctx *l = ctx;

	handle_line(l->s, l->c, line, n);
	return l->c->fd >= 0;
}

/* Read what is available and handle every complete line. */
static void conn_read(struct pmi1_service *s, struct conn *c)
{
	ssize_t n = TEMP_FAILURE_RETRY(
	    recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0));

	if (n == 0) {
		conn_drop(s, c, NULL); /* EOF: the rank closed or exited */
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			conn_drop(s, c, strerror(errno));
		return;
	}
	c->inlen += (size_t)n;
	if (pmi1_take_lines(c->in, &c->inlen, sizeof(c->in), take_line,
			    &(struct line_ctx){s, c}) < 0)
		conn_drop(s, c, "malformed line: line longer than 1024 bytes");
}

static void *service_main(void *arg)
{
	struct pmi1_service *s = arg;
	struct pollfd *pfd = xcalloc(s->nlocal + 2, sizeof(*pfd));

	for (;;) {
		uint32_t np = 2;

		pfd[0].fd = s->wake[0];
		pfd[0].events = POLLIN;
		pfd[1].fd = s->fence_pipe[0];
		pfd[1].events = POLLIN;
		for (uint32_t i = 0; i < s->nlocal; i++) {
			pfd[np].fd = s->conns[i].fd; /* -1 is ignored */
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
			np++;
		}
		if (poll(pfd, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("pmi-1: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			fence_finish(s);
		for (uint32_t i = 0; i < s->nlocal; i++)
			if (pfd[i + 2].revents && s->conns[i].fd >= 0)
				conn_read(s, &s->conns[i]);
	}
	free(pfd);
	return NULL;
}

int pmi1_service_start(const struct pmi_job *job, const struct pmi_hooks *hooks,
		       struct pmi1_service **out, mpictr_err **err)
{
	struct pmi1_service *s = xcalloc(1, sizeof(*s));
	cleanup_free char *mapping = NULL;
	int rc;

	*out = NULL;
	s->wake[0] = s->wake[1] = -1;
	s->fence_pipe[0] = s->fence_pipe[1] = -1;
	s->hooks = *hooks;
	s->kvsname = xstrdup(job->nspace);
	s->size = job->size;
	s->universe = job->universe ? job->universe : job->size;
	s->nlocal = job->nlocal;
	s->conns = xcalloc(job->nlocal, sizeof(*s->conns));
	for (uint32_t i = 0; i < s->nlocal; i++) {
		s->conns[i].fd = s->conns[i].child_fd = -1;
		s->conns[i].rank = job->local_ranks[i];
	}
	if (!pmi1_value_ok(s->kvsname, PMI1_KVSNAME_MAX)) {
		err_set(err, 0, "pmi-1 kvsname '%s' is not a valid value",
			s->kvsname);
		goto fail;
	}
	mapping = pmi_job_process_mapping(job);
	if (mapping)
		kv_put(s, "PMI_process_mapping", mapping);
	if (pipe2(s->wake, O_CLOEXEC) < 0 ||
	    pipe2(s->fence_pipe, O_CLOEXEC) < 0) {
		err_set(err, errno, "pmi-1: pipe");
		goto fail;
	}
	for (uint32_t i = 0; i < s->nlocal; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) <
		    0) {
			err_set(err, errno, "pmi-1: socketpair for rank %u",
				s->conns[i].rank);
			goto fail;
		}
		s->conns[i].fd = sv[0];
		s->conns[i].child_fd = sv[1];
		if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
			err_set(err, errno, "pmi-1: set O_NONBLOCK");
			goto fail;
		}
	}
	rc = pthread_create(&s->thread, NULL, service_main, s);
	if (rc != 0) {
		err_set(err, rc, "pmi-1: start server thread");
		goto fail;
	}
	s->thread_started = true;
	*out = s;
	return 0;
fail:
	pmi1_service_stop(s);
	return -1;
}

static struct conn *conn_of(struct pmi1_service *s, uint32_t rank)
{
	for (uint32_t i = 0; i < s->nlocal; i++)
		if (s->conns[i].rank == rank)
			return &s->conns[i];
	return NULL;
}

int pmi1_service_child_fd(struct pmi1_service *s, uint32_t rank,
			  mpictr_err **err)
{
	struct conn *c = conn_of(s, rank);

	if (!c)
		return err_set(err, 0, "rank %u is not a local rank", rank);
	if (c->child_fd < 0)
		return err_set(err, 0, "rank %u was already started", rank);
	return c->child_fd;
}

void pmi1_service_forked(struct pmi1_service *s, uint32_t rank)
{
	struct conn *c = conn_of(s, rank);

	if (c && c->child_fd >= 0) {
		close(c->child_fd);
		c->child_fd = -1;
	}
}

uint32_t pmi1_service_barrier_waiting(struct pmi1_service *s)
{
	return atomic_load(&s->in_barrier);
}

void pmi1_service_stop(struct pmi1_service *s)
{
	if (!s)
		return;
	if (s->thread_started) {
		char b = 0;

		if (write_full(s->wake[1], &b, 1) < 0)
			log_error("pmi-1: wake server thread: %s",
				  strerror(errno));
		pthread_join(s->thread, NULL);
	}
	for (uint32_t i = 0; i < s->nlocal; i++) {
		if (s->conns[i].fd >= 0)
			close(s->conns[i].fd);
		if (s->conns[i].child_fd >= 0)
			close(s->conns[i].child_fd);
	}
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	if (s->fence_pipe[0] >= 0) {
		struct fence_result *r;

		/* Results that came after the thread stopped. */
		fcntl(s->fence_pipe[0], F_SETFL, O_NONBLOCK);
		while (read(s->fence_pipe[0], &r, sizeof(r)) ==
		       (ssize_t)sizeof(r)) {
			free(r->all);
			free(r);
		}
		close(s->fence_pipe[0]);
	}
	if (s->fence_pipe[1] >= 0)
		close(s->fence_pipe[1]);
	strv_free(s->new_keys);
	kv_free_all(s);
	free(s->conns);
	free(s->kvsname);
	free(s);
}
