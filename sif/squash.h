/* squash.h - mount a squashfs image with libsquashfuse in-process. */
#ifndef MPICTR_SQUASH_H
#define MPICTR_SQUASH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpictr.h"

struct squash_mount;
int squash_mount(const char *image, uint64_t offset, const char *mountpoint,
		 int nworkers, struct squash_mount **out, mpictr_err **err);
int squash_umount(struct squash_mount *m, mpictr_err **err);
size_t squash_worker_pids(const struct squash_mount *m, const pid_t **pids);

#endif
