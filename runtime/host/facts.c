/* facts.c - gather the host facts a plan reads (facts.h): every stat,
 * realpath, file read and helper run that planning needs happens here,
 * once, before plan_build().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/bindspec.h"
#include "common/error.h"
#include "host/facts.h"
#include "host/imgread.h"
#include "host/ucx.h"

const struct path_fact *host_facts_path(const struct host_facts *f,
					const char *path)
{
	for (size_t i = 0; path && i < f->npaths; i++)
		if (strcmp(f->paths[i].path, path) == 0)
			return &f->paths[i];
	return NULL;
}

const struct path_fact *host_facts_add_path(struct host_facts *f,
					    const char *path)
{
	const struct path_fact *known = host_facts_path(f, path);
	struct path_fact *pf;
	struct stat st;
	char *real;
	int rerr;

	if (known)
		return known;
	real = realpath(path, NULL);
	rerr = real ? 0 : errno;
	f->paths = xrealloc(f->paths, (f->npaths + 1) * sizeof(*f->paths));
	pf = &f->paths[f->npaths++];
	memset(pf, 0, sizeof(*pf));
	pf->path = xstrdup(path);
	pf->real = real;
	if (stat(path, &st) < 0)
		pf->err = errno ? errno : ENOENT;
	else {
		pf->is_dir = S_ISDIR(st.st_mode);
		pf->is_dev = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
	}
	if (!real && !pf->err)
		pf->err = rerr ? rerr : ENOENT;
	if (real && strcmp(real, path) != 0) {
		cleanup_free char *copy = xstrdup(real);
		host_facts_add_path(f, copy); /* may move f->paths */
	}
	return host_facts_path(f, path);
}

const struct mpi_fact *host_facts_mpi(const struct host_facts *f,
				      const char *path)
{
	for (size_t i = 0; path && i < f->nmpis; i++)
		if (strcmp(f->mpis[i].path, path) == 0)
			return &f->mpis[i];
	return NULL;
}

static void add_mpi(struct host_facts *f, const char *path)
{
	struct mpi_fact *m;

	if (host_facts_mpi(f, path))
		return;
	f->mpis = xrealloc(f->mpis, (f->nmpis + 1) * sizeof(*f->mpis));
	m = &f->mpis[f->nmpis++];
	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path);
	if (mpiabi_inspect_host(path, &m->lib, &m->err) < 0)
		memset(&m->lib, 0, sizeof(m->lib));
	host_facts_add_path(f, path);
}

/* bind_resolve_with's realpath: record the path, answer from the fact. */
static char *record_real(const char *path, void *ctx)
{
	const struct path_fact *pf = host_facts_add_path(ctx, path);

	if (!pf->real) {
		errno = pf->err;
		return NULL;
	}
	return xstrdup(pf->real);
}

static void record_bind(struct host_facts *f, const struct bind_spec *b,
			const char *cwd)
{
	cleanup_free char *src = NULL, *dst = NULL;

	bind_resolve_with(b, cwd, NULL, record_real, f, &src, &dst, NULL);
}

static void record_items(struct host_facts *f, const struct site_items *items)
{
	for (size_t i = 0; i < items->n; i++) {
		struct bind_spec *b = NULL;
		size_t n = 0;

		if (bind_parse(items->v[i].value, &b, &n, NULL) < 0)
			continue;
		for (size_t k = 0; k < n; k++)
			record_bind(f, &b[k], NULL);
		bind_specs_free(b, n);
	}
}

/* The image cache's directory, chosen as cache_dir_choose() (pull/
 * cache.h) does from the run's environment. */
static void gather_image_cache(const struct mpictr_config *cfg,
			       struct host_facts *f)
{
	const char *v = env_get(cfg->host_env, "MPICTR_CACHEDIR");
	const char *xdg = env_get(cfg->host_env, "XDG_CACHE_HOME");
	const char *home = env_get(cfg->host_env, "HOME");
	cleanup_free char *dir = NULL;

	if (v && v[0] == '/')
		dir = xstrdup(v);
	else if (cfg->site.cache_dir.value &&
		 cfg->site.cache_dir.value[0] == '/')
		dir = xstrdup(cfg->site.cache_dir.value);
	else if (xdg && xdg[0] == '/')
		dir = xasprintf("%s/mpictr", xdg);
	else if (home && home[0] == '/')
		dir = xasprintf("%s/.cache/mpictr", home);
	if (!dir)
		return;
	f->image_cache = clean_path(dir);
	host_facts_add_path(f, f->image_cache);
}

