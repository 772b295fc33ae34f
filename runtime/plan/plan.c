/* plan.c - turn a validated config and the host facts gathered for it
 * (facts.c) into the plan: mount operations in execution order, the
 * command's environment and start directory. Nothing here touches the
 * system (no file is read, stat()ed or run): the rules live here and are
 * unit-tested with recorded facts (tests/unit/check_plan.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/error.h"
#include "plan/plan.h"

static struct mount_op *add_op(struct plan *p, enum mop_kind kind,
			       const char *source, const char *target,
			       unsigned long flags, const char *why)
{
	struct mount_op *op;

	p->ops = xrealloc(p->ops, (p->nops + 1) * sizeof(*p->ops));
	op = &p->ops[p->nops++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->source = source ? xstrdup(source) : NULL;
	op->target = xstrdup(target);
	op->flags = flags;
	op->why = why;
	return op;
}

/* A host path that facts.c did not record: planning and gathering
 * disagree, a bug. */
static int no_fact(const char *path, mpictr_err **err)
{
	return err_set(err, 0,
		       "no host fact about '%s' was gathered "
		       "(internal error: please report it)",
		       path);
}

/* A failure recorded while gathering, reported now (a copy of e). */
static int replay_err(mpictr_err **err, const mpictr_err *e)
{
	return err_from_relay(err, e->errnum, e->exit_code, e->msg);
}

/* The recorded real path (bind_resolve_with's resolver). */
static char *fact_real(const char *path, void *ctx)
{
	const struct path_fact *pf = host_facts_path(ctx, path);

	if (!pf || !pf->real) {
		errno = pf ? pf->err : ENOENT;
		return NULL;
	}
	return xstrdup(pf->real);
}

/* The recorded real path of path, or NULL with errno set. */
static char *plan_realpath(const struct plan *p, const char *path)
{
	return fact_real(path, (void *)p->facts);
}

/* Is a bind of src onto dst already provided by an earlier bind of an
 * ancestor (same relative path on both sides)? */
static bool bind_covered(const struct plan *p, const char *src, const char *dst)
{
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		size_t ls, ld;

		if (op->kind != MOP_BIND || !op->src_is_dir)
			continue;
		ls = strlen(op->source);
		ld = strlen(op->target);
		if (strncmp(src, op->source, ls) ||
		    (src[ls] != '/' && src[ls] != '\0'))
			continue;
		if (strncmp(dst, op->target, ld) ||
		    (dst[ld] != '/' && dst[ld] != '\0'))
			continue;
		if (strcmp(src + ls, dst + ld) == 0)
			return true;
	}
	return false;
}

/* Add a bind of host path src (must be absolute) onto dst, asked for by
 * who. Returns -1 when a required source is missing. */
static int add_bind(struct plan *p, const char *src, const char *dst,
		    unsigned long flags, bool optional, enum bind_who who,
		    const char *why, mpictr_err **err)
{
	const struct path_fact *pf = host_facts_path(p->facts, src);
	struct mount_op *op;

	if (!pf)
		return no_fact(src, err);
	if (pf->err) {
		if (optional)
			return 0;
		return err_set(err, pf->err, "bind source '%s'", src);
	}
	if (pf->is_dir && bind_covered(p, src, dst) && !(flags & MS_RDONLY))
		return 0;
	/* A device node (-B /dev/nvidia0): bound as the device binds are,
	 * nosuid,noexec without nodev, or it could not be opened. */
	if (pf->is_dev)
		op = add_op(p, MOP_DEV, src, dst, flags | MS_NOSUID | MS_NOEXEC,
			    why);
	else
		op = add_op(p, MOP_BIND, src, dst, flags | MS_NOSUID | MS_NODEV,
			    why);
	op->src_is_dir = pf->is_dir;
	op->optional = optional;
	op->who = who;
	return 0;
}

static int user_binds(const struct mpictr_config *cfg, struct plan *p,
		      const char *cwd, mpictr_err **err)
{
	for (size_t i = 0; i < cfg->nbinds; i++) {
		const struct bind_spec *b = &cfg->binds[i];
		cleanup_free char *src = NULL, *dst = NULL;
		cleanup_free char *what = xasprintf("bind '%s'", b->src);

		if (bind_resolve_with(b, cwd, NULL, fact_real, (void *)p->facts,
				      &src, &dst, err) < 0 ||
		    siteconf_check_bind(&cfg->site, src, BIND_USER, what, err) <
			0 ||
		    add_bind(p, src, dst, b->ro ? MS_RDONLY : 0, false,
			     BIND_USER, "user bind", err) < 0)
			return -1;
	}
	return 0;
}

/* Binds from a configuration file (site defaults or a profile): sources
 * must exist; those from user files are checked like -B. */
static int item_binds(const struct mpictr_config *cfg, struct plan *p,
		      const struct site_item *it, const char *why,
		      mpictr_err **err)
{
	struct bind_spec *b = NULL;
	size_t n = 0;
	int rc = 0;

	if (bind_parse(it->value, &b, &n, err) < 0)
		return err_wrap(err, "%s", it->origin);
	for (size_t i = 0; i < n && rc == 0; i++) {
		enum bind_who who = it->site ? BIND_TRUSTED : BIND_USER;
		cleanup_free char *src = NULL, *dst = NULL;
		cleanup_free char *what =
		    xasprintf("bind '%s' (from %s)", b[i].src, it->origin);

		if (bind_resolve_with(&b[i], NULL, it->origin, fact_real,
				      (void *)p->facts, &src, &dst, err) < 0 ||
		    siteconf_check_bind(&cfg->site, src, who, what, err) < 0) {
			rc = -1;
			break;
		}
		rc = add_bind(p, src, dst, b[i].ro ? MS_RDONLY : 0, false, who,
			      why, err);
	}
	bind_specs_free(b, n);
	return rc;
}

