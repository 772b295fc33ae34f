/* join.h - join mode (srun, mpirun, mpiexec ... mpictr IMAGE CMD): see
 * join.c. */
#ifndef MPICTR_JOIN_H
#define MPICTR_JOIN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "modes/instance.h"
#include "plan/mode.h"
#include "plan/plan.h"

/* Run cfg as one rank started by a launcher (d->mode == RUN_JOIN, decided
 * by mode.c, with the local peers in d->peers): join the node's
 * namespaces, starting the node's keeper if first. exec_in_place: exec the
 * command in this process (returns only on failure); else fork it, wait, and
 * return 0 with its *status. inst: enter that instance instead of the
 * node's container of the job (no keeper), or NULL. */
int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     const struct instance_attach *inst, bool exec_in_place,
	     int *status, mpictr_err **err);
/* As join_run, for a launcher that execs the command itself (the SPANK
 * plugin): join the container and return, this process in its namespaces
 * and start directory without capabilities; *env the command's
 * environment, *program as container_enter_task. */
int join_enter(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct instance_attach *inst, char ***env, char **program,
	       mpictr_err **err);
/* Digest of what in plan p decides the container (image, mounts, devices,
 * identity, injected MPI), not the per-task command, environment and start
 * directory: tasks whose digests differ never share a container. */
uint64_t join_plan_digest(const struct plan *p);
/* Local tasks of one job on one node, at most. */
#define JOIN_MAX_TASKS 4096

/* The keeper's verdict on what a joining task claims. */
enum join_refusal {
	JOIN_OK = 0,
	JOIN_DUP_RANK = 1,   /* a = the local rank */
	JOIN_SIZE_DIFF = 2,  /* a = the keeper's size, b = the claimed one */
	JOIN_RANK_RANGE = 3, /* a = the rank, b = the size */
	JOIN_TOO_MANY = 4,   /* a = the size */
};

/* Check a task's claim (local rank, local size; LAUNCHER_UNKNOWN when not
 * given) against the job's local size on this node (the first task's;
 * LAUNCHER_UNKNOWN: counting mode), the nranks local ranks claimed so far
 * and the joined tasks. Returns JOIN_OK or the refusal, with its values
 * in *a and *b. Pure. */
int join_check_claim(uint32_t size, const uint32_t *ranks, uint32_t nranks,
		     uint32_t joined, uint32_t rank, uint32_t claimed_size,
		     uint32_t *a, uint32_t *b);
/* SipHash-2-4 of data under key (names only the user can predict). */
uint64_t join_siphash(const uint8_t key[16], const void *data, size_t len);

/* ---- the keeper, shared with instances (instance.c) ----------------------
 *
 * A keeper is a detached process (double fork, own session) that owns a
 * namespace holder and serves its namespace fds on a Unix socket in the
 * user's private rendezvous directory; a sweeper child removes its files
 * when it is killed. Join mode's keeper counts the tasks of one job in and
 * out; an instance's lives until it is stopped (keeper_life). */
struct holder;

/* What a keeper serves once its holder is up. */
struct keeper_serve {
	int listen_fd;		  /* the socket's; the keeper closes it */
	struct holder *h;	  /* the running holder */
	const sigset_t *waitmask; /* pass to ppoll: SIGTERM unblocked */
};

/* The lifetime of a keeper that is not join mode's (NULL hooks: none). */
struct keeper_life {
	/* In the keeper, before the holder starts: -1 with *err fails the
	 * start (relayed to the starter). */
	int (*setup)(void *data, mpictr_err **err);
	/* Serve until the end; return to tear down (holder, socket, lock). */
	void (*serve)(void *data, struct keeper_serve *ks);
	/* After the holder, the sweeper, the socket, the lock and the
	 * directory are gone, just before the keeper exits. */
	void (*done)(void *data);
	void *data;
};

/* A keeper to start. */
struct keeper_spec {
	const struct plan *plan; /* its holder's */
	int nworkers;		 /* FUSE workers */
	const char *sock_path, *lock_path;
	/* A directory of the keeper's, removed with it (or by the sweeper
	 * when it is killed), or NULL. */
	const char *dir;
	/* With kill_members, the sweeper of a killed keeper also kills every
	 * process left in the holder's user namespace. */
	bool kill_members;
	const struct keeper_life *life;
};

/* Start a keeper detached (its lock held: lock_fd, flock'ed by the
 * caller, stays open in it) and wait until it serves. */
int keeper_start(const struct keeper_spec *ks, int lock_fd, mpictr_err **err);
/* True once the keeper got SIGTERM (it ends cleanly). */
bool keeper_stopping(void);
/* The user's private rendezvous directory on this node (0700, checked;
 * a private fallback when another user took the name). notice: log the
 * fallback. *out: caller frees. */
int keeper_dir(char *const *env, char **out, bool notice, mpictr_err **err);
/* Connect to a keeper's socket and check that it runs as our uid: the fd,
 * or -1 with errno (EPERM: another uid). */
int keeper_connect(const char *path);
/* Send len bytes of buf with nfds (0..3) descriptors (SCM_RIGHTS): 0 or
 * -1 with errno. */
int keeper_send(int sock, const void *buf, size_t len, const int *fds,
		int nfds);
/* Receive len bytes into buf and up to nfds (0..3) descriptors
 * (close-on-exec; -1 where none came): recvmsg's result. */
ssize_t keeper_recv(int sock, void *buf, size_t len, int *fds, int nfds);
/* True when lock_fd is still the lock file at path (not unlinked). */
bool keeper_lock_current(int lock_fd, const char *path);

#endif
