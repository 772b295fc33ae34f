/* node_daemon.h - node daemon mode's pieces (see node_daemon.c). */
#ifndef MPICTR_DAEMON_H
#define MPICTR_DAEMON_H

#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "pmi/pmi.h"

/* Check the step shape (one srun task per node) and fork the upstream
 * agent into *up: before any PMIx call in this process and while it is
 * single-threaded. */
int daemon_start(const struct mpictr_config *cfg, struct pmi_upstream **up,
		 mpictr_err **err);
/* The global job of nranks local ranks per node of the step: node i runs
 * global ranks i*nranks .. i*nranks+nranks-1; *rank_base is this node's
 * first. */
int daemon_job(const struct mpictr_config *cfg, struct pmi_upstream *up,
	       int nranks, uid_t uid, gid_t gid, struct pmi_job *pj,
	       uint32_t *rank_base, mpictr_err **err);
/* This node failed before or while starting its ranks: end the step on
 * every node (no-op when up is NULL). */
void daemon_fail(struct pmi_upstream *up, mpictr_err *const *err);

#endif
