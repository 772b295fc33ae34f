/* devices.c - find the interconnect and GPU device nodes to expose, from
 * sysfs and /dev (or a fake tree under MPICTR_SYSROOT). The image's verbs
 * providers are verbs.c's, the ld cache format ldcache.c's, and the
 * `mpictr check` report preflight.c's.
 *
 * Sources read, all relative to the sysroot: sys/class/infiniband (ports,
 * link layer, NUMA node, PCI driver), sys/class/infiniband_verbs and
 * sys/class/infiniband_mad (which /dev/infiniband node belongs to which
 * HCA), sys/class/cxi, dev/, etc/ld.so.cache (NVIDIA libraries),
 * proc/sys/kernel/yama/ptrace_scope.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "host/devices.h"
#include "common/error.h"
#include "host/ldcache.h"

static const char *const kind_names[DEVICE_KIND_COUNT] = {
    [DEVICE_IB] = "ib",	      [DEVICE_OPA] = "opa", [DEVICE_KNEM] = "knem",
    [DEVICE_XPMEM] = "xpmem", [DEVICE_CXI] = "cxi", [DEVICE_GPU] = "gpu",
};

const char *device_kind_name(enum device_kind k)
{
	return (unsigned)k < DEVICE_KIND_COUNT ? kind_names[k] : "unknown";
}

/* PCI (or rdma) kernel driver -> the driver name users and verbs know. */
static const struct {
	const char *kernel, *driver;
} kernel_drivers[] = {
    {"mlx5_core", "mlx5"}, {"mlx4_core", "mlx4"},  {"hfi1", "hfi1"},
    {"efa", "efa"},	   {"bnxt_en", "bnxt_re"}, {"irdma", "irdma"},
    {"ice", "irdma"},	   {"i40e", "irdma"},	   {"qede", "qedr"},
    {"cxgb4", "cxgb4"},	   {"qib", "qib"},	   {"vmw_pvrdma", "vmw_pvrdma"},
    {"hns3", "hns"},	   {"mana", "mana"},	   {"erdma", "erdma"},
    {"cxi_core", "cxi"},   {"cxi_ss1", "cxi"},
};

/* NVIDIA driver user-space libraries (matched as NAME or NAME.*) and tools,
 * in the spirit of Apptainer's nvliblist.conf: the driver's own libraries,
 * not the vendor-neutral GL dispatchers an image may ship itself. */
static const char *const nvidia_libs[] = {
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-ml.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-compiler.so",
    "libnvidia-fatbinaryloader.so",
    "libnvidia-cfg.so",
    "libnvidia-allocator.so",
    "libnvidia-pkcs11.so",
    "libnvidia-encode.so",
    "libnvcuvid.so",
    "libnvidia-opticalflow.so",
    "libnvidia-eglcore.so",
    "libnvidia-glcore.so",
    "libnvidia-glsi.so",
    "libnvidia-glvkspirv.so",
    "libnvidia-tls.so",
    "libnvidia-rtcore.so",
    "libnvoptix.so",
    "libnvidia-fbc.so",
    "libnvidia-ifr.so",
    "libEGL_nvidia.so",
    "libGLX_nvidia.so",
    "libGLESv2_nvidia.so",
    "libGLESv1_CM_nvidia.so",
    "libvdpau_nvidia.so",
};
static const char *const nvidia_tools[] = {
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
};
static const char *const tool_dirs[] = {"/usr/bin", "/usr/sbin",
					"/usr/local/bin"};

/* ---- small file helpers -------------------------------------------- */

static const char *root_of(const char *sysroot)
{
	return sysroot && *sysroot ? sysroot : "";
}

static char *under(const char *root, const char *path)
{
	return xasprintf("%s%s", root, path);
}

/* Read a small sysfs attribute, trailing whitespace removed; NULL if it
 * cannot be read. */
