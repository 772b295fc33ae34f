/* join.c - join mode: `srun mpictr IMAGE CMD`, `mpirun -np N mpictr IMAGE
 * CMD`, `mpiexec -n N mpictr ...`: one mpictr per rank, started by the
 * launcher, all local ranks of a job in one container.
 *
 * Who the local peers are comes from the mode decision (mode.c, with
 * launcher.c): the launcher's job key, this task's local rank and the
 * local size, or no size (counting mode).
 *
 * The first task of a node to arrive starts the *keeper* for the node and
 * job: a detached process that starts the namespace holder (holder.c)
 * and serves its namespace fds over a Unix socket in a private directory.
 * Every task, the first included, connects, says which local rank of
 * which local size it is (one JOIN request, wire.c), receives the verdict
 * and, when it joins, the fds (SCM_RIGHTS), joins and execs in place, so the
 * launcher's daemon (slurmstepd, orted or mpirun, hydra_pmi_proxy) stays the
 * rank's parent and PMI_FD, PMI_PORT, the PMIx variables, signals, exit codes
 * and accounting are the launcher's.
 *
 * The keeper checks the claims: a local rank claimed twice, a size that
 * differs from the first task's, a rank not below the size, more tasks
 * than the size. Each is refused with an error that names the launcher
 * and the variables read (the task exits 255 and the launcher ends the
 * job): never a wrong grouping or a wait.
 *
 * Where they meet (the private directory, the keyed name, the digests of
 * what decides the container) is rendezvous.c; the keeper process is
 * keeper.c, the protocol wire.c. This file is the task's side.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "container/exec.h"
#include "container/holder.h"
#include "host/launcher.h"
#include "modes/join.h"
#include "modes/keeper.h"
#include "modes/rendezvous.h"
#include "plan/env.h"
#include "plan/prepare.h"

#define JOIN_WAIT_S 120 /* a task waits this long for its keeper */

/* A task's way to the node's keeper: what it plans from, and where the
 * keeper serves. */
struct join_ctx {
	const struct plan *plan; /* NULL until build_plan() made it */
	/* Only the task that starts the keeper needs the plan before it
	 * joins; the others build theirs after the keeper answered, so that
	 * they leave the CPUs to the keeper while it mounts the image. */
	const struct mpictr_config *cfg;
	const struct run_decision *d;
	struct plan *plan_store;
	uint32_t expected; /* local size; LAUNCHER_UNKNOWN: counting mode */
	char *sock_path, *lock_path;
};

/* The error for a refused claim: what was claimed, what the keeper has,
 * and where the claim came from. */
static int refused(const struct keeper_verdict *m,
		   const struct launch_peers *pe, mpictr_err **err)
{
	cleanup_free char *rd = launcher_read_list(pe);

	switch (m->status) {
	case KEEPER_DUP_RANK:
		err_set(err, 0,
			"local rank %u is claimed by two tasks of this job on "
			"this node",
			m->a);
		break;
	case KEEPER_SIZE_DIFF:
		err_set(err, 0,
			"this task claims a local size of %s%u, the job's "
			"first task on this node claimed %s%u",
			m->b == LAUNCHER_UNKNOWN ? "(unknown) " : "",
			m->b == LAUNCHER_UNKNOWN ? 0 : m->b,
			m->a == LAUNCHER_UNKNOWN ? "(unknown) " : "",
			m->a == LAUNCHER_UNKNOWN ? 0 : m->a);
		break;
	case KEEPER_RANK_RANGE:
		err_set(err, 0, "local rank %u is not below the local size %u",
			m->a, m->b);
		break;
	case KEEPER_TOO_MANY:
		err_set(err, 0,
			"more tasks of this job arrived on this node than its "
			"local size %u",
			m->a);
		break;
	default:
		return err_set(err, 0,
			       "the node's keeper could not set up the "
			       "container (status %d)",
			       (int)m->status);
	}
	err_wrap(err, "%s launcher (%s)", pe->name, rd);
	return err_hint(
	    err, "a launcher inside another that sets no variables of its "
		 "own looks like the outer one: set MPICTR_JOB_KEY, "
		 "MPICTR_LOCAL_RANK and MPICTR_LOCAL_SIZE for it, or run with "
		 "MPICTR_JOIN=0 (docs/launchers.md)");
}

