/* launch.c - launch mode (mpictr -n N), the single process (no -n) and,
 * with node_daemon.c, node daemon mode: plan -> holder -> PMI -> ranks.
 * run.c decides the mode and calls launch_run().
 *
 * Process model (docs/architecture.md):
 *   supervisor (the caller, host namespaces): PMI servers, signal
 *     forwarding, exit status; forks, in order:
 *   janitor: in a session of its own, waits for the supervisor to go
 *     away, however it ends, and removes the job's private run directory
 *     (so a SIGKILL, even to the whole process group, leaves nothing);
 *   holder: creates the user+mount namespace, mounts the image (its FUSE
 *     workers are its children), assembles the root, then waits until the
 *     supervisor closes its control pipe. It outlives every rank, so the
 *     mount does too;
 *   ranks: join the holder's namespaces, drop capabilities, exec;
 *   spawned processes (MPI_Comm_spawn, spawn.c): the same, later, each
 *     when a rank asks through the PMIx server.
 * Every child has PR_SET_PDEATHSIG(SIGKILL) except the janitor, so killing
 * the supervisor ends the job and the namespace with it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/exec.h"
#include "container/holder.h"
#include "sched/node_daemon.h"
#include "modes/launch.h"
#include "common/error.h"
#include "plan/plan.h"
#include "plan/prepare.h"
#include "pmi/pmi.h"
#include "common/proc.h"
#include "modes/spawn.h"

#define TERM_GRACE_MS 3000

struct job {
	const mpictr_config *cfg;
	const struct ns_source *inst; /* joined instance, or NULL */
	struct plan plan;
	char *run_dir;
	sigset_t old_mask;
	pid_t supervisor;
	pid_t janitor;
	int janitor_fd; /* write end; closing it lets the janitor clean */
	struct holder *holders; /* plan.nholders */
	pid_t *ranks;
	int *status;   /* wait status per rank, -1 while running */
	int *out_fd;   /* --tag-output: read ends of rank stdout/stderr */
	bool *midline; /* --tag-output: last byte of rank r was not \n */
	struct pmi_server *pmi;
	struct pmi_single *single_pmi; /* a single process's PMI-1 service */
	struct pmi_upstream *upstream; /* node daemon mode, else NULL */
	struct spawner *spawn;	       /* MPI_Comm_spawn (launch mode) */
	uint32_t rank_base;	       /* global rank of local rank 0 */
	int abort_pipe[2];
	int sfd;		   /* signalfd */
	struct sigaction old_pipe; /* SIGPIPE's, while the PMI servers run */
	bool pipe_ignored;
};

/* The janitor's lock in the job directory: held (flock) for as long as
 * the janitor lives, so that a directory whose lock can be taken has no
 * janitor any more (a SIGKILL of every process of the user, a cgroup
 * kill) and is swept by the user's next job (sweep_stale). */
#define JANITOR_LOCK ".janitor"

/* Remove the job directories of ours in base (mpictr-UID.XXXXXX, our own
 * private directories holding a janitor lock nobody holds), left by jobs
 * whose janitor was killed: all through descriptors (rm_tree_empty), so
 * that nothing but the directory itself is touched. A directory without
 * the lock (one being made, or of an older mpictr) is left alone. */
