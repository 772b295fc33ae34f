/* mpictr_spank.c - the Slurm SPANK plugin mpictr-spank.so: Pyxis's options
 * (`srun --container-image=IMAGE CMD`, `#SBATCH --container-image`, ...)
 * on libmpictr's join mode, rootless.
 *
 * Where each hook runs, and as whom (docs/security.md):
 *  - slurm_spank_init: srun, sbatch/salloc (the user) and slurmstepd
 *    (root): parses the plugin arguments of plugstack.conf and registers
 *    the options. No I/O.
 *  - option callbacks: store the value (a copy). No I/O.
 *  - slurm_spank_init_post_opt: in srun, sbatch and salloc (the user) the
 *    image is checked (exists, a file or directory, in image_dirs), so
 *    that a bad one fails before anything is launched. In slurmstepd
 *    (root) it does nothing.
 *  - slurm_spank_task_init: in each task, as the user, after slurmstepd
 *    dropped its privileges for good and before it execs the command:
 *    mpictr_join_task() (the node's keeper, the claim, setns, chdir, caps
 *    dropped), then the task's environment is replaced with the
 *    container's (spank_setenv/spank_unsetenv) and slurmstepd execs the
 *    command, which it finds on the container's PATH.
 *
 * Without --container-image (or --container-name) no hook touches the
 * step. A failure is printed with slurm_error (the task's stderr, i.e. the
 * user's terminal) and ends the process at once: srun or sbatch exit 1
 * before launching, a task exits with mpictr's code (255, or 126/127 for
 * the command) and Slurm ends the step. Exiting ourselves, rather than
 * returning -1, matters: Slurm ignores a failing hook of a plugin listed
 * as `optional` in plugstack.conf, and would then run the command on the
 * host.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "mpictr.h"
#include "config/bindspec.h"
#include "config/imageref.h"
#include "common/proc.h"
#include "config/siteconf.h"
#include "common/util.h"

SPANK_PLUGIN(mpictr, 1)

struct spank_opts {
	char *image, *mounts, *workdir, *env, *name;
	bool no_entrypoint;
	char **image_dirs; /* site policy (plugin argument image_dirs=) */
	bool no_registry;  /* plugin argument registry_images=no */
};

static struct spank_opts opts;

/* Store an option's value once; the same value twice is fine (Slurm may
 * call a callback again with what it had), a different one is an error. */
static int opt_store(char **slot, const char *name, const char *arg)
{
	if (!arg || !*arg) {
		slurm_error("mpictr: --%s needs a value", name);
		return -1;
	}
	if (*slot && strcmp(*slot, arg) != 0) {
		slurm_error("mpictr: --%s given twice ('%s', '%s')", name,
			    *slot, arg);
		return -1;
	}
	if (!*slot)
		*slot = xstrdup(arg);
	return 0;
}

enum { OPT_IMAGE, OPT_MOUNTS, OPT_WORKDIR, OPT_ENV, OPT_NAME, OPT_NO_EP };

static int opt_cb(int val, const char *arg, int remote)
{
	switch (val) {
	case OPT_IMAGE:
		return opt_store(&opts.image, "container-image", arg);
	case OPT_MOUNTS:
		return opt_store(&opts.mounts, "container-mounts", arg);
	case OPT_WORKDIR:
		return opt_store(&opts.workdir, "container-workdir", arg);
	case OPT_ENV:
		return opt_store(&opts.env, "container-env", arg);
	case OPT_NAME:
		return opt_store(&opts.name, "container-name", arg);
	case OPT_NO_EP:
		opts.no_entrypoint = true;
		return 0;
	default:
		return -1;
	}
}

static struct spank_option spank_opts[] = {
    {"container-image", "IMAGE",
     "[mpictr] run the tasks in this image (SIF, squashfs or directory)", 1,
     OPT_IMAGE, opt_cb},
    {"container-mounts", "SRC[:DST[:ro|rw]][,...]",
     "[mpictr] bind host paths into the container", 1, OPT_MOUNTS, opt_cb},
    {"container-workdir", "DIR",
     "[mpictr] start directory inside the container", 1, OPT_WORKDIR, opt_cb},
    {"container-env", "NAME[,NAME...]",
     "[mpictr] host variables that win over the image's", 1, OPT_ENV, opt_cb},
    {"container-name", "NAME",
     "[mpictr] the job's steps with this name share one container per node", 1,
     OPT_NAME, opt_cb},
    {"no-container-entrypoint", NULL,
     "[mpictr] do not run the image's runscript (always the case)", 0,
     OPT_NO_EP, opt_cb},
    SPANK_OPTIONS_TABLE_END};

