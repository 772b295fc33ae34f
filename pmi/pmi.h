/* pmi.h - mpictr's PMI servers, as the launcher sees them: the job description
 * (plain data, pure) and one server object that runs both a PMIx server
 * (Open MPI, PMIx applications) and a PMI-1 "simple" wire server (MPICH).
 *
 * Only the pmix plugin's files (pmi/pmix_server.c, pmix_register.c,
 * pmix_dyn.c, upstream.c) include the PMIx headers; nothing here depends on
 * them. See docs/pmi.md for the keys and the environment each rank gets.
 */
#ifndef MPICTR_PMI_H
#define MPICTR_PMI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* Upper bound on ranks in one job (PMI-1 and PMIx both carry rank lists as
 * text; 1 << 20 keeps every derived string far below any size limit). */
#define PMI_JOB_MAX_RANKS (1u << 20)

struct pmi_job {
	char *nspace;  /* e.g. "mpictr.<pid>.<n>"; also the PMI-1 kvsname */
	uint32_t size; /* ranks in the job (all nodes) */
	uint32_t nnodes, nodeid;
	char **hostnames;      /* nnodes entries */
	uint32_t *rank_node;   /* size entries: node index of each rank */
	uint32_t nlocal;       /* ranks on this node */
	uint32_t *local_ranks; /* nlocal global ranks, ascending */
	uid_t uid;	       /* as the ranks will see themselves */
	gid_t gid;
	uint32_t universe; /* MPI_UNIVERSE_SIZE; 0: size */
};

/* Build the job of a single-node launch of n ranks on this host (namespace
 * "mpictr.<pid>.<counter>", hostname from gethostname()). On failure returns
 * -1 and *job is left zeroed. */
int pmi_job_single_node(uint32_t n, uid_t uid, gid_t gid, struct pmi_job *job,
			mpictr_err **err);
/* Build the job of node `nodeid` among `nnodes` nodes that all run `ppn`
 * ranks (node daemon mode): size nnodes * ppn, ranks in node blocks (node i
 * holds i*ppn .. i*ppn+ppn-1), hostnames[i] the name of node i (copied; at
 * least nnodes entries). Every node computes the same job from the same
 * inputs. On failure returns -1 and *job is left zeroed. */
int pmi_job_node_blocks(const char *nspace, uint32_t nnodes, uint32_t nodeid,
			uint32_t ppn, char *const *hostnames, uid_t uid,
			gid_t gid, struct pmi_job *job, mpictr_err **err);
/* Release what pmi_job_*() allocated; zeroes *job. NULL ok. */
void pmi_job_free(struct pmi_job *job);

/* Pure helpers over a job (all results malloc'ed, caller frees). */
/* "h0,h1,..." (the input of PMIx_generate_regex). */
char *pmi_job_node_list(const struct pmi_job *job);
/* "0,1;2,3" - ranks of each node, nodes in order (PMIx_generate_ppn). */
char *pmi_job_proc_list(const struct pmi_job *job);
/* "r,r,..." - the ranks on this node (PMIX_LOCAL_PEERS). */
char *pmi_job_local_peers(const struct pmi_job *job);
/* MPICH's PMI_process_mapping, "(vector,(first_node,nodes,ppn),...)", or
 * NULL when the ranks are not placed in node blocks (MPICH then falls back
 * to exchanging host names). */
char *pmi_job_process_mapping(const struct pmi_job *job);
/* Index of global rank r among the local ranks, or -1. */
long pmi_job_local_index(const struct pmi_job *job, uint32_t rank);

/* Called from a server thread (or from pmi_server_rank_exited) when the job
 * must end: a rank called MPI_Abort / PMIx_Abort / PMI-1 abort, or a rank
 * left in a way the others can never get past (see docs/pmi.md). Must only
 * do async-safe things in spirit, e.g. write to a pipe. */
typedef void (*pmi_abort_fn)(int exit_code, const char *msg, void *data);

struct pmi_server;

/* ---- node daemon mode: the upstream agent (pmi/upstream.c) ----
 * A child process that is a PMIx client of the launcher above (Slurm's
 * slurmstepd under srun --mpi=pmix) and allgathers fence data between the
 * nodes' servers. See docs/pmi.md, "node daemon mode". */
struct pmi_upstream;
/* Called once per fence, from the upstream thread: status 0 and the
 * concatenation of every node's bytes (malloc'ed, the callee takes it;
 * NULL when empty), or status -1. */
typedef void (*pmi_upstream_done_fn)(void *arg, int status, char *all,
				     size_t len);

