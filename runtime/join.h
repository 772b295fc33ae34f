/* join.h - join mode (srun, mpirun, mpiexec ... mpictr IMAGE CMD): see
 * join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "mode.h"
#include "plan.h"

/* Run cfg as one rank started by a launcher (d->mode == RUN_JOIN, decided
 * by mode.c, with the local peers in d->peers): join the node's
 * namespaces, starting the node's keeper if first. exec_in_place: exec the
 * command in this process (returns only on failure); else fork it, wait, and
 * return 0 with its *status. */
int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     bool exec_in_place, int *status, mpictr_err **err);
/* As join_run, for a launcher that execs the command itself (the SPANK
 * plugin): join the node's container and return, this process in its
 * namespaces and start directory without capabilities; *env the command's
 * environment, *program as container_enter_task. */
int join_enter(const struct mpictr_config *cfg, const struct run_decision *d,
	       char ***env, char **program, mpictr_err **err);
/* Digest of what in plan p decides the container (image, mounts, devices,
 * identity, injected MPI), not the per-task command, environment and start
 * directory: tasks whose digests differ never share a container. */
uint64_t join_plan_digest(const struct plan *p);
/* Local tasks of one job on one node, at most. */
#define JOIN_MAX_TASKS 4096

/* The keeper's verdict on what a joining task claims. */
enum join_refusal {
	JOIN_OK = 0,
	JOIN_DUP_RANK = 1,   /* a = the local rank */
	JOIN_SIZE_DIFF = 2,  /* a = the keeper's size, b = the claimed one */
	JOIN_RANK_RANGE = 3, /* a = the rank, b = the size */
	JOIN_TOO_MANY = 4,   /* a = the size */
};

/* Check a task's claim (local rank, local size; LAUNCHER_UNKNOWN when not
 * given) against the job's local size on this node (the first task's;
 * LAUNCHER_UNKNOWN: counting mode), the nranks local ranks claimed so far
 * and the joined tasks. Returns JOIN_OK or the refusal, with its values
 * in *a and *b. Pure. */
int join_check_claim(uint32_t size, const uint32_t *ranks, uint32_t nranks,
		     uint32_t joined, uint32_t rank, uint32_t claimed_size,
		     uint32_t *a, uint32_t *b);
/* SipHash-2-4 of data under key (names only the user can predict). */
uint64_t join_siphash(const uint8_t key[16], const void *data, size_t len);

#endif
