/* sqfs.h - the squashfs writer of `mpictr pull`, on libsquashfs's public
 * API (block processor, meta/dir/xattr writers, id and fragment tables).
 * The image is written straight into an open file at an offset (the SIF
 * partition), file data while the layers are merged, the tables and the
 * superblock at the end by sqw_finish() from a struct tree. */
#ifndef MPICTR_PULL_SQFS_H
#define MPICTR_PULL_SQFS_H

#include <stdint.h>

#include "common/error.h"
#include "pull/tree.h"

struct sqw;

/* Start a zstd (level, 0 = 3) squashfs in fd at offset base. */
int sqw_open(int fd, uint64_t base, int level, const char *name,
	     struct sqw **out, mpictr_err **err);
/* One regular file: begin (n->inode is filled in by the block
 * processor), append its bytes, end. */
int sqw_file_begin(struct sqw *w, struct node *n, mpictr_err **err);
int sqw_file_append(struct sqw *w, const void *buf, size_t len,
		    mpictr_err **err);
int sqw_file_end(struct sqw *w, mpictr_err **err);
/* Write the inodes, directories, tables and superblock of t; *size is
 * the length of the squashfs (padded to 4 KiB). */
int sqw_finish(struct sqw *w, struct tree *t, int64_t mtime, uint64_t *size,
	       mpictr_err **err);
void sqw_free(struct sqw *w);

#endif
