/* prepare.h - the plan of a run: gather the host facts (facts.h, all the
 * I/O) and build the plan from them (plan.h, pure). What the run modes
 * call. */
#ifndef MPICTR_PREPARE_H
#define MPICTR_PREPARE_H

#include "config/config.h"
#include "host/facts.h"
#include "plan/mode.h"
#include "plan/plan.h"

/* The host_facts_gather flags the plan of a run in d->mode needs. */
unsigned plan_facts_flags(const struct run_decision *d);
/* Gather the facts (taking those in given, NULL: none), build the plan of
 * cfg for d from them and release them. run_dir: as plan_build. */
int plan_prepare(const struct mpictr_config *cfg, const struct run_decision *d,
		 const char *run_dir, const struct host_given *given,
		 struct plan *p, mpictr_err **err);

#endif
