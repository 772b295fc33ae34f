/* keeper.c - the keeper: a detached process that owns a node container's
 * namespace holder (holder.c) and serves its namespace fds on a Unix
 * socket in the user's private rendezvous directory (rendezvous.c). Join
 * mode (join.c) starts one for the tasks of a job on a node; an instance
 * (instance.c) is a keeper with a name and another lifetime (keeper_life)
 * and its own ops. Both speak one protocol (wire.c): one request from
 * the client (op, payload), one reply (status, payload, fds).
 *
 * Join mode's keeper serves JOIN: the request carries the task's claim
 * (local rank, local size), and the keeper checks it: a local rank claimed
 * twice, a size that differs from the first task's, a rank not below the
 * size, more tasks than the size. The reply carries the verdict and its
 * values, the plan's digest and the UCX answer, and the namespace fds only
 * when the claim is accepted. A refusal makes the task name the launcher
 * and the variables read and exit 255 (the launcher ends the job): never
 * a wrong grouping or a wait. A peer that sends no valid request within
 * JOIN_CLAIM_MS gets nothing and is no member. Peers are checked with
 * SO_PEERCRED both ways: another user can never join, nor serve; a
 * process in another container of the user gets nothing. A lock
 * file (flock) elects the task that starts the keeper; a stale socket of a
 * killed keeper is replaced under the same lock.
 *
 * Lifetime: the keeper counts tasks in (accept) and out (pidfd of the
 * peer); it exits when the node's exact count (the launcher's local size)
 * has come and gone, or when every task that came is gone and none
 * arrived for JOIN_IDLE_S (a task that never starts), or when the
 * launcher's daemon that started the tasks is gone. A launcher that gives
 * no local size runs in counting mode: the keeper lives while it has
 * members, plus RUN_JOIN_LINGER_MS after the last one left for late arrivals
 * (the ranks of an MPI job cannot finish MPI_Init without each other, so
 * they overlap). Its holder then unmounts the image and the namespaces
 * disappear.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "common/syscalls.h"
#include "container/holder.h"
#include "host/launcher.h"
#include "modes/keeper.h"
#include "modes/wire.h"
#include "plan/mode.h"

#define JOIN_CLAIM_MS 2000 /* keeper: wait this long for a request */
#define JOIN_IDLE_S 60	   /* keeper: no task left, none arriving */

/* A keeper in its process, detached from the task that started it
 * (keeper_start, then keeper_main): its spec, and what it holds. */
struct keeper {
	const struct plan *plan;
	int nworkers;
	uint64_t digest;   /* sent to every task */
	uint32_t expected; /* local size; LAUNCHER_UNKNOWN: counting mode */
	char *sock_path, *lock_path;
	int listen_fd;
	sigset_t waitmask; /* the mask while the keeper waits */
	/* An instance's keeper: its lifetime, its directory, and whether its
	 * sweeper kills what is left in the namespaces. */
	const struct keeper_life *life;
	const char *dir;
	pid_t sweeper; /* the sweeper; sweep_fd is its pipe's write end */
	int sweep_fd;
};

static __attribute__((noreturn)) void keeper_main(struct keeper *k, int lock_fd,
						  int ready_fd);

/* ---- the client: start the keeper, join it ------------------------------ */

/* Start the keeper, detached (double fork); wait until it serves. */
int keeper_start(const struct keeper_spec *ks, int lock_fd, mpictr_err **err)
{
	struct keeper k = {
	    .plan = ks->plan,
	    .nworkers = ks->nworkers,
	    .digest = ks->digest,
	    .expected = ks->life ? LAUNCHER_UNKNOWN : ks->expected,
	    .sock_path = (char *)ks->sock_path,
	    .lock_path = (char *)ks->lock_path,
	    .listen_fd = -1,
	    .life = ks->life,
	    .dir = ks->dir,
	    .sweep_fd = -1,
	};
	const char *who = k.life ? "instance's keeper" : "node's keeper";
	int rfd, wfd, rc;
	pid_t pid = proc_fork_relay(
	    &rfd, &wfd, k.life ? "the instance's keeper" : "the node's keeper",
	    err);

	if (pid < 0)
		return -1;
	if (pid == 0) {
		proc_detach(wfd, who);
		keeper_main(&k, lock_fd, wfd);
	}
	TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
	rc = relay_recv_ready(rfd, who, err);
	close(rfd);
	return rc;
}

