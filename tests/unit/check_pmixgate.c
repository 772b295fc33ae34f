/* check_pmixgate.c - the gate in front of libpmix's TCP listener
 * (pmi/pmix_gate.c), without libpmix: a plain listening socket stands in
 * for libpmix's. The kernel names the owner of a loopback client; the
 * listener under the same descriptor number becomes a Unix socket in the
 * given directory; bytes of the user's own client arrive through it and
 * the answer goes back. (Another user's client is refused: that needs two
 * users, tests/integration-root/30-pmix-users.sh.) */
#include <arpa/inet.h>
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pmi/pmix_gate.h"
#include "pmi/pmix_guard.h"
#include "pmi/pmix_peer.h"

static int tcp_listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t l = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(s, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s, 8), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &l), 0);
	*port = ntohs(a.sin_port);
	return s;
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	ck_assert_int_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

START_TEST(test_peer_uid_is_the_clients_owner)
{
	uint16_t port;
	int l = tcp_listener(&port), c = tcp_connect(port);
	int a = accept(l, NULL, NULL);
	uid_t uid = (uid_t)-1;

	ck_assert_int_ge(a, 0);
	ck_assert_int_eq(pmix_peer_uid(a, &uid), 0);
	ck_assert_uint_eq(uid, geteuid());
	close(a);
	close(c);
	close(l);
}
END_TEST

START_TEST(test_peer_uid_of_a_non_tcp_socket_fails)
{
	int sv[2];
	uid_t uid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pmix_peer_uid(sv[0], &uid), -1);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A stand-in for libpmix 4.2's listener thread: select() with a 2 s
 * timeout on the listener's descriptor number, accept, answer "pong" to
 * "ping", close on EOF. It is already waiting when the gate swaps the
 * descriptor, as libpmix's thread usually is. */
struct fake_pmix {
	int l;
	volatile int stop;
	int served, probes;
};

static void *fake_pmix_main(void *arg)
{
	struct fake_pmix *f = arg;

	while (!f->stop) {
		fd_set rd;
		struct timeval tv = {2, 0};
		int c;
		char buf[16];
		ssize_t n;

		FD_ZERO(&rd);
		FD_SET(f->l, &rd);
		if (select(f->l + 1, &rd, NULL, NULL, &tv) <= 0)
			continue;
		c = accept(f->l, NULL, NULL);
		if (c < 0)
			continue;
		n = read(c, buf, sizeof(buf));
		if (n == 0) {
			f->probes++;
		} else if (n == 4 && memcmp(buf, "ping", 4) == 0) {
			if (write(c, "pong", 4) == 4)
				f->served++;
		}
		close(c);
	}
	return NULL;
}

START_TEST(test_gate_relays_the_users_client)
{
	char dir[] = "/tmp/check-pmixgate.XXXXXX";
	struct pmix_gate_snapshot before;
	struct pmix_gate *g = NULL;
	mpictr_err *err = NULL;
	struct fake_pmix f = {0};
	pthread_t t;
	uint16_t port;
	int c, dom = 0;
	socklen_t dl = sizeof(dom);
	char buf[16] = {0};
	struct timespec t0, t1;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	pmix_gate_snapshot(&before);
	f.l = tcp_listener(&port); /* what libpmix creates in its init */
	ck_assert_int_eq(pthread_create(&t, NULL, fake_pmix_main, &f), 0);
	usleep(100000); /* its select() has begun on the TCP socket */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pmix_gate_start(&before, dir, &g, &err), 0);
	ck_assert_ptr_nonnull(g);
	/* The same descriptor is now a Unix socket of the directory. */
	ck_assert_int_eq(getsockopt(f.l, SOL_SOCKET, SO_DOMAIN, &dom, &dl), 0);
	ck_assert_int_eq(dom, AF_UNIX);
	/* The port in the URI still answers, through the gate, at once:
	 * the waiting select() was woken by the gate's probe. */
	c = tcp_connect(port);
	ck_assert_int_eq(write(c, "ping", 4), 4);
	ck_assert_int_eq(read(c, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "pong");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt((t1.tv_sec - t0.tv_sec) * 1000 +
			     (t1.tv_nsec - t0.tv_nsec) / 1000000,
			 1500);
	ck_assert_int_eq(f.probes, 1);
	ck_assert_int_eq(f.served, 1);
	/* EOF travels to the client when the server closes. */
	ck_assert_int_eq(read(c, buf, sizeof(buf)), 0);
	close(c);
	pmix_gate_stop(g);
	f.stop = 1;
	pthread_join(t, NULL);
	close(f.l);
	ck_assert_int_eq(rmdir(dir), 0); /* the gate removed its socket */
}
END_TEST

START_TEST(test_gate_needs_a_new_listener)
{
	char dir[] = "/tmp/check-pmixgate.XXXXXX";
	struct pmix_gate_snapshot before;
	struct pmix_gate *g = NULL;
	mpictr_err *err = NULL;
	uint16_t port;
	int l = tcp_listener(&port);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	pmix_gate_snapshot(&before); /* the listener predates it */
	ck_assert_int_eq(pmix_gate_start(&before, dir, &g, &err), -1);
	ck_assert_ptr_null(g);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "not found"));
	mpictr_err_free(err);
	close(l);
	rmdir(dir);
}
END_TEST

/* A real connect message of libpmix 4.2.2's client (captured): rank 1 of
 * mpictr.123.0, native credential uid 0 gid 0. */
