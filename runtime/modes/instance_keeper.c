/* instance_keeper.c - the keeper's side of a named instance: what the
 * detached keeper (keeper.c) does once the instance's holder is up. It
 * answers one request per connection (JOIN, INFO, STOP; the wire protocol
 * of wire.c), counts the members in the instance's user namespace, and
 * ends the instance on STOP, SIGTERM, --linger, the end of a watched
 * process or Slurm job, or the holder's death, killing the members first.
 * The client's side (start, stop, list, attach) is instance.c.
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
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "common/syscalls.h"
#include "container/holder.h"
#include "modes/instance_keeper.h"
#include "modes/wire.h"

#define INST_REPLY_MS 2000 /* wait this long for a request */

/* Items "key=value\0..." of a blob. */
void inst_blob_put(struct strbuf *sb, const char *key, const char *val)
{
	sb_printf(sb, "%s=%s", key, val ? val : "");
	sb_putc(sb, '\0');
}

/* The value of key in blob (len bytes), or NULL; index: the how-manieth. */
const char *inst_blob_get(const char *blob, size_t len, const char *key,
			  int index)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < len;) {
		const char *it = blob + i;
		size_t il = strnlen(it, len - i);

		if (il > kl && strncmp(it, key, kl) == 0 && it[kl] == '=' &&
		    index-- == 0)
			return it + kl + 1;
		i += il + 1;
	}
	return NULL;
}

long inst_blob_long(const char *blob, size_t len, const char *key)
{
	const char *v = inst_blob_get(blob, len, key, 0);
	long n = 0;

	if (v)
		parse_long(v, 0, __LONG_MAX__, &n);
	return n;
}

static int inst_reply(int c, int32_t status, const char *blob, size_t len,
		      const int *fds, int nfds)
{
	return wire_send_reply(c, status, blob, len, fds, nfds, NULL);
}

static int inst_members(const struct inst *in)
{
	return proc_ns_signal(in->ns_dev, in->ns_ino, in->holder, 0);
}

static char *inst_info(const struct inst *in, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char num[32];

	inst_blob_put(&sb, "name", in->name);
	inst_blob_put(&sb, "image", in->image);
	snprintf(num, sizeof(num), "%lld", (long long)in->started);
	inst_blob_put(&sb, "started", num);
	snprintf(num, sizeof(num), "%d", inst_members(in));
	inst_blob_put(&sb, "members", num);
	snprintf(num, sizeof(num), "%d", (int)getpid());
	inst_blob_put(&sb, "pid", num);
	snprintf(num, sizeof(num), "%ld", in->linger_s);
	inst_blob_put(&sb, "linger", num);
	if (in->job)
		inst_blob_put(&sb, "job", in->job);
	*len = sb.len;
	return sb_steal(&sb);
}

/* One connection: its request (WIRE_STOP: the connection is kept in
 * in->stop_fd, to be answered once everything is gone), or 0. Only the
 * user's own processes on the host are served, and of those in this
 * instance (or nested in it) only a JOIN: a program in a container of
 * the user sees the socket through the /tmp bind, and must not stop,
 * list or enter another instance (EPERM). */
static uint32_t inst_serve_one(struct inst *in, const struct holder *h, int c)
{
	struct wire_req q;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct timeval tv = {.tv_sec = INST_REPLY_MS / 1000,
			     .tv_usec = INST_REPLY_MS % 1000 * 1000};
	cleanup_free char *info = NULL;
	size_t len;
	uint32_t op;
	int where;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    cr.uid != getuid())
		return 0; /* never another user's */
	where = proc_peer_where(c, in->ns_dev, in->ns_ino);
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (wire_recv_req(c, &q, NULL) != 0)
		return 0; /* no valid request in time: nothing */
	op = q.op;
	wire_req_free(&q);
	if (where != PEER_HOST && (where != PEER_INSIDE || op != WIRE_JOIN)) {
		log_warn("instance '%s': refused a request of pid %d, which "
			 "runs in a container",
			 in->name, (int)cr.pid);
		inst_reply(c, EPERM, NULL, 0, NULL, 0);
		return 0;
	}
	switch (op) {
	case WIRE_JOIN:
		inst_reply(c, 0, in->spec, in->spec_len,
			   (int[]){h->userns, h->mntns, in->image_fd}, 3);
		return WIRE_JOIN;
	case WIRE_INFO:
		info = inst_info(in, &len);
		inst_reply(c, 0, info, len, NULL, 0);
		return WIRE_INFO;
	case WIRE_STOP:
		in->stop_fd = c;
		return WIRE_STOP;
	default:
		inst_reply(c, EOPNOTSUPP, NULL, 0, NULL, 0);
		return 0;
	}
}

/* Kill every member: SIGTERM, then SIGKILL after the grace time, until
 * none is found (they may fork meanwhile). */