/* True when lock_fd is still the file at path: the keeper unlinks its lock
 * when it exits, and a lock taken on the unlinked file would let a second
 * keeper start beside the one started on the new file. */
bool keeper_lock_current(int lock_fd, const char *path)
{
	struct stat a, b;

	return fstat(lock_fd, &a) == 0 && lstat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The task's side of a JOIN (wire.h): one request with the claim, one
 * reply with the verdict, the digest, the UCX answer, the image's facts
 * and, only when the verdict is KEEPER_OK, the two namespace fds. */
int keeper_join(int sock, uint32_t local_rank, uint32_t local_size, int *userns,
		int *mntns, struct keeper_answer *a, mpictr_err **err)
{
	struct wire_claim cl = {.local_rank = local_rank,
				.local_size = local_size};
	struct wire_reply r;
	struct wire_answer w;
	int rc;

	*userns = *mntns = -1;
	memset(a, 0, sizeof(*a));
	if (wire_send_req(sock, WIRE_JOIN, &cl, sizeof(cl), NULL) < 0)
		return errno == EPIPE || errno == ECONNRESET
			   ? 1 /* a keeper that was exiting closed it */
			   : err_set(err, errno, "send the claim");
	rc = wire_recv_reply(sock, 2, &r, err);
	if (rc == 1)
		return 1; /* closed unanswered: retry */
	if (rc < 0)
		return err_wrap(err, "its answer");
	if (r.status != 0) {
		err_set(err, r.status, "the keeper refused the request");
		goto fail;
	}
	if (wire_answer_parse(r.data, r.len, &w, err) < 0) {
		err_wrap(err, "its answer");
		goto fail;
	}
	if ((w.verdict == KEEPER_OK) != (r.nfds == 2)) {
		wire_answer_free(&w);
		err_set(err, EPROTO,
			"the keeper sent %d namespace fds with verdict "
			"%d",
			r.nfds, (int)w.verdict);
		goto fail;
	}
	*a = (struct keeper_answer){
	    .v = {.status = w.verdict, .a = w.a, .b = w.b},
	    .digest = w.digest,
	    .ucx_known = w.ucx_known,
	    .ucx = w.ucx,
	    .image_known = w.image_known,
	    .image = w.image};
	if (r.nfds == 2) {
		*userns = r.fds[0];
		*mntns = r.fds[1];
		r.fds[0] = r.fds[1] = -1;
	}
	wire_reply_free(&r);
	return 0;
fail:
	wire_reply_free(&r);
	return -1;
}

int keeper_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/* Only we can make sockets in our 0700 directory; check anyway that
	 * the keeper is ours before taking namespaces from it. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    cr.uid != getuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* ---- the keeper process ------------------------------------------------ */

/* The launcher daemons that fork every local task of a job and outlive
 * them all (the parent of a task that was exec'd in place). */
static bool launcher_daemon(const char *comm)
{
	static const char *const names[] = {
	    "slurmstepd\n", "orted\n",	 "mpirun\n",	      "orterun\n",
	    "prted\n",	    "prterun\n", "hydra_pmi_proxy\n", "flux-shell\n",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(comm, names[i]) == 0)
			return true;
	return false;
}

/* A pidfd for the task's parent when it is a launcher's daemon
 * (slurmstepd, orted or mpirun, hydra_pmi_proxy, ...), else -1. Once it
 * is gone no task of the job can still arrive on this node, so the
 * keeper need not wait JOIN_IDLE_S for tasks that were killed (scancel)
 * or failed before they reached mpictr. */
static int stepd_pidfd(pid_t task)
{
	char path[64], *comm;
	pid_t ppid = proc_ppid(task);
	int fd;

	if (ppid <= 1)
		return -1;
	fd = sys_pidfd_open(ppid, 0);
	if (fd < 0)
		return -1;
	/* Checked after the pidfd is open: it cannot be a recycled pid. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)ppid);
	comm = read_file(path, 64, NULL);
	if (!comm || !launcher_daemon(comm)) {
		free(comm);
		close(fd);
		return -1;
	}
	free(comm);
	return fd;
}

static volatile sig_atomic_t keeper_stop;

static void keeper_on_term(int sig)
{
	(void)sig;
	keeper_stop = 1;
}

bool keeper_stopping(void)
{
	return keeper_stop != 0;
}

/* The tasks that joined: a pidfd each while they live (they exec in
 * place: the pid is the rank's), and the local ranks claimed so far. */
struct members {
	int pidfd[KEEPER_MAX_TASKS];
	uint32_t npid;
	uint32_t rank[KEEPER_MAX_TASKS];
	uint32_t nrank;
	uint32_t joined, gone;
	struct pollfd pfd[KEEPER_MAX_TASKS + 2];
};

int keeper_check_claim(uint32_t size, const uint32_t *ranks, uint32_t nranks,
		       uint32_t joined, uint32_t rank, uint32_t claimed_size,
		       uint32_t *a, uint32_t *b)
{
	*a = *b = 0;
	if (claimed_size != size) {
		*a = size;
		*b = claimed_size;
		return KEEPER_SIZE_DIFF;
	}
	if (rank != LAUNCHER_UNKNOWN && size != LAUNCHER_UNKNOWN &&
	    rank >= size) {
		*a = rank;
		*b = size;
		return KEEPER_RANK_RANGE;
	}
	for (uint32_t i = 0; rank != LAUNCHER_UNKNOWN && i < nranks; i++)
		if (ranks[i] == rank) {
			*a = rank;
			return KEEPER_DUP_RANK;
		}
	if ((size != LAUNCHER_UNKNOWN && joined >= size) ||
	    joined >= KEEPER_MAX_TASKS) {
		*a = size != LAUNCHER_UNKNOWN ? size : KEEPER_MAX_TASKS;
		return KEEPER_TOO_MANY;
	}
	return KEEPER_OK;
}

/* Answer a task's JOIN: the verdict, the digest, the UCX answer and the
 * image's facts (the task plans from them and never opens the image), the
 * namespace fds only when the verdict is KEEPER_OK. */
static int send_answer(int c, const struct keeper *k, const struct holder *h,
		       int32_t verdict, uint32_t a, uint32_t b)
{
	const struct plan *p = k->plan;
	struct wire_answer w = {.verdict = verdict,
				.a = a,
				.b = b,
				.digest = k->digest,
				.ucx_known = p->ucx_asked,
				.ucx = p->ucx_net_devices,
				.image_known = true,
				.image = p->image};
	size_t len;
	cleanup_free char *buf = wire_answer_put(&w, &len);
	bool ok = verdict == KEEPER_OK;

	return wire_send_reply(c, 0, buf, len, (int[]){h->userns, h->mntns},
			       ok ? 2 : 0, NULL);
}

/* One connecting task: read its JOIN request (the claim), check the
 * claim, answer the verdict (wire.h). True when it joined. A peer that
 * sends no valid request within JOIN_CLAIM_MS (a probe) gets nothing and
 * is no member: every task of a job runs the same mpictr, which claims.
 * Only the user's processes on the host, or in this very container (a
 * rank of the job joining its own container), are served: a program in
 * another container of the user sees the socket through the /tmp bind
 * and gets nothing (no namespaces, no rank slot). */
static bool keeper_serve(struct keeper *k, struct holder *h, struct members *m,
			 int c, pid_t *pid)
{
	struct wire_req q;
	struct wire_claim cl;
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	struct timeval tv = {.tv_sec = JOIN_CLAIM_MS / 1000,
			     .tv_usec = JOIN_CLAIM_MS % 1000 * 1000};
	uint32_t a = 0, b = 0;
	int32_t verdict;
	struct stat ns;
	int where;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 ||
	    cr.uid != getuid() || fstat(h->userns, &ns) < 0)
		return false;
	where = proc_peer_where(c, ns.st_dev, ns.st_ino);
	if (where != PEER_HOST && where != PEER_INSIDE) {
		log_warn("node keeper: refused pid %d, which runs in another "
			 "container",
			 (int)cr.pid);
		return false;
	}
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (wire_recv_req(c, &q, NULL) != 0)
		return false;
	if (q.op != WIRE_JOIN ||
	    wire_claim_parse(q.data, q.len, &cl, NULL) < 0) {
		wire_send_reply(c, q.op != WIRE_JOIN ? EOPNOTSUPP : EINVAL,
				NULL, 0, NULL, 0, NULL);
		wire_req_free(&q);
		return false;
	}
	wire_req_free(&q);
	verdict = keeper_check_claim(k->expected, m->rank, m->nrank, m->joined,
				     cl.local_rank, cl.local_size, &a, &b);
	if (send_answer(c, k, h, verdict, a, b) < 0)
		return false; /* gone before the verdict: it did not join */
	if (verdict != KEEPER_OK)
		return false;
	if (cl.local_rank != LAUNCHER_UNKNOWN)
		m->rank[m->nrank++] = cl.local_rank;
	*pid = cr.pid;
	return true;
}

/* Serve until the node's tasks have come and gone (counting mode: until
 * the members are gone and RUN_JOIN_LINGER_MS passed without a new one). */
/* The launcher's daemon that started the ranks is gone, however it ended
 * (a SIGKILL of mpirun or of hydra_pmi_proxy ends no rank): nobody else
 * will end what it started, so the keeper does, as mpirun would: SIGTERM
 * to every process in the container but the holder and its FUSE workers,
 * then SIGKILL after ORPHAN_GRACE_MS, again on every turn until the last
 * member is gone (they may fork meanwhile). */
#define ORPHAN_GRACE_MS 1000
static void end_orphans(const struct holder *h, long *kill_at)
{
	struct stat st;
	int sig = SIGKILL;

	if (h->userns < 0 || fstat(h->userns, &st) < 0)
		return;
	if (*kill_at < 0) {
		*kill_at = mono_ms() + ORPHAN_GRACE_MS;
		sig = SIGTERM;
	} else if (mono_ms() < *kill_at) {
		return;
	}
	proc_ns_signal(st.st_dev, st.st_ino, h->pid, sig);
}

static void keeper_loop(struct keeper *k, struct holder *h)
{
	struct members *m = xcalloc(1, sizeof(*m));
	struct pollfd *pfd = m->pfd;
	bool counting = k->expected == LAUNCHER_UNKNOWN;
	long until = mono_ms() + JOIN_IDLE_S * 1000L;
	int stepd = -1;
	bool stepd_gone = false;
	long kill_at = -1; /* end_orphans: SIGKILL from then on */

	for (;;) {
		nfds_t np = 0, first_pid;
		long left;
		bool accepting = !stepd_gone;

		if (keeper_stop)
			break; /* SIGTERM: unmount and clean up */
		if (m->gone == m->joined &&
		    ((!counting && m->joined >= k->expected) || stepd_gone))
			break;
		left = until - mono_ms();
		if (m->gone == m->joined && left <= 0)
			break;
		pfd[np++] = (struct pollfd){.fd = accepting ? k->listen_fd : -1,
					    .events = POLLIN};
		pfd[np++] = (struct pollfd){.fd = stepd, .events = POLLIN};
		first_pid = np;
		for (uint32_t i = 0; i < m->npid; i++)
			pfd[np++] = (struct pollfd){.fd = m->pidfd[i],
						    .events = POLLIN};
		if (m->gone != m->joined || left > 1000)
			left = stepd_gone ? 100 : 1000;
		/* SIGTERM is blocked but here: it cannot slip in between the
		 * check of keeper_stop and the wait. */
		if (ppoll(pfd, np,
			  &(struct timespec){.tv_sec = left / 1000,
					     .tv_nsec = left % 1000 * 1000000L},
			  &k->waitmask) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			int c = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			pid_t pid = 0;

			if (c >= 0 && keeper_serve(k, h, m, c, &pid)) {
				int pf = sys_pidfd_open(pid, 0);

				m->joined++;
				if (pf >= 0)
					m->pidfd[m->npid++] = pf;
				else
					m->gone++; /* cannot follow it: count
						      it as gone at once */
				if (stepd < 0 && !stepd_gone)
					stepd = stepd_pidfd(pid);
				until = mono_ms() + JOIN_IDLE_S * 1000L;
			}
			if (c >= 0)
				close(c);
		}
		if (pfd[1].revents) {
			close(stepd);
			stepd = -1;
			stepd_gone = true;
		}
		if (stepd_gone && m->gone != m->joined)
			end_orphans(h, &kill_at);
		for (nfds_t i = first_pid; i < np; i++) {
			if (!pfd[i].revents)
				continue;
			for (uint32_t q = 0; q < m->npid; q++)
				if (m->pidfd[q] == pfd[i].fd) {
					close(m->pidfd[q]);
					m->pidfd[q] = m->pidfd[--m->npid];
					m->gone++;
					until =
					    mono_ms() +
					    (counting ? RUN_JOIN_LINGER_MS
						      : JOIN_IDLE_S * 1000L);
					break;
				}
		}
		if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) == h->pid) {
			h->pid = 0; /* the holder died: nothing to serve */
			break;
		}
	}
	for (uint32_t i = 0; i < m->npid; i++)
		close(m->pidfd[i]);
	if (stepd >= 0)
		close(stepd);
	free(m);
}

