/* instance.c - named instances: `mpictr instance start IMAGE NAME` builds
 * the node container once; `mpictr [exec|run] instance://NAME CMD`,
 * `mpictr -n N instance://NAME CMD` and `srun|mpirun ... mpictr
 * instance://NAME CMD` join it; `mpictr instance list|stop`.
 *
 * An instance is join mode's keeper (keeper.c) with a name and another
 * lifetime (keeper_life): a detached process that owns the namespace
 * holder (holder.c: namespaces, image mount, FUSE workers) and serves on
 * DIR/inst-NAME.sock, DIR being the user's private rendezvous directory
 * (rendezvous_dir: 0700, owner checked, a private fallback when squatted), so
 * two users may use the same name and nobody else can list or enter an
 * instance. Both ends check the peer's uid (SO_PEERCRED). The keeper holds
 * DIR/inst-NAME.lock (flock) for its whole life: the name is taken while
 * it is held.
 *
 * Requests (one per connection, the keeper's protocol of wire.c): JOIN
 * (no payload) gets the holder's namespace fds, the image's fd and the
 * instance's options as "key=value\0" items (its image and what decides
 * the container); the joiner plans its command from its own options
 * (environment, --env, --pwd, the command) and the instance's, mounts
 * nothing and execs as in any mode (exec.c). INFO answers what `instance
 * list` shows; STOP ends it and is answered once everything is gone. A
 * peer with no valid request within INST_REPLY_MS (instance_keeper.c) gets
 * nothing; one in a container gets EPERM for anything but a JOIN of its own
 * instance.
 *
 * Members are the processes in the instance's user namespace (found in
 * /proc by the namespace's inode, our uid only), except the holder and its
 * FUSE workers: what `list` counts, what --linger waits for and what stop
 * kills (SIGTERM, then SIGKILL after INSTANCE_STOP_GRACE_MS, until none is
 * left). Then the holder unmounts and exits, and the socket, lock and the
 * instance's directory DIR/inst-NAME.run (where launch-mode joiners put
 * their job directory, bound into the container at the same path) go.
 *
 * Lifetime: until `instance stop`, SIGTERM, --linger seconds without
 * members, the end of a watched process an embedder gave, inside a Slurm
 * job the job's end whichever step started it (jobwatch.c; also under
 * proctrack/linuxproc, which does not follow a process that left the
 * step's tree), or the holder's death. Joiners get the image file the
 * keeper holds open and plan from it, not from the image's path. A keeper
 * killed with SIGKILL takes its holder with it (PDEATHSIG); its sweeper kills
 * the members and removes the files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "host/facts.h"
#include "container/holder.h"
#include "modes/instance.h"
#include "modes/instance_keeper.h"
#include "pull/pull.h"
#include "sched/jobwatch.h"
#include "modes/keeper.h"
#include "modes/rendezvous.h"
#include "modes/wire.h"
#include "plan/mode.h"
#include "plan/plan.h"
#include "plan/prepare.h"
#include "common/proc.h"
#include "common/syscalls.h"

#define INST_STOP_WAIT_S 30 /* stop: wait this long for the answer */
#define INST_UCX_MAX 4096   /* the UCX answer joiners take (inst_spec) */

bool instance_is_ref(const char *image)
{
	return image &&
	       strncmp(image, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) == 0;
}

int instance_name_check(const char *name, mpictr_err **err)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n > 0 && n <= INSTANCE_NAME_MAX &&
		  strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
			       "vwxyz0123456789_.-") == n &&
		  name[0] != '_' && name[0] != '.' && name[0] != '-';

	if (ok)
		return 0;
	return err_set(err, 0,
		       "invalid instance name '%s': 1 to %d letters, digits, "
		       "'_', '.' or '-', starting with a letter or digit",
		       name ? name : "", INSTANCE_NAME_MAX);
}

/* ---- names and files ----------------------------------------------------- */

struct inst_paths {
	char *dir, *sock, *lock, *run;
};

static void paths_free(struct inst_paths *p)
{
	free(p->dir);
	free(p->sock);
	free(p->lock);
	free(p->run);
	memset(p, 0, sizeof(*p));
}

