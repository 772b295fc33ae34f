/* image.c - image detection and the checks running needs (image.h). Only
 * the superblock of a squashfs is read here; mounting is sif/squash.c's. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sif/image.h"
#include "sif/sif.h"
#include "common/util.h"

const char *image_compression_name(unsigned comp)
{
	static const char *const names[] = {
	    [SQUASHFS_COMP_GZIP] = "gzip", [SQUASHFS_COMP_LZMA] = "lzma",
	    [SQUASHFS_COMP_LZO] = "lzo",   [SQUASHFS_COMP_XZ] = "xz",
	    [SQUASHFS_COMP_LZ4] = "lz4",   [SQUASHFS_COMP_ZSTD] = "zstd",
	};

	return comp < ARRAY_SIZE(names) ? names[comp] : NULL;
}

/* The native architecture, plus 386 on amd64: x86-64 kernels run 32-bit
 * x86 binaries natively (IA32 emulation, on in Debian's and most distro
 * kernels), so Apptainer's binfmt/qemu lookup is not needed for it. Other
 * foreign architectures would need qemu through binfmt_misc, which mpictr
 * does not set up: they are refused. */
int image_arch_runnable(const char *arch)
{
	const char *host = sif_host_arch();

	if (strcmp(arch, host) == 0)
		return 1;
	if (strcmp(host, "amd64") == 0 && strcmp(arch, "386") == 0)
		return 1;
	return 0;
}

enum squashfs_verdict image_squashfs_super(int fd, uint64_t offset,
					   uint64_t avail,
					   struct squashfs_super *out)
{
	uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
	uint16_t c, major, minor;
	uint64_t used;

	memset(out, 0, sizeof(*out));
	if (avail < sizeof(sb))
		return SQUASHFS_SHORT;
	if (offset > (uint64_t)INT64_MAX) {
		errno = EOVERFLOW;
		return SQUASHFS_READ_ERROR;
	}
	if (pread_full(fd, sb, sizeof(sb), (off_t)offset) < 0)
		return SQUASHFS_READ_ERROR;
	if (memcmp(sb, "hsqs", 4) != 0)
		return SQUASHFS_NO_MAGIC;
	memcpy(&c, sb + 20, 2);
	memcpy(&major, sb + 28, 2);
	memcpy(&minor, sb + 30, 2);
	memcpy(&used, sb + 40, 8);
	out->compression = le16toh(c);
	out->major = le16toh(major);
	out->minor = le16toh(minor);
	out->bytes_used = le64toh(used);
	if (out->major != 4 || out->minor != 0)
		return SQUASHFS_BAD_VERSION;
	if (out->bytes_used > avail)
		return SQUASHFS_TRUNCATED;
	return SQUASHFS_OK;
}

int image_check_squashfs(int fd, uint64_t offset, uint64_t avail,
			 const char *name, const char *where, int *comp,
			 mpictr_err **err)
{
	struct squashfs_super sb;
	unsigned c;

	switch (image_squashfs_super(fd, offset, avail, &sb)) {
	case SQUASHFS_OK:
		break;
	case SQUASHFS_SHORT:
		return err_set(
		    err, 0,
		    "image '%s': %s at offset %" PRIu64
		    " is too small for a squashfs superblock (%" PRIu64
		    " bytes, need %d)",
		    name, where, offset, avail, SQUASHFS_SUPERBLOCK_SIZE);
	case SQUASHFS_READ_ERROR:
		return err_set(err, errno,
			       "image '%s': read the squashfs superblock of %s",
			       name, where);
	case SQUASHFS_NO_MAGIC:
		return err_set(err, 0,
			       "image '%s': %s at offset %" PRIu64
			       " has no squashfs magic 'hsqs'",
			       name, where, offset);
	case SQUASHFS_BAD_VERSION:
		return err_set(err, 0,
			       "image '%s': %s is squashfs version %u.%u; only "
			       "4.0 is supported",
			       name, where, sb.major, sb.minor);
	case SQUASHFS_TRUNCATED:
		return err_set(err, 0,
			       "image '%s': %s: squashfs bytes_used %" PRIu64
			       " is larger than its %" PRIu64 " bytes",
			       name, where, sb.bytes_used, avail);
	default:
		return err_set(err, EINVAL, "image '%s': %s", name, where);
	}
	c = sb.compression;
	if (c == SQUASHFS_COMP_LZMA)
		return err_set(err, 0,
			       "image '%s': %s uses the legacy lzma compressor "
			       "(id 2), which libsquashfuse does not support "
			       "(hint: rebuild it with mksquashfs -comp xz, "
			       "gzip or zstd)",
			       name, where);
	if (!image_compression_name(c))
		return err_set(err, 0,
			       "image '%s': %s has unknown squashfs compressor "
			       "id %u (supported: gzip=1, lzo=3, xz=4, lz4=5, "
			       "zstd=6)",
			       name, where, c);
	*comp = (int)c;
	return 0;
}

/* The image config's bytes, through the probe's descriptor: whoever plans
 * from this probe opens the image no second time (one open per task; a
 * joining task none, docs/scale.md). */
