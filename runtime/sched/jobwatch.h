/* jobwatch.h - follow a Slurm job's life from a process outside its steps
 * (an instance's keeper), under any proctrack: through a pidfd on the
 * job's extern or batch slurmstepd on this node when one runs here (they
 * live as long as the job on the node), else by asking Slurm for the
 * job's state (squeue) every JOB_WATCH_POLL_S seconds. See jobwatch.c.
 */
#ifndef MPICTR_JOBWATCH_H
#define MPICTR_JOBWATCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/util.h"

#define JOB_WATCH_POLL_S 5   /* between two queries */
#define JOB_WATCH_QUERY_S 30 /* a query that takes longer failed */
/* Queries that fail (slurmctld unreachable, squeue killed) end the watch
 * once they failed for this long without an answer in between. */
#define JOB_WATCH_UNREACHABLE_S 120

struct job_watch {
	char *job;
	int stepd_fd; /* pidfd of the job's slurmstepd, or -1: polling */
	pid_t stepd;
	char *squeue; /* polling: the program */
	pid_t query;  /* the squeue running now, or 0 */
	int query_fd; /* its output */
	struct strbuf out;
	long query_ms, next_ms; /* when it started; when the next starts */
	long failing_ms;	/* since when queries fail; 0: they answer */
};

/* The job's extern step's slurmstepd on this node, else its batch step's
 * (found by their process titles, "slurmstepd: [JOB.extern]", and only
 * a process whose every uid is root's: no other user can forge one), or
 * 0. */
pid_t job_stepd_find(const char *job);
/* The program job_watch_start asks Slurm with, found on env's PATH, or
 * NULL. Caller frees. */
char *job_watch_program(char *const *env);
/* Start watching job: its slurmstepd when job_stepd_find finds one, else
 * polling squeue (the program at squeue; its environment, SLURM_CONF
 * included, is the caller's). A first query is made at once: -1 with
 * *err when squeue cannot run, or when the job is over or unknown. */
int job_watch_start(struct job_watch *w, const char *job, const char *squeue,
		    mpictr_err **err);
/* The descriptor to poll for POLLIN (-1: none now), and how long to wait
 * at most before calling job_watch_over (ms, -1: no limit). */
int job_watch_fd(const struct job_watch *w);
long job_watch_wait_ms(const struct job_watch *w);
/* After a poll (revents: the descriptor's, 0 on a timeout): true once the
 * job is over (or Slurm could not be reached for JOB_WATCH_UNREACHABLE_S). */
bool job_watch_over(struct job_watch *w, short revents);
void job_watch_free(struct job_watch *w);

#endif