/* Plugin arguments in plugstack.conf: site policy, never the user's. */
static int parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "image_dirs=", 11) == 0) {
			cleanup_free char *copy = xstrdup(av[i] + 11);
			char *save = NULL;

			for (char *d = strtok_r(copy, ":", &save); d;
			     d = strtok_r(NULL, ":", &save)) {
				if (d[0] != '/') {
					slurm_error("mpictr: plugstack.conf: "
						    "image_dirs: '%s' is not "
						    "an absolute path",
						    d);
					return -1;
				}
				strv_push(&opts.image_dirs, d);
			}
			continue;
		}
		if (strcmp(av[i], "registry_images=no") == 0 ||
		    strcmp(av[i], "registry_images=yes") == 0) {
			opts.no_registry = av[i][16] == 'n';
			continue;
		}
		slurm_error("mpictr: plugstack.conf: unknown argument '%s' "
			    "(known: image_dirs=DIR[:DIR...], "
			    "registry_images=yes|no)",
			    av[i]);
		return -1;
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
		return 0;
	if (parse_args(ac, av) < 0)
		return -1;
	for (size_t i = 0; spank_opts[i].name; i++) {
		spank_err_t rc = spank_option_register(sp, &spank_opts[i]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("mpictr: register --%s: %s",
				    spank_opts[i].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

static bool enabled(void)
{
	return opts.image || opts.name;
}

/* Is real (a resolved path) inside one of the site's image_dirs, each
 * resolved too? */
static bool image_allowed(const char *real)
{
	if (!opts.image_dirs)
		return true;
	for (size_t i = 0; opts.image_dirs[i]; i++) {
		cleanup_free char *dir = realpath(opts.image_dirs[i], NULL);

		if (dir && siteconf_path_below(real, dir))
			return true;
	}
	return false;
}

static void image_dirs_error(const char *real)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *dirs = NULL;

	for (size_t i = 0; opts.image_dirs[i]; i++)
		sb_printf(&sb, "%s%s", i ? ":" : "", opts.image_dirs[i]);
	dirs = sb_steal(&sb);
	if (strcmp(real, opts.image) != 0)
		slurm_error("mpictr: --container-image '%s' (really '%s'): "
			    "images must come from %s (the site's image_dirs)",
			    opts.image, real, dirs);
	else
		slurm_error("mpictr: --container-image '%s': images must come "
			    "from %s (the site's image_dirs)",
			    opts.image, dirs);
}

/* A registry image (docker://..., Pyxis's REGISTRY#IMAGE): parsed here;
 * each task then finds it in the cache or pulls it (libmpictr: one task
 * of the node pulls, the others wait for it) into the user's cache, so
 * image_dirs (files) does not apply; registry_images=no forbids them. */
static int check_pull_source(void)
{
	struct image_ref ref;
	mpictr_err *e = NULL;

	if (opts.no_registry) {
		slurm_error("mpictr: --container-image '%s': the site allows "
			    "no registry images (registry_images=no)",
			    opts.image);
		return -1;
	}
	if (image_ref_parse(opts.image, &ref, &e) < 0) {
		slurm_error("mpictr: --container-image: %s",
			    mpictr_err_message(e));
		mpictr_err_free(e);
		return -1;
	}
	if (ref.transport != IMAGE_REF_DOCKER) {
		slurm_error("mpictr: --container-image '%s': a local source; "
			    "write a SIF with 'mpictr pull' first",
			    opts.image);
		image_ref_free(&ref);
		return -1;
	}
	image_ref_free(&ref);
	return 0;
}

/* The checks that need nothing but the path: run in srun/sbatch/salloc
 * (before anything is launched) and again in each task, where they are
 * the enforcement (srun is the user's, and so is its plugstack.conf).
 * The image is opened once (O_PATH); its type and the path the kernel
 * has for that descriptor are what is checked, and that real path is
 * what libmpictr is then given (opts.image), so no symbolic link is
 * followed again. */
static int check_image(void)
{
	struct stat st;
	cleanup_close int fd = -1;
	cleanup_free char *real = NULL;

	if (!opts.image)
		return 0;
	/* As Pyxis: a name that is no path ("ubuntu:22.04") is Docker Hub's */
	if (!strchr("/.", opts.image[0]) && !strstr(opts.image, "://") &&
	    access(opts.image, F_OK) < 0) {
		char *d = xasprintf("docker://%s", opts.image);
		free(opts.image);
		opts.image = d;
	}
	if (image_ref_is_pull_source(opts.image))
		return check_pull_source();
	fd = open(opts.image, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		slurm_error(
		    "mpictr: --container-image '%s': %s%s", opts.image,
		    strerror(errno),
		    strstr(opts.image, "://") ||
			    (opts.image[0] != '/' && opts.image[0] != '.')
			? " (mpictr runs SIF, squashfs or directory "
			  "images: give a path)"
			: "");
		return -1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		slurm_error("mpictr: --container-image '%s': not a file or "
			    "directory",
			    opts.image);
		return -1;
	}
	real = fd_path_dup(fd);
	if (!real || real[0] != '/') {
		slurm_error("mpictr: --container-image '%s': cannot tell its "
			    "real path",
			    opts.image);
		return -1;
	}
	if (!image_allowed(real)) {
		image_dirs_error(real);
		return -1;
	}
	free(opts.image);
	opts.image = steal_ptr(&real);
	return 0;
}

/* The instance is named JOBID.NAME (at most 32 characters). */
static bool name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len < 1 || len > 20 || !isalnum((unsigned char)n[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)n[i]) && !strchr("_.-", n[i]))
			return false;
	return true;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (!enabled())
		return 0;
	if (opts.name && !name_ok(opts.name)) {
		slurm_error("mpictr: --container-name '%s': at most 20 of "
			    "A-Z a-z 0-9 _ . -, starting with a letter or "
			    "digit",
			    opts.name);
		if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
			exit(1);
		return -1;
	}
	if (!opts.image) {
		slurm_error("mpictr: --container-name needs --container-image");
		if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
			exit(1);
		return -1;
	}
	/* slurmstepd (root): nothing but reading the options. */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	if (check_image() < 0)
		exit(1); /* srun, sbatch, salloc: nothing launched yet */
	return 0;
}

