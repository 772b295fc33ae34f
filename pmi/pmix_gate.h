/* pmix_gate.h - a uid check in front of libpmix's TCP listener (see
 * pmix_gate.c). Part of the pmix plugin. */
#ifndef MPICTR_PMIX_GATE_H
#define MPICTR_PMIX_GATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

/* The TCP listening sockets this process holds before PMIx_server_init. */
struct pmix_gate_snapshot {
	ino_t ino[64];
	size_t n;
};
void pmix_gate_snapshot(struct pmix_gate_snapshot *snap);

struct pmix_gate;
/* After PMIx_server_init: take over the listener(s) libpmix created since
 * `before`, put Unix sockets in the private directory `dir` under
 * libpmix's descriptors, and start relaying the job user's connections.
 * Call before any client can legitimately connect. */
int pmix_gate_start(const struct pmix_gate_snapshot *before, const char *dir,
		    struct pmix_gate **out, mpictr_err **err);
/* Stops the relay and closes every connection; NULL is fine. */
void pmix_gate_stop(struct pmix_gate *g);

#endif
