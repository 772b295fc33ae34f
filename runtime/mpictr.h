/* mpictr.h - public interface of libmpictr, the engine behind the mpictr CLI.
 *
 * This is the only installed header. It is self-contained (no config.h, no
 * third-party headers) and every type is opaque, so site wrappers can embed
 * the library and keep working across versions of the same soname.
 *
 * Conventions, for every function below unless it says otherwise:
 *  - Fallible functions take `mpictr_err **err` last. On failure they return
 *    -1 (or NULL) and, if err is not NULL, store a newly allocated error in
 *    *err that the caller releases with mpictr_err_free(). *err must be NULL
 *    on entry. On success *err is left untouched.
 *  - Strings passed in are copied; the caller keeps ownership.
 *  - Strings returned through `char **out` are allocated with malloc() and
 *    owned by the caller (release with free()).
 *  - The library never prints and never exits. Diagnostics go to the log
 *    sink (mpictr_set_log_sink), which discards them by default.
 *  - Thread rules: a mpictr_config must not be used by two threads at once;
 *    distinct configs are independent. The log sink is process-global.
 *  - Out of memory aborts the process (as libcrun does); every other failure
 *    is reported through err.
 */
#ifndef MPICTR_H
#define MPICTR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(MPICTR_STATIC_ONLY)
#define MPICTR_PUBLIC __attribute__((visibility("default")))
#else
#define MPICTR_PUBLIC
#endif

/* ---- version ------------------------------------------------------- */

#define MPICTR_VERSION_MAJOR 0
#define MPICTR_VERSION_MINOR 1
#define MPICTR_VERSION_PATCH 0

/* The library's version string, e.g. "0.1.0". Static storage. */
MPICTR_PUBLIC const char *mpictr_version(void);

/* ---- exit codes (interface contract) -------------------------------- */

#define MPICTR_EXIT_CANNOT_EXEC 126 /* command found but not executable */
#define MPICTR_EXIT_NOT_FOUND 127   /* command not found in the image */
#define MPICTR_EXIT_FAILURE 255	    /* mpictr itself failed */

/* ---- errors --------------------------------------------------------- */

typedef struct mpictr_err mpictr_err;

/* The errno value behind the error, or 0 when there is none. */
MPICTR_PUBLIC int mpictr_err_errno(const mpictr_err *err);
/* One line, lower-case, naming what failed and on what. Owned by err. */
MPICTR_PUBLIC const char *mpictr_err_message(const mpictr_err *err);
/* The exit status the CLI should use for this error: 255 unless the error is
 * about the payload command (126 not executable, 127 not found). */
MPICTR_PUBLIC int mpictr_err_exit_code(const mpictr_err *err);
/* Release an error; NULL is accepted. */
MPICTR_PUBLIC void mpictr_err_free(mpictr_err *err);

/* ---- logging -------------------------------------------------------- */

enum mpictr_log_level {
	MPICTR_LOG_ERROR = 0,
	MPICTR_LOG_WARNING = 1,
	MPICTR_LOG_NOTICE = 2,
	MPICTR_LOG_INFO = 3,
	MPICTR_LOG_DEBUG = 4,
};

/* The sink gets one complete line (no trailing newline) per call. It may be
 * called from any thread of the library and from forked helper processes
 * before they exec; it must be async-signal-tolerant in the sense that it
 * must not take locks that a fork could leave held (writing to a file
 * descriptor is fine). */
typedef void (*mpictr_log_fn)(enum mpictr_log_level level, const char *line,
			      void *data);

/* Replace the sink (NULL restores the default, which discards everything)
 * and set the most verbose level passed to it. Process-global; not
 * thread-safe against concurrent library calls. */
MPICTR_PUBLIC void mpictr_set_log_sink(mpictr_log_fn fn, void *data,
				       enum mpictr_log_level max_level);

/* ---- SIF images ----------------------------------------------------- */

