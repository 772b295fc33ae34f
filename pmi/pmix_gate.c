/* pmix_gate.c - only the job's user reaches libpmix.
 *
 * libpmix 4.2 serves its clients over TCP on 127.0.0.1 (its only client
 * transport), and its "native" security over TCP believes the uid and gid
 * the client *sends*. Any local user can read the port in /proc/net/tcp, so
 * another user with a shim around geteuid() could read the job's data,
 * abort it, take a rank's place, or stall the server with an idle
 * connection (libpmix 4.2 reads the connect message with blocking reads).
 *
 * The gate puts a check in front of it without touching libpmix:
 *   1. after PMIx_server_init, the TCP listening socket libpmix created is
 *      found in this process (a listening TCP socket that was not there
 *      before init) and kept by the gate: its port stays the one in the
 *      PMIX_SERVER_URI* variables the ranks get;
 *   2. under libpmix's descriptor number, dup3() puts a Unix listening
 *      socket in the job's private directory (0700): from then on libpmix
 *      accepts only what the gate hands it;
 *   3. a thread accepts on the TCP socket and asks the kernel (sock_diag,
 *      else /proc/net/tcp) which uid owns the *client's* socket: the
 *      kernel's record, which no shim can change. A connection of another
 *      uid is closed at once and logged; one of the job's uid is relayed
 *      byte for byte to libpmix through the Unix socket.
 * Connections libpmix accepted in the instant between its listen() and
 * the swap are shut down right after it (no rank has started yet, so none
 * of them is the job's).
 *
 * Library code: errors are returned; the thread only logs refusals. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "pmi/pmix_gate.h"
#include "pmi/pmix_peer.h"
#include "common/util.h"

#define GATE_BUF 65536
#define GATE_MAX_LISTENERS 4
#define GATE_LOGGED_REFUSALS 5

/* One direction of a relayed connection. */
struct flow {
	int from, to;
	char *buf;
	size_t off, len;
	bool eof; /* `from` said EOF (or failed); `to` gets SHUT_WR once
		     the buffer is drained */
};

struct pair {
	struct flow up, down; /* client -> libpmix, libpmix -> client */
	int client, inner;
	bool dead;	   /* closed; freed after the epoll batch */
	struct pair *next; /* in g->pairs, then in g->dead */
};

/* epoll data: a tagged pointer would do, but an explicit record reads
 * better. */
enum gate_kind { K_STOP, K_LISTEN, K_CLIENT, K_INNER };
struct tag {
	enum gate_kind kind;
	struct pair *pair; /* K_CLIENT, K_INNER */
	int fd;		   /* K_LISTEN */
};

struct pmix_gate {
	int ep, stopfd;
	int pub[GATE_MAX_LISTENERS];
	struct tag pub_tag[GATE_MAX_LISTENERS];
	struct tag stop_tag;
	size_t npub;
	char *inner_path[GATE_MAX_LISTENERS];
	struct pair *pairs;
	struct pair *dead; /* closed in this epoll batch: events of the
			      batch may still name them */
	pthread_t thread;
	bool thread_started;
	uid_t uid;
	unsigned long refused;
	int wake_fd;   /* the connection that woke libpmix's listener thread */
	int wake_port; /* its local port: dropped when the gate accepts it */
};

/* ---- which listening TCP sockets does this process hold ---- */

static bool is_tcp_listener(int fd, int *family)
{
	int v = 0, proto = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || !v)
		return false;
	l = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) < 0 ||
	    proto != IPPROTO_TCP)
		return false;
	l = sizeof(*family);
	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, family, &l) == 0;
}

/* Calls fn(fd) for every socket descriptor of this process. */
static void each_socket_fd(void (*fn)(int fd, void *arg), void *arg)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (*end || fd < 0 || fd == dirfd(d))
			continue;
		if (fstat((int)fd, &st) == 0 && S_ISSOCK(st.st_mode))
			fn((int)fd, arg);
	}
	closedir(d);
}

struct listener_set {
	ino_t ino[64];
	size_t n;
	int fd[GATE_MAX_LISTENERS];
	size_t nfd;
	const struct listener_set *before;
	bool too_many;
};