static int paths_of(char *const *env, const char *name, bool notice,
		    struct inst_paths *p, mpictr_err **err)
{
	memset(p, 0, sizeof(*p));
	if (instance_name_check(name, err) < 0 ||
	    rendezvous_dir(env, &p->dir, notice, err) < 0)
		return -1;
	p->sock = xasprintf("%s/inst-%s.sock", p->dir, name);
	p->lock = xasprintf("%s/inst-%s.lock", p->dir, name);
	p->run = xasprintf("%s/inst-%s.run", p->dir, name);
	if (strlen(p->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		err_set(err, ENAMETOOLONG, "instance socket '%s'", p->sock);
		paths_free(p);
		return -1;
	}
	return 0;
}

/* ---- the client's side (the keeper's is instance_keeper.c) ---------------
 */

/* Remove what a keeper killed together with its sweeper left (or what a
 * sweeper killed halfway left): the socket, the lock and the directory,
 * when the lock is free. Taken (created if need be) first, so that no
 * instance of the name can be starting meanwhile. True when it was free. */
static bool clean_stale(const struct inst_paths *p)
{
	int fd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	bool stale = false;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 &&
	    keeper_lock_current(fd, p->lock)) {
		unlink(p->sock);
		rm_rf(p->run);
		unlink(p->lock);
		stale = true;
	}
	close(fd);
	return stale;
}

/* Send op to the instance at p and receive its reply (*r, with at most
 * max_fds descriptors; status 0): the connection, or -1 with an error
 * naming the instance. */
static int inst_request(const struct inst_paths *p, const char *name,
			uint32_t op, struct wire_reply *r, int max_fds,
			int timeout_s, mpictr_err **err)
{
	struct timeval tv = {.tv_sec = timeout_s};
	int c = keeper_connect(p->sock), rc;

	if (c < 0 && errno == EPERM)
		return err_set(err, 0,
			       "instance '%s': the keeper at '%s' does not run "
			       "as uid %u",
			       name, p->sock, (unsigned)getuid());
	if (c < 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
		bool was = errno == ECONNREFUSED;

		if (!clean_stale(p) && was)
			return err_set(err, 0,
				       "instance '%s' is stopping: its socket "
				       "'%s' is closed",
				       name, p->sock);
		err_set(err, 0, "no instance '%s' of uid %u on this node%s",
			name, (unsigned)getuid(),
			was ? ": its keeper was killed (its files are now "
			      "removed)"
			    : "");
		return err_hint(err,
				"'mpictr instance list' shows the running "
				"ones; 'mpictr instance start IMAGE %s' "
				"starts it",
				name);
	}
	if (c < 0)
		return err_set(err, errno, "instance '%s': connect to '%s'",
			       name, p->sock);
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (wire_send_req(c, op, NULL, 0, err) < 0) {
		err_wrap(err, "instance '%s'", name);
		close(c);
		return -1;
	}
	rc = wire_recv_reply(c, max_fds, r, err);
	if (rc == 1)
		err_set(err, 0,
			"instance '%s': no answer from its keeper at '%s' (it "
			"ended meanwhile)",
			name, p->sock);
	else if (rc < 0)
		err_wrap(err, "instance '%s': the answer of its keeper at '%s'",
			 name, p->sock);
	else if (r->status != 0)
		err_set(err, r->status,
			"instance '%s': its keeper at '%s' refused the request",
			name, p->sock);
	if (rc != 0 || r->status != 0) {
		wire_reply_free(r);
		close(c);
		return -1;
	}
	return c;
}

/* A request whose reply carries a blob: *blob (NUL-terminated, caller
 * frees), its length, and exactly nfds descriptors into fds. */