static void sweep_stale(const char *base)
{
	cleanup_free char *prefix = xasprintf("mpictr-%u.", (unsigned)getuid());
	int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = bfd >= 0 ? fdopendir(bfd) : NULL;
	struct dirent *de;

	if (!d) {
		if (bfd >= 0)
			close(bfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int fd, lfd;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    strlen(de->d_name) != strlen(prefix) + 6)
			continue;
		fd = openat(bfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		lfd = openat(fd, JANITOR_LOCK,
			     O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fstat(fd, &st) == 0 && st.st_uid == getuid() &&
		    !(st.st_mode & 077) && lfd >= 0 &&
		    flock(lfd, LOCK_EX | LOCK_NB) == 0) {
			log_debug("sweep the stale job directory '%s/%s'", base,
				  de->d_name);
			rm_tree_empty(fd);
			unlinkat(bfd, de->d_name, AT_REMOVEDIR);
		}
		if (lfd >= 0)
			close(lfd);
		close(fd);
	}
	closedir(d);
}

/* The janitor takes its lock in the new directory dir: made under
 * another name and locked before it is renamed into place, so that no
 * sweeper ever finds the lock untaken while the janitor lives. The
 * descriptor (held until the janitor ends), or -1 with errno. */
static int janitor_lock(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int lfd =
	    dfd >= 0
		? openat(dfd, JANITOR_LOCK ".new",
			 O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 0600)
		: -1;
	int saved = errno;

	if (lfd >= 0 &&
	    (flock(lfd, LOCK_EX | LOCK_NB) < 0 ||
	     renameat(dfd, JANITOR_LOCK ".new", dfd, JANITOR_LOCK) < 0)) {
		saved = errno;
		close(lfd);
		lfd = -1;
	}
	if (dfd >= 0)
		close(dfd);
	errno = saved;
	return lfd;
}

/* A job's user namespace, as the supervisor tells the janitor. */
struct job_ns {
	uint64_t dev, ino;
};
#define JANITOR_NS_MAX 64

static int job_ns_of(const struct holder *h, struct job_ns *ns)
{
	struct stat st;

	if (h->userns < 0 || fstat(h->userns, &st) < 0)
		return -1;
	ns->dev = (uint64_t)st.st_dev;
	ns->ino = (uint64_t)st.st_ino;
	return 0;
}

/* dir: the mkdtemp template (the child's copy, made in place). A watcher
 * (proc_fork_watcher) in a session of its own, out of the launcher's
 * process group: a SIGKILL to the group (timeout -s KILL, kill -- -PGID, a
 * batch system killing by group) or the terminal's ^C and hang-up end the
 * job but not the janitor, whose only job is to run after everything else
 * has ended. No signal that can be ignored ends it before it has cleaned
 * (only a SIGKILL aimed at it, or at its cgroup, does). It holds no
 * terminal, output or working directory of the user's, and still ends by
 * itself: when the supervisor is gone and the directory too. It makes the
 * directory itself, once out of the group, so that no moment exists where
 * the directory is there and no janitor is. */
static _Noreturn void janitor_main(int life_fd, int relay_fd, char *dir)
{
	mpictr_err *err = NULL;
	size_t len = strlen(dir), got;
	struct job_ns ns[JANITOR_NS_MAX];

	if (!mkdtemp(dir)) {
		err_set(&err, errno ? errno : EIO,
			"create the job directory '%s'", dir);
		relay_send(relay_fd, err);
		_exit(0);
	}
	if (janitor_lock(dir) < 0) {
		err_set(&err, errno ? errno : EIO,
			"lock the job directory '%s'", dir);
		rm_rf(dir);
		relay_send(relay_fd, err);
		_exit(0);
	}
	/* What mkdtemp put in place of the template's XXXXXX. */
	relay_send_note(relay_fd, dir + len - 6);
	close(relay_fd);
	/* The namespaces of the holders, then EOF: the supervisor is gone.
	 * Whatever it left in them (a double-forked daemon, a process in a
	 * nested namespace) ends before the directory is removed. */
	got = proc_watch_lifeline(life_fd, ns, sizeof(ns));
	for (size_t i = 0; i < got / sizeof(ns[0]); i++)
		proc_ns_end((dev_t)ns[i].dev, (ino_t)ns[i].ino, 0, 0);
	/* The ranks and the holder die of PR_SET_PDEATHSIG when the
	 * supervisor does, possibly a moment after it: an entry made in the
	 * meantime fails the rmdir, so try again for up to 5 s. */
	for (int i = 0; i < 50 && rm_rf(dir) < 0; i++)
		usleep(100 * 1000);
	_exit(0);
}

/* --bind-to core: rank r gets the r-th CPU (round robin) of the CPUs the
 * launcher may use. Returns -1 with errno set. */
static int bind_rank_to_core(int rank)
{
	cpu_set_t allowed, one;
	int n = 0, want;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return -1;
	n = CPU_COUNT(&allowed);
	if (n <= 0) {
		errno = EINVAL;
		return -1;
	}
	want = rank % n;
	CPU_ZERO(&one);
	for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed) && k++ == want) {
			CPU_SET(c, &one);
			break;
		}
	return sched_setaffinity(0, sizeof(one), &one);
}