/* The host paths that binds, profiles and the fixed mounts name. */
static void gather_paths(const struct mpictr_config *cfg, struct host_facts *f)
{
	static const char *const fixed[] = {"/dev/shm", "/etc/hosts",
					    "/etc/resolv.conf", "/tmp"};
	const char *pmix_tmp = env_get(cfg->host_env, "PMIX_SERVER_TMPDIR");

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		host_facts_add_path(f, fixed[i]);
	host_facts_add_path(f, f->home);
	if (f->cwd)
		host_facts_add_path(f, f->cwd);
	gather_image_cache(cfg, f);
	if (pmix_tmp && pmix_tmp[0] == '/') {
		cleanup_free char *d = clean_path(pmix_tmp);
		host_facts_add_path(f, d);
	}
	for (size_t i = 0; i < cfg->nbinds; i++)
		record_bind(f, &cfg->binds[i], f->cwd);
	if (cfg->home_src) {
		struct bind_spec b = {.src = cfg->home_src,
				      .dst = cfg->home_dst ? cfg->home_dst
							   : f->home};
		record_bind(f, &b, f->cwd);
	}
	record_items(f, &cfg->site.binds);
	for (size_t i = 0; cfg->profiles && cfg->profiles[i]; i++) {
		const struct site_profile *sp =
		    siteconf_profile(&cfg->site, cfg->profiles[i]);

		if (!sp)
			continue;
		record_items(f, &sp->binds);
		if (sp->mpi.value)
			add_mpi(f, sp->mpi.value);
		for (size_t k = 0; k < sp->mpi_deps.n; k++)
			add_mpi(f, sp->mpi_deps.v[k].value);
	}
	for (size_t i = 0; i < f->hostdev.ndevs; i++)
		host_facts_add_path(f, f->hostdev.devs[i].host_path);
	for (size_t i = 0; i < f->hostdev.nbinds; i++)
		host_facts_add_path(f, f->hostdev.binds[i].src);
}

/* The lowest memory limit of the cgroup at path (below the mount point
 * root: v2's memory.max or v1's memory.limit_in_bytes, file) or of any
 * ancestor, or ULLONG_MAX. */
