/* fuzz_wire.c - libFuzzer target for the keepers' wire protocol
 * (runtime/modes/wire.c), the bytes any process of the user on the node
 * may send a keeper, or a keeper its client: the header and JOIN payload
 * parsers, and the receivers over a socketpair whose peer sent the input
 * and closed. Any input is accepted within the bounds or refused with a
 * message, never a crash, a leak or an fd left open. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "modes/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void receivers(const uint8_t *data, size_t size, bool reply)
{
	mpictr_err *err = NULL;
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	close(sv[1]);
	if (reply) {
		struct wire_reply r;

		rc = wire_recv_reply(sv[0], WIRE_MAX_FDS, &r, &err);
		if (rc == 0 && (r.len > WIRE_REPLY_MAX || r.nfds != 0 ||
				r.data[r.len] != '\0' ||
				sizeof(struct wire_reply_hdr) + r.len > size))
			abort();
		if (rc == 0)
			wire_reply_free(&r);
	} else {
		struct wire_req q;

		rc = wire_recv_req(sv[0], &q, &err);
		if (rc == 0 && (q.len > WIRE_REQ_MAX || q.data[q.len] != '\0' ||
				sizeof(struct wire_req_hdr) + q.len > size))
			abort();
		if (rc == 0)
			wire_req_free(&q);
	}
	if (rc == 1 && size != 0)
		abort(); /* "closed before a byte" only for no bytes */
	if (rc < 0)
		check_failed(&err);
	close(sv[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_req_hdr qh;
	struct wire_reply_hdr rh;
	struct wire_answer a;
	struct wire_claim c;
	mpictr_err *err = NULL;

	if (wire_req_parse(data, size, &qh, &err) == 0) {
		if (qh.magic != WIRE_MAGIC || qh.len > WIRE_REQ_MAX || qh.zero)
			abort();
	} else {
		check_failed(&err);
	}
	if (wire_reply_parse(data, size, &rh, &err) == 0) {
		if (rh.magic != WIRE_MAGIC || rh.len > WIRE_REPLY_MAX ||
		    rh.nfds > WIRE_MAX_FDS || rh.status < 0)
			abort();
	} else {
		check_failed(&err);
	}
	if (wire_answer_parse(data, size, &a, &err) == 0) {
		if (a.ucx && (!a.ucx_known || strlen(a.ucx) > WIRE_UCX_MAX))
			abort();
		if (a.image_known &&
		    (!a.image.path || a.image.path[0] != '/' ||
		     a.image.kind > IMAGE_SIF ||
		     a.image.oci_config_size > IMAGE_OCI_CONFIG_MAX ||
		     (a.image.oci_config &&
		      strlen(a.image.oci_config) > a.image.oci_config_size)))
			abort();
		if (!a.image_known && a.image.path)
			abort();
		wire_answer_free(&a);
	} else {
		check_failed(&err);
	}
	if (wire_claim_parse(data, size, &c, &err) == 0) {
		if (size != sizeof(c))
			abort();
	} else {
		check_failed(&err);
	}
	/* A socket buffer holds it all: the peer's write cannot block. */
	if (size <= 65536) {
		receivers(data, size, false);
		receivers(data, size, true);
	}
	return 0;
}