static void rank_main(struct job *j, int rank, int sync_wfd, int pmi_fd,
		      char **env, int out_wfd)
{
	mpictr_err *err = NULL;
	size_t h = j->plan.nholders > 1 ? (size_t)rank : 0;

	proc_child_setup(&j->old_mask, j->supervisor);
	if (j->cfg->bind_to && strcmp(j->cfg->bind_to, "core") == 0 &&
	    bind_rank_to_core(rank) < 0)
		log_warn("rank %d: bind to a core: %s", rank, strerror(errno));
	proc_child_stdio(rank > 0 && j->plan.serves_pmi, out_wfd);
	container_exec(&j->plan, env, j->holders[h].userns, j->holders[h].mntns,
		       pmi_fd, &err);
	if (j->plan.serves_pmi)
		err_wrap(&err, "rank %d", rank);
	relay_send(sync_wfd, err);
	_exit(mpictr_err_exit_code(err));
}

/* ---- supervisor ----------------------------------------------------- */

/* Start the janitor, which makes the directory j->run_dir (a mkdtemp
 * template) names and reports it; j->run_dir is then the directory. */
static int start_janitor(struct job *j, mpictr_err **err)
{
	char suffix[8] = "";
	size_t len = strlen(j->run_dir);
	int rfd, wfd;

	j->janitor = proc_fork_watcher(true, &j->janitor_fd, &rfd, &wfd,
				       "the cleanup process", err);
	if (j->janitor < 0) {
		j->janitor = 0;
		return -1;
	}
	if (j->janitor == 0)
		janitor_main(j->janitor_fd, wfd, j->run_dir);
	if (relay_recv_note(rfd, "cleanup process", suffix, sizeof(suffix),
			    err) < 0 ||
	    strlen(suffix) != 6 || strchr(suffix, '/')) {
		if (!*err)
			err_set(err, EIO, "create the job directory '%s'",
				j->run_dir);
		close(rfd);
		free(j->run_dir);
		j->run_dir = NULL;
		return -1;
	}
	close(rfd);
	memcpy(j->run_dir + len - 6, suffix, 6);
	return 0;
}

static int make_run_dir(struct job *j, mpictr_err **err)
{
	const char *base = env_get(j->cfg->host_env, "TMPDIR");
	struct stat st;

	/* Node daemon mode: Slurm's per-step directory, which slurmstepd
	 * removes even when it kills the step (and our janitor with it). */
	if (j->upstream && pmi_upstream_step_dir(j->upstream) &&
	    access(pmi_upstream_step_dir(j->upstream), W_OK) == 0)
		base = pmi_upstream_step_dir(j->upstream);
	if (!base || base[0] != '/' || access(base, W_OK) < 0)
		base = "/tmp";
	/* An instance's ranks see its directory, bound in at the same path. */
	if (j->inst)
		base = j->inst->run_base;
	sweep_stale(base);
	j->run_dir = xasprintf("%s/mpictr-%u.XXXXXX", base, (unsigned)getuid());
	if (strlen(j->run_dir) >= PATH_MAX)
		return err_set(err, ENAMETOOLONG,
			       "create the job directory '%s'", j->run_dir);
	if (start_janitor(j, err) < 0)
		return -1;
	/* mkdtemp made it 0700 and ours; check anyway before trusting it. */
	if (lstat(j->run_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 077)) {
		err_set(err, EPERM,
			"job directory '%s' is not a private directory of ours",
			j->run_dir);
		free(j->run_dir);
		j->run_dir = NULL;
		return -1;
	}
	return 0;
}

static void on_pmi_abort(int code, const char *msg, void *data)
{
	struct job *j = data;
	unsigned char c = (unsigned char)(code & 0xff);

	if (write(j->abort_pipe[1], &c, 1) < 0) {
		/* the supervisor is already tearing down */
	}
}

static int rank_env(struct job *j, int rank, char ***env, int *pmi_fd,
		    mpictr_err **err)
{
	*env = plan_rank_env(&j->plan, rank);
	*pmi_fd = -1;
	env_binding(env, j->cfg->bind_to);
	if (j->single_pmi)
		pmi_single_env(j->single_pmi, env);
	if (!j->plan.serves_pmi)
		return 0;
	return pmi_server_rank_env(j->pmi, j->rank_base + (uint32_t)rank, env,
				   pmi_fd, err);
}

