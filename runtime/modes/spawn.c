/* spawn.c - MPI dynamic processes in launch mode (see spawn.h): the queue
 * between the PMIx thread and the supervisor, and the spawned processes,
 * which join the holder's namespaces exactly as ranks do (exec.c) and are
 * supervised with them by launch.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/exec.h"
#include "common/proc.h"
#include "modes/spawn.h"
#include "common/util.h"

struct child {
	pid_t pid;
	int status; /* wait status, -1 while running */
	int out_fd; /* --tag-output: read end, else -1 */
	bool midline;
	char tag[32]; /* "[job.rank] " */
	char *nspace; /* its PMIx namespace */
	uint32_t rank;
};

struct spawner {
	struct spawn_ctx ctx;
	int efd; /* eventfd: requests queued */
	pthread_mutex_t lock;
	struct pmi_spawn **queue; /* guarded by lock */
	size_t nqueue;
	struct child *kids;
	size_t nkids;
	uint32_t live;
	uint32_t jobs; /* spawns served, for the output tags */
};

void output_pump(int *fd, bool *midline, const char *tag)
{
	char buf[4096];
	ssize_t n = TEMP_FAILURE_RETRY(read(*fd, buf, sizeof(buf)));
	struct strbuf sb = STRBUF_INIT;

	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (!*midline)
			sb_puts(&sb, tag);
		sb_putc(&sb, buf[i]);
		*midline = buf[i] != '\n';
	}
	if (write_full(STDOUT_FILENO, sb.buf, sb.len) < 0) {
		/* stdout closed: keep draining */
	}
	sb_free(&sb);
}

/* ---- the queue (filled on the PMIx thread) ---- */

static void on_spawn(struct pmi_spawn *sp, void *data)
{
	struct spawner *s = data;
	uint64_t one = 1;

	pthread_mutex_lock(&s->lock);
	s->queue = xrealloc(s->queue, (s->nqueue + 1) * sizeof(*s->queue));
	s->queue[s->nqueue++] = sp;
	pthread_mutex_unlock(&s->lock);
	if (write(s->efd, &one, sizeof(one)) < 0) {
		/* the counter is already non-zero: the loop will look */
	}
}

int spawner_start(const struct spawn_ctx *ctx, struct spawner **out,
		  mpictr_err **err)
{
	struct spawner *s = xcalloc(1, sizeof(*s));

	s->ctx = *ctx;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0) {
		free(s);
		return err_set(err, errno,
			       "create the eventfd of the spawn queue");
	}
	pthread_mutex_init(&s->lock, NULL);
	pmi_server_set_spawn_handler(ctx->pmi, on_spawn, s);
	*out = s;
	return 0;
}

/* ---- starting the processes ---- */

static void child_main(const struct spawner *s, const struct plan *p,
		       char **env, int sync_wfd, int out_wfd)
{
	mpictr_err *err = NULL;

	/* Forked while the PMI threads run: the child touches no lock they
	 * may hold (no logging, no libpmix); its allocations are glibc's,
	 * whose fork resets the allocator's locks. Same path as a rank. */
	proc_child_setup(s->ctx.old_mask, s->ctx.supervisor);
	proc_child_stdio(true, out_wfd);
	container_exec(p, env, s->ctx.userns, s->ctx.mntns, -1, &err);
	relay_send(sync_wfd, err);
	_exit(mpictr_err_exit_code(err));
}

/* Fork process `rank` of sp with env; on success it is in s->kids. */
static int start_one(struct spawner *s, const struct pmi_spawn *sp,
		     uint32_t rank, char **env, mpictr_err **err)
{
	uint32_t app_rank;
	const struct pmi_spawn_app *a =
	    &sp->apps[pmi_spawn_app_of(sp, rank, &app_rank)];
	struct plan p = *s->ctx.plan; /* read only: argv and cwd differ */
	int rfd, wfd, out[2] = {-1, -1}, st;
	struct child *k;
	pid_t pid;

	p.argv = a->argv;
	if (a->cwd)
		p.cwd = a->cwd;
	if (s->ctx.tag_output && pipe2(out, O_CLOEXEC) < 0)
		return err_set(err, errno,
			       "create the output pipe of a spawned process");
	pid = proc_fork_relay(&rfd, &wfd, "a spawned process", err);
	if (pid == 0) {
		if (out[0] >= 0)
			close(out[0]);
		child_main(s, &p, env, wfd, out[1]);
	}
	if (out[1] >= 0)
		close(out[1]);
	if (pid < 0) {
		if (out[0] >= 0)
			close(out[0]);
		return -1;
	}
	s->kids = xrealloc(s->kids, (s->nkids + 1) * sizeof(*s->kids));
	k = &s->kids[s->nkids++];
	memset(k, 0, sizeof(*k));
	k->pid = pid;
	k->status = -1;
	k->out_fd = out[0];
	k->nspace = xstrdup(sp->nspace);
	k->rank = rank;
	snprintf(k->tag, sizeof(k->tag), "[%u.%u] ", s->jobs, rank);
	s->live++;
	if (relay_recv(rfd, "spawned process", err) < 0) {
		close(rfd);
		TEMP_FAILURE_RETRY(waitpid(pid, &st, 0));
		spawner_reaped(s, pid, st);
		return -1;
	}
	close(rfd);
	return 0;
}

/* Kill and reap the processes from index `from` on (a spawn that failed
 * half-way). */