static void inst_kill_members(const struct inst *in)
{
	proc_ns_end(in->ns_dev, in->ns_ino, in->holder, in->stop_grace_ms);
}

/* The job's end ends the instance (jobwatch.c): SLURM_CONF as the
 * starter had it, for squeue. */
static int inst_watch_job(struct inst *in, mpictr_err **err)
{
	if (in->slurm_conf && setenv("SLURM_CONF", in->slurm_conf, 1) < 0)
		return err_set(err, errno, "set SLURM_CONF");
	if (job_watch_start(&in->jw, in->job, in->squeue, err) < 0) {
		err_wrap(err, "instance start inside Slurm job %s", in->job);
		return err_hint(err, "an instance never outlives the job that "
				     "started it");
	}
	return 0;
}

static int inst_setup(void *data, mpictr_err **err)
{
	struct inst *in = data;

	in->watch_fd = -1;
	in->stop_fd = -1;
	in->jw.stepd_fd = in->jw.query_fd = -1;
	/* Joiners plan from this file, also when the path is deleted or
	 * names another file by now. */
	in->image_fd = open(in->image, O_RDONLY | O_CLOEXEC);
	if (in->image_fd < 0)
		return err_set(err, errno, "open the image '%s'", in->image);
	if (in->watch_pid <= 0)
		return in->job ? inst_watch_job(in, err) : 0;
	in->watch_fd = sys_pidfd_open(in->watch_pid, 0);
	if (in->watch_fd < 0)
		return err_set(err, errno, "watch process %d",
			       (int)in->watch_pid);
	return 0;
}

static size_t add_holder(char **spec, size_t len, pid_t holder)
{
	struct strbuf sb = STRBUF_INIT;
	char num[32];

	sb_add(&sb, *spec, len);
	snprintf(num, sizeof(num), "%d", (int)holder);
	inst_blob_put(&sb, "holder", num);
	free(*spec);
	len = sb.len;
	*spec = sb_steal(&sb);
	return len;
}

static void inst_serve(void *data, struct keeper_serve *ks)
{
	struct inst *in = data;
	struct stat st;
	int hfd = sys_pidfd_open(ks->h->pid, 0);
	long idle_since = mono_ms();

	in->holder = ks->h->pid;
	in->spec_len = add_holder(&in->spec, in->spec_len, in->holder);
	if (fstat(ks->h->userns, &st) == 0) {
		in->ns_dev = st.st_dev;
		in->ns_ino = st.st_ino;
	}
	in->started = time(NULL);
	while (!keeper_stopping()) {
		struct pollfd pfd[4] = {
		    {.fd = ks->listen_fd, .events = POLLIN},
		    {.fd = in->watch_fd, .events = POLLIN},
		    {.fd = hfd, .events = POLLIN},
		    {.fd = job_watch_fd(&in->jw), .events = POLLIN},
		};
		long wait = in->job && in->watch_pid <= 0
				? job_watch_wait_ms(&in->jw)
				: -1;
		struct timespec tick;

		if (in->linger_s > 0 && (wait < 0 || wait > 1000))
			wait = 1000;
		tick = (struct timespec){.tv_sec = wait / 1000,
					 .tv_nsec = wait % 1000 * 1000000L};
		if (ppoll(pfd, 4, wait >= 0 ? &tick : NULL, ks->waitmask) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			int c =
			    accept4(ks->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			uint32_t op = c >= 0 ? inst_serve_one(in, ks->h, c) : 0;

			if (op == WIRE_STOP)
				break;
			if (c >= 0)
				close(c);
			if (op == WIRE_JOIN) /* it may not have entered yet */
				idle_since = mono_ms();
		}
		if (pfd[1].revents || pfd[2].revents)
			break; /* the process watched ended, or the holder */
		if (in->job && in->watch_pid <= 0 &&
		    job_watch_over(&in->jw, pfd[3].revents))
			break; /* the job ended */
		if (in->linger_s > 0 && inst_members(in) > 0)
			idle_since = mono_ms();
		if (in->linger_s > 0 &&
		    mono_ms() - idle_since >= in->linger_s * 1000L)
			break;
	}
	/* No new member from here on. */
	close(ks->listen_fd);
	ks->listen_fd = -1;
	inst_kill_members(in);
	if (hfd >= 0)
		close(hfd);
	if (in->watch_fd >= 0)
		close(in->watch_fd);
	job_watch_free(&in->jw);
}

static void inst_done(void *data)
{
	struct inst *in = data;

	if (in->stop_fd >= 0) {
		inst_reply(in->stop_fd, 0, NULL, 0, NULL, 0);
		close(in->stop_fd);
	}
}

void instance_keeper_life(struct inst *in, struct keeper_life *life)
{
	*life = (struct keeper_life){.setup = inst_setup,
				     .serve = inst_serve,
				     .done = inst_done,
				     .data = in};
}