/* The selected profiles, in order; an unknown name lists the known. */
static int resolve_profiles(const struct mpictr_config *cfg, struct plan *p,
			    const struct site_profile ***out, mpictr_err **err)
{
	size_t n = strv_len(cfg->profiles);

	*out = xcalloc(n + 1, sizeof(**out));
	for (size_t i = 0; i < n; i++) {
		const struct site_profile *sp =
		    siteconf_profile(&cfg->site, cfg->profiles[i]);
		if (!sp) {
			cleanup_free char *known =
			    siteconf_profile_names(&cfg->site);
			return err_set(err, 0,
				       "unknown profile '%s' (known: %s)",
				       cfg->profiles[i], known);
		}
		(*out)[i] = sp;
		strv_push(&p->profiles, sp->name);
	}
	return 0;
}

/* Site policy on settings users may not change. */
static int site_locks(const struct mpictr_config *cfg, mpictr_err **err)
{
	const struct siteconf *sc = &cfg->site;

	if (cfg->devices && sc->lock_devices.value)
		return err_set(err, 0,
			       "--devices refused: the site locks the device "
			       "policy (%s: lock_devices = yes)",
			       sc->lock_devices.origin);
	if (cfg->transport_env_set && sc->lock_transport_env.value &&
	    sc->transport_env.value &&
	    cfg->transport_env != streq0(sc->transport_env.value, "on"))
		return err_set(err, 0,
			       "--transport-env refused: the site locks it "
			       "to %s (%s: lock_transport_env = yes)",
			       sc->transport_env.value,
			       sc->lock_transport_env.origin);
	return 0;
}

static void add_inject_bind(struct plan *p, const char *real, const char *name,
			    enum bind_who who, const char *why)
{
	cleanup_free char *dst = xasprintf(MPIINJECT_DIR "/%s", name);
	struct mount_op *op;

	for (size_t i = 0; i < p->nops; i++)
		if (strcmp(p->ops[i].target, dst) == 0)
			return; /* an earlier profile provides it */
	op = add_op(p, MOP_BIND, real, dst, MS_RDONLY | MS_NOSUID | MS_NODEV,
		    why);
	op->src_is_dir = false;
	op->who = who;
}

/* mpiabi_inspect_host's recorded answer about path, copied into *out. */
static int inspect_host(const struct plan *p, const char *path,
			struct mpi_lib *out, mpictr_err **err)
{
	const struct mpi_fact *m = host_facts_mpi(p->facts, path);

	memset(out, 0, sizeof(*out));
	if (!m)
		return no_fact(path, err);
	if (m->err)
		return replay_err(err, m->err);
	*out = m->lib;
	out->path = xstrdup(m->lib.path);
	out->soname = xstrdup(m->lib.soname);
	out->file = m->lib.file ? xstrdup(m->lib.file) : NULL;
	return 0;
}

/* Host MPI injection: each library bound read-only into MPIINJECT_DIR
 * under its soname (MPICH: under both ABI names, libmpi.so.12 and
 * libmpich.so.12, so programs linked either way load it); the holder
 * checks the ABI against the image's MPI before anything is bound. */
static int plan_mpi(const struct mpictr_config *cfg, struct plan *p,
		    const struct site_profile *const *profs, mpictr_err **err)
{
	for (size_t i = 0; profs[i]; i++) {
		const struct site_profile *sp = profs[i];
		struct mpi_inject *inj;
		cleanup_free char *real = NULL;
		enum bind_who mwho = sp->mpi.site ? BIND_TRUSTED : BIND_USER;

		if (!sp->mpi.value)
			continue;
		p->mpi = xrealloc(p->mpi, (p->nmpi + 1) * sizeof(*p->mpi));
		inj = &p->mpi[p->nmpi++];
		memset(inj, 0, sizeof(*inj));
		inj->profile = xstrdup(sp->name);
		inj->warn_only = sp->mpi_warn;
		if (inspect_host(p, sp->mpi.value, &inj->host, err) < 0)
			return err_wrap(err, "profile '%s' (%s)", sp->name,
					sp->mpi.origin);
		if (inj->host.family == MPI_FAMILY_NONE)
			return err_set(err, 0,
				       "profile '%s' (%s): '%s' (soname '%s') "
				       "is not an MPI library of a known ABI "
				       "(libmpi.so.12 or libmpich.so.12 for "
				       "MPICH, libmpi.so.40 for Open MPI)",
				       sp->name, sp->mpi.origin, sp->mpi.value,
				       inj->host.soname);
		real = plan_realpath(p, sp->mpi.value);
		if (!real)
			return err_set(err, errno, "MPI library '%s'",
				       sp->mpi.value);
		if (!sp->mpi.site) {
			cleanup_free char *what =
			    xasprintf("MPI library '%s' (from %s)",
				      sp->mpi.value, sp->mpi.origin);
			if (siteconf_check_user_bind(&cfg->site, real, what,
						     err) < 0)
				return -1;
		}
		add_inject_bind(p, real, inj->host.soname, mwho, "host MPI");
		if (inj->host.family == MPI_FAMILY_MPICH) {
			cleanup_free char *a =
			    xasprintf("libmpi.so.%d", inj->host.major);
			cleanup_free char *b =
			    xasprintf("libmpich.so.%d", inj->host.major);
			add_inject_bind(p, real, a, mwho,
					"host MPI (MPICH ABI name)");
			add_inject_bind(p, real, b, mwho,
					"host MPI (MPICH ABI name)");
		}
		for (size_t k = 0; k < sp->mpi_deps.n; k++) {
			const struct site_item *d = &sp->mpi_deps.v[k];
			cleanup_free char *dreal = plan_realpath(p, d->value);
			struct mpi_lib dl;

			if (!dreal)
				return err_set(err, errno,
					       "MPI dependency '%s' (from %s)",
					       d->value, d->origin);
			if (!d->site) {
				cleanup_free char *what =
				    xasprintf("MPI dependency '%s' (from %s)",
					      d->value, d->origin);
				if (siteconf_check_user_bind(&cfg->site, dreal,
							     what, err) < 0)
					return -1;
			}
			if (inspect_host(p, d->value, &dl, err) < 0)
				return err_wrap(err, "profile '%s' (%s)",
						sp->name, d->origin);
			add_inject_bind(p, dreal, dl.soname,
					d->site ? BIND_TRUSTED : BIND_USER,
					"host MPI dependency");
			mpi_lib_free(&dl);
		}
	}
	return 0;
}

