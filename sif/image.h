/* image.h - what kind of image a path is, and where its squashfs lives.
 *
 * image_probe() is what the runtime calls before mounting: it detects a SIF
 * by its magic (not its name), a plain squashfs by its superblock magic, or
 * a directory, and checks what running needs (one primary squashfs
 * partition for this host's architecture, a compressor that Debian's
 * libsquashfuse supports). Errors name the file and the field.
 */
#ifndef MPICTR_IMAGE_H
#define MPICTR_IMAGE_H

#include <stdint.h>

#include "common/error.h"

enum image_kind { IMAGE_DIR, IMAGE_SQUASHFS, IMAGE_SIF };

struct image_info {
	enum image_kind kind;
	char *path;	 /* absolute, realpath */
	uint64_t offset; /* squashfs location in the file; 0 for DIR */
	uint64_t size;	 /* squashfs bytes (partition size, or file size) */
	int compression; /* squashfs compressor id, 0 for DIR */
	char *arch;	 /* SIF partition arch name ("amd64"), NULL otherwise */
	/* A SIF's JSON.Generic "oci-config.json" (the image config `mpictr
	 * pull` writes), size 0 when it has none. */
	uint64_t oci_config_offset, oci_config_size;
	/* Its bytes, read in the probe's one open (oci_config_size of them,
	 * NUL-terminated), or NULL: none, larger than IMAGE_OCI_CONFIG_MAX
	 * (not read), or the read failed (oci_config_errno). */
	char *oci_config;
	int oci_config_errno;
};
#define IMAGE_OCI_CONFIG_MAX (1u << 20)

/* Squashfs compressor ids (superblock field "compression"). */
enum {
	SQUASHFS_COMP_GZIP = 1,
	SQUASHFS_COMP_LZMA = 2,
	SQUASHFS_COMP_LZO = 3,
	SQUASHFS_COMP_XZ = 4,
	SQUASHFS_COMP_LZ4 = 5,
	SQUASHFS_COMP_ZSTD = 6,
};
#define SQUASHFS_SUPERBLOCK_SIZE 96

/* Probe path. On success fills *info (release with image_info_free()) and
 * returns 0; otherwise -1 with *err. */
int image_probe(const char *path, struct image_info *info, mpictr_err **err);
/* The same for an open regular file (SIF or squashfs); name is for
 * messages and info->path is left NULL. */
int image_probe_fd(int fd, const char *name, struct image_info *info,
		   mpictr_err **err);
void image_info_free(struct image_info *info);
/* A deep copy of from into *to (release with image_info_free()). */
void image_info_copy(struct image_info *to, const struct image_info *from);

/* The superblock fields the checks read. */
struct squashfs_super {
	unsigned compression, major, minor;
	uint64_t bytes_used;
};
/* What image_squashfs_super() found: the first problem, in this order. */
enum squashfs_verdict {
	SQUASHFS_OK,
	SQUASHFS_SHORT,	     /* avail is less than a superblock */
	SQUASHFS_READ_ERROR, /* the read failed; errno says why */
	SQUASHFS_NO_MAGIC,   /* not "hsqs" */
	SQUASHFS_BAD_VERSION,
	SQUASHFS_TRUNCATED, /* bytes_used is larger than avail */
};
/* Read the squashfs superblock at offset in fd, with avail bytes belonging
 * to it, into *sb (the fields read so far; zero before), and check what
 * does not depend on who mounts it: size, magic, version 4.0, bytes_used
 * within avail. The compressor is the caller's to judge: this file
 * (image_check_squashfs) by the list libsquashfuse builds support, the
 * squash plugin by asking libsquashfuse itself. One pread; no messages,
 * so that both can word theirs (docs/sif.md, docs/mount.md). */
enum squashfs_verdict image_squashfs_super(int fd, uint64_t offset,
					   uint64_t avail,
					   struct squashfs_super *sb);
/* image_squashfs_super, then a supported compressor, with errors that
 * name the image: magic, version 4.0, a supported compressor, bytes_used
 * within avail. where names the location in messages ("squashfs",
 * "primary partition (id 2)"). Stores the compressor id in *comp. */
int image_check_squashfs(int fd, uint64_t offset, uint64_t avail,
			 const char *name, const char *where, int *comp,
			 mpictr_err **err);
/* Name of a squashfs compressor id ("gzip"), NULL for an unknown id. */
const char *image_compression_name(unsigned comp);
/* May this host run binaries of SIF architecture arch ("amd64")? */
int image_arch_runnable(const char *arch);

#endif