static char *read_attr(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static char *read_attr(const char *fmt, ...)
{
	va_list ap;
	cleanup_free char *path = NULL;
	char *s;
	size_t n;

	va_start(ap, fmt);
	path = xvasprintf(fmt, ap);
	va_end(ap);
	s = read_file(path, 4096, &n);
	if (!s)
		return NULL;
	while (n > 0 &&
	       (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* ---- candidates ------------------------------------------------------ */

struct cand {
	char *host_path, *path, *reason;
	enum device_kind kind;
	const char *hca;     /* owning HCA name (points into hcas), or NULL */
	bool default_on;     /* chosen by plain discovery */
	bool need_read_only; /* umad/issm: exposed only when readable */
};

struct disco {
	const char *root;
	bool fake; /* under a sysroot: regular files and fifos accepted */
	struct cand *c;
	size_t nc;
	struct hca *hcas;
	size_t nhcas;
};

/* Does this host path look like a device node we may expose? */
static bool node_ok(const struct disco *ds, const char *host_path, bool dir_ok)
{
	struct stat st;

	if (stat(host_path, &st) < 0)
		return false;
	if (S_ISCHR(st.st_mode))
		return true;
	if (dir_ok && S_ISDIR(st.st_mode))
		return true;
	return ds->fake && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode));
}

/* Add a candidate node (takes reason); NULL when it is not a node we
 * accept or is already listed. */
static struct cand *add_cand(struct disco *ds, const char *path,
			     enum device_kind kind, const char *hca,
			     bool default_on, bool dir_ok, char *reason)
{
	char *host = under(ds->root, path);

	if (!node_ok(ds, host, dir_ok)) {
		free(host);
		free(reason);
		return NULL;
	}
	for (size_t i = 0; i < ds->nc; i++)
		if (strcmp(ds->c[i].path, path) == 0) {
			free(host);
			free(reason);
			return NULL;
		}
	ds->c = xrealloc(ds->c, (ds->nc + 1) * sizeof(*ds->c));
	ds->c[ds->nc++] = (struct cand){
	    .host_path = host,
	    .path = xstrdup(path),
	    .reason = reason,
	    .kind = kind,
	    .hca = hca,
	    .default_on = default_on,
	};
	return &ds->c[ds->nc - 1];
}

static const struct hca *find_hca(const struct disco *ds, const char *name)
{
	for (size_t i = 0; name && i < ds->nhcas; i++)
		if (strcmp(ds->hcas[i].name, name) == 0)
			return &ds->hcas[i];
	return NULL;
}

static bool hca_any_active(const struct disco *ds, const char *name)
{
	for (size_t i = 0; name && i < ds->nhcas; i++)
		if (strcmp(ds->hcas[i].name, name) == 0 && ds->hcas[i].active)
			return true;
	return false;
}

static char *driver_of(const char *root, const char *cls, const char *name)
{
	cleanup_free char *link =
	    xasprintf("%s/sys/class/%s/%s/device/driver", root, cls, name);
	cleanup_free char *target = realpath(link, NULL);
	const char *base;
	size_t n;

	if (target) {
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		for (size_t i = 0; i < ARRAY_SIZE(kernel_drivers); i++)
			if (strcmp(kernel_drivers[i].kernel, base) == 0)
				return xstrdup(kernel_drivers[i].driver);
		return xstrdup(base);
	}
	/* No driver link (soft RoCE, siw, some fake trees): the name's
	 * leading letters and digits before '_' (mlx5_0 -> mlx5). */
	n = strcspn(name, "_");
	if (n == strlen(name))
		while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9')
			n--;
	return xstrndup(name, n ? n : strlen(name));
}

static int numa_of(const char *root, const char *cls, const char *name)
{
	cleanup_free char *s =
	    read_attr("%s/sys/class/%s/%s/device/numa_node", root, cls, name);
	long v;

	if (!s || parse_long(s, -1, 65535, &v) < 0)
		return -1;
	return (int)v;
}

static void scan_hcas(struct disco *ds)
{
	cleanup_free char *cls = under(ds->root, "/sys/class/infiniband");
	cleanup_strv char **names = dir_names(cls);

	for (size_t i = 0; names && names[i]; i++) {
		const char *n = names[i];
		cleanup_free char *pdir = xasprintf("%s/%s/ports", cls, n);
		cleanup_strv char **ports = dir_names(pdir);
		cleanup_free char *driver =
		    driver_of(ds->root, "infiniband", n);
		int numa = numa_of(ds->root, "infiniband", n);

		for (size_t p = 0; ports && ports[p]; p++) {
			cleanup_free char *state =
			    read_attr("%s/%s/state", pdir, ports[p]);
			char *ll =
			    read_attr("%s/%s/link_layer", pdir, ports[p]);
			long port;

			if (parse_long(ports[p], 0, 255, &port) < 0) {
				free(ll);
				continue;
			}
			ds->hcas = xrealloc(ds->hcas, (ds->nhcas + 1) *
							  sizeof(*ds->hcas));
			ds->hcas[ds->nhcas++] = (struct hca){
			    .name = xstrdup(n),
			    .driver = xstrdup(driver),
			    .port = (int)port,
			    .active = state && strstr(state, "ACTIVE"),
			    .link_layer = ll ? ll : xstrdup("Unknown"),
			    .numa_node = numa,
			};
		}
	}
}

static void scan_cxi(struct disco *ds)
{
	cleanup_free char *cls = under(ds->root, "/sys/class/cxi");
	cleanup_strv char **names = dir_names(cls);

	for (size_t i = 0; names && names[i]; i++) {
		ds->hcas =
		    xrealloc(ds->hcas, (ds->nhcas + 1) * sizeof(*ds->hcas));
		ds->hcas[ds->nhcas++] = (struct hca){
		    .name = xstrdup(names[i]),
		    .driver = xstrdup("cxi"),
		    .port = 1,
		    .active = true,
		    .link_layer = xstrdup("Ethernet"),
		    .numa_node = numa_of(ds->root, "cxi", names[i]),
		};
	}
}

/* The HCA behind a /dev/infiniband node, from its sysfs class entry. */
static char *ibdev_of(const char *root, const char *node)
{
	const char *cls = str_has_prefix(node, "uverbs") ? "infiniband_verbs"
							 : "infiniband_mad";
	return read_attr("%s/sys/class/%s/%s/ibdev", root, cls, node);
}

static void scan_infiniband_nodes(struct disco *ds)
{
	cleanup_free char *dir = under(ds->root, "/dev/infiniband");
	cleanup_strv char **nodes = dir_names(dir);
	bool any_active = false;

	for (size_t i = 0; i < ds->nhcas; i++)
		if (ds->hcas[i].active && strcmp(ds->hcas[i].driver, "cxi"))
			any_active = true;
	for (size_t i = 0; nodes && nodes[i]; i++) {
		const char *n = nodes[i];
		cleanup_free char *path = xasprintf("/dev/infiniband/%s", n);
		bool is_mad =
		    str_has_prefix(n, "umad") || str_has_prefix(n, "issm");
		cleanup_free char *ibdev = NULL;
		const struct hca *h;
		enum device_kind kind = DEVICE_IB;
		struct cand *c;
		char *reason;

		if (strcmp(n, "rdma_cm") == 0) {
			add_cand(ds, path, DEVICE_IB, NULL, any_active, false,
				 xstrdup(any_active
					     ? "RDMA connection manager"
					     : "RDMA connection manager, "
					       "no active port"));
			continue;
		}
		if (!str_has_prefix(n, "uverbs") && !is_mad)
			continue;
		ibdev = ibdev_of(ds->root, n);
		h = find_hca(ds, ibdev);
		if (h && strcmp(h->driver, "hfi1") == 0)
			kind = DEVICE_OPA;
		if (is_mad) {
			/* umad/issm are root-only on most sites: a node the
			 * user cannot read would only fail inside. */
			cleanup_free char *host = under(ds->root, path);
			if (access(host, R_OK) < 0) {
				log_debug("devices: '%s' not readable, not "
					  "exposed",
					  path);
				continue;
			}
		}
		if (h && hca_any_active(ds, h->name))
			reason = xasprintf("%s %s, port active",
					   is_mad ? "management for HCA"
						  : "verbs for HCA",
					   h->name);
		else if (h)
			reason = xasprintf("%s %s, no active port",
					   is_mad ? "management for HCA"
						  : "verbs for HCA",
					   h->name);
		else
			reason = xstrdup("no HCA in sysfs");
		c = add_cand(ds, path, kind, h ? h->name : NULL,
			     h && hca_any_active(ds, h->name), false, reason);
		if (c)
			c->need_read_only = is_mad;
	}
}

static void scan_dev_root(struct disco *ds)
{
	cleanup_free char *dir = under(ds->root, "/dev");
	cleanup_strv char **nodes = dir_names(dir);

	for (size_t i = 0; nodes && nodes[i]; i++) {
		const char *n = nodes[i];
		cleanup_free char *path = xasprintf("/dev/%s", n);

		if (str_has_prefix(n, "hfi1_")) {
			const struct hca *h = find_hca(ds, n);
			bool on = h && hca_any_active(ds, n);
			add_cand(ds, path, DEVICE_OPA, h ? h->name : NULL, on,
				 false,
				 xasprintf("Omni-Path HFI %s%s", n,
					   on ? ", port active"
					      : ", no active port"));
		} else if (strcmp(n, "knem") == 0) {
			add_cand(ds, path, DEVICE_KNEM, NULL, true, false,
				 xstrdup("knem single-copy module present"));
		} else if (strcmp(n, "xpmem") == 0) {
			add_cand(ds, path, DEVICE_XPMEM, NULL, true, false,
				 xstrdup("xpmem module present"));
		} else if (str_has_prefix(n, "cxi")) {
			const struct hca *h = find_hca(ds, n);
			add_cand(ds, path, DEVICE_CXI, h ? h->name : NULL, true,
				 false, xasprintf("Slingshot NIC %s", n));
		} else if (str_has_prefix(n, "nvidia")) {
			add_cand(ds, path, DEVICE_GPU, NULL, true, true,
				 xstrdup("NVIDIA GPU driver node"));
		} else if (strcmp(n, "kfd") == 0) {
			add_cand(ds, path, DEVICE_GPU, NULL, true, false,
				 xstrdup("AMD GPU compute (ROCm)"));
		} else if (strcmp(n, "dri") == 0) {
			add_cand(ds, path, DEVICE_GPU, NULL, true, true,
				 xstrdup("GPU render nodes"));
		}
	}
}

/* ---- --devices spec -------------------------------------------------- */

struct selection {
	enum { SEL_DEFAULT, SEL_NONE, SEL_ALL, SEL_LIST } mode;
	bool kinds[DEVICE_KIND_COUNT];
	char **paths;
};

static int parse_spec(const char *spec, struct selection *sel, mpictr_err **err)
{
	cleanup_free char *copy = NULL;
	char *save = NULL;

	*sel = (struct selection){.mode = SEL_DEFAULT};
	if (!spec)
		return 0;
	if (strcmp(spec, "none") == 0) {
		sel->mode = SEL_NONE;
		return 0;
	}
	if (strcmp(spec, "all") == 0) {
		sel->mode = SEL_ALL;
		return 0;
	}
	sel->mode = SEL_LIST;
	copy = xstrdup(spec);
	if (!*copy || copy[strlen(copy) - 1] == ',' || copy[0] == ',' ||
	    strstr(copy, ",,")) {
		return err_set(err, 0,
			       "invalid --devices '%s': empty list "
			       "element",
			       spec);
	}
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		size_t k;

		if (t[0] == '/') {
			if (!str_has_prefix(t, "/dev/") || strstr(t, "/../") ||
			    strstr(t, "/./")) {
				strv_free(sel->paths);
				sel->paths = NULL;
				return err_set(err, 0,
					       "invalid --devices '%s': '%s' "
					       "is not a path under /dev",
					       spec, t);
			}
			strv_push(&sel->paths, t);
			continue;
		}
		for (k = 0; k < DEVICE_KIND_COUNT; k++)
			if (strcmp(t, kind_names[k]) == 0)
				break;
		if (k == DEVICE_KIND_COUNT) {
			strv_free(sel->paths);
			sel->paths = NULL;
			return err_set(err, 0,
				       "invalid --devices '%s': unknown kind "
				       "'%s' (use none, all, or a list of ib, "
				       "opa, knem, xpmem, cxi, gpu and /dev "
				       "paths)",
				       spec, t);
		}
		sel->kinds[k] = true;
	}
	return 0;
}

static bool selected(const struct selection *sel, const struct cand *c,
		     bool gpu)
{
	switch (sel->mode) {
	case SEL_NONE:
		return false;
	case SEL_ALL:
		return c->kind != DEVICE_GPU || gpu;
	case SEL_LIST:
		if (sel->kinds[c->kind])
			return true;
		for (size_t i = 0; sel->paths && sel->paths[i]; i++)
			if (strcmp(sel->paths[i], c->path) == 0)
				return true;
		return false;
	case SEL_DEFAULT:
	default:
		return c->default_on && (c->kind != DEVICE_GPU || gpu);
	}
}

/* ---- ld.so.cache (NVIDIA libraries) -------------------------------- */

static bool lib_wanted(const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(nvidia_libs); i++) {
		size_t n = strlen(nvidia_libs[i]);
		if (strncmp(key, nvidia_libs[i], n) == 0 &&
		    (key[n] == '\0' || key[n] == '.'))
			return true;
	}
	return false;
}