static unsigned long long cgroup_limit(const char *root, const char *path,
				       const char *file)
{
	cleanup_free char *dir = xstrdup(path);
	unsigned long long min = ULLONG_MAX;

	for (;;) {
		cleanup_free char *fn = xasprintf("%s%s/%s", root, dir, file);
		cleanup_free char *v = read_file(fn, 64, NULL);
		char *end, *slash;
		unsigned long long n;

		errno = 0;
		n = v ? strtoull(v, &end, 10) : 0;
		if (v && !errno && end != v && (*end == '\n' || !*end) &&
		    n < min)
			min = n;
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return min;
}

/* The memory the job may use: the node's physical memory, or less where
 * the memory cgroup of the caller (Slurm's job or step) limits it. */
static unsigned long long job_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	unsigned long long mem =
	    pages > 0 && psz > 0
		? (unsigned long long)pages * (unsigned long long)psz
		: 0;
	cleanup_free char *cg = read_file("/proc/self/cgroup", 1 << 16, NULL);
	char *save = NULL;

	for (char *l = cg ? strtok_r(cg, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'),
		     *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		unsigned long long lim = ULLONG_MAX;

		if (!c2 || c2[1] != '/')
			continue;
		*c2 = '\0';
		if (strcmp(l, "0") == 0 && c2 == c1 + 1)
			lim = cgroup_limit("/sys/fs/cgroup", c2 + 1,
					   "memory.max");
		else if (strstr(c1 + 1, "memory"))
			lim = cgroup_limit("/sys/fs/cgroup/memory", c2 + 1,
					   "memory.limit_in_bytes");
		if (lim != ULLONG_MAX && (lim < mem || !mem))
			mem = lim;
	}
	return mem;
}

/* The (package, core) of CPU c as one number; c itself when the kernel
 * does not say. */
static long core_of(int c)
{
	cleanup_free char *pp = xasprintf(
	    "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
	cleanup_free char *cp =
	    xasprintf("/sys/devices/system/cpu/cpu%d/topology/core_id", c);
	cleanup_free char *pkg = read_file(pp, 64, NULL);
	cleanup_free char *core = read_file(cp, 64, NULL);
	long p, k;

	if (!pkg || !core)
		return -1 - c;
	pkg[strcspn(pkg, "\n")] = '\0';
	core[strcspn(core, "\n")] = '\0';
	if (parse_long(pkg, 0, 65535, &p) < 0 ||
	    parse_long(core, 0, (1L << 20) - 1, &k) < 0)
		return -1 - c;
	return p << 20 | k;
}

/* The cores of this process's affinity (hardware threads of a core share
 * its id); at least 1. */
static unsigned gather_cores(void)
{
	long ids[CPU_SETSIZE];
	unsigned cores = 0;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++) {
			long id;
			bool dup = false;

			if (!CPU_ISSET(c, &set))
				continue;
			id = core_of(c);
			for (unsigned i = 0; i < cores && !dup; i++)
				dup = ids[i] == id;
			if (!dup)
				ids[cores++] = id;
		}
	return cores ? cores : 1;
}

static void gather_identity(const struct mpictr_config *cfg,
			    struct host_facts *f)
{
	struct passwd *pw;
	const char *home;
	long psz = sysconf(_SC_PAGESIZE);

	f->uid = getuid();
	f->gid = getgid();
	pw = getpwuid(f->uid);
	home = env_get(cfg->host_env, "HOME");
	if (!home || home[0] != '/')
		home = pw && pw->pw_dir ? pw->pw_dir : "/";
	f->home = clean_path(home);
	f->user = pw ? xstrdup(pw->pw_name) : NULL;
	f->cwd = getcwd(NULL, 0);
	f->cwd_err = f->cwd ? 0 : errno;
	f->page_size = psz >= 1024 ? (unsigned long long)psz : 4096;
	f->job_memory = job_memory();
	f->ncpu = sysconf(_SC_NPROCESSORS_ONLN) > 0
		      ? sysconf(_SC_NPROCESSORS_ONLN)
		      : 0;
}

/* Devices (sysfs, under MPICTR_SYSROOT when honoured) and, where there is
 * RDMA hardware to name and transport variables are wanted, UCX's devices
 * (asked in a helper, never in this process). */
static void gather_devices(const struct mpictr_config *cfg,
			   const struct host_given *given, struct host_facts *f)
{
	const char *sysroot = env_get(cfg->host_env, "MPICTR_SYSROOT");
	const char *helper;
	cleanup_free char *path = NULL;
	char **lines = NULL;
	mpictr_err *e = NULL;
	const char *spec =
	    cfg->devices ? cfg->devices : cfg->site.devices.value;

	/* A testing aid that binds host paths: ignored wherever the site
	 * restricts user binds. */
	if (sysroot && *sysroot && siteconf_restricts_binds(&cfg->site)) {
		log_debug("MPICTR_SYSROOT ignored: the site restricts user "
			  "binds");
		sysroot = NULL;
	}
	if (sysroot && *sysroot)
		f->sysroot = xstrdup(sysroot);
	if (devices_discover(f->sysroot, spec, cfg->gpu, &f->hostdev,
			     &f->devices_err) < 0)
		return;
	if (f->hostdev.nhcas == 0 || !cfg->transport_env)
		return;
	f->ucx_asked = true;
	if (given && given->ucx_known) {
		/* The node's answer, asked once (join mode: by the keeper). */
		f->ucx_net_devices = given->ucx_net_devices
					 ? xstrdup(given->ucx_net_devices)
					 : NULL;
		return;
	}
	/* With a fake sysroot, UCX is asked only where a test names a fake
	 * helper (MPICTR_TEST_UCX_QUERY, honoured with the sysroot alone). */
	helper = env_get(cfg->host_env, "MPICTR_TEST_UCX_QUERY");
	if (!f->sysroot)
		path = ucx_helper_path();
	else if (helper && *helper)
		path = xstrdup(helper);
	else {
		f->ucx_asked = false;
		return;
	}
	if (ucx_query(path, &lines, &e) == 0) {
		f->ucx_net_devices = ucx_net_devices(lines);
	} else {
		log_debug("%s", mpictr_err_message(e));
		mpictr_err_free(e);
	}
	strv_free(lines);
}

/* The image's env scripts, in the order the exec wrapper's glob sources
 * them (bytewise: the C locale). */
static void read_env_scripts(struct host_facts *f, struct image_reader *r)
{
	cleanup_strv char **names = NULL;
	mpictr_err *e = NULL;

	if (image_reader_list(r, "/.singularity.d/env", &names, &e) < 0) {
		if (mpictr_err_errno(e) != ENOENT &&
		    mpictr_err_errno(e) != ENOTDIR &&
		    !image_reader_broken(r, NULL)) /* (gather_image's) */
			log_warn("%s", mpictr_err_message(e));
		mpictr_err_free(e);
	}
	f->env_scripts_known = true;
	for (size_t i = 0; names && names[i]; i++) {
		size_t len = strlen(names[i]);
		if (len > 3 && strcmp(names[i] + len - 3, ".sh") == 0)
			strv_push_own(
			    &f->env_scripts,
			    xasprintf("/.singularity.d/env/%s", names[i]));
	}
}

static bool any_exposed_hca(const struct host_devices *d)
{
	for (size_t i = 0; i < d->nhcas; i++)
		if (d->hcas[i].exposed && verbs_provider(d->hcas[i].driver))
			return true;
	return false;
}

/* Does a selected profile inject a host MPI? */
static bool wants_mpi(const struct mpictr_config *cfg)
{
	for (size_t i = 0; cfg->profiles && cfg->profiles[i]; i++) {
		const struct site_profile *sp =
		    siteconf_profile(&cfg->site, cfg->profiles[i]);
		if (sp && sp->mpi.value)
			return true;
	}
	return false;
}

/* The image's contents planning reads, without mounting it: its env
 * scripts (a directory image's always: cheap), and where the plan decides
 * them (--dry-run, or outside join mode) its verbs providers and its MPI
 * libraries. In join mode the holder decides those on the mounted image,
 * so that a joining task never loads the squash plugin nor reads the
 * image's libraries. A failure is left to the mount (which reports it)
 * and to the holder, but for the image reader's death (imgread.h), which
 * is the image's error. */
static void gather_image(const struct mpictr_config *cfg, unsigned flags,
			 struct host_facts *f)
{
	bool decide = flags & (HOST_FACTS_IMAGE | HOST_FACTS_DECIDE);
	bool hcas = decide && any_exposed_hca(&f->hostdev);
	bool mpi = decide && wants_mpi(cfg);
	struct image_reader *r = NULL;
	mpictr_err *e = NULL;

	if (f->image_err)
		return;
	if (f->image.kind != IMAGE_DIR && !(flags & HOST_FACTS_IMAGE) &&
	    !hcas && !mpi)
		return;
	if (image_reader_open(&f->image, &r, &e) < 0) {
		log_debug("%s", mpictr_err_message(e));
		mpictr_err_free(e);
		return;
	}
	read_env_scripts(f, r);
	if (decide &&
	    (!hcas || verbs_tree_read(r, NULL, &f->image_verbs, &e) == 0))
		f->image_verbs_known = true;
	if (e) {
		log_debug("%s", mpictr_err_message(e));
		mpictr_err_free(e);
	}
	if (mpi && mpiabi_find_in_reader(r, &f->image_mpi, &f->nimage_mpi) == 0)
		f->image_mpi_known = true;
	/* A reader that died read a corrupt image: the plan fails (the
	 * mount would crash the same way). */
	image_reader_broken(r, &f->image_err);
	image_reader_close(r);
}

_Static_assert(OCI_CONFIG_MAX == IMAGE_OCI_CONFIG_MAX,
	       "the probe reads every image config the parser takes");

/* A SIF's oci-config.json: its bytes came with the probe (the same open;
 * or, for a joining task, from the node's keeper); a corrupt one is the
 * image's error. */
static void gather_oci_config(const struct mpictr_config *cfg,
			      struct host_facts *f)
{
	uint64_t size = f->image.oci_config_size;
	cleanup_free char *what = NULL;

	if (f->image_err || f->image.kind != IMAGE_SIF || size == 0)
		return;
	what = xasprintf("image '%s': oci-config.json", cfg->image);
	if (size > OCI_CONFIG_MAX) {
		err_set(&f->image_err, EFBIG, "%s: %llu bytes, at most %u",
			what, (unsigned long long)size, OCI_CONFIG_MAX);
		return;
	}
	if (!f->image.oci_config) {
		err_set(&f->image_err,
			f->image.oci_config_errno ? f->image.oci_config_errno
						  : EIO,
			"%s: read", what);
		return;
	}
	if (oci_config_parse(f->image.oci_config, (size_t)size, what, &f->oci,
			     &f->image_err) == 0)
		f->oci_known = true;
}

/* The host's verbs providers (under the sysroot), with exposed HCAs. */
static void gather_host_verbs(struct host_facts *f)
{
	struct image_reader *r = NULL;

	if (!any_exposed_hca(&f->hostdev) ||
	    image_reader_open_dir(f->sysroot ? f->sysroot : "/", &r, NULL) < 0)
		return;
	if (verbs_tree_read(r, f->sysroot ? f->sysroot : "", &f->host_verbs,
			    NULL) < 0)
		verbs_tree_free(&f->host_verbs);
	image_reader_close(r);
}

/* An instance's joiner reads the image file the instance holds open
 * (cfg->image_read), not whatever its path names by now. */
static int probe_held(const struct mpictr_config *cfg, struct image_info *info,
		      mpictr_err **err)
{
	cleanup_close int fd = open(cfg->image_read, O_RDONLY | O_CLOEXEC);
	struct stat st;

	memset(info, 0, sizeof(*info));
	if (fd < 0 || fstat(fd, &st) < 0)
		return err_set(err, errno, "image '%s' (held open at '%s')",
			       cfg->image, cfg->image_read);
	if (!S_ISDIR(st.st_mode) &&
	    image_probe_fd(fd, cfg->image, info, err) < 0)
		return -1;
	if (S_ISDIR(st.st_mode))
		info->kind = IMAGE_DIR;
	info->path = xstrdup(cfg->image_read);
	return 0;
}

/* The signature policy, and the verified-image cache of the user:
 * ${XDG_CACHE_HOME:-$HOME/.cache}/mpictr/verified, unless
 * MPICTR_VERIFY_CACHE=off (docs/signing.md, "Cost"). */
static void gather_trust(const struct mpictr_config *cfg, struct host_facts *f)
{
	const char *xdg = env_get(cfg->host_env, "XDG_CACHE_HOME");
	const char *home = env_get(cfg->host_env, "HOME");

	if (config_site_trust(cfg, &f->trust, &f->trust_err) < 0 ||
	    !f->trust.require ||
	    streq0(env_get(cfg->host_env, "MPICTR_VERIFY_CACHE"), "off"))
		return;
	if (xdg && xdg[0] == '/')
		f->trust_cache = xasprintf("%s/mpictr/verified", xdg);
	else if (home && home[0] == '/')
		f->trust_cache = xasprintf("%s/.cache/mpictr/verified", home);
}

/* Does the directory at root look like a root filesystem? */
static bool dir_is_root(const char *root)
{
	static const char *const tops[] = {
	    "bin", "usr", "sbin", "lib", "lib64", "etc", ".singularity.d"};
	cleanup_close int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return true; /* the mount will say what is wrong */
	for (size_t i = 0; i < ARRAY_SIZE(tops); i++)
		if (fstatat(fd, tops[i], &st, 0) == 0 && S_ISDIR(st.st_mode))
			return true;
	return false;
}

int host_facts_gather(const struct mpictr_config *cfg, unsigned flags,
		      const struct host_given *given, struct host_facts *f,
		      mpictr_err **err)
{
	(void)err;
	memset(f, 0, sizeof(*f));
	f->hostdev.ptrace_scope = -1;
	gather_identity(cfg, f);
	if (flags & HOST_FACTS_CORES)
		f->ncores = gather_cores();
	/* A joining task takes the image's facts from the node's keeper,
	 * which probed it: the image is not opened once per task. */
	if (cfg->image && given && given->image)
		image_info_copy(&f->image, given->image);
	else if (cfg->image &&
		 (cfg->image_read
		      ? probe_held(cfg, &f->image, &f->image_err)
		      : image_probe(cfg->image, &f->image, &f->image_err)) < 0)
		memset(&f->image, 0, sizeof(f->image));
	else if (cfg->image && f->image.kind == IMAGE_DIR)
		f->image_not_root = !dir_is_root(f->image.path);
	gather_trust(cfg, f);
	gather_devices(cfg, given, f);
	gather_image(cfg, flags, f);
	gather_oci_config(cfg, f);
	gather_host_verbs(f);
	gather_paths(cfg, f);
	return 0;
}

void host_facts_free(struct host_facts *f)
{
	free(f->user);
	free(f->home);
	free(f->image_cache);
	free(f->cwd);
	image_info_free(&f->image);
	mpictr_err_free(f->image_err);
	strv_free(f->env_scripts);
	oci_config_free(&f->oci);
	verbs_tree_free(&f->image_verbs);
	mpi_libs_free(f->image_mpi, f->nimage_mpi);
	verbs_tree_free(&f->host_verbs);
	free(f->sysroot);
	site_trust_free(&f->trust);
	mpictr_err_free(f->trust_err);
	free(f->trust_cache);
	host_devices_free(&f->hostdev);
	mpictr_err_free(f->devices_err);
	free(f->ucx_net_devices);
	for (size_t i = 0; i < f->npaths; i++) {
		free(f->paths[i].path);
		free(f->paths[i].real);
	}
	free(f->paths);
	for (size_t i = 0; i < f->nmpis; i++) {
		free(f->mpis[i].path);
		mpi_lib_free(&f->mpis[i].lib);
		mpictr_err_free(f->mpis[i].err);
	}
	free(f->mpis);
	memset(f, 0, sizeof(*f));
}