/* given: the keeper's facts (NULL: gather them all here). */
static int build_plan(struct join_ctx *k, const struct host_given *given,
		      mpictr_err **err)
{
	if (k->plan)
		return 0;
	if (plan_prepare(k->cfg, k->d, NULL, given, k->plan_store, err) < 0)
		return -1;
	k->plan = k->plan_store;
	return 0;
}

/* Start the node's keeper, this task holding its lock (lock_fd). */
static int join_start_keeper(struct join_ctx *k, int lock_fd, mpictr_err **err)
{
	struct keeper_spec ks;

	if (build_plan(k, NULL, err) < 0) {
		/* Nothing started: leave no lock file (a waiter on it sees
		 * it unlinked and starts over). */
		unlink(k->lock_path);
		return -1;
	}
	ks = (struct keeper_spec){.plan = k->plan,
				  .nworkers = k->plan->fuse_workers,
				  .sock_path = k->sock_path,
				  .lock_path = k->lock_path,
				  .expected = k->expected,
				  .digest = rendezvous_plan_digest(k->plan)};
	return keeper_start(&ks, lock_fd, err);
}

/* Connect to the node's keeper, starting it if this task is the first. */
static int join_connect(struct join_ctx *k, long deadline, mpictr_err **err)
{
	useconds_t delay = 2000;

	for (;;) {
		int fd = keeper_connect(k->sock_path), lock_fd;

		if (fd >= 0)
			return fd;
		if (errno == EPERM)
			return err_set(err, 0,
				       "the keeper at '%s' does not run as "
				       "uid %u",
				       k->sock_path, (unsigned)getuid());
		if (errno != ENOENT && errno != ECONNREFUSED)
			return err_set(err, errno, "connect to '%s'",
				       k->sock_path);
		lock_fd = open(k->lock_path,
			       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lock_fd < 0)
			return err_set(err, errno, "open '%s'", k->lock_path);
		if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0) {
			if (!keeper_lock_current(lock_fd, k->lock_path)) {
				close(lock_fd); /* an exiting keeper's */
				continue;
			}
			/* We hold the lock: no keeper is starting. One may
			 * have finished starting just before: try again. */
			fd = keeper_connect(k->sock_path);
			if (fd < 0) {
				int rc = join_start_keeper(k, lock_fd, err);

				close(lock_fd);
				if (rc < 0)
					return -1;
				continue;
			}
			close(lock_fd);
			return fd;
		}
		close(lock_fd);
		if (mono_ms() > deadline)
			return err_set(err, ETIMEDOUT,
				       "wait for the node's keeper at '%s'",
				       k->sock_path);
		/* The keeper starts in ~0.1 s: poll often, it is cheap. */
		usleep(delay);
		if (delay < 10000)
			delay *= 2;
	}
}

/* Join the node's keeper: one JOIN request with this task's claim, one
 * answer (keeper_join): the verdict, and the namespace fds when it is
 * KEEPER_OK. A keeper that is exiting may close a connection it accepted
 * into its backlog unanswered: then connect again (the next keeper
 * starts under the lock). */
static int join_fetch(struct join_ctx *k, const struct launch_peers *pe,
		      int *userns, int *mntns, struct keeper_answer *a,
		      mpictr_err **err)
{
	long deadline = mono_ms() + JOIN_WAIT_S * 1000L;

	for (;;) {
		int sock = join_connect(k, deadline, err), rc;

		if (sock < 0)
			return -1;
		rc = keeper_join(sock, pe->local_rank, pe->local_size, userns,
				 mntns, a, err);
		close(sock);
		if (rc == 0 && a->v.status == KEEPER_OK)
			return 0;
		if (rc == 0) {
			free(a->ucx);
			a->ucx = NULL;
			image_info_free(&a->image);
			return refused(&a->v, pe, err);
		}
		if (rc < 0)
			return err_wrap(err, "join the node's keeper at '%s'",
					k->sock_path);
		if (mono_ms() > deadline)
			return err_set(err, ETIMEDOUT,
				       "the node's keeper at '%s' closed the "
				       "connection unanswered",
				       k->sock_path);
		usleep(10000);
	}
}

