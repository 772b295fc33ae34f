/* holder.h - the namespace holder, shared by launch mode, node daemon mode
 * and join mode's keeper (see holder.c). */
#ifndef MPICTR_HOLDER_H
#define MPICTR_HOLDER_H

#include <signal.h>
#include <sys/types.h>

#include "plan/plan.h"

/* The process that owns a job's namespaces. */
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

#endif
