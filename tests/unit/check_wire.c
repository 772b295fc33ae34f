/* check_wire.c - the keeper's wire protocol (modes/wire.c): requests and
 * replies round trip over a socketpair with their descriptors; short,
 * oversized, wrong-magic messages and descriptors that are missing,
 * unexpected or too many are refused with an error that says so, and
 * every descriptor received then is closed; join mode's JOIN (the claim,
 * the answer, keeper_join). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "host/launcher.h"
#include "modes/keeper.h"
#include "modes/wire.h"

static void pair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
}

/* Open descriptors of this process. */
static int nopen(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Raw bytes with nfds descriptors, as a peer that breaks the rules. */
static void raw_send(int sock, const void *buf, size_t len, const int *fds,
		     int nfds)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(sock, &mh, 0), (ssize_t)len);
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

/* The reply error of what the peer sent (then closed): its message. */
static char *reply_error(int sv[2], int max_fds)
{
	struct wire_reply r;
	mpictr_err *err = NULL;
	char *msg;

	shutdown(sv[1], SHUT_WR);
	ck_assert_int_eq(wire_recv_reply(sv[0], max_fds, &r, &err), -1);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_null(r.data);
	ck_assert_int_eq(r.nfds, 0);
	msg = strdup(mpictr_err_message(err));
	mpictr_err_free(err);
	return msg;
}

#define ck_assert_has(msg, part)                                               \
	ck_assert_msg(strstr(msg, part), "'%s' lacks '%s'", msg, part)

