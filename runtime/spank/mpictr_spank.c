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
 *    image is checked (exists, a file or directory, in image_dirs; or a
 *    registry image from a registry the site allows), so
 *    that a bad one fails before anything is launched. In slurmstepd
 *    (root) it does nothing.
 *  - slurm_spank_task_init: in each task, as the user, after slurmstepd
 *    dropped its privileges for good and before it execs the command:
 *    mpictr_join_task() (the node's keeper, the claim, setns, chdir, caps
 *    dropped), then the task's environment is replaced with the
 *    container's (spank_setenv/spank_unsetenv) and slurmstepd execs the
 *    command, which it finds on the container's PATH.
 *
 *  - slurm_spank_exit: in slurmstepd (root) once the step's tasks ended,
 *    only with --container-save=PATH: a child that is the job's user for
 *    good (groups, gid, uid, no_new_privs) saves the named container
 *    (mpictr_instance_save) on the step's first node; root does nothing
 *    but fork and wait.
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
#include <strings.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
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
	char *image, *mounts, *workdir, *env, *name, *save, *unshare;
	/* --container-name=NAME:FLAG (Pyxis): "auto" (join the job's
	 * container of that name, else start it), "create" (start it; an
	 * error if it runs), "exec" (join it; an error if none runs) */
	const char *name_flag;
	/* Pyxis's pairs, -1 while neither was given (an option, else its
	 * PYXIS_CONTAINER_* variable, decides): --[no-]container-entrypoint,
	 * --container-entrypoint-log, --container-writable/-readonly,
	 * --[no-]container-remap-root, --[no-]container-mount-home */
	int entrypoint, entrypoint_log, writable, remap_root, mount_home;
	bool dry_run; /* --container-dry-run: print the plan, run nothing */
	char **image_dirs; /* site policy (plugin argument image_dirs=) */
	/* The options' prefix (plugin argument prefix=, default
	 * "container"): another one lets the plugin load beside Pyxis. */
	const char *prefix;
	/* plugin argument registry_images=no|yes (NULL: not given) */
	const char *registry_images;
	char **registries; /* plugin argument registries=HOST[,HOST...] */
	/* plugin argument container_writable=yes: writable unless the step
	 * asks --container-readonly (Enroot's ENROOT_ROOTFS_WRITABLE) */
	bool site_writable;
	/* --container-save without --container-name: the step runs in a
	 * named container "stepSTEPID" of its own (name), which
	 * slurm_spank_exit saves and stops */
	bool step_named;
};

static struct spank_opts opts = {.entrypoint = -1,
				 .entrypoint_log = -1,
				 .writable = -1,
				 .remap_root = -1,
				 .mount_home = -1};

/* Store an option's value once; the same value twice is fine (Slurm may
 * call a callback again with what it had), a different one is an error. */