static bool set_has(const struct listener_set *s, ino_t ino)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ino[i] == ino)
			return true;
	return false;
}

static void note_listener(int fd, void *arg)
{
	struct listener_set *s = arg;
	struct stat st;
	int family;

	if (!is_tcp_listener(fd, &family) || fstat(fd, &st) < 0)
		return;
	if (!s->before) {
		if (s->n < ARRAY_SIZE(s->ino))
			s->ino[s->n++] = st.st_ino;
		return;
	}
	if (set_has(s->before, st.st_ino))
		return;
	if (s->nfd == GATE_MAX_LISTENERS) {
		s->too_many = true;
		return;
	}
	s->fd[s->nfd++] = fd;
}

void pmix_gate_snapshot(struct pmix_gate_snapshot *snap)
{
	struct listener_set s = {0};

	each_socket_fd(note_listener, &s);
	snap->n = s.n < ARRAY_SIZE(snap->ino) ? s.n : ARRAY_SIZE(snap->ino);
	memcpy(snap->ino, s.ino, snap->n * sizeof(snap->ino[0]));
}

/* ---- whose is the client's socket ---- */

/* ---- the relay ---- */

/* Closes the pair; its memory stays until pairs_reap(), since later
 * events of the same epoll batch may still point into it. */
static void pair_free(struct pmix_gate *g, struct pair *p)
{
	for (struct pair **pp = &g->pairs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	epoll_ctl(g->ep, EPOLL_CTL_DEL, p->client, NULL);
	epoll_ctl(g->ep, EPOLL_CTL_DEL, p->inner, NULL);
	close(p->client);
	close(p->inner);
	p->dead = true;
	p->next = g->dead;
	g->dead = p;
}

static void pairs_reap(struct pmix_gate *g)
{
	while (g->dead) {
		struct pair *p = g->dead;

		g->dead = p->next;
		free(p->up.buf);
		free(p->down.buf);
		free(p);
	}
}

/* Moves what it can of one direction. Returns -1 when the pair is
 * finished (an error, or both directions at EOF and drained). */
static int flow_run(struct flow *f)
{
	for (;;) {
		if (f->len > f->off) {
			ssize_t n =
			    send(f->to, f->buf + f->off, f->len - f->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					return 0;
				return -1;
			}
			f->off += (size_t)n;
			continue;
		}
		f->off = f->len = 0;
		if (f->eof)
			return 0;
		ssize_t n = recv(f->from, f->buf, GATE_BUF, MSG_DONTWAIT);
		if (n > 0) {
			f->len = (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		f->eof = true;
		shutdown(f->to, SHUT_WR);
		return 0;
	}
}

/* Watch each side for what its flows need: readable while its inbound
 * buffer is empty and not at EOF, writable while the other side's data
 * waits for it. */
static int pair_arm(struct pmix_gate *g, struct pair *p, struct tag *tc,
		    struct tag *ti)
{
	struct epoll_event ec = {.data.ptr = tc}, ei = {.data.ptr = ti};

	if (!p->up.eof && p->up.len == 0)
		ec.events |= EPOLLIN;
	if (p->down.len > p->down.off)
		ec.events |= EPOLLOUT;
	if (!p->down.eof && p->down.len == 0)
		ei.events |= EPOLLIN;
	if (p->up.len > p->up.off)
		ei.events |= EPOLLOUT;
	if (epoll_ctl(g->ep, EPOLL_CTL_MOD, p->client, &ec) < 0 ||
	    epoll_ctl(g->ep, EPOLL_CTL_MOD, p->inner, &ei) < 0)
		return -1;
	return 0;
}

struct pair_tags {
	struct tag client, inner;
};

static void pair_service(struct pmix_gate *g, struct pair *p)
{
	struct pair_tags *t = (struct pair_tags *)(p + 1);

	if (flow_run(&p->up) < 0 || flow_run(&p->down) < 0 ||
	    (p->up.eof && p->down.eof && p->up.len == 0 && p->down.len == 0) ||
	    pair_arm(g, p, &t->client, &t->inner) < 0)
		pair_free(g, p);
}

static int connect_inner(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (TEMP_FAILURE_RETRY(connect(s, (struct sockaddr *)&a, sizeof(a))) <
		0 ||
	    fcntl(s, F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static void refuse(struct pmix_gate *g, int c, bool known, uid_t uid)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	int port = 0, e = errno;

	if (getpeername(c, (struct sockaddr *)&peer, &pl) == 0)
		port = pmix_sockaddr_port(&peer);
	close(c);
	if (++g->refused > GATE_LOGGED_REFUSALS)
		return;
	if (known)
		log_warn("pmix: refused a PMIx connection from uid %u (local "
			 "port %d): only the job's user (uid %u) may connect "
			 "to its PMIx server",
			 (unsigned)uid, port, (unsigned)g->uid);
	else
		log_warn("pmix: refused a PMIx connection from local port %d: "
			 "its owner could not be found: %s",
			 port, strerror(e));
	if (g->refused == GATE_LOGGED_REFUSALS)
		log_warn("pmix: further refused connections are counted, not "
			 "logged");
}

static bool is_wake(const struct pmix_gate *g, int c)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);

	return getpeername(c, (struct sockaddr *)&peer, &pl) == 0 &&
	       pmix_sockaddr_port(&peer) == g->wake_port;
}

static void admit(struct pmix_gate *g, size_t li)
{
	for (;;) {
		int c = accept4(g->pub[li], NULL, NULL,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		int in;
		uid_t uid = 0;
		struct pair *p;
		struct pair_tags *t;
		struct epoll_event ec = {.events = EPOLLIN},
				   ei = {.events = EPOLLIN};

		if (c < 0)
			return; /* EAGAIN, or a reset in the backlog */
		if (g->wake_fd >= 0 && is_wake(g, c)) {
			close(c);
			close(g->wake_fd);
			g->wake_fd = -1;
			continue;
		}
		if (pmix_peer_uid(c, &uid) < 0) {
			refuse(g, c, false, 0);
			continue;
		}
		if (uid != g->uid) {
			refuse(g, c, true, uid);
			continue;
		}
		in = connect_inner(g->inner_path[li]);
		if (in < 0) {
			log_warn("pmix: relay a client to the PMIx server "
				 "(%s): %s",
				 g->inner_path[li], strerror(errno));
			close(c);
			continue;
		}
		p = xcalloc(1, sizeof(*p) + sizeof(*t));
		t = (struct pair_tags *)(p + 1);
		p->client = c;
		p->inner = in;
		p->up = (struct flow){
		    .from = c, .to = in, .buf = xcalloc(1, GATE_BUF)};
		p->down = (struct flow){
		    .from = in, .to = c, .buf = xcalloc(1, GATE_BUF)};
		*t = (struct pair_tags){{K_CLIENT, p, -1}, {K_INNER, p, -1}};
		p->next = g->pairs;
		g->pairs = p;
		ec.data.ptr = &t->client;
		ei.data.ptr = &t->inner;
		if (epoll_ctl(g->ep, EPOLL_CTL_ADD, c, &ec) < 0 ||
		    epoll_ctl(g->ep, EPOLL_CTL_ADD, in, &ei) < 0) {
			log_warn("pmix: relay a client: epoll: %s",
				 strerror(errno));
			pair_free(g, p);
		}
	}
}

static void *gate_main(void *arg)
{
	struct pmix_gate *g = arg;
	struct epoll_event evs[32];

	for (;;) {
		int n = epoll_wait(g->ep, evs, ARRAY_SIZE(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("pmix: the connection gate stopped: epoll: %s",
				 strerror(errno));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			struct tag *t = evs[i].data.ptr;

			switch (t->kind) {
			case K_STOP:
				return NULL;
			case K_LISTEN:
				for (size_t li = 0; li < g->npub; li++)
					if (g->pub[li] == t->fd)
						admit(g, li);
				break;
			case K_CLIENT:
			case K_INNER:
				/* Closed earlier in this batch: skip. */
				if (!t->pair->dead)
					pair_service(g, t->pair);
				break;
			default:
				break;
			}
		}
		pairs_reap(g);
	}
}

/* ---- setup ---- */

static void shut_accepted(int fd, void *arg)
{
	const struct pmix_gate *g = arg;
	struct sockaddr_storage local, peer;
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	int family;

	if (is_tcp_listener(fd, &family) ||
	    getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
	    (local.ss_family != AF_INET && local.ss_family != AF_INET6) ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return;
	for (size_t i = 0; i < g->npub; i++) {
		struct sockaddr_storage pa;
		socklen_t al = sizeof(pa);

		if (getsockname(g->pub[i], (struct sockaddr *)&pa, &al) == 0 &&
		    pmix_sockaddr_port(&pa) == pmix_sockaddr_port(&local) &&
		    pa.ss_family == local.ss_family) {
			log_warn("pmix: a connection reached the PMIx server "
				 "before its gate was up (from port %d): "
				 "closed",
				 pmix_sockaddr_port(&peer));
			shutdown(fd, SHUT_RDWR);
		}
	}
}

/* libpmix 4.2 accepts in a thread of its own that waits in select() (2 s
 * timeout) on its listener's descriptor number. A select() that began
 * before the swap is registered for wake-ups on the old file only (the
 * gate's TCP socket, now): it would notice the Unix socket's connections
 * only at its timeout, delaying the first ranks by up to 2 s. So the gate
 * proves the way through before any rank starts: it queues a probe on the
 * Unix socket and half-closes it, then pokes the old file with a TCP
 * connection of its own (dropped when the gate accepts it). A select()
 * woken on either file re-polls the descriptor and finds the probe;
 * libpmix accepts it, reads EOF and closes it, and its next select() is on
 * the new file. The probe's EOF is the proof that libpmix accepts through
 * the gate at all; without it in 5 s the start fails with an error rather
 * than a job that hangs. */
static int prove_the_way(struct pmix_gate *g, mpictr_err **err)
{
	struct sockaddr_storage a, me;
	socklen_t al = sizeof(a), ml = sizeof(me);
	cleanup_close int probe = connect_inner(g->inner_path[0]);
	struct pollfd pfd;
	char c;
	int rc;

	if (probe < 0 || shutdown(probe, SHUT_WR) < 0)
		return err_set(err, errno, "pmix: gate: probe '%s'",
			       g->inner_path[0]);
	if (getsockname(g->pub[0], (struct sockaddr *)&a, &al) < 0)
		return err_set(err, errno, "pmix: gate: getsockname");
	g->wake_fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (g->wake_fd < 0 ||
	    connect(g->wake_fd, (struct sockaddr *)&a, al) < 0 ||
	    getsockname(g->wake_fd, (struct sockaddr *)&me, &ml) < 0)
		return err_set(err, errno, "pmix: gate: wake the server");
	g->wake_port = pmix_sockaddr_port(&me);
	pfd = (struct pollfd){.fd = probe, .events = POLLIN};
	rc = TEMP_FAILURE_RETRY(poll(&pfd, 1, 5000));
	if (rc < 0)
		return err_set(err, errno, "pmix: gate: poll");
	if (rc == 0 || recv(probe, &c, 1, MSG_DONTWAIT) != 0)
		return err_set(err, ETIMEDOUT,
			       "pmix: the PMIx server did not take a test "
			       "connection through mpictr's gate");
	return 0;
}

/* Put a Unix listener in `path` under libpmix's descriptor `fd`, keeping
 * the TCP listener for the gate. */
static int swap_listener(struct pmix_gate *g, int fd, const char *path,
			 mpictr_err **err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	cleanup_close int u = -1;
	int fl = fcntl(fd, F_GETFL);
	int pub;

	if (strlen(path) >= sizeof(a.sun_path))
		return err_set(err, ENAMETOOLONG, "pmix: gate socket path '%s'",
			       path);
	strcpy(a.sun_path, path);
	u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(u, 512) < 0)
		return err_set(err, errno, "pmix: gate socket '%s'", path);
	if (fl >= 0 && fcntl(u, F_SETFL, fl) < 0)
		return err_set(err, errno, "pmix: gate socket '%s' flags",
			       path);
	pub = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (pub < 0)
		return err_set(err, errno, "pmix: keep the server's listener");
	if (fcntl(pub, F_SETFL, O_NONBLOCK) < 0 || dup3(u, fd, O_CLOEXEC) < 0) {
		int e = errno;
		close(pub);
		return err_set(err, e,
			       "pmix: put the gate in front of the "
			       "server's listener");
	}
	g->pub[g->npub] = pub;
	g->inner_path[g->npub] = xstrdup(path);
	g->npub++;
	return 0;
}

int pmix_gate_start(const struct pmix_gate_snapshot *before, const char *dir,
		    struct pmix_gate **out, mpictr_err **err)
{
	struct listener_set b = {0}, now = {0};
	struct pmix_gate *g;
	struct epoll_event ev;

	*out = NULL;
	b.n = before->n;
	memcpy(b.ino, before->ino, b.n * sizeof(b.ino[0]));
	now.before = &b;
	each_socket_fd(note_listener, &now);
	if (now.nfd == 0)
		return err_set(err, 0,
			       "pmix: the server's TCP listener was not found "
			       "in this process (is this libpmix 4.2?)");
	if (now.too_many)
		return err_set(err, 0, "pmix: more than %d TCP listeners",
			       GATE_MAX_LISTENERS);
	g = xcalloc(1, sizeof(*g));
	g->uid = geteuid();
	g->wake_fd = -1;
	g->ep = epoll_create1(EPOLL_CLOEXEC);
	g->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->ep < 0 || g->stopfd < 0) {
		err_set(err, errno, "pmix: gate: epoll/eventfd");
		goto fail;
	}
	for (size_t i = 0; i < now.nfd; i++) {
		cleanup_free char *path =
		    xasprintf("%s/pmix-gate.%zu.sock", dir, i);
		if (swap_listener(g, now.fd[i], path, err) < 0)
			goto fail;
	}
	each_socket_fd(shut_accepted, g);
	if (prove_the_way(g, err) < 0)
		goto fail;
	g->stop_tag.kind = K_STOP;
	ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = &g->stop_tag};
	if (epoll_ctl(g->ep, EPOLL_CTL_ADD, g->stopfd, &ev) < 0) {
		err_set(err, errno, "pmix: gate: epoll");
		goto fail;
	}
	for (size_t i = 0; i < g->npub; i++) {
		g->pub_tag[i] = (struct tag){K_LISTEN, NULL, g->pub[i]};
		ev.data.ptr = &g->pub_tag[i];
		if (epoll_ctl(g->ep, EPOLL_CTL_ADD, g->pub[i], &ev) < 0) {
			err_set(err, errno, "pmix: gate: epoll");
			goto fail;
		}
	}
	errno = pthread_create(&g->thread, NULL, gate_main, g);
	if (errno) {
		err_set(err, errno, "pmix: gate: start its thread");
		goto fail;
	}
	g->thread_started = true;
	*out = g;
	return 0;
fail:
	pmix_gate_stop(g);
	return -1;
}

void pmix_gate_stop(struct pmix_gate *g)
{
	if (!g)
		return;
	if (g->thread_started) {
		uint64_t one = 1;
		if (write(g->stopfd, &one, sizeof(one)) < 0)
			log_debug("pmix: gate: stop: %s", strerror(errno));
		pthread_join(g->thread, NULL);
	}
	while (g->pairs)
		pair_free(g, g->pairs);
	pairs_reap(g);
	for (size_t i = 0; i < g->npub; i++) {
		close(g->pub[i]);
		if (unlink(g->inner_path[i]) < 0 && errno != ENOENT)
			log_debug("pmix: remove '%s': %s", g->inner_path[i],
				  strerror(errno));
		free(g->inner_path[i]);
	}
	if (g->refused > GATE_LOGGED_REFUSALS)
		log_warn("pmix: %lu PMIx connections of other users were "
			 "refused in all",
			 g->refused);
	if (g->wake_fd >= 0)
		close(g->wake_fd);
	if (g->ep >= 0)
		close(g->ep);
	if (g->stopfd >= 0)
		close(g->stopfd);
	free(g);
}