static void add_bind(struct host_devices *d, char *src, char *dst)
{
	d->binds = xrealloc(d->binds, (d->nbinds + 1) * sizeof(*d->binds));
	d->binds[d->nbinds++] = (struct devices_bind){.src = src, .dst = dst};
}

static void gpu_libs(const char *root, struct host_devices *d)
{
	cleanup_free char *path = under(root, "/etc/ld.so.cache");
	cleanup_strv char **keys = NULL;
	cleanup_strv char **vals = NULL;
	mpictr_err *e = NULL;
	bool any = false;

	if (ldcache_read(path, &keys, &vals, &e) < 0) {
		strv_push_own(&d->warnings,
			      xasprintf("--gpu: cannot find the NVIDIA driver "
					"libraries: %s",
					mpictr_err_message(e)));
		mpictr_err_free(e);
	}
	for (size_t i = 0; keys && keys[i]; i++) {
		char *src;

		if (!lib_wanted(keys[i]) || strchr(keys[i], '/'))
			continue;
		/* Cache values are host paths; a fake cache built under the
		 * sysroot already carries it. */
		src = *root && str_has_prefix(vals[i], root)
			  ? xstrdup(vals[i])
			  : under(root, vals[i]);
		if (access(src, R_OK) < 0) {
			free(src);
			continue;
		}
		add_bind(d, src,
			 xasprintf("%s/%s", DEVICES_GPU_LIB_DIR, keys[i]));
		any = true;
	}
	if (any)
		strv_push(&d->lib_dirs, DEVICES_GPU_LIB_DIR);
	else if (keys)
		strv_push_own(&d->warnings,
			      xasprintf("--gpu: no NVIDIA driver library in "
					"'%s' (fix: run ldconfig on the host "
					"after installing the driver)",
					path));
	for (size_t i = 0; i < ARRAY_SIZE(nvidia_tools); i++)
		for (size_t j = 0; j < ARRAY_SIZE(tool_dirs); j++) {
			char *p =
			    xasprintf("%s/%s", tool_dirs[j], nvidia_tools[i]);
			char *src = under(root, p);
			if (access(src, X_OK) == 0) {
				add_bind(d, src, p);
				break;
			}
			free(src);
			free(p);
		}
}