START_TEST(test_request_round_trip)
{
	int sv[2];
	struct wire_claim c = {.local_rank = 3, .local_size = 8}, got;
	struct wire_req q;
	mpictr_err *err = NULL;

	pair(sv);
	ck_assert_int_eq(wire_send_req(sv[1], WIRE_JOIN, &c, sizeof(c), &err),
			 0);
	ck_assert_int_eq(wire_recv_req(sv[0], &q, &err), 0);
	ck_assert_uint_eq(q.op, WIRE_JOIN);
	ck_assert_uint_eq(q.len, sizeof(c));
	ck_assert_int_eq(wire_claim_parse(q.data, q.len, &got, &err), 0);
	ck_assert_uint_eq(got.local_rank, 3);
	ck_assert_uint_eq(got.local_size, 8);
	wire_req_free(&q);
	/* no payload (INFO), then the peer closes: 1, nothing received */
	ck_assert_int_eq(wire_send_req(sv[1], WIRE_INFO, NULL, 0, &err), 0);
	ck_assert_int_eq(wire_recv_req(sv[0], &q, &err), 0);
	ck_assert_uint_eq(q.op, WIRE_INFO);
	ck_assert_uint_eq(q.len, 0);
	ck_assert_str_eq(q.data, "");
	wire_req_free(&q);
	close(sv[1]);
	ck_assert_int_eq(wire_recv_req(sv[0], &q, &err), 1);
	ck_assert_ptr_null(err);
	close(sv[0]);
	/* the claim is exactly two numbers */
	ck_assert_int_lt(wire_claim_parse(&c, 4, &got, &err), 0);
	ck_assert_has(mpictr_err_message(err), "a claim of 4 bytes");
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_reply_round_trip_fds)
{
	int sv[2], p[2], fds[3], before;
	struct wire_reply r;
	mpictr_err *err = NULL;
	char big[WIRE_REPLY_MAX];

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fds[0] = p[0];
	fds[1] = p[1];
	fds[2] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fds[2], 0);
	before = nopen();
	ck_assert_int_eq(wire_send_reply(sv[1], 0, "a=1\0b=2", 8, fds, 3, &err),
			 0);
	ck_assert_int_eq(wire_recv_reply(sv[0], 3, &r, &err), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(r.len, 8);
	ck_assert_int_eq(memcmp(r.data, "a=1\0b=2", 8), 0);
	ck_assert_int_eq(r.nfds, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert(same_file(r.fds[i], fds[i]));
		ck_assert_int_eq(fcntl(r.fds[i], F_GETFD), FD_CLOEXEC);
	}
	ck_assert_int_eq(nopen(), before + 3);
	wire_reply_free(&r);
	ck_assert_int_eq(nopen(), before);
	/* the largest payload, in full; a status without payload */
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(
	    wire_send_reply(sv[1], 0, big, sizeof(big), NULL, 0, &err), 0);
	ck_assert_int_eq(wire_send_reply(sv[1], EPERM, NULL, 0, NULL, 0, &err),
			 0);
	ck_assert_int_eq(wire_recv_reply(sv[0], 0, &r, &err), 0);
	ck_assert_uint_eq(r.len, sizeof(big));
	ck_assert_int_eq(memcmp(r.data, big, sizeof(big)), 0);
	wire_reply_free(&r);
	ck_assert_int_eq(wire_recv_reply(sv[0], 0, &r, &err), 0);
	ck_assert_int_eq(r.status, EPERM);
	ck_assert_uint_eq(r.len, 0);
	wire_reply_free(&r);
	/* the sender refuses what the receiver would */
	ck_assert_int_lt(
	    wire_send_reply(sv[1], 0, big, sizeof(big) + 1, NULL, 0, &err), 0);
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_lt(
	    wire_send_req(sv[1], WIRE_JOIN, big, WIRE_REQ_MAX + 1, &err), 0);
	mpictr_err_free(err);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_short)
{
	int sv[2];
	struct wire_reply_hdr h = {.magic = WIRE_MAGIC, .len = 10};
	char *msg;

	pair(sv);
	raw_send(sv[1], &h, 5, NULL, 0);
	msg = reply_error(sv, 0);
	ck_assert_has(msg, "closed the connection after 5 of 16 bytes of the "
			   "reply header");
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* a payload cut short */
	pair(sv);
	raw_send(sv[1], &h, sizeof(h), NULL, 0);
	raw_send(sv[1], "abc", 3, NULL, 0);
	msg = reply_error(sv, 0);
	ck_assert_has(msg, "after 3 of 10 bytes of the reply payload");
	free(msg);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_wrong_magic_and_bounds)
{
	int sv[2];
	struct wire_reply_hdr h = {.magic = 0x6d706931u}; /* the old "mpi1" */
	struct wire_req_hdr q = {.magic = WIRE_MAGIC, .op = WIRE_JOIN};
	struct wire_req rq;
	mpictr_err *err = NULL;
	char *msg;

	pair(sv);
	raw_send(sv[1], &h, sizeof(h), NULL, 0);
	msg = reply_error(sv, 0);
	ck_assert_has(msg, "wrong magic 0x6d706931");
	free(msg);
	close(sv[0]);
	close(sv[1]);
	h.magic = WIRE_MAGIC;
	h.len = WIRE_REPLY_MAX + 1;
	pair(sv);
	raw_send(sv[1], &h, sizeof(h), NULL, 0);
	msg = reply_error(sv, 0);
	ck_assert_has(msg, "a reply payload of 65537 bytes (at most 65536)");
	free(msg);
	close(sv[0]);
	close(sv[1]);
	h.len = 0;
	h.nfds = 4;
	pair(sv);
	raw_send(sv[1], &h, sizeof(h), NULL, 0);
	msg = reply_error(sv, 3);
	ck_assert_has(msg, "a reply with 4 descriptors (at most 3)");
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* requests: oversized, a reserved field set */
	q.len = WIRE_REQ_MAX + 1;
	pair(sv);
	raw_send(sv[1], &q, sizeof(q), NULL, 0);
	shutdown(sv[1], SHUT_WR);
	ck_assert_int_eq(wire_recv_req(sv[0], &rq, &err), -1);
	ck_assert_has(mpictr_err_message(err),
		      "a request payload of 257 bytes");
	mpictr_err_free(err);
	err = NULL;
	close(sv[0]);
	close(sv[1]);
	q.len = 0;
	q.zero = 7;
	ck_assert_int_lt(wire_req_parse(&q, sizeof(q), &q, &err), 0);
	ck_assert_has(mpictr_err_message(err), "reserved field of 7");
	mpictr_err_free(err);
}
END_TEST

/* Descriptors that do not match the header, or are more than the
 * receiver takes, are all closed. */