/* Does path still name the file (dev, ino) we made? */
static bool same_file(const char *path, const struct stat *was)
{
	struct stat st;

	return lstat(path, &st) == 0 && st.st_dev == was->st_dev &&
	       st.st_ino == was->st_ino;
}

/* A keeper killed with SIGKILL cannot remove its socket and lock. A small
 * sweeper waits on a pipe whose only writer is the keeper; when the keeper
 * is gone, however it ended, the sweeper removes the two files, unless a
 * new keeper of the same step has replaced them in the meantime. Told the
 * holder's user namespace over the pipe (sweep_tell), it ends every
 * process left in it and in namespaces nested under it (proc_ns_end),
 * then removes the keeper's directory (an instance's): nothing of a node
 * container outlives its keeper. */
struct sweep_ns {
	uint64_t dev, ino;
};

static _Noreturn void sweeper_main(const struct keeper *k, int life_fd,
				   const struct stat *sock_st,
				   const struct stat *lock_st)
{
	struct sweep_ns ns = {0, 0};
	size_t got = proc_watch_lifeline(life_fd, &ns, sizeof(ns));

	if (same_file(k->sock_path, sock_st))
		unlink(k->sock_path);
	if (same_file(k->lock_path, lock_st))
		unlink(k->lock_path);
	if (got == sizeof(ns))
		proc_ns_end((dev_t)ns.dev, (ino_t)ns.ino, 0, 0);
	if (k->dir)
		rm_rf(k->dir);
	_exit(0);
}

