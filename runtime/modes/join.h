/* join.h - join mode (srun, mpirun, mpiexec ... mpictr IMAGE CMD): see
 * join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <stdbool.h>

#include "config/config.h"
#include "container/ns.h"
#include "plan/mode.h"
#include "plan/plan.h"

/* Run cfg as one rank started by a launcher (d->mode == RUN_JOIN, decided
 * by mode.c, with the local peers in d->peers): join the node's
 * namespaces, starting the node's keeper if first. exec_in_place: exec the
 * command in this process (returns only on failure); else fork it, wait, and
 * return 0 with its *status. inst: enter those namespaces (an instance's)
 * instead of the node's container of the job (no keeper), or NULL. */
int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     const struct ns_source *inst, bool exec_in_place, int *status,
	     mpictr_err **err);
/* As join_run, for a launcher that execs the command itself (the SPANK
 * plugin): join the container and return, this process in its namespaces
 * and start directory without capabilities; *env the command's
 * environment, *program as container_enter_task. */
int join_enter(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct ns_source *inst, char ***env, char **program,
	       mpictr_err **err);

#endif
