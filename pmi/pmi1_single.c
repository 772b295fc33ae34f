/* pmi1_single.c - the PMI-1 service of a single process (no -n, no
 * launcher): whatever MPICH program the command starts, directly or behind
 * any number of shells and scripts, finds a process manager at PMI_PORT
 * and runs as a one-rank job (an MPI singleton), instead of forking
 * `mpiexec -pmi_args` (MPICH's own singleton start, which hangs when the
 * image's mpiexec is not Hydra).
 *
 * A TCP listener on 127.0.0.1 (MPICH's PMI_PORT is TCP only), served by one
 * thread with poll(). Every connection is a job of its own with rank 0 of
 * 1 and its own key-value space, so programs that run one after another or
 * side by side each get theirs. Only the job user's connections are served
 * (the kernel's record of the peer socket, pmix_peer_uid()); the others are
 * closed unanswered. A program that never calls MPI never connects: the
 * service costs a socket and an idle thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "pmi/pmi.h"
#include "pmi/pmi1_wire.h"
#include "pmi/pmix_peer.h"

/* Programs served at once, and what each may store (MPICH stores a few
 * keys). */
#define SINGLE_CONNS 64
#define SINGLE_KEYS 256

struct single_kv {
	char *key, *value;
};

struct single_conn {
	int fd; /* -1: free */
	unsigned id;
	size_t inlen, nkv;
	struct single_kv kv[SINGLE_KEYS];
	char in[PMI1_MAXLINE];
};

struct pmi_single {
	pthread_t thread;
	int listen_fd;
	int wake[2];
	int port;
	uid_t uid;
	unsigned next_id;
	struct single_conn conns[SINGLE_CONNS];
};

static void conn_close(struct single_conn *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	c->inlen = 0;
	for (size_t i = 0; i < c->nkv; i++) {
		free(c->kv[i].key);
		free(c->kv[i].value);
	}
	c->nkv = 0;
}

static void conn_send(struct single_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void conn_send(struct single_conn *c, const char *fmt, ...)
{
	char line[PMI1_MAXLINE + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PMI1_MAXLINE) {
		conn_close(c);
		return;
	}
	line[n++] = '\n';
	if (TEMP_FAILURE_RETRY(
		send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT)) != n)
		conn_close(c);
}

static struct single_kv *kv_find(struct single_conn *c, const char *key)
{
	for (size_t i = 0; i < c->nkv; i++)
		if (strcmp(c->kv[i].key, key) == 0)
			return &c->kv[i];
	return NULL;
}

static void handle_put(struct single_conn *c, const struct pmi1_msg *m)
{
	const char *key = pmi1_get(m, "key"), *value = pmi1_get(m, "value");
	struct single_kv *e;

	if (!key || !value) {
		conn_send(c, "cmd=put_result rc=-1 msg=missing_key_or_value");
		return;
	}
	e = kv_find(c, key);
	if (!e && c->nkv == SINGLE_KEYS) {
		conn_send(c, "cmd=put_result rc=-1 msg=too_many_keys");
		return;
	}
	if (!e) {
		e = &c->kv[c->nkv++];
		e->key = xstrdup(key);
	} else {
		free(e->value);
	}
	e->value = xstrdup(value);
	conn_send(c, "cmd=put_result rc=0");
}

static void handle_get(struct single_conn *c, const struct pmi1_msg *m)
{
	const char *key = pmi1_get(m, "key");
	struct single_kv *e = key ? kv_find(c, key) : NULL;

	if (e)
		conn_send(c, "cmd=get_result rc=0 value=%s", e->value);
	else if (key && strcmp(key, "PMI_process_mapping") == 0)
		conn_send(c, "cmd=get_result rc=0 value=(vector,(0,1,1))");
	else
		conn_send(c, "cmd=get_result rc=-1 msg=key_not_found");
}

