/* devices.h - discovery of interconnect and GPU devices from sysfs and /dev,
 * the verbs-provider check against an image, and the `mpictr check` lines
 * for this area.
 *
 * Discovery is read-only and pure apart from reading files: it builds the
 * list of device nodes to bind into the container (with why each was
 * chosen), the HCA ports found, the extra read-only binds, and preflight
 * warnings. The plan turns these into mount operations; nothing here
 * mounts anything.
 *
 * sysroot (MPICTR_SYSROOT, a testing aid; see docs/transport.md for its
 * exact coverage): when non-empty, every host path read for discovery is
 * taken under it, and fake device nodes (regular files, fifos) are
 * accepted there; on the real system (NULL or "") only character devices
 * (and the /dev/dri, /dev/nvidia-caps directories) are.
 */
#ifndef MPICTR_DEVICES_H
#define MPICTR_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "mpictr.h"
#include "common/util.h"

enum device_kind {
	DEVICE_IB,    /* InfiniBand/RoCE/EFA verbs: /dev/infiniband/... */
	DEVICE_OPA,   /* Omni-Path: /dev/hfi1_*, and an hfi1 HCA's uverbs */
	DEVICE_KNEM,  /* /dev/knem */
	DEVICE_XPMEM, /* /dev/xpmem */
	DEVICE_CXI,   /* Slingshot: /dev/cxi* */
	DEVICE_GPU,   /* /dev/nvidia*, /dev/dri, /dev/kfd */
	DEVICE_KIND_COUNT
};

/* "ib", "opa", "knem", "xpmem", "cxi", "gpu" (static storage). */
const char *device_kind_name(enum device_kind k);

struct device {
	char *host_path; /* real path to bind from (under the sysroot if set) */
	char
	    *path; /* path inside the container, e.g. /dev/infiniband/uverbs0 */
	enum device_kind kind;
	char *reason; /* why chosen, one short phrase */
};

/* A read-only, non-device bind: src on the host, dst in the container. */
struct devices_bind {
	char *src;
	char *dst;
};

/* One port of an RDMA device (one entry per device and port); cxi devices
 * appear with port 1. */
struct hca {
	char *name;   /* mlx5_0, hfi1_0, efa_0, cxi0 */
	char *driver; /* mlx5, mlx4, hfi1, efa, cxi, bnxt_re, ... */
	int port;
	bool active;	  /* state "4: ACTIVE" */
	char *link_layer; /* InfiniBand, Ethernet (RoCE), Unknown (EFA) */
	int numa_node;	  /* -1 when unknown */
	bool exposed;	  /* its device node is among devs */
};

struct host_devices {
	struct device *devs;
	size_t ndevs;
	struct hca *hcas;
	size_t nhcas;
	/* Extra read-only binds: under a sysroot, the fake sysfs class and
	 * device directories the verbs library reads (on the real system the
	 * plan's /sys bind already covers them); with --gpu, the NVIDIA
	 * driver libraries (into /.singularity.d/libs) and tools. */
	struct devices_bind *binds;
	size_t nbinds;
	char **lib_dirs;  /* container dirs to prepend to LD_LIBRARY_PATH */
	char **warnings;  /* preflight warnings, one line each, no prefix */
	int ptrace_scope; /* Yama kernel.yama.ptrace_scope, -1 if absent */
};

/* Where the GPU driver libraries go inside the container (Apptainer's). */
#define DEVICES_GPU_LIB_DIR "/.singularity.d/libs"

/* The sysroot to use: MPICTR_SYSROOT from the environment, or NULL when it
 * is unset/empty or when the site restricts user binds
 * (user_binds_allowed false). Static storage (the environment's). */
const char *devices_sysroot(bool user_binds_allowed);

/* Discover devices. sysroot: NULL or "" for the real system, else an
 * absolute directory. spec (--devices): NULL (discover: interconnect nodes
 * of HCAs with an active port, knem, xpmem, cxi; GPUs with gpu), "none",
 * "all" (every interconnect node present, active or not; GPUs with gpu) or
 * a comma list of kinds and /dev paths (GPU nodes when named, even without
 * gpu; driver libraries only with gpu). umad and issm nodes are exposed only
 * when readable by the caller; other nodes that are present but inaccessible
 * are left out with a warning. On success fills *out (release with
 * host_devices_free()); -1 with *err for a bad spec or sysroot. */
int devices_discover(const char *sysroot, const char *spec, bool gpu,
		     struct host_devices *out, mpictr_err **err);
void host_devices_free(struct host_devices *d);
/* A deep copy of from in *to (release with host_devices_free()). */
void host_devices_copy(struct host_devices *to,
		       const struct host_devices *from);

/* NULL when RLIMIT_MEMLOCK is unlimited; else a malloc'ed one-line
 * description of the limit, too low for RDMA memory registration. */
char *devices_memlock_too_low(void);
/* The fixes that preflight warnings and `mpictr check` name. */
#define DEVICES_MEMLOCK_FIX                                                    \
	"fix: `ulimit -l unlimited`, memlock unlimited in "                    \
	"/etc/security/limits.conf, or PropagateResourceLimits in slurm.conf"
#define DEVICES_PTRACE_FIX                                                     \
	"fix: sysctl kernel.yama.ptrace_scope=0; MPI libraries otherwise "     \
	"fall back to slower copies"

#endif