static const unsigned char hello[] =
    "\xff\xff\xff\xff\xff\xff\xff\xff\x39\0\0\0\0\0\0\0"
    "native\0\0\0\0\x08\0\0\0\0\0\0\0\0\0mpictr.123.0\0\0\0\0\x01"
    "4.2.2rc2\0v41\0\x01hash\0";
#define HELLO_LEN (sizeof(hello) - 1 + 1) /* and the trailing NUL */

static enum pmix_hello_rc check(const unsigned char *b, size_t n, uid_t u,
				size_t *need)
{
	const char *why;

	return pmix_hello_check(b, n, u, 0, need, &why);
}

START_TEST(test_hello_accepts_a_real_client)
{
	size_t need;

	ck_assert_uint_eq(HELLO_LEN, 16 + 0x39);
	ck_assert_int_eq(check(hello, HELLO_LEN, 0, &need), PMIX_HELLO_OK);
}
END_TEST

START_TEST(test_hello_waits_for_the_whole_message)
{
	size_t need;

	ck_assert_int_eq(check(hello, 10, 0, &need), PMIX_HELLO_SHORT);
	ck_assert_uint_eq(need, 16);
	ck_assert_int_eq(check(hello, 40, 0, &need), PMIX_HELLO_SHORT);
	ck_assert_uint_eq(need, HELLO_LEN);
}
END_TEST

/* Each a copy of hello with one field broken: libpmix 4.2 would read past
 * the message, or reject it (and then wait forever at teardown). */
START_TEST(test_hello_refuses_what_libpmix_mishandles)
{
	unsigned char m[sizeof(hello)];
	size_t need;

	memcpy(m, hello, sizeof(m));
	m[26] = 0x7f; /* credential length 0x7f000008: past the end */
	ck_assert_int_eq(check(m, HELLO_LEN, 0, &need), PMIX_HELLO_BAD);
	memcpy(m, hello, sizeof(m));
	ck_assert_int_eq(check(m, HELLO_LEN, 1000, &need), PMIX_HELLO_BAD);
	memcpy(m, hello, sizeof(m));
	m[35] = 3; /* a tool, not a client */
	ck_assert_int_eq(check(m, HELLO_LEN, 0, &need), PMIX_HELLO_BAD);
	memcpy(m, hello, sizeof(m));
	memcpy(m + 53, "4\0", 2); /* version "4": libpmix skips past it */
	ck_assert_int_eq(check(m, HELLO_LEN, 0, &need), PMIX_HELLO_BAD);
	memcpy(m, hello, sizeof(m));
	memset(m + 16, 'x', HELLO_LEN - 16); /* no terminated string */
	ck_assert_int_eq(check(m, HELLO_LEN, 0, &need), PMIX_HELLO_BAD);
	memcpy(m, hello, sizeof(m));
	m[9] = 0x10; /* 4 KiB + 57 of fields */
	ck_assert_int_eq(check(m, HELLO_LEN, 0, &need), PMIX_HELLO_BAD);
}
END_TEST

/* Armed, the guard hands over only a complete, sane connect message of
 * this uid. */
START_TEST(test_guard_filters)
{
	uint16_t port;
	int l = tcp_listener(&port), c, a;

	pmix_guard_arm(0, 0);
	c = tcp_connect(port);
	ck_assert_int_eq(send(c, hello, HELLO_LEN, 0), (ssize_t)HELLO_LEN);
	a = pmix_guard_accept(l, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	c = tcp_connect(port); /* idle: refused after PMIX_GUARD_HELLO_MS */
	errno = 0;
	ck_assert_int_eq(pmix_guard_accept(l, NULL, NULL), -1);
	ck_assert_int_eq(errno, ECONNABORTED);
	close(c);
	ck_assert_uint_eq(pmix_guard_seen(), 2);
	pmix_guard_disarm();
	close(l);
}
END_TEST

/* The guard reaches libpmix through libpmix's own accept() slot, and
 * nothing else: the program's accept() stays libc's. */
START_TEST(test_guard_installs_in_libpmix_only)
{
	void *libc_accept = dlsym(RTLD_DEFAULT, "accept");
	void *h;

	ck_assert_ptr_nonnull(libc_accept);
	ck_assert_ptr_ne(libc_accept, (void *)pmix_guard_accept);
	ck_assert(!pmix_guard_in_effect()); /* no libpmix loaded yet */
	ck_assert_int_eq(pmix_guard_install(), -1);
	h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h != NULL, "dlopen libpmix.so.2: %s", dlerror());
	ck_assert(!pmix_guard_in_effect());
	ck_assert_int_eq(pmix_guard_install(), 0);
	ck_assert(pmix_guard_in_effect());
	ck_assert_int_eq(pmix_guard_install(), 0); /* again: no change */
	ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "accept"), libc_accept);
}
END_TEST

Suite *suite_pmixgate(void);
Suite *suite_pmixgate(void)
{
	Suite *s = suite_create("pmixgate");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_peer_uid_is_the_clients_owner);
	tcase_add_test(tc, test_peer_uid_of_a_non_tcp_socket_fails);
	tcase_add_test(tc, test_gate_relays_the_users_client);
	tcase_add_test(tc, test_gate_needs_a_new_listener);
	tcase_add_test(tc, test_hello_accepts_a_real_client);
	tcase_add_test(tc, test_hello_waits_for_the_whole_message);
	tcase_add_test(tc, test_hello_refuses_what_libpmix_mishandles);
	tcase_add_test(tc, test_guard_filters);
	tcase_add_test(tc, test_guard_installs_in_libpmix_only);
	suite_add_tcase(s, tc);
	return s;
}