/* Fork the agent, which calls PMIx_Init with this process's environment
 * (PMIX_* of the outer launcher), and wait for its hello. Call it before any
 * PMIx call in this process and while single-threaded. On failure -1 with
 * *err (e.g. no PMIx server to connect to). */
int pmi_upstream_start(struct pmi_upstream **out, mpictr_err **err);
/* The agent's rank and the size of its (outer) job: one task per node. */
uint32_t pmi_upstream_rank(const struct pmi_upstream *u);
uint32_t pmi_upstream_size(const struct pmi_upstream *u);
/* The outer launcher's per-step directory (PMIX_NSDIR), removed by it when
 * the step ends; NULL when it has none. Owned by u. */
const char *pmi_upstream_step_dir(const struct pmi_upstream *u);
/* Start the thread that forwards fences (pmi_server_start_upstream does). */
int pmi_upstream_attach(struct pmi_upstream *u, mpictr_err **err);
/* Queue an allgather of data[0..n) (copied); done() is called exactly once
 * when 0 is returned. Fences are served strictly in order. Any thread; never
 * blocks. -1 when the agent is gone or not attached. */
int pmi_upstream_fence(struct pmi_upstream *u, const char *data, size_t n,
		       pmi_upstream_done_fn done, void *arg);
/* Ask the outer launcher to end the whole job (PMIx_Abort in the agent),
 * even while a fence is in flight. Any thread. NULL ok. */
void pmi_upstream_abort(struct pmi_upstream *u, int code, const char *msg);
/* Stop forwarding: queued and in-flight fences fail; pmi_upstream_abort
 * still works afterwards. NULL ok. */
void pmi_upstream_detach(struct pmi_upstream *u);
/* Detach, let the agent finalize and exit (killed after 10 s), free u.
 * NULL ok. */
void pmi_upstream_stop(struct pmi_upstream *u);

/* Start both servers for `job` (copied; the caller may free it afterwards).
 * PMIx_server_init runs with a private tmpdir created under `tmpdir_base`
 * (mkdtemp, mode 0700, owner checked); the namespace and every local rank
 * are registered (blocking) with job->uid/gid; one PMI-1 socketpair per local
 * rank is served by a thread. Inherited PMIX_* variables are removed from
 * this process's environment first (see docs/pmi.md). Only one server may
 * exist in a process at a time (libpmix is process-global). */
int pmi_server_start(const struct pmi_job *job, const char *tmpdir_base,
		     pmi_abort_fn on_abort, void *data, struct pmi_server **out,
		     mpictr_err **err);
/* Same, in node daemon mode: fences that span nodes (PMIx fence_nb and
 * PMI-1 barriers) go through `up` when job->nnodes > 1, and ending the job
 * (on_abort) also asks the outer launcher to end every node. Before
 * returning, the nodes check over `up` that they all registered the same job
 * (namespace, size, one distinct node index each). `up` must outlive the
 * server; NULL behaves as pmi_server_start. */
int pmi_server_start_upstream(const struct pmi_job *job,
			      const char *tmpdir_base, struct pmi_upstream *up,
			      pmi_abort_fn on_abort, void *data,
			      struct pmi_server **out, mpictr_err **err);
/* The private directory of the server (PMIX_SERVER_TMPDIR); owned by s. */
const char *pmi_server_tmpdir(const struct pmi_server *s);
/* Merge the environment of the local rank with global rank `rank` into *env
 * (a NAME=VALUE strv): inherited PMIX_* (except PMIX_MCA_*) and PMI-1
 * variables are dropped, then PMIx_server_setup_fork's output, PMI_FD,
 * PMI_RANK, PMI_SIZE are set, and OMPI_MCA_schizo=ompi unless already set.
 * *child_fd receives the PMI-1 socket the child must inherit as PMI_FD: it
 * is FD_CLOEXEC here, so the child clears that flag (fcntl(fd, F_SETFD, 0))
 * after fork and before exec, keeping the same fd number. */
int pmi_server_rank_env(struct pmi_server *s, uint32_t rank, char ***env,
			int *child_fd, mpictr_err **err);
/* Parent, after fork: close the parent's copy of the child's socket. */
void pmi_server_rank_forked(struct pmi_server *s, uint32_t rank);
/* Tell the server that local rank `rank` exited. If that strands the others
 * (it connected and never finalized; it never connected while others did; a
 * PMI-1 barrier is waiting for it) on_abort is called (exit code 1) from this
 * thread, so no collective waits forever. */
void pmi_server_rank_exited(struct pmi_server *s, uint32_t rank);
/* Deregister, finalize, stop the thread, close every socket and remove the
 * private tmpdir. NULL ok. */