START_TEST(test_fds_closed)
{
	struct wire_reply_hdr h = {.magic = WIRE_MAGIC, .nfds = 1};
	struct wire_req_hdr q = {.magic = WIRE_MAGIC, .op = WIRE_JOIN};
	struct wire_req rq;
	mpictr_err *err = NULL;
	int sv[2], fds[3], before;
	char *msg;

	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* 3 sent, 1 announced */
	pair(sv);
	before = nopen();
	raw_send(sv[1], &h, sizeof(h), fds, 3);
	msg = reply_error(sv, 3);
	ck_assert_has(msg, "a reply with 3 descriptors, 1 announced: closed");
	ck_assert_int_eq(nopen(), before);
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* 2 announced, none sent */
	h.nfds = 2;
	pair(sv);
	raw_send(sv[1], &h, sizeof(h), NULL, 0);
	msg = reply_error(sv, 2);
	ck_assert_has(msg, "a reply with 0 descriptors, 2 announced");
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* 3 announced and sent, the receiver takes 2 */
	h.nfds = 3;
	pair(sv);
	before = nopen();
	raw_send(sv[1], &h, sizeof(h), fds, 3);
	msg = reply_error(sv, 2);
	ck_assert_has(msg, "a reply with 3 descriptors (at most 2 expected)");
	ck_assert_int_eq(nopen(), before);
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* with a bad header too, and with the payload's bytes */
	h.magic = 1;
	pair(sv);
	before = nopen();
	raw_send(sv[1], &h, sizeof(h), fds, 2);
	msg = reply_error(sv, 3);
	ck_assert_has(msg, "wrong magic 0x00000001");
	ck_assert_int_eq(nopen(), before);
	free(msg);
	close(sv[0]);
	close(sv[1]);
	h = (struct wire_reply_hdr){.magic = WIRE_MAGIC, .len = 2, .nfds = 1};
	pair(sv);
	before = nopen();
	raw_send(sv[1], &h, sizeof(h), fds, 1);
	raw_send(sv[1], "ab", 2, fds + 1, 2);
	msg = reply_error(sv, 3);
	ck_assert_has(msg, "a reply with 3 descriptors, 1 announced");
	ck_assert_int_eq(nopen(), before);
	free(msg);
	close(sv[0]);
	close(sv[1]);
	/* a request takes none */
	pair(sv);
	before = nopen();
	raw_send(sv[1], &q, sizeof(q), fds, 1);
	ck_assert_int_eq(wire_recv_req(sv[0], &rq, &err), -1);
	ck_assert_has(mpictr_err_message(err), "a request with descriptors");
	ck_assert_int_eq(nopen(), before);
	mpictr_err_free(err);
	close(sv[0]);
	close(sv[1]);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}
END_TEST