static int site_binds(const struct mpictr_config *cfg, struct plan *p,
		      const struct site_profile *const *profs, mpictr_err **err)
{
	const struct siteconf *sc = &cfg->site;

	for (size_t i = 0; i < sc->binds.n; i++)
		if (item_binds(cfg, p, &sc->binds.v[i], "site bind", err) < 0)
			return -1;
	for (size_t i = 0; profs[i]; i++)
		for (size_t k = 0; k < profs[i]->binds.n; k++)
			if (item_binds(cfg, p, &profs[i]->binds.v[k],
				       "profile bind", err) < 0)
				return -1;
	return plan_mpi(cfg, p, profs, err);
}

static char *tmpfs_size(const char *v, const char *def,
			const struct host_facts *f, const char *prefix);

/* The mount options of the job's private /dev/shm: its size is the site's
 * shm_size (validated when the site file was read) or SHM_SIZE_DEFAULT, a
 * percentage of the memory the job may use, rounded up to whole pages. */
static char *shm_options(const struct mpictr_config *cfg,
			 const struct host_facts *f)
{
	return tmpfs_size(cfg->site.shm_size.value, SHM_SIZE_DEFAULT, f,
			  "mode=1777,");
}

/* "PREFIXsize=Nk": the size v (a site key's value) or def, a percentage
 * of the memory the job may use, rounded up to whole pages. */
static char *tmpfs_size(const char *v, const char *def,
			const struct host_facts *f, const char *prefix)
{
	unsigned long long bytes, psz = f->page_size;
	unsigned pct;

	if (!v || siteconf_parse_size(v, &bytes, &pct) < 0)
		siteconf_parse_size(def, &bytes, &pct);
	if (pct) {
		unsigned long long mem = f->job_memory;
		bytes = mem / 100 * pct + mem % 100 * pct / 100;
	}
	if (psz < 1024)
		psz = 4096;
	bytes = (bytes + psz - 1) / psz * psz;
	if (bytes < psz)
		bytes = psz;
	return xasprintf("%ssize=%lluk", prefix, bytes >> 10);
}

/* The writable layer on the image: --writable-tmpfs or --overlay DIR (a
 * relative DIR is taken against the working directory). */
static int plan_overlay(const struct mpictr_config *cfg, struct plan *p,
			mpictr_err **err)
{
	struct mount_op *op;

	if (cfg->writable_tmpfs && cfg->overlay_dir)
		return err_set(err, 0,
			       "--writable-tmpfs and --overlay exclude each "
			       "other (hint: --overlay DIR alone keeps the "
			       "changes in DIR)");
	if (cfg->writable_tmpfs) {
		p->overlay_tmpfs =
		    tmpfs_size(cfg->site.writable_tmpfs_size.value,
			       WRITABLE_TMPFS_SIZE_DEFAULT, p->facts, "");
		op = add_op(p, MOP_OVERLAY, "tmpfs", "/", MS_NOSUID | MS_NODEV,
			    "--writable-tmpfs");
		op->data = xstrdup(p->overlay_tmpfs);
	} else if (cfg->overlay_dir) {
		cleanup_free char *abs =
		    cfg->overlay_dir[0] == '/'
			? xstrdup(cfg->overlay_dir)
			: xasprintf("%s/%s", p->facts->cwd, cfg->overlay_dir);
		p->overlay_dir = clean_path(abs);
		op = add_op(p, MOP_OVERLAY, p->overlay_dir, "/",
			    MS_NOSUID | MS_NODEV, "--overlay");
		op->data = xasprintf("upperdir=%s/upper,workdir=%s/work",
				     p->overlay_dir, p->overlay_dir);
	}
	return 0;
}

