/* wire.h - the keeper's wire protocol, one for join mode's keeper and an
 * instance's (keeper.c, instance.c): one request, one reply per
 * connection. See wire.c. */
#ifndef MPICTR_WIRE_H
#define MPICTR_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sif/image.h"

/* "mpw1": mpictr's keeper wire, version 1. A new layout takes a new
 * magic: a peer of another version is refused, never misread. */
#define WIRE_MAGIC 0x6d707731u
#define WIRE_REQ_MAX 256	  /* bytes of a request's payload, at most */
#define WIRE_REPLY_MAX (64 << 10) /* bytes of a reply's payload, at most */
#define WIRE_MAX_FDS 3		  /* descriptors with a reply, at most */

/* The ops. JOIN: join mode's keeper takes a claim (struct wire_claim)
 * and answers a struct wire_answer, with the namespace fds when the
 * verdict is 0; an instance's takes no payload and answers its options
 * with three fds. INFO, STOP: an instance's. */
enum wire_op { WIRE_JOIN = 1, WIRE_INFO = 2, WIRE_STOP = 3 };

/* The headers as they go on the wire (host byte order: both ends are on
 * one node). A request carries no descriptors. */
struct wire_req_hdr {
	uint32_t magic;
	uint32_t op;   /* enum wire_op */
	uint32_t len;  /* payload bytes that follow, <= WIRE_REQ_MAX */
	uint32_t zero; /* 0 */
};

struct wire_reply_hdr {
	uint32_t magic;
	int32_t status; /* 0, or an errno: the request was not served */
	uint32_t len;	/* payload bytes that follow, <= WIRE_REPLY_MAX */
	uint32_t nfds;	/* descriptors that come with it, <= WIRE_MAX_FDS */
};

/* A request received: its op and payload (len bytes, NUL-terminated;
 * free data). */
struct wire_req {
	uint32_t op;
	uint32_t len;
	char *data;
};

/* A reply received: its status, payload (len bytes, NUL-terminated) and
 * descriptors (close-on-exec). wire_reply_free closes those left >= 0. */
struct wire_reply {
	int32_t status;
	uint32_t len;
	char *data;
	int nfds;
	int fds[WIRE_MAX_FDS];
};

/* Check a header's bytes (n of them): 0 with *h, or -1 with an error
 * that says what is wrong (short, wrong magic, a length or count over
 * the bounds). Pure. */
int wire_req_parse(const void *buf, size_t n, struct wire_req_hdr *h,
		   mpictr_err **err);
int wire_reply_parse(const void *buf, size_t n, struct wire_reply_hdr *h,
		     mpictr_err **err);

/* Send a request, or a reply with nfds (0..WIRE_MAX_FDS) descriptors
 * (SCM_RIGHTS), in full: 0, or -1 with an error (errno EPIPE when the
 * peer is gone). */
int wire_send_req(int sock, uint32_t op, const void *data, size_t len,
		  mpictr_err **err);
int wire_send_reply(int sock, int32_t status, const void *data, size_t len,
		    const int *fds, int nfds, mpictr_err **err);

/* Receive a request, or a reply of at most max_fds descriptors (the
 * socket's SO_RCVTIMEO bounds the wait). 0: received and valid; 1: the
 * peer closed (or reset) the connection before a byte; -1: an error
 * naming what was wrong (short, wrong magic, oversized, descriptors
 * missing, unexpected or more than max_fds: every one received is
 * closed; ETIMEDOUT: nothing within the timeout). Nothing is left to
 * free after 1 or -1. */
int wire_recv_req(int sock, struct wire_req *q, mpictr_err **err);
int wire_recv_reply(int sock, int max_fds, struct wire_reply *r,
		    mpictr_err **err);
void wire_req_free(struct wire_req *q);
void wire_reply_free(struct wire_reply *r);

/* ---- JOIN's payloads (join mode) ------------------------------------------
 */

/* The task's claim: which local rank of which local size it is
 * (LAUNCHER_UNKNOWN: not given by the launcher). */
struct wire_claim {
	uint32_t local_rank, local_size;
};

/* The keeper's answer: its verdict on the claim (a keeper_refusal, 0:
 * joined, with the two namespace fds) and the refusal's values; the
 * digest of its plan (rendezvous_plan_digest); its UCX answer, so that
 * the node's tasks do not each run the UCX query helper: ucx_known false
 * (not sent: ask yourself), or ucx (NULL: no devices; at most
 * WIRE_UCX_MAX bytes). */
#define WIRE_UCX_MAX 4096
struct wire_answer {
	int32_t verdict;
	uint32_t a, b;
	uint64_t digest;
	bool ucx_known;
	char *ucx; /* parsed: the caller frees */
	/* The image's facts as the keeper probed them (its plan's image,
	 * with the image config's bytes), so that joining tasks never open
	 * the image. Put: sent when image_known and the whole answer fits
	 * WIRE_REPLY_MAX (else the task probes the image itself). Parsed:
	 * the caller releases image with image_info_free(). */
	bool image_known;
	struct image_info image;
};

/* The claim's payload: 0 with *c, or -1 with an error. Pure. */
int wire_claim_parse(const void *data, size_t len, struct wire_claim *c,
		     mpictr_err **err);
/* The answer's payload (an a->ucx over WIRE_UCX_MAX is sent as not
 * known): the bytes (caller frees) and their number in *len. */
char *wire_answer_put(const struct wire_answer *a, size_t *len);
/* 0 with *a (release with wire_answer_free), or -1 with an error. Pure. */
int wire_answer_parse(const void *data, size_t len, struct wire_answer *a,
		      mpictr_err **err);
/* Free what wire_answer_parse allocated in *a (ucx, image). */
void wire_answer_free(struct wire_answer *a);

#endif
