/* jobwatch.c - follow a Slurm job's life (see jobwatch.h).
 *
 * The anchor is the job, not the step that asked: a process that left the
 * step's tree (a keeper) is not killed at the end of the step or the job
 * under proctrack/linuxproc, and must end with the job all the same.
 *
 * 1. The job's extern step (PrologFlags=Contain) or batch step on this
 *    node: their slurmstepd lives until the job ends on the node. It is
 *    found by its process title ("slurmstepd: [JOB.extern]"), owned by
 *    another uid than ours (a process of ours could carry any title), and
 *    followed through a pidfd (checked again after it is open: never a
 *    recycled pid).
 * 2. Else (a node of the job that is not the batch host, with no extern
 *    step, or an salloc allocation) Slurm itself: `squeue -h -j JOB -o %T`
 *    every JOB_WATCH_POLL_S seconds, run without blocking the caller's
 *    loop (its output is one more descriptor to poll). The job is over
 *    when its state is no longer one of a running job's (RUNNING,
 *    COMPLETING, SUSPENDED, ...) or Slurm no longer knows it ("Invalid job
 *    id"). A query that fails otherwise (slurmctld unreachable, no answer
 *    within JOB_WATCH_QUERY_S) does not end the watch: only failures for
 *    JOB_WATCH_UNREACHABLE_S without an answer in between do, so that a
 *    restart of slurmctld ends no instance, while an instance outlives a
 *    job whose end Slurm cannot tell by at most that much.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/jobwatch.h"
#include "common/proc.h"
#include "common/syscalls.h"

enum jw_result { JW_PENDING, JW_ALIVE, JW_OVER, JW_FAIL };

/* 1: pid's title is the job's extern step's, 2: its batch step's, else 0
 * (or a process of our own uid). */
static int stepd_kind(pid_t pid, const char *job)
{
	char path[64];
	cleanup_free char *cmd = NULL, *ext = NULL, *bat = NULL;
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0 || st.st_uid == getuid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	cmd = read_file(path, 256, NULL);
	if (!cmd)
		return 0;
	ext = xasprintf("slurmstepd: [%s.extern]", job);
	bat = xasprintf("slurmstepd: [%s.batch]", job);
	return strcmp(cmd, ext) == 0 ? 1 : strcmp(cmd, bat) == 0 ? 2 : 0;
}

pid_t job_stepd_find(const char *job)
{
	char **names = dir_names("/proc");
	pid_t found = 0;

	for (size_t i = 0; job && names && names[i]; i++) {
		long pid;
		int kind;

		if (parse_long(names[i], 1, __INT_MAX__, &pid) < 0)
			continue;
		kind = stepd_kind((pid_t)pid, job);
		if (kind == 1) {
			found = (pid_t)pid;
			break;
		}
		if (kind == 2)
			found = (pid_t)pid; /* unless an extern step runs */
	}
	strv_free(names);
	return found;
}

char *job_watch_program(char *const *env)
{
	char *path = NULL;

	if (proc_resolve_command("squeue", env, &path, NULL) < 0)
		return NULL;
	return path;
}

static bool live_state(const char *s)
{
	static const char *const live[] = {
	    "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED",
	    "STOPPED", "RESIZING",   "SIGNALING",   "STAGE_OUT",
	};
	size_t n = strcspn(s, " \t\n");

	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (strlen(live[i]) == n && strncmp(s, live[i], n) == 0)
			return true;
	return false;
}

static int query_begin(struct job_watch *w, mpictr_err **err)
{
	char *const argv[] = {"squeue", "-h", "-j", w->job, "-o", "%T", NULL};

	sb_free(&w->out);
	w->query_ms = mono_ms();
	w->query =
	    proc_spawn_output(w->squeue, argv, false, true, &w->query_fd, err);
	if (w->query < 0) {
		w->query = 0;
		return -1;
	}
	return 0;
}

/* Read what the query printed; at its end (or past JOB_WATCH_QUERY_S)
 * reap it and give the verdict. */
static enum jw_result query_step(struct job_watch *w, short revents)
{
	char buf[512];
	ssize_t n = 0;
	int status = 0;
	bool late = mono_ms() - w->query_ms >= JOB_WATCH_QUERY_S * 1000L;

