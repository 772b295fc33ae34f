/* container.h - pieces of the run machinery shared by launch mode
 * (container.c) and Slurm join mode (join.c). */
#ifndef MPICTR_CONTAINER_H
#define MPICTR_CONTAINER_H

#include <signal.h>
#include <sys/types.h>

#include "plan.h"

/* The process that owns a job's namespaces (see container.c). */
struct holder {
	pid_t pid;
	int ctl;    /* closing it tells the holder to unmount and exit */
	int userns; /* open /proc/PID/ns/user */
	int mntns;  /* open /proc/PID/ns/mnt */
};

/* Fork a holder for plan p and wait until its root is assembled. The
 * child restores `mask` and dies with the caller (PDEATHSIG). */
int holder_start(const struct plan *p, int nworkers, const sigset_t *mask,
		 struct holder *h, mpictr_err **err);
/* Close the control pipe and namespace fds, wait for the holder. */
void holder_stop(struct holder *h);
/* Join the namespaces, enter the start directory, drop every capability
 * and exec the plan's command with env; keep_fd (or -1) stays open.
 * Returns only on failure. */
int container_exec(const struct plan *p, char **env, int userns_fd,
		   int mntns_fd, int keep_fd, mpictr_err **err);
/* FUSE worker processes for a job (MPICTR_FUSE_WORKERS overrides). */
int container_fuse_workers(const struct mpictr_config *cfg);
/* Remove a directory tree (no symlinks followed). */
int rm_rf(const char *path);

#endif
