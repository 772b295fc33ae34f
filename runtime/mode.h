/* mode.h - which mode a run is in, decided once (see mode.c). */
#ifndef MPICTR_MODE_H
#define MPICTR_MODE_H

#include <stdbool.h>

#include "config.h"

enum run_mode {
	RUN_SINGLE,	 /* one process, no PMI server of ours */
	RUN_LAUNCH,	 /* -n N: every rank local, our PMI servers */
	RUN_NODE_DAEMON, /* -n N under srun --mpi=pmix, one task per node */
	RUN_JOIN,	 /* one srun task joining the node's container */
};

/* What the mode decision hands to the code that runs it and to the plan:
 * nothing downstream looks at the launcher's environment again. */
struct run_decision {
	enum run_mode mode;
	bool outer_pmi; /* a launcher's PMI server serves this process */
	bool shared_ns; /* every local rank in one set of namespaces */
};

/* Decide from cfg (its options and host environment). Pure. */
void run_decide(const struct mpictr_config *cfg, struct run_decision *d);
/* True in the modes where mpictr starts the ranks and serves PMI. */
bool run_mode_serves_pmi(enum run_mode mode);
/* "single", "launch", "node-daemon", "join". */
const char *run_mode_name(enum run_mode mode);
/* True when env names a launcher's PMIx server (PMIX_SERVER_URI*): the
 * one list of the versions we know. */
bool run_env_has_pmix_server(char *const *env);

#endif