/* A watcher (proc_fork_watcher) in the keeper's session. */
static void start_sweeper(struct keeper *k)
{
	struct stat sock_st, lock_st;
	mpictr_err *err = NULL;
	int life_fd;
	pid_t pid;

	if (lstat(k->sock_path, &sock_st) < 0 ||
	    lstat(k->lock_path, &lock_st) < 0)
		return;
	pid =
	    proc_fork_watcher(false, &life_fd, NULL, NULL, "the sweeper", &err);
	if (pid == 0)
		sweeper_main(k, life_fd, &sock_st, &lock_st);
	if (pid < 0) {
		mpictr_err_free(err);
		return;
	}
	/* life_fd stays open in the keeper until it ends. */
	k->sweeper = pid;
	k->sweep_fd = life_fd;
}

/* Tell the sweeper the holder's user namespace. */
static void sweep_tell(const struct keeper *k, const struct holder *h)
{
	struct stat st;
	struct sweep_ns ns;

	if (k->sweep_fd < 0 || fstat(h->userns, &st) < 0)
		return;
	ns.dev = (uint64_t)st.st_dev;
	ns.ino = (uint64_t)st.st_ino;
	if (write_full(k->sweep_fd, &ns, sizeof(ns)) < 0)
		log_debug("tell the sweeper the namespace: %s",
			  strerror(errno));
}

