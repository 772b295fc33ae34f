/* wire.c - the keeper's wire protocol, defined once for join mode's keeper
 * (keeper.c, and join.c the task's side) and an instance's (instance.c).
 *
 * One request, one reply per connection, on a Unix stream socket whose
 * peer both ends checked (SO_PEERCRED: keeper_connect, the serve loops):
 *
 *   client: wire_req_hdr   {magic "mpw1", op, len, 0}     + len bytes
 *   keeper: wire_reply_hdr {magic, status, len, nfds}     + len bytes,
 *           the nfds descriptors with the header (SCM_RIGHTS)
 *
 * The client speaks first; a peer that sends no valid request within the
 * keeper's timeout gets nothing. Status 0: served (payload as the op
 * says); an errno: not served (EPERM: a peer in another container, EINVAL:
 * a bad payload, EOPNOTSUPP: an op this keeper does not serve). Lengths
 * and counts are bounded (WIRE_REQ_MAX, WIRE_REPLY_MAX, WIRE_MAX_FDS); the
 * receivers read in full across short reads and check everything before
 * they hand anything over: a header that is short, of another magic or
 * over a bound, a payload cut short, descriptors missing, unexpected or
 * more than asked for are errors, and every descriptor received is closed
 * then. Join mode's JOIN payloads are here too: the claim (local rank and
 * size) and the answer (verdict, digest, UCX answer).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "modes/wire.h"

/* Room for descriptors nobody should send: they are received to be
 * closed (the kernel drops those beyond the room, MSG_CTRUNC). */
#define WIRE_FDS_ROOM 8

/* ---- the headers (pure) ------------------------------------------------- */

static int check_magic(uint32_t magic, mpictr_err **err)
{
	if (magic == WIRE_MAGIC)
		return 0;
	return err_set(err, EPROTO,
		       "wrong magic 0x%08x (0x%08x expected: not a keeper of "
		       "this mpictr's wire version)",
		       magic, WIRE_MAGIC);
}

int wire_req_parse(const void *buf, size_t n, struct wire_req_hdr *h,
		   mpictr_err **err)
{
	if (n < sizeof(*h))
		return err_set(err, EPROTO,
			       "short request header (%zu of %zu bytes)", n,
			       sizeof(*h));
	memcpy(h, buf, sizeof(*h));
	if (check_magic(h->magic, err) < 0)
		return -1;
	if (h->len > WIRE_REQ_MAX)
		return err_set(err, EPROTO,
			       "a request payload of %u bytes (at most %d)",
			       h->len, WIRE_REQ_MAX);
	if (h->zero != 0)
		return err_set(err, EPROTO,
			       "a request header with a reserved field of %u "
			       "(0 expected)",
			       h->zero);
	return 0;
}

int wire_reply_parse(const void *buf, size_t n, struct wire_reply_hdr *h,
		     mpictr_err **err)
{
	if (n < sizeof(*h))
		return err_set(err, EPROTO,
			       "short reply header (%zu of %zu bytes)", n,
			       sizeof(*h));
	memcpy(h, buf, sizeof(*h));
	if (check_magic(h->magic, err) < 0)
		return -1;
	if (h->len > WIRE_REPLY_MAX)
		return err_set(err, EPROTO,
			       "a reply payload of %u bytes (at most %d)",
			       h->len, WIRE_REPLY_MAX);
	if (h->nfds > WIRE_MAX_FDS)
		return err_set(err, EPROTO,
			       "a reply with %u descriptors (at most %d)",
			       h->nfds, WIRE_MAX_FDS);
	if (h->status < 0)
		return err_set(err, EPROTO, "a reply of status %d",
			       (int)h->status);
	return 0;
}

/* ---- sending ------------------------------------------------------------ */