/* `mpictr sif list FILE`: one line per object in the form siftool prints
 * (see docs/). *out receives the whole text. Structure is checked; nothing
 * is mounted. */
MPICTR_PUBLIC int mpictr_sif_list(const char *path, char **out,
				  mpictr_err **err);
/* `mpictr sif info FILE ID`: every field of object ID. */
MPICTR_PUBLIC int mpictr_sif_info(const char *path, uint32_t id, char **out,
				  mpictr_err **err);
/* `mpictr sif header FILE`: the global header as `siftool header` shows it. */
MPICTR_PUBLIC int mpictr_sif_header(const char *path, char **out,
				    mpictr_err **err);

typedef struct mpictr_sif_create_opts mpictr_sif_create_opts;
/* Options for mpictr_sif_create(). New/free own the object; setters copy. */
MPICTR_PUBLIC mpictr_sif_create_opts *mpictr_sif_create_opts_new(void);
MPICTR_PUBLIC void mpictr_sif_create_opts_free(mpictr_sif_create_opts *o);
MPICTR_PUBLIC int mpictr_sif_create_opts_set_deffile(mpictr_sif_create_opts *o,
						     const char *path,
						     mpictr_err **err);
MPICTR_PUBLIC int
mpictr_sif_create_opts_set_env_script(mpictr_sif_create_opts *o,
				      const char *path, mpictr_err **err);
MPICTR_PUBLIC int mpictr_sif_create_opts_set_labels(mpictr_sif_create_opts *o,
						    const char *path,
						    mpictr_err **err);
/* Replace an existing OUT (default: refuse, exit 255, before any work). */
MPICTR_PUBLIC void mpictr_sif_create_opts_set_force(mpictr_sif_create_opts *o,
						    int force);
/* Progress for a terminal: fn gets text as it comes (lines saying what is
 * being done, and mksquashfs's progress bar, drawn with \r); NULL: none.
 * Called in the calling thread. */
typedef void (*mpictr_sif_progress_fn)(const char *text, size_t len,
				       void *data);
MPICTR_PUBLIC void
mpictr_sif_create_opts_set_progress(mpictr_sif_create_opts *o,
				    mpictr_sif_progress_fn fn, void *data);
/* Wrap SOURCE (a squashfs file, or a directory packed with mksquashfs) into
 * a new SIF at OUT with a primary system partition. opts may be NULL. OUT is
 * written to a temporary name and put in place, so a failure leaves no
 * file; an existing OUT is replaced only with force. */
MPICTR_PUBLIC int mpictr_sif_create(const char *out, const char *source,
				    const mpictr_sif_create_opts *opts,
				    mpictr_err **err);

/* mpictr_verify flags */
#define MPICTR_VERIFY_JSON 1u	/* *out is JSON, not text */
#define MPICTR_VERIFY_LEGACY 2u /* check legacy (SIFHASH) signatures too */
/* `mpictr verify [--key FILE]... IMAGE`: check every signature of the SIF
 * at path with the key files (NULL-terminated; PEM public keys, OpenPGP
 * public keys) as Apptainer's verify does (docs/signing.md). *out (caller
 * frees) receives the report; *verified is 1 when every object group is
 * signed and every signature over it verifies with one of the keys.
 * Returns 0 when the image could be examined (whatever the verdict), -1
 * with *err when not. Loads the "verify" plugin. */
MPICTR_PUBLIC int mpictr_verify(const char *path, const char *const *keys,
				unsigned flags, char **out, int *verified,
				mpictr_err **err);
/* `mpictr sif sign --key FILE IMAGE`: add one signature object per object
 * group, DSSE with a PEM private key (Ed25519, ECDSA, RSA) or OpenPGP
 * clear-signed with a secret key. *summary (caller frees) says what was
 * added. */
MPICTR_PUBLIC int mpictr_sif_sign(const char *path, const char *keyfile,
				  char **summary, mpictr_err **err);

/* ---- pulling images (docs/pull.md) --------------------------------- */

