/* proc.c - the process layer (see proc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/nsfs.h>

#include "common/proc.h"
#include "common/syscalls.h"
#include "common/util.h"

#define RELAY_MSG_MAX 1024

/* What a child reports over its CLOEXEC relay pipe. An exec that
 * succeeds closes the pipe with nothing written. */
struct relay {
	int ready; /* relay_send_ready: no error; msg: its note, if any */
	int errnum;
	int exit_code;
	char msg[RELAY_MSG_MAX];
};

long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void proc_child_setup(const sigset_t *mask, pid_t parent)
{
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(MPICTR_EXIT_FAILURE);
}

void proc_child_stdio(bool null_stdin, int out_fd)
{
	if (null_stdin) {
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (nul >= 0) {
			dup2(nul, STDIN_FILENO);
			close(nul);
		}
	}
	if (out_fd >= 0) {
		dup2(out_fd, STDOUT_FILENO);
		dup2(out_fd, STDERR_FILENO);
		close(out_fd);
	}
}

pid_t proc_fork_child(const sigset_t *mask, const char *what, mpictr_err **err)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return err_set(err, errno, "fork %s", what);
	if (pid == 0)
		proc_child_setup(mask, parent);
	return pid;
}

pid_t proc_fork_relay(int *rfd, int *wfd, const char *what, mpictr_err **err)
{
	int p[2];
	pid_t pid;

	*rfd = *wfd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(err, errno, "create the error relay of %s",
			       what);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return err_set(err, e, "fork %s", what);
	}
	if (pid == 0) {
		close(p[0]);
		*wfd = p[1];
		return 0;
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

void proc_detach(int wfd, const char *what)
{
	pid_t pid = fork();
	mpictr_err *e = NULL;

	if (pid == 0)
		return;
	if (pid < 0) {
		err_set(&e, errno, "fork %s", what);
		relay_send(wfd, e);
	}
	_exit(pid < 0);
}

/* The watcher's side of proc_fork_watcher: see proc.h. */
static void watcher_setup(bool own_session, int life_fd, int wfd)
{
	sigset_t none;
	int nul;

	close_all_fds_except((int[]){life_fd, wfd}, wfd >= 0 ? 2 : 1);
	if (own_session)
		setsid();
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, s == SIGCHLD ? SIG_DFL : SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > STDERR_FILENO)
			close(nul);
	}
	if (chdir("/") < 0) {
		/* a watcher works on absolute paths */
	}
}

pid_t proc_fork_watcher(bool own_session, int *life_fd, int *rfd, int *wfd,
			const char *what, mpictr_err **err)
{
	int life[2], r, w;
	pid_t pid;

	*life_fd = -1;
	if (pipe2(life, O_CLOEXEC) < 0)
		return err_set(err, errno, "create the lifeline of %s", what);
	pid = proc_fork_relay(&r, &w, what, err);
	if (pid < 0) {
		close(life[0]);
		close(life[1]);
		return -1;
	}
	if (pid > 0) {
		close(life[0]);
		*life_fd = life[1];
		if (rfd)
			*rfd = r;
		else
			close(r);
		return pid;
	}
	close(life[1]);
	*life_fd = life[0];
	if (wfd) {
		*wfd = w;
	} else {
		close(w);
		w = -1;
	}
	watcher_setup(own_session, life[0], w);
	return 0;
}

size_t proc_watch_lifeline(int life_fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n = 1;
	char c;

	while (got < len && (n = TEMP_FAILURE_RETRY(read(
				 life_fd, (char *)buf + got, len - got))) > 0)
		got += (size_t)n;
	while (n > 0 && (n = TEMP_FAILURE_RETRY(read(life_fd, &c, 1))) > 0)
		;
	return got;
}

static void relay_write(int fd, const struct relay *r)
{
	if (write_full(fd, r, sizeof(*r)) < 0) {
		/* the parent is gone; nothing more to do */
	}
}