static int start_rank(struct job *j, int rank, mpictr_err **err)
{
	int rfd, wfd, out[2] = {-1, -1}, pmi_fd;
	char **env = NULL;
	pid_t pid;

	if (rank_env(j, rank, &env, &pmi_fd, err) < 0)
		return -1;
	if (j->cfg->tag_output && pipe2(out, O_CLOEXEC) < 0) {
		strv_free(env);
		return err_set(err, errno, "create the output pipe of rank %d",
			       rank);
	}
	pid = proc_fork_relay(&rfd, &wfd, "a rank", err);
	if (pid < 0) {
		strv_free(env);
		if (out[0] >= 0) {
			close(out[0]);
			close(out[1]);
		}
		return err_wrap(err, "rank %d", rank);
	}
	if (pid == 0) {
		if (out[0] >= 0)
			close(out[0]);
		rank_main(j, rank, wfd, pmi_fd, env, out[1]);
	}
	strv_free(env);
	if (out[1] >= 0)
		close(out[1]);
	j->out_fd[rank] = out[0];
	j->ranks[rank] = pid;
	if (j->plan.serves_pmi)
		pmi_server_rank_forked(j->pmi, j->rank_base + (uint32_t)rank);
	if (relay_recv(rfd, "rank", err) < 0) {
		int st;
		close(rfd);
		TEMP_FAILURE_RETRY(waitpid(pid, &st, 0));
		j->ranks[rank] = 0;
		j->status[rank] = st;
		return -1;
	}
	close(rfd);
	return 0;
}

static void signal_ranks(struct job *j, int sig)
{
	for (int r = 0; r < j->plan.nranks; r++)
		if (j->ranks[r] > 0 && j->status[r] < 0)
			kill(j->ranks[r], sig);
	spawner_signal(j->spawn, sig);
}

/* ^C and ^\ from the terminal reach the whole foreground process group,
 * ranks included: forwarding them again would deliver them twice. */
static bool from_tty(const struct signalfd_siginfo *si)
{
	return (si->ssi_signo == SIGINT || si->ssi_signo == SIGQUIT) &&
	       si->ssi_code == SI_KERNEL;
}

/* Copy one chunk of a rank's output, prefixing each line with [rank]. */
static void pump_output(struct job *j, int r)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "[%d] ", r);
	output_pump(&j->out_fd[r], &j->midline[r], tag);
}

/* What the supervisor loop keeps. */
struct watch {
	int live;	/* ranks running */
	int fail_code;	/* exit code of the first rank or spawned process
			   that failed, or -1 */
	int abort_code; /* from MPI_Abort & co, or -1 */
	long kill_at;	/* SIGKILL what is left at this time, or -1 */
	bool ending;	/* SIGTERM sent: no new spawns */
};

/* The first failure (or an abort) ends the job: SIGTERM now, SIGKILL
 * after the grace period. */
static void end_job(struct job *j, struct watch *w)
{
	if (w->ending)
		return;
	w->ending = true;
	signal_ranks(j, SIGTERM);
	w->kill_at = mono_ms() + TERM_GRACE_MS;
}

/* The first rank that failed, named on stderr as mpirun names it: its
 * global rank, pid and node, and its exit status or signal. Under -n
 * only: a single process's status is simply the command's. */
static void report_failed_rank(const struct job *j, int r, int st, bool more)
{
	char host[256] = "?";
	const char *sig, *rest = more ? "; ending the other ranks" : "";
	uint32_t g = j->rank_base + (uint32_t)r;

	if (!j->plan.serves_pmi)
		return;
	if (gethostname(host, sizeof(host) - 1) < 0)
		strcpy(host, "?");
	if (WIFSIGNALED(st)) {
		sig = sigabbrev_np(WTERMSIG(st));
		log_error("rank %u (pid %d) on node %s was killed by signal "
			  "%d (SIG%s)%s",
			  g, (int)j->ranks[r], host, WTERMSIG(st),
			  sig ? sig : "?", rest);
	} else {
		log_error("rank %u (pid %d) on node %s exited with status "
			  "%d%s",
			  g, (int)j->ranks[r], host, WEXITSTATUS(st), rest);
	}
}

/* Reap every child that exited: ranks, spawned processes, holders.
 * Anything else (a child of ours the job does not know) is only
 * logged. */