static int default_mounts(const struct mpictr_config *cfg, struct plan *p,
			  mpictr_err **err)
{
	static const char *const devs[] = {"null",   "zero",	"full",
					   "random", "urandom", "tty"};
	const unsigned long nsd = MS_NOSUID | MS_NODEV;

	add_op(p, MOP_IMAGE, p->image.path, "/", MS_RDONLY | nsd, "image");
	if (plan_overlay(cfg, p, err) < 0)
		return -1;
	add_op(p, MOP_BIND, "/proc", "/proc", nsd | MS_NOEXEC, "host pid ns")
	    ->src_is_dir = true;
	add_op(p, MOP_BIND, "/sys", "/sys", MS_RDONLY | nsd | MS_NOEXEC,
	       "host sysfs, read-only")
	    ->src_is_dir = true;
	add_op(p, MOP_TMPFS, "tmpfs", "/dev", MS_NOSUID | MS_NOEXEC,
	       "minimal /dev")
	    ->data = xstrdup("mode=755,size=1m");
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++) {
		cleanup_free char *path = xasprintf("/dev/%s", devs[i]);
		struct mount_op *op =
		    add_op(p, MOP_DEV, path, path, MS_NOSUID | MS_NOEXEC,
			   "minimal /dev");
		op->optional = strcmp(devs[i], "tty") == 0;
	}
	add_op(p, MOP_DEVPTS, "devpts", "/dev/pts", MS_NOSUID | MS_NOEXEC,
	       "pseudo terminals")
	    ->data = xstrdup("newinstance,ptmxmode=0666,mode=0620");
	add_op(p, MOP_SYMLINK, "pts/ptmx", "/dev/ptmx", 0, "pseudo terminals");
	if (cfg->no_share) {
		/* Debugging only: per-rank namespaces cannot share a private
		 * tmpfs, so shared memory goes through the host's. */
		if (add_bind(p, "/dev/shm", "/dev/shm", 0, false, BIND_TRUSTED,
			     "host shared memory (--no-share)", err) < 0)
			return -1;
	} else {
		add_op(p, MOP_TMPFS, "tmpfs", "/dev/shm", nsd,
		       "private shared memory of the job")
		    ->data = shm_options(cfg, p->facts);
	}
	add_op(p, MOP_SYMLINK, "/proc/self/fd", "/dev/fd", 0, "standard");
	add_op(p, MOP_SYMLINK, "/proc/self/fd/0", "/dev/stdin", 0, "standard");
	add_op(p, MOP_SYMLINK, "/proc/self/fd/1", "/dev/stdout", 0, "standard");
	add_op(p, MOP_SYMLINK, "/proc/self/fd/2", "/dev/stderr", 0, "standard");
	/* Without them images stall about 5 s in DNS per MPI start. */
	if (add_bind(p, "/etc/hosts", "/etc/hosts", MS_RDONLY, true,
		     BIND_TRUSTED, "name resolution", err) < 0 ||
	    add_bind(p, "/etc/resolv.conf", "/etc/resolv.conf", MS_RDONLY, true,
		     BIND_TRUSTED, "name resolution", err) < 0)
		return -1;
	add_op(p, MOP_FILE, "passwd", "/etc/passwd", MS_RDONLY | nsd,
	       "user entry");
	add_op(p, MOP_FILE, "group", "/etc/group", MS_RDONLY | nsd,
	       "group entry");
	return 0;
}

static void user_identity(const struct mpictr_config *cfg, struct plan *p)
{
	const struct host_facts *f = p->facts;

	p->uid = f->uid;
	p->gid = f->gid;
	p->uid_in = cfg->fakeroot ? 0 : p->uid;
	p->gid_in = cfg->fakeroot ? 0 : p->gid;
	p->home = xstrdup(cfg->home_dst ? cfg->home_dst : f->home);
	p->user = f->user ? xstrdup(f->user) : xasprintf("user%u", p->uid);
}

/* An automatic bind of a path the user chooses: the site's deny rules
 * apply (early, on the resolved path; rootfs.c checks the opened source).
 * A missing optional source is left to add_bind. */
static int add_auto_bind(const struct mpictr_config *cfg, struct plan *p,
			 const char *path, bool optional, const char *why,
			 const char *what, const char *hint, mpictr_err **err)
{
	cleanup_free char *real = plan_realpath(p, path);

	if (real &&
	    siteconf_check_bind(&cfg->site, real, BIND_AUTO, what, err) < 0)
		return err_hint(err, "%s", hint);
	return add_bind(p, path, path, 0, optional, BIND_AUTO, why, err);
}

/* --home SRC[:DST]: SRC bound at the home path, checked as a -B bind. */
static int home_bind(const struct mpictr_config *cfg, struct plan *p,
		     const char *cwd, mpictr_err **err)
{
	struct bind_spec b = {.src = cfg->home_src, .dst = p->home};
	cleanup_free char *src = NULL, *dst = NULL;
	cleanup_free char *what = xasprintf("--home '%s'", cfg->home_src);

	if (bind_resolve_with(&b, cwd, NULL, fact_real, (void *)p->facts, &src,
			      &dst, err) < 0 ||
	    siteconf_check_bind(&cfg->site, src, BIND_USER, what, err) < 0)
		return err_wrap(err, "--home");
	return add_bind(p, src, dst, 0, false, BIND_USER, "home (--home)", err);
}

