/* launch.h - launch mode, the single process and node daemon mode (see
 * launch.c); run.c calls it. */
#ifndef MPICTR_LAUNCH_H
#define MPICTR_LAUNCH_H

#include "config/config.h"
#include "container/ns.h"
#include "plan/mode.h"

/* Run cfg in d->mode (RUN_SINGLE, RUN_LAUNCH or RUN_NODE_DAEMON) to
 * completion: 0 with *status (the command's, or the first failing
 * rank's), -1 with *err. inst: the instance the ranks join instead of a
 * holder of their own (its directory holds the job directory), or NULL. */
int launch_run(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct ns_source *inst, int *status, mpictr_err **err);

#endif