static void reap(struct job *j, struct watch *w)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int code = spawner_reaped(j->spawn, pid, st);
		bool known = code >= 0;

		if (code > 0 && w->fail_code < 0) {
			w->fail_code = code;
			end_job(j, w);
		}
		for (int r = 0; !known && r < j->plan.nranks; r++) {
			if (j->ranks[r] != pid)
				continue;
			known = true;
			j->status[r] = st;
			w->live--;
			if (j->plan.serves_pmi)
				pmi_server_rank_exited(j->pmi, j->rank_base +
								   (uint32_t)r);
			if (exit_code_of(st) != 0 && w->fail_code < 0) {
				bool more =
				    w->live > 0 || spawner_live(j->spawn);

				w->fail_code = exit_code_of(st);
				if (!w->ending)
					report_failed_rank(j, r, st, more);
				if (more)
					end_job(j, w);
			}
		}
		for (size_t h = 0; !known && h < j->plan.nholders; h++) {
			if (j->holders[h].pid != pid)
				continue;
			known = true;
			j->holders[h].pid = 0;
			if (w->live > 0 || spawner_live(j->spawn)) {
				log_error("the namespace holder exited early "
					  "(status 0x%x); ending the job",
					  st);
				signal_ranks(j, SIGKILL);
			}
		}
		if (!known)
			log_debug("reaped process %d (status 0x%x), not one "
				  "of the job's",
				  (int)pid, st);
	}
}

/* After the last rank: what is still in the --tag-output pipes is written
 * out whole; a pipe that a rank's leftover child holds open is given up
 * after DRAIN_IDLE_MS without data (the child is not waited for). */
#define DRAIN_IDLE_MS 500
static void drain_output(struct job *j)
{
	for (;;) {
		struct pollfd pfd[4096];
		int idx[4096];
		nfds_t np = 0;
		int n;

		for (int r = 0; r < j->plan.nranks && np < ARRAY_SIZE(pfd); r++)
			if (j->out_fd[r] >= 0) {
				idx[np] = r;
				pfd[np++] = (struct pollfd){.fd = j->out_fd[r],
							    .events = POLLIN};
			}
		if (np == 0)
			return;
		n = poll(pfd, np, DRAIN_IDLE_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (nfds_t i = 0; i < np; i++)
			if (pfd[i].revents)
				pump_output(j, idx[i]);
	}
	for (int r = 0; r < j->plan.nranks; r++)
		if (j->out_fd[r] >= 0) {
			if (j->midline[r])
				(void)!write(STDOUT_FILENO, "\n", 1);
			close(j->out_fd[r]);
			j->out_fd[r] = -1;
		}
}

/* Wait for every rank and spawned process; forward signals; on the first
 * failure (or an abort) terminate the others, then kill them after a
 * grace period. */
/* --timeout passed: name the ranks still running (as a failing rank is
 * named) and end the job; exit status 124, as timeout(1). */
static void timed_out(struct job *j, struct watch *w)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *list = NULL;
	int n = 0;

	for (int r = 0; r < j->plan.nranks; r++)
		if (j->ranks[r] > 0 && j->status[r] < 0)
			sb_printf(&sb, "%s%u", n++ ? ", " : "",
				  j->rank_base + (uint32_t)r);
	list = sb_steal(&sb);
	if (j->cfg->nranks > 0)
		log_error("--timeout %d s passed: rank%s %s still running "
			  "(of %d); ending the job",
			  j->cfg->timeout_s, n == 1 ? "" : "s",
			  n ? list : "none", j->plan.nranks);
	else
		log_error("--timeout %d s passed: the command is still "
			  "running; ending it",
			  j->cfg->timeout_s);
	if (w->fail_code < 0 && w->abort_code < 0)
		w->fail_code = 124;
	end_job(j, w);
}

