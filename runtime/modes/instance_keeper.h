/* instance_keeper.h - the keeper's side of a named instance (see
 * instance.c for the whole picture): the state an instance's keeper
 * serves from, its lifetime hooks for keeper.c, and the "key=value\0"
 * blob both sides exchange over the keeper's wire protocol. Internal to
 * modes/instance*.c.
 */
#ifndef MPICTR_INSTANCE_KEEPER_H
#define MPICTR_INSTANCE_KEEPER_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "common/util.h"
#include "modes/keeper.h"
#include "sched/jobwatch.h"

/* The keeper's state: filled by the starter (instance_start) before
 * keeper_start, owned by the keeper process after the fork. */
struct inst {
	char *name, *image, *job;
	char *spec; /* the JOIN blob (the holder's pid added once known) */
	size_t spec_len;
	time_t started;
	long linger_s;
	pid_t watch_pid;	   /* given by the caller (instance_opts) */
	int watch_fd;		   /* its pidfd */
	char *squeue, *slurm_conf; /* inside a job: to follow it */
	struct job_watch jw;	   /* inside a job, without watch_pid */
	int image_fd;		   /* the image, held open for joiners */
	int stop_fd;	   /* the STOP request's connection, answered in done */
	int stop_grace_ms; /* SIGTERM to SIGKILL when members are ended */
	pid_t holder;	   /* and its user namespace: */
	dev_t ns_dev;
	ino_t ns_ino;
};

/* Point life's hooks at the instance keeper's, serving in. */
void instance_keeper_life(struct inst *in, struct keeper_life *life);

/* Items "key=value\0..." of a blob: append one; the value of key (the
 * index-th), or NULL; that value as a number (0 when missing). */
void inst_blob_put(struct strbuf *sb, const char *key, const char *val);
const char *inst_blob_get(const char *blob, size_t len, const char *key,
			  int index);
long inst_blob_long(const char *blob, size_t len, const char *key);

#endif