/* srun --mpi=pmi2 hands the task its PMI wire as an inherited fd named
 * by PMI_FD: it must survive the exec (container_exec marks every other
 * inherited fd close-on-exec). -1 when unset or not an open fd. */
static int pmi_fd(char *const *env)
{
	const char *v = env_get(env, "PMI_FD");
	long fd;

	if (!v || parse_long(v, 3, INT_MAX, &fd) < 0)
		return -1;
	if (fcntl((int)fd, F_GETFD) < 0) {
		log_warn("PMI_FD %ld is not an open descriptor: the program "
			 "will not reach Slurm's PMI server",
			 fd);
		return -1;
	}
	return (int)fd;
}

/* Fork the task's command into the joined container and wait for it (an
 * embedder that did not ask for exec in place gets control back). */
static int join_spawn(const struct plan *p, char **env, int userns, int mntns,
		      int keep_fd, int *status, mpictr_err **err)
{
	sigset_t mask;
	int rfd, wfd, st, rc;
	pid_t self = getpid(), pid;

	sigprocmask(SIG_SETMASK, NULL, &mask);
	pid = proc_fork_relay(&rfd, &wfd, "the task's command", err);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		mpictr_err *e = NULL;

		proc_child_setup(&mask, self);
		container_exec(p, env, userns, mntns, keep_fd, &e);
		relay_send(wfd, e);
		_exit(mpictr_err_exit_code(e));
	}
	rc = relay_recv(rfd, "task's command", err);
	close(rfd);
	if (TEMP_FAILURE_RETRY(waitpid(pid, &st, 0)) < 0)
		return err_set(err, errno, "wait for the task's command");
	if (rc < 0)
		return -1;
	*status = exit_code_of(st);
	return 0;
}

/* The node's container of this task's job: the fds of its namespaces
 * from the node's keeper (started if this task is the first), and the
 * task's plan, checked against the keeper's. */
