/* imgread.h - read an image's files before (or without) mounting it: a
 * directory image through descriptors below its root, a squashfs or SIF
 * image through the squash plugin (libsquashfuse, never mounted). Paths
 * are resolved inside the image (symlinks followed with the image root as
 * "/", ".." never above it); sizes and counts are bounded; errors name the
 * image and the path. Used by the facts pass (facts.c) and, on the
 * mounted image, by the holder.
 */
#ifndef MPICTR_IMGREAD_H
#define MPICTR_IMGREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sif/image.h"
#include "mpictr.h"

/* Most entries a directory listing returns (more: E2BIG). */
#define IMGREAD_MAX_ENTRIES 65536
/* Most bytes one read of a squashfs or SIF image returns. */
#define IMGREAD_MAX_DATA (64u << 20)
/* How long the reader of a squashfs or SIF image may take to answer. */
#define IMGREAD_TIMEOUT_MS 60000

struct image_reader;

/* Open img for reading (img->path: its real path). A squashfs or SIF
 * image is read by a child process (the reader: libsquashfuse runs
 * there, never in the caller); one per open image, reaped by
 * image_reader_close. -1 with *err when the image cannot be read. A
 * reader that dies (a crash in libsquashfuse: a corrupt image) or does
 * not answer within IMGREAD_TIMEOUT_MS, or a read that fails with EIO
 * (a corrupt block), leaves r broken, at open or later: every call then
 * fails with the error image_reader_broken gives. Not for use across
 * fork. */
int image_reader_open(const struct image_info *img, struct image_reader **r,
		      mpictr_err **err);
/* Is r broken (see image_reader_open)? Then true, with the error
 * ("image 'X': reading the squashfs image failed (the reader was killed
 * by SIGSEGV): the image is corrupt") in *err when err is not NULL. */
bool image_reader_broken(const struct image_reader *r, mpictr_err **err);
/* A directory tree already on the host (a directory image, or the mounted
 * image in the holder); name is for messages. */
int image_reader_open_dir(const char *root, struct image_reader **r,
			  mpictr_err **err);
/* The names in directory path, sorted bytewise, without those starting
 * with '.'. A missing directory is -1 with errno ENOENT in *err. */
int image_reader_list(struct image_reader *r, const char *path, char ***names,
		      mpictr_err **err);
/* The mode and size (regular files) of path, and (canon, when not NULL)
 * the path inside the image it resolves to, malloc'ed. */
int image_reader_stat(struct image_reader *r, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err);
/* n bytes at off of the regular file path (all of them, or an error). */
int image_reader_pread(struct image_reader *r, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err);
/* The regular file path whole, NUL-terminated, at most max bytes. */
int image_reader_read(struct image_reader *r, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err);
/* Does path exist in the image (symlinks followed)? */
bool image_reader_exists(struct image_reader *r, const char *path);
void image_reader_close(struct image_reader *r);

#endif