void pmi_server_stop(struct pmi_server *s);

/* ---- dynamic processes (PMIx_Spawn: MPI_Comm_spawn[_multiple]) ----
 * The server turns a client's spawn into a struct pmi_spawn and hands it
 * to the launcher's spawn handler (from a server thread); the launcher
 * registers the new namespace, starts the processes with
 * pmi_server_spawn_env's environment, and answers the client with
 * pmi_server_spawn_done, exactly once, from its own thread. See
 * docs/pmi.md, "Dynamic processes". */
struct pmi_spawn_app {
	char **argv; /* argv[0]: the command */
	char **env;  /* NAME=VALUE the app adds; no PMIx or PMI-1 variables */
	char *cwd;   /* NULL: the launch's start directory */
	uint32_t nprocs;
};

struct pmi_spawn {
	char *parent_nspace; /* the process that called PMIx_Spawn */
	uint32_t parent_rank;
	struct pmi_spawn_app *apps;
	size_t napps;
	uint32_t nprocs; /* over all apps; ranks 0.. app by app */
	char *nspace;	 /* set by pmi_server_spawn_register */
	void *reply;	 /* the server's: where the answer goes */
};

/* Append one app (pure): argv[0] becomes cmd when cmd is given; env
 * entries without '=' and PMIX_* (except PMIX_MCA_*) or PMI-1 variables
 * are dropped. -1 with *err for no command, maxprocs < 1, or a job over
 * PMI_JOB_MAX_RANKS processes. */
int pmi_spawn_add_app(struct pmi_spawn *sp, const char *cmd, char *const *argv,
		      char *const *env, const char *cwd, int maxprocs,
		      mpictr_err **err);
/* May sp start now, with `in_use` processes of the launch alive and room
 * for `universe`? (pure) -1 with *err naming the numbers and the option. */
int pmi_spawn_check(const struct pmi_spawn *sp, uint32_t in_use,
		    uint32_t universe, mpictr_err **err);
/* The app that process `rank` of sp belongs to, and its rank within it. */
size_t pmi_spawn_app_of(const struct pmi_spawn *sp, uint32_t rank,
			uint32_t *app_rank);
/* Free sp and everything it holds (not the reply: see spawn_done). */
void pmi_spawn_free(struct pmi_spawn *sp);

/* Called from a server thread with a request the handler now owns. */
typedef void (*pmi_spawn_fn)(struct pmi_spawn *sp, void *data);
/* Accept spawns (without a handler PMIx_Spawn answers NOT_SUPPORTED).
 * Call before any rank starts. */
void pmi_server_set_spawn_handler(struct pmi_server *s, pmi_spawn_fn fn,
				  void *data);
/* Name the namespace of sp (sp->nspace) and register it and its processes
 * with the server (blocking): job map and info as the first job's, plus the
 * parent's id and PMIX_SPAWNED. */
int pmi_server_spawn_register(struct pmi_server *s, struct pmi_spawn *sp,
			      mpictr_err **err);
/* The environment of process `rank` of sp, merged into *env (as
 * pmi_server_rank_env, without PMI-1, plus the app's variables). */
int pmi_server_spawn_env(struct pmi_server *s, const struct pmi_spawn *sp,
			 uint32_t rank, char ***env, mpictr_err **err);
/* Did process (nspace, rank) of a spawn connect to the PMIx server and
 * not finalize? Asked when it exited: true means the processes it talked
 * to may wait for it forever. */
bool pmi_server_spawned_unfinalized(struct pmi_server *s, const char *nspace,
				    uint32_t rank);
/* Answer the client (err NULL: success, the processes run) and free sp. A
 * failed spawn's namespace is deregistered. */
void pmi_server_spawn_done(struct pmi_server *s, struct pmi_spawn *sp,
			   const mpictr_err *err);

/* ---- a single process (no -n, no launcher): pmi/pmi1_single.c ----
 * A PMI-1 service on 127.0.0.1 where every connection is a one-rank job
 * of its own, so that an MPICH program started however (behind shells,
 * scripts, a runscript) runs as an MPI singleton. Serves only uid's
 * connections. Start it after the last fork made while single-threaded. */
struct pmi_single;
int pmi_single_start(uid_t uid, struct pmi_single **out, mpictr_err **err);
/* PMI_PORT, PMI_RANK=0, PMI_SIZE=1 into *env. */
void pmi_single_env(const struct pmi_single *s, char ***env);
/* Stop the thread, close every connection, free s. NULL ok. */
void pmi_single_stop(struct pmi_single *s);

/* The PMIx library version string (static storage), or NULL. */
const char *pmi_library_version(void);

#endif
