/* pmix_peer.h - who is at the far end of a PMIx connection, and whether its
 * first message is one libpmix 4.2 can read safely (see pmix_peer.c). No
 * libpmix: used by the guard in libmpictr (pmix_guard.c) and the gate in
 * the pmix plugin (pmix_gate.c). */
#ifndef MPICTR_PMIX_PEER_H
#define MPICTR_PMIX_PEER_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The port of an AF_INET or AF_INET6 address. */
int pmix_sockaddr_port(const struct sockaddr_storage *a);

/* The uid that owns the far end of the connected TCP socket `fd`
 * (loopback peers), from the kernel (NETLINK_SOCK_DIAG, else
 * /proc/net/tcp). Sets errno on error (EAFNOSUPPORT: not TCP). */
int pmix_peer_uid(int fd, uid_t *uid);

/* The connect message of a PMIx 4.2 client: a 16-byte header (int32
 * pindex, uint32 tag, size_t nbytes, host order) and nbytes of fields. */
#define PMIX_HELLO_HDR 16
#define PMIX_HELLO_MAX 4096 /* header and fields; real ones are ~100 */

enum pmix_hello_rc {
	PMIX_HELLO_OK = 0,
	PMIX_HELLO_SHORT = 1, /* not all there yet: *need bytes are */
	PMIX_HELLO_BAD = -1,  /* *why says what (static text) */
};

/* Check the first n bytes a client sent (pure). OK only for a plain
 * client (not a tool) whose message libpmix 4.2 parses field by field
 * without reading past it: every string terminated inside it, the
 * credential no longer than what is left, a "N.N.N" version, and for the
 * "native" security mode the credential's uid/gid equal to uid/gid (the
 * ids the job's processes were registered with; libpmix would reject
 * others). */
enum pmix_hello_rc pmix_hello_check(const unsigned char *buf, size_t n,
				    uid_t uid, gid_t gid, size_t *need,
				    const char **why);

#endif
