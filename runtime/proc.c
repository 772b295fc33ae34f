/* proc.c - the process layer (see proc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "syscalls.h"
#include "util.h"

#define RELAY_MSG_MAX 1024

/* What a child reports over its CLOEXEC relay pipe (R3). An exec that
 * succeeds closes the pipe with nothing written. */
struct relay {
	int ready; /* relay_send_ready: no error */
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

pid_t proc_fork_relay(int *rfd, int *wfd, const char *what, mpictr_err **err)
{
	int p[2];
	pid_t pid;

	*rfd = *wfd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(err, errno, "pipe");
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

void relay_send_ready(int fd)
{
	struct relay r;

	memset(&r, 0, sizeof(r));
	r.ready = 1;
	relay_write(fd, &r);
}

/* 1: closed empty, 0: ready, -1: error (*err set). */
static int relay_read(int fd, const char *who, mpictr_err **err)
{
	struct relay r;
	ssize_t n = TEMP_FAILURE_RETRY(read(fd, &r, sizeof(r)));

	if (n == 0)
		return 1;
	if (n != (ssize_t)sizeof(r))
		return err_set(err, n < 0 ? errno : EIO,
			       "read the status of the %s", who);
	if (r.ready)
		return 0;
	r.msg[sizeof(r.msg) - 1] = '\0';
	return err_from_relay(err, r.errnum, r.exit_code, r.msg);
}

int relay_recv(int fd, const char *who, mpictr_err **err)
{
	return relay_read(fd, who, err) < 0 ? -1 : 0;
}

int relay_recv_ready(int fd, const char *who, mpictr_err **err)
{
	int rc = relay_read(fd, who, err);

	if (rc > 0)
		return err_set(err, EIO, "the %s exited at start", who);
	if (rc < 0)
		return err_wrap(err, "the %s failed", who);
	return 0;
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

/* nftw keeps no user pointer: the first failure of the walk in progress
 * (rm_rf runs in one thread of a process at a time: the janitor, the
 * supervisor's teardown, the PMI server's stop). */
static __thread int rm_errno;

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 &&
	    errno != ENOENT && !rm_errno)
		rm_errno = errno;
	return 0;
}

int rm_rf(const char *path)
{
	rm_errno = 0;
	/* FTW_PHYS: never follow a link (a rank may have left one);
	 * FTW_MOUNT: stay on this file system. */
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0) {
		if (errno == ENOENT)
			return 0;
		return -1;
	}
	if (rm_errno) {
		errno = rm_errno;
		return -1;
	}
	return 0;
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

static bool in_userns(pid_t pid, dev_t dev, ino_t ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
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
		/* A zombie has ended: whoever reaps it, it is no member. */
		if (pid == self || pid == skip || stat(path, &st) < 0 ||
		    st.st_uid != uid || !in_userns(pid, dev, ino) ||
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