static void kill_from(struct spawner *s, size_t from)
{
	for (size_t i = from; i < s->nkids; i++)
		if (s->kids[i].status < 0) {
			int st;

			kill(s->kids[i].pid, SIGKILL);
			TEMP_FAILURE_RETRY(waitpid(s->kids[i].pid, &st, 0));
			spawner_reaped(s, s->kids[i].pid, st);
		}
}

static void serve_one(struct spawner *s, struct pmi_spawn *sp,
		      uint32_t ranks_alive, bool ending)
{
	mpictr_err *err = NULL;
	size_t first = s->nkids;

	if (ending) {
		err_set(&err, 0, "the job is ending");
		goto out;
	}
	/* The universe is advice unless --no-oversubscribe made it a limit
	 * (mpirun --oversubscribe: -n oversubscribes already). */
	if (pmi_spawn_check(
		sp, s->ctx.universe_hard ? ranks_alive + s->live : s->live,
		s->ctx.universe_hard ? s->ctx.universe : SPAWN_MAX_LIVE,
		&err) < 0 ||
	    pmi_server_spawn_register(s->ctx.pmi, sp, &err) < 0)
		goto out;
	s->jobs++;
	log_info("spawn: %u process(es) as %s for %s:%u", sp->nprocs,
		 sp->nspace, sp->parent_nspace, sp->parent_rank);
	for (uint32_t r = 0; r < sp->nprocs; r++) {
		char **env = plan_rank_env(s->ctx.plan,
					   s->ctx.first_local + (int)s->nkids);
		int rc = pmi_server_spawn_env(s->ctx.pmi, sp, r, &env, &err);

		if (rc == 0)
			rc = start_one(s, sp, r, env, &err);
		strv_free(env);
		if (rc < 0) {
			err_wrap(&err, "process %u of %s", r, sp->nspace);
			kill_from(s, first);
			break;
		}
	}
out:
	/* The answer releases MPI_Comm_spawn; on failure it gets
	 * MPI_ERR_SPAWN and the message is logged. */
	pmi_server_spawn_done(s->ctx.pmi, sp, err);
	mpictr_err_free(err);
}

size_t spawner_pollfds(const struct spawner *s, struct pollfd *pfd, size_t max)
{
	size_t n = 0;

	if (!s || max == 0)
		return 0;
	pfd[n++] = (struct pollfd){.fd = s->efd, .events = POLLIN};
	for (size_t i = 0; i < s->nkids && n < max; i++)
		if (s->kids[i].out_fd >= 0)
			pfd[n++] = (struct pollfd){.fd = s->kids[i].out_fd,
						   .events = POLLIN};
	return n;
}

void spawner_poll(struct spawner *s, const struct pollfd *pfd, size_t n,
		  uint32_t ranks_alive, bool ending)
{
	if (!s || n == 0)
		return;
	for (size_t i = 1; i < n; i++)
		for (size_t k = 0; pfd[i].revents && k < s->nkids; k++)
			if (s->kids[k].out_fd == pfd[i].fd) {
				output_pump(&s->kids[k].out_fd,
					    &s->kids[k].midline,
					    s->kids[k].tag);
				break;
			}
	if (pfd[0].revents & POLLIN) {
		uint64_t v;
		struct pmi_spawn **q;
		size_t nq;

		if (read(s->efd, &v, sizeof(v)) < 0) {
			/* nothing queued after all */
		}
		pthread_mutex_lock(&s->lock);
		q = s->queue;
		nq = s->nqueue;
		s->queue = NULL;
		s->nqueue = 0;
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < nq; i++)
			serve_one(s, q[i], ranks_alive, ending);
		free(q);
	}
}

int spawner_reaped(struct spawner *s, pid_t pid, int status)
{
	for (size_t i = 0; s && i < s->nkids; i++) {
		struct child *k = &s->kids[i];
		int code = exit_code_of(status);

		if (k->pid != pid || k->status >= 0)
			continue;
		k->status = status;
		s->live--;
		log_debug("spawned process %.*s (%s:%u) exited with status %d",
			  (int)strcspn(k->tag, " "), k->tag, k->nspace, k->rank,
			  code);
		if (pmi_server_spawned_unfinalized(s->ctx.pmi, k->nspace,
						   k->rank) &&
		    code == 0) {
			log_error("spawned process %s:%u exited without "
				  "finalizing MPI; ending the job",
				  k->nspace, k->rank);
			code = 1;
		}
		return code;
	}
	return -1;
}

uint32_t spawner_live(const struct spawner *s)
{
	return s ? s->live : 0;
}

void spawner_signal(struct spawner *s, int sig)
{
	for (size_t i = 0; s && i < s->nkids; i++)
		if (s->kids[i].status < 0)
			kill(s->kids[i].pid, sig);
}

void spawner_stop(struct spawner *s)
{
	if (!s)
		return;
	/* No new request from now on; the queued ones are refused. */
	pmi_server_set_spawn_handler(s->ctx.pmi, NULL, NULL);
	for (size_t i = 0; i < s->nqueue; i++)
		serve_one(s, s->queue[i], 0, true);
	kill_from(s, 0);
	for (size_t i = 0; i < s->nkids; i++)
		while (s->kids[i].out_fd >= 0)
			output_pump(&s->kids[i].out_fd, &s->kids[i].midline,
				    s->kids[i].tag);
	close(s->efd);
	pthread_mutex_destroy(&s->lock);
	for (size_t i = 0; i < s->nkids; i++)
		free(s->kids[i].nspace);
	free(s->queue);
	free(s->kids);
	free(s);
}
