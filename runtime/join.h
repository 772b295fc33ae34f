/* join.h - Slurm join mode (srun ... mpictr IMAGE CMD): see join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "plan.h"

/* True when cfg runs one task of an srun step that should join the node's
 * shared namespaces (not with -n, --no-share or MPICTR_JOIN=0). */
bool join_wanted(const struct mpictr_config *cfg);
/* Join (starting the node's keeper if first) and exec in place. Returns
 * only on failure. */
int join_run(const struct mpictr_config *cfg, mpictr_err **err);
/* Digest of what in plan p decides the container (image, mounts, devices,
 * identity, injected MPI), not the per-task command, environment and start
 * directory: tasks whose digests differ never share a container. */
uint64_t join_plan_digest(const struct plan *p);
/* SipHash-2-4 of data under key (names only the user can predict). */
uint64_t join_siphash(const uint8_t key[16], const void *data, size_t len);

#endif
