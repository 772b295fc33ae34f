/* pmi_launch.c - a minimal launcher WITHOUT namespaces, to prove mpictr's PMI
 * servers on their own: start the servers, fork N ranks on this host with
 * the rank environment, wait, and end the job on abort.
 *
 *   pmi_launch [-v] -n N CMD [ARGS...]
 *
 * Exit status: the first failing rank's status (exit code, or 128+signal);
 * the abort code when a rank aborts (MPI_Abort) or the servers end the job
 * (1, see docs/pmi.md); 255 when the launcher itself fails. The private
 * tmpdir goes under $PMI_LAUNCH_TMPDIR, else $TMPDIR, else /tmp. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "pmi/pmi.h"
#include "common/util.h"

extern char **environ;

struct abort_rec {
	int code;
	char msg[244];
};

static int abort_pipe[2] = {-1, -1};

static void on_abort(int code, const char *msg, void *data)
{
	struct abort_rec rec = {.code = code};

	snprintf(rec.msg, sizeof(rec.msg), "%s", msg ? msg : "");
	/* One record is below PIPE_BUF, so the write is atomic; a full pipe
	 * means an earlier abort is already pending. */
	if (write(abort_pipe[1], &rec, sizeof(rec)) < 0)
		return;
}

static void log_to_stderr(enum mpictr_log_level level, const char *line,
			  void *data)
{
	dprintf(STDERR_FILENO, "pmi_launch: %s\n", line);
}

static int usage(void)
{
	fprintf(stderr, "usage: pmi_launch [-v] -n N CMD [ARGS...]\n");
	return 255;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void kill_all(pid_t *pids, uint32_t n, int sig)
{
	for (uint32_t r = 0; r < n; r++)
		if (pids[r] > 0)
			kill(-pids[r], sig); /* each rank leads its group */
}

int main(int argc, char **argv)
{
	long n = 0;
	int opt, verbose = 0, status = 0, sfd;
	bool failed = false;
	double kill_at = 0;
	const char *base = getenv("PMI_LAUNCH_TMPDIR");
	struct pmi_job job;
	struct pmi_server *srv = NULL;
	mpictr_err *err = NULL;
	sigset_t mask, oldmask;
	pid_t *pids;
	uint32_t alive = 0;

	while ((opt = getopt(argc, argv, "+vn:")) != -1) {
		switch (opt) {
		case 'v':
			verbose = 1;
			break;
		case 'n':
			if (parse_long(optarg, 1, 4096, &n) < 0)
				return usage();
			break;
		default:
			return usage();
		}
	}
	if (n == 0 || optind >= argc)
		return usage();
	if (verbose)
		mpictr_set_log_sink(log_to_stderr, NULL, MPICTR_LOG_DEBUG);
	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if (pipe2(abort_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		perror("pmi_launch: pipe");
		return 255;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("pmi_launch: signalfd");
		return 255;
	}

	if (pmi_job_single_node((uint32_t)n, getuid(), getgid(), &job,
				&err) < 0 ||
	    pmi_server_start(&job, base, on_abort, NULL, &srv, &err) < 0) {
		fprintf(stderr, "pmi_launch: %s\n", mpictr_err_message(err));
		mpictr_err_free(err);
		pmi_job_free(&job);
		return 255;
	}

	pids = xcalloc((size_t)n, sizeof(pid_t));
	for (uint32_t r = 0; r < (uint32_t)n; r++) {
		char **env = strv_dup(environ);
		int fd;
		pid_t pid;

		if (pmi_server_rank_env(srv, r, &env, &fd, &err) < 0) {
			fprintf(stderr, "pmi_launch: %s\n",
				mpictr_err_message(err));
			mpictr_err_free(err);
			strv_free(env);
			kill_all(pids, r, SIGKILL);
			status = 255;
			failed = true;
			break;
		}
		pid = fork();
		if (pid < 0) {
			perror("pmi_launch: fork");
			strv_free(env);
			kill_all(pids, r, SIGKILL);
			status = 255;
			failed = true;
			break;
		}
		if (pid == 0) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			sigprocmask(SIG_SETMASK, &oldmask, NULL);
			/* PMI_FD keeps its number; only the flag changes. */
			fcntl(fd, F_SETFD, 0);
			execvpe(argv[optind], argv + optind, env);
			dprintf(STDERR_FILENO, "pmi_launch: exec '%s': %s\n",
				argv[optind], strerror(errno));
			_exit(errno == ENOENT ? 127 : 126);
		}
		setpgid(pid, pid);
		pids[r] = pid;
		alive++;
		pmi_server_rank_forked(srv, r);
		strv_free(env);
	}

	while (alive > 0) {
		struct pollfd pfd[2] = {{sfd, POLLIN, 0},
					{abort_pipe[0], POLLIN, 0}};
		int timeout = -1;

		if (kill_at > 0) {
			double left = kill_at - now();

			timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
		}
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR) {
			perror("pmi_launch: poll");
			kill_all(pids, (uint32_t)n, SIGKILL);
			status = 255;
			break;
		}
		if (kill_at > 0 && now() >= kill_at) {
			kill_all(pids, (uint32_t)n, SIGKILL);
			kill_at = 0;
		}
		if (pfd[1].revents & POLLIN) {
			struct abort_rec rec;

			while (read(abort_pipe[0], &rec, sizeof(rec)) ==
			       sizeof(rec)) {
				rec.msg[sizeof(rec.msg) - 1] = '\0';
				fprintf(stderr, "pmi_launch: job ended: %s\n",
					rec.msg);
				if (!failed) {
					failed = true;
					status = rec.code;
					kill_all(pids, (uint32_t)n, SIGTERM);
					kill_at = now() + 2;
				}
			}
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo != SIGCHLD) {
				kill_all(pids, (uint32_t)n, (int)si.ssi_signo);
				continue;
			}
		}
		for (;;) {
			int ws;
			pid_t pid = waitpid(-1, &ws, WNOHANG);
			uint32_t r;

			if (pid <= 0)
				break;
			for (r = 0; r < (uint32_t)n && pids[r] != pid; r++)
				;
			if (r == (uint32_t)n)
				continue;
			pids[r] = 0;
			alive--;
			pmi_server_rank_exited(srv, r);
			if (failed)
				continue;
			if (WIFSIGNALED(ws) || WEXITSTATUS(ws) != 0) {
				failed = true;
				status = WIFSIGNALED(ws)
						 ? 128 + WTERMSIG(ws)
						 : WEXITSTATUS(ws);
				fprintf(stderr,
					"pmi_launch: rank %u failed (status "
					"%d), ending the job\n",
					r, status);
				kill_all(pids, (uint32_t)n, SIGTERM);
				kill_at = now() + 2;
			}
		}
	}
	pmi_server_stop(srv);
	pmi_job_free(&job);
	free(pids);
	close(sfd);
	close(abort_pipe[0]);
	close(abort_pipe[1]);
	return status;
}