static int inst_query(const struct inst_paths *p, const char *name, uint32_t op,
		      char **blob, size_t *len, int *fds, int nfds,
		      mpictr_err **err)
{
	struct wire_reply r;
	int c = inst_request(p, name, op, &r, nfds, INST_STOP_WAIT_S, err);

	if (c < 0)
		return -1;
	close(c);
	if (r.nfds != nfds) {
		err_set(err, EPROTO,
			"instance '%s': its keeper sent %d descriptors (%d "
			"expected)",
			name, r.nfds, nfds);
		wire_reply_free(&r);
		return -1;
	}
	for (int i = 0; i < nfds; i++) {
		fds[i] = r.fds[i];
		r.fds[i] = -1;
	}
	*blob = r.data;
	*len = r.len;
	r.data = NULL;
	wire_reply_free(&r);
	return 0;
}

/* ---- start --------------------------------------------------------------- */

struct spec_put {
	struct strbuf *sb;
	const char *key;
};

static void spec_value(void *data, const char *value)
{
	const struct spec_put *sp = data;

	inst_blob_put(sp->sb, sp->key, value);
}

/* What a joiner needs of the instance's options: the image and what
 * decides its container and environment (the option table's rows with an
 * inst_key; see instance_attach). */
static char *inst_spec(const struct mpictr_config *cfg, const struct plan *p,
		       const char *run, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	inst_blob_put(&sb, "image", p->image.path);
	inst_blob_put(&sb, "run", run);
	if (cfg->inst_origin)
		inst_blob_put(&sb, "origin", cfg->inst_origin);
	for (size_t i = 0; i < config_nopts; i++) {
		struct spec_put sp = {&sb, config_opts[i].inst_key};

		if (sp.key)
			config_opt_values(cfg, &config_opts[i], spec_value,
					  &sp);
	}
	/* The UCX answer (ucx_none: the helper failed): joiners ask none;
	 * one too long for the blob they ask themselves. */
	if (p->ucx_asked && !p->ucx_net_devices)
		inst_blob_put(&sb, "ucx_none", "1");
	else if (p->ucx_asked && strlen(p->ucx_net_devices) <= INST_UCX_MAX)
		inst_blob_put(&sb, "ucx", p->ucx_net_devices);
	*len = sb.len;
	return sb_steal(&sb);
}

static int inst_refuse_start(const struct mpictr_config *cfg, mpictr_err **err)
{
	if (!cfg->image)
		return err_set(err, 0, "instance start: no image given");
	if (instance_is_ref(cfg->image))
		return err_set(err, 0,
			       "instance start: the image '%s' is an instance; "
			       "give a SIF, squashfs or directory image",
			       cfg->image);
	if (cfg->nranks > 0)
		return err_set(err, 0,
			       "instance start: -n cannot be used: ranks join "
			       "with 'mpictr -n N instance://NAME CMD'");
	if (cfg->no_share)
		return err_set(err, 0,
			       "instance start: --no-share cannot be used: an "
			       "instance is one set of namespaces");
	return 0;
}

/* Plan the instance's container (no command runs: its argv is a
 * placeholder the holder's prefetch looks up). */
static int inst_plan(const struct mpictr_config *cfg, const char *run,
		     struct plan *p, mpictr_err **err)
{
	static char *const placeholder[] = {"true", NULL};
	struct mpictr_config c = *cfg;
	struct run_decision d;

	memset(&d, 0, sizeof(d));
	d.mode = RUN_SINGLE;
	d.shared_ns = true;
	d.peers.local_rank = d.peers.local_size = LAUNCHER_UNKNOWN;
	d.peers.node_id = LAUNCHER_UNKNOWN;
	c.argv = (char **)placeholder;
	c.runscript = false;
	return plan_prepare(&c, &d, run, NULL, p, err);
}

struct inst_start {
	struct inst_paths p;
	struct plan plan;
	struct inst in;
	int lock_fd;
};

static int inst_take_name(struct inst_start *s, const char *name,
			  mpictr_err **err)
{
	for (int tries = 0; tries < 10; tries++) {
		s->lock_fd = open(
		    s->p.lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->lock_fd < 0)
			return err_set(err, errno, "open '%s'", s->p.lock);
		if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			close(s->lock_fd);
			s->lock_fd = -1;
			err_set(err, 0,
				"instance '%s' already exists (or is starting)",
				name);
			return err_hint(err,
					"'mpictr instance stop %s' ends "
					"it",
					name);
		}
		if (keeper_lock_current(s->lock_fd, s->p.lock))
			return 0;
		close(s->lock_fd); /* an exiting keeper's: again */
		s->lock_fd = -1;
	}
	return err_set(err, EAGAIN, "take the lock '%s'", s->p.lock);
}