/* hdr and data in full, fds with the first bytes. Sets errno on error. */
static int send_all(int sock, const void *hdr, size_t hlen, const void *data,
		    size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(WIRE_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {{.iov_base = (void *)hdr, .iov_len = hlen},
			       {.iov_base = (void *)data, .iov_len = len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
	size_t done = 0, total = hlen + len;
	ssize_t n;

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
	n = TEMP_FAILURE_RETRY(sendmsg(sock, &mh, MSG_NOSIGNAL));
	if (n < 0)
		return -1;
	/* The rest of a long payload, if a signal cut the send short. */
	for (done = (size_t)n; done < total; done += (size_t)n) {
		const char *p = done < hlen ? (const char *)hdr + done
					    : (const char *)data + done - hlen;
		size_t left = done < hlen ? hlen - done : total - done;

		n = TEMP_FAILURE_RETRY(send(sock, p, left, MSG_NOSIGNAL));
		if (n <= 0)
			return -1;
	}
	return 0;
}

/* errno kept for the caller (EPIPE: the peer is gone). */
static int send_failed(const char *what, mpictr_err **err)
{
	int e = errno;

	err_set(err, e, "send the %s", what);
	errno = e;
	return -1;
}

int wire_send_req(int sock, uint32_t op, const void *data, size_t len,
		  mpictr_err **err)
{
	struct wire_req_hdr h = {
	    .magic = WIRE_MAGIC, .op = op, .len = (uint32_t)len};

	if (len > WIRE_REQ_MAX)
		return err_set(err, EMSGSIZE,
			       "send a request of %zu bytes (at most %d)", len,
			       WIRE_REQ_MAX);
	return send_all(sock, &h, sizeof(h), data, len, NULL, 0) < 0
		   ? send_failed("request", err)
		   : 0;
}

int wire_send_reply(int sock, int32_t status, const void *data, size_t len,
		    const int *fds, int nfds, mpictr_err **err)
{
	struct wire_reply_hdr h = {.magic = WIRE_MAGIC,
				   .status = status,
				   .len = (uint32_t)len,
				   .nfds = (uint32_t)nfds};

	if (len > WIRE_REPLY_MAX || nfds < 0 || nfds > WIRE_MAX_FDS ||
	    status < 0)
		return err_set(err, EMSGSIZE,
			       "send a reply of %zu bytes, %d descriptors, "
			       "status %d (at most %d bytes, %d descriptors)",
			       len, nfds, (int)status, WIRE_REPLY_MAX,
			       WIRE_MAX_FDS);
	return send_all(sock, &h, sizeof(h), data, len, fds, nfds) < 0
		   ? send_failed("reply", err)
		   : 0;
}

/* ---- receiving ---------------------------------------------------------- */

/* What came in on a connection: bytes so far, and every descriptor. */
struct inbox {
	int fds[WIRE_FDS_ROOM];
	int nfds;
	bool lost; /* more descriptors came than the room (MSG_CTRUNC) */
};

static void inbox_close(struct inbox *in)
{
	for (int i = 0; i < in->nfds; i++)
		close(in->fds[i]);
	in->nfds = 0;
}

/* Read exactly len bytes into buf, keeping the descriptors that come
 * with any of them: the bytes read (< len: the peer closed), or -1 with
 * errno. */
static ssize_t read_all(int sock, void *buf, size_t len, struct inbox *in)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(WIRE_FDS_ROOM * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {.iov_base = (char *)buf + got,
				    .iov_len = len - got};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = u.buf,
				    .msg_controllen = sizeof(u.buf)};
		ssize_t n = TEMP_FAILURE_RETRY(
		    recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL));

		if (n < 0)
			return -1;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
		     c = CMSG_NXTHDR(&mh, c)) {
			size_t k;

			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(fd));
				if (in->nfds < WIRE_FDS_ROOM)
					in->fds[in->nfds++] = fd;
				else
					close(fd);
			}
		}
		if (mh.msg_flags & MSG_CTRUNC)
			in->lost = true;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* The error of a read of want bytes that got n (-1: errno). */
static int read_failed(ssize_t n, size_t want, const char *what,
		       mpictr_err **err)
{
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return err_set(err, ETIMEDOUT, "no %s within the timeout",
			       what);
	if (n < 0)
		return err_set(err, errno, "receive the %s", what);
	return err_set(err, EPROTO,
		       "the peer closed the connection after %zd of %zu "
		       "bytes of the %s",
		       n, want, what);
}