/* The log sink of libmpictr in the task: warnings and errors to the
 * task's stderr through Slurm's log. */
static void log_to_slurm(enum mpictr_log_level level, const char *line,
			 void *data)
{
	if (level <= MPICTR_LOG_ERROR)
		slurm_error("mpictr: %s", line);
	else
		slurm_spank_log("mpictr: %s", line);
}

/* --container-env: the host's values of these names win over the
 * image's. A name that is not set is left alone. */
static int add_container_env(mpictr_config *cfg, char **env, mpictr_err **e)
{
	cleanup_free char *copy = NULL;
	char *save = NULL;

	if (!opts.env)
		return 0;
	copy = xstrdup(opts.env);
	for (char *n = strtok_r(copy, ",", &save); n;
	     n = strtok_r(NULL, ",", &save)) {
		const char *v = env_get(env, n);

		if (v && mpictr_config_set_env(cfg, n, v, e) < 0)
			return -1;
	}
	return 0;
}

/* The batch script lives in slurmd's spool directory, not in the image:
 * the batch step binds it (read-only) at its path. */
static int add_batch_script(mpictr_config *cfg, uint32_t step,
			    const char *script, mpictr_err **e)
{
	cleanup_free char *spec = NULL;

	if (step != SLURM_BATCH_SCRIPT || script[0] != '/')
		return 0;
	spec = xasprintf("%s:%s:ro", script, script);
	return mpictr_config_add_bind(cfg, spec, e);
}

/* The configuration of this task from the options, the site file and
 * the task's environment and command. image: the image, or a named
 * instance (instance://NAME), which takes nothing that decides the
 * container (its starter had them: full). */
static mpictr_config *task_config(char **env, const char *image, bool full,
				  uint32_t step, int argc, char **argv,
				  mpictr_err **e)
{
	mpictr_config *cfg = mpictr_config_new();

	if (mpictr_config_set_host_env(cfg, env, e) < 0 ||
	    (full && add_batch_script(cfg, step, argv[0], e) < 0) ||
	    mpictr_config_load_site(cfg, NULL, e) < 0 ||
	    mpictr_config_set_image(cfg, image, e) < 0 ||
	    mpictr_config_set_command(cfg, argc, argv, e) < 0 ||
	    (full && opts.mounts &&
	     mpictr_config_add_bind(cfg, opts.mounts, e) < 0) ||
	    (opts.workdir && mpictr_config_set_pwd(cfg, opts.workdir, e) < 0) ||
	    add_container_env(cfg, env, e) < 0) {
		mpictr_config_free(cfg);
		return NULL;
	}
	return cfg;
}

static bool err_starts(const mpictr_err *e, const char *prefix)
{
	return e && strncmp(mpictr_err_message(e), prefix, strlen(prefix)) == 0;
}

