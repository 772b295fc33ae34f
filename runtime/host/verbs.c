/* verbs.c - the image's RDMA verbs providers against the host's HCAs
 * (verbs.h). Reads, relative to the image root or the sysroot:
 * etc/libibverbs.d and the provider library directories.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "host/imgread.h"
#include "common/util.h"
#include "host/verbs.h"

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

static bool is_provider_lib(const char *name)
{
	size_t len = strlen(name);

	return strstr(name, "-rdmav") && len >= 3 &&
	       strcmp(name + len - 3, ".so") == 0;
}

/* Keep a path relative to the root when it is readable there (the host's
 * files: those that can be bound). */
static bool readable(const char *root, const char *rel)
{
	cleanup_free char *p = root ? under(root, rel) : NULL;

	return !p || access(p, R_OK) == 0;
}

int verbs_tree_read(struct image_reader *r, const char *readable_root,
		    struct verbs_tree *t, mpictr_err **err)
{
	cleanup_strv char **drv = NULL;
	mpictr_err *e = NULL;

	memset(t, 0, sizeof(*t));
	if (image_reader_list(r, "/etc/libibverbs.d", &drv, &e) < 0 &&
	    mpictr_err_errno(e) != ENOENT && mpictr_err_errno(e) != ENOTDIR) {
		*err = e;
		return -1;
	}
	mpictr_err_free(e);
	for (size_t i = 0; drv && drv[i]; i++) {
		cleanup_free char *rel =
		    xasprintf("/etc/libibverbs.d/%s", drv[i]);
		if (readable(readable_root, rel))
			strv_push(&t->drivers, drv[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(verbs_lib_dirs); i++) {
		cleanup_strv char **names = NULL;

		if (image_reader_list(r, verbs_lib_dirs[i], &names, NULL) < 0)
			continue;
		if (!t->lib_dir)
			t->lib_dir = xstrdup(verbs_lib_dirs[i]);
		strv_sort(names, true);
		for (size_t j = 0; names && names[j]; j++) {
			cleanup_free char *rel =
			    xasprintf("%s/%s", verbs_lib_dirs[i], names[j]);
			if (is_provider_lib(names[j]) &&
			    readable(readable_root, rel))
				strv_push(&t->libs, rel);
		}
	}
	return 0;
}

void verbs_tree_copy(struct verbs_tree *to, const struct verbs_tree *from)
{
	to->drivers = from->drivers ? strv_dup(from->drivers) : NULL;
	to->libs = from->libs ? strv_dup(from->libs) : NULL;
	to->lib_dir = from->lib_dir ? xstrdup(from->lib_dir) : NULL;
}

void verbs_tree_free(struct verbs_tree *t)
{
	strv_free(t->drivers);
	strv_free(t->libs);
	free(t->lib_dir);
	memset(t, 0, sizeof(*t));
}

/* The provider library of prov in t ("DIR/NAME"), or NULL; *abi (when not
 * NULL and still NULL) gets the ABI of the first provider library of t. */
static const char *provider_lib(const struct verbs_tree *t, const char *prov,
				char **abi)
{
	cleanup_free char *prefix = xasprintf("lib%s-rdmav", prov);

	if (abi && !*abi && t->libs && t->libs[0])
		*abi = abi_of(t->libs[0]);
	for (size_t i = 0; t->libs && t->libs[i]; i++)
		if (str_has_prefix(strrchr(t->libs[i], '/') + 1, prefix))
			return t->libs[i];
	return NULL;
}

/* What --inject-verbs binds for prov, or a warning. */
static void inject_one(const struct hca *h, const char *prov,
		       const struct verbs_tree *host, const char *root,
		       const struct verbs_tree *img, const char *img_abi,
		       char ***warnings, struct devices_bind **binds,
		       size_t *nbinds)
{
	cleanup_free char *drv = xasprintf("%s.driver", prov);
	cleanup_free char *drv_rel = xasprintf("/etc/libibverbs.d/%s", drv);
	const char *host_lib = provider_lib(host, prov, NULL);
	cleanup_free char *host_abi = NULL;

	if (!strv_contains(host->drivers, drv) || !host_lib) {
		strv_push_own(warnings,
			      xasprintf("--inject-verbs: the host has no verbs "
					"provider for driver %s either (%s, "
					"lib%s-rdmav*.so) (fix: install "
					"rdma-core's providers on the host or "
					"in the image)",
					h->driver, drv_rel, prov));
		return;
	}
	host_abi = abi_of(host_lib);
	if (img_abi && strcmp(img_abi, host_abi) != 0) {
		strv_push_own(warnings,
			      xasprintf("--inject-verbs: host provider '%s' "
					"does not match the image's libibverbs "
					"ABI %s; not injected (fix: install "
					"the provider for driver %s in the "
					"image)",
					host_lib, img_abi, h->driver));
		return;
	}
	*binds = xrealloc(*binds, (*nbinds + 2) * sizeof(**binds));
	(*binds)[(*nbinds)++] = (struct devices_bind){
	    .src = under(root, drv_rel),
	    .dst = xstrdup(drv_rel),
	};
	(*binds)[(*nbinds)++] = (struct devices_bind){
	    .src = under(root, host_lib),
	    .dst = img->lib_dir ? xasprintf("%s/%s", img->lib_dir,
					    strrchr(host_lib, '/') + 1)
				: xstrdup(host_lib),
	};
}

void verbs_decide(const struct host_devices *d, const struct verbs_tree *host,
		  const char *sysroot, const struct verbs_tree *img,
		  bool inject, char ***warnings, struct devices_bind **binds,
		  size_t *nbinds)
{
	const char *root = sysroot && *sysroot ? sysroot : "";
	cleanup_strv char **done = NULL;

	for (size_t i = 0; i < d->nhcas; i++) {
		const struct hca *h = &d->hcas[i];
		const char *prov = verbs_provider(h->driver);
		cleanup_free char *drv = NULL, *img_abi = NULL;
		const char *img_lib;

		if (!h->exposed || !prov || strv_contains(done, prov))
			continue;
		strv_push(&done, prov);
		drv = xasprintf("%s.driver", prov);
		img_lib = provider_lib(img, prov, &img_abi);
		if (strv_contains(img->drivers, drv) && img_lib)
			continue;
		if (inject) {
			inject_one(h, prov, host, root, img, img_abi, warnings,
				   binds, nbinds);
			continue;
		}
		strv_push_own(
		    warnings,
		    xasprintf("host HCA %s uses driver %s but the "
			      "image has no verbs provider for it "
			      "(/etc/libibverbs.d/%s, lib%s-rdmav*.so)"
			      ", so RDMA will not work (fix: install "
			      "the provider in the image, e.g. "
			      "ibverbs-providers or rdma-core, or "
			      "run with --inject-verbs)",
			      h->name, h->driver, drv, prov));
	}
}

int verbs_check(const struct host_devices *d, const char *sysroot,
		const char *image_root, bool inject, char ***warnings,
		struct devices_bind **binds, size_t *nbinds, mpictr_err **err)
{
	const char *root = sysroot && *sysroot ? sysroot : "/";
	struct image_reader *ir = NULL, *hr = NULL;
	struct verbs_tree img = {0}, host = {0};
	int rc = -1;

	if (!image_root || image_reader_open_dir(image_root, &ir, NULL) < 0)
		return err_set(err, image_root ? errno : EINVAL,
			       "check verbs providers in image root '%s'",
			       image_root ? image_root : "(null)");
	if (verbs_tree_read(ir, NULL, &img, err) < 0)
		goto out;
	if (image_reader_open_dir(root, &hr, NULL) == 0 &&
	    verbs_tree_read(hr, sysroot && *sysroot ? sysroot : "", &host,
			    NULL) < 0)
		verbs_tree_free(&host);
	verbs_decide(d, &host, sysroot, &img, inject, warnings, binds, nbinds);
	rc = 0;
out:
	image_reader_close(ir);
	image_reader_close(hr);
	verbs_tree_free(&img);
	verbs_tree_free(&host);
	return rc;
}
