/* pmi_internal.h - what pmi/server.c (the glue) needs from the PMIx adapter
 * (pmi/pmix_server.c with pmix_register.c and pmix_dyn.c, in the pmix
 * plugin) and the PMI-1 service
 * (pmi/pmi1_server.c). Both report rank events to the glue, which applies
 * the "no rank waits forever" policy. */
#ifndef MPICTR_PMI_INTERNAL_H
#define MPICTR_PMI_INTERNAL_H

#include "pmi/pmi.h"

enum pmi_rank_ev {
	RANK_EV_CONNECTED, /* PMIx client connected / PMI-1 cmd=init */
	RANK_EV_FINALIZED, /* PMIx_Finalize / PMI-1 cmd=finalize */
	RANK_EV_CLOSED,	   /* PMI-1 socket closed (EOF or dropped) */
};

struct pmi_hooks {
	/* rank: global rank. May be called from any server thread. */
	void (*rank_event)(void *ctx, uint32_t rank, enum pmi_rank_ev ev);
	void (*abort)(void *ctx, int exit_code, const char *msg);
	/* Multi-node hook (NULL on a single node): allgather this node's
	 * fence contribution with the other nodes, then call done() once,
	 * from any thread, with the concatenation of every node's bytes
	 * (malloc'ed; done takes it). Returns 0, or -1 when it cannot. */
	int (*upstream_fence)(void *ctx, const char *data, size_t n,
			      void (*done)(void *arg, int status, char *all,
					   size_t len),
			      void *arg);
	/* A client's PMIx_Spawn (the hook takes sp), from the PMIx thread;
	 * -1 when the launcher takes no spawns. */
	int (*spawn)(void *ctx, struct pmi_spawn *sp);
	/* rank_event for a process of another namespace (a spawned one). */
	void (*proc_event)(void *ctx, const char *nspace, uint32_t rank,
			   enum pmi_rank_ev ev);
	void *ctx;
};

/* PMIX_* (except PMIX_MCA_*) and the PMI-1 variables: a rank or a
 * spawned process must not inherit them from elsewhere. kv: NAME=VALUE or
 * NAME. (spawnreq.c, pure) */
bool pmi_var_reserved(const char *kv);

/* ---- PMIx adapter (pmix_server.c) ---- */
/* PMIx_server_init + register nspace and local clients. tmpdir exists and is
 * private. One per process. */
int pmi_pmix_start(const struct pmi_job *job, const char *tmpdir,
		   const struct pmi_hooks *hooks, mpictr_err **err);
/* PMIx_server_setup_fork output for `rank`, merged into *env. */
int pmi_pmix_rank_env(uint32_t rank, char ***env, mpictr_err **err);
/* Deregister and finalize; safe when start failed half-way. */
void pmi_pmix_stop(void);
/* Register the spawned job (its namespace: job->nspace, copied to
 * sp->nspace) and its processes (pmix_dyn.c). */
int pmi_pmix_spawn_register(const struct pmi_job *job, struct pmi_spawn *sp,
			    mpictr_err **err);
/* PMIx_server_setup_fork output for (nspace, rank), merged into *env. */
int pmi_pmix_spawn_env(const char *nspace, uint32_t rank, char ***env,
		       mpictr_err **err);
/* Answer the spawning client; a failed spawn's namespace is deregistered.
 * Does not free sp. */
void pmi_pmix_spawn_done(struct pmi_spawn *sp, bool ok);

/* ---- PMI-1 service (pmi1_server.c) ---- */
/* The table of the "pmix" plugin (runtime/common/plugin.h): pmi/pmix_server.c
 * and pmi/upstream.c, the only users of libpmix; pmi/pmix_stub.c forwards the
 * functions of pmi.h and the three above to it. */
struct pmix_plugin {
	int (*pmix_start)(const struct pmi_job *job, const char *tmpdir,
			  const struct pmi_hooks *hooks, mpictr_err **err);
	int (*pmix_rank_env)(uint32_t rank, char ***env, mpictr_err **err);
	void (*pmix_stop)(void);
	int (*pmix_spawn_register)(const struct pmi_job *job,
				   struct pmi_spawn *sp, mpictr_err **err);
	int (*pmix_spawn_env)(const char *nspace, uint32_t rank, char ***env,
			      mpictr_err **err);
	void (*pmix_spawn_done)(struct pmi_spawn *sp, bool ok);
	const char *(*library_version)(void);
	int (*upstream_start)(struct pmi_upstream **out, mpictr_err **err);
	uint32_t (*upstream_rank)(const struct pmi_upstream *u);
	uint32_t (*upstream_size)(const struct pmi_upstream *u);
	const char *(*upstream_step_dir)(const struct pmi_upstream *u);
	int (*upstream_attach)(struct pmi_upstream *u, mpictr_err **err);
	int (*upstream_fence)(struct pmi_upstream *u, const char *data,
			      size_t n, pmi_upstream_done_fn done, void *arg);
	void (*upstream_abort)(struct pmi_upstream *u, int code,
			       const char *msg);
	void (*upstream_detach)(struct pmi_upstream *u);
	void (*upstream_stop)(struct pmi_upstream *u);
};

struct pmi1_service;
/* One socketpair per local rank, a thread polling the server ends. */
int pmi1_service_start(const struct pmi_job *job, const struct pmi_hooks *hooks,
		       struct pmi1_service **out, mpictr_err **err);
/* The child end of local rank `rank`'s socketpair (FD_CLOEXEC), or -1 with
 * *err when the rank is unknown or was already forked. */
int pmi1_service_child_fd(struct pmi1_service *s, uint32_t rank,
			  mpictr_err **err);
void pmi1_service_forked(struct pmi1_service *s, uint32_t rank);
/* Number of ranks waiting in a PMI-1 barrier right now. */
uint32_t pmi1_service_barrier_waiting(struct pmi1_service *s);
void pmi1_service_stop(struct pmi1_service *s);

#endif
