/* plan.h - the plan: an ordered list of mount operations plus the
 * environment and command, built from a config and the host facts
 * gathered for it (facts.h) before anything runs. Building it is
 * pure (no I/O, no fork), so unit tests feed it recorded facts;
 * `--dry-run` prints it as JSON.
 */
#ifndef MPICTR_PLAN_H
#define MPICTR_PLAN_H

#include <stdbool.h>
#include <sys/types.h>

#include "config/bindpol.h"
#include "config/config.h"
#include "config/ociconfig.h"
#include "host/devices.h"
#include "plan/env.h"
#include "host/facts.h"
#include "sif/image.h"
#include "plan/mode.h"
#include "host/mpiinject.h"
#include "plan/mpicheck.h"
#include "common/util.h"

enum mop_kind {
	MOP_IMAGE,   /* the image, read-only, at the container root */
	MOP_BIND,    /* bind a host file or directory tree (recursive) */
	MOP_TMPFS,   /* a tmpfs (data: its options) */
	MOP_DEVPTS,  /* a new devpts instance */
	MOP_DEV,     /* bind a device node: keeps dev, adds nosuid,noexec */
	MOP_FILE,    /* a generated file (source holds its content) */
	MOP_SYMLINK, /* a symlink at target whose text is source */
	/* the writable layer on the image (--writable-tmpfs: source
	 * "tmpfs", data its size; --overlay: source the directory) */
	MOP_OVERLAY,
};

struct mount_op {
	enum mop_kind kind;
	char *source;	     /* host path, file content or link text */
	char *target;	     /* path inside the container */
	unsigned long flags; /* MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC */
	char *data;	     /* fs options for tmpfs/devpts */
	bool optional;	     /* a missing source is skipped */
	bool src_is_dir;     /* what the target must be */
	const char *why;     /* short reason, for debugging output */
	enum bind_who who;   /* MOP_BIND: whose request, for the site's
				rules (checked again on the opened source) */
};

struct plan_device {
	char *path;   /* path in the container */
	char *kind;   /* "ib", "opa", "gpu", ... */
	char *reason; /* why chosen */
};

