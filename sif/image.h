/* image.h - what kind of image a path is, and where its squashfs lives. */
#ifndef MPICTR_IMAGE_H
#define MPICTR_IMAGE_H

#include <stdint.h>

#include "mpictr.h"

enum image_kind { IMAGE_DIR, IMAGE_SQUASHFS, IMAGE_SIF };

struct image_info {
	enum image_kind kind;
	char *path;         /* absolute, realpath */
	uint64_t offset;    /* squashfs location in the file; 0 for DIR */
	uint64_t size;      /* squashfs size; 0 for DIR */
	int compression;    /* squashfs compressor id, 0 for DIR */
	char *arch;         /* SIF partition arch name ("amd64"), else NULL */
};

/* Detect the image kind (by content, not name) and check what running
 * needs. Fills *info (release with image_info_free). */
int image_probe(const char *path, struct image_info *info, mpictr_err **err);
void image_info_free(struct image_info *info);

#endif