START_TEST(test_timeout)
{
	int sv[2];
	struct timeval tv = {.tv_usec = 100 * 1000};
	struct wire_req q;
	mpictr_err *err = NULL;

	pair(sv);
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(wire_recv_req(sv[0], &q, &err), -1);
	ck_assert_int_eq(err->errnum, ETIMEDOUT);
	ck_assert_has(mpictr_err_message(err),
		      "no request header within the timeout");
	mpictr_err_free(err);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_answer)
{
	struct wire_answer a = {.verdict = KEEPER_SIZE_DIFF,
				.a = 4,
				.b = 2,
				.digest = 0x1122334455667788ULL,
				.ucx_known = true,
				.ucx = (char *)"mlx5_0:1"},
			   g;
	mpictr_err *err = NULL;
	size_t len;
	char *buf = wire_answer_put(&a, &len);

	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert_int_eq(g.verdict, KEEPER_SIZE_DIFF);
	ck_assert_uint_eq(g.a, 4);
	ck_assert_uint_eq(g.b, 2);
	ck_assert_uint_eq(g.digest, 0x1122334455667788ULL);
	ck_assert(g.ucx_known);
	ck_assert_str_eq(g.ucx, "mlx5_0:1");
	free(g.ucx);
	/* cut short, one byte more, a NUL in the UCX answer */
	ck_assert_int_lt(wire_answer_parse(buf, len - 1, &g, &err), 0);
	ck_assert_has(mpictr_err_message(err), "expected");
	mpictr_err_free(err);
	err = NULL;
	buf[len - 2] = '\0';
	ck_assert_int_lt(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert_has(mpictr_err_message(err), "NUL");
	mpictr_err_free(err);
	err = NULL;
	free(buf);
	/* no devices; not asked; too long to send: ask yourself */
	a.ucx = NULL;
	buf = wire_answer_put(&a, &len);
	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(g.ucx_known);
	ck_assert_ptr_null(g.ucx);
	free(buf);
	a.ucx_known = false;
	buf = wire_answer_put(&a, &len);
	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(!g.ucx_known);
	free(buf);
	a.ucx_known = true;
	a.ucx = malloc(WIRE_UCX_MAX + 2);
	memset(a.ucx, 'u', WIRE_UCX_MAX + 1);
	a.ucx[WIRE_UCX_MAX + 1] = '\0';
	buf = wire_answer_put(&a, &len);
	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(!g.ucx_known);
	ck_assert_ptr_null(g.ucx);
	free(buf);
	free(a.ucx);
	ck_assert_int_lt(wire_answer_parse("x", 1, &g, &err), 0);
	ck_assert_has(mpictr_err_message(err), "an answer of 1 bytes");
	mpictr_err_free(err);
}
END_TEST

/* The image's facts travel with the answer (joining tasks plan from them
 * and never open the image); what does not fit is not sent, and lengths
 * that do not add up are refused. */
START_TEST(test_answer_image)
{
	static const char cfg[] = "{\"config\":{\"Env\":[\"A=1\"]}}";
	struct wire_answer a = {.verdict = KEEPER_OK,
				.digest = 7,
				.image_known = true,
				.image = {.kind = IMAGE_SIF,
					  .path = (char *)"/data/app.sif",
					  .offset = 4096,
					  .size = 1 << 20,
					  .compression = 6,
					  .arch = (char *)"amd64",
					  .oci_config_offset = 512,
					  .oci_config_size = sizeof(cfg) - 1,
					  .oci_config = (char *)cfg}},
			   g;
	struct answer_wire_head {
		int32_t verdict;
		uint32_t a, b;
		int32_t ucx_len;
		uint64_t digest;
		uint32_t image_len, zero;
	} h;
	mpictr_err *err = NULL;
	size_t len;
	char *buf = wire_answer_put(&a, &len), *big;

	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(g.image_known);
	ck_assert_int_eq(g.image.kind, IMAGE_SIF);
	ck_assert_str_eq(g.image.path, "/data/app.sif");
	ck_assert_str_eq(g.image.arch, "amd64");
	ck_assert_uint_eq(g.image.offset, 4096);
	ck_assert_uint_eq(g.image.size, 1 << 20);
	ck_assert_int_eq(g.image.compression, 6);
	ck_assert_uint_eq(g.image.oci_config_offset, 512);
	ck_assert_uint_eq(g.image.oci_config_size, sizeof(cfg) - 1);
	ck_assert_str_eq(g.image.oci_config, cfg);
	wire_answer_free(&g);
	ck_assert_ptr_null(g.image.path);
	/* one byte short of the image section, one too many */
	ck_assert_int_lt(wire_answer_parse(buf, len - 1, &g, &err), 0);
	mpictr_err_free(err);
	err = NULL;
	/* a path that is not absolute */
	buf[sizeof(h) + 56] = 'x';
	ck_assert_int_lt(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert_has(mpictr_err_message(err), "not a string");
	mpictr_err_free(err);
	err = NULL;
	free(buf);
	/* an image section whose length the header overstates */
	buf = wire_answer_put(&a, &len);
	memcpy(&h, buf, sizeof(h));
	h.image_len += 1;
	memcpy(buf, &h, sizeof(h));
	ck_assert_int_lt(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert_has(mpictr_err_message(err), "expected");
	mpictr_err_free(err);
	err = NULL;
	free(buf);
	/* an image config too large for one reply: no facts, the task
	 * probes the image itself */
	big = malloc(WIRE_REPLY_MAX + 1);
	memset(big, ' ', WIRE_REPLY_MAX);
	big[WIRE_REPLY_MAX] = '\0';
	a.image.oci_config = big;
	a.image.oci_config_size = WIRE_REPLY_MAX;
	buf = wire_answer_put(&a, &len);
	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(!g.image_known);
	ck_assert_ptr_null(g.image.path);
	wire_answer_free(&g);
	free(buf);
	free(big);
	/* not known: not sent */
	a.image_known = false;
	a.image.oci_config = (char *)cfg;
	buf = wire_answer_put(&a, &len);
	ck_assert_int_eq(wire_answer_parse(buf, len, &g, &err), 0);
	ck_assert(!g.image_known);
	free(buf);
}
END_TEST

/* keeper_join against a keeper played over a socketpair: one request
 * with the claim, one answer; the fds only with verdict KEEPER_OK. */
static int join_with(int sv[2], int32_t verdict, const int *fds, int nfds,
		     struct keeper_answer *a, int ns[2], mpictr_err **err)
{
	struct wire_answer w = {.verdict = verdict,
				.a = 5,
				.digest = 42,
				.ucx_known = true,
				.ucx = (char *)"hca"};
	size_t len;
	char *buf = wire_answer_put(&w, &len);
	struct wire_req q;
	struct wire_claim c;
	int rc;

	ck_assert_int_eq(wire_send_reply(sv[1], 0, buf, len, fds, nfds, NULL),
			 0);
	free(buf);
	rc = keeper_join(sv[0], 5, LAUNCHER_UNKNOWN, &ns[0], &ns[1], a, err);
	ck_assert_int_eq(wire_recv_req(sv[1], &q, NULL), 0);
	ck_assert_uint_eq(q.op, WIRE_JOIN);
	ck_assert_int_eq(wire_claim_parse(q.data, q.len, &c, NULL), 0);
	ck_assert_uint_eq(c.local_rank, 5);
	ck_assert_uint_eq(c.local_size, LAUNCHER_UNKNOWN);
	wire_req_free(&q);
	return rc;
}

START_TEST(test_keeper_join)
{
	int sv[2], fds[2], ns[2], before;
	struct keeper_answer a;
	mpictr_err *err = NULL;

	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/", O_RDONLY | O_CLOEXEC);
	pair(sv);
	ck_assert_int_eq(join_with(sv, KEEPER_OK, fds, 2, &a, ns, &err), 0);
	ck_assert_int_eq(a.v.status, KEEPER_OK);
	ck_assert_uint_eq(a.digest, 42);
	ck_assert(a.ucx_known);
	ck_assert_str_eq(a.ucx, "hca");
	ck_assert(same_file(ns[0], fds[0]) && same_file(ns[1], fds[1]));
	close(ns[0]);
	close(ns[1]);
	free(a.ucx);
	/* refused: no fds */
	ck_assert_int_eq(join_with(sv, KEEPER_DUP_RANK, NULL, 0, &a, ns, &err),
			 0);
	ck_assert_int_eq(a.v.status, KEEPER_DUP_RANK);
	ck_assert_uint_eq(a.v.a, 5);
	ck_assert_int_eq(ns[0], -1);
	ck_assert_int_eq(ns[1], -1);
	free(a.ucx);
	/* a refusal with fds, an OK without: protocol errors, fds closed */
	before = nopen();
	ck_assert_int_eq(join_with(sv, KEEPER_TOO_MANY, fds, 2, &a, ns, &err),
			 -1);
	ck_assert_has(mpictr_err_message(err),
		      "2 namespace fds with verdict 4");
	ck_assert_int_eq(nopen(), before);
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(join_with(sv, KEEPER_OK, NULL, 0, &a, ns, &err), -1);
	ck_assert_has(mpictr_err_message(err),
		      "0 namespace fds with verdict 0");
	mpictr_err_free(err);
	err = NULL;
	/* a request not served */
	ck_assert_int_eq(wire_send_reply(sv[1], EPERM, NULL, 0, NULL, 0, NULL),
			 0);
	ck_assert_int_eq(keeper_join(sv[0], 0, 1, &ns[0], &ns[1], &a, &err),
			 -1);
	ck_assert_has(mpictr_err_message(err), "refused the request");
	mpictr_err_free(err);
	err = NULL;
	/* closed unanswered (an exiting keeper): 1 */
	close(sv[1]);
	ck_assert_int_eq(keeper_join(sv[0], 0, 1, &ns[0], &ns[1], &a, &err), 1);
	close(sv[0]);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

Suite *suite_wire(void);
Suite *suite_wire(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_request_round_trip);
	tcase_add_test(tc, test_reply_round_trip_fds);
	tcase_add_test(tc, test_short);
	tcase_add_test(tc, test_wrong_magic_and_bounds);
	tcase_add_test(tc, test_fds_closed);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_answer);
	tcase_add_test(tc, test_answer_image);
	tcase_add_test(tc, test_keeper_join);
	suite_add_tcase(s, tc);
	return s;
}