void relay_send(int fd, const mpictr_err *e)
{
	struct relay r;

	memset(&r, 0, sizeof(r));
	r.errnum = mpictr_err_errno(e);
	r.exit_code = mpictr_err_exit_code(e);
	snprintf(r.msg, sizeof(r.msg), "%s", mpictr_err_message(e));
	relay_write(fd, &r);
}

void relay_send_note(int fd, const char *note)
{
	struct relay r;

	memset(&r, 0, sizeof(r));
	r.ready = 1;
	if (note)
		snprintf(r.msg, sizeof(r.msg), "%s", note);
	relay_write(fd, &r);
}

void relay_send_ready(int fd)
{
	relay_send_note(fd, NULL);
}

/* 1: closed empty, 0: ready (its note in note, len > 0), -1: error (*err
 * set). */
static int relay_read(int fd, const char *who, char *note, size_t len,
		      mpictr_err **err)
{
	struct relay r;
	ssize_t n = TEMP_FAILURE_RETRY(read(fd, &r, sizeof(r)));

	if (n == 0)
		return 1;
	if (n != (ssize_t)sizeof(r))
		return err_set(err, n < 0 ? errno : EIO,
			       "read the status of the %s", who);
	r.msg[sizeof(r.msg) - 1] = '\0';
	if (r.ready) {
		if (len > 0)
			snprintf(note, len, "%s", r.msg);
		return 0;
	}
	return err_from_relay(err, r.errnum, r.exit_code, r.msg);
}

int relay_recv(int fd, const char *who, mpictr_err **err)
{
	return relay_read(fd, who, NULL, 0, err) < 0 ? -1 : 0;
}

int relay_recv_ready(int fd, const char *who, mpictr_err **err)
{
	return relay_recv_note(fd, who, NULL, 0, err);
}

int relay_recv_note(int fd, const char *who, char *note, size_t len,
		    mpictr_err **err)
{
	int rc = relay_read(fd, who, note, len, err);

	if (rc > 0)
		return err_set(err, EIO, "the %s exited at start", who);
	if (rc < 0)
		return err_wrap(err, "the %s failed", who);
	return 0;
}

pid_t proc_spawn_output(const char *prog, char *const argv[], bool search,
			bool with_stderr, int *out_fd, mpictr_err **err)
{
	int p[2], rfd, wfd;
	pid_t pid;

	*out_fd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(err, errno, "pipe for %s", prog);
	pid = proc_fork_relay(&rfd, &wfd, prog, err);
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		mpictr_err *e = NULL;

		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 ||
		    dup2(with_stderr ? p[1] : nul, 2) < 0) {
			err_set(&e, errno, "redirect the output of %s", prog);
			relay_send(wfd, e);
			_exit(MPICTR_EXIT_FAILURE);
		}
		if (search)
			execvp(prog, argv);
		else
			execv(prog, argv);
		err_set_exit(&e,
			     errno == ENOENT ? MPICTR_EXIT_NOT_FOUND
					     : MPICTR_EXIT_CANNOT_EXEC,
			     errno, "run %s", prog);
		relay_send(wfd, e);
		_exit(e->exit_code);
	}
	close(p[1]);
	if (relay_recv(rfd, prog, err) < 0) {
		close(rfd);
		close(p[0]);
		TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
		return -1;
	}
	close(rfd);
	*out_fd = p[0];
	return pid;
}

void mark_cloexec_except(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		long fd;

		if (parse_long(de->d_name, 0, INT_MAX, &fd) < 0)
			continue;
		if (fd > 2 && fd != keep && fd != dirfd(d))
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return MPICTR_EXIT_FAILURE;
}

/* ---- removing a tree through descriptors ----
 *
 * A tree mpictr removes on the host may be written by the job at the same
 * time (the PMIx directory is bound into the container): a program there
 * can swap any directory of it for a symlink between a listing and an
 * unlink. So no path is ever resolved twice: every entry is removed
 * relative to the descriptor of the directory that was listed
 * (unlinkat), a directory is entered only through openat(O_NOFOLLOW |
 * O_DIRECTORY) of that same name and only while it is on the tree's
 * mount (st_dev and the mount id, statx STATX_MNT_ID), and an entry that
 * turns into a directory between the two calls is opened, never
 * followed. A subtree deeper than RM_DEPTH is moved up to the tree's root
 * (renameat between two of its descriptors) and removed from there, so a
 * deep tree costs no more than RM_DEPTH descriptors. */
