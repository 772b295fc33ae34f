/* sif_write.h - helpers of the SIF writer shared with sif_api.c. */
#ifndef MPICTR_SIF_WRITE_H
#define MPICTR_SIF_WRITE_H

#include <sys/types.h>

#include "common/error.h"

/* Pack dir into the squashfs file out with mksquashfs (gzip, owners kept;
 * $MPICTR_MKSQUASHFS overrides the program). */
int sif_mksquashfs(const char *dir, const char *out, mpictr_err **err);
/* Create "<dir of target>/.<base>.<tag>.<random>" with O_EXCL and mode;
 * *tmp receives the name (caller frees). Returns the fd or -1. */
int sif_open_temp(const char *target, const char *tag, mode_t mode, char **tmp,
		  mpictr_err **err);

#endif