struct plan {
	enum run_mode mode; /* decided before planning (mode.c) */
	char *launch;	    /* run_describe() of that decision */
	struct image_info image;
	struct mount_op *ops;
	size_t nops;
	char **env;		/* environment of the command (rank 0) */
	char **user_env;	/* NAME=VALUE that win over the env scripts */
	char **env_scripts;	/* paths inside the image, sourced in order */
	bool env_scripts_known; /* false: decided at run time */
	char **argv;		/* the command as the user asked for it */
	/* Words of argv before the user's own command (`run`: the runscript,
	 * or a pulled image's Entrypoint): a launcher that execs the user's
	 * argv itself (the SPANK plugin) gets them put in front. */
	size_t argv_lead;
	/* The image config of a pulled image (facts.h), copied: argv of
	 * `run` came from its Entrypoint/Cmd, cwd from WorkingDir, image_env
	 * (its Env, valid names only) was applied over the host's. */
	struct oci_config oci;
	bool oci_known;
	char **image_env;
	char *cwd;	   /* start directory inside the container */
	char *run_dir;	   /* private host dir for this job (PMIx tmpdir) */
	uid_t uid, uid_in; /* host uid and uid inside the container */
	gid_t gid, gid_in;
	char *home; /* the user's home directory */
	char *user; /* login name */
	struct plan_device *devices;
	size_t ndevices;
	char **notices;		     /* lines to log before running */
	struct host_devices hostdev; /* discovered devices and HCAs */
	char *sysroot;		     /* MPICTR_SYSROOT (testing aid), or NULL */
	bool inject_verbs;
	/* config_container_digest of the options it was built from (the
	 * option table's rows that decide the container). */
	uint64_t options_digest;
	char *ucx_net_devices; /* from the UCX query helper, or NULL */
	bool ucx_asked;	       /* the helper was asked (facts.h) */
	bool shared_ns;	       /* all local ranks share the namespaces */
	bool single_node;   /* every rank is local (launch mode, no daemon) */
	bool transport_env; /* --transport-env=on */
	int nlocal;	    /* local ranks (1 without -n; join mode: the
			       launcher's local size) */
	int local_rank;	    /* join mode: this task's (else 0): --dry-run's */
	int fuse_workers;   /* the holder's FUSE workers (squashfs, SIF) */
	/* The job's PMI shape, decided here once (plan_options): */
	int nranks;	 /* ranks started here: -n's (node daemon mode: per
			    node), 1 without -n */
	bool serves_pmi; /* our PMI servers serve them (-n) */
	size_t nholders; /* namespace holders: 1, nranks with --no-share */
	/* MPI_UNIVERSE_SIZE our servers give: --universe-size, else (launch
	 * mode) the cores this process may run on or nranks when larger; 0
	 * where it is not ours to decide (no PMI of ours; node daemon mode
	 * without --universe-size: the job's size). */
	uint32_t universe;
	/* Spawns may not pass universe (--no-oversubscribe, the site's
	 * oversubscribe = no); otherwise it is advice. */
	bool universe_hard;
	uint32_t ncores; /* cores this process may run on (launch mode and
			    --dry-run gather them), 0: not gathered */
	char **profiles; /* selected site profiles, in order */
	struct mpi_inject
	    *mpi; /* host MPIs to inject (checked in the holder) */
	size_t nmpi;
	struct bind_policy bind_policy; /* the site's deny/allow rules */
	/* The verbs providers of the exposed HCAs (the warning, or the
	 * --inject-verbs binds): decided here when the image could be read
	 * before mounting (the binds among ops, why VERBS_WHY; the holder
	 * logs verbs_warnings), else by the holder with the image mounted,
	 * from host_verbs (verbs_in_holder). */
	bool verbs_in_holder;
	/* The MPI ABI check of mpi[]: made here when the image's MPI
	 * libraries were read before mounting (mpi_checked; the holder logs
	 * mpi_warnings and fails with mpi_refusal), else by the holder with
	 * the image mounted. */
	bool mpi_checked;
	char **mpi_warnings;
	mpictr_err *mpi_refusal;
	struct verbs_tree host_verbs;
	char **verbs_warnings;
	/* Writable containers: the image under an overlay whose upper
	 * layer is a tmpfs of overlay_tmpfs's options, or overlay_dir/upper
	 * (both NULL: the image is read-only). */
	char *overlay_tmpfs;
	char *overlay_dir;
	bool shell;	  /* `mpictr shell`: argv chosen at exec */
	char *shell_path; /* its shell, or NULL: the image's */
	/* The site's signature policy: the holder verifies the image before
	 * it mounts anything (container/imgtrust.h). */
	struct site_trust trust;
	char *trust_cache;
	/* The launcher, for the check of the command's MPI before the exec
	 * (mpicheck.h): on in join and single mode. */
	struct mpicheck_launcher mpicheck;
	/* While plan_build runs: the facts it reads (NULL afterwards). */
	const struct host_facts *facts;
};

#define VERBS_WHY "verbs provider (--inject-verbs)"

/* Build the plan of cfg for the mode decided in d (run_decide) from the
 * host facts gathered for them (host_facts_gather): reads nothing else,
 * keeps no pointer into facts. run_dir may be NULL (dry-run: not
 * created). */
int plan_build(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct host_facts *facts, const char *run_dir,
	       struct plan *p, mpictr_err **err);
void plan_free(struct plan *p);
/* Steps 1 to 5 (env.h): the environment of local rank local_rank of plan
 * p (--dry-run shows p->local_rank's). Caller frees with strv_free. */
char **plan_rank_env(const struct plan *p, int local_rank);
/* The --dry-run JSON (interface contract keys). */
char *plan_to_json(const struct plan *p);
/* "rbind,ro,nosuid,nodev" style options of one op. */
char *mop_options(const struct mount_op *op);

/* The size of a job's private /dev/shm unless the site sets shm_size: a
 * percentage of the memory the job may use (docs/admin.md). */
#define SHM_SIZE_DEFAULT "50%"
/* The size of each of the private /tmp and $HOME tmpfs (--contain) unless
 * the site sets tmp_size: /dev/shm, /tmp and $HOME together take at most
 * 70% of the job's memory by default. */
#define TMP_SIZE_DEFAULT "10%"
/* The size of the upper layer of --writable-tmpfs unless the site sets
 * writable_tmpfs_size: like /dev/shm, memory the job may use. */
#define WRITABLE_TMPFS_SIZE_DEFAULT "50%"

#endif
