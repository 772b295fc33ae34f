/* verbs.h - the RDMA verbs providers (rdma-core's etc/libibverbs.d/<p>.driver
 * and lib<p>-rdmav*.so): which one a driver needs, whether the image has
 * it, and with --inject-verbs the host's to bind in.
 */
#ifndef MPICTR_VERBS_H
#define MPICTR_VERBS_H

#include <stdbool.h>
#include <stddef.h>

#include "host/devices.h"
#include "mpictr.h"

/* Check the image's verbs providers (image_root: the mounted rootfs)
 * against the drivers of the exposed HCAs. For each driver without a
 * provider (etc/libibverbs.d/<p>.driver plus lib<p>-rdmav*.so) appends one
 * warning line to *warnings naming the driver and the fix (--inject-verbs).
 * With inject, appends the host's driver file and provider library to
 * *binds (count in *nbinds) instead (a warning when the host lacks them too or
 * their ABI suffix differs from the image's). Returns 0, or -1 with *err when
 * image_root cannot be read. */
int verbs_check(const struct host_devices *d, const char *sysroot,
		const char *image_root, bool inject, char ***warnings,
		struct devices_bind **binds, size_t *nbinds, mpictr_err **err);

/* What a root (the host's, or an image's) holds of rdma-core's verbs
 * providers, as the decision below needs it. */
struct verbs_tree {
	char **drivers; /* names in /etc/libibverbs.d */
	char **libs;	/* provider libraries "DIR/lib<p>-rdmav<N>.so" in the
			   known provider dirs, in search order */
	char *lib_dir;	/* the first known provider dir that exists */
};
struct image_reader;
/* Read the tree of the root r reads. readable_root, when not NULL, is
 * where those paths are on this host ("" for /): only files readable
 * there are kept (the host side, whose files get bound). */
int verbs_tree_read(struct image_reader *r, const char *readable_root,
		    struct verbs_tree *t, mpictr_err **err);
void verbs_tree_copy(struct verbs_tree *to, const struct verbs_tree *from);
void verbs_tree_free(struct verbs_tree *t);
/* The decision itself (pure): for each exposed HCA whose provider img
 * lacks, a warning line, or with inject the host's driver file and
 * provider library (paths under sysroot) to bind (or a warning when the
 * host lacks them too or their ABI differs from the image's). */
void verbs_decide(const struct host_devices *d, const struct verbs_tree *host,
		  const char *sysroot, const struct verbs_tree *img,
		  bool inject, char ***warnings, struct devices_bind **binds,
		  size_t *nbinds);

/* The verbs provider name for a driver (mlx5 -> "mlx5", hfi1 ->
 * "hfi1verbs"), NULL for non-verbs drivers (cxi). Static storage. */
const char *verbs_provider(const char *driver);

#endif
