/* prepare.c - gather the host facts, then build the plan (prepare.h). */
#include <string.h>

#include "plan/prepare.h"

unsigned plan_facts_flags(const struct run_decision *d)
{
	/* In join mode the holder decides the verbs providers and the MPI
	 * ABI check on the mounted image: a joining task reads none of it.
	 * Launch mode's default universe is the cores. */
	return (d->mode == RUN_JOIN ? 0 : HOST_FACTS_DECIDE) |
	       (d->mode == RUN_LAUNCH ? HOST_FACTS_CORES : 0);
}

int plan_prepare(const struct mpictr_config *cfg, const struct run_decision *d,
		 const char *run_dir, const struct host_given *given,
		 struct plan *p, mpictr_err **err)
{
	struct host_facts f;
	int rc = -1;

	memset(p, 0, sizeof(*p));
	if (host_facts_gather(cfg, plan_facts_flags(d), given, &f, err) == 0)
		rc = plan_build(cfg, d, &f, run_dir, p, err);
	host_facts_free(&f);
	return rc;
}
