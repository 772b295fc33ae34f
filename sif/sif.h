/* sif.h - the SIF (Singularity/Apptainer Image Format) reader and writer.
 *
 * The on-disk format is described in docs/sif.md (field tables, writer
 * layout). The reader works on a file descriptor and checks every offset
 * and size against the file size before anything is used, so a loaded
 * struct sif_image can be trusted by the rest of mpictr: objects lie inside
 * the file, do not overlap each other or the header and descriptor table,
 * IDs are unique and non-zero, and there is at most one primary partition.
 * Errors name the file and the field ("sif 'x.sif': descriptor 3 (id 3):
 * ...").
 */
#ifndef MPICTR_SIF_H
#define MPICTR_SIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SIF_HEADER_SIZE 128
#define SIF_DESC_SIZE 585
#define SIF_EXTRA_SIZE 384
#define SIF_NAME_SIZE 128
#define SIF_LAUNCH_SIZE 32
/* Upper bound on DescriptorsTotal (the Go library has none; 48 is usual). */
#define SIF_MAX_DESCRIPTORS 65536
#define SIF_GROUP_MASK 0xf0000000u
/* Go's zero time.Time, written by "deterministic" images: not displayed. */
#define SIF_ZERO_TIME (-62135596800LL)

enum sif_datatype {
	SIF_DATA_DEFFILE = 0x4001,
	SIF_DATA_ENVVAR = 0x4002,
	SIF_DATA_LABELS = 0x4003,
	SIF_DATA_PARTITION = 0x4004,
	SIF_DATA_SIGNATURE = 0x4005,
	SIF_DATA_GENERIC_JSON = 0x4006,
	SIF_DATA_GENERIC = 0x4007,
	SIF_DATA_CRYPTO_MESSAGE = 0x4008,
	SIF_DATA_SBOM = 0x4009,
	SIF_DATA_OCI_ROOT_INDEX = 0x400a,
	SIF_DATA_OCI_BLOB = 0x400b,
};

enum sif_fstype {
	SIF_FS_SQUASH = 1,
	SIF_FS_EXT3 = 2,
	SIF_FS_IMMUOBJ = 3,
	SIF_FS_RAW = 4,
	SIF_FS_ENCRYPTED_SQUASH = 5,
	SIF_FS_GOCRYPTFS_SQUASH = 6,
};

enum sif_parttype {
	SIF_PART_SYSTEM = 1,
	SIF_PART_PRIM_SYS = 2,
	SIF_PART_DATA = 3,
	SIF_PART_OVERLAY = 4,
};

/* The global header, decoded (integers in host order, strings
 * NUL-terminated with trailing NULs stripped). */
struct sif_header {
	char launch[SIF_LAUNCH_SIZE + 1];
	char version[4];
	char arch[3]; /* 2-digit code, e.g. "02" */
	uint8_t id[16];
	int64_t created_at;
	int64_t modified_at;
	int64_t desc_free;
	int64_t desc_total;
	int64_t desc_offset;
	int64_t desc_size;
	int64_t data_offset;
	int64_t data_size;
};

/* One used descriptor, decoded. */
struct sif_descriptor {
	uint32_t slot; /* 1-based index in the descriptor table */
	int32_t datatype;
	uint32_t id;
	uint32_t group_id;  /* raw value, SIF_GROUP_MASK included */
	uint32_t linked_id; /* raw value: a group when SIF_GROUP_MASK is set */
	int64_t offset;
	int64_t size;
	int64_t size_with_padding;
	int64_t created_at;
	int64_t modified_at;
	int64_t uid;
	int64_t gid;
	char name[SIF_NAME_SIZE + 1];
	uint8_t extra[SIF_EXTRA_SIZE];
};

struct sif_image {
	char *name;	    /* the path as given, for messages */
	uint64_t file_size; /* at load time */
	struct sif_header hdr;
	struct sif_descriptor *descs; /* used descriptors, in slot order */
	size_t ndescs;
};

/* Parse and validate the SIF in fd (read with pread; the offset of fd is
 * not used). name is used in messages only. On success fills *img, which
 * the caller releases with sif_image_free(). Returns 0 or -1 with *err. */
