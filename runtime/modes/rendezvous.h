/* rendezvous.h - where the tasks of a job on a node meet their keeper:
 * the user's private directory, the keyed names in it, and the digests of
 * what decides the container. See rendezvous.c. */
#ifndef MPICTR_RENDEZVOUS_H
#define MPICTR_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "host/launcher.h"
#include "plan/plan.h"

/* SipHash-2-4 of data under key (names only the user can predict). */
uint64_t rendezvous_siphash(const uint8_t key[16], const void *data,
			    size_t len);
/* The user's private rendezvous directory on this node (0700, checked;
 * a private fallback when another user took the name). notice: log the
 * fallback. *out: caller frees. */
int rendezvous_dir(char *const *env, char **out, bool notice, mpictr_err **err);
/* Digest of cfg's inputs to planning that decide the container (options,
 * config files, the working directory, the variables planning reads):
 * cheap, computed before the keeper answers. */
uint64_t rendezvous_inputs_digest(const struct mpictr_config *cfg);
/* Digest of what in plan p decides the container (image, mounts, devices,
 * identity, injected MPI), not the per-task command, environment and start
 * directory: tasks whose digests differ never share a container. */
uint64_t rendezvous_plan_digest(const struct plan *p);
/* The rendezvous name of a task's job on this node (caller frees):
 * readable launcher parts, then a hash of the uid, the boot id, the host,
 * the launcher's job key and node, image and inputs (the digest above). */
char *rendezvous_key(const struct launch_peers *pe, const char *image,
		     uint64_t inputs);

#endif