/* The header (hlen bytes into hdr): 0, 1 nothing came, -1 error. */
static int recv_hdr(int sock, void *hdr, size_t hlen, struct inbox *in,
		    const char *what, mpictr_err **err)
{
	ssize_t n = read_all(sock, hdr, hlen, in);

	if ((n == 0 || (n < 0 && errno == ECONNRESET)) && in->nfds == 0)
		return 1;
	if (n != (ssize_t)hlen)
		return read_failed(n, hlen, what, err);
	return 0;
}

/* The payload of len bytes: a NUL-terminated copy, or NULL with *err. */
static char *recv_payload(int sock, uint32_t len, struct inbox *in,
			  const char *what, mpictr_err **err)
{
	char *b = xmalloc((size_t)len + 1);
	ssize_t n = len ? read_all(sock, b, len, in) : 0;

	if (n != (ssize_t)len) {
		free(b);
		read_failed(n, len, what, err);
		return NULL;
	}
	b[len] = '\0';
	return b;
}

int wire_recv_req(int sock, struct wire_req *q, mpictr_err **err)
{
	struct wire_req_hdr h;
	struct inbox in = {.nfds = 0};
	int rc;

	memset(q, 0, sizeof(*q));
	rc = recv_hdr(sock, &h, sizeof(h), &in, "request header", err);
	if (rc != 0)
		goto fail;
	rc = -1;
	if (wire_req_parse(&h, sizeof(h), &h, err) < 0)
		goto fail;
	q->data = recv_payload(sock, h.len, &in, "request payload", err);
	if (!q->data)
		goto fail;
	if (in.nfds || in.lost) {
		err_set(err, EPROTO,
			"a request with descriptors (none "
			"expected): closed");
		goto fail;
	}
	q->op = h.op;
	q->len = h.len;
	return 0;
fail:
	inbox_close(&in);
	wire_req_free(q);
	return rc;
}

int wire_recv_reply(int sock, int max_fds, struct wire_reply *r,
		    mpictr_err **err)
{
	struct wire_reply_hdr h;
	struct inbox in = {.nfds = 0};
	int rc;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < WIRE_MAX_FDS; i++)
		r->fds[i] = -1;
	rc = recv_hdr(sock, &h, sizeof(h), &in, "reply header", err);
	if (rc != 0)
		goto fail;
	rc = -1;
	if (wire_reply_parse(&h, sizeof(h), &h, err) < 0)
		goto fail;
	r->data = recv_payload(sock, h.len, &in, "reply payload", err);
	if (!r->data)
		goto fail;
	if (in.lost || (uint32_t)in.nfds != h.nfds) {
		err_set(err, EPROTO,
			"a reply with %s%d descriptors, %u announced: closed",
			in.lost ? "more than " : "", in.nfds, h.nfds);
		goto fail;
	}
	if (in.nfds > max_fds) {
		err_set(err, EPROTO,
			"a reply with %d descriptors (at most %d expected): "
			"closed",
			in.nfds, max_fds < 0 ? 0 : max_fds);
		goto fail;
	}
	r->status = h.status;
	r->len = h.len;
	r->nfds = in.nfds;
	memcpy(r->fds, in.fds, (size_t)in.nfds * sizeof(int));
	return 0;
fail:
	inbox_close(&in);
	wire_reply_free(r);
	return rc;
}

void wire_req_free(struct wire_req *q)
{
	free(q->data);
	memset(q, 0, sizeof(*q));
}

void wire_reply_free(struct wire_reply *r)
{
	for (int i = 0; i < WIRE_MAX_FDS; i++) {
		if (i < r->nfds && r->fds[i] >= 0)
			close(r->fds[i]);
		r->fds[i] = -1;
	}
	free(r->data);
	r->data = NULL;
	r->nfds = 0;
	r->len = 0;
}