static int opt_store(char **slot, const char *name, const char *arg)
{
	if (!arg || !*arg) {
		slurm_error("mpictr: --%s: argument required", name);
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

enum {
	OPT_IMAGE,
	OPT_MOUNTS,
	OPT_WORKDIR,
	OPT_ENV,
	OPT_NAME,
	OPT_NO_EP,
	OPT_EP,
	OPT_EP_LOG,
	OPT_WRITABLE,
	OPT_READONLY,
	OPT_REMAP_ROOT,
	OPT_NO_REMAP_ROOT,
	OPT_MOUNT_HOME,
	OPT_NO_MOUNT_HOME,
	OPT_SAVE,
	OPT_UNSHARE,
	OPT_DRY_RUN,
};

static const char *opt_name(int val);

/* One of a pair of options (on: val_on given, else val_off): the other
 * one given too is an error. */
static int opt_pair(int *slot, bool on, int val_on, int val_off)
{
	if (*slot != -1 && *slot != on) {
		slurm_error("mpictr: --%s and --%s exclude each other",
			    opt_name(val_on), opt_name(val_off));
		return -1;
	}
	*slot = on;
	return 0;
}

/* --container-env NAME[,NAME...]: no empty name (Pyxis's rule). */
static int env_names_ok(const char *arg)
{
	const char *p = arg;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == 0 || !env_name_valid(p, n)) {
			slurm_error("mpictr: --%s: invalid format: %s "
				    "(expected NAME[,NAME...])",
				    opt_name(OPT_ENV), arg);
			return -1;
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static int opt_cb(int val, const char *arg, int remote)
{
	switch (val) {
	case OPT_IMAGE:
		return opt_store(&opts.image, opt_name(OPT_IMAGE), arg);
	case OPT_MOUNTS:
		return opt_store(&opts.mounts, opt_name(OPT_MOUNTS), arg);
	case OPT_WORKDIR:
		return opt_store(&opts.workdir, opt_name(OPT_WORKDIR), arg);
	case OPT_ENV:
		if (arg && *arg && env_names_ok(arg) < 0)
			return -1;
		return opt_store(&opts.env, opt_name(OPT_ENV), arg);
	case OPT_NAME:
		return opt_store(&opts.name, opt_name(OPT_NAME), arg);
	case OPT_NO_EP:
	case OPT_EP:
		return opt_pair(&opts.entrypoint, val == OPT_EP, OPT_EP,
				OPT_NO_EP);
	case OPT_EP_LOG:
		opts.entrypoint_log = 1;
		return 0;
	case OPT_WRITABLE:
	case OPT_READONLY:
		return opt_pair(&opts.writable, val == OPT_WRITABLE,
				OPT_WRITABLE, OPT_READONLY);
	case OPT_REMAP_ROOT:
	case OPT_NO_REMAP_ROOT:
		return opt_pair(&opts.remap_root, val == OPT_REMAP_ROOT,
				OPT_REMAP_ROOT, OPT_NO_REMAP_ROOT);
	case OPT_MOUNT_HOME:
	case OPT_NO_MOUNT_HOME:
		return opt_pair(&opts.mount_home, val == OPT_MOUNT_HOME,
				OPT_MOUNT_HOME, OPT_NO_MOUNT_HOME);
	case OPT_SAVE:
		if (arg && *arg && arg[strlen(arg) - 1] == '/') {
			slurm_error("mpictr: --%s: target is a directory",
				    opt_name(OPT_SAVE));
			return -1;
		}
		return opt_store(&opts.save, opt_name(OPT_SAVE), arg);
	case OPT_UNSHARE:
		return opt_store(&opts.unshare, opt_name(OPT_UNSHARE), arg);
	case OPT_DRY_RUN:
		opts.dry_run = true;
		return 0;
	default:
		return -1;
	}
}

static struct spank_option spank_opts[] = {
    {"container-image", "IMAGE",
     "[mpictr] run the tasks in this image (SIF, squashfs, directory or "
     "[REGISTRY#]IMAGE[:TAG])",
     1, OPT_IMAGE, opt_cb},
    {"container-mounts", "SRC[:DST[:FLAGS]][,...]",
     "[mpictr] bind host paths into the container; flags joined with '+' "
     "(ro, rw, rbind, rprivate, ...)",
     1, OPT_MOUNTS, opt_cb},
    {"container-workdir", "DIR",
     "[mpictr] start directory inside the container (default: the image's "
     "WorkingDir, else /)",
     1, OPT_WORKDIR, opt_cb},
    {"container-env", "NAME[,NAME...]",
     "[mpictr] host variables that win over the image's", 1, OPT_ENV, opt_cb},
    {"container-name", "NAME[:create|exec]",
     "[mpictr] the job's steps with this name share one container per node", 1,
     OPT_NAME, opt_cb},
    {"no-container-entrypoint", NULL,
     "[mpictr] do not run the image's entrypoint (the default)", 0, OPT_NO_EP,
     opt_cb},
    {"container-entrypoint", NULL,
     "[mpictr] run the command through the image's runscript or Enroot "
     "entrypoint (/etc/rc)",
     0, OPT_EP, opt_cb},
    {"container-entrypoint-log", NULL,
     "[mpictr] show the entrypoint's output (default: hidden)", 0, OPT_EP_LOG,
     opt_cb},
    {"container-writable", NULL,
     "[mpictr] writable container: changes in memory, kept by a named "
     "container for the job's later steps",
     0, OPT_WRITABLE, opt_cb},
    {"container-readonly", NULL,
     "[mpictr] read-only container (the default unless the site's "
     "container_writable=yes)",
     0, OPT_READONLY, opt_cb},
    {"container-remap-root", NULL,
     "[mpictr] appear as root inside (no privilege; not under --mpi)", 0,
     OPT_REMAP_ROOT, opt_cb},
    {"no-container-remap-root", NULL,
     "[mpictr] keep your uid inside (the default)", 0, OPT_NO_REMAP_ROOT,
     opt_cb},
    {"container-mount-home", NULL, "[mpictr] bind $HOME (the default)", 0,
     OPT_MOUNT_HOME, opt_cb},
    {"no-container-mount-home", NULL, "[mpictr] do not bind $HOME", 0,
     OPT_NO_MOUNT_HOME, opt_cb},
    {"container-save", "PATH",
     "[mpictr] after the step, save the container as a squashfs image at "
     "PATH (first node)",
     1, OPT_SAVE, opt_cb},
    {"container-unshare", "NS[,NS...]",
     "[mpictr] Pyxis's net, ipc, uts: refused (the ranks share the host's)", 1,
     OPT_UNSHARE, opt_cb},
    {"container-dry-run", NULL,
     "[mpictr] each task prints its plan as JSON (as mpictr --dry-run: "
     "environment, mounts) and runs nothing",
     0, OPT_DRY_RUN, opt_cb},
    SPANK_OPTIONS_TABLE_END};

/* The names the options are registered under: "container" in each
 * replaced by opts.prefix. */
static char *opt_names[sizeof(spank_opts) / sizeof(*spank_opts)];

/* --NAME of option val as registered (for messages). */
static const char *opt_name(int val)
{
	for (size_t i = 0; spank_opts[i].name; i++)
		if (spank_opts[i].val == val)
			return spank_opts[i].name;
	return "?";
}

/* yes/true/1 -> 1, no/false/0 -> 0, else -1. */
static int parse_bool(const char *v)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		return 0;
	return -1;
}

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
		if (strncmp(av[i], "prefix=", 7) == 0) {
			const char *p = av[i] + 7;

			if (!*p ||
			    strspn(p, "abcdefghijklmnopqrstuvwxyz0123456"
				      "789-") != strlen(p) ||
			    p[0] == '-') {
				slurm_error("mpictr: plugstack.conf: prefix: "
					    "'%s' is not a word of a-z, 0-9 "
					    "and '-'",
					    p);
				return -1;
			}
			opts.prefix = p;
			continue;
		}
		if (strcmp(av[i], "registry_images=no") == 0 ||
		    strcmp(av[i], "registry_images=yes") == 0) {
			opts.registry_images = av[i] + 16;
			continue;
		}
		if (strncmp(av[i], "registries=", 11) == 0) {
			cleanup_free char *copy = xstrdup(av[i] + 11);
			char *save = NULL;

			for (char *h = strtok_r(copy, ",", &save); h;
			     h = strtok_r(NULL, ",", &save)) {
				if (strpbrk(h, "/@#") || h[0] == ':') {
					slurm_error("mpictr: plugstack.conf: "
						    "registries: '%s' is not "
						    "HOST or HOST:PORT",
						    h);
					return -1;
				}
				strv_push(&opts.registries, h);
			}
			continue;
		}
		if (strncmp(av[i], "container_writable=", 19) == 0) {
			const char *v = av[i] + 19;
			int b = parse_bool(v);

			if (b < 0) {
				slurm_error("mpictr: plugstack.conf: "
					    "container_writable: '%s' is not "
					    "yes or no",
					    v);
				return -1;
			}
			opts.site_writable = b;
			continue;
		}
		slurm_error("mpictr: plugstack.conf: unknown argument '%s' "
			    "(known: image_dirs=DIR[:DIR...], "
			    "registry_images=yes|no, "
			    "registries=HOST[,HOST...], prefix=WORD, "
			    "container_writable=yes|no)",
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
		spank_err_t rc;
		char *c;

		if (opts.prefix && !opt_names[i] &&
		    (c = strstr(spank_opts[i].name, "container"))) {
			opt_names[i] =
			    xasprintf("%.*s%s%s", (int)(c - spank_opts[i].name),
				      spank_opts[i].name, opts.prefix, c + 9);
			spank_opts[i].name = opt_names[i];
		}
		rc = spank_option_register(sp, &spank_opts[i]);

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
		slurm_error("mpictr: --%s '%s' (really '%s'): "
			    "images must come from %s (the site's image_dirs)",
			    opt_name(OPT_IMAGE), opts.image, real, dirs);
	else
		slurm_error("mpictr: --%s '%s': images must come "
			    "from %s (the site's image_dirs)",
			    opt_name(OPT_IMAGE), opts.image, dirs);
}

/* Is registry (host[:port] as image_ref_parse gives it) one of the
 * site's registries=? An entry HOST takes every port of HOST; docker.io
 * names Docker Hub. */
static bool registry_listed(const char *registry)
{
	const char *colon = strrchr(registry, ':');
	size_t hl = colon && !strchr(colon, ']') ? (size_t)(colon - registry)
						 : strlen(registry);

	for (size_t i = 0; opts.registries && opts.registries[i]; i++) {
		const char *r = opts.registries[i];

		if (strcmp(r, "docker.io") == 0)
			r = IMAGE_REF_DOCKER_HUB;
		if (strcmp(r, registry) == 0 ||
		    (strlen(r) == hl && strncmp(r, registry, hl) == 0))
			return true;
	}
	return false;
}

/* May --container-image name this registry? registry_images=no: none;
 * registries=: those; else with image_dirs= none (the site restricts
 * images to files: a registry image, and a digest naming any SIF the
 * user's cache holds, would get round it) unless registry_images=yes;
 * without image_dirs= any. */
static int registry_allowed(const struct image_ref *ref)
{
	cleanup_free char *list = NULL;

	if (streq0(opts.registry_images, "no")) {
		slurm_error("mpictr: --%s '%s': the site allows "
			    "no registry images (registry_images=no)",
			    opt_name(OPT_IMAGE), opts.image);
		return -1;
	}
	if (opts.registries && !registry_listed(ref->registry)) {
		struct strbuf sb = STRBUF_INIT;

		for (size_t i = 0; opts.registries[i]; i++)
			sb_printf(&sb, "%s%s", i ? "," : "",
				  opts.registries[i]);
		list = sb_steal(&sb);
		slurm_error("mpictr: --%s '%s': registry '%s' is not one the "
			    "site allows (registries=%s)",
			    opt_name(OPT_IMAGE), opts.image, ref->registry,
			    list);
		return -1;
	}
	if (opts.registries)
		return 0;
	if (opts.image_dirs && !streq0(opts.registry_images, "yes")) {
		slurm_error("mpictr: --%s '%s': the site runs image files "
			    "from its image_dirs only, and allows no registry "
			    "(hint: the site may name some with "
			    "registries=HOST[,HOST...] in plugstack.conf)",
			    opt_name(OPT_IMAGE), opts.image);
		return -1;
	}
	return 0;
}

/* A registry image (docker://..., Pyxis's REGISTRY#IMAGE): parsed here,
 * its registry checked against the site's (registry_allowed); each task
 * then finds it in the cache or pulls it (libmpictr: one task of the node
 * pulls, the others wait for it) into the user's cache. */
static int check_pull_source(void)
{
	struct image_ref ref;
	mpictr_err *e = NULL;

	if (streq0(opts.registry_images, "no"))
		return registry_allowed(NULL);
	if (image_ref_parse(opts.image, &ref, &e) < 0) {
		slurm_error("mpictr: --%s: %s", opt_name(OPT_IMAGE),
			    mpictr_err_message(e));
		mpictr_err_free(e);
		return -1;
	}
	if (ref.transport != IMAGE_REF_DOCKER) {
		slurm_error("mpictr: --%s '%s': a local source; "
			    "write a SIF with 'mpictr pull' first",
			    opt_name(OPT_IMAGE), opts.image);
		image_ref_free(&ref);
		return -1;
	}
	if (registry_allowed(&ref) < 0) {
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
		    "mpictr: --%s '%s': %s%s", opt_name(OPT_IMAGE), opts.image,
		    strerror(errno),
		    strstr(opts.image, "://") ||
			    (opts.image[0] != '/' && opts.image[0] != '.')
			? " (mpictr runs SIF, squashfs or directory "
			  "images: give a path)"
			: "");
		return -1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		slurm_error("mpictr: --%s '%s': not a file or "
			    "directory",
			    opt_name(OPT_IMAGE), opts.image);
		return -1;
	}
	real = fd_path_dup(fd);
	if (!real || real[0] != '/') {
		slurm_error("mpictr: --%s '%s': cannot tell its "
			    "real path",
			    opt_name(OPT_IMAGE), opts.image);
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

/* --container-name=NAME[:FLAG]: split off Pyxis's flag. */
static int name_split(void)
{
	char *colon = opts.name ? strchr(opts.name, ':') : NULL;
	static const char *const flags[] = {"auto", "create", "exec"};

	if (!colon)
		return 0;
	*colon = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (strcmp(colon + 1, flags[i]) == 0 || !colon[1]) {
			opts.name_flag = colon[1] ? flags[i] : NULL;
			return 0;
		}
	if (strcmp(colon + 1, "no_exec") == 0)
		slurm_error("mpictr: --%s=%s:no_exec: not supported: a named "
			    "container's files live in its running container "
			    "(hint: another name starts a fresh one)",
			    opt_name(OPT_NAME), opts.name);
	else
		slurm_error("mpictr: --%s: flag must be \"auto\", \"create\" "
			    "or \"exec\", not \"%s\"",
			    opt_name(OPT_NAME), colon + 1);
	return -1;
}

/* --container-unshare: Pyxis 0.24's net, ipc, uts. The node's tasks run
 * in the host's network (Slurm's PMIx server listens on loopback), IPC
 * (shared-memory transports) and UTS namespaces: refused, clearly. */
static int check_unshare(void)
{
	cleanup_free char *copy = NULL;
	char *save = NULL;

	if (!opts.unshare)
		return 0;
	copy = xstrdup(opts.unshare);
	for (char *n = strtok_r(copy, ",", &save); n;
	     n = strtok_r(NULL, ",", &save))
		if (strcmp(n, "net") && strcmp(n, "ipc") && strcmp(n, "uts")) {
			slurm_error("mpictr: --%s: unknown namespace '%s' "
				    "(Pyxis knows net, ipc, uts)",
				    opt_name(OPT_UNSHARE), n);
			return -1;
		}
	slurm_error("mpictr: --%s=%s: not supported: mpictr runs the tasks in "
		    "the host's network, IPC and UTS namespaces (Slurm's PMIx "
		    "server and the shared-memory transports need them)",
		    opt_name(OPT_UNSHARE), opts.unshare);
	return -1;
}

/* Pyxis's mount flags (joined with '+') that mpictr's binds have anyway,
 * and what they become (NULL: nothing to add). */
static const struct {
	const char *flag, *as;
} mount_flags[] = {
    {"ro", "ro"},	    {"rw", "rw"},
    {"rbind", NULL},	    {"rprivate", NULL},
    {"private", NULL},	    {"nosuid", NULL},
    {"nodev", NULL},	    {"x-create=auto", NULL},
    {"x-create=dir", NULL}, {"x-create=file", NULL},
};

/* One Pyxis mount flag: *mode becomes "ro" or "rw" for those; -1 when
 * mpictr cannot honour it. */
static int mount_flag(const char *f, const char *entry, const char **mode)
{
	for (size_t i = 0; i < ARRAY_SIZE(mount_flags); i++)
		if (strcmp(f, mount_flags[i].flag) == 0) {
			if (mount_flags[i].as)
				*mode = mount_flags[i].as;
			return 0;
		}
	slurm_error("mpictr: --%s '%s': mount flag '%s' is not supported "
		    "(mpictr's binds are recursive, private, nosuid and "
		    "nodev; it takes ro, rw, rbind, rprivate, private, "
		    "nosuid, nodev, x-create=...)",
		    opt_name(OPT_MOUNTS), entry, f);
	return -1;
}

/* --container-mounts in Pyxis's syntax (SRC[:DST[:FLAG+FLAG...]], comma
 * separated) into mpictr's (SRC[:DST[:ro|rw]]), in place. */
static int pyxis_mounts(void)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *copy = NULL;
	char *rest;

	if (!opts.mounts)
		return 0;
	copy = xstrdup(opts.mounts);
	rest = copy;
	for (char *entry; (entry = strsep(&rest, ","));) {
		cleanup_free char *orig = xstrdup(entry);
		char *src = strsep(&entry, ":"), *dst = NULL, *flags = NULL;
		const char *mode = NULL;

		if (entry)
			dst = strsep(&entry, ":");
		flags = entry;
		if (!*src || (dst && !*dst)) {
			slurm_error("mpictr: --%s: invalid format: %s",
				    opt_name(OPT_MOUNTS), orig);
			goto fail;
		}
		if (strcmp(src, "tmpfs") == 0 || strcmp(src, "umount") == 0) {
			slurm_error("mpictr: --%s '%s': '%s:' mounts are not "
				    "supported (mpictr mounts only what the "
				    "image, the site and binds provide)",
				    opt_name(OPT_MOUNTS), orig, src);
			goto fail;
		}
		if (!strchr("./", src[0]) || (dst && !strchr("./", dst[0]))) {
			slurm_error("mpictr: --%s '%s': mount source must be a "
				    "relative or absolute path, and so must "
				    "its target",
				    opt_name(OPT_MOUNTS), orig);
			goto fail;
		}
		sb_printf(&sb, "%s%s:%s", sb.len ? "," : "", src,
			  dst ? dst : src);
		for (char *f; flags && (f = strsep(&flags, "+"));)
			if (*f && mount_flag(f, orig, &mode) < 0)
				goto fail;
		if (mode)
			sb_printf(&sb, ":%s", mode);
	}
	free(opts.mounts);
	opts.mounts = sb_steal(&sb);
	return 0;
fail:
	free(sb_steal(&sb));
	return -1;
}

/* Options that exclude each other, or need another. */
static int opts_conflict(void)
{
	if (name_split() < 0 || check_unshare() < 0 || pyxis_mounts() < 0)
		return -1;
	if (opts.dry_run && opts.save) {
		slurm_error("mpictr: --%s runs nothing: --%s=%s would save "
			    "nothing",
			    opt_name(OPT_DRY_RUN), opt_name(OPT_SAVE),
			    opts.save);
		return -1;
	}
	if (!opts.image && opts.name_flag &&
	    strcmp(opts.name_flag, "create") == 0) {
		slurm_error("mpictr: --%s=%s:create needs --%s",
			    opt_name(OPT_NAME), opts.name, opt_name(OPT_IMAGE));
		return -1;
	}
	return 0;
}

/* Pyxis's booleans: 1 for 1/y/yes/true/on, 0 for 0/n/no/false/off, -1
 * for anything else (case ignored). */
static int parse_bool_word(const char *v)
{
	static const char *const yes[] = {"1", "y", "yes", "true", "on"};
	static const char *const no[] = {"0", "n", "no", "false", "off"};

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* Pyxis's variables: PYXIS_CONTAINER_IMAGE and the others give an option
 * that was not on the command line. With prefix=WORD, their names are
 * PYXIS_WORD_IMAGE... (WORD in capitals, '-' as '_'), as the options'. */
static void env_options(spank_t sp)
{
	static const struct {
		const char *suffix;
		int val;
		bool boolean;
	} vars[] = {
	    {"IMAGE", OPT_IMAGE, false},
	    {"MOUNTS", OPT_MOUNTS, false},
	    {"WORKDIR", OPT_WORKDIR, false},
	    {"NAME", OPT_NAME, false},
	    {"SAVE", OPT_SAVE, false},
	    {"ENV", OPT_ENV, false},
	    {"UNSHARE", OPT_UNSHARE, false},
	    {"MOUNT_HOME", OPT_MOUNT_HOME, true},
	    {"REMAP_ROOT", OPT_REMAP_ROOT, true},
	    {"ENTRYPOINT", OPT_EP, true},
	    {"ENTRYPOINT_LOG", OPT_EP_LOG, true},
	    {"WRITABLE", OPT_WRITABLE, true},
	    {"READONLY", OPT_READONLY, true},
	};
	char *const *slots[] = {
	    [OPT_IMAGE] = &opts.image,	   [OPT_MOUNTS] = &opts.mounts,
	    [OPT_WORKDIR] = &opts.workdir, [OPT_NAME] = &opts.name,
	    [OPT_SAVE] = &opts.save,	   [OPT_ENV] = &opts.env,
	    [OPT_UNSHARE] = &opts.unshare,
	};
	int *pairs[] = {
	    [OPT_MOUNT_HOME] = &opts.mount_home,
	    [OPT_REMAP_ROOT] = &opts.remap_root,
	    [OPT_EP] = &opts.entrypoint,
	    [OPT_EP_LOG] = &opts.entrypoint_log,
	    [OPT_WRITABLE] = &opts.writable,
	    [OPT_READONLY] = &opts.writable,
	};
	cleanup_free char *word =
	    xstrdup(opts.prefix ? opts.prefix : "container");

	for (char *c = word; *c; c++)
		*c = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		cleanup_free char *var =
		    xasprintf("PYXIS_%s_%s", word, vars[i].suffix);
		char buf[PATH_MAX];
		const char *v = NULL;
		int on;

		if (spank_context() == S_CTX_REMOTE)
			v = spank_getenv(sp, var, buf, sizeof(buf)) ==
				    ESPANK_SUCCESS
				? buf
				: NULL;
		else
			v = getenv(var);
		if (!v)
			continue;
		if (!vars[i].boolean) {
			if (!*slots[vars[i].val] && *v)
				opt_cb(vars[i].val, v, 0);
			continue;
		}
		if (*pairs[vars[i].val] != -1)
			continue;
		on = parse_bool_word(v);
		if (on < 0)
			continue; /* as Pyxis: a word it does not know */
		if (vars[i].val == OPT_READONLY)
			on = !on;
		*pairs[vars[i].val] = on;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	env_options(sp);
	if (!enabled())
		return 0;
	if (opts_conflict() < 0 ||
	    (opts.name && !name_ok(opts.name) &&
	     (slurm_error("mpictr: --%s '%s': at most 20 of "
			  "A-Z a-z 0-9 _ . -, starting with a letter or "
			  "digit",
			  opt_name(OPT_NAME), opts.name),
	      true))) {
		if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
			exit(1);
		return -1;
	}
	/* slurmstepd (root): nothing but reading the options. */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) {
		uint32_t step = 0;

		if (opts.save && !opts.name &&
		    spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
		    step != SLURM_BATCH_SCRIPT) {
			opts.name = xasprintf("step%u", step);
			opts.step_named = true;
		}
		return 0;
	}
	if (check_image() < 0)
		exit(1); /* srun, sbatch, salloc: nothing launched yet */
	return 0;
}

/* libmpictr's messages name the CLI's options; the user of the plugin
 * typed the plugin's (with the site's prefix): "--fakeroot" becomes
 * "--container-remap-root", and so on, where the name stands alone (not
 * part of a longer option). A new string. */
static char *as_typed(const char *msg)
{
	static const struct {
		const char *cli;
		int val;
	} names[] = {
	    {"--fakeroot", OPT_REMAP_ROOT},
	    {"--writable-tmpfs", OPT_WRITABLE},
	    {"--no-home", OPT_NO_MOUNT_HOME},
	    {"--pwd", OPT_WORKDIR},
	};
	struct strbuf sb = STRBUF_INIT;
	const char *p = msg;

	while (*p) {
		bool start = p == msg ||
			     !(isalnum((unsigned char)p[-1]) || p[-1] == '-');
		size_t i = ARRAY_SIZE(names), n = 0;

		for (size_t k = 0; start && k < ARRAY_SIZE(names); k++) {
			n = strlen(names[k].cli);
			if (strncmp(p, names[k].cli, n) == 0 &&
			    !isalnum((unsigned char)p[n]) && p[n] != '-') {
				i = k;
				break;
			}
		}
		if (i < ARRAY_SIZE(names)) {
			sb_printf(&sb, "--%s", opt_name(names[i].val));
			p += n;
		} else {
			sb_putc(&sb, *p++);
		}
	}
	return sb_steal(&sb);
}

/* The log sink of libmpictr in the task: warnings and errors to the
 * task's stderr through Slurm's log. */
static void log_to_slurm(enum mpictr_log_level level, const char *line,
			 void *data)
{
	cleanup_free char *typed = as_typed(line);

	if (level <= MPICTR_LOG_ERROR)
		slurm_error("mpictr: %s", typed);
	else
		slurm_spank_log("mpictr: %s", typed);
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

/* What decides the container: --container-writable (or the site's
 * container_writable=yes without --container-readonly), -remap-root,
 * --no-container-mount-home. With --container-remap-root the home
 * directory is /root, as Pyxis's (Enroot's): $HOME is bound there. */
static int container_flags(mpictr_config *cfg, char **env, mpictr_err **e)
{
	const char *home = env_get(env, "HOME");
	cleanup_free char *root_home =
	    home && home[0] == '/' ? xasprintf("%s:/root", home) : NULL;
	bool writable =
	    opts.writable == 1 || (opts.writable < 0 && opts.site_writable);

	if ((writable && mpictr_config_set_flag(cfg, MPICTR_FLAG_WRITABLE_TMPFS,
						1, e) < 0) ||
	    (opts.remap_root == 1 &&
	     mpictr_config_set_flag(cfg, MPICTR_FLAG_FAKEROOT, 1, e) < 0) ||
	    (opts.remap_root == 1 && opts.mount_home != 0 && root_home &&
	     mpictr_config_set_home(cfg, root_home, e) < 0) ||
	    (opts.mount_home == 0 &&
	     mpictr_config_set_flag(cfg, MPICTR_FLAG_NO_HOME, 1, e) < 0) ||
	    (opts.remap_root == 1 && opts.mount_home == 0 &&
	     mpictr_config_set_env(cfg, "HOME", "/root", e) < 0))
		return -1;
	return 0;
}

/* The start directory: --container-workdir, taken from / when relative
 * (Pyxis chdirs there after entering the container's root, so "../" is
 * "/"); without it the image's WorkingDir, else "/" (not the job's
 * directory on the host). */
static int start_dir(mpictr_config *cfg, mpictr_err **e)
{
	cleanup_free char *dir = NULL;

	if (!opts.workdir)
		return mpictr_config_set_pwd_default(cfg, "/", e);
	dir = opts.workdir[0] == '/' ? xstrdup(opts.workdir)
				     : xasprintf("/%s", opts.workdir);
	return mpictr_config_set_pwd(cfg, dir, e);
}

/* Is name one of --container-env's? */
static bool container_env_has(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts.env; p && *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/* The host's locale variables do not reach the container (its programs
 * would warn about a locale the image lacks), unless --container-env
 * names them: Pyxis's rule. */
static void drop_host_locale(char ***env)
{
	static const char *const names[] = {"LANG", "LANGUAGE", "LC_ALL"};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!container_env_has(names[i]))
			env_unset(env, names[i]);
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
	    (opts.entrypoint == 1
		 ? mpictr_config_set_runscript(cfg, argc, argv, e)
		 : mpictr_config_set_command(cfg, argc, argv, e)) < 0 ||
	    (full && opts.mounts &&
	     mpictr_config_add_bind(cfg, opts.mounts, e) < 0) ||
	    start_dir(cfg, e) < 0 ||
	    (full && container_flags(cfg, env, e) < 0) ||
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

/* task_config for a named container: it records that the plugin started
 * it, and joins only an instance the plugin started whose image lies in
 * image_dirs (`mpictr instance start other.sqfs JOBID.NAME` by the user
 * beforehand does not bypass the site's image_dirs). */
static mpictr_config *named_config(char **env, const char *image, bool full,
				   uint32_t step, int argc, char **argv,
				   mpictr_err **e)
{
	mpictr_config *cfg = task_config(env, image, full, step, argc, argv, e);

	if (cfg && mpictr_config_set_instance_origin(
		       cfg, "the SPANK plugin",
		       (const char *const *)opts.image_dirs, e) < 0) {
		mpictr_config_free(cfg);
		return NULL;
	}
	return cfg;
}

/* Start the job's instance name (from opts.image). 0: started; 1:
 * another task started it first; -1: *e says why. */
static int start_named(char **host, const char *name, uint32_t step, int argc,
		       char **argv, mpictr_err **e)
{
	mpictr_config *cfg =
	    named_config(host, opts.image, true, step, argc, argv, e);
	/* watch pid 0: the instance ends with the job (its extern or batch
	 * slurmstepd here, else its state in Slurm), not with this step. */
	int rc = cfg ? mpictr_instance_start(cfg, name, 0, 0, e) : -1;

	mpictr_config_free(cfg);
	if (rc == 0)
		return 0;
	if (!*e || !strstr(mpictr_err_message(*e), "already exists"))
		return -1;
	mpictr_err_free(*e);
	*e = NULL;
	return 1;
}

/* --container-name=NAME: every step of the job that names it joins the
 * instance JOBID.NAME on the node, started by the first task that finds
 * none; it ends with the job. NAME:create: the node's first task starts
 * it (an error if it exists), the others wait for it; NAME:exec: joins
 * it, an error if it does not run. */
static int join_named(spank_t sp, char **host, uint32_t step, int argc,
		      char **argv, char ***env, char **program, mpictr_err **e)
{
	uint32_t job = 0, local = 0;
	cleanup_free char *name = NULL, *ref = NULL;
	long deadline = mono_ms() + 120 * 1000L;
	bool create = streq0(opts.name_flag, "create");

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_TASK_ID, &local);
	name = xasprintf("%u.%s", job, opts.name);
	ref = xasprintf("instance://%s", name);
	if (create && local == 0) {
		int rc = start_named(host, name, step, argc, argv, e);

		if (rc == 1)
			return err_set(e, EEXIST,
				       "--%s=%s:create: the job's container "
				       "'%s' already exists on this node",
				       opt_name(OPT_NAME), opts.name,
				       opts.name);
		if (rc < 0)
			return -1;
	}
	for (;;) {
		mpictr_config *cfg =
		    named_config(host, ref, false, step, argc, argv, e);
		int rc = cfg ? mpictr_join_task(cfg, env, program, e) : -1;

		mpictr_config_free(cfg);
		if (rc == 0 || !err_starts(*e, "no instance '"))
			return rc;
		mpictr_err_free(*e);
		*e = NULL;
		if (streq0(opts.name_flag, "exec"))
			return err_set(e, 0,
				       "--%s=%s:exec: this job's container "
				       "'%s' is not running on this node",
				       opt_name(OPT_NAME), opts.name,
				       opts.name);
		if (!opts.image)
			return err_set(e, 0,
				       "--%s=%s: this job has no container of "
				       "that name on this node (hint: start "
				       "it in an earlier step with --%s=IMAGE "
				       "--%s=%s)",
				       opt_name(OPT_NAME), opts.name,
				       opt_name(OPT_IMAGE), opt_name(OPT_NAME),
				       opts.name);
		/* with :create the node's first task starts it */
		rc = create ? 1 : start_named(host, name, step, argc, argv, e);
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;
		/* another task of the node is starting it */
		if (mono_ms() > deadline) {
			slurm_error("mpictr: --%s=%s: the "
				    "container '%s' did not come up",
				    opt_name(OPT_NAME), opts.name, name);
			return -1;
		}
		usleep(20000);
	}
}

/* --container-mounts with --container-name: the container's mounts are
 * made by the step that starts it, and a step that joins it later cannot
 * add or change them (its mount namespace is shared with the running
 * steps). For the tasks of the starting step the mounts asked for are
 * there: the file each source is on the host (device and inode, read
 * before joining) is what the container has at its destination,
 * read-only where asked. A later step with other mounts goes on without
 * them, with Pyxis's warning. */
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
	cleanup_free char *what = xasprintf("--%s", opt_name(OPT_MOUNTS));

	if (bind_parse(opts.mounts, &b, &nb, e) < 0)
		return NULL;
	w = xcalloc(nb + 1, sizeof(*w));
	for (size_t i = 0; i < nb; i++) {
		struct stat st;

		w[i].spec = xasprintf("%s:%s", b[i].src, b[i].dst);
		w[i].ro = b[i].ro;
		if (bind_resolve(&b[i], cwd, what, &w[i].src, &w[i].dst, e) <
			0 ||
		    stat(w[i].src, &st) < 0) {
			if (!*e)
				err_set(e, errno, "%s '%s'", what, w[i].spec);
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
static void mounts_present(const struct mount_want *w, const char *inst)
{
	for (size_t i = 0; w[i].spec; i++) {
		struct stat st;
		struct statvfs vfs;

		if (stat(w[i].dst, &st) == 0 && st.st_dev == w[i].dev &&
		    st.st_ino == w[i].ino &&
		    (!w[i].ro || (statvfs(w[i].dst, &vfs) == 0 &&
				  (vfs.f_flag & ST_RDONLY))))
			continue;
		slurm_spank_log("mpictr: ignoring --%s when attaching to a "
				"running container ('%s%s' is not a mount of "
				"'%s', which an earlier step of this job "
				"started with other mounts)",
				opt_name(OPT_MOUNTS), w[i].spec,
				w[i].ro ? ":ro" : "", inst);
		return;
	}
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
	if (rc == 0 && w)
		mounts_present(w, inst);
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

/* As Pyxis: where the container's environment has PYTORCH_VERSION (a
 * PyTorch image), each task gets RANK and LOCAL_RANK from Slurm's ranks,
 * which torch.distributed reads. */
static void pytorch_env(char ***env)
{
	static const char *const map[][2] = {{"SLURM_PROCID", "RANK"},
					     {"SLURM_LOCALID", "LOCAL_RANK"}};

	if (!env_get(*env, "PYTORCH_VERSION"))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		const char *v = env_get(*env, map[i][0]);

		if (v)
			env_set(env, map[i][1], v);
	}
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

/* --container-dry-run: the plan of this task as JSON on its stdout, what
 * `mpictr --dry-run` shows for the same command in the same task (its
 * environment, the launcher's variables, the site file). A named
 * container: the plan of the running one, else of the container this
 * task would start. Nothing is started, joined or run. */
static int task_dry_run(spank_t sp, char **host, uint32_t step, int argc,
			char **argv, mpictr_err **e)
{
	mpictr_config *cfg = NULL;
	cleanup_free char *json = NULL;
	int rc;

	/* slurmstepd applies SLURM_RLIMIT_* and removes them from the task's
	 * environment after slurm_spank_task_init: the task never has them
	 * (nor has `mpictr --dry-run` in it) */
	for (size_t i = 0; host[i];) {
		const char *eq = strchr(host[i], '=');
		cleanup_free char *name =
		    eq && strncmp(host[i], "SLURM_RLIMIT_", 13) == 0
			? xstrndup(host[i], (size_t)(eq - host[i]))
			: NULL;

		if (name)
			env_unset(&host, name);
		else
			i++;
	}
	if (opts.name && step != SLURM_BATCH_SCRIPT) {
		uint32_t job = 0;
		cleanup_free char *ref = NULL;

		spank_get_item(sp, S_JOB_ID, &job);
		ref = xasprintf("instance://%u.%s", job, opts.name);
		cfg = named_config(host, ref, false, step, argc, argv, e);
		rc = cfg ? mpictr_plan_json(cfg, &json, e) : -1;
		if (rc == 0 || !opts.image || !err_starts(*e, "no instance '"))
			goto out;
		mpictr_err_free(*e);
		*e = NULL;
		mpictr_config_free(cfg);
		cfg = named_config(host, opts.image, true, step, argc, argv, e);
	} else {
		cfg = task_config(host, opts.image, true, step, argc, argv, e);
	}
	rc = cfg ? mpictr_plan_json(cfg, &json, e) : -1;
out:
	mpictr_config_free(cfg);
	if (rc == 0 && (fputs(json, stdout) == EOF ||
			fputc('\n', stdout) == EOF || fflush(stdout) == EOF))
		rc = err_set(e, errno, "--%s: write the plan",
			     opt_name(OPT_DRY_RUN));
	return rc;
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
	drop_host_locale(&host);
	single_task_key(sp, step, &host);
	if (opts.dry_run) {
		rc = task_dry_run(sp, host, step, argc, argv, e);
		strv_free(host);
		return rc;
	}
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
		pytorch_env(&env);
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
	if (!opts.image && (!opts.name || step == SLURM_BATCH_SCRIPT)) {
		slurm_error("mpictr: --%s=%s alone in a batch script: the "
			    "batch step cannot join a container (hint: give "
			    "--%s too)",
			    opt_name(OPT_NAME), opts.name, opt_name(OPT_IMAGE));
		_exit(MPICTR_EXIT_FAILURE);
	}
	if (check_image() < 0)
		_exit(MPICTR_EXIT_FAILURE);
	if (task_enter(sp, step, &e) < 0) {
		/* Never let slurmstepd exec the command half-way in. */
		int code = e ? mpictr_err_exit_code(e) : MPICTR_EXIT_FAILURE;

		if (e) {
			char *typed = as_typed(mpictr_err_message(e));

			slurm_error("mpictr: %s", typed);
			free(typed);
		}
		mpictr_err_free(e);
		_exit(code);
	}
	if (opts.dry_run)
		_exit(0); /* the plan is printed: the command does not run */
	return 0;
}

/* --container-save, in the child of slurmstepd: become the job's user for
 * good (groups, gid, uid; no way back, no new privileges), then save the
 * job's named container on this node (save; a relative PATH is the job's
 * working directory's, as Pyxis's) and stop it (stop: the container of a
 * step without --container-name). Returns the exit status. */
static int save_as_user(spank_t sp, const char *name, bool save, bool stop)
{
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1, *gids = NULL;
	int ngids = 0;
	char **job_env = NULL;
	mpictr_config *cfg;
	mpictr_err *e = NULL;
	cleanup_free char *path = NULL;
	int rc;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) !=
		ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS ||
	    uid == 0 || setgroups((size_t)ngids, gids) < 0 ||
	    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0 ||
	    setuid(0) == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		slurm_error("mpictr: --%s: cannot become the job's user",
			    opt_name(OPT_SAVE));
		return MPICTR_EXIT_FAILURE;
	}
	if (opts.save[0] == '/')
		path = xstrdup(opts.save);
	else if (env_get(job_env, "PWD") && env_get(job_env, "PWD")[0] == '/')
		path = xasprintf("%s/%s", env_get(job_env, "PWD"), opts.save);
	else {
		slurm_error("mpictr: --%s=%s: a relative path, and the job's "
			    "working directory is unknown",
			    opt_name(OPT_SAVE), opts.save);
		return MPICTR_EXIT_FAILURE;
	}
	cfg = mpictr_config_new();
	rc = mpictr_config_set_host_env(cfg, job_env, &e);
	if (rc == 0 && save)
		rc = mpictr_instance_save(cfg, name, path, &e);
	if (stop) {
		mpictr_err *e2 = NULL;

		if (mpictr_instance_stop(cfg, name, &e2) < 0 && rc == 0) {
			rc = -1;
			e = e2;
		} else {
			mpictr_err_free(e2);
		}
	}
	mpictr_config_free(cfg);
	if (rc < 0) {
		cleanup_free char *typed = as_typed(mpictr_err_message(e));

		slurm_error("mpictr: --%s=%s: %s", opt_name(OPT_SAVE),
			    opts.save, typed);
		mpictr_err_free(e);
		return MPICTR_EXIT_FAILURE;
	}
	return 0;
}

/* slurmstepd (root), once the step's tasks on this node have ended:
 * --container-save of the named container, on the step's first node, in
 * a child that is the job's user (the save reads the container and
 * writes PATH as the user, never as root); a step without
 * --container-name ran in a named container of its own (step_named),
 * stopped now on every node. Once per step: from the last task's
 * slurm_spank_task_exit (slurmstepd reports the tasks' end to srun
 * after it, so that the next step finds the saved image), else from
 * slurm_spank_exit. A failed save is reported on the step's output. */
static int save_step(spank_t sp)
{
	static bool done;
	uint32_t step = 0, job = 0, node = 1;
	cleanup_free char *name = NULL;
	pid_t pid;
	int status;

	if (done || !opts.save || !opts.name || opts.dry_run ||
	    !spank_remote(sp))
		return 0;
	done = true;
	spank_get_item(sp, S_JOB_STEPID, &step);
	spank_get_item(sp, S_JOB_NODEID, &node);
	spank_get_item(sp, S_JOB_ID, &job);
	if (step == SLURM_EXTERN_CONT || step == SLURM_BATCH_SCRIPT ||
	    (node != 0 && !opts.step_named))
		return 0;
	name = xasprintf("%u.%s", job, opts.name);
	pid = fork();
	if (pid < 0) {
		slurm_error("mpictr: --%s: fork: %s", opt_name(OPT_SAVE),
			    strerror(errno));
		return -1;
	}
	if (pid == 0)
		_exit(save_as_user(sp, name, node == 0, opts.step_named));
	if (TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)) < 0 ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	static uint32_t ended;
	uint32_t ntasks = 0;

	if (!opts.save || !spank_remote(sp) ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) !=
		ESPANK_SUCCESS ||
	    ++ended < ntasks)
		return 0;
	return save_step(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	return save_step(sp);
}