static int host_binds(const struct mpictr_config *cfg, struct plan *p,
		      const char *cwd, mpictr_err **err)
{
	static const char contain[] =
	    "--contain binds neither /tmp, $HOME nor the working directory";
	const char *pmix_tmp;

	if (!cfg->contain) {
		cleanup_free char *home_what =
		    xasprintf("home directory '%s'", p->home);
		cleanup_free char *cwd_what =
		    xasprintf("working directory '%s'", cwd);
		/* Parents before children: a later bind under /tmp or $HOME
		 * is then recognised as covered instead of being hidden. */
		if (add_auto_bind(cfg, p, "/tmp", false, "host /tmp",
				  "host /tmp", contain, err) < 0)
			return -1;
		if (!cfg->home_src && !cfg->no_home && strcmp(p->home, "/") &&
		    add_auto_bind(cfg, p, p->home, true, "home directory",
				  home_what, contain, err) < 0)
			return -1;
		if (strcmp(cwd, "/") &&
		    add_auto_bind(cfg, p, cwd, false, "working directory",
				  cwd_what,
				  "run from another directory, or use "
				  "--contain",
				  err) < 0)
			return -1;
	} else {
		add_op(p, MOP_TMPFS, "tmpfs", "/tmp", MS_NOSUID | MS_NODEV,
		       "private /tmp (--contain)")
		    ->data =
		    tmpfs_size(cfg->site.tmp_size.value, TMP_SIZE_DEFAULT,
			       p->facts, "mode=1777,");
		if (!cfg->home_src)
			add_op(p, MOP_TMPFS, "tmpfs", p->home,
			       MS_NOSUID | MS_NODEV, "empty home (--contain)")
			    ->data =
			    tmpfs_size(cfg->site.tmp_size.value,
				       TMP_SIZE_DEFAULT, p->facts, "mode=700,");
	}
	if (cfg->home_src && home_bind(cfg, p, cwd, err) < 0)
		return -1;
	/* The job's private directory (PMIx server files) at the same path,
	 * so PMIx clients find their shared-memory store. (The job directory is
	 * mpictr's own: made by then, not a fact.) */
	if (p->run_dir && !bind_covered(p, p->run_dir, p->run_dir)) {
		struct mount_op *op =
		    add_op(p, MOP_BIND, p->run_dir, p->run_dir,
			   MS_NOSUID | MS_NODEV, "PMIx server directory");
		op->src_is_dir = true;
		op->who = BIND_TRUSTED;
	}
	/* The launcher's PMIx server directory (srun --mpi=pmix, or mpirun's
	 * under its session directory /tmp/ompi.*): same path inside, or
	 * every rank prints a dstore error and falls back. Needed also where
	 * /tmp is private (--contain). */
	pmix_tmp = env_get(cfg->host_env, "PMIX_SERVER_TMPDIR");
	if (pmix_tmp && pmix_tmp[0] == '/' && !run_mode_serves_pmi(p->mode)) {
		cleanup_free char *d = clean_path(pmix_tmp);
		cleanup_free char *what =
		    xasprintf("launcher's PMIx server directory '%s' "
			      "(PMIX_SERVER_TMPDIR)",
			      d);
		if (add_auto_bind(cfg, p, d, true,
				  "launcher's PMIx server directory", what,
				  "PMIX_SERVER_TMPDIR comes from the "
				  "environment; srun --mpi=pmix and mpirun "
				  "set it",
				  err) < 0)
			return -1;
	}
	return 0;
}

/* Devices, from the discovery among the facts: one device bind per node
 * (keeps dev, nosuid,noexec), read-only binds of what the user-space
 * drivers read, and the transport policy's inputs. */
static int plan_devices(struct plan *p, mpictr_err **err)
{
	const struct host_facts *f = p->facts;
	struct host_devices *d = &p->hostdev;

	if (f->devices_err)
		return replay_err(err, f->devices_err);
	host_devices_copy(d, &f->hostdev);
	p->sysroot = f->sysroot ? xstrdup(f->sysroot) : NULL;
	p->ucx_net_devices =
	    f->ucx_net_devices ? xstrdup(f->ucx_net_devices) : NULL;
	p->ucx_asked = f->ucx_asked;
	for (size_t i = 0; i < d->ndevs; i++) {
		const struct path_fact *pf =
		    host_facts_path(f, d->devs[i].host_path);
		struct mount_op *op;
		struct plan_device *pd;

		if (!pf)
			return no_fact(d->devs[i].host_path, err);
		if (pf->err)
			continue;
		op = add_op(p, MOP_DEV, d->devs[i].host_path, d->devs[i].path,
			    MS_NOSUID | MS_NOEXEC, "device");
		op->src_is_dir = pf->is_dir;
		p->devices = xrealloc(p->devices,
				      (p->ndevices + 1) * sizeof(*p->devices));
		pd = &p->devices[p->ndevices++];
		pd->path = xstrdup(d->devs[i].path);
		pd->kind = xstrdup(device_kind_name(d->devs[i].kind));
		pd->reason = xstrdup(d->devs[i].reason);
	}
	for (size_t i = 0; i < d->nbinds; i++)
		if (add_bind(p, d->binds[i].src, d->binds[i].dst, MS_RDONLY,
			     true, BIND_TRUSTED, "driver files", err) < 0)
			return -1;
	for (size_t i = 0; d->warnings && d->warnings[i]; i++)
		strv_push(&p->notices, d->warnings[i]);
	return 0;
}

/* The verbs step: the image's providers against the exposed HCAs. */
static void plan_verbs(struct plan *p)
{
	const struct host_facts *f = p->facts;
	struct devices_bind *b = NULL;
	size_t nb = 0;

	if (!f->image_verbs_known) {
		p->verbs_in_holder = f->hostdev.nhcas > 0;
		verbs_tree_copy(&p->host_verbs, &f->host_verbs);
		return;
	}
	verbs_decide(&f->hostdev, &f->host_verbs, f->sysroot, &f->image_verbs,
		     p->inject_verbs, &p->verbs_warnings, &b, &nb);
	for (size_t i = 0; i < nb; i++) {
		add_op(p, MOP_BIND, b[i].src, b[i].dst,
		       MS_RDONLY | MS_NOSUID | MS_NODEV, VERBS_WHY)
		    ->who = BIND_TRUSTED;
		free(b[i].src);
		free(b[i].dst);
	}
	free(b);
}