static int inst_prepare(struct inst_start *s, const struct mpictr_config *cfg,
			const struct instance_opts *o, mpictr_err **err)
{
	const char *job = env_get(cfg->host_env, "SLURM_JOB_ID");

	rm_rf(s->p.run); /* a killed keeper's */
	if (mkdir(s->p.run, 0700) < 0)
		return err_set(err, errno, "create the instance directory '%s'",
			       s->p.run);
	if (inst_plan(cfg, s->p.run, &s->plan, err) < 0)
		return -1;
	s->in.name = xstrdup(o->name);
	s->in.image = xstrdup(s->plan.image.path);
	s->in.job = job && *job ? xstrdup(job) : NULL;
	s->in.linger_s = o->linger_s;
	s->in.stop_grace_ms = INSTANCE_STOP_GRACE_MS;
	s->in.watch_pid = o->watch_pid;
	if (!s->in.watch_pid && s->in.job) {
		const char *conf = env_get(cfg->host_env, "SLURM_CONF");

		/* Not found: job_watch_start fails unless a slurmstepd of
		 * the job's runs here. */
		s->in.squeue = job_watch_program(cfg->host_env);
		s->in.slurm_conf = conf ? xstrdup(conf) : NULL;
	}
	s->in.spec = inst_spec(cfg, &s->plan, s->p.run, &s->in.spec_len);
	return 0;
}

int instance_start(const struct mpictr_config *cfg,
		   const struct instance_opts *o, mpictr_err **err)
{
	struct inst_start s;
	struct keeper_life life;
	struct keeper_spec ks;
	int rc = -1;

	memset(&s, 0, sizeof(s));
	s.lock_fd = -1;
	instance_keeper_life(&s.in, &life);
	if (!cfg || !o)
		return err_set(err, EINVAL, "instance start: missing argument");
	if (o->linger_s < 0)
		return err_set(err, 0, "instance start: --linger must be >= 0");
	if (inst_refuse_start(cfg, err) < 0 ||
	    paths_of(cfg->host_env, o->name, true, &s.p, err) < 0)
		return -1;
	if (inst_take_name(&s, o->name, err) < 0)
		goto out;
	if (inst_prepare(&s, cfg, o, err) < 0)
		goto fail;
	for (size_t i = 0; s.plan.notices && s.plan.notices[i]; i++)
		log_notice("%s", s.plan.notices[i]);
	ks = (struct keeper_spec){.plan = &s.plan,
				  .nworkers = s.plan.fuse_workers,
				  .sock_path = s.p.sock,
				  .lock_path = s.p.lock,
				  .dir = s.p.run,
				  .life = &life};
	if (keeper_start(&ks, s.lock_fd, err) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	/* Nothing runs (we hold the name): leave no file. */
	rm_rf(s.p.run);
	unlink(s.p.lock);
out:
	if (s.lock_fd >= 0)
		close(s.lock_fd);
	free(s.in.name);
	free(s.in.image);
	free(s.in.job);
	free(s.in.spec);
	free(s.in.squeue);
	free(s.in.slurm_conf);
	plan_free(&s.plan);
	paths_free(&s.p);
	return rc;
}

/* ---- stop, list ----------------------------------------------------------
 */

static int stop_one(char *const *env, const char *name, mpictr_err **err)
{
	struct inst_paths p;
	struct wire_reply r;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int c, pfd = -1;

	if (paths_of(env, name, false, &p, err) < 0)
		return -1;
	c = inst_request(&p, name, WIRE_STOP, &r, 0, INST_STOP_WAIT_S, err);
	paths_free(&p);
	if (c < 0)
		return -1;
	wire_reply_free(&r);
	/* Answered once all is gone; wait for the keeper's exit too. */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0)
		pfd = sys_pidfd_open(cr.pid, 0);
	close(c);
	if (pfd >= 0) {
		poll(&(struct pollfd){.fd = pfd, .events = POLLIN}, 1, 5000);
		close(pfd);
	}
	return 0;
}