static void read_oci_config(int fd, struct image_info *info)
{
	size_t n = (size_t)info->oci_config_size;
	char *buf;

	if (n == 0 || info->oci_config_size > IMAGE_OCI_CONFIG_MAX)
		return;
	buf = xmalloc(n + 1);
	if (pread_full(fd, buf, n, (off_t)info->oci_config_offset) < 0) {
		info->oci_config_errno = errno ? errno : EIO;
		free(buf);
		return;
	}
	buf[n] = '\0';
	info->oci_config = buf;
}

static int probe_sif(int fd, const char *name, struct image_info *info,
		     mpictr_err **err)
{
	struct sif_image img;
	const struct sif_descriptor *d;
	int32_t fs, pt;
	char code[3], where[64];
	const char *arch;
	int comp;

	if (sif_load_fd(fd, name, &img, err) < 0)
		return -1;
	d = sif_primary_partition(&img);
	if (!d) {
		sif_image_free(&img);
		return err_set(err, 0,
			       "image '%s': SIF has no primary system "
			       "partition (no root file system to run)",
			       name);
	}
	sif_partition_meta(d, &fs, &pt, code);
	snprintf(where, sizeof(where), "primary partition (id %u)", d->id);
	if (fs != SIF_FS_SQUASH) {
		err_set(err, 0,
			"image '%s': %s has file system type %d; only squashfs "
			"(1) can be run",
			name, where, fs);
		goto fail;
	}
	arch = sif_arch_name(code);
	/* Unknown ("00") is not checked, as Apptainer does. */
	if (strcmp(arch, "unknown") != 0 && !image_arch_runnable(arch)) {
		err_set(err, 0,
			"image '%s': %s is for architecture %s, this host runs "
			"%s",
			name, where, arch, sif_host_arch());
		goto fail;
	}
	if (image_check_squashfs(fd, (uint64_t)d->offset, (uint64_t)d->size,
				 name, where, &comp, err) < 0)
		goto fail;
	info->kind = IMAGE_SIF;
	info->offset = (uint64_t)d->offset;
	info->size = (uint64_t)d->size;
	info->compression = comp;
	info->arch = xstrdup(arch);
	/* The OCI image config `mpictr pull` (and Apptainer) store. */
	for (size_t i = 0; i < img.ndescs; i++)
		if (img.descs[i].datatype == SIF_DATA_GENERIC_JSON &&
		    strcmp(img.descs[i].name, "oci-config.json") == 0) {
			info->oci_config_offset = (uint64_t)img.descs[i].offset;
			info->oci_config_size = (uint64_t)img.descs[i].size;
		}
	sif_image_free(&img);
	read_oci_config(fd, info);
	return 0;
fail:
	sif_image_free(&img);
	return -1;
}

int image_probe_fd(int fd, const char *name, struct image_info *info,
		   mpictr_err **err)
{
	uint8_t head[48];
	struct stat st;
	int comp;

	memset(info, 0, sizeof(*info));
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "image '%s': stat", name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, 0,
			       "image '%s': not a regular file or directory",
			       name);
	memset(head, 0, sizeof(head));
	if (st.st_size >= (off_t)sizeof(head) &&
	    pread_full(fd, head, sizeof(head), 0) < 0)
		return err_set(err, errno, "image '%s': read", name);
	if (memcmp(head + 32, "SIF_MAGIC", 10) == 0)
		return probe_sif(fd, name, info, err);
	if (memcmp(head, "hsqs", 4) == 0) {
		if (image_check_squashfs(fd, 0, (uint64_t)st.st_size, name,
					 "squashfs", &comp, err) < 0)
			return -1;
		info->kind = IMAGE_SQUASHFS;
		info->size = (uint64_t)st.st_size;
		info->compression = comp;
		return 0;
	}
	return err_set(err, 0,
		       "image '%s': unknown format (neither a SIF file, a "
		       "squashfs file nor a directory)",
		       name);
}

int image_probe(const char *path, struct image_info *info, mpictr_err **err)
{
	cleanup_free char *real = realpath(path, NULL);
	cleanup_close int fd = -1;
	struct stat st;

	memset(info, 0, sizeof(*info));
	if (!real)
		return err_set(err, errno, "image '%s'", path);
	if (stat(real, &st) < 0)
		return err_set(err, errno, "image '%s': stat", path);
	if (S_ISDIR(st.st_mode)) {
		info->kind = IMAGE_DIR;
		info->path = steal_ptr(&real);
		return 0;
	}
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, errno, "image '%s': open", path);
	if (image_probe_fd(fd, path, info, err) < 0)
		return -1;
	info->path = steal_ptr(&real);
	return 0;
}

void image_info_free(struct image_info *info)
{
	if (!info)
		return;
	free(info->path);
	free(info->arch);
	free(info->oci_config);
	memset(info, 0, sizeof(*info));
}

void image_info_copy(struct image_info *to, const struct image_info *from)
{
	*to = *from;
	to->path = from->path ? xstrdup(from->path) : NULL;
	to->arch = from->arch ? xstrdup(from->arch) : NULL;
	if (from->oci_config) {
		to->oci_config = xmalloc((size_t)from->oci_config_size + 1);
		memcpy(to->oci_config, from->oci_config,
		       (size_t)from->oci_config_size + 1);
	}
}
