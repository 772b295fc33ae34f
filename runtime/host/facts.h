/* facts.h - the host facts a plan is built from, gathered once, before
 * planning: the process's identity and directories, the memory the job may
 * use, the image's kind and contents, the devices and UCX's answers, the
 * host paths that binds name and the host MPI libraries that profiles
 * name. host_facts_gather() does all the I/O (it stats, reads, runs the
 * UCX helper); plan_build() reads only these facts, so unit tests feed it
 * recorded ones.
 */
#ifndef MPICTR_FACTS_H
#define MPICTR_FACTS_H

#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "config/ociconfig.h"
#include "host/devices.h"
#include "sif/image.h"
#include "host/mpiinject.h"
#include "host/verbs.h"

/* One host path as planning sees it. */
struct path_fact {
	char *path; /* as named (absolute) */
	char *real; /* realpath(3), NULL when it failed */
	int err;    /* errno of realpath/stat, 0 when the path exists */
	bool is_dir;
	bool is_dev; /* a character or block device */
};

/* One host MPI library (or dependency) that a profile names. */
struct mpi_fact {
	char *path;	    /* as the profile names it */
	struct mpi_lib lib; /* mpiabi_inspect_host's answer */
	mpictr_err *err;    /* its error, or NULL */
};

struct host_facts {
	uid_t uid;
	gid_t gid;
	char *user; /* login name, NULL when the uid has no entry */
	char *home; /* $HOME when absolute, else the entry's, else "/" */
	char *cwd;  /* NULL when getcwd failed (cwd_err) */
	int cwd_err;
	unsigned long long page_size;
	long ncpu; /* online CPUs, 0: unknown */
	/* The CPU cores this process may run on (its affinity, the
	 * hardware threads of a core counted once, as Open MPI's mpirun
	 * counts slots); 0: not gathered (HOST_FACTS_CORES). */
	unsigned ncores;
	unsigned long long job_memory; /* bytes the job may use, 0: unknown */

	struct image_info image; /* image_probe's answer */
	/* A directory image with none of bin, usr, sbin, lib, lib64, etc
	 * (nor Apptainer's .singularity.d): not a root filesystem. */
	bool image_not_root;
	mpictr_err *image_err; /* its error, or NULL */
	/* The image's contents, read without mounting it (imgread.h): the
	 * env scripts of a directory image always, of a squashfs or SIF image
	 * where the plan decides the verbs providers or the MPI ABI check
	 * (--dry-run, HOST_FACTS_IMAGE; outside join mode with exposed HCAs
	 * or a profile's host MPI); in join mode the holder decides those (a
	 * joining task neither loads the squash plugin nor reads the image's
	 * libraries). */
	/* The image's /.singularity.d/env/\*.sh in the order the exec
	 * wrapper sources them. */
	char **env_scripts;
	bool env_scripts_known;
	/* Its verbs providers (read only with exposed HCAs). */
	bool image_verbs_known;
	struct verbs_tree image_verbs;
	/* The image's MPI libraries (mpiabi_find_in_reader), when profiles
	 * inject a host MPI and the image was read. */
	struct mpi_lib *image_mpi;
	size_t nimage_mpi;
	bool image_mpi_known;

	/* A SIF's image config (oci-config.json, docs/pull.md): Entrypoint,
	 * Cmd, Env, WorkingDir, User. */
	struct oci_config oci;
	bool oci_known;

	char *sysroot; /* MPICTR_SYSROOT when honoured, else NULL */
	struct host_devices hostdev;
	mpictr_err *devices_err;
	char *ucx_net_devices; /* from the UCX helper, or NULL */
	bool ucx_asked; /* UCX was asked (or its answer given): NULL above
			   is then the helper's failure */
	struct verbs_tree host_verbs; /* with exposed HCAs: the host's
					 providers (under the sysroot) */

	/* The site's signature policy (config_site_trust) and where this
	 * user's verified images are remembered (NULL: nowhere). */
	struct site_trust trust;
	mpictr_err *trust_err;
	char *trust_cache;
	/* The image cache of pull (its path fact recorded): bound read-only
	 * into the container wherever a bind shows it (docs/security.md,
	 * "Shared image cache"). NULL: no HOME to choose it from. */
	char *image_cache;

	struct path_fact *paths;
	size_t npaths;
	struct mpi_fact *mpis;
	size_t nmpis;
};

/* host_facts_gather flags. IMAGE: read a squashfs or SIF image's contents
 * too (--dry-run). DECIDE: the plan decides the verbs providers and the
 * MPI ABI check, so read what they need of the image (every mode but
 * join, where the holder decides them on the mounted image). IMAGE implies
 * DECIDE. */
#define HOST_FACTS_IMAGE 1u
#define HOST_FACTS_DECIDE 2u
/* CORES: count the cores (ncores: the default universe of launch mode;
 * sysfs is read once per CPU, so only where the plan needs it). */
#define HOST_FACTS_CORES 4u

/* Node-wide facts another process of the job already gathered (join
 * mode: the node's keeper, which planned first), used instead of asking
 * again: the UCX query helper then runs once per node, not per task. */
struct host_given {
	bool ucx_known;		     /* use ucx_net_devices, ask no helper */
	const char *ucx_net_devices; /* the keeper's answer, or NULL */
	/* The image's facts as the node's keeper probed them (its plan's,
	 * with the image config's bytes), or NULL: probe the image. */
	const struct image_info *image;
};

/* Gather every fact the plan of cfg reads (flags above), taking the facts
 * in given (NULL: none) as they are.
 * Failures of single facts are recorded (plan_build reports them, with
 * the context it has), so it returns 0; -1 with *err is kept for a
 * failure of the gathering itself, which none of today's facts has.
 * Release with host_facts_free() either way. */
int host_facts_gather(const struct mpictr_config *cfg, unsigned flags,
		      const struct host_given *given, struct host_facts *f,
		      mpictr_err **err);
void host_facts_free(struct host_facts *f);

/* Record a path (realpath and stat, both following symlinks); the real
 * path is recorded too. Returns the fact. Exposed for recorded-facts
 * fixtures of the unit tests. */
const struct path_fact *host_facts_add_path(struct host_facts *f,
					    const char *path);
/* The recorded fact about path, or NULL. */
const struct path_fact *host_facts_path(const struct host_facts *f,
					const char *path);
/* The recorded MPI library named path, or NULL. */
const struct mpi_fact *host_facts_mpi(const struct host_facts *f,
				      const char *path);

#endif