/* The names of the user's instances: of their sockets, locks and
 * directories (a killed keeper's leftovers are asked, found stale and
 * removed). */
static char **inst_names(const char *dir)
{
	static const char *const ext[] = {".sock", ".lock", ".run"};
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
			size_t e = strlen(ext[i]);
			char *n;

			if (l <= 5 + e || strncmp(de->d_name, "inst-", 5) ||
			    strcmp(de->d_name + l - e, ext[i]))
				continue;
			n = xstrndup(de->d_name + 5, l - 5 - e);
			if (strv_contains(names, n))
				free(n);
			else
				strv_push_own(&names, n);
		}
	}
	if (d)
		closedir(d);
	return names;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int instance_stop(char *const *env, const char *name, mpictr_err **err)
{
	cleanup_free char *dir = NULL;
	char **names;
	int rc = 0;

	if (name)
		return stop_one(env, name, err);
	if (rendezvous_dir(env, &dir, false, err) < 0)
		return -1;
	names = inst_names(dir);
	for (size_t i = 0; names && names[i]; i++) {
		mpictr_err *e = NULL;

		if (instance_name_check(names[i], NULL) == 0 &&
		    stop_one(env, names[i], &e) < 0 && rc == 0 &&
		    strncmp(mpictr_err_message(e), "no instance", 11) != 0) {
			*err = e; /* the first failure; the others go on */
			e = NULL;
			rc = -1;
		}
		mpictr_err_free(e);
	}
	strv_free(names);
	return rc;
}

static void info_from_blob(struct instance_info *v, const char *b, size_t len)
{
	const char *job = inst_blob_get(b, len, "job", 0);

	v->name = xstrdup(inst_blob_get(b, len, "name", 0) ?: "");
	v->image = xstrdup(inst_blob_get(b, len, "image", 0) ?: "");
	v->started = (time_t)inst_blob_long(b, len, "started");
	v->members = (int)inst_blob_long(b, len, "members");
	v->keeper = (pid_t)inst_blob_long(b, len, "pid");
	v->linger_s = inst_blob_long(b, len, "linger");
	v->job = job ? xstrdup(job) : NULL;
}

int instance_list(char *const *env, struct instance_info **out, size_t *n,
		  mpictr_err **err)
{
	cleanup_free char *dir = NULL;
	char **names;
	size_t k = 0, cap;

	*out = NULL;
	*n = 0;
	if (rendezvous_dir(env, &dir, false, err) < 0)
		return -1;
	names = inst_names(dir);
	cap = strv_len(names);
	if (cap)
		qsort(names, cap, sizeof(*names), cmp_str);
	*out = xcalloc(cap + 1, sizeof(**out));
	for (size_t i = 0; i < cap; i++) {
		struct inst_paths p;
		char *blob = NULL;
		size_t len = 0;

		if (paths_of(env, names[i], false, &p, NULL) < 0)
			continue;
		/* Gone meanwhile, or stale (then cleaned): not listed. */
		if (inst_query(&p, names[i], WIRE_INFO, &blob, &len, NULL, 0,
			       NULL) == 0)
			info_from_blob(&(*out)[k++], blob, len);
		free(blob);
		paths_free(&p);
	}
	strv_free(names);
	*n = k;
	return 0;
}

void instance_list_free(struct instance_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].image);
		free(v[i].job);
	}
	free(v);
}

/* ---- attach -------------------------------------------------------------- */

/* Options that would change the container (config.h's option table)
 * cannot be given to a joiner. */
static int refuse_container_options(const struct mpictr_config *cfg,
				    const char *name, mpictr_err **err)
{
	const struct config_opt *o = config_container_given(cfg);

	if (!o)
		return 0;
	err_set(err, 0,
		"%s cannot be used with instance://%s: it would change the "
		"container, which the instance set up when it started",
		o->option, name);
	return err_hint(err, "give it to 'mpictr instance start'; -e/--env and "
			     "--pwd apply per command");
}

