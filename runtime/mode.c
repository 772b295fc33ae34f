/* mode.c - the one mode decision: from the configuration and the
 * launcher's environment, made once before anything runs.
 *
 *   -n N, under srun --mpi=pmix (a step, PMIX_NAMESPACE, a server URI),
 *        MPICTR_NODE_DAEMON not 0                       -> node daemon
 *   -n N otherwise                                      -> launch
 *   no -n, in an srun step, not --no-share, MPICTR_JOIN
 *        not 0                                          -> join
 *   no -n otherwise                                     -> single
 *
 * Launcher detection for hybrid launch (runtime/launcher.c) belongs here:
 * it refines "in an srun step" and "a launcher's PMI server" for other
 * launchers, and nothing else has to change.
 */
#include <string.h>

#include "mode.h"
#include "slurm.h"
#include "util.h"

/* The PMIx server rendezvous variables, newest first. */
static const char *const pmix_server_uris[] = {
    "PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI21", "PMIX_SERVER_URI2",
};

bool run_env_has_pmix_server(char *const *env)
{
	for (size_t i = 0; i < ARRAY_SIZE(pmix_server_uris); i++)
		if (env_get(env, pmix_server_uris[i]))
			return true;
	return false;
}

/* MPICTR_JOIN=0, MPICTR_NODE_DAEMON=0: the user said no. */
static bool turned_off(char *const *env, const char *name)
{
	const char *v = env_get(env, name);

	return v && strcmp(v, "0") == 0;
}

static bool daemon_wanted(const struct mpictr_config *cfg)
{
	char *const *env = cfg->host_env;

	return !turned_off(env, "MPICTR_NODE_DAEMON") && slurm_in_step(env) &&
	       env_get(env, "PMIX_NAMESPACE") && run_env_has_pmix_server(env);
}

static bool join_wanted(const struct mpictr_config *cfg)
{
	return !cfg->no_share && !turned_off(cfg->host_env, "MPICTR_JOIN") &&
	       slurm_in_step(cfg->host_env);
}

void run_decide(const struct mpictr_config *cfg, struct run_decision *d)
{
	char *const *env = cfg->host_env;

	memset(d, 0, sizeof(*d));
	if (cfg->nranks > 0)
		d->mode = daemon_wanted(cfg) ? RUN_NODE_DAEMON : RUN_LAUNCH;
	else
		d->mode = join_wanted(cfg) ? RUN_JOIN : RUN_SINGLE;
	d->outer_pmi = run_env_has_pmix_server(env) || env_get(env, "PMI_FD");
	/* Shared unless asked otherwise, or unless this is one srun task
	 * that will not join the node's namespaces (MPICTR_JOIN=0). */
	d->shared_ns = !cfg->no_share &&
		       !(cfg->nranks == 0 && env_get(env, "SLURM_STEP_ID") &&
			 turned_off(env, "MPICTR_JOIN"));
}

bool run_mode_serves_pmi(enum run_mode mode)
{
	return mode == RUN_LAUNCH || mode == RUN_NODE_DAEMON;
}

const char *run_mode_name(enum run_mode mode)
{
	switch (mode) {
	case RUN_SINGLE:
		return "single";
	case RUN_LAUNCH:
		return "launch";
	case RUN_NODE_DAEMON:
		return "node-daemon";
	case RUN_JOIN:
		return "join";
	default:
		return "?";
	}
}