/* ---- preflight ------------------------------------------------------- */

static int read_ptrace_scope(const char *root)
{
	cleanup_free char *s =
	    read_attr("%s/proc/sys/kernel/yama/ptrace_scope", root);
	long v;

	if (!s || parse_long(s, 0, 3, &v) < 0)
		return -1;
	return (int)v;
}

char *devices_memlock_too_low(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return NULL;
	return xasprintf("RLIMIT_MEMLOCK is %llu KiB, too low for RDMA "
			 "memory registration",
			 (unsigned long long)rl.rlim_cur / 1024);
}

/* ---- discovery -------------------------------------------------------- */

static int check_sysroot(const char *sysroot, mpictr_err **err)
{
	struct stat st;

	if (!sysroot || !*sysroot)
		return 0;
	if (sysroot[0] != '/')
		return err_set(err, 0,
			       "invalid MPICTR_SYSROOT '%s': not an "
			       "absolute path",
			       sysroot);
	if (stat(sysroot, &st) < 0)
		return err_set(err, errno, "MPICTR_SYSROOT '%s'", sysroot);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ENOTDIR, "MPICTR_SYSROOT '%s'", sysroot);
	return 0;
}

const char *devices_sysroot(bool user_binds_allowed)
{
	const char *s = getenv("MPICTR_SYSROOT");

	if (!user_binds_allowed || !s || !*s)
		return NULL;
	return s;
}