typedef struct mpictr_pull_opts mpictr_pull_opts;
/* Options for mpictr_pull(). New/free own the object; the setter copies. */
MPICTR_PUBLIC mpictr_pull_opts *mpictr_pull_opts_new(void);
MPICTR_PUBLIC void mpictr_pull_opts_free(mpictr_pull_opts *o);
/* Set option name (the long option of `mpictr pull` without "--":
 * "force", "quiet", "arch", "tls-ca", "insecure", "no-expansion-limit",
 * "stall-timeout", "cache-dir", "dir"); value is NULL for the flags. */
MPICTR_PUBLIC int mpictr_pull_opts_set(mpictr_pull_opts *o, const char *name,
				       const char *value, mpictr_err **err);
/* Progress of a pull: fn gets one line at a time (no newline); transient
 * lines (byte counts) may be overwritten by the next one on a terminal or
 * dropped elsewhere. fn NULL: none (the default). */
MPICTR_PUBLIC void mpictr_pull_opts_progress(
    mpictr_pull_opts *o,
    void (*fn)(const char *line, int transient, void *data), void *data);
/* `mpictr pull SOURCE [OUT]`: write the image SOURCE (docker://...,
 * REPO[:TAG], REGISTRY#IMAGE, docker-archive:, oci-archive:, oci:) as the
 * SIF OUT (NULL: NAME_TAG.sif, or NAME.sif for the local forms, in the
 * option "dir" or the current directory, as Apptainer; registry images stay
 * in the cache too). An existing OUT needs "force". *summary
 * receives a one-line report (caller frees). opts may be NULL. */
MPICTR_PUBLIC int mpictr_pull(const char *source, const char *out,
			      const mpictr_pull_opts *opts, char **summary,
			      mpictr_err **err);

/* `mpictr cache list`: the images in the cache dir (NULL: the default,
 * docs/pull.md) as text, one per line, then totals. */
MPICTR_PUBLIC int mpictr_cache_list(const char *dir, char **text,
				    mpictr_err **err);
/* `mpictr cache clean`: remove every image, blob and tag of the cache (all
 * = 0: only what killed pulls left in its tmp/). Fails (EBUSY) while a
 * pull or run holds the cache. Bytes freed in *freed. */
MPICTR_PUBLIC int mpictr_cache_clean(const char *dir, int all, uint64_t *freed,
				     mpictr_err **err);

/* ---- container configuration ---------------------------------------- */

typedef struct mpictr_config mpictr_config;

MPICTR_PUBLIC mpictr_config *mpictr_config_new(void);
MPICTR_PUBLIC void mpictr_config_free(mpictr_config *cfg);

/* The image: a SIF file, a squashfs file or a directory. */
MPICTR_PUBLIC int mpictr_config_set_image(mpictr_config *cfg, const char *path,
					  mpictr_err **err);
/* The command and its arguments (argv[0] is the program, looked up on the
 * container's PATH). argc >= 1. */
MPICTR_PUBLIC int mpictr_config_set_command(mpictr_config *cfg, int argc,
					    char *const argv[],
					    mpictr_err **err);
/* Run the image's /.singularity.d/runscript with argv as its arguments
 * (`mpictr run`) instead of a command; argc may be 0. */
MPICTR_PUBLIC int mpictr_config_set_runscript(mpictr_config *cfg, int argc,
					      char *const argv[],
					      mpictr_err **err);
/* A bind in the form users type: SRC[:DST[:ro|rw]]; several may be given
 * comma-separated. Repeatable; applied in order. */
MPICTR_PUBLIC int mpictr_config_add_bind(mpictr_config *cfg, const char *spec,
					 mpictr_err **err);
/* Set NAME=VALUE in the command's environment (wins over the host and the
 * image's env scripts). */
MPICTR_PUBLIC int mpictr_config_set_env(mpictr_config *cfg, const char *name,
					const char *value, mpictr_err **err);
