/* mode.c - the one mode decision: from the configuration and the
 * launcher's environment, made once before anything runs.
 *
 *   -n N, under srun --mpi=pmix (a step, PMIX_NAMESPACE, a server URI),
 *        MPICTR_NODE_DAEMON not 0                       -> node daemon
 *   -n N otherwise                                      -> launch
 *   no -n, started by a launcher that starts one process
 *        per rank (launcher.c: the site override, Open MPI,
 *        Hydra, Flux, jsrun, PALS, a validated Slurm step,
 *        ALPS), not --no-share, MPICTR_JOIN not 0         -> join
 *   no -n otherwise (no launcher, or only a bare PMI or
 *        PMIx server whose peers cannot be told)        -> single
 *
 * The launcher is detected once, here, in the rank's own process
 * (launcher_detect(), docs/launchers.md); join mode takes its key, local
 * rank and local size from the decision.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "plan/mode.h"
#include "sched/slurm.h"
#include "common/util.h"

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

bool run_launcher_joins(enum launcher_rule rule)
{
	switch (rule) {
	case LAUNCHER_EXPLICIT:
	case LAUNCHER_OPENMPI:
	case LAUNCHER_HYDRA:
	case LAUNCHER_FLUX:
	case LAUNCHER_JSM:
	case LAUNCHER_PALS:
	case LAUNCHER_SLURM:
	case LAUNCHER_ALPS:
	/* A bare PMIx server (its namespace and URI name the job) or a bare
	 * PMI launcher (its process is the ranks' parent): no local size,
	 * so the keeper counts its members (docs/launchers.md). */
	case LAUNCHER_PMIX:
	case LAUNCHER_PMI:
		return true;
	default:
		/* No launcher at all: one process, one container. */
		return false;
	}
}

static bool join_wanted(const struct mpictr_config *cfg,
			const struct run_decision *d)
{
	return !cfg->no_share && !turned_off(cfg->host_env, "MPICTR_JOIN") &&
	       run_launcher_joins(d->peers.rule);
}

static void decide(const struct mpictr_config *cfg, int nranks,
		   const struct launcher_proc *proc, struct run_decision *d)
{
	char *const *env = cfg->host_env;
	mpictr_err *e = NULL;

	memset(d, 0, sizeof(*d));
	d->nranks = nranks;
	if (launcher_detect(env, proc ? proc : &launcher_proc_host, &d->peers,
			    &e) < 0)
		d->launcher_err = e;
	if (nranks > 0)
		d->mode = daemon_wanted(cfg) ? RUN_NODE_DAEMON : RUN_LAUNCH;
	else
		d->mode = join_wanted(cfg, d) ? RUN_JOIN : RUN_SINGLE;
	/* A detection error matters only where its answer would be used. */
	if (d->launcher_err && d->mode != RUN_JOIN) {
		mpictr_err_free(d->launcher_err);
		d->launcher_err = NULL;
	}
	d->outer_pmi = run_env_has_pmix_server(env) || env_get(env, "PMI_FD");
	/* Shared unless asked otherwise, or unless this is one rank of a
	 * launcher that will not join the node's namespaces
	 * (MPICTR_JOIN=0). */
	d->shared_ns = !cfg->no_share &&
		       !(nranks == 0 && run_launcher_joins(d->peers.rule) &&
			 turned_off(env, "MPICTR_JOIN"));
}

void run_decide_proc(const struct mpictr_config *cfg,
		     const struct launcher_proc *proc, struct run_decision *d)
{
	decide(cfg, cfg->nranks, proc, d);
}

void run_decide(const struct mpictr_config *cfg, struct run_decision *d)
{
	decide(cfg, cfg->nranks, NULL, d);
}

void run_decide_ranks(const struct mpictr_config *cfg, int nranks,
		      struct run_decision *d)
{
	decide(cfg, nranks, NULL, d);
}

void run_decision_free(struct run_decision *d)
{
	launch_peers_free(&d->peers);
	mpictr_err_free(d->launcher_err);
	d->launcher_err = NULL;
}

char *run_describe(const struct run_decision *d)
{
	cleanup_free char *l = launcher_describe(&d->peers);

	if (d->mode == RUN_JOIN && d->peers.local_size == LAUNCHER_UNKNOWN)
		return xasprintf("mode join; %s; the node's container lives "
				 "while it has members, plus %d ms after the "
				 "last one left (a linger for late arrivals)",
				 l, RUN_JOIN_LINGER_MS);
	return xasprintf("mode %s; %s", run_mode_name(d->mode), l);
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