static int join_node(struct join_ctx *k, const struct mpictr_config *cfg,
		     const struct run_decision *d, int *userns, int *mntns,
		     mpictr_err **err)
{
	const struct launch_peers *pe = &d->peers;
	cleanup_free char *dir = NULL, *key = NULL, *image = NULL;
	struct keeper_answer a = {0};
	int rc;

	/* The key names the image as plan_build will (its real path); an
	 * image that cannot be resolved fails there, with its message. */
	image = realpath(cfg->image, NULL);
	if (!image) {
		if (build_plan(k, NULL, err) < 0)
			return -1;
		image = xstrdup(k->plan_store->image.path);
	}
	if (rendezvous_dir(cfg->host_env, &dir,
			   pe->local_rank == 0 ||
			       pe->local_rank == LAUNCHER_UNKNOWN,
			   err) < 0)
		return -1;
	key = rendezvous_key(pe, image, rendezvous_inputs_digest(cfg));
	k->expected = pe->local_size;
	k->sock_path = xasprintf("%s/%s.sock", dir, key);
	k->lock_path = xasprintf("%s/%s.lock", dir, key);
	if (strlen(k->sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return err_set(err, ENAMETOOLONG, "rendezvous socket '%s'",
			       k->sock_path);
	/* The first task planned before it started the keeper; the others
	 * plan with the keeper's UCX answer instead of asking UCX again, and
	 * with its image facts instead of opening the image (one open per
	 * node, not per task: docs/scale.md). */
	if (join_fetch(k, pe, userns, mntns, &a, err) < 0)
		return -1;
	rc = build_plan(
	    k,
	    &(struct host_given){.ucx_known = a.ucx_known,
				 .ucx_net_devices = a.ucx,
				 .image = a.image_known ? &a.image : NULL},
	    err);
	free(a.ucx);
	image_info_free(&a.image);
	if (rc < 0)
		return -1;
	if (rendezvous_plan_digest(k->plan_store) != a.digest) {
		err_set(err, 0,
			"this task's container would differ from the one the "
			"node's keeper at '%s' set up for the job (mounts, "
			"devices or identity): refusing to join it",
			k->sock_path);
		return err_hint(err, "give every task of the job the same "
				     "options, or run with MPICTR_JOIN=0");
	}
	return 0;
}

/* This task's way into the container: the fds (of an instance, or of the
 * node's container of the job, fetched from the node's keeper) and the
 * task's plan, with its environment in env. */
struct join_task {
	struct plan plan;
	int userns, mntns;
	char **env;
};

static void join_task_free(struct join_task *t)
{
	if (t->userns >= 0)
		close(t->userns);
	if (t->mntns >= 0)
		close(t->mntns);
	strv_free(t->env);
	plan_free(&t->plan); /* zeroed, partly built (on failure) or built */
}

static int join_prepare(const struct mpictr_config *cfg,
			const struct run_decision *d,
			const struct ns_source *inst, struct join_task *t,
			mpictr_err **err)
{
	const struct launch_peers *pe = &d->peers;
	struct join_ctx k = {.cfg = cfg, .d = d, .plan_store = &t->plan};
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->userns = t->mntns = -1;
	if (d->launcher_err) {
		err_set(err, 0, "%s", mpictr_err_message(d->launcher_err));
		err_wrap(err, "join the node's container");
		return err_hint(err, "run with MPICTR_JOIN=0 for one container "
				     "per task (docs/launchers.md)");
	}
	if (pe->local_size != LAUNCHER_UNKNOWN &&
	    pe->local_size > KEEPER_MAX_TASKS) {
		cleanup_free char *rd = launcher_read_list(pe);

		return err_set(err, 0,
			       "%s launcher (%s): %u local tasks: at most %d "
			       "are supported",
			       pe->name, rd, pe->local_size, KEEPER_MAX_TASKS);
	}
	if (inst) {
		/* An instance's tasks enter it: no keeper of their own. */
		t->userns = fcntl(inst->userns, F_DUPFD_CLOEXEC, 0);
		t->mntns = fcntl(inst->mntns, F_DUPFD_CLOEXEC, 0);
		if (t->userns < 0 || t->mntns < 0) {
			err_set(err, errno, "instance '%s'", inst->name);
			goto out;
		}
		if (build_plan(
			&k,
			&(struct host_given){.ucx_known = inst->ucx_known,
					     .ucx_net_devices = inst->ucx},
			err) < 0)
			goto out;
	} else if (join_node(&k, cfg, d, &t->userns, &t->mntns, err) < 0) {
		goto out;
	}
	for (size_t i = 0; t->plan.notices && t->plan.notices[i]; i++)
		log_notice("%s", t->plan.notices[i]);
	t->env = plan_rank_env(&t->plan, t->plan.local_rank);
	if (inst)
		env_instance_pmix(&t->env, inst->holder, inst->name);
	rc = 0;
out:
	free(k.sock_path);
	free(k.lock_path);
	return rc;
}

int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     const struct ns_source *inst, bool exec_in_place, int *status,
	     mpictr_err **err)
{
	struct join_task t;
	int rc = -1;

	if (join_prepare(cfg, d, inst, &t, err) < 0)
		goto out;
	if (exec_in_place) {
		container_exec(&t.plan, t.env, t.userns, t.mntns,
			       pmi_fd(cfg->host_env), err);
		rc = -1; /* only returns on failure */
	} else {
		rc = join_spawn(&t.plan, t.env, t.userns, t.mntns,
				pmi_fd(cfg->host_env), status, err);
	}
out:
	join_task_free(&t);
	return rc;
}

int join_enter(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct ns_source *inst, char ***env, char **program,
	       mpictr_err **err)
{
	struct join_task t;
	int rc = -1;

	if (join_prepare(cfg, d, inst, &t, err) == 0 &&
	    container_enter_task(&t.plan, &t.env, t.userns, t.mntns, program,
				 err) == 0) {
		*env = t.env;
		t.env = NULL;
		rc = 0;
	}
	join_task_free(&t);
	return rc;
}
