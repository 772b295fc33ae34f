/* pmix_dyn.h - the PMIx host upcalls for dynamic processes and the name
 * service (pmix_dyn.c), which the server (pmix_server.c) installs. */
#ifndef MPICTR_PMIX_DYN_H
#define MPICTR_PMIX_DYN_H

#include <pmix.h>
#include <pmix_server.h>

#include "pmi/pmi_internal.h"

/* ---- pmix_dyn.c ---- */
/* Before the first client: remember the hooks, the first job and the
 * server's tmpdir (spawned jobs are registered below it). */
void pmix_dyn_start(const struct pmi_hooks *hooks, const struct pmi_job *job,
		    const char *tmpdir);
/* Answer pending lookups, deregister spawned namespaces, drop the store. */
void pmix_dyn_stop(void);
pmix_status_t pmix_dyn_publish(const pmix_proc_t *proc,
			       const pmix_info_t info[], size_t ninfo,
			       pmix_op_cbfunc_t cbfunc, void *cbdata);
pmix_status_t pmix_dyn_lookup(const pmix_proc_t *proc, char **keys,
			      const pmix_info_t info[], size_t ninfo,
			      pmix_lookup_cbfunc_t cbfunc, void *cbdata);
pmix_status_t pmix_dyn_unpublish(const pmix_proc_t *proc, char **keys,
				 const pmix_info_t info[], size_t ninfo,
				 pmix_op_cbfunc_t cbfunc, void *cbdata);
pmix_status_t pmix_dyn_spawn(const pmix_proc_t *proc,
			     const pmix_info_t job_info[], size_t ninfo,
			     const pmix_app_t apps[], size_t napps,
			     pmix_spawn_cbfunc_t cbfunc, void *cbdata);
pmix_status_t pmix_dyn_connect(const pmix_proc_t procs[], size_t nprocs,
			       const pmix_info_t info[], size_t ninfo,
			       pmix_op_cbfunc_t cbfunc, void *cbdata);
pmix_status_t pmix_dyn_disconnect(const pmix_proc_t procs[], size_t nprocs,
				  const pmix_info_t info[], size_t ninfo,
				  pmix_op_cbfunc_t cbfunc, void *cbdata);

#endif