int sif_load_fd(int fd, const char *name, struct sif_image *img,
		mpictr_err **err);
/* Open path read-only and sif_load_fd() it. */
int sif_load(const char *path, struct sif_image *img, mpictr_err **err);
void sif_image_free(struct sif_image *img);

/* The used descriptor with this object ID, or NULL. */
const struct sif_descriptor *sif_find_id(const struct sif_image *img,
					 uint32_t id);
/* The primary system partition, or NULL if the image has none. */
const struct sif_descriptor *sif_primary_partition(const struct sif_image *img);

/* Partition metadata from the Extra field of a SIF_DATA_PARTITION
 * descriptor. arch receives the 2-digit code, NUL-terminated. */
void sif_partition_meta(const struct sif_descriptor *d, int32_t *fstype,
			int32_t *parttype, char arch[3]);

/* Names as siftool prints them. */
const char *sif_datatype_name(int32_t t);
/* Go architecture name of a 2-digit code ("02" -> "amd64"), "unknown" for
 * "00" and for anything not in the table. */
const char *sif_arch_name(const char *code);
/* 2-digit code of a Go architecture name, or NULL. */
const char *sif_arch_code(const char *name);
/* The SIF architecture name of the machine mpictr was built for. */
const char *sif_host_arch(void);

/* Text as `siftool list`, `siftool info ID` and `siftool header` print it
 * (the reference output is siftool's golden files). Returned strings are
 * owned by the caller. sif_format_info fails if no object has this ID. */
char *sif_format_list(const struct sif_image *img);
char *sif_format_info(const struct sif_image *img, uint32_t id,
		      mpictr_err **err);
char *sif_format_header(const struct sif_image *img);

/* ---- writer (sif_write.c) ---- */

struct sif_object_input {
	int32_t datatype;
	const void *data; /* in memory ... */
	size_t len;
	int fd; /* ... or copied from this fd (offset 0, len bytes) if >= 0 */
	/* ... or already written at the offset the writer gives it (the
	 * first object: SIF_WRITE_DATA_START for a partition); data and fd
	 * are then unused */
	bool in_place;
	const char *name;
	/* partitions only */
	int32_t fstype;
	int32_t parttype;
	const char *arch_code; /* 2-digit code */
};

/* Where sif_write_fd() puts a partition that is its first object: after
 * the 48 descriptors at 4096, 4 KiB aligned. */
#define SIF_WRITE_DATA_START 32768

/* Write a new SIF to fd (which must be empty) with the objects in order,
 * following Apptainer's layout: launch script, random v4 UUID, 48
 * descriptors at 4096, group 1, partitions 4 KiB aligned. name is for
 * messages. Returns 0 or -1 with *err. */
int sif_write_fd(int fd, const char *name, const struct sif_object_input *objs,
		 size_t nobjs, mpictr_err **err);
/* The same with the ID fixed_id (NULL: random) and every time `when`
 * (< 0: now): the same inputs give the same bytes. */
int sif_write_fd_fixed(int fd, const char *name,
		       const struct sif_object_input *objs, size_t nobjs,
		       const uint8_t *fixed_id, int64_t when, mpictr_err **err);

/* An object to add to an existing image (sif_append_object). */
struct sif_append {
	int32_t datatype;
	uint32_t group; /* raw: SIF_GROUP_MASK | group, or the mask alone */
	uint32_t link;	/* raw: an object ID, or SIF_GROUP_MASK | group */
	const void *data;
	size_t len;
	uint8_t extra[SIF_EXTRA_SIZE];
};

/* Add the object a to the SIF img loaded from fd (open read-write): its
 * data after the last object, unaligned; the first free descriptor; the
 * header's free count, data size and modification time (left at Go's
 * zero time in a deterministic image). *id receives the new object's ID.
 * Returns 0 or -1 with *err. */
int sif_append_object(int fd, const struct sif_image *img,
		      const struct sif_append *a, uint32_t *id,
		      mpictr_err **err);

#endif
