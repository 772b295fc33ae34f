/* join.h - Slurm join mode (srun ... mpictr IMAGE CMD): see join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <stdbool.h>

#include "config.h"

/* True when cfg runs one task of an srun step that should join the node's
 * shared namespaces (not with -n, --no-share or MPICTR_JOIN=0). */
bool join_wanted(const struct mpictr_config *cfg);
/* Join (starting the node's keeper if first) and exec in place. Returns
 * only on failure. */
int join_run(const struct mpictr_config *cfg, mpictr_err **err);

#endif
