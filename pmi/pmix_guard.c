/* pmix_guard.c - mpictr's accept(): no connection reaches libpmix unless
 * it is the job user's and starts with a connect message libpmix 4.2 can
 * read safely.
 *
 * libpmix 4.2 creates its TCP listener (127.0.0.1, a port any local user
 * reads in /proc/net/tcp) and starts accepting on its own thread inside
 * PMIx_server_init, before the gate (pmix_gate.c) can take the port over;
 * its connection handler then reads the connect message with blocking
 * reads on its progress thread and trusts the lengths in it. Another user
 * who connected in that window crashed the launcher (a credential length
 * past the message: SIGSEGV) or held PMIx_server_init, and with it the
 * job, for as long as the connection stayed open.
 *
 * libpmix's listener thread calls accept() through the PLT; this file
 * defines accept() for the executable (exported: the CLI links with
 * -Wl,--export-dynamic-symbol=accept) and for libmpictr.so (in its version
 * script), so libpmix, loaded later by dlopen, binds to it instead of
 * libc's. While the PMIx server runs (pmix_guard_arm), a connection is
 * handed over only after the kernel said who owns the client's socket
 * (pmix_peer_uid) and the client's first bytes, peeked and not consumed,
 * form a complete message that pmix_hello_check() passes, within
 * PMIX_GUARD_HELLO_MS; otherwise it is closed and libpmix sees
 * ECONNABORTED, on which its listener goes back to select(). So no byte of
 * another user is ever read by libpmix, from the listener's first moment,
 * and libpmix's blocking reads of the connect message never block.
 *
 * Whether the interposition took effect is checked before the server
 * starts (pmix_guard_in_effect): without it the start fails rather than
 * serve PMIx unguarded. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pmi/pmix_guard.h"
#include "pmi/pmix_peer.h"
#include "common/proc.h"
#include "common/util.h"

#define GUARD_LOGGED 5

static struct {
	pthread_mutex_t lock;
	bool armed;
	uid_t owner; /* the kernel uid of the job's processes: ours */
	uid_t uid;   /* the ids they were registered with */
	gid_t gid;
	unsigned long refused;
	unsigned long seen; /* accept() calls while armed */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Log (the first GUARD_LOGGED, then only count) why c was closed; uid:
 * its owner, -1 when that is not the reason. */
static void refused(int c, long uid, const char *why)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	int port = 0;
	unsigned long n;

	if (getpeername(c, (struct sockaddr *)&peer, &pl) == 0 &&
	    (peer.ss_family == AF_INET || peer.ss_family == AF_INET6))
		port = pmix_sockaddr_port(&peer);
	pthread_mutex_lock(&G.lock);
	n = ++G.refused;
	pthread_mutex_unlock(&G.lock);
	if (n > GUARD_LOGGED)
		return;
	if (uid >= 0)
		log_warn("pmix: refused a PMIx connection from uid %ld (local "
			 "port %d): %s",
			 uid, port, why);
	else
		log_warn("pmix: refused a PMIx connection from local port %d: "
			 "%s",
			 port, why);
	if (n == GUARD_LOGGED)
		log_warn("pmix: further refused connections are counted, not "
			 "logged");
}

/* Wait (at most PMIX_GUARD_HELLO_MS) until the client's connect message
 * is all there, and check it, without consuming a byte. */
static bool hello_ok(int c, uid_t uid, gid_t gid)
{
	unsigned char buf[PMIX_HELLO_MAX];
	long deadline = mono_ms() + PMIX_GUARD_HELLO_MS;

	for (;;) {
		ssize_t n = recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		long left = deadline - mono_ms();
		const char *why = NULL;
		size_t need;

		if (n == 0) {
			log_debug("pmix: a connection closed before its "
				  "connect message: dropped");
			return false;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (n > 0) {
			enum pmix_hello_rc rc = pmix_hello_check(
			    buf, (size_t)n, uid, gid, &need, &why);

			if (rc == PMIX_HELLO_OK)
				return true;
			if (rc == PMIX_HELLO_BAD) {
				refused(c, -1, why);
				return false;
			}
		}
		if (left <= 0) {
			refused(c, -1,
				"no complete connect message within 1 s");
			return false;
		}
		if (n > 0) {
			/* Part of it: poll() would return at once. */
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		} else {
			struct pollfd p = {.fd = c, .events = POLLIN};
			poll(&p, 1, (int)left);
		}
	}
}

static bool admit(int c)
{
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	uid_t owner, uid, peer = 0;
	gid_t gid;

	pthread_mutex_lock(&G.lock);
	owner = G.owner;
	uid = G.uid;
	gid = G.gid;
	pthread_mutex_unlock(&G.lock);
	if (getsockname(c, (struct sockaddr *)&local, &ll) < 0)
		return false;
	/* TCP: the kernel says whose it is. A Unix socket is the gate's, in
	 * the job's 0700 directory. */
	if (local.ss_family == AF_INET || local.ss_family == AF_INET6) {
		if (pmix_peer_uid(c, &peer) < 0) {
			refused(c, -1, "its owner could not be found");
			return false;
		}
		if (peer != owner) {
			char why[128];

			snprintf(why, sizeof(why),
				 "only the job's user (uid %u) may connect to "
				 "its PMIx server (closed at libpmix's accept)",
				 (unsigned)owner);
			refused(c, (long)peer, why);
			return false;
		}
	}
	return hello_ok(c, uid, gid);
}

static int guarded_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	bool armed;
	int c = accept4(fd, addr, len, 0);

	if (c < 0)
		return c;
	pthread_mutex_lock(&G.lock);
	armed = G.armed;
	G.seen += armed;
	pthread_mutex_unlock(&G.lock);
	if (!armed || admit(c))
		return c;
	close(c);
	errno = ECONNABORTED;
	return -1;
}

/* The symbol libpmix binds to (see the top of this file). */
extern int accept(int fd, struct sockaddr *addr, socklen_t *len)
    __attribute__((alias("guarded_accept"), visibility("default")));

bool pmix_guard_in_effect(void)
{
	return dlsym(RTLD_DEFAULT, "accept") == (void *)guarded_accept;
}

void pmix_guard_arm(uid_t uid, gid_t gid)
{
	pthread_mutex_lock(&G.lock);
	G.owner = geteuid();
	G.uid = uid;
	G.gid = gid;
	G.refused = G.seen = 0;
	G.armed = true;
	pthread_mutex_unlock(&G.lock);
}

void pmix_guard_disarm(void)
{
	unsigned long n;

	pthread_mutex_lock(&G.lock);
	G.armed = false;
	n = G.refused;
	pthread_mutex_unlock(&G.lock);
	if (n > GUARD_LOGGED)
		log_warn("pmix: %lu PMIx connections were refused before the "
			 "server saw them",
			 n);
}

unsigned long pmix_guard_seen(void)
{
	unsigned long n;

	pthread_mutex_lock(&G.lock);
	n = G.seen;
	pthread_mutex_unlock(&G.lock);
	return n;
}