/* ---- JOIN's payloads (pure) --------------------------------------------- */

/* The answer on the wire, then ucx_len bytes of UCX answer, then
 * image_len bytes of the image's facts (0: none sent). */
struct answer_wire {
	int32_t verdict;
	uint32_t a, b;
	int32_t ucx_len; /* ANSWER_UCX_NONE, ANSWER_UCX_ASK, or the length */
	uint64_t digest;
	uint32_t image_len;
	uint32_t zero;
};

/* The image's facts: this header, then path_len bytes of path, arch_len
 * of arch, oci_len of the image config (oci_len is the config's size
 * when its bytes are sent, else 0). */
struct image_wire {
	uint32_t kind, compression;
	uint64_t offset, size;
	uint64_t oci_offset, oci_size;
	uint32_t path_len, arch_len, oci_len, zero;
};

#define ANSWER_UCX_NONE (-1) /* no devices */
#define ANSWER_UCX_ASK (-2)  /* not sent: ask yourself */

int wire_claim_parse(const void *data, size_t len, struct wire_claim *c,
		     mpictr_err **err)
{
	if (len != sizeof(*c))
		return err_set(err, EPROTO,
			       "a claim of %zu bytes (%zu expected)", len,
			       sizeof(*c));
	memcpy(c, data, sizeof(*c));
	return 0;
}

/* The image section of an answer (a->image), or NULL when it is not sent:
 * not known, no path, or an image config that was not read. */
static char *image_put(const struct wire_answer *a, size_t room, size_t *len)
{
	const struct image_info *im = &a->image;
	struct image_wire w = {.kind = (uint32_t)im->kind,
			       .compression = (uint32_t)im->compression,
			       .offset = im->offset,
			       .size = im->size,
			       .oci_offset = im->oci_config_offset,
			       .oci_size = im->oci_config_size};
	char *buf, *at;

	if (!a->image_known || !im->path ||
	    (im->oci_config_size > 0 && !im->oci_config))
		return NULL;
	w.path_len = (uint32_t)strlen(im->path);
	w.arch_len = im->arch ? (uint32_t)strlen(im->arch) : 0;
	w.oci_len = im->oci_config ? (uint32_t)im->oci_config_size : 0;
	*len = sizeof(w) + w.path_len + w.arch_len + (size_t)w.oci_len;
	if (*len > room)
		return NULL; /* the task probes the image itself */
	at = buf = xmalloc(*len);
	memcpy(at, &w, sizeof(w));
	at += sizeof(w);
	memcpy(at, im->path, w.path_len);
	at += w.path_len;
	if (w.arch_len)
		memcpy(at, im->arch, w.arch_len);
	at += w.arch_len;
	if (w.oci_len)
		memcpy(at, im->oci_config, w.oci_len);
	return buf;
}

char *wire_answer_put(const struct wire_answer *a, size_t *len)
{
	struct answer_wire w = {
	    .verdict = a->verdict, .a = a->a, .b = a->b, .digest = a->digest};
	size_t ul = a->ucx ? strlen(a->ucx) : 0, il = 0, head;
	cleanup_free char *image = NULL;
	char *buf;

	if (!a->ucx_known || ul > WIRE_UCX_MAX)
		w.ucx_len = ANSWER_UCX_ASK;
	else
		w.ucx_len = a->ucx ? (int32_t)ul : ANSWER_UCX_NONE;
	head = sizeof(w) + (w.ucx_len > 0 ? ul : 0);
	image = image_put(a, WIRE_REPLY_MAX - head, &il);
	w.image_len = image ? (uint32_t)il : 0;
	*len = head + w.image_len;
	buf = xmalloc(*len);
	memcpy(buf, &w, sizeof(w));
	if (w.ucx_len > 0)
		memcpy(buf + sizeof(w), a->ucx, ul);
	if (image)
		memcpy(buf + head, image, il);
	return buf;
}

/* image_info_free's work on what image_parse allocates (wire.c stays
 * free of the SIF code: the fuzz target links it alone). */
