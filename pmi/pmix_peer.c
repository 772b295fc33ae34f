/* pmix_peer.c - who is at the far end of a PMIx connection (the kernel's
 * record, which no shim around geteuid() changes), and whether the first
 * message it sent is one libpmix 4.2 reads without harm.
 *
 * libpmix 4.2's connection handler (ptl_base_connection_hdlr.c) reads the
 * header and nbytes of fields with blocking reads on its progress thread,
 * then parses them trusting the credential length (a memcpy of up to 4 GiB
 * from a short buffer: SIGSEGV) and the version string; a client it
 * rejects may leave its teardown waiting forever. pmix_hello_check() lets
 * through only messages that are complete and that libpmix would parse and
 * accept as far as the fields go. Pure; fuzzed (tests/fuzz/fuzz_pmixhello.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pmi/pmix_peer.h"
#include "common/util.h"

/* ---- whose is the client's socket ---- */

int pmix_sockaddr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
}

/* The kernel's record of who owns the socket at the far end of `fd`,
 * through NETLINK_SOCK_DIAG. Sets errno on error. */
static int peer_uid_diag(const struct sockaddr_storage *local,
			 const struct sockaddr_storage *peer, uid_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr h;
		char b[8192];
	} resp;
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	cleanup_close int s = -1;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (__u8)local->ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0U;
	/* The client's socket: its source is the peer's address. */
	req.r.id.idiag_sport = htons((uint16_t)pmix_sockaddr_port(peer));
	req.r.id.idiag_dport = htons((uint16_t)pmix_sockaddr_port(local));
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] =
	    INET_DIAG_NOCOOKIE;
	if (local->ss_family == AF_INET) {
		memcpy(req.r.id.idiag_src,
		       &((const struct sockaddr_in *)peer)->sin_addr, 4);
		memcpy(req.r.id.idiag_dst,
		       &((const struct sockaddr_in *)local)->sin_addr, 4);
	} else {
		memcpy(req.r.id.idiag_src,
		       &((const struct sockaddr_in6 *)peer)->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst,
		       &((const struct sockaddr_in6 *)local)->sin6_addr, 16);
	}
	s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (s < 0)
		return -1;
	if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) < 0)
		return -1;
	n = TEMP_FAILURE_RETRY(recv(s, &resp, sizeof(resp), 0));
	if (n < 0)
		return -1;
	for (struct nlmsghdr *h = &resp.h; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			errno = e->error ? -e->error : ENOENT;
			return -1;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			*uid = m->idiag_uid;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

/* The same from /proc/net/tcp (kernels without inet_diag): the line
 * whose local address is the peer's and remote address is ours. IPv4
 * only; sets errno on error. */
static int peer_uid_proc(const struct sockaddr_storage *local,
			 const struct sockaddr_storage *peer, uid_t *uid)
{
	FILE *f;
	char line[512], want_l[32], want_r[32];
	const struct sockaddr_in *l4 = (const struct sockaddr_in *)local;
	const struct sockaddr_in *p4 = (const struct sockaddr_in *)peer;
	int rc = -1;

	if (local->ss_family != AF_INET) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	/* /proc/net/tcp prints the address as the host-order value of the
	 * network-order word. */
	snprintf(want_l, sizeof(want_l), "%08X:%04X",
		 (unsigned)p4->sin_addr.s_addr, (unsigned)ntohs(p4->sin_port));
	snprintf(want_r, sizeof(want_r), "%08X:%04X",
		 (unsigned)l4->sin_addr.s_addr, (unsigned)ntohs(l4->sin_port));
	f = fopen("/proc/net/tcp", "re");
	if (!f)
		return -1;
	errno = ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char la[32], ra[32];
		unsigned st, u;

		if (sscanf(line, " %*u: %31s %31s %x %*s %*s %*s %u", la, ra,
			   &st, &u) == 4 &&
		    strcmp(la, want_l) == 0 && strcmp(ra, want_r) == 0) {
			*uid = (uid_t)u;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int pmix_peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_storage local, peer;
	socklen_t ll = sizeof(local), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return -1;
	if (local.ss_family != AF_INET && local.ss_family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (peer_uid_diag(&local, &peer, uid) == 0)
		return 0;
	return peer_uid_proc(&local, &peer, uid);
}

/* ---- what the client says first ---- */

struct rd {
	const unsigned char *p;
	size_t left;
};

static bool rd_str(struct rd *r, const char **s)
{
	const unsigned char *nul = memchr(r->p, '\0', r->left);

	if (!nul)
		return false;
	*s = (const char *)r->p;
	r->left -= (size_t)(nul - r->p) + 1;
	r->p = nul + 1;
	return true;
}

static bool rd_u32(struct rd *r, uint32_t *v)
{
	uint32_t be;

	if (r->left < sizeof(be))
		return false;
	memcpy(&be, r->p, sizeof(be));
	*v = ntohl(be);
	r->p += sizeof(be);
	r->left -= sizeof(be);
	return true;
}

static bool rd_u8(struct rd *r, uint8_t *v)
{
	if (r->left < 1)
		return false;
	*v = *r->p++;
	r->left--;
	return true;
}

/* "N.N.N..." as libpmix reads it (strtoul, skip one, strtoul, skip one,
 * strtoul): digits, a dot, digits, a dot, a digit. Sets major/minor. */
static bool version_ok(const char *v, unsigned *major, unsigned *minor)
{
	unsigned n[2] = {0, 0};

	for (int i = 0; i < 2; i++) {
		if (!isdigit((unsigned char)*v))
			return false;
		while (isdigit((unsigned char)*v))
			n[i] = n[i] * 10 + (unsigned)(*v++ - '0') % 1000;
		if (*v++ != '.')
			return false;
	}
	*major = n[0];
	*minor = n[1];
	return isdigit((unsigned char)*v);
}

#define BAD(text)                                                              \
	do {                                                                   \
		*why = (text);                                                 \
		return PMIX_HELLO_BAD;                                         \
	} while (0)

static enum pmix_hello_rc fields_check(struct rd *r, uid_t uid, gid_t gid,
				       const char **why)
{
	const char *psec, *ns, *ver, *s;
	uint32_t credlen, rank, cu, cg;
	uint8_t flag, type;
	unsigned major, minor;
	struct rd cred;

	if (!rd_str(r, &psec) || !rd_u32(r, &credlen))
		BAD("no security mode or credential length");
	if (credlen > r->left)
		BAD("credential longer than the message");
	cred = (struct rd){r->p, credlen};
	r->p += credlen;
	r->left -= credlen;
	if (strcmp(psec, "native") != 0)
		BAD("security mode other than native");
	/* native's credential: the client's uid and gid, in host order */
	if (cred.left != 2 * sizeof(uint32_t))
		BAD("native credential not a uid and a gid");
	memcpy(&cu, cred.p, sizeof(cu));
	memcpy(&cg, cred.p + sizeof(cu), sizeof(cg));
	if (cu != (uint32_t)uid || cg != (uint32_t)gid)
		BAD("uid/gid other than the job's");
	if (!rd_u8(r, &flag) || flag != 0)
		BAD("not a plain client (a tool or launcher)");
	if (!rd_str(r, &ns) || !rd_u32(r, &rank) || !rd_str(r, &ver))
		BAD("no process id or version");
	if (!version_ok(ver, &major, &minor))
		BAD("version not N.N.N");
	if (major == 2 && minor == 0)
		return PMIX_HELLO_OK;
	if (!rd_str(r, &s) || !rd_u8(r, &type) || !rd_str(r, &s))
		BAD("no buffer or data-store module");
	return PMIX_HELLO_OK;
}

enum pmix_hello_rc pmix_hello_check(const unsigned char *buf, size_t n,
				    uid_t uid, gid_t gid, size_t *need,
				    const char **why)
{
	uint64_t nbytes;
	struct rd r;

	*need = PMIX_HELLO_HDR;
	*why = NULL;
	if (n < PMIX_HELLO_HDR)
		return PMIX_HELLO_SHORT;
	memcpy(&nbytes, buf + 8, sizeof(nbytes));
	if (nbytes == 0 || nbytes > PMIX_HELLO_MAX - PMIX_HELLO_HDR)
		BAD("message size out of range");
	*need = PMIX_HELLO_HDR + (size_t)nbytes;
	if (n < *need)
		return PMIX_HELLO_SHORT;
	r = (struct rd){buf + PMIX_HELLO_HDR, (size_t)nbytes};
	return fields_check(&r, uid, gid, why);
}