static int supervise(struct job *j, int *status)
{
	struct watch w = {0, -1, -1, -1, false};
	long deadline = j->cfg->timeout_s > 0
			    ? mono_ms() + (long)j->cfg->timeout_s * 1000
			    : -1;

	for (int r = 0; r < j->plan.nranks; r++)
		if (j->ranks[r] > 0 && j->status[r] < 0)
			w.live++;
	while (w.live > 0 || spawner_live(j->spawn) > 0) {
		struct pollfd pfd[2 + 4096];
		nfds_t np = 0, nranks_fds, nsp;
		int timeout = -1;

		pfd[np++] = (struct pollfd){.fd = j->sfd, .events = POLLIN};
		pfd[np++] =
		    (struct pollfd){.fd = j->abort_pipe[0], .events = POLLIN};
		for (int r = 0; r < j->plan.nranks && np < ARRAY_SIZE(pfd); r++)
			if (j->out_fd[r] >= 0)
				pfd[np++] = (struct pollfd){.fd = j->out_fd[r],
							    .events = POLLIN};
		nranks_fds = np;
		nsp = spawner_pollfds(j->spawn, pfd + np, ARRAY_SIZE(pfd) - np);
		np += nsp;
		if (w.kill_at >= 0) {
			long left = w.kill_at - mono_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		if (deadline >= 0 && !w.ending) {
			long left = deadline - mono_ms();
			if (timeout < 0 || left < timeout)
				timeout = left > 0 ? (int)left : 0;
		}
		if (poll(pfd, np, timeout) < 0 && errno != EINTR)
			break;
		if (deadline >= 0 && !w.ending && mono_ms() >= deadline)
			timed_out(j, &w);
		if (w.kill_at >= 0 && mono_ms() >= w.kill_at) {
			signal_ranks(j, SIGKILL);
			w.kill_at = -1;
		}
		if (pfd[1].revents & POLLIN) {
			unsigned char c;
			/* The first reason wins: a process that failed
			 * before the abort (a killed child the others
			 * then abort over) gives the job's status. */
			if (read(j->abort_pipe[0], &c, 1) == 1 &&
			    w.abort_code < 0 && w.fail_code < 0) {
				w.abort_code = c;
				log_notice("job aborted by a rank with code %d",
					   w.abort_code);
				end_job(j, &w);
			}
		}
		for (nfds_t i = 2; i < nranks_fds; i++)
			if (pfd[i].revents)
				for (int r = 0; r < j->plan.nranks; r++)
					if (j->out_fd[r] == pfd[i].fd) {
						pump_output(j, r);
						break;
					}
		spawner_poll(j->spawn, pfd + nranks_fds, nsp, (uint32_t)w.live,
			     w.ending);
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(j->sfd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo != SIGCHLD && !from_tty(&si))
				signal_ranks(j, (int)si.ssi_signo);
		}
		reap(j, &w);
	}
	drain_output(j);
	if (w.abort_code >= 0)
		*status = w.abort_code;
	else
		*status = w.fail_code >= 0 ? w.fail_code : 0;
	return 0;
}

static void teardown(struct job *j)
{
	/* Ranks first (a failed start may leave some), then the spawned
	 * processes, then the holders, then the PMI server, then the
	 * janitor's directory. */
	for (int r = 0; r < j->plan.nranks; r++)
		if (j->ranks && j->ranks[r] > 0 && j->status[r] < 0) {
			kill(j->ranks[r], SIGKILL);
			TEMP_FAILURE_RETRY(waitpid(j->ranks[r], NULL, 0));
		}
	spawner_stop(j->spawn);
	j->spawn = NULL;
	/* Whatever the ranks left in the job's namespaces (not an
	 * instance's: those are its members) ends before the holders. */
	for (size_t h = 0; !j->inst && h < j->plan.nholders; h++) {
		struct job_ns ns;

		if (job_ns_of(&j->holders[h], &ns) == 0)
			proc_ns_end((dev_t)ns.dev, (ino_t)ns.ino,
				    j->holders[h].pid, 0);
	}
	for (size_t h = 0; h < j->plan.nholders; h++) {
		if (j->holders[h].ctl >= 0)
			close(j->holders[h].ctl);
		j->holders[h].ctl = -1;
	}
	for (size_t h = 0; h < j->plan.nholders; h++) {
		holder_stop(&j->holders[h]);
	}
	if (j->pmi)
		pmi_server_stop(j->pmi);
	pmi_single_stop(j->single_pmi);
	pmi_upstream_stop(j->upstream); /* after the server: it uses it */
	if (j->run_dir && j->janitor_fd >= 0)
		rm_rf(j->run_dir); /* made by the janitor: ours */
	if (j->janitor_fd >= 0)
		close(j->janitor_fd);
	if (j->janitor > 0)
		TEMP_FAILURE_RETRY(waitpid(j->janitor, NULL, 0));
	for (int r = 0; r < j->plan.nranks; r++)
		if (j->out_fd && j->out_fd[r] >= 0)
			close(j->out_fd[r]);
	if (j->sfd >= 0)
		close(j->sfd);
	if (j->pipe_ignored)
		sigaction(SIGPIPE, &j->old_pipe, NULL);
	if (j->abort_pipe[0] >= 0) {
		close(j->abort_pipe[0]);
		close(j->abort_pipe[1]);
	}
	sigprocmask(SIG_SETMASK, &j->old_mask, NULL);
	free(j->holders);
	free(j->ranks);
	free(j->status);
	free(j->out_fd);
	free(j->midline);
	free(j->run_dir);
	plan_free(&j->plan);
}

