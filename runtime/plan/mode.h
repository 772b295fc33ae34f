/* mode.h - which mode a run is in, decided once (see mode.c). */
#ifndef MPICTR_MODE_H
#define MPICTR_MODE_H

#include <stdbool.h>

#include "config/config.h"
#include "host/launcher.h"

enum run_mode {
	RUN_SINGLE,	 /* one process, no PMI server of ours */
	RUN_LAUNCH,	 /* -n N: every rank local, our PMI servers */
	RUN_NODE_DAEMON, /* -n N under srun --mpi=pmix, one task per node */
	RUN_JOIN, /* one task of a launcher joining the node's container */
};

/* Join mode without a local size (counting mode): the node's container
 * lives while it has members, plus this long after the last one left, for
 * late arrivals (docs/launchers.md). */
#define RUN_JOIN_LINGER_MS 2000

/* What the mode decision hands to the code that runs it and to the plan:
 * nothing downstream looks at the launcher's environment again. */
struct run_decision {
	enum run_mode mode;
	/* The ranks asked for (-n; 1 for the MPI singleton that run.c makes
	 * of a single process); 0: a single process. */
	int nranks;
	bool outer_pmi; /* a launcher's PMI server serves this process */
	bool shared_ns; /* every local rank in one set of namespaces */
	/* Who started this process and who its local peers are
	 * (launcher_detect() on the host environment and /proc/self). */
	struct launch_peers peers;
	/* Detection failed for a launcher that starts one process per rank:
	 * join mode reports it (a malformed or contradictory variable is
	 * never guessed around). NULL otherwise. */
	mpictr_err *launcher_err;
};

/* Decide from cfg (its options and host environment) and, where the
 * launcher rules need them, the facts of proc about this process (NULL:
 * launcher_proc_host). Free with run_decision_free(). */
void run_decide_proc(const struct mpictr_config *cfg,
		     const struct launcher_proc *proc, struct run_decision *d);
void run_decide(const struct mpictr_config *cfg, struct run_decision *d);
/* Decide as if cfg asked for nranks ranks (the singleton re-run): cfg is
 * left as it is. */
void run_decide_ranks(const struct mpictr_config *cfg, int nranks,
		      struct run_decision *d);
void run_decision_free(struct run_decision *d);
/* True for the launchers that start one process per rank, whose ranks
 * join one container per node and job (docs/launchers.md). */
bool run_launcher_joins(enum launcher_rule rule);
/* One line for -v and --dry-run: the mode and the launcher decision.
 * Caller frees. */
char *run_describe(const struct run_decision *d);
/* True in the modes where mpictr starts the ranks and serves PMI. */
bool run_mode_serves_pmi(enum run_mode mode);
/* "single", "launch", "node-daemon", "join". */
const char *run_mode_name(enum run_mode mode);
/* True when env names a launcher's PMIx server (PMIX_SERVER_URI*): the
 * one list of the versions we know. */
bool run_env_has_pmix_server(char *const *env);

#endif
