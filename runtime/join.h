/* join.h - Slurm join mode (srun ... mpictr IMAGE CMD): see join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "mode.h"
#include "plan.h"

/* Run cfg as one task of an srun step (d->mode == RUN_JOIN, decided by
 * mode.c): join the node's namespaces, starting the node's keeper if
 * first. exec_in_place: exec the command in this process (returns only on
 * failure); else fork it, wait, and return 0 with its *status. */
int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     bool exec_in_place, int *status, mpictr_err **err);
/* Digest of what in plan p decides the container (image, mounts, devices,
 * identity, injected MPI), not the per-task command, environment and start
 * directory: tasks whose digests differ never share a container. */
uint64_t join_plan_digest(const struct plan *p);
/* SipHash-2-4 of data under key (names only the user can predict). */
uint64_t join_siphash(const uint8_t key[16], const void *data, size_t len);

#endif