/* Under a sysroot, the verbs library inside must see the fake sysfs: bind
 * the class directories and the fake PCI trees they link into (each
 * sys/devices/pci* entry, e.g. pci0000:3a); nothing else of the real /sys
 * is hidden (hwloc still reads the real CPU and NUMA topology). */
static void fake_sysfs_binds(const char *root, struct host_devices *d)
{
	static const char *const classes[] = {
	    "/sys/class/infiniband", "/sys/class/infiniband_verbs",
	    "/sys/class/infiniband_mad", "/sys/class/cxi"};
	cleanup_free char *devdir = under(root, "/sys/devices");
	cleanup_strv char **tops = dir_names(devdir);

	for (size_t i = 0; i < ARRAY_SIZE(classes); i++) {
		char *src = under(root, classes[i]);
		if (access(src, R_OK | X_OK) == 0)
			add_bind(d, src, xstrdup(classes[i]));
		else
			free(src);
	}
	for (size_t i = 0; tops && tops[i]; i++) {
		char *src;

		if (!str_has_prefix(tops[i], "pci"))
			continue;
		src = xasprintf("%s/%s", devdir, tops[i]);
		if (access(src, R_OK | X_OK) == 0)
			add_bind(d, src, xasprintf("/sys/devices/%s", tops[i]));
		else
			free(src);
	}
}

