/* instance.h - named instances: a node container that later commands join
 * (`mpictr instance start IMAGE NAME`, `mpictr ... instance://NAME CMD`).
 * See instance.c. This internal API is also what the SPANK plugin builds
 * on; keep it stable.
 */
#ifndef MPICTR_INSTANCE_H
#define MPICTR_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "config/config.h"
#include "container/ns.h"

/* An IMAGE of this form names a running instance. */
#define INSTANCE_PREFIX "instance://"
/* Names: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$ */
#define INSTANCE_NAME_MAX 32

/* How an instance is started. */
struct instance_opts {
	const char *name; /* checked with instance_name_check() */
	/* > 0: the instance ends after this many seconds without a process
	 * in it (and without a command joining). 0: no linger. */
	long linger_s;
	/* The process whose end ends the instance (the caller makes sure
	 * the pid is the one it means). 0: inside a Slurm job (SLURM_JOB_ID
	 * in cfg's host environment), the job's end (jobwatch.h: its extern
	 * or batch slurmstepd on this node, else its state in Slurm, squeue
	 * found on cfg's PATH with cfg's SLURM_CONF), whichever step started
	 * it; outside a job, none. */
	pid_t watch_pid;
};

/* One instance of the user on this node (instance_list). */
struct instance_info {
	char *name;
	char *image;	/* the image's real path */
	time_t started; /* when it became ready */
	int members;	/* processes in its namespaces now, not counting the
			   holder and its FUSE workers */
	pid_t keeper;
	long linger_s;
	char *job; /* the Slurm job it ends with, or NULL */
};

/* True when image names an instance (INSTANCE_PREFIX). */
bool instance_is_ref(const char *image);
/* 0, or -1 with an error naming the rule when name is not valid. */
int instance_name_check(const char *name, mpictr_err **err);

/* Start instance o->name from cfg: its image and the options that decide
 * the container (binds, --contain, devices, profiles, ...); cfg needs no
 * command. Returns once the container is ready (mounted, root assembled),
 * or -1 with *err and nothing left. An instance of that name that is
 * running is an error. */
int instance_start(const struct mpictr_config *cfg,
		   const struct instance_opts *o, mpictr_err **err);
/* Stop instance name (NULL: every instance of the user on this node):
 * every process in its namespaces is sent SIGTERM, then SIGKILL after
 * INSTANCE_STOP_GRACE_MS; then the holder, the mount, the socket and the
 * directory go. Returns when all is gone. env: the host environment
 * (HOME, for the rendezvous directory's fallback). */
#define INSTANCE_STOP_GRACE_MS 2000
int instance_stop(char *const *env, const char *name, mpictr_err **err);
/* The user's instances on this node, sorted by name. Free with
 * instance_list_free(). Stale files of a killed keeper are removed. */
int instance_list(char *const *env, struct instance_info **out, size_t *n,
		  mpictr_err **err);
void instance_list_free(struct instance_info *v, size_t n);

/* A command joining an instance (cfg->image is instance://NAME). */
struct instance_attach {
	char *name;
	int userns, mntns; /* the instance's namespaces */
	/* Where a launch-mode job puts its job directory: a directory of the
	 * instance, bound at the same path inside it. */
	char *run_base;
	/* The caller's cfg with the instance's image and container options
	 * (--contain, --fakeroot, --gpu, --inject-verbs, --devices,
	 * profiles): plan the command from it. A shallow copy: valid while
	 * the caller's cfg is. */
	struct mpictr_config cfg;
	/* Owned behind cfg: image, and the options of the option table that
	 * the instance keeps (inst_key: --devices, --profile, ...). */
	char *image;
	pid_t holder; /* the instance's holder (its root: /proc/PID/root) */
	/* The image the instance holds open (cfg.image_read names it): a
	 * joiner plans from it, not from the image's path. */
	int image_fd;
	char *image_read;
	/* The instance's UCX answer (facts.h host_given), so that its
	 * joiners run no UCX query helper of their own. */
	bool ucx_known;
	char *ucx;
	/* The above for the modes (join_run, launch_run). */
	struct ns_source src;
};

/* Connect to the instance named by cfg->image, check the caller's options
 * (those that would change the container are refused, naming the option),
 * receive its namespaces and options. Mounts nothing. Free with
 * instance_attach_free(). */
int instance_attach(const struct mpictr_config *cfg, struct instance_attach *a,
		    mpictr_err **err);
void instance_attach_free(struct instance_attach *a);

#endif