/* --env LIST, as Apptainer reads it: NAME=VALUE pairs separated by
 * commas, where a piece without '=' belongs to the value before it
 * ("A=1,B=2" is two variables, "P=/a,/b" and "P=/a," one). Each is
 * mpictr_config_set_env; an error names the piece. */
MPICTR_PUBLIC int mpictr_config_add_env_list(mpictr_config *cfg,
					     const char *list,
					     mpictr_err **err);
/* The binds the host environment asks for, as Apptainer reads them:
 * APPTAINER_BIND, else APPTAINER_BINDPATH, else SINGULARITY_BIND, else
 * SINGULARITY_BINDPATH (the -B syntax, comma-separated); added as
 * mpictr_config_add_bind does, an error naming the variable. The CLI calls
 * it before its options, so -B comes after them. */
MPICTR_PUBLIC int mpictr_config_add_env_binds(mpictr_config *cfg,
					      mpictr_err **err);
/* Start directory inside the container (default: the current directory). */
MPICTR_PUBLIC int mpictr_config_set_pwd(mpictr_config *cfg, const char *dir,
					mpictr_err **err);
/* Start directory when neither mpictr_config_set_pwd() nor a pulled
 * image's WorkingDir gives one, instead of the current directory (the
 * SPANK plugin: "/", as Pyxis). It also selects Pyxis's (and Docker's)
 * rules for a pulled image: every command starts in its WorkingDir, and
 * its Env wins over the host's variables (default: Apptainer's, where
 * only `run` starts in WorkingDir and the host's value wins). */
MPICTR_PUBLIC int mpictr_config_set_pwd_default(mpictr_config *cfg,
						const char *dir,
						mpictr_err **err);
/* The host environment the container starts from; NULL-terminated, copied.
 * Default: environ at the time of mpictr_config_new(). */
MPICTR_PUBLIC int mpictr_config_set_host_env(mpictr_config *cfg,
					     char *const envp[],
					     mpictr_err **err);

enum mpictr_flag {
	MPICTR_FLAG_CONTAIN = 1,    /* no $HOME, cwd, /tmp binds */
	MPICTR_FLAG_FAKEROOT = 2,   /* map the user to uid 0 inside */
	MPICTR_FLAG_NO_SHARE = 3,   /* debug: one namespace set per rank */
	MPICTR_FLAG_TAG_OUTPUT = 4, /* prefix rank output with [rank] */
	MPICTR_FLAG_TRANSPORT_ENV =
	    5,			      /* set transport variables (default on) */
	MPICTR_FLAG_GPU = 6,	      /* expose GPUs and driver libraries */
	MPICTR_FLAG_INJECT_VERBS = 7, /* bind host verbs providers in */
	/* An overlay on the image whose upper layer is private memory (a
	 * tmpfs sized by the site's writable_tmpfs_size), shared by the
	 * node's ranks; gone with the container. */
	MPICTR_FLAG_WRITABLE_TMPFS = 8,
	/* Start from an empty host environment (the launcher's PMI and
	 * Slurm variables, TERM, HOME, USER, LANG and LC_* kept). */
	MPICTR_FLAG_CLEANENV = 9,
	MPICTR_FLAG_NO_HOME = 10, /* do not bind $HOME */
	/* MPI_Comm_spawn may not go past --universe-size (default: the
	 * universe is advice, as under mpirun --oversubscribe) */
	MPICTR_FLAG_NO_OVERSUBSCRIBE = 11,
};
MPICTR_PUBLIC int mpictr_config_set_flag(mpictr_config *cfg,
					 enum mpictr_flag flag, int on,
					 mpictr_err **err);

/* Number of ranks to launch on this node; 0 (default) runs the command
 * once, with no PMI server. */
MPICTR_PUBLIC int mpictr_config_set_nranks(mpictr_config *cfg, int n,
					   mpictr_err **err);