/* What the exposed devices call for afterwards. */
struct exposed {
	bool rdma, nvidia, any_gpu;
};

/* Every /dev path named in --devices must be one that was found. */
static int check_named_paths(const struct disco *ds,
			     const struct selection *sel, mpictr_err **err)
{
	for (size_t i = 0; sel->paths && sel->paths[i]; i++) {
		bool found = false;
		for (size_t j = 0; j < ds->nc && !found; j++)
			found = strcmp(ds->c[j].path, sel->paths[i]) == 0;
		if (!found)
			return err_set(err, 0,
				       "--devices: '%s' is not a device found "
				       "on this host (known kinds: ib, opa, "
				       "knem, xpmem, cxi, gpu)",
				       sel->paths[i]);
	}
	return 0;
}

/* Move candidate c into d->devs when selected and accessible (a warning
 * when it is not accessible), and mark its HCA exposed. */
static void expose_candidate(struct disco *ds, struct cand *c,
			     const struct selection *sel, bool gpu,
			     struct host_devices *d, struct exposed *x)
{
	struct stat st;
	const struct device *dev;
	/* Nodes must be usable (read and write); umad/issm readable;
	 * directories (/dev/dri, /dev/nvidia-caps) searchable. */
	int mode = c->need_read_only ? R_OK : R_OK | W_OK;

	if (stat(c->host_path, &st) == 0 && S_ISDIR(st.st_mode))
		mode = R_OK | X_OK;
	if (!selected(sel, c, gpu))
		return;
	if (c->kind == DEVICE_GPU)
		x->any_gpu = true;
	if (access(c->host_path, mode) < 0) {
		strv_push_own(&d->warnings,
			      xasprintf("device '%s' is not accessible (%s) "
					"and is not exposed (fix: ask the "
					"administrator for access, e.g. a "
					"group or udev rule)",
					c->path, strerror(errno)));
		return;
	}
	if (sel->mode == SEL_ALL && !c->default_on) {
		char *r = xasprintf("%s; --devices=all", c->reason);
		free(c->reason);
		c->reason = r;
	} else if (sel->mode == SEL_LIST) {
		char *r = xasprintf("%s; --devices list", c->reason);
		free(c->reason);
		c->reason = r;
	}
	d->devs = xrealloc(d->devs, (d->ndevs + 1) * sizeof(*d->devs));
	d->devs[d->ndevs++] = (struct device){
	    .host_path = steal_ptr(&c->host_path),
	    .path = steal_ptr(&c->path),
	    .kind = c->kind,
	    .reason = steal_ptr(&c->reason),
	};
	dev = &d->devs[d->ndevs - 1];
	if (c->kind == DEVICE_IB || c->kind == DEVICE_OPA ||
	    c->kind == DEVICE_CXI)
		x->rdma = true;
	if (c->kind == DEVICE_GPU && str_has_prefix(dev->path, "/dev/nvidia"))
		x->nvidia = true;
	for (size_t h = 0; c->hca && h < ds->nhcas; h++)
		if (strcmp(ds->hcas[h].name, c->hca) == 0 &&
		    !str_has_prefix(dev->path, "/dev/infiniband/umad") &&
		    !str_has_prefix(dev->path, "/dev/infiniband/issm"))
			ds->hcas[h].exposed = true;
}

/* What the exposed devices need besides their nodes (GPU libraries, the
 * fake sysfs), and the preflight warnings about them. */