	if (revents) {
		n = TEMP_FAILURE_RETRY(read(w->query_fd, buf, sizeof(buf)));
		if (n > 0 && w->out.len < 4096)
			sb_add(&w->out, buf, (size_t)n);
	}
	if (n > 0 || (!revents && !late))
		return JW_PENDING;
	if (n != 0 || !revents)
		kill(w->query, SIGKILL); /* late, or its pipe broke */
	close(w->query_fd);
	w->query_fd = -1;
	TEMP_FAILURE_RETRY(waitpid(w->query, &status, 0));
	w->query = 0;
	w->next_ms = mono_ms() + JOB_WATCH_POLL_S * 1000L;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return w->out.len && live_state(w->out.buf) ? JW_ALIVE
							    : JW_OVER;
	if (w->out.len && strstr(w->out.buf, "Invalid job id"))
		return JW_OVER;
	return JW_FAIL;
}

int job_watch_start(struct job_watch *w, const char *job, const char *squeue,
		    mpictr_err **err)
{
	enum jw_result r = JW_PENDING;

	memset(w, 0, sizeof(*w));
	w->stepd_fd = w->query_fd = -1;
	w->job = xstrdup(job);
	w->stepd = job_stepd_find(job);
	if (w->stepd > 0) {
		w->stepd_fd = sys_pidfd_open(w->stepd, 0);
		if (w->stepd_fd >= 0 && stepd_kind(w->stepd, job))
			return 0;
		if (w->stepd_fd >= 0)
			close(w->stepd_fd);
		w->stepd_fd = -1; /* it ended meanwhile: ask Slurm */
	}
	if (!squeue)
		return err_set(
		    err, 0,
		    "Slurm job %s: no slurmstepd of its batch or "
		    "extern step on this node, and no squeue in PATH "
		    "to follow the job",
		    job);
	w->squeue = xstrdup(squeue);
	if (query_begin(w, err) < 0)
		return err_wrap(err, "follow Slurm job %s", job);
	while (r == JW_PENDING) {
		struct pollfd p = {.fd = w->query_fd, .events = POLLIN};

		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			p.revents = POLLERR;
		r = query_step(w, p.revents);
	}
	if (r == JW_OVER)
		return err_set(err, 0,
			       "Slurm job %s is not running (squeue -j %s: "
			       "%.200s)",
			       job, job, w->out.len ? w->out.buf : "no answer");
	if (r == JW_FAIL)
		w->failing_ms = mono_ms();
	return 0;
}

int job_watch_fd(const struct job_watch *w)
{
	return w->stepd_fd >= 0 ? w->stepd_fd : w->query ? w->query_fd : -1;
}

long job_watch_wait_ms(const struct job_watch *w)
{
	long now = mono_ms(), left;

	if (w->stepd_fd >= 0 || !w->squeue)
		return -1;
	left = w->query ? w->query_ms + JOB_WATCH_QUERY_S * 1000L - now
			: w->next_ms - now;
	return left > 0 ? left : 0;
}

bool job_watch_over(struct job_watch *w, short revents)
{
	enum jw_result r;
	mpictr_err *e = NULL;

	if (w->stepd_fd >= 0)
		return revents != 0;
	if (!w->squeue)
		return false;
	if (!w->query) {
		if (mono_ms() < w->next_ms)
			return false;
		if (query_begin(w, &e) < 0) {
			mpictr_err_free(e);
			w->next_ms = mono_ms() + JOB_WATCH_POLL_S * 1000L;
			r = JW_FAIL;
		} else {
			return false; /* its answer comes on query_fd */
		}
	} else {
		r = query_step(w, revents);
	}
	if (r == JW_OVER)
		return true;
	if (r == JW_ALIVE)
		w->failing_ms = 0;
	if (r == JW_FAIL && !w->failing_ms)
		w->failing_ms = mono_ms();
	return r == JW_FAIL &&
	       mono_ms() - w->failing_ms >= JOB_WATCH_UNREACHABLE_S * 1000L;
}

void job_watch_free(struct job_watch *w)
{
	if (w->query > 0) {
		kill(w->query, SIGKILL);
		TEMP_FAILURE_RETRY(waitpid(w->query, NULL, 0));
	}
	if (w->query_fd >= 0)
		close(w->query_fd);
	if (w->stepd_fd >= 0)
		close(w->stepd_fd);
	free(w->job);
	free(w->squeue);
	sb_free(&w->out);
	memset(w, 0, sizeof(*w));
	w->stepd_fd = w->query_fd = -1;
}