/* The image config of a pulled image (docs/pull.md "At run time"). */
static void copy_image_config(const struct host_facts *f, struct plan *p)
{
	if (!f->oci_known)
		return;
	p->oci_known = true;
	p->oci.entrypoint = strv_dup(f->oci.entrypoint);
	p->oci.cmd = strv_dup(f->oci.cmd);
	p->oci.env = strv_dup(f->oci.env);
	p->oci.workdir = f->oci.workdir ? xstrdup(f->oci.workdir) : NULL;
	p->oci.user = f->oci.user ? xstrdup(f->oci.user) : NULL;
	for (size_t i = 0; f->oci.env && f->oci.env[i]; i++) {
		const char *kv = f->oci.env[i], *eq = strchr(kv, '=');
		if (eq && env_name_valid(kv, (size_t)(eq - kv)))
			strv_push(&p->image_env, kv);
	}
}

/* The command: `run` is the image config's Entrypoint + (the arguments,
 * or Cmd) where there is one, else the image's runscript; exec is the
 * arguments as given. */
static void plan_argv(const struct mpictr_config *cfg, struct plan *p)
{
	bool args = cfg->argv && cfg->argv[0];

	if (!cfg->runscript) {
		p->argv = strv_dup(cfg->argv);
		return;
	}
	if (p->oci_known && ((p->oci.entrypoint && p->oci.entrypoint[0]) ||
			     (p->oci.cmd && p->oci.cmd[0]))) {
		char *const *tail = args ? cfg->argv : p->oci.cmd;
		for (size_t i = 0; p->oci.entrypoint && p->oci.entrypoint[i];
		     i++)
			strv_push(&p->argv, p->oci.entrypoint[i]);
		/* without arguments, Cmd too is the image's */
		p->argv_lead = args ? strv_len(p->argv)
				    : strv_len(p->argv) + strv_len(tail);
		for (size_t i = 0; tail && tail[i]; i++)
			strv_push(&p->argv, tail[i]);
		return;
	}
	p->argv_lead = 1;
	strv_push(&p->argv, "/.singularity.d/runscript");
	for (size_t i = 0; args && cfg->argv[i]; i++)
		strv_push(&p->argv, cfg->argv[i]);
}

/* The parts of the plan that come from the config and the decision. */
/* The FUSE workers of the holder: one per rank (two in join mode and
 * for an instance), at most 8, and at most one fewer than the online CPUs:
 * the workers only decompress while ranks fault their libraries in, and
 * each worker keeps its own block cache, so a block that the kernel's
 * unaligned READs need twice is inflated once per worker. On 2 CPUs (8
 * Open MPI ranks joining, docs/bench-hybrid.md) two workers inflated 28 MB
 * for 13 MB read, one worker 20 MB, and the job took 20 ms less wall and
 * 40 ms less CPU. MPICTR_FUSE_WORKERS (1..64) overrides it. */
static int fuse_workers(const struct mpictr_config *cfg, int nranks, long ncpu)
{
	const char *s = env_get(cfg->host_env, "MPICTR_FUSE_WORKERS");
	long n;

	if (s && parse_long(s, 1, 64, &n) == 0)
		return (int)n;
	n = nranks > 0 ? nranks : 2;
	if (ncpu > 0 && n > ncpu - 1)
		n = ncpu - 1;
	return (int)(n < 1 ? 1 : n > 8 ? 8 : n);
}

/* Where the ranks are and how many share this node, as the modes run
 * them: launch mode and the single process have every rank here (node
 * daemon mode's other nodes run the rest); a join-mode task is local rank
 * peers.local_rank of peers.local_size (1 and 0 when the launcher does
 * not say). */
static void plan_ranks(const struct mpictr_config *cfg,
		       const struct run_decision *d, struct plan *p)
{
	const struct launch_peers *pe = &d->peers;

	p->single_node = d->mode == RUN_SINGLE || d->mode == RUN_LAUNCH;
	p->nlocal = p->nranks;
	p->local_rank = 0;
	if (d->mode == RUN_JOIN) {
		p->nlocal = pe->local_size != LAUNCHER_UNKNOWN
				? (int)pe->local_size
				: 1;
		p->local_rank = pe->local_rank != LAUNCHER_UNKNOWN
				    ? (int)pe->local_rank
				    : 0;
	}
	p->fuse_workers = fuse_workers(cfg, d->nranks, p->facts->ncpu);
}

/* The job's PMI shape: the ranks (1 without -n), whether our PMI servers
 * serve them, the holders, and the universe: --universe-size, else in
 * launch mode the cores or the ranks when more (as mpirun's on one node),
 * in node daemon mode the job's size (0: the server's default). */
static void plan_pmi_shape(const struct mpictr_config *cfg,
			   const struct run_decision *d, struct plan *p)
{
	p->nranks = d->nranks > 0 ? d->nranks : 1;
	p->serves_pmi = run_mode_serves_pmi(d->mode);
	p->nholders = cfg->no_share ? (size_t)p->nranks : 1;
	p->universe_hard = cfg->no_oversubscribe ||
			   streq0(cfg->site.oversubscribe.value, "no");
	p->universe = 0;
	p->ncores = p->facts->ncores;
	if (!p->serves_pmi)
		return;
	if (cfg->universe_size > 0)
		p->universe = (uint32_t)cfg->universe_size;
	else if (d->mode == RUN_LAUNCH)
		p->universe = (uint32_t)p->nranks > p->facts->ncores
				  ? (uint32_t)p->nranks
				  : p->facts->ncores;
}