static void add_extras(const struct disco *ds, const struct selection *sel,
		       bool gpu, const struct exposed *x,
		       struct host_devices *d)
{
	if (gpu && sel->mode == SEL_NONE)
		strv_push(&d->warnings,
			  "--gpu has no effect with --devices=none");
	else if (gpu && !x->any_gpu)
		strv_push(&d->warnings, "--gpu: no GPU device node found");
	if (gpu && x->nvidia)
		gpu_libs(ds->root, d);
	if (x->rdma && ds->fake)
		fake_sysfs_binds(ds->root, d);
	if (x->rdma) {
		char *m = devices_memlock_too_low();
		if (m)
			strv_push_own(
			    &d->warnings,
			    xasprintf("%s (%s)", m, DEVICES_MEMLOCK_FIX));
		free(m);
	}
	d->ptrace_scope = read_ptrace_scope(ds->root);
	if (d->ptrace_scope >= 1)
		strv_push_own(
		    &d->warnings,
		    xasprintf("Yama ptrace_scope is %d, which blocks "
			      "CMA (process_vm_readv) between sibling "
			      "ranks (%s)",
			      d->ptrace_scope, DEVICES_PTRACE_FIX));
}

/* The candidates (what expose_candidate did not take). */
static void cands_free(struct disco *ds)
{
	for (size_t i = 0; i < ds->nc; i++) {
		free(ds->c[i].host_path);
		free(ds->c[i].path);
		free(ds->c[i].reason);
	}
	free(ds->c);
}

int devices_discover(const char *sysroot, const char *spec, bool gpu,
		     struct host_devices *out, mpictr_err **err)
{
	struct disco ds = {.root = root_of(sysroot)};
	struct selection sel;
	struct host_devices d = {.ptrace_scope = -1};
	struct exposed x = {false, false, false};

	ds.fake = *ds.root != '\0';
	if (check_sysroot(sysroot, err) < 0 || parse_spec(spec, &sel, err) < 0)
		return -1;
	scan_hcas(&ds);
	scan_cxi(&ds);
	scan_infiniband_nodes(&ds);
	scan_dev_root(&ds);
	if (check_named_paths(&ds, &sel, err) < 0) {
		cands_free(&ds);
		d.hcas = ds.hcas;
		d.nhcas = ds.nhcas;
		host_devices_free(&d);
		strv_free(sel.paths);
		return -1;
	}
	for (size_t i = 0; i < ds.nc; i++)
		expose_candidate(&ds, &ds.c[i], &sel, gpu, &d, &x);
	d.hcas = steal_ptr(&ds.hcas);
	d.nhcas = ds.nhcas;
	add_extras(&ds, &sel, gpu, &x, &d);
	cands_free(&ds);
	strv_free(sel.paths);
	*out = d;
	return 0;
}

void host_devices_copy(struct host_devices *to, const struct host_devices *from)
{
	*to = *from;
	to->devs = xcalloc(from->ndevs + 1, sizeof(*to->devs));
	for (size_t i = 0; i < from->ndevs; i++)
		to->devs[i] = (struct device){
		    .host_path = xstrdup(from->devs[i].host_path),
		    .path = xstrdup(from->devs[i].path),
		    .kind = from->devs[i].kind,
		    .reason = xstrdup(from->devs[i].reason),
		};
	to->hcas = xcalloc(from->nhcas + 1, sizeof(*to->hcas));
	for (size_t i = 0; i < from->nhcas; i++) {
		to->hcas[i] = from->hcas[i];
		to->hcas[i].name = xstrdup(from->hcas[i].name);
		to->hcas[i].driver = xstrdup(from->hcas[i].driver);
		to->hcas[i].link_layer = from->hcas[i].link_layer
					     ? xstrdup(from->hcas[i].link_layer)
					     : NULL;
	}
	to->binds = xcalloc(from->nbinds + 1, sizeof(*to->binds));
	for (size_t i = 0; i < from->nbinds; i++)
		to->binds[i] = (struct devices_bind){
		    .src = xstrdup(from->binds[i].src),
		    .dst = xstrdup(from->binds[i].dst),
		};
	to->lib_dirs = strv_dup(from->lib_dirs);
	to->warnings = strv_dup(from->warnings);
}

void host_devices_free(struct host_devices *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ndevs; i++) {
		free(d->devs[i].host_path);
		free(d->devs[i].path);
		free(d->devs[i].reason);
	}
	free(d->devs);
	for (size_t i = 0; i < d->nhcas; i++) {
		free(d->hcas[i].name);
		free(d->hcas[i].driver);
		free(d->hcas[i].link_layer);
	}
	free(d->hcas);
	for (size_t i = 0; i < d->nbinds; i++) {
		free(d->binds[i].src);
		free(d->binds[i].dst);
	}
	free(d->binds);
	strv_free(d->lib_dirs);
	strv_free(d->warnings);
	*d = (struct host_devices){.ptrace_scope = -1};
}