/* The instance's options (those of the option table that it keeps) into
 * a->cfg, where the joiner's are unset (refuse_container_options). */
static void attach_options(struct instance_attach *a, const char *b, size_t len)
{
	const char *v;

	a->image = xstrdup(inst_blob_get(b, len, "image", 0) ?: "");
	a->run_base = xstrdup(inst_blob_get(b, len, "run", 0) ?: "/tmp");
	a->cfg.image = a->image;
	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];

		for (int n = 0;
		     o->inst_key && (v = inst_blob_get(b, len, o->inst_key, n));
		     n++)
			config_opt_put(&a->cfg, o, v);
	}
	a->holder = (pid_t)inst_blob_long(b, len, "holder");
	v = inst_blob_get(b, len, "ucx", 0);
	a->ucx = v ? xstrdup(v) : NULL;
	a->ucx_known = v || inst_blob_long(b, len, "ucx_none") == 1;
}

/* The joiner's rules (mpictr_config_set_instance_origin): the instance's
 * origin, and where its image lies. */
static int attach_allowed(const struct mpictr_config *cfg,
			  const struct instance_attach *a, const char *blob,
			  size_t len, mpictr_err **err)
{
	const char *origin = inst_blob_get(blob, len, "origin", 0);
	cleanup_free char *real = NULL;

	if (!cfg->inst_origin)
		return 0;
	if (!origin || strcmp(origin, cfg->inst_origin) != 0) {
		err_set(err, EPERM,
			"instance '%s' was started by %s, not by %s: refused",
			a->name, origin ? origin : "'mpictr instance start'",
			cfg->inst_origin);
		return err_hint(err,
				"stop it (mpictr instance stop %s), or "
				"choose another name",
				a->name);
	}
	if (!cfg->inst_image_dirs)
		return 0;
	real = fd_path_dup(a->image_fd);
	for (size_t i = 0; real && cfg->inst_image_dirs[i]; i++) {
		cleanup_free char *dir =
		    realpath(cfg->inst_image_dirs[i], NULL);

		if (dir && siteconf_path_below(real, dir))
			return 0;
	}
	return err_set(err, EPERM,
		       "instance '%s': its image '%s' is not in the allowed "
		       "image directories: refused",
		       a->name, real ? real : a->image);
}

int instance_attach(const struct mpictr_config *cfg, struct instance_attach *a,
		    mpictr_err **err)
{
	struct inst_paths p;
	cleanup_free char *blob = NULL;
	size_t len = 0;
	int fds[3] = {-1, -1, -1};

	memset(a, 0, sizeof(*a));
	a->userns = a->mntns = a->image_fd = -1;
	if (!instance_is_ref(cfg->image))
		return err_set(err, EINVAL, "'%s' names no instance",
			       cfg->image ? cfg->image : "");
	a->name = xstrdup(cfg->image + strlen(INSTANCE_PREFIX));
	if (refuse_container_options(cfg, a->name, err) < 0 ||
	    paths_of(cfg->host_env, a->name, false, &p, err) < 0)
		return -1;
	if (inst_query(&p, a->name, WIRE_JOIN, &blob, &len, fds, 3, err) < 0) {
		paths_free(&p);
		return -1;
	}
	paths_free(&p);
	a->userns = fds[0];
	a->mntns = fds[1];
	a->image_fd = fds[2];
	if (a->userns < 0 || a->mntns < 0 || a->image_fd < 0)
		return err_set(err, EPROTO,
			       "instance '%s': its keeper sent no namespaces "
			       "or image",
			       a->name);
	a->cfg = *cfg;
	attach_options(a, blob, len);
	if (attach_allowed(cfg, a, blob, len, err) < 0)
		return -1;
	/* Plan from the file the instance mounted, whatever its path names
	 * by now (deleted, replaced). */
	a->image_read = xasprintf("/proc/self/fd/%d", a->image_fd);
	a->cfg.image_read = a->image_read;
	a->src = (struct ns_source){.name = a->name,
				    .userns = a->userns,
				    .mntns = a->mntns,
				    .holder = a->holder,
				    .run_base = a->run_base,
				    .ucx_known = a->ucx_known,
				    .ucx = a->ucx};
	return 0;
}

