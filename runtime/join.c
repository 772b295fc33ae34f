/* join.c - Slurm join mode: `srun mpictr IMAGE CMD`, one mpictr per task.
 *
 * The first task of a node to arrive starts the *keeper* for the node and
 * step: a detached process that starts the namespace holder (container.c)
 * and serves its namespace fds over a Unix socket in a private directory.
 * Every task, the first included, connects, receives the fds (SCM_RIGHTS),
 * joins and execs in place, so slurmstepd stays the rank's parent and
 * PMI_FD, signals, exit codes and accounting are Slurm's as usual.
 *
 * Rendezvous: DIR = /tmp/mpictr-join-UID (0700, owner and mode checked on
 * every use; the tasks never follow a symlink there). The key holds the
 * job, step, node id and a hash of the host name, the image and the uid:
 * two steps, two jobs or two simulated nodes never meet by mistake. Peers
 * are checked with SO_PEERCRED: another user can never join. A lock file
 * (flock) elects the task that starts the keeper; a stale socket of a
 * killed keeper is replaced under the same lock.
 *
 * Lifetime: the keeper counts tasks in (accept) and out (pidfd of the
 * peer); it exits when the node's exact count (SLURM_STEP_TASKS_PER_NODE,
 * SLURM_NODEID) has come and gone, or when every task that came is gone
 * and none arrived for JOIN_IDLE_S (a task that never starts). Its holder
 * then unmounts the image and the namespaces disappear.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "error.h"
#include "join.h"
#include "slurm.h"
#include "syscalls.h"

#define JOIN_MAGIC 0x6d706a31u /* "mpj1" */
#define JOIN_WAIT_S 120	       /* a task waits this long for its keeper */
#define JOIN_IDLE_S 60	       /* keeper: no task left, none arriving */

struct join_msg {
	uint32_t magic;
	int32_t status; /* 0: two fds follow */
};

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h * 0x100000001b3ULL;
}

/* The private rendezvous directory: create it 0700 or verify an existing
 * one is ours, a directory, not a symlink, and private. */