/* The PMI servers and, in launch mode, the service that starts what the
 * ranks spawn (node daemon mode refuses PMIx_Spawn: NOT_SUPPORTED). */
static int start_pmi(struct job *j, mpictr_err **err)
{
	const mpictr_config *cfg = j->cfg;
	struct spawn_ctx sc;
	struct pmi_job pj;
	int prc;

	if (j->upstream
		? daemon_job(cfg, j->upstream, j->plan.nranks, j->plan.uid_in,
			     j->plan.gid_in, &pj, &j->rank_base, err) < 0
		: pmi_job_single_node((uint32_t)j->plan.nranks, j->plan.uid_in,
				      j->plan.gid_in, &pj, err) < 0)
		return -1;
	pj.universe = j->plan.universe;
	prc = pmi_server_start_upstream(&pj, j->run_dir, j->upstream,
					on_pmi_abort, j, &j->pmi, err);
	sc = (struct spawn_ctx){
	    .plan = &j->plan,
	    .old_mask = &j->old_mask,
	    .supervisor = j->supervisor,
	    .userns = j->holders[0].userns,
	    .mntns = j->holders[0].mntns,
	    .tag_output = cfg->tag_output,
	    .first_local = j->plan.nranks,
	    .pmi = j->pmi,
	    .universe = j->plan.universe,
	    .universe_hard = j->plan.universe_hard,
	};
	pmi_job_free(&pj);
	if (prc < 0 || j->upstream)
		return prc;
	return spawner_start(&sc, &j->spawn, err);
}

/* The per-rank and per-holder arrays of j, sized by its plan. */
static void job_alloc(struct job *j)
{
	j->holders = xcalloc(j->plan.nholders, sizeof(*j->holders));
	for (size_t h = 0; h < j->plan.nholders; h++)
		j->holders[h].ctl = j->holders[h].userns = j->holders[h].mntns =
		    -1;
	j->ranks = xcalloc((size_t)j->plan.nranks, sizeof(pid_t));
	j->status = xcalloc((size_t)j->plan.nranks, sizeof(int));
	j->out_fd = xcalloc((size_t)j->plan.nranks, sizeof(int));
	j->midline = xcalloc((size_t)j->plan.nranks, sizeof(bool));
	for (int r = 0; r < j->plan.nranks; r++)
		j->status[r] = j->out_fd[r] = -1;
}

/* The job's namespaces: a holder of its own (one per rank with
 * --no-share), or the instance's. */
static int job_namespaces(struct job *j, mpictr_err **err)
{
	if (j->inst) {
		j->holders[0].userns =
		    fcntl(j->inst->userns, F_DUPFD_CLOEXEC, 0);
		j->holders[0].mntns = fcntl(j->inst->mntns, F_DUPFD_CLOEXEC, 0);
		if (j->holders[0].userns < 0 || j->holders[0].mntns < 0)
			return err_set(err, errno, "instance '%s'",
				       j->inst->name);
		return 0;
	}
	for (size_t h = 0; h < j->plan.nholders; h++) {
		struct job_ns ns;

		if (holder_start(&j->plan, j->plan.fuse_workers, &j->old_mask,
				 &j->holders[h], err) < 0)
			return -1;
		/* The janitor ends what is left in it, however we end. */
		if (j->janitor_fd >= 0 && h < JANITOR_NS_MAX &&
		    job_ns_of(&j->holders[h], &ns) == 0 &&
		    write_full(j->janitor_fd, &ns, sizeof(ns)) < 0)
			return err_set(err, errno, "tell the cleanup process");
	}
	return 0;
}

/* More ranks on this node than the cores it may use: said once, as a
 * notice (it runs, as under mpirun --oversubscribe), or refused with
 * --no-oversubscribe (or oversubscribe = no), as mpirun refuses it. */