/* MPI_UNIVERSE_SIZE of a launch (--universe-size): how many processes the
 * ranks and the processes they spawn (MPI_Comm_spawn) may be at once.
 * 0 (default): the CPU cores this process may use, or the number of ranks
 * if larger, as Open MPI's mpirun on one node. 1..65536. */
MPICTR_PUBLIC int mpictr_config_set_universe_size(mpictr_config *cfg, int n,
						  mpictr_err **err);
/* --timeout SECONDS (mpirun's): a job still running after it is ended
 * (SIGTERM, SIGKILL 3 s later), the ranks still running named, exit
 * status 124. 0 (default): none. */
MPICTR_PUBLIC int mpictr_config_set_timeout(mpictr_config *cfg, int seconds,
					    mpictr_err **err);
/* `none`, `all` or a comma list of kinds/paths (--devices). */
MPICTR_PUBLIC int mpictr_config_set_devices(mpictr_config *cfg,
					    const char *spec, mpictr_err **err);
/* A persistent overlay (--overlay DIR): the image's writes go to
 * DIR/upper (DIR/work is the overlay's work directory; both made when
 * missing). DIR must be a directory the user owns (checked on the opened
 * directory when the container is built). */
MPICTR_PUBLIC int mpictr_config_set_overlay(mpictr_config *cfg, const char *dir,
					    mpictr_err **err);
/* --home SRC[:DST]: bind host directory SRC as the home directory, at DST
 * (default: the user's home path), and set HOME to it. */
MPICTR_PUBLIC int mpictr_config_set_home(mpictr_config *cfg, const char *spec,
					 mpictr_err **err);
/* --env-file FILE: NAME=VALUE lines ('#' comments, blank lines, an
 * optional 'export ', one pair of quotes around the value stripped),
 * read now; they win over APPTAINERENV_ and MPICTR_ENV_ variables and
 * lose to --env. */
MPICTR_PUBLIC int mpictr_config_add_env_file(mpictr_config *cfg,
					     const char *path,
					     mpictr_err **err);
/* `mpictr shell`: the command is an interactive shell of the image
 * (shell, when not NULL; else $SHELL of the image's /bin/bash or /bin/sh),
 * with a prompt naming the image. */
MPICTR_PUBLIC int mpictr_config_set_shell(mpictr_config *cfg, const char *shell,
					  mpictr_err **err);
/* `none` or `core` (--bind-to). */
MPICTR_PUBLIC int mpictr_config_set_bind_to(mpictr_config *cfg,
					    const char *policy,
					    mpictr_err **err);

/* ---- site configuration and profiles (since 0.1) --------------------- */

/* The compiled-in site configuration file, e.g. "/etc/mpictr/mpictr.conf".
 * Static storage; thread-safe. */
MPICTR_PUBLIC const char *mpictr_site_config_path(void);

/* Load the site configuration into cfg: default binds, environment,
 * device and transport policy, restrictions on user binds, and profiles.
 * path NULL loads mpictr_site_config_path(); a missing default file is not
 * an error (no site policy). Only where that file does not exist is
 * MPICTR_TEST_SITE_CONF (from the host environment of cfg) read instead:
 * a testing aid that therefore can never replace a site's file. Call it
 * once, before mpictr_config_add_config_file(). Errors name the file and
 * line ("mpictr.conf:12: unknown key 'foo'"); on error cfg is unchanged.
 * The format is in mpictr(1) and docs/admin.md. */
MPICTR_PUBLIC int mpictr_config_load_site(mpictr_config *cfg, const char *path,
					  mpictr_err **err);
/* Add a user configuration file (--config, MPICTR_CONF): binds,
 * environment and new profiles. It cannot lift the site's restrictions:
 * restriction keys, locked settings and redefined profiles are errors, and
 * what it binds is checked like -B. Repeatable, in order. */
MPICTR_PUBLIC int mpictr_config_add_config_file(mpictr_config *cfg,
						const char *path,
						mpictr_err **err);