static int plan_options(const struct mpictr_config *cfg,
			const struct run_decision *d, const char *run_dir,
			struct plan *p, mpictr_err **err)
{
	const struct host_facts *f = p->facts;

	if (f->image_err)
		return replay_err(err, f->image_err);
	if (f->trust_err)
		return replay_err(err, f->trust_err);
	site_trust_copy(&p->trust, &f->trust);
	p->trust_cache = f->trust_cache ? xstrdup(f->trust_cache) : NULL;
	if (f->image_not_root)
		return err_set(err, 0,
			       "image '%s' is a directory but not a root "
			       "filesystem: it has no /bin, /usr, /lib or /etc "
			       "(hint: give the directory that holds them, "
			       "e.g. the rootfs/ of an unpacked image)",
			       cfg->image);
	image_info_copy(&p->image, &f->image);
	if (cfg->image_read) {
		free(p->image.path);
		p->image.path = xstrdup(cfg->image);
	}
	if (!f->cwd)
		return err_set(err, f->cwd_err, "get the current directory");
	user_identity(cfg, p);
	copy_image_config(f, p);
	if (cfg->pwd)
		p->cwd = clean_path(cfg->pwd);
	/* WorkingDir is where `run` starts the Entrypoint (as Docker);
	 * exec and shell start in the current directory (as Apptainer),
	 * except under a front end with Pyxis's rules (a default start
	 * directory: the SPANK plugin), where every command starts there. */
	else if ((cfg->runscript || cfg->pwd_default) && p->oci_known &&
		 p->oci.workdir && p->oci.workdir[0] == '/')
		p->cwd = clean_path(p->oci.workdir);
	else if (cfg->pwd_default)
		p->cwd = clean_path(cfg->pwd_default);
	else if (cfg->contain)
		p->cwd = xstrdup(p->home);
	else
		p->cwd = xstrdup(f->cwd);
	p->run_dir = run_dir ? xstrdup(run_dir) : NULL;
	p->inject_verbs = cfg->inject_verbs;
	p->options_digest = config_container_digest(cfg);
	p->transport_env = cfg->transport_env;
	if (!cfg->transport_env_set && cfg->site.transport_env.value)
		p->transport_env = streq0(cfg->site.transport_env.value, "on");
	p->shared_ns = d->shared_ns;
	p->env_scripts = strv_dup(f->env_scripts);
	p->env_scripts_known = f->env_scripts_known;
	p->mpicheck = (struct mpicheck_launcher){
	    .on = (d->mode == RUN_JOIN || d->mode == RUN_SINGLE) &&
		  !mpicheck_disabled(cfg->host_env),
	    .rule = d->peers.rule,
	    .name = d->peers.name ? d->peers.name : "no launcher",
	    .size = d->peers.size,
	};
	plan_pmi_shape(cfg, d, p);
	plan_ranks(cfg, d, p);
	return 0;
}

/* The image cache, where a writable bind shows it in the container (it
 * lies in $HOME by default): bound again over itself read-only, so that
 * no program there can change what a later run of an image executes
 * (docs/security.md, "Shared image cache"). */
static void protect_image_cache(struct plan *p)
{
	const struct path_fact *pf =
	    p->facts->image_cache
		? host_facts_path(p->facts, p->facts->image_cache)
		: NULL;
	size_t n = p->nops;

	if (!pf || pf->err || !pf->is_dir || !pf->real)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct mount_op *op = &p->ops[i];
		cleanup_free char *src = NULL, *dst = NULL;
		struct mount_op *ro;
		size_t ls;

		if (op->kind != MOP_BIND || !op->src_is_dir ||
		    (op->flags & MS_RDONLY))
			continue;
		src = plan_realpath(p, op->source);
		if (!src)
			src = xstrdup(op->source);
		ls = strcmp(src, "/") ? strlen(src) : 0;
		if (strncmp(pf->real, src, ls) ||
		    (pf->real[ls] != '/' && pf->real[ls] != '\0'))
			continue;
		dst =
		    xasprintf("%s%s", strcmp(op->target, "/") ? op->target : "",
			      pf->real + ls);
		ro = add_op(p, MOP_BIND, pf->real, dst,
			    MS_RDONLY | MS_NOSUID | MS_NODEV,
			    "image cache, read-only");
		ro->src_is_dir = true;
		ro->who = BIND_TRUSTED;
	}
}

static int plan_steps(const struct mpictr_config *cfg,
		      const struct run_decision *d, const char *run_dir,
		      struct plan *p, mpictr_err **err)
{
	const char *cwd = p->facts->cwd;
	cleanup_free const struct site_profile **profs = NULL;