/* --container-name=NAME: every step of the job that names it joins the
 * instance JOBID.NAME on the node, started by the first task that finds
 * none; it ends with the job. */
static int join_named(spank_t sp, char **host, uint32_t step, int argc,
		      char **argv, char ***env, char **program, mpictr_err **e)
{
	uint32_t job = 0;
	cleanup_free char *name = NULL, *ref = NULL;
	long deadline = mono_ms() + 120 * 1000L;

	spank_get_item(sp, S_JOB_ID, &job);
	name = xasprintf("%u.%s", job, opts.name);
	ref = xasprintf("instance://%s", name);
	for (;;) {
		mpictr_config *cfg =
		    task_config(host, ref, false, step, argc, argv, e);
		int rc = cfg ? mpictr_join_task(cfg, env, program, e) : -1;

		mpictr_config_free(cfg);
		if (rc == 0 || !err_starts(*e, "no instance '"))
			return rc;
		mpictr_err_free(*e);
		*e = NULL;
		cfg = task_config(host, opts.image, true, step, argc, argv, e);
		/* watch pid 0: the instance ends with the job (its
		 * extern or batch slurmstepd here, else its state in
		 * Slurm), not with this step. */
		rc = cfg ? mpictr_instance_start(cfg, name, 0, 0, e) : -1;
		mpictr_config_free(cfg);
		if (rc == 0)
			continue;
		if (!*e || !strstr(mpictr_err_message(*e), "already exists"))
			return -1;
		/* another task of the node is starting it */
		mpictr_err_free(*e);
		*e = NULL;
		if (mono_ms() > deadline) {
			slurm_error("mpictr: --container-name=%s: the "
				    "container '%s' did not come up",
				    opts.name, name);
			return -1;
		}
		usleep(20000);
	}
}

/* --container-mounts with --container-name: the container's mounts are
 * made by the step that starts it, and a step that joins it later cannot
 * add or change them (its mount namespace is shared with the running
 * steps). The mounts asked for must be there: the file each source is on
 * the host (device and inode, read before joining) is what the container
 * has at its destination, read-only where asked. True for the tasks of
 * the starting step; false for a later step with other mounts, which is
 * refused rather than silently run without them. */
struct mount_want {
	char *spec, *src, *dst;
	dev_t dev;
	ino_t ino;
	bool ro;
};

static void mounts_free(struct mount_want *w)
{
	for (size_t i = 0; w && w[i].spec; i++) {
		free(w[i].spec);
		free(w[i].src);
		free(w[i].dst);
	}
	free(w);
}

static struct mount_want *mounts_wanted(mpictr_err **e)
{
	struct bind_spec *b = NULL;
	struct mount_want *w;
	size_t nb = 0;
	cleanup_free char *cwd = getcwd(NULL, 0);

	if (bind_parse(opts.mounts, &b, &nb, e) < 0)
		return NULL;
	w = xcalloc(nb + 1, sizeof(*w));
	for (size_t i = 0; i < nb; i++) {
		struct stat st;

		w[i].spec = xasprintf("%s:%s", b[i].src, b[i].dst);
		w[i].ro = b[i].ro;
		if (bind_resolve(&b[i], cwd, "--container-mounts", &w[i].src,
				 &w[i].dst, e) < 0 ||
		    stat(w[i].src, &st) < 0) {
			if (!*e)
				err_set(e, errno, "--container-mounts '%s'",
					w[i].spec);
			bind_specs_free(b, nb);
			mounts_free(w);
			return NULL;
		}
		w[i].dev = st.st_dev;
		w[i].ino = st.st_ino;
	}
	bind_specs_free(b, nb);
	return w;
}

/* In the container (after joining): are the wanted mounts there? */
static int mounts_present(const struct mount_want *w, const char *inst)
{
	for (size_t i = 0; w[i].spec; i++) {
		struct stat st;
		struct statvfs vfs;

		if (stat(w[i].dst, &st) == 0 && st.st_dev == w[i].dev &&
		    st.st_ino == w[i].ino &&
		    (!w[i].ro || (statvfs(w[i].dst, &vfs) == 0 &&
				  (vfs.f_flag & ST_RDONLY))))
			continue;
		slurm_error("mpictr: --container-mounts '%s%s': not a mount of "
			    "the container '%s' (--container-name=%s), which "
			    "an earlier step of this job started with other "
			    "mounts; a step that joins a running container "
			    "cannot add or change its mounts: give them to "
			    "the job's first step with this name, or use "
			    "another --container-name",
			    w[i].spec, w[i].ro ? ":ro" : "", inst, opts.name);
		return -1;
	}
	return 0;
}