static void handle_line(struct single_conn *c, const char *line, size_t n)
{
	struct pmi1_msg m;
	const char *cmd;

	if (pmi1_parse(line, n, &m) != PMI1_OK) {
		conn_close(c);
		return;
	}
	cmd = m.cmd;
	if (m.multi) {
		/* mcmd=spawn: a single process cannot spawn. */
		log_warn("pmi-1: a single process asked to spawn; start it "
			 "with mpictr -n N for that");
		conn_close(c);
	} else if (strcmp(cmd, "init") == 0) {
		const char *v = pmi1_get(&m, "pmi_version");

		conn_send(c,
			  "cmd=response_to_init rc=%d pmi_version=1 "
			  "pmi_subversion=1",
			  v && strcmp(v, "1") == 0 ? 0 : -1);
	} else if (strcmp(cmd, "get_maxes") == 0) {
		conn_send(c,
			  "cmd=maxes rc=0 kvsname_max=%d keylen_max=%d "
			  "vallen_max=%d",
			  PMI1_KVSNAME_MAX, PMI1_KEYLEN_MAX, PMI1_VALLEN_MAX);
	} else if (strcmp(cmd, "get_appnum") == 0) {
		conn_send(c, "cmd=appnum rc=0 appnum=0");
	} else if (strcmp(cmd, "get_my_kvsname") == 0) {
		conn_send(c, "cmd=my_kvsname rc=0 kvsname=mpictr.%d.single%u",
			  (int)getpid(), c->id);
	} else if (strcmp(cmd, "get_universe_size") == 0) {
		conn_send(c, "cmd=universe_size rc=0 size=1");
	} else if (strcmp(cmd, "put") == 0) {
		handle_put(c, &m);
	} else if (strcmp(cmd, "get") == 0) {
		handle_get(c, &m);
	} else if (strcmp(cmd, "barrier_in") == 0) {
		conn_send(c, "cmd=barrier_out rc=0");
	} else if (strcmp(cmd, "finalize") == 0) {
		conn_send(c, "cmd=finalize_ack rc=0");
	} else {
		/* abort (the program exits with its code), or a command a
		 * one-rank job has no use for. */
		conn_close(c);
	}
}

static bool take_line(void *ctx, const char *line, size_t n)
{
	struct single_conn *c = ctx;

	handle_line(c, line, n);
	return c->fd >= 0;
}

static void conn_read(struct single_conn *c)
{
	ssize_t n = TEMP_FAILURE_RETRY(
	    recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0));

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			conn_close(c);
		return;
	}
	c->inlen += (size_t)n;
	if (pmi1_take_lines(c->in, &c->inlen, sizeof(c->in), take_line, c) < 0)
		conn_close(c);
}

/* A new connection: served when it is the job user's and a slot is free,
 * else closed. */
static void accept_one(struct pmi_single *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	uid_t uid;

	if (fd < 0)
		return;
	if (pmix_peer_uid(fd, &uid) < 0 || uid != s->uid) {
		close(fd);
		return;
	}
	for (size_t i = 0; i < SINGLE_CONNS; i++) {
		if (s->conns[i].fd >= 0)
			continue;
		s->conns[i].fd = fd;
		s->conns[i].id = s->next_id++;
		return;
	}
	log_warn("pmi-1: more than %d MPI programs at once in a single "
		 "process; closing the newest",
		 SINGLE_CONNS);
	close(fd);
}

static void *single_main(void *arg)
{
	struct pmi_single *s = arg;
	struct pollfd pfd[SINGLE_CONNS + 2];

	for (;;) {
		pfd[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
		for (size_t i = 0; i < SINGLE_CONNS; i++)
			pfd[i + 2] = (struct pollfd){.fd = s->conns[i].fd,
						     .events = POLLIN};
		if (poll(pfd, SINGLE_CONNS + 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			accept_one(s);
		for (size_t i = 0; i < SINGLE_CONNS; i++)
			if (pfd[i + 2].revents && s->conns[i].fd >= 0)
				conn_read(&s->conns[i]);
	}
	return NULL;
}

int pmi_single_start(uid_t uid, struct pmi_single **out, mpictr_err **err)
{
	struct pmi_single *s = xcalloc(1, sizeof(*s));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int e;

	*out = NULL;
	s->uid = uid;
	s->wake[0] = s->wake[1] = -1;
	for (size_t i = 0; i < SINGLE_CONNS; i++)
		s->conns[i].fd = -1;
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 ||
	    bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->listen_fd, 16) < 0 ||
	    getsockname(s->listen_fd, (struct sockaddr *)&a, &al) < 0 ||
	    pipe2(s->wake, O_CLOEXEC) < 0) {
		err_set(err, errno,
			"start the PMI-1 service of a single process on "
			"127.0.0.1");
		goto fail;
	}
	s->port = ntohs(a.sin_port);
	e = pthread_create(&s->thread, NULL, single_main, s);
	if (e) {
		err_set(err, e, "start the PMI-1 service's thread");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s);
	return -1;
}

void pmi_single_env(const struct pmi_single *s, char ***env)
{
	char port[32];

	snprintf(port, sizeof(port), "127.0.0.1:%d", s->port);
	env_set(env, "PMI_PORT", port);
	env_set(env, "PMI_RANK", "0");
	env_set(env, "PMI_SIZE", "1");
}

void pmi_single_stop(struct pmi_single *s)
{
	if (!s)
		return;
	if (write(s->wake[1], "x", 1) != 1)
		pthread_cancel(s->thread);
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < SINGLE_CONNS; i++)
		conn_close(&s->conns[i]);
	close(s->listen_fd);
	close(s->wake[0]);
	close(s->wake[1]);
	free(s);
}
