/* verbs.c - the image's RDMA verbs providers against the host's HCAs
 * (verbs.h). Reads, relative to the image root or the sysroot:
 * etc/libibverbs.d and the provider library directories.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "util.h"
#include "verbs.h"

/* root + path, root "" for the real system (malloc'ed). */
static char *under(const char *root, const char *path)
{
	return xasprintf("%s%s", root, path);
}

/* driver -> rdma-core provider (etc/libibverbs.d/<p>.driver, lib<p>-rdmav*.so)
 */
static const struct {
	const char *driver, *provider;
} verbs_providers[] = {
    {"mlx5", "mlx5"},	   {"mlx4", "mlx4"},
    {"hfi1", "hfi1verbs"}, {"qib", "ipathverbs"},
    {"efa", "efa"},	   {"bnxt_re", "bnxt_re"},
    {"irdma", "irdma"},	   {"qedr", "qedr"},
    {"cxgb4", "cxgb4"},	   {"vmw_pvrdma", "vmw_pvrdma"},
    {"hns", "hns"},	   {"mana", "mana"},
    {"erdma", "erdma"},	   {"rxe", "rxe"},
    {"siw", "siw"},	   {"ocrdma", "ocrdma"},
};

const char *verbs_provider(const char *driver)
{
	for (size_t i = 0; driver && i < ARRAY_SIZE(verbs_providers); i++)
		if (strcmp(verbs_providers[i].driver, driver) == 0)
			return verbs_providers[i].provider;
	return NULL;
}

/* Where distributions put verbs providers (relative to a root). */
static const char *const verbs_lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu/libibverbs",
    "/usr/lib/aarch64-linux-gnu/libibverbs",
    "/usr/lib/powerpc64le-linux-gnu/libibverbs",
    "/usr/lib64/libibverbs",
    "/usr/lib/libibverbs",
    "/lib/x86_64-linux-gnu/libibverbs",
    "/lib64/libibverbs",
};

/* "rdmav34" out of ".../libmlx5-rdmav34.so" (malloc'ed). */
static char *abi_of(const char *lib)
{
	const char *r = strstr(lib, "-rdmav");
	size_t n;

	if (!r)
		return xstrdup("");
	n = strlen(r + 1);
	if (n >= 3 && strcmp(r + 1 + n - 3, ".so") == 0)
		n -= 3;
	return xstrndup(r + 1, n);
}

/* Find lib<prov>-rdmav*.so under root in the provider dirs. Returns the
 * path relative to root (malloc'ed) or NULL; *abi gets the "rdmavNN" part
 * of any provider found in the first dir holding providers (for the ABI
 * comparison), when abi is not NULL. */
static char *find_provider_lib(const char *root, const char *prov, char **abi)
{
	cleanup_free char *prefix = xasprintf("lib%s-", prov);

	for (size_t i = 0; i < ARRAY_SIZE(verbs_lib_dirs); i++) {
		cleanup_free char *dir = under(root, verbs_lib_dirs[i]);
		cleanup_strv char **names = dir_names(dir);

		for (size_t j = 0; names && names[j]; j++) {
			const char *n = names[j];
			const char *r = strstr(n, "-rdmav");
			size_t len = strlen(n);

			if (!r || len < 3 || strcmp(n + len - 3, ".so") != 0)
				continue;
			if (abi && !*abi)
				*abi = abi_of(n);
			if (str_has_prefix(n, prefix) &&
			    strncmp(n + strlen(prefix), "rdmav", 5) == 0)
				return xasprintf("%s/%s", verbs_lib_dirs[i], n);
		}
	}
	return NULL;
}

/* The first provider dir that exists under root, relative (static). */
static const char *provider_dir(const char *root)
{
	for (size_t i = 0; i < ARRAY_SIZE(verbs_lib_dirs); i++) {
		cleanup_free char *dir = under(root, verbs_lib_dirs[i]);
		struct stat st;
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
			return verbs_lib_dirs[i];
	}
	return NULL;
}

int verbs_check(const struct host_devices *d, const char *sysroot,
		const char *image_root, bool inject, char ***warnings,
		struct devices_bind **binds, size_t *nbinds, mpictr_err **err)
{
	const char *root = sysroot && *sysroot ? sysroot : "";
	cleanup_strv char **done = NULL;
	struct stat st;

	if (!image_root || stat(image_root, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(err,
			       image_root ? errno ? errno : ENOTDIR : EINVAL,
			       "check verbs providers in image root '%s'",
			       image_root ? image_root : "(null)");
	for (size_t i = 0; i < d->nhcas; i++) {
		const struct hca *h = &d->hcas[i];
		const char *prov = verbs_provider(h->driver);
		cleanup_free char *drv_rel = NULL, *drv_img = NULL;
		cleanup_free char *img_lib = NULL, *img_abi = NULL;

		if (!h->exposed || !prov || strv_contains(done, prov))
			continue;
		strv_push(&done, prov);
		drv_rel = xasprintf("/etc/libibverbs.d/%s.driver", prov);
		drv_img = under(image_root, drv_rel);
		img_lib = find_provider_lib(image_root, prov, &img_abi);
		if (lstat(drv_img, &st) == 0 && img_lib)
			continue;
		if (!inject) {
			strv_push_own(
			    warnings,
			    xasprintf("host HCA %s uses driver %s but "
				      "the image has no verbs provider "
				      "for it (%s, lib%s-rdmav*.so), "
				      "so RDMA will not work (fix: "
				      "install the provider in the "
				      "image, e.g. ibverbs-providers "
				      "or rdma-core, or run with "
				      "--inject-verbs)",
				      h->name, h->driver, drv_rel, prov));
			continue;
		}
		cleanup_free char *host_drv = under(root, drv_rel);
		cleanup_free char *host_lib =
		    find_provider_lib(root, prov, NULL);
		cleanup_free char *host_lib_path =
		    host_lib ? under(root, host_lib) : NULL;
		if (access(host_drv, R_OK) < 0 || !host_lib ||
		    access(host_lib_path, R_OK) < 0) {
			strv_push_own(
			    warnings,
			    xasprintf("--inject-verbs: the host has "
				      "no verbs provider for driver "
				      "%s either (%s, lib%s-rdmav*.so)"
				      " (fix: install rdma-core's "
				      "providers on the host or in "
				      "the image)",
				      h->driver, drv_rel, prov));
			continue;
		}
		cleanup_free char *host_abi = abi_of(host_lib);
		if (img_abi && strcmp(img_abi, host_abi) != 0) {
			strv_push_own(
			    warnings,
			    xasprintf("--inject-verbs: host provider "
				      "'%s' does not match the image's "
				      "libibverbs ABI %s; not injected "
				      "(fix: install the provider for "
				      "driver %s in the image)",
				      host_lib, img_abi, h->driver));
			continue;
		}
		const char *dst_dir = provider_dir(image_root);
		const char *base = strrchr(host_lib, '/') + 1;
		*binds = xrealloc(*binds, (*nbinds + 2) * sizeof(**binds));
		(*binds)[(*nbinds)++] = (struct devices_bind){
		    .src = xstrdup(host_drv),
		    .dst = xstrdup(drv_rel),
		};
		(*binds)[(*nbinds)++] = (struct devices_bind){
		    .src = under(root, host_lib),
		    .dst = dst_dir ? xasprintf("%s/%s", dst_dir, base)
				   : xstrdup(host_lib),
		};
	}
	return 0;
}