	if (site_locks(cfg, err) < 0 ||
	    resolve_profiles(cfg, p, &profs, err) < 0 ||
	    plan_options(cfg, d, run_dir, p, err) < 0)
		return -1;
	if (default_mounts(cfg, p, err) < 0 || plan_devices(p, err) < 0 ||
	    host_binds(cfg, p, cwd, err) < 0 ||
	    site_binds(cfg, p, profs, err) < 0 ||
	    user_binds(cfg, p, cwd, err) < 0)
		return -1;
	protect_image_cache(p);
	plan_verbs(p);
	/* A refusal is the step's outcome: the holder reports it when it
	 * gets there, --dry-run shows it. */
	if (p->nmpi && p->facts->image_mpi_known) {
		mpiinject_check_libs(p->mpi, p->nmpi, p->facts->image_mpi,
				     p->facts->nimage_mpi, &p->mpi_warnings,
				     &p->mpi_refusal);
		p->mpi_checked = true;
	}
	plan_argv(cfg, p);
	if (oci_config_user_nonroot(&p->oci) && p->mode != RUN_JOIN)
		log_info("image '%s': its config's User '%s' is ignored: the "
			 "command runs as you",
			 cfg->image, p->oci.user);
	if (!p->argv || !p->argv[0])
		return err_set(err, 0,
			       "image '%s': no command given, and the image "
			       "config has no Entrypoint or Cmd",
			       cfg->image);
	p->shell = cfg->shell;
	p->shell_path = cfg->shell_path ? xstrdup(cfg->shell_path) : NULL;
	env_plan(cfg, p->mode, profs, p->image.path, p->cwd,
		 cfg->home_src ? p->home : NULL, p->image_env, &p->env,
		 &p->user_env);
	return 0;
}

static int plan_build_all(const struct mpictr_config *cfg,
			  const struct run_decision *d,
			  const struct host_facts *facts, const char *run_dir,
			  struct plan *p, mpictr_err **err)
{
	int rc;

	memset(p, 0, sizeof(*p));
	bind_policy_init(&p->bind_policy, &cfg->site);
	if (!cfg->image)
		return err_set(err, 0, "no image given");
	if (!cfg->argv && !cfg->runscript)
		return err_set(err, 0, "no command given");
	p->mode = d->mode;
	p->launch = run_describe(d);
	if (cfg->fakeroot && run_mode_serves_pmi(d->mode))
		return err_set(err, 0,
			       "--fakeroot cannot be used with -n: PMIx "
			       "rejects ranks whose uid differs from the "
			       "server's (hint: --fakeroot is for single "
			       "processes)");
	if (cfg->shell && run_mode_serves_pmi(d->mode) && d->nranks > 1)
		return err_set(err, 0,
			       "'mpictr shell' starts one interactive shell, "
			       "not -n %d (%d shells would share one "
			       "terminal; hint: mpictr -n %d IMAGE COMMAND "
			       "runs ranks, and a shell beside them is "
			       "'mpictr shell instance://NAME' of an "
			       "instance the ranks run in)",
			       d->nranks, d->nranks, d->nranks);
	if (cfg->fakeroot && d->outer_pmi)
		return err_set(err, 0,
			       "--fakeroot cannot be used under a PMI server "
			       "(srun --mpi=...): the server rejects a rank "
			       "whose uid changed and the step hangs (hint: "
			       "drop --fakeroot)");
	p->facts = facts;
	rc = plan_steps(cfg, d, run_dir, p, err);
	p->facts = NULL; /* the caller's; not kept */
	return rc;
}

/* A plan that failed is freed (and zeroed: plan_free again is harmless),
 * so no caller leaks what was built before the error. */
int plan_build(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct host_facts *facts, const char *run_dir,
	       struct plan *p, mpictr_err **err)
{
	int rc = plan_build_all(cfg, d, facts, run_dir, p, err);

	if (rc < 0)
		plan_free(p);
	return rc;
}

void plan_free(struct plan *p)
{
	site_trust_free(&p->trust);
	free(p->trust_cache);
	free(p->launch);
	image_info_free(&p->image);
	for (size_t i = 0; i < p->nops; i++) {
		free(p->ops[i].source);
		free(p->ops[i].target);
		free(p->ops[i].data);
	}
	free(p->ops);
	strv_free(p->env);
	strv_free(p->user_env);
	strv_free(p->env_scripts);
	strv_free(p->argv);
	oci_config_free(&p->oci);
	strv_free(p->image_env);
	free(p->cwd);
	free(p->run_dir);
	free(p->home);
	free(p->user);
	free(p->overlay_tmpfs);
	free(p->overlay_dir);
	free(p->shell_path);
	for (size_t i = 0; i < p->ndevices; i++) {
		free(p->devices[i].path);
		free(p->devices[i].kind);
		free(p->devices[i].reason);
	}
	free(p->devices);
	strv_free(p->notices);
	host_devices_free(&p->hostdev);
	free(p->sysroot);
	free(p->ucx_net_devices);
	strv_free(p->profiles);
	for (size_t i = 0; i < p->nmpi; i++) {
		free(p->mpi[i].profile);
		mpi_lib_free(&p->mpi[i].host);
	}
	free(p->mpi);
	bind_policy_free(&p->bind_policy);
	verbs_tree_free(&p->host_verbs);
	strv_free(p->verbs_warnings);
	strv_free(p->mpi_warnings);
	mpictr_err_free(p->mpi_refusal);
	memset(p, 0, sizeof(*p));
}

char **plan_rank_env(const struct plan *p, int local_rank)
{
	struct transport_opts o = {
	    .enabled = p->transport_env,
	    .shared_ns = p->shared_ns,
	    .single_node = p->single_node,
	    .local_rank = local_rank,
	    .nlocal = p->nlocal,
	    .ucx_net_devices_from_ucx = p->ucx_net_devices,
	};

	return env_rank(p->env, &p->hostdev, &o, p->nmpi > 0, p->image_env);
}