#define RM_DEPTH 32

struct rm_walk {
	int top;	/* the tree's root directory */
	dev_t dev;	/* its file system */
	uint64_t mnt;	/* its mount id, 0 when the kernel has none */
	int err;	/* errno of the first failure */
	bool moved;	/* a subtree was moved up to top: list it again */
	unsigned moves; /* names given to moved subtrees */
};

static uint64_t mount_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID,
		  &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

static void rm_fail(struct rm_walk *w, int e)
{
	if (e != ENOENT && !w->err)
		w->err = e;
}

/* fd (a directory of w's mount) is on it still: not another mount. */
static bool rm_same_mount(const struct rm_walk *w, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == w->dev &&
	       (!w->mnt || mount_id(fd) == w->mnt);
}

static void rm_empty(struct rm_walk *w, int fd, int depth);

/* Remove the entry name of directory dfd (at depth). */
static void rm_at(struct rm_walk *w, int dfd, const char *name, int depth)
{
	for (int tries = 0; tries < 8; tries++) {
		char moved[32];
		int fd;

		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
			return;
		if (errno != EISDIR) {
			rm_fail(w, errno);
			return;
		}
		fd = openat(dfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOTDIR || errno == ELOOP)
				continue; /* no directory now: unlink it */
			rm_fail(w, errno);
			return;
		}
		if (!rm_same_mount(w, fd)) {
			close(fd);
			rm_fail(w, EXDEV); /* a mount point: never entered */
			return;
		}
		if (depth >= RM_DEPTH) {
			close(fd);
			snprintf(moved, sizeof(moved), ".mpictr-rm.%u",
				 w->moves++);
			if (renameat(dfd, name, w->top, moved) == 0)
				w->moved = true;
			else
				rm_fail(w, errno);
			return;
		}
		rm_empty(w, fd, depth + 1);
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return;
		if (errno != ENOTDIR) {
			rm_fail(w, errno);
			return;
		}
	}
	rm_fail(w, EAGAIN); /* swapped back and forth all along */
}

/* Remove every entry of directory fd (closed after). Entries are listed
 * again until a listing finds none (removing while reading may hide
 * some), at most 8 times. */
static void rm_empty(struct rm_walk *w, int fd, int depth)
{
	DIR *d = fdopendir(fd);

	if (!d) {
		rm_fail(w, errno);
		close(fd);
		return;
	}
	for (int pass = 0; pass < 8; pass++) {
		struct dirent *de;
		bool any = false;

		rewinddir(d);
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			any = true;
			rm_at(w, dirfd(d), de->d_name, depth);
		}
		if (!any)
			break;
	}
	closedir(d);
}

int rm_tree_empty(int fd)
{
	struct rm_walk w = {.top = fd};
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	w.dev = st.st_dev;
	w.mnt = mount_id(fd);
	for (int pass = 0; pass == 0 || (w.moved && pass < 4096); pass++) {
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

		if (copy < 0)
			return -1;
		w.moved = false;
		rm_empty(&w, copy, 0);
	}
	if (w.err) {
		errno = w.err;
		return -1;
	}
	return 0;
}

int rm_tree_at(int dfd, const char *name)
{
	int fd =
	    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -1;
		/* a file or a symlink (itself, never its target) */
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	}
	rc = rm_tree_empty(fd);
	close(fd);
	if (rc < 0)
		return -1;
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1
									: 0;
}