/* Select a profile by name (--profile; repeatable, applied in order).
 * Resolved when the plan is built, so the files may be loaded later; an
 * unknown name then fails, listing the known ones. */
MPICTR_PUBLIC int mpictr_config_add_profile(mpictr_config *cfg,
					    const char *name, mpictr_err **err);
/* The profiles loaded so far, one line each: "NAME\tDESCRIPTION\tFILE:LINE\n".
 * *out is "" when there are none. */
MPICTR_PUBLIC int mpictr_config_list_profiles(const mpictr_config *cfg,
					      char **out, mpictr_err **err);

/* ---- planning and running ------------------------------------------- */

/* Validate cfg and print the plan (--dry-run) as JSON into *json. Nothing
 * is mounted or executed; the image must exist and parse. */
MPICTR_PUBLIC int mpictr_plan_json(mpictr_config *cfg, char **json,
				   mpictr_err **err);

/* Run the configured job to completion. On return 0, *status holds the exit
 * status the CLI should exit with (the command's status, 128+signal, 126 or
 * 127; with ranks, the first failing rank's). -1 with *err when mpictr
 * itself failed (nothing it created is left behind). Must be called from a
 * single-threaded process: it forks and changes the signal mask while it
 * runs, restoring it before it returns. It never changes the caller's
 * environ, and it always returns: in join mode (one task of an srun step,
 * no -n: the command joins the node's shared container) it forks the
 * command and waits for it, like every other mode. Same as
 * mpictr_run_flags(cfg, 0, status, err). */
MPICTR_PUBLIC int mpictr_run(mpictr_config *cfg, int *status, mpictr_err **err);

enum mpictr_run_flags {
	/* Join mode only: replace the calling process with the command
	 * (execve) instead of forking it, so that the launcher (slurmstepd)
	 * stays the command's parent: its PMI_FD, signals, exit status and
	 * accounting then reach the command directly, with no process of
	 * mpictr in between. mpictr_run_flags() then returns only on failure
	 * (-1 with *err; the error's exit code is 126 or 127 when the command
	 * cannot be executed). No effect in the other modes. The CLI sets it.
	 */
	MPICTR_RUN_EXEC_IN_PLACE = 1u << 0,
};
/* mpictr_run() with flags, an OR of enum mpictr_run_flags; unknown bits
 * are an error (EINVAL). */
MPICTR_PUBLIC int mpictr_run_flags(mpictr_config *cfg, unsigned flags,
				   int *status, mpictr_err **err);

/* For a plugin of the launcher that execs each task itself (Slurm's SPANK
 * task_init hook; since 0.1): do what join mode does for this task of the
 * launcher's job (start the node's keeper if first, claim the local rank,
 * the same checks) and return instead of executing the command. On 0 the
 * calling process is in the node container's namespaces and start
 * directory, with no capabilities and no_new_privs; *env (NULL-terminated,
 * each string and the array malloc'ed) is the environment to exec the
 * command with (the launcher's PMI_FD and PMIX_* included); *program is
 * NULL when argv[0] of cfg's command is to be exec'ed as given (found on
 * *env's PATH in the container), else the program to exec in its place with
 * the same argv: it sources the image's environment scripts, then runs the
 * command. cfg's image may name an instance ("instance://NAME", below):
 * the task then enters it. Must be called from a single-threaded process
 * (a task of the step, after the launcher set its environment); -1 with
 * *err (EINVAL when cfg's environment is not one task of a launcher's
 * job; 126/127 exit codes for the command). */
MPICTR_PUBLIC int mpictr_join_task(mpictr_config *cfg, char ***env,
				   char **program, mpictr_err **err);

/* ---- instances (since 0.1) --------------------------------------------- */