void instance_attach_free(struct instance_attach *a)
{
	if (a->userns >= 0)
		close(a->userns);
	if (a->mntns >= 0)
		close(a->mntns);
	if (a->image_fd >= 0)
		close(a->image_fd);
	free(a->image_read);
	free(a->ucx);
	free(a->name);
	free(a->run_base);
	free(a->image);
	for (size_t i = 0; i < config_nopts; i++)
		if (config_opts[i].inst_key)
			config_opt_clear(&a->cfg, &config_opts[i]);
	memset(a, 0, sizeof(*a));
	a->userns = a->mntns = a->image_fd = -1;
}

/* ---- the public API (mpictr.h) ------------------------------------------ */

extern char **environ;

static char *const *host_env_of(const mpictr_config *cfg)
{
	return cfg && cfg->host_env ? cfg->host_env : environ;
}

MPICTR_PUBLIC int mpictr_instance_start(mpictr_config *cfg, const char *name,
					long linger_s, int watch_pid,
					mpictr_err **err)
{
	struct instance_opts o = {
	    .name = name, .linger_s = linger_s, .watch_pid = watch_pid};

	if (!cfg)
		return err_set(err, EINVAL, "instance start: missing config");
	if (instance_name_check(name, err) < 0 ||
	    pull_resolve_image(cfg, err) < 0)
		return -1;
	return instance_start(cfg, &o, err);
}

MPICTR_PUBLIC int mpictr_instance_stop(mpictr_config *cfg, const char *name,
				       mpictr_err **err)
{
	return instance_stop(host_env_of(cfg), name, err);
}

static void list_text(struct strbuf *sb, const struct instance_info *v,
		      size_t n)
{
	sb_printf(sb, "%-16s %-40s %-20s %7s %8s %6s %s\n", "NAME", "IMAGE",
		  "STARTED", "MEMBERS", "PID", "LINGER", "JOB");
	for (size_t i = 0; i < n; i++) {
		char when[32] = "";
		struct tm tm;

		if (gmtime_r(&v[i].started, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		sb_printf(sb, "%-16s %-40s %-20s %7d %8d %6ld %s\n", v[i].name,
			  v[i].image, when, v[i].members, (int)v[i].keeper,
			  v[i].linger_s, v[i].job ? v[i].job : "-");
	}
}

static void list_json(struct strbuf *sb, const struct instance_info *v,
		      size_t n)
{
	static const struct jw_layout one_a_line = {"\n ", ",\n ", "\n"};
	struct jw w = {.sb = sb};

	jw_arr(&w, NULL, &one_a_line);
	for (size_t i = 0; i < n; i++) {
		char when[32] = "";
		struct tm tm;

		if (gmtime_r(&v[i].started, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		jw_obj(&w, NULL, &jw_inline);
		jw_str(&w, "name", v[i].name);
		jw_str(&w, "image", v[i].image);
		jw_str(&w, "started", when);
		jw_int(&w, "start_time", v[i].started);
		jw_int(&w, "members", v[i].members);
		jw_int(&w, "pid", v[i].keeper);
		jw_int(&w, "linger", v[i].linger_s);
		jw_str(&w, "job", v[i].job);
		jw_end(&w);
	}
	jw_end(&w);
	sb_putc(sb, '\n');
}

MPICTR_PUBLIC int mpictr_instance_list(mpictr_config *cfg, int json, char **out,
				       mpictr_err **err)
{
	struct instance_info *v;
	struct strbuf sb = STRBUF_INIT;
	size_t n;

	if (!out)
		return err_set(err, EINVAL, "instance list: missing argument");
	if (instance_list(host_env_of(cfg), &v, &n, err) < 0)
		return -1;
	if (json)
		list_json(&sb, v, n);
	else
		list_text(&sb, v, n);
	instance_list_free(v, n);
	*out = sb_steal(&sb);
	return 0;
}
