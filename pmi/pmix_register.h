/* pmix_register.h - job registration with the PMIx server (see
 * pmix_register.c). Only the PMIx-using files include it. */
#ifndef MPICTR_PMIX_REGISTER_H
#define MPICTR_PMIX_REGISTER_H

#include <pmix.h>
#include <pmix_server.h>

#include "pmi/pmi_internal.h"

/* Register job (blocking) and its local processes; sp: a spawned job
 * (its parent, PMIX_SPAWNED, app numbers), NULL for the first; tmpdir: the
 * server's (the job's PMIX_NSDIR is made below it). On failure nothing
 * stays registered. */
int pmix_register_job(const struct pmi_job *job, const struct pmi_spawn *sp,
		      const char *tmpdir, mpictr_err **err);
/* PMIx_server_setup_fork of (nspace, rank), merged into *env. */
int pmix_setup_fork(const char *nspace, uint32_t rank, char ***env,
		    mpictr_err **err);
/* Deregister a namespace (waits for libpmix). */
void pmix_deregister_nspace(const char *nspace);

/* -1 with *err "pmix: WHAT: libpmix's text of rc". */
int pmix_fail(mpictr_err **err, pmix_status_t rc, const char *what);

#endif