static int join_dir(char **out, mpictr_err **err)
{
	char *dir = xasprintf("/tmp/mpictr-join-%u", (unsigned)getuid());
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		err_set(err, errno, "create the rendezvous directory '%s'",
			dir);
		free(dir);
		return -1;
	}
	if (lstat(dir, &st) < 0) {
		err_set(err, errno, "rendezvous directory '%s'", dir);
		free(dir);
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077)) {
		err_set(err, 0,
			"rendezvous directory '%s' is not a private directory "
			"owned by uid %u (%s, owner uid %u, mode %o): refusing "
			"to use it",
			dir, (unsigned)getuid(),
			S_ISLNK(st.st_mode)   ? "a symbolic link"
			: S_ISDIR(st.st_mode) ? "a directory"
					      : "not a directory",
			(unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		err_hint(err, "remove it (if another user owns it, ask the "
			      "administrator) or run with MPICTR_JOIN=0");
		free(dir);
		return -1;
	}
	*out = dir;
	return 0;
}

static char *join_key(const struct slurm_step *s, const char *image)
{
	char host[256] = "";
	uint64_t h = 0xcbf29ce484222325ULL;
	char uid[32];

	gethostname(host, sizeof(host) - 1);
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	h = fnv1a(h, host);
	h = fnv1a(h, image);
	h = fnv1a(h, uid);
	return xasprintf("%s.%s.%u.%016llx", s->job_id, s->step_id, s->node_id,
			 (unsigned long long)h);
}

static int send_fds(int sock, int32_t status, int fd1, int fd2)
{
	struct join_msg m = {.magic = JOIN_MAGIC, .status = status};
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (status == 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(2 * sizeof(int));
		memcpy(CMSG_DATA(c), (int[]){fd1, fd2}, 2 * sizeof(int));
	}
	return TEMP_FAILURE_RETRY(sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 ? -1
									: 0;
}

/* 0: *fd1 and *fd2 received; 1: closed unanswered; -1: error. */
static int recv_fds(int sock, int *fd1, int *fd2, mpictr_err **err)
{
	struct join_msg m;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c;
	ssize_t n = TEMP_FAILURE_RETRY(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC));

	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 1; /* a keeper that was exiting closed it: retry */
	if (n != (ssize_t)sizeof(m) || m.magic != JOIN_MAGIC)
		return err_set(err, n < 0 ? errno : EPROTO,
			       "receive the namespaces from the node's keeper");
	if (m.status != 0)
		return err_set(err, m.status,
			       "the node's keeper could not set up the "
			       "container");
	c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return err_set(err, EPROTO,
			       "the node's keeper sent no "
			       "namespace fds");
	memcpy(fd1, CMSG_DATA(c), sizeof(int));
	memcpy(fd2, CMSG_DATA(c) + sizeof(int), sizeof(int));
	return 0;
}

static int sock_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct keeper {
	const struct plan *plan; /* NULL until build_plan() made it */
	/* Only the task that starts the keeper needs the plan before it
	 * joins; the others build theirs after the keeper answered, so that
	 * they leave the CPUs to the keeper while it mounts the image. */
	const struct mpictr_config *cfg;
	struct plan *plan_store;
	int nworkers;
	uint32_t expected;
	char *sock_path, *lock_path;
	int listen_fd;
	sigset_t waitmask; /* the mask while the keeper waits */
};

/* A pidfd for the task's parent when it is slurmstepd, else -1. The
 * step's slurmstepd forks every task of the node and outlives them all:
 * once it is gone no task of the step can still arrive, so the keeper
 * need not wait JOIN_IDLE_S for tasks that were killed (scancel) or
 * failed before they reached mpictr. */
static int stepd_pidfd(pid_t task)
{
	char path[64], *stat_txt, *rp, *comm;
	int ppid = 0, fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)task);
	stat_txt = read_file(path, 4096, NULL);
	if (!stat_txt)
		return -1;
	rp = strrchr(stat_txt, ')'); /* comm may hold spaces and parens */
	if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1 || ppid <= 1) {
		free(stat_txt);
		return -1;
	}
	free(stat_txt);
	fd = sys_pidfd_open(ppid, 0);
	if (fd < 0)
		return -1;
	/* Checked after the pidfd is open: it cannot be a recycled pid. */
	snprintf(path, sizeof(path), "/proc/%d/comm", ppid);
	comm = read_file(path, 64, NULL);
	if (!comm || strcmp(comm, "slurmstepd\n") != 0) {
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

/* Serve until the node's tasks have come and gone. Each task that joined
 * is followed by a pidfd (it execs in place: the pid is the rank's). */
static void keeper_loop(struct keeper *k, struct holder *h)
{
	struct pollfd *pfd = xcalloc(k->expected + 3, sizeof(*pfd));
	int *pidfd = xcalloc(k->expected + 1, sizeof(int));
	uint32_t joined = 0, gone = 0, npid = 0;
	long idle_until = mono_ms() + JOIN_IDLE_S * 1000L;
	int stepd = -1;
	bool stepd_gone = false;

	for (;;) {
		nfds_t np = 0, first_pid;
		long left;
		bool accepting = joined < k->expected && !stepd_gone;

		if (keeper_stop)
			break; /* SIGTERM: unmount and clean up */
		if (gone == joined && (joined >= k->expected || stepd_gone))
			break;
		left = idle_until - mono_ms();
		if (gone == joined && left <= 0)
			break;
		pfd[np++] = (struct pollfd){.fd = accepting ? k->listen_fd : -1,
					    .events = POLLIN};
		pfd[np++] = (struct pollfd){.fd = stepd, .events = POLLIN};
		first_pid = np;
		for (uint32_t i = 0; i < npid; i++)
			pfd[np++] =
			    (struct pollfd){.fd = pidfd[i], .events = POLLIN};
		if (gone != joined || left > 1000)
			left = 1000;
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
			struct ucred cr;
			socklen_t cl = sizeof(cr);

			if (c >= 0 &&
			    getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ==
				0 &&
			    cr.uid == getuid() &&
			    send_fds(c, 0, h->userns, h->mntns) == 0) {
				int pf = sys_pidfd_open(cr.pid, 0);
				joined++;
				if (pf >= 0)
					pidfd[npid++] = pf;
				else
					gone++; /* cannot follow it: count it
						   as gone at once */
				if (stepd < 0 && !stepd_gone)
					stepd = stepd_pidfd(cr.pid);
				idle_until = mono_ms() + JOIN_IDLE_S * 1000L;
			}
			if (c >= 0)
				close(c);
		}
		if (pfd[1].revents) {
			close(stepd);
			stepd = -1;
			stepd_gone = true;
		}
		for (nfds_t i = first_pid; i < np; i++) {
			if (!pfd[i].revents)
				continue;
			for (uint32_t q = 0; q < npid; q++)
				if (pidfd[q] == pfd[i].fd) {
					close(pidfd[q]);
					pidfd[q] = pidfd[--npid];
					gone++;
					idle_until =
					    mono_ms() + JOIN_IDLE_S * 1000L;
					break;
				}
		}
		if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) == h->pid) {
			h->pid = 0; /* the holder died: nothing to serve */
			break;
		}
	}
	for (uint32_t i = 0; i < npid; i++)
		close(pidfd[i]);
	if (stepd >= 0)
		close(stepd);
	free(pidfd);
	free(pfd);
}