/* The end of a keeper: socket and lock gone first (a new one may start),
 * then whatever the tasks left in the container (a double-forked daemon,
 * a nested namespace), the holder, the sweeper and the directory. */
static void keeper_end(struct keeper *k, struct holder *h)
{
	struct stat ns;

	unlink(k->sock_path);
	unlink(k->lock_path);
	if (h->userns >= 0 && fstat(h->userns, &ns) == 0)
		proc_ns_end(ns.st_dev, ns.st_ino, h->pid, 0);
	holder_stop(h);
	if (k->sweep_fd >= 0)
		close(k->sweep_fd);
	if (k->sweeper > 0)
		TEMP_FAILURE_RETRY(waitpid(k->sweeper, NULL, 0));
	k->sweep_fd = -1;
	k->sweeper = 0;
	if (k->dir)
		rm_rf(k->dir);
}

/* The keeper's first steps: detach from the task that started it, listen,
 * start the sweeper. */
static int keeper_setup(struct keeper *k, int lock_fd, int ready_fd,
			mpictr_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	sigset_t none;
	int nul;

	/* Hold nothing of the task: not its PMI_FD, not srun's pipes. */
	close_all_fds_except((int[]){lock_fd, ready_fd}, 2);
	setsid();
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Never hold the step's output pipes open: srun waits for them. */
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		close(nul);
	}
	mpictr_set_log_sink(NULL, NULL, MPICTR_LOG_ERROR);
	k->sweeper = 0;
	k->sweep_fd = -1;
	unlink(k->sock_path); /* a stale socket of a killed keeper */
	k->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", k->sock_path);
	if (k->listen_fd < 0 ||
	    bind(k->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(k->listen_fd, 128) < 0)
		return err_set(err, errno, "listen on '%s'", k->sock_path);
	start_sweeper(k);
	if (k->life && k->life->setup && k->life->setup(k->life->data, err) < 0)
		return -1;
	return 0;
}

