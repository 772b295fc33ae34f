/* holder.c - the namespace holder: the process that creates a job's user
 * and mount namespaces, mounts the image (its FUSE workers are its
 * children), assembles the root and then waits, keeping the namespaces and
 * the mount alive, until its owner (the launch supervisor or a join-mode
 * keeper) closes its control pipe. Shared by every mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/rootfs.h"
#include "container/caps.h"
#include "common/error.h"
#include "container/exec.h"
#include "container/holder.h"
#include "container/imgtrust.h"
#include "container/ns.h"
#include "common/proc.h"
#include "sif/squash.h"

/* The largest file the holder prefetches (holder_prefetch). */
#define PREFETCH_MAX (64L << 20)

/* The prefetch child (holder_prefetch). File-global, yet safe: only the
 * holder (forked, single-threaded) sets and reads it. */
static pid_t prefetch_pid = -1;

/* Wait until the launcher or keeper closes ctl_rfd, watching the squashfs
 * workers meanwhile. A worker that dies (killed, or a crash in the
 * decompressor) takes the request it was serving with it, and its reader
 * would wait for the answer forever; aborting the whole mount instead makes
 * every reader fail with ENOTCONN, so the job ends with an error instead of
 * hanging. */
static void holder_wait(int ctl_rfd, int sfd, struct squash_mount **sq,
			const char *image)
{
	struct pollfd pfd[2] = {{.fd = ctl_rfd, .events = POLLIN},
				{.fd = sfd, .events = POLLIN}};

	for (;;) {
		struct signalfd_siginfo si;
		pid_t dead;
		int st = 0;
		char c;

		if (poll(pfd, *sq ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents) {
			if (TEMP_FAILURE_RETRY(read(ctl_rfd, &c, 1)) > 0)
				continue;
			return;
		}
		if (!(pfd[1].revents & POLLIN))
			continue;
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
		if (prefetch_pid > 0 &&
		    waitpid(prefetch_pid, NULL, WNOHANG) == prefetch_pid)
			prefetch_pid = -1;
		dead = squash_reap_workers(*sq, &st);
		if (!dead)
			continue;
		if (WIFSIGNALED(st))
			log_error(
			    "image '%s': squashfs worker %d was killed "
			    "by signal %d (%s); its mount is aborted, and "
			    "its readers get an I/O error",
			    image, (int)dead, WTERMSIG(st),
			    strsignal(WTERMSIG(st)));
		else
			log_error("image '%s': squashfs worker %d exited "
				  "with status %d; its mount is aborted, and "
				  "its readers get an I/O error",
				  image, (int)dead, WEXITSTATUS(st));
		squash_abort(*sq);
		*sq = NULL;
	}
}

/* Read a file of the image, to have it in the page cache. (readahead()
 * and POSIX_FADV_WILLNEED do nothing on a FUSE mount: only read() fills
 * it.) At most PREFETCH_MAX bytes. */
static void prefetch_file(const char *path)
{
	static char buf[256 << 10];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	long total = 0;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		while (total < PREFETCH_MAX &&
		       (n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
	close(fd);
}

/* What every rank execs first: the image's /bin/sh when the image has
 * environment scripts, then the command as the ranks will find it. */
static void prefetch_files(const struct plan *p)
{
	cleanup_free char *exe = NULL;

	if (p->env_scripts_known ? strv_len(p->env_scripts) > 0
				 : exec_image_has_env_scripts())
		prefetch_file("/bin/sh");
	if (p->argv && p->argv[0] &&
	    proc_resolve_command(p->argv[0], p->env, &exe, NULL) == 0)
		prefetch_file(exe);
}

/* A fresh squashfs mount has an empty page cache, and every rank's first
 * exec faults the same binary in one small READ at a time, each a round
 * trip to a FUSE worker: on a busy node that holds up the start of every
 * rank (measured: 45 ms from the first rank's exec of the image's sh to
 * its exec of the command, 10 ms when cached). A short-lived child of the
 * holder reads those files with large sequential reads, which the workers
 * serve in parallel, while the ranks join. Called in the container root,
 * once the holder has reported ready; returns the child's pid (reaped by
 * holder_wait) or -1. */
static pid_t holder_prefetch(const struct plan *p, int ctl_rfd, int sfd)
{
	mpictr_err *err = NULL;
	sigset_t none;
	pid_t pid;

	sigemptyset(&none);
	pid = proc_fork_child(&none, "the prefetch", &err);
	mpictr_err_free(err);
	if (pid != 0)
		return pid;
	prctl(PR_SET_NAME, "mpictr-prefetch");
	close(ctl_rfd);
	close(sfd);
	/* Read what a rank may read, no more: the holder's capabilities in
	 * its user namespace are not needed to read files. */
	if (caps_drop_all(NULL) < 0)
		_exit(0);
	prefetch_files(p);
	_exit(0);
}

static void holder_main(const struct plan *p, int nworkers,
			const sigset_t *mask, pid_t parent, int ctl_rfd,
			int sync_wfd)
{
	struct squash_mount *sq = NULL;
	mpictr_err *err = NULL;
	sigset_t chld;
	int sfd, ifd = -1;

	proc_child_setup(mask, parent);
	close_all_fds_except((int[]){ctl_rfd, sync_wfd}, 2);
	/* The holder keeps the namespace alive; it must not be the target of
	 * the signals meant for the job: the terminal's, and those sent to the
	 * whole process group (`timeout`, `kill -- -PGID`), which the
	 * supervisor forwards to the ranks. It ends when the control pipe
	 * closes, or with the supervisor (PDEATHSIG). Its FUSE workers inherit
	 * this. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	/* Blocked before the workers exist, so that no death is missed. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		err_set(&err, errno, "signalfd in the namespace holder");
	/* The site's signature policy first: nothing is created or mounted
	 * for an image it refuses, and the file verified is the one
	 * mounted. */
	if (sfd < 0 || imgtrust_enforce(p, &ifd, &err) < 0 ||
	    ns_create(p->uid_in, p->gid_in, &err) < 0 ||
	    rootfs_build(p, nworkers, ifd, &sq, &err) < 0) {
		relay_send(sync_wfd, err);
		_exit(MPICTR_EXIT_FAILURE);
	}
	close(sync_wfd); /* ready */
	if (sq)
		prefetch_pid = holder_prefetch(p, ctl_rfd, sfd);
	holder_wait(ctl_rfd, sfd, &sq, p->image.path);
	squash_abort(sq); /* no rank is left */
	_exit(0);
}

int holder_start(const struct plan *p, int nworkers, const sigset_t *mask,
		 struct holder *h, mpictr_err **err)
{
	int ctl[2], rfd, wfd;
	cleanup_free char *u = NULL, *m = NULL;
	pid_t pid, self = getpid();

	h->pid = 0;
	h->ctl = h->userns = h->mntns = -1;
	if (pipe2(ctl, O_CLOEXEC) < 0)
		return err_set(
		    err, errno,
		    "create the control pipe of the namespace holder");
	pid = proc_fork_relay(&rfd, &wfd, "the namespace holder", err);
	if (pid < 0) {
		close(ctl[0]);
		close(ctl[1]);
		return -1;
	}
	if (pid == 0) {
		close(ctl[1]);
		holder_main(p, nworkers, mask, self, ctl[0], wfd);
	}
	close(ctl[0]);
	h->pid = pid;
	h->ctl = ctl[1];
	if (relay_recv(rfd, "namespace holder", err) < 0) {
		close(rfd);
		return -1;
	}
	close(rfd);
	u = xasprintf("/proc/%d/ns/user", (int)pid);
	m = xasprintf("/proc/%d/ns/mnt", (int)pid);
	h->userns = open(u, O_RDONLY | O_CLOEXEC);
	h->mntns = open(m, O_RDONLY | O_CLOEXEC);
	if (h->userns < 0 || h->mntns < 0)
		return err_set(err, errno, "open the namespaces of the holder");
	return 0;
}

void holder_stop(struct holder *h)
{
	if (h->ctl >= 0)
		close(h->ctl);
	if (h->userns >= 0)
		close(h->userns);
	if (h->mntns >= 0)
		close(h->mntns);
	if (h->pid > 0)
		TEMP_FAILURE_RETRY(waitpid(h->pid, NULL, 0));
	h->pid = 0;
	h->ctl = h->userns = h->mntns = -1;
}
