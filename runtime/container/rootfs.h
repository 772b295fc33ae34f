/* rootfs.h - execute a plan's mount operations: assemble the container's
 * root inside the (already created) private mount namespace. */
#ifndef MPICTR_BINDM_H
#define MPICTR_BINDM_H

#include "plan/plan.h"

struct squash_mount;

/* Runs in the holder, after ns_create(). On success the holder's root is
 * the container root, every planned mount is in place, nothing of the host
 * is reachable except through planned binds, and *sq holds the image's
 * FUSE mount (NULL for directory images) whose workers the holder owns.
 * nworkers: FUSE worker processes for squashfs images. image_fd: the
 * image file already opened (the one the signature policy verified), or
 * -1 to open the plan's path. */
/* In a writable container's root: the mount points made where the image
 * lacked them (one absolute path a line), which `instance save` leaves
 * out. */
#define ROOTFS_MP_LIST ".mpictr-mountpoints"

int rootfs_build(const struct plan *p, int nworkers, int image_fd,
		 struct squash_mount **sq, mpictr_err **err);

#endif