/* The keeper process: detached from the task that started it. */
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
 * new keeper of the same step has replaced them in the meantime. */
static void start_sweeper(struct keeper *k)
{
	struct stat sock_st, lock_st;
	int p[2];
	pid_t pid;
	char c;

	if (lstat(k->sock_path, &sock_st) < 0 ||
	    lstat(k->lock_path, &lock_st) < 0 || pipe2(p, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid != 0) {
		close(p[0]);
		if (pid < 0)
			close(p[1]);
		/* p[1] stays open in the keeper until it ends. */
		return;
	}
	close_all_fds_except(&p[0], 1);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	while (TEMP_FAILURE_RETRY(read(p[0], &c, 1)) > 0)
		;
	if (same_file(k->sock_path, &sock_st))
		unlink(k->sock_path);
	if (same_file(k->lock_path, &lock_st))
		unlink(k->lock_path);
	_exit(0);
}

static void keeper_main(struct keeper *k, int lock_fd, int ready_fd)
{
	struct holder h = {.pid = 0, .ctl = -1, .userns = -1, .mntns = -1};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mpictr_err *err = NULL;
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
	unlink(k->sock_path); /* a stale socket of a killed keeper */
	k->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", k->sock_path);
	if (k->listen_fd < 0 ||
	    bind(k->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(k->listen_fd, 128) < 0) {
		err_set(&err, errno, "listen on '%s'", k->sock_path);
		goto fail;
	}
	start_sweeper(k);
	if (holder_start(k->plan, k->nworkers, &none, &h, &err) < 0)
		goto fail;
	if (write(ready_fd, "", 1) < 0) {
		/* the task is gone; serve the others anyway */
	}
	close(ready_fd);
	/* Its command line is the first task's: `pkill -f` aimed at the tasks
	 * hits it too. End cleanly then, socket and lock removed. */
	{
		sigset_t term;

		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		sigprocmask(SIG_BLOCK, &term, NULL);
		k->waitmask = none;
		sigaction(SIGTERM,
			  &(struct sigaction){.sa_handler = keeper_on_term},
			  NULL);
	}
	keeper_loop(k, &h);
	unlink(k->sock_path);
	unlink(k->lock_path);
	holder_stop(&h);
	close(lock_fd);
	_exit(0);
fail : {
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s", mpictr_err_message(err));
	if (write(ready_fd, buf, (size_t)(n > 0 ? n : 0)) < 0) {
		/* nothing more to do */
	}
}
	unlink(k->sock_path);
	unlink(k->lock_path);
	holder_stop(&h);
	_exit(1);
}

/* Start the keeper, detached (double fork); wait until it serves. */
static int start_keeper(struct keeper *k, int lock_fd, mpictr_err **err)
{
	int ready[2];
	pid_t pid;
	char buf[1024];
	ssize_t n;

	if (pipe2(ready, O_CLOEXEC) < 0)
		return err_set(err, errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(ready[0]);
		close(ready[1]);
		return err_set(err, errno, "fork the node's keeper");
	}
	if (pid == 0) {
		close(ready[0]);
		if (fork() == 0)
			keeper_main(k, lock_fd, ready[1]);
		_exit(0);
	}
	close(ready[1]);
	TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
	n = TEMP_FAILURE_RETRY(read(ready[0], buf, sizeof(buf) - 1));
	close(ready[0]);
	if (n == 1 && buf[0] == '\0')
		return 0;
	if (n <= 0)
		return err_set(err, EIO, "the node's keeper exited at start");
	buf[n] = '\0';
	return err_set(err, 0, "the node's keeper failed: %s", buf);
}

/* True when lock_fd is still the file at path: the keeper unlinks its lock
 * when it exits, and a lock taken on the unlinked file would let a second
 * keeper start beside the one started on the new file. */
static bool lock_current(int lock_fd, const char *path)
{
	struct stat a, b;

	return fstat(lock_fd, &a) == 0 && lstat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int build_plan(struct keeper *k, mpictr_err **err)
{
	if (k->plan)
		return 0;
	if (plan_build(k->cfg, NULL, k->plan_store, err) < 0)
		return -1;
	k->plan = k->plan_store;
	return 0;
}

/* Connect to the node's keeper, starting it if this task is the first. */
static int join_connect(struct keeper *k, long deadline, mpictr_err **err)
{
	useconds_t delay = 2000;

	for (;;) {
		int fd = sock_connect(k->sock_path), lock_fd;

		if (fd >= 0)
			return fd;
		if (errno != ENOENT && errno != ECONNREFUSED)
			return err_set(err, errno, "connect to '%s'",
				       k->sock_path);
		lock_fd = open(k->lock_path,
			       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lock_fd < 0)
			return err_set(err, errno, "open '%s'", k->lock_path);
		if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0) {
			if (!lock_current(lock_fd, k->lock_path)) {
				close(lock_fd); /* an exiting keeper's */
				continue;
			}
			/* We hold the lock: no keeper is starting. One may
			 * have finished starting just before: try again. */
			fd = sock_connect(k->sock_path);
			if (fd < 0) {
				int rc;

				if (build_plan(k, err) < 0) {
					/* Nothing started: leave no lock file
					 * (a waiter on it sees it unlinked
					 * and starts over). */
					unlink(k->lock_path);
					close(lock_fd);
					return -1;
				}
				rc = start_keeper(k, lock_fd, err);
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

/* Receive the namespace fds from the node's keeper. A keeper that is
 * exiting may close a connection it accepted into its backlog unanswered:
 * then connect again (the next keeper starts under the lock). */
static int join_fetch(struct keeper *k, int *userns, int *mntns,
		      mpictr_err **err)
{
	long deadline = mono_ms() + JOIN_WAIT_S * 1000L;

	for (;;) {
		int sock = join_connect(k, deadline, err), rc;

		if (sock < 0)
			return -1;
		rc = recv_fds(sock, userns, mntns, err);
		close(sock);
		if (rc <= 0)
			return rc;
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

bool join_wanted(const struct mpictr_config *cfg)
{
	const char *j = env_get(cfg->host_env, "MPICTR_JOIN");

	if (cfg->nranks > 0 || cfg->no_share || (j && strcmp(j, "0") == 0))
		return false;
	return slurm_in_step(cfg->host_env);
}

int join_run(const struct mpictr_config *cfg, mpictr_err **err)
{
	struct slurm_step step;
	struct plan plan;
	struct keeper k = {.listen_fd = -1, .cfg = cfg, .plan_store = &plan};
	cleanup_free char *dir = NULL, *key = NULL, *image = NULL;
	int userns = -1, mntns = -1, rc = -1;
	char **env = NULL;

	memset(&plan, 0, sizeof(plan));
	if (slurm_step_from_env(cfg->host_env, &step, err) < 0)
		return err_wrap(err, "join the node's container");
	if (step.local_tasks > 4096) {
		err_set(err, 0,
			"%u local tasks in SLURM_STEP_TASKS_PER_NODE: "
			"at most 4096 are supported",
			step.local_tasks);
		goto out_step;
	}
	/* The key names the image as plan_build will (its real path); an
	 * image that cannot be resolved fails there, with its message. */
	image = realpath(cfg->image, NULL);
	if (!image) {
		if (build_plan(&k, err) < 0)
			goto out;
		image = xstrdup(plan.image.path);
	}
	if (join_dir(&dir, err) < 0)
		goto out;
	key = join_key(&step, image);
	k.nworkers = container_fuse_workers(cfg);
	k.expected = step.local_tasks;
	k.sock_path = xasprintf("%s/%s.sock", dir, key);
	k.lock_path = xasprintf("%s/%s.lock", dir, key);
	if (strlen(k.sock_path) >=
	    sizeof(((struct sockaddr_un *)0)->sun_path)) {
		err_set(err, ENAMETOOLONG, "rendezvous socket '%s'",
			k.sock_path);
		goto out;
	}
	if (join_fetch(&k, &userns, &mntns, err) < 0)
		goto out;
	if (build_plan(&k, err) < 0)
		goto out;
	for (size_t i = 0; plan.notices && plan.notices[i]; i++)
		log_notice("%s", plan.notices[i]);
	plan.nlocal = (int)step.local_tasks;
	env = plan_rank_env(&plan, (int)step.local_id);
	container_exec(&plan, env, userns, mntns, pmi_fd(cfg->host_env), err);
	rc = -1; /* only returns on failure */
	strv_free(env);
out:
	if (userns >= 0)
		close(userns);
	if (mntns >= 0)
		close(mntns);
	free(k.sock_path);
	free(k.lock_path);
	plan_free(&plan); /* zeroed, partly built (on failure) or built */
out_step:
	slurm_step_free(&step);
	return rc;
}
