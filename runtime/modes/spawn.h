/* spawn.h - the launch supervisor's side of MPI dynamic processes
 * (MPI_Comm_spawn through the PMIx server): requests arrive on a PMI server
 * thread, are queued, and are served from the supervisor's poll loop, which
 * starts the new processes in the job's namespaces and supervises them like
 * ranks. See docs/pmi.md, "Dynamic processes". */
#ifndef MPICTR_SPAWN_H
#define MPICTR_SPAWN_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "plan/plan.h"
#include "pmi/pmi.h"

/* What a spawned process needs of the launch (not owned). */
struct spawn_ctx {
	const struct plan *plan;
	const sigset_t *old_mask; /* restored in the child */
	pid_t supervisor;
	int userns, mntns; /* the holder's namespaces */
	bool tag_output;
	int first_local; /* plan_rank_env index of the first spawned process */
	struct pmi_server *pmi;
	uint32_t universe;
	/* --no-oversubscribe: spawns may not pass universe; otherwise it is
	 * advice, and SPAWN_MAX_LIVE bounds what is alive. */
	bool universe_hard;
};

/* Most spawned processes alive at once without a hard universe (each
 * holds a poll slot of the supervisor's). */
#define SPAWN_MAX_LIVE 2048

struct spawner;

/* Take spawns from ctx->pmi from now on. */
int spawner_start(const struct spawn_ctx *ctx, struct spawner **out,
		  mpictr_err **err);
/* Poll entries: the request queue, then the tagged output of spawned
 * processes; at most max. Returns the number filled. */
size_t spawner_pollfds(const struct spawner *s, struct pollfd *pfd, size_t max);
/* After poll: serve the requests (ranks_alive: ranks still running, for
 * the universe check; ending: the job is being ended, refuse), copy
 * output. */
void spawner_poll(struct spawner *s, const struct pollfd *pfd, size_t n,
		  uint32_t ranks_alive, bool ending);
/* Was pid a spawned process? Then its status is recorded and the exit code
 * that counts is returned: its own, or 1 when it exited 0 after
 * connecting to the PMIx server without finalizing (the processes it
 * talked to could wait for it forever, as for ranks). -1: not ours. */
int spawner_reaped(struct spawner *s, pid_t pid, int status);
/* Spawned processes still running. */
uint32_t spawner_live(const struct spawner *s);
void spawner_signal(struct spawner *s, int sig);
/* Refuse queued requests, SIGKILL and reap what runs, drain output, free.
 * NULL ok. */
void spawner_stop(struct spawner *s);

/* Copy what is readable on *fd to stdout, each line prefixed with tag;
 * closes and sets *fd to -1 at EOF. *midline: the last byte was not \n. */
void output_pump(int *fd, bool *midline, const char *tag);

#endif