int rm_rf(const char *path)
{
	cleanup_free char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	const char *name = path;
	int dfd, rc, saved;

	if (slash) {
		*slash = '\0';
		name = slash + 1;
	}
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		return -1;
	}
	dfd = open(slash ? (*dir ? dir : "/") : ".",
		   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = rm_tree_at(dfd, name);
	saved = errno;
	close(dfd);
	errno = saved;
	return rc;
}

/* The state letter and the parent of pid (from /proc/PID/stat): 0, or -1
 * when it is gone. */
static int proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], *txt, *rp;
	int pp = -1;
	int rc = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	txt = read_file(path, 4096, NULL);
	if (!txt)
		return -1;
	rp = strrchr(txt, ')'); /* comm may hold spaces and parens */
	if (rp && sscanf(rp + 1, " %c %d", state, &pp) == 2) {
		*ppid = (pid_t)pp;
		rc = 0;
	}
	free(txt);
	return rc;
}

pid_t proc_ppid(pid_t pid)
{
	char state;
	pid_t ppid;

	return proc_stat(pid, &state, &ppid) == 0 ? ppid : -1;
}

int proc_uids(pid_t pid, uid_t uids[4])
{
	char path[64];
	cleanup_free char *txt = NULL;
	const char *line;
	unsigned u[4];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	txt = read_file(path, 16384, NULL);
	line = txt ? strstr(txt, "\nUid:") : NULL;
	if (!line ||
	    sscanf(line + 5, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) != 4)
		return -1;
	for (int i = 0; i < 4; i++)
		uids[i] = (uid_t)u[i];
	return 0;
}

/* pid runs as uid: its real, effective, saved and file system uids (from
 * /proc/PID/status; the owner of /proc/PID is root for a process that
 * made itself non-dumpable, so it is not asked). */
static bool proc_runs_as(pid_t pid, uid_t uid)
{
	uid_t u[4];

	return proc_uids(pid, u) == 0 && u[0] == uid && u[1] == uid &&
	       u[2] == uid && u[3] == uid;
}

/* The user namespace of fd (open, consumed) is (dev, ino) or one nested
 * under it: walked up with NS_GET_PARENT (the kernel nests at most 32
 * deep; the ioctl fails with EPERM above the caller's own namespace). */
static bool ns_fd_below(int fd, dev_t dev, ino_t ino)
{
	for (int depth = 0; fd >= 0 && depth <= 33; depth++) {
		struct stat st;
		int parent;

		if (fstat(fd, &st) == 0 && st.st_dev == dev &&
		    st.st_ino == ino) {
			close(fd);
			return true;
		}
		parent = ioctl(fd, NS_GET_PARENT);
		close(fd);
		fd = parent;
	}
	if (fd >= 0)
		close(fd);
	return false;
}

static int open_userns(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static bool in_userns(pid_t pid, dev_t dev, ino_t ino)
{
	return ns_fd_below(open_userns(pid), dev, ino);
}

int proc_peer_where(int c, dev_t dev, ino_t ino)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct stat own, st;
	int pfd, nfd, rc = PEER_OTHER;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    cr.pid <= 0 || stat("/proc/self/ns/user", &own) < 0)
		return -1;
	/* The peer itself (Linux 6.5), else the process with its pid now;
	 * alive after its namespace is opened, its pid was still its own. */
	cl = sizeof(pfd);
	if (getsockopt(c, SOL_SOCKET, SO_PEERPIDFD, &pfd, &cl) < 0)
		pfd = sys_pidfd_open(cr.pid, 0);
	if (pfd < 0)
		return -1;
	nfd = open_userns(cr.pid);
	/* EACCES: a non-dumpable process whose memory belongs to a namespace
	 * we hold no capability in (a task that slurmstepd forked and
	 * setuid'ed). Every process exec'ed in one of our containers has its
	 * memory in a namespace of ours, where we may read it even so: this
	 * one is not in a container of ours. */
	if (nfd < 0 && errno == EACCES && sys_pidfd_send_signal(pfd, 0) == 0)
		rc = PEER_HOST;
	/* Still the peer (not a recycled pid) once its namespace is open. */
	else if (nfd < 0 || sys_pidfd_send_signal(pfd, 0) < 0 ||
		 fstat(nfd, &st) < 0)
		rc = -1;
	else if (st.st_dev == own.st_dev && st.st_ino == own.st_ino)
		rc = PEER_HOST;
	else {
		rc = ns_fd_below(nfd, dev, ino) ? PEER_INSIDE : PEER_OTHER;
		nfd = -1; /* consumed */
	}
	if (nfd >= 0)
		close(nfd);
	close(pfd);
	return rc;
}