/* join_named, then the check of --container-mounts. */
static int join_named_checked(spank_t sp, char **host, uint32_t step, int argc,
			      char **argv, char ***env, char **program,
			      mpictr_err **e)
{
	struct mount_want *w = NULL;
	uint32_t job = 0;
	cleanup_free char *inst = NULL;
	int rc;

	if (opts.mounts && !(w = mounts_wanted(e)))
		return -1;
	rc = join_named(sp, host, step, argc, argv, env, program, e);
	spank_get_item(sp, S_JOB_ID, &job);
	inst = xasprintf("%u.%s", job, opts.name);
	if (rc == 0 && w && mounts_present(w, inst) < 0)
		rc = -1;
	mounts_free(w);
	return rc;
}

/* Make the task's environment exactly env. */
static int apply_env(spank_t sp, char **old, char **env)
{
	for (size_t i = 0; old && old[i]; i++) {
		const char *eq = strchr(old[i], '=');
		cleanup_free char *name =
		    eq ? xstrndup(old[i], (size_t)(eq - old[i])) : NULL;

		if (name && !env_get(env, name) &&
		    spank_unsetenv(sp, name) != ESPANK_SUCCESS)
			return -1;
	}
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		cleanup_free char *name =
		    eq ? xstrndup(env[i], (size_t)(eq - env[i])) : NULL;

		if (name && spank_setenv(sp, name, eq + 1, 1) != ESPANK_SUCCESS)
			return -1;
	}
	return 0;
}

/* Steps that are not srun's get a job key of their own: the batch script
 * (and salloc's interactive step) is one task on its node. */
static void single_task_key(spank_t sp, uint32_t step, char ***env)
{
	uint32_t job = 0;

	spank_get_item(sp, S_JOB_ID, &job);
	if (step != SLURM_BATCH_SCRIPT && step != SLURM_INTERACTIVE_STEP)
		return;
	{
		cleanup_free char *key = xasprintf(
		    "slurm-%s|%u",
		    step == SLURM_BATCH_SCRIPT ? "batch" : "interactive", job);

		env_set(env, "MPICTR_JOB_KEY", key);
		env_set(env, "MPICTR_LOCAL_RANK", "0");
		env_set(env, "MPICTR_LOCAL_SIZE", "1");
	}
}

/* Join the node's container; on failure, *e says why. */
static int task_enter(spank_t sp, uint32_t step, mpictr_err **e)
{
	char **job_env = NULL, **argv = NULL, **host = NULL, **env = NULL;
	char *program = NULL;
	int argc = 0, rc = -1;

	if (spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    argc < 1) {
		slurm_error("mpictr: cannot read the task's environment and "
			    "command from Slurm");
		return -1;
	}
	host = strv_dup(job_env);
	single_task_key(sp, step, &host);
	if (opts.name && step != SLURM_BATCH_SCRIPT) {
		rc = join_named_checked(sp, host, step, argc, argv, &env,
					&program, e);
	} else {
		mpictr_config *cfg =
		    task_config(host, opts.image, true, step, argc, argv, e);

		rc = cfg ? mpictr_join_task(cfg, &env, &program, e) : -1;
		mpictr_config_free(cfg);
	}
	if (rc == 0) {
		rc = apply_env(sp, job_env, env);
		if (rc < 0)
			slurm_error("mpictr: cannot set the task's "
				    "environment");
		else if (program)
			argv[0] = steal_ptr(&program);
	}
	free(program);
	strv_free(env);
	strv_free(host);
	return rc;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	mpictr_err *e = NULL;
	uint32_t step = 0;

	if (!enabled() || !spank_remote(sp))
		return 0;
	spank_get_item(sp, S_JOB_STEPID, &step);
	if (step == SLURM_EXTERN_CONT)
		return 0;
	mpictr_set_log_sink(log_to_slurm, NULL, MPICTR_LOG_WARNING);
	if (!opts.image) /* --container-name alone: see init_post_opt */
		_exit(MPICTR_EXIT_FAILURE);
	if (check_image() < 0)
		_exit(MPICTR_EXIT_FAILURE);
	if (task_enter(sp, step, &e) < 0) {
		/* Never let slurmstepd exec the command half-way in. */
		int code = e ? mpictr_err_exit_code(e) : MPICTR_EXIT_FAILURE;

		if (e)
			slurm_error("mpictr: %s", mpictr_err_message(e));
		mpictr_err_free(e);
		_exit(code);
	}
	return 0;
}