static int check_oversubscribed(const struct mpictr_config *cfg,
				const struct plan *p, mpictr_err **err)
{
	uint32_t cores = p->ncores;

	if (cores == 0 || (uint32_t)cfg->nranks <= cores)
		return 0;
	if (cfg->no_oversubscribe ||
	    streq0(cfg->site.oversubscribe.value, "no")) {
		err_set(err, 0,
			"-n %d: more ranks than the %u cores this node may "
			"use, and %s refuses to oversubscribe them",
			cfg->nranks, cores,
			cfg->no_oversubscribe ? "--no-oversubscribe"
					      : "oversubscribe = no");
		return err_hint(err,
				"use -n %u or fewer, or leave out "
				"--no-oversubscribe",
				cores);
	}
	log_notice("-n %d on %u cores: the ranks oversubscribe them (as "
		   "mpirun --oversubscribe; --no-oversubscribe refuses it)",
		   cfg->nranks, cores);
	return 0;
}

int launch_run(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct ns_source *inst, int *status, mpictr_err **err)
{
	struct job j;
	sigset_t mask;
	int rc = -1;

	memset(&j, 0, sizeof(j));
	j.cfg = cfg;
	j.inst = inst;
	j.janitor_fd = j.sfd = j.abort_pipe[0] = j.abort_pipe[1] = -1;
	j.supervisor = getpid();

	/* Block the signals we forward before any child exists, so none is
	 * lost between fork and the loop; children restore old_mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &j.old_mask);
	j.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (j.sfd < 0) {
		err_set(err, errno, "create the supervisor's signalfd");
		sigprocmask(SIG_SETMASK, &j.old_mask, NULL);
		return -1;
	}
	if (pipe2(j.abort_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		err_set(err, errno, "create the supervisor's abort pipe");
		goto out;
	}
	if (d->mode == RUN_NODE_DAEMON &&
	    daemon_start(cfg, &j.upstream, err) < 0)
		goto out;
	/* The job directory holds the PMI servers' files and nothing else:
	 * a single process (no -n) needs neither it nor the janitor, which
	 * saves a fork, a mkdtemp, a bind and an rm_rf per run. */
	if (run_mode_serves_pmi(d->mode) && make_run_dir(&j, err) < 0)
		goto out;
	/* An instance's UCX answer: its commands run no helper. */
	if (plan_prepare(
		cfg, d, j.run_dir,
		j.inst ? &(struct host_given){.ucx_known = j.inst->ucx_known,
					      .ucx_net_devices = j.inst->ucx}
		       : NULL,
		&j.plan, err) < 0)
		goto out;
	for (size_t i = 0; j.plan.notices && j.plan.notices[i]; i++)
		log_notice("%s", j.plan.notices[i]);
	job_alloc(&j);
	if (cfg->nranks > 0 && check_oversubscribed(cfg, &j.plan, err) < 0)
		goto out;

	/* Holders before the PMI server: fork while single-threaded. */
	if (job_namespaces(&j, err) < 0)
		goto out;
	/* libpmix writes to its clients without MSG_NOSIGNAL: a client that
	 * went away (or that the guard or the gate shut out) must be an
	 * EPIPE there, never the end of the launcher. Every child resets it
	 * (proc_child_setup). */
	if (j.plan.serves_pmi &&
	    sigaction(SIGPIPE, &(struct sigaction){.sa_handler = SIG_IGN},
		      &j.old_pipe) == 0)
		j.pipe_ignored = true;
	if (j.plan.serves_pmi && start_pmi(&j, err) < 0)
		goto out;
	/* A single process: any MPICH program it starts, however, finds a
	 * PMI (pmi/pmi1_single.c); Open MPI's is found by the MPI check. */
	if (d->mode == RUN_SINGLE && !j.plan.serves_pmi) {
		if (pmi_single_start(getuid(), &j.single_pmi, err) < 0)
			goto out;
		j.plan.mpicheck.single_pmi = true;
	}
	for (int r = 0; r < j.plan.nranks; r++)
		if (start_rank(&j, r, err) < 0)
			goto out; /* 126/127 travel in the error's exit code */
	rc = supervise(&j, status);
out:
	if (rc < 0)
		daemon_fail(j.upstream, err);
	teardown(&j);
	return rc;
}
