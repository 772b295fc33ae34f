/* keeper.h - the keeper: one detached process per node container that
 * owns its namespace holder and serves the namespace fds on a Unix socket,
 * for join mode (join.c: the tasks of one job) and instances (instance.c).
 * See keeper.c. */
#ifndef MPICTR_KEEPER_H
#define MPICTR_KEEPER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "plan/plan.h"

/* Local tasks of one job on one node, at most. */
#define KEEPER_MAX_TASKS 4096

/* The keeper's verdict on what a joining task claims. */
enum keeper_refusal {
	KEEPER_OK = 0,
	KEEPER_DUP_RANK = 1,   /* a = the local rank */
	KEEPER_SIZE_DIFF = 2,  /* a = the keeper's size, b = the claimed one */
	KEEPER_RANK_RANGE = 3, /* a = the rank, b = the size */
	KEEPER_TOO_MANY = 4,   /* a = the size */
};

/* Check a task's claim (local rank, local size; LAUNCHER_UNKNOWN when not
 * given) against the job's local size on this node (the first task's;
 * LAUNCHER_UNKNOWN: counting mode), the nranks local ranks claimed so far
 * and the joined tasks. Returns KEEPER_OK or the refusal, with its values
 * in *a and *b. Pure. */
int keeper_check_claim(uint32_t size, const uint32_t *ranks, uint32_t nranks,
		       uint32_t joined, uint32_t rank, uint32_t claimed_size,
		       uint32_t *a, uint32_t *b);

/* ---- the keeper process ---------------------------------------------------
 *
 * A keeper is a detached process (double fork, own session) that owns a
 * namespace holder and serves its namespace fds on a Unix socket in the
 * user's private rendezvous directory (rendezvous.h); a sweeper child
 * removes its files when it is killed. Join mode's keeper counts the tasks
 * of one job in and out; an instance's lives until it is stopped
 * (keeper_life). */
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
	/* NULL: join mode's keeper, serving JOIN (wire.h, keeper_join) to the
	 * tasks of one job: expected of them (the local size;
	 * LAUNCHER_UNKNOWN: counting mode), digest sent to each
	 * (rendezvous_plan_digest of plan). */
	const struct keeper_life *life;
	uint32_t expected;
	uint64_t digest;
};

/* Start a keeper detached (its lock held: lock_fd, flock'ed by the
 * caller, stays open in it) and wait until it serves. */
int keeper_start(const struct keeper_spec *ks, int lock_fd, mpictr_err **err);
/* True once the keeper got SIGTERM (it ends cleanly). */
bool keeper_stopping(void);
/* True when lock_fd is still the lock file at path (not unlinked). */
bool keeper_lock_current(int lock_fd, const char *path);

/* ---- the socket ---------------------------------------------------------- */

/* Connect to a keeper's socket and check that it runs as our uid: the fd,
 * or -1 with errno (EPERM: another uid). */
int keeper_connect(const char *path);

/* ---- join mode's JOIN, the task's side ------------------------------------
 *
 * One request, one reply (wire.h): the task sends its claim, the keeper
 * checks it (keeper_check_claim) and answers its verdict, its plan's
 * digest and UCX answer, and the namespace fds only when the verdict is
 * KEEPER_OK. */

struct keeper_verdict {
	int32_t status; /* a keeper_refusal */
	uint32_t a, b;	/* its values */
};

/* What the keeper answers. */
struct keeper_answer {
	struct keeper_verdict v;
	uint64_t digest; /* spec's digest */
	bool ucx_known;
	char *ucx; /* its UCX answer when ucx_known, or NULL (caller frees) */
	/* The image's facts as the keeper probed them, when image_known
	 * (caller releases with image_info_free). */
	bool image_known;
	struct image_info image;
};

/* Send the claim and receive the answer into *a, with *userns and *mntns
 * when a->v.status is KEEPER_OK (else -1): 0; 1: closed unanswered (an
 * exiting keeper); -1: error. */
int keeper_join(int sock, uint32_t local_rank, uint32_t local_size, int *userns,
		int *mntns, struct keeper_answer *a, mpictr_err **err);

#endif