/* A named instance: the node container of cfg (its image and the options
 * that decide the container: binds, --contain, devices, profiles, ...),
 * kept running so that later runs join it. An image of the form
 * "instance://NAME" given to mpictr_config_set_image() names a running
 * instance: mpictr_run() then enters its namespaces instead of building a
 * container (nothing is mounted); the environment, --env, --pwd and the
 * command apply per run, and the options that would change the container
 * (binds, the flags CONTAIN, FAKEROOT, GPU, INJECT_VERBS, NO_SHARE,
 * devices, profiles) are refused with an error naming the option.
 * Instances are private to their user: they live in the user's private
 * rendezvous directory on the node, and both ends check the peer's uid.
 * Names match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$. */

/* Instances started and joined on someone's behalf (the SPANK plugin's
 * named containers): an instance started with cfg records origin (a short
 * name of the starter, as "the SPANK plugin"); joining instance://NAME
 * with cfg then requires the instance to carry the same origin (one
 * started by `mpictr instance start` carries none) and its image, the
 * file the instance holds by its real path, to lie below one of
 * image_dirs (NULL-terminated absolute paths; NULL: anywhere). Refused
 * otherwise, EPERM, naming the instance and the rule. This is policy for
 * honest users (the user may run any program of their own), not a
 * boundary. */
MPICTR_PUBLIC int
mpictr_config_set_instance_origin(mpictr_config *cfg, const char *origin,
				  const char *const *image_dirs,
				  mpictr_err **err);

/* Start instance name and return once it is ready. linger_s > 0: it ends
 * after that many seconds without a process in it. watch_pid > 0: it ends
 * when that process ends; 0: inside a Slurm job (SLURM_JOB_ID in cfg's
 * host environment) when the job ends, whichever step started it (the
 * job's extern or batch slurmstepd on the node, else the job's state
 * from squeue, found on cfg's PATH; an error when the job is not
 * running), and none outside a job. cfg needs no command. A running
 * instance of that name is an error. */
MPICTR_PUBLIC int mpictr_instance_start(mpictr_config *cfg, const char *name,
					long linger_s, int watch_pid,
					mpictr_err **err);
/* Stop instance name (NULL: all of the user's on this node): SIGTERM to
 * every process in it, SIGKILL after 2 s, then the mount, the namespaces,
 * the socket and its directory go; returns when nothing is left. cfg (or
 * NULL: environ) gives the host environment. */
MPICTR_PUBLIC int mpictr_instance_stop(mpictr_config *cfg, const char *name,
				       mpictr_err **err);
/* The user's instances on this node into *out: a table (NAME, IMAGE,
 * STARTED, MEMBERS, PID, LINGER, JOB) or, with json, a JSON array of
 * objects with the keys name, image, started (ISO 8601 UTC), start_time
 * (seconds since the epoch), members (processes in it now, not counting
 * its holder), pid (the keeper's), linger (seconds, 0: none), job (the
 * Slurm job id or null). */
/* `mpictr instance save NAME PATH`: the instance's container as it is now
 * (the image and what a writable layer changed, without what is mounted
 * on it) as a new squashfs image at PATH, packed by mksquashfs. */
MPICTR_PUBLIC int mpictr_instance_save(mpictr_config *cfg, const char *name,
				       const char *path, mpictr_err **err);
MPICTR_PUBLIC int mpictr_instance_list(mpictr_config *cfg, int json, char **out,
				       mpictr_err **err);

/* ---- preflight ------------------------------------------------------ */

/* `mpictr check`: one line per item into *report, "ok:" or "problem:" then
 * what was checked and, for problems, the fix. *blocking is the number of
 * problems that prevent running containers at all. */
MPICTR_PUBLIC int mpictr_check(char **report, int *blocking, mpictr_err **err);

/* `mpictr inspect`: an image's labels, environment scripts, runscript,
 * image configuration (OCI config object or Enroot /etc/environment and
 * /etc/rc) and, for a SIF, its objects; as text or (json) one JSON object.
 * Reads the image without mounting it. */
MPICTR_PUBLIC int mpictr_inspect(const char *image, int json, char **out,
				 mpictr_err **err);

#ifdef __cplusplus
}
#endif
#endif /* MPICTR_H */