static __attribute__((noreturn)) void keeper_main(struct keeper *k, int lock_fd,
						  int ready_fd)
{
	struct holder h = {.pid = 0, .ctl = -1, .userns = -1, .mntns = -1};
	mpictr_err *err = NULL;
	sigset_t none, term;

	if (keeper_setup(k, lock_fd, ready_fd, &err) < 0)
		goto fail;
	sigemptyset(&none);
	if (holder_start(k->plan, k->nworkers, &none, &h, &err) < 0)
		goto fail;
	sweep_tell(k, &h);
	relay_send_ready(ready_fd); /* the task may be gone: serve anyway */
	close(ready_fd);
	/* Its command line is the first task's: `pkill -f` aimed at the tasks
	 * hits it too. End cleanly then, socket and lock removed. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	k->waitmask = none;
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = keeper_on_term},
		  NULL);
	if (k->life && k->life->serve)
		k->life->serve(k->life->data, &(struct keeper_serve){
						  .listen_fd = k->listen_fd,
						  .h = &h,
						  .waitmask = &k->waitmask});
	else
		keeper_loop(k, &h);
	if (k->listen_fd >= 0)
		close(k->listen_fd);
	keeper_end(k, &h);
	close(lock_fd);
	if (k->life && k->life->done)
		k->life->done(k->life->data);
	_exit(0);
fail:
	relay_send(ready_fd, err);
	keeper_end(k, &h);
	_exit(1);
}