static void image_clear(struct image_info *im)
{
	free(im->path);
	free(im->arch);
	free(im->oci_config);
	memset(im, 0, sizeof(*im));
}

void wire_answer_free(struct wire_answer *a)
{
	free(a->ucx);
	a->ucx = NULL;
	image_clear(&a->image);
	a->image_known = false;
}

/* A string of n bytes at p: no NUL inside, one added. */
static char *image_str(const char *p, size_t n)
{
	return n && !memchr(p, '\0', n) ? xstrndup(p, n) : NULL;
}

static int image_parse(const char *data, size_t len, struct image_info *im,
		       mpictr_err **err)
{
	struct image_wire w;
	const char *at = data + sizeof(w);

	memset(im, 0, sizeof(*im));
	if (len < sizeof(w))
		return err_set(err, EPROTO, "image facts of %zu bytes", len);
	memcpy(&w, data, sizeof(w));
	if (w.kind > IMAGE_SIF || w.zero != 0 || w.path_len == 0 ||
	    (w.oci_len != 0 && w.oci_len != w.oci_size) ||
	    w.oci_size > IMAGE_OCI_CONFIG_MAX ||
	    len != sizeof(w) + (size_t)w.path_len + w.arch_len + w.oci_len)
		return err_set(err, EPROTO,
			       "image facts of %zu bytes that do not add up",
			       len);
	im->kind = (enum image_kind)w.kind;
	im->compression = (int)w.compression;
	im->offset = w.offset;
	im->size = w.size;
	im->oci_config_offset = w.oci_offset;
	im->oci_config_size = w.oci_size;
	im->path = image_str(at, w.path_len);
	at += w.path_len;
	if (w.arch_len)
		im->arch = image_str(at, w.arch_len);
	at += w.arch_len;
	if (w.oci_len) {
		im->oci_config = xmalloc((size_t)w.oci_len + 1);
		memcpy(im->oci_config, at, w.oci_len);
		im->oci_config[w.oci_len] = '\0';
	} else if (w.oci_size) {
		im->oci_config_errno = EFBIG; /* not sent */
	}
	if (!im->path || im->path[0] != '/' || (w.arch_len && !im->arch)) {
		image_clear(im);
		return err_set(err, EPROTO,
			       "image facts with a path or arch that is not "
			       "a string");
	}
	return 0;
}

int wire_answer_parse(const void *data, size_t len, struct wire_answer *a,
		      mpictr_err **err)
{
	struct answer_wire w;
	size_t ul;

	memset(a, 0, sizeof(*a));
	if (len < sizeof(w))
		return err_set(err, EPROTO,
			       "an answer of %zu bytes (at least %zu)", len,
			       sizeof(w));
	memcpy(&w, data, sizeof(w));
	if (w.ucx_len < ANSWER_UCX_ASK || w.ucx_len > WIRE_UCX_MAX)
		return err_set(err, EPROTO,
			       "an answer with a UCX answer of length %d (-2 "
			       "to %d)",
			       (int)w.ucx_len, WIRE_UCX_MAX);
	ul = w.ucx_len > 0 ? (size_t)w.ucx_len : 0;
	if (w.zero != 0 || len != sizeof(w) + ul + w.image_len)
		return err_set(err, EPROTO,
			       "an answer of %zu bytes (%zu expected)", len,
			       sizeof(w) + ul + w.image_len);
	if (memchr((const char *)data + sizeof(w), '\0', ul))
		return err_set(err, EPROTO,
			       "an answer whose UCX answer holds a NUL byte");
	if (w.image_len && image_parse((const char *)data + sizeof(w) + ul,
				       w.image_len, &a->image, err) < 0)
		return -1;
	a->image_known = w.image_len != 0;
	a->verdict = w.verdict;
	a->a = w.a;
	a->b = w.b;
	a->digest = w.digest;
	a->ucx_known = w.ucx_len != ANSWER_UCX_ASK;
	if (w.ucx_len >= 0)
		a->ucx = xstrndup((const char *)data + sizeof(w), ul);
	return 0;
}