int proc_ns_signal(dev_t dev, ino_t ino, pid_t skip, int sig)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	uid_t uid = getuid();
	pid_t self = getpid();
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[64];
		struct stat st;
		long v;
		pid_t pid, ppid;
		char state;
		int pfd;

		if (parse_long(de->d_name, 2, INT_MAX, &v) < 0)
			continue;
		pid = (pid_t)v;
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		/* A cheap first sieve: /proc/PID is ours, or root's for a
		 * process of ours that made itself non-dumpable. A zombie
		 * has ended: whoever reaps it, it is no member. */
		if (pid == self || pid == skip || stat(path, &st) < 0 ||
		    (st.st_uid != uid && st.st_uid != 0) ||
		    !proc_runs_as(pid, uid) || !in_userns(pid, dev, ino) ||
		    proc_stat(pid, &state, &ppid) < 0 || state == 'Z' ||
		    state == 'X' || (skip > 0 && ppid == skip))
			continue;
		if (sig <= 0) {
			n++;
			continue;
		}
		pfd = sys_pidfd_open(pid, 0);
		if (pfd < 0)
			continue;
		if (in_userns(pid, dev, ino)) {
			n++;
			sys_pidfd_send_signal(pfd, sig);
		}
		close(pfd);
	}
	closedir(d);
	return n;
}

int proc_ns_end(dev_t dev, ino_t ino, pid_t skip, long grace_ms)
{
	long until = mono_ms() + grace_ms;

	if (grace_ms > 0) {
		if (proc_ns_signal(dev, ino, skip, SIGTERM) == 0)
			return 0;
		while (mono_ms() < until && proc_ns_signal(dev, ino, skip, 0))
			usleep(20000);
	}
	/* They may fork while we look: until none is found, 5 s at most. */
	for (int i = 0; i < 500; i++) {
		if (proc_ns_signal(dev, ino, skip, SIGKILL) == 0)
			return 0;
		usleep(10000);
	}
	errno = ETIMEDOUT;
	return -1;
}

/* Find cmd on PATH (from env) as execvp would, for 126/127. */
int proc_resolve_command(const char *cmd, char *const *env, char **out,
			 mpictr_err **err)
{
	const char *path = env_get(env, "PATH");
	int saw_eacces = 0;
	cleanup_free char *copy = NULL;
	char *save = NULL;

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK) == 0) {
			*out = xstrdup(cmd);
			return 0;
		}
		if (errno == ENOENT || errno == ENOTDIR)
			return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, errno,
					    "command '%s' in the container",
					    cmd);
		return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, errno,
				    "command '%s' in the container", cmd);
	}
	copy = xstrdup(path ? path : PROC_DEFAULT_PATH);
	for (char *d = strtok_r(copy, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		cleanup_free char *cand = xasprintf("%s/%s", *d ? d : ".", cmd);
		struct stat st;

		if (stat(cand, &st) < 0 || S_ISDIR(st.st_mode))
			continue;
		if (access(cand, X_OK) == 0) {
			*out = steal_ptr(&cand);
			return 0;
		}
		saw_eacces = 1;
	}
	if (saw_eacces)
		return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, EACCES,
				    "command '%s' in the container", cmd);
	return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, 0,
			    "command '%s' not found in the container (PATH=%s)",
			    cmd, path ? path : PROC_DEFAULT_PATH);
}

bool proc_privileged(void)
{
	return getauxval(AT_SECURE) || getuid() != geteuid() ||
	       getgid() != getegid();
}
