/* sif_write.h - helpers of the SIF writer shared with sif_api.c. */
#ifndef MPICTR_SIF_WRITE_H
#define MPICTR_SIF_WRITE_H

#include <sys/types.h>

#include "common/error.h"

/* Pack dir into the squashfs file out with mksquashfs (gzip, owners kept;
 * $MPICTR_MKSQUASHFS overrides the program). */
/* Where sif_mksquashfs relays mksquashfs's progress bar (text as it
 * comes, with its \r), or NULL: quiet. */
typedef mpictr_sif_progress_fn sif_progress_fn;
int sif_mksquashfs(const char *dir, const char *out, sif_progress_fn progress,
		   void *data, mpictr_err **err);
/* The same; mksquashfs inherits no descriptor but its stdio and keep_fd
 * (when >= 0: a directory dir names as /proc/self/fd/N). */
int sif_mksquashfs_keep(const char *dir, const char *out, int keep_fd,
			sif_progress_fn progress, void *data, mpictr_err **err);
/* Create "<dir of target>/.<base>.<tag>.<random>" with O_EXCL and mode;
 * *tmp receives the name (caller frees). Returns the fd or -1. */
int sif_open_temp(const char *target, const char *tag, mode_t mode, char **tmp,
		  mpictr_err **err);

#endif
