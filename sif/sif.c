/* sif.c - SIF reader: parse the global header and descriptor table from a
 * file descriptor, validate them strictly (docs/sif.md, "What is
 * validated"), and format them as siftool's list/info/header commands do.
 *
 * Every integer in the file is little-endian and fields are packed with no
 * padding, so fields are read at explicit byte offsets. All arithmetic on
 * offsets and sizes from the file is done in uint64_t with overflow checks
 * after each value has been checked to be non-negative.
 */
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sif/sif.h"
#include "common/util.h"

/* ---- little-endian field access ---- */

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static int64_t get_i64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return (int64_t)le64toh(v);
}

/* Copy a NUL-padded field of n bytes into dst (n + 1 bytes), stopping at the
 * first NUL. */
static void get_str(char *dst, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && p[i]; i++)
		dst[i] = (char)p[i];
	dst[i] = '\0';
}

/* ---- names (as siftool prints them) ---- */

static const char *const arch_names[] = {
    "unknown", "386",	 "amd64",  "arm",      "arm64", "ppc64",   "ppc64le",
    "mips",    "mipsle", "mips64", "mips64le", "s390x", "riscv64", "loong64",
};

const char *sif_arch_name(const char *code)
{
	unsigned n;

	if (!code || code[0] < '0' || code[0] > '9' || code[1] < '0' ||
	    code[1] > '9' || code[2] != '\0')
		return "unknown";
	n = (unsigned)(code[0] - '0') * 10 + (unsigned)(code[1] - '0');
	return n < ARRAY_SIZE(arch_names) ? arch_names[n] : "unknown";
}

const char *sif_arch_code(const char *name)
{
	static const char *const codes[] = {
	    "00", "01", "02", "03", "04", "05", "06",
	    "07", "08", "09", "10", "11", "12", "13",
	};
	size_t i;

	for (i = 1; i < ARRAY_SIZE(arch_names); i++)
		if (strcmp(arch_names[i], name) == 0)
			return codes[i];
	return NULL;
}

const char *sif_host_arch(void)
{
#if defined(__x86_64__)
	return "amd64";
#elif defined(__i386__)
	return "386";
#elif defined(__aarch64__)
	return "arm64";
#elif defined(__arm__)
	return "arm";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "ppc64le";
#elif defined(__powerpc64__)
	return "ppc64";
#elif defined(__s390x__)
	return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#elif defined(__loongarch64)
	return "loong64";
#elif defined(__mips64) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "mips64le";
#elif defined(__mips64)
	return "mips64";
#elif defined(__mips__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "mipsle";
#elif defined(__mips__)
	return "mips";
#else
	return "unknown";
#endif
}

const char *sif_datatype_name(int32_t t)
{
	switch (t) {
	case SIF_DATA_DEFFILE:
		return "Def.FILE";
	case SIF_DATA_ENVVAR:
		return "Env.Vars";
	case SIF_DATA_LABELS:
		return "JSON.Labels";
	case SIF_DATA_PARTITION:
		return "FS";
	case SIF_DATA_SIGNATURE:
		return "Signature";
	case SIF_DATA_GENERIC_JSON:
		return "JSON.Generic";
	case SIF_DATA_GENERIC:
		return "Generic/Raw";
	case SIF_DATA_CRYPTO_MESSAGE:
		return "Cryptographic Message";
	case SIF_DATA_SBOM:
		return "SBOM";
	case SIF_DATA_OCI_ROOT_INDEX:
		return "OCI.RootIndex";
	case SIF_DATA_OCI_BLOB:
		return "OCI.Blob";
	default:
		return "Unknown";
	}
}

static const char *fstype_name(int32_t t)
{
	switch (t) {
	case SIF_FS_SQUASH:
		return "Squashfs";
	case SIF_FS_EXT3:
		return "Ext3";
	case SIF_FS_IMMUOBJ:
		return "Data.Archive";
	case SIF_FS_RAW:
		return "Raw";
	case SIF_FS_ENCRYPTED_SQUASH:
		return "Encrypted squashfs";
	case SIF_FS_GOCRYPTFS_SQUASH:
		return "Gocryptfs squashfs";
	default:
		return "Unknown";
	}
}

static const char *parttype_name(int32_t t)
{
	switch (t) {
	case SIF_PART_SYSTEM:
		return "System";
	case SIF_PART_PRIM_SYS:
		return "*System";
	case SIF_PART_DATA:
		return "Data";
	case SIF_PART_OVERLAY:
		return "Overlay";
	default:
		return "Unknown";
	}
}

static const char *hashtype_name(int32_t t)
{
	switch (t) {
	case 1:
		return "SHA-256";
	case 2:
		return "SHA-384";
	case 3:
		return "SHA-512";
	case 4:
		return "BLAKE2s-256";
	case 5:
		return "BLAKE2b-256";
	default:
		return "Unknown";
	}
}

static const char *formattype_name(int32_t t)
{
	switch (t) {
	case 1:
		return "OpenPGP";
	case 2:
		return "PEM";
	default:
		return "Unknown";
	}
}

static const char *messagetype_name(int32_t t)
{
	switch (t) {
	case 0x100:
		return "Clear Signature";
	case 0x200:
		return "RSA-OAEP";
	default:
		return "Unknown";
	}
}

static const char *sbom_format_name(int32_t t)
{
	static const char *const names[] = {
	    "cyclonedx-json", "cyclonedx-xml",	"github-json", "spdx-json",
	    "spdx-rdf",	      "spdx-tag-value", "spdx-yaml",   "syft-json",
	};

	if (t >= 1 && (size_t)t <= ARRAY_SIZE(names))
		return names[t - 1];
	return "unknown";
}

void sif_partition_meta(const struct sif_descriptor *d, int32_t *fstype,
			int32_t *parttype, char arch[3])
{
	*fstype = (int32_t)get_u32(d->extra);
	*parttype = (int32_t)get_u32(d->extra + 4);
	get_str(arch, d->extra + 8, 2);
}

/* ---- loading and validation ---- */

/* Header field offsets (docs/sif.md, "Global header"). */
enum {
	H_LAUNCH = 0,
	H_MAGIC = 32,
	H_VERSION = 42,
	H_ARCH = 45,
	H_ID = 48,
	H_CTIME = 64,
	H_MTIME = 72,
	H_DFREE = 80,
	H_DTOTAL = 88,
	H_DOFF = 96,
	H_DSIZE = 104,
	H_DATAOFF = 112,
	H_DATASIZE = 120,
};

/* Descriptor field offsets. */
enum {
	D_DATATYPE = 0,
	D_USED = 4,
	D_ID = 5,
	D_GROUP = 9,
	D_LINK = 13,
	D_OFFSET = 17,
	D_SIZE = 25,
	D_SIZEPAD = 33,
	D_CTIME = 41,
	D_MTIME = 49,
	D_UID = 57,
	D_GID = 65,
	D_NAME = 73,
	D_EXTRA = 201,
};

static const char sif_magic[10] = "SIF_MAGIC";

/* A printable copy of an untrusted short byte string for messages. */
static void printable(char *dst, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && p[i]; i++)
		dst[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
	dst[i] = '\0';
}

/* Does [off, off+size) intersect [a, b)? Both ranges already validated
 * against the file size, so no overflow. */
static bool ranges_meet(uint64_t off, uint64_t size, uint64_t a, uint64_t b)
{
	return size > 0 && a < b && off < b && a < off + size;
}

static int cmp_by_offset(const void *a, const void *b)
{
	const struct sif_descriptor *const *x = a, *const *y = b;

	if ((*x)->offset != (*y)->offset)
		return (*x)->offset < (*y)->offset ? -1 : 1;
	return (*x)->slot < (*y)->slot ? -1 : (*x)->slot > (*y)->slot;
}

static int cmp_by_id(const void *a, const void *b)
{
	const struct sif_descriptor *const *x = a, *const *y = b;

	if ((*x)->id != (*y)->id)
		return (*x)->id < (*y)->id ? -1 : 1;
	return (*x)->slot < (*y)->slot ? -1 : (*x)->slot > (*y)->slot;
}

static int check_header(const uint8_t *h, uint64_t fsize, const char *name,
			struct sif_header *hdr, mpictr_err **err)
{
	char buf[16];
	uint64_t end;

	if (memcmp(h + H_MAGIC, sif_magic, sizeof(sif_magic)) != 0) {
		printable(buf, h + H_MAGIC, 10);
		return err_set(err, 0,
			       "sif '%s': not a SIF file (Magic is '%s', "
			       "expected 'SIF_MAGIC')",
			       name, buf);
	}
	if (memcmp(h + H_VERSION, "01", 3) != 0) {
		printable(buf, h + H_VERSION, 3);
		return err_set(err, 0,
			       "sif '%s': unsupported Version '%s' (only 01 "
			       "exists)",
			       name, buf);
	}
	memset(hdr, 0, sizeof(*hdr));
	get_str(hdr->launch, h + H_LAUNCH, SIF_LAUNCH_SIZE);
	get_str(hdr->version, h + H_VERSION, 3);
	get_str(hdr->arch, h + H_ARCH, 2);
	memcpy(hdr->id, h + H_ID, 16);
	hdr->created_at = get_i64(h + H_CTIME);
	hdr->modified_at = get_i64(h + H_MTIME);
	hdr->desc_free = get_i64(h + H_DFREE);
	hdr->desc_total = get_i64(h + H_DTOTAL);
	hdr->desc_offset = get_i64(h + H_DOFF);
	hdr->desc_size = get_i64(h + H_DSIZE);
	hdr->data_offset = get_i64(h + H_DATAOFF);
	hdr->data_size = get_i64(h + H_DATASIZE);

	if (hdr->desc_total < 0 || hdr->desc_total > SIF_MAX_DESCRIPTORS)
		return err_set(err, 0,
			       "sif '%s': DescriptorsTotal %" PRId64
			       " is out of range (0..%d)",
			       name, hdr->desc_total, SIF_MAX_DESCRIPTORS);
	if (hdr->desc_free < 0 || hdr->desc_free > hdr->desc_total)
		return err_set(err, 0,
			       "sif '%s': DescriptorsFree %" PRId64
			       " is out of range (0..%" PRId64 ")",
			       name, hdr->desc_free, hdr->desc_total);
	if (hdr->desc_size != hdr->desc_total * SIF_DESC_SIZE)
		return err_set(
		    err, 0,
		    "sif '%s': DescriptorsSize %" PRId64
		    " does not match DescriptorsTotal %" PRId64 " x %d",
		    name, hdr->desc_size, hdr->desc_total, SIF_DESC_SIZE);
	if (hdr->desc_offset < SIF_HEADER_SIZE)
		return err_set(err, 0,
			       "sif '%s': DescriptorsOffset %" PRId64
			       " overlaps the %d-byte header",
			       name, hdr->desc_offset, SIF_HEADER_SIZE);
	if (__builtin_add_overflow((uint64_t)hdr->desc_offset,
				   (uint64_t)hdr->desc_size, &end) ||
	    end > fsize)
		return err_set(err, 0,
			       "sif '%s': descriptor table (DescriptorsOffset "
			       "%" PRId64 " + DescriptorsSize %" PRId64
			       ") is beyond the end of the file (%" PRIu64
			       " bytes)",
			       name, hdr->desc_offset, hdr->desc_size, fsize);
	if (hdr->data_offset < 0 || hdr->data_size < 0)
		return err_set(err, 0,
			       "sif '%s': negative DataOffset %" PRId64
			       " or DataSize %" PRId64,
			       name, hdr->data_offset, hdr->data_size);
	if (__builtin_add_overflow((uint64_t)hdr->data_offset,
				   (uint64_t)hdr->data_size, &end) ||
	    end > fsize)
		return err_set(err, 0,
			       "sif '%s': data section (DataOffset %" PRId64
			       " + DataSize %" PRId64
			       ") is beyond the end of the file (%" PRIu64
			       " bytes)",
			       name, hdr->data_offset, hdr->data_size, fsize);
	return 0;
}

static void decode_descriptor(const uint8_t *p, uint32_t slot,
			      struct sif_descriptor *d)
{
	memset(d, 0, sizeof(*d));
	d->slot = slot;
	d->datatype = (int32_t)get_u32(p + D_DATATYPE);
	d->id = get_u32(p + D_ID);
	d->group_id = get_u32(p + D_GROUP);
	d->linked_id = get_u32(p + D_LINK);
	d->offset = get_i64(p + D_OFFSET);
	d->size = get_i64(p + D_SIZE);
	d->size_with_padding = get_i64(p + D_SIZEPAD);
	d->created_at = get_i64(p + D_CTIME);
	d->modified_at = get_i64(p + D_MTIME);
	d->uid = get_i64(p + D_UID);
	d->gid = get_i64(p + D_GID);
	get_str(d->name, p + D_NAME, SIF_NAME_SIZE);
	memcpy(d->extra, p + D_EXTRA, SIF_EXTRA_SIZE);
}

/* Checks of one used descriptor on its own. */
static int check_descriptor(const struct sif_descriptor *d,
			    const struct sif_header *hdr, uint64_t fsize,
			    const char *name, mpictr_err **err)
{
	uint64_t end, toff = (uint64_t)hdr->desc_offset,
		      tend = toff + (uint64_t)hdr->desc_size;

	if (d->id == 0)
		return err_set(err, 0,
			       "sif '%s': descriptor %u: object ID is 0", name,
			       d->slot);
	if (d->offset < 0)
		return err_set(err, 0,
			       "sif '%s': descriptor %u (id %u): negative "
			       "object offset %" PRId64,
			       name, d->slot, d->id, d->offset);
	if (d->size < 0)
		return err_set(err, 0,
			       "sif '%s': descriptor %u (id %u): negative "
			       "object size %" PRId64,
			       name, d->slot, d->id, d->size);
	if (__builtin_add_overflow((uint64_t)d->offset, (uint64_t)d->size,
				   &end) ||
	    end > fsize)
		return err_set(err, 0,
			       "sif '%s': descriptor %u (id %u): object offset "
			       "%" PRId64 " + size %" PRId64
			       " is beyond the end of the file (%" PRIu64
			       " bytes)",
			       name, d->slot, d->id, d->offset, d->size, fsize);
	if (ranges_meet((uint64_t)d->offset, (uint64_t)d->size, 0,
			SIF_HEADER_SIZE))
		return err_set(
		    err, 0,
		    "sif '%s': descriptor %u (id %u): object %" PRId64
		    "-%" PRIu64 " overlaps the header",
		    name, d->slot, d->id, d->offset, end);
	if (ranges_meet((uint64_t)d->offset, (uint64_t)d->size, toff, tend))
		return err_set(
		    err, 0,
		    "sif '%s': descriptor %u (id %u): object %" PRId64
		    "-%" PRIu64 " overlaps the descriptor table (%" PRIu64
		    "-%" PRIu64 ")",
		    name, d->slot, d->id, d->offset, end, toff, tend);
	return 0;
}

/* Checks across descriptors: unique IDs, no overlapping objects, at most one
 * primary partition. */
static int check_descriptor_set(struct sif_image *img, mpictr_err **err)
{
	cleanup_free const struct sif_descriptor **v = NULL;
	const struct sif_descriptor *prim = NULL;
	size_t i, j;

	if (img->ndescs == 0)
		return 0;
	v = xcalloc(img->ndescs, sizeof(*v));
	for (i = 0; i < img->ndescs; i++) {
		const struct sif_descriptor *d = &img->descs[i];
		v[i] = d;
		if (d->datatype == SIF_DATA_PARTITION) {
			int32_t fs, pt;
			char arch[3];
			sif_partition_meta(d, &fs, &pt, arch);
			if (pt == SIF_PART_PRIM_SYS) {
				if (prim)
					return err_set(
					    err, 0,
					    "sif '%s': descriptor %u (id "
					    "%u): second primary partition "
					    "(the first is id %u)",
					    img->name, d->slot, d->id,
					    prim->id);
				prim = d;
			}
		}
	}
	qsort(v, img->ndescs, sizeof(*v), cmp_by_offset);
	/* Sorted by offset: an object overlaps a later one iff it overlaps the
	 * next non-empty one, given the previous non-empty ones end before. */
	for (i = 0, j = SIZE_MAX; i < img->ndescs; i++) {
		const struct sif_descriptor *d = v[i], *p;
		if (d->size == 0)
			continue;
		if (j != SIZE_MAX) {
			p = v[j];
			if (p->offset + p->size > d->offset)
				return err_set(
				    err, 0,
				    "sif '%s': descriptor %u (id %u): "
				    "object %" PRId64 "-%" PRId64
				    " overlaps object id %u (%" PRId64
				    "-%" PRId64 ")",
				    img->name, d->slot, d->id, d->offset,
				    d->offset + d->size, p->id, p->offset,
				    p->offset + p->size);
			/* keep the one reaching furthest */
			if (d->offset + d->size < p->offset + p->size)
				continue;
		}
		j = i;
	}
	/* Unique IDs: sort by ID and compare neighbours. */
	for (i = 0; i < img->ndescs; i++)
		v[i] = &img->descs[i];
	qsort(v, img->ndescs, sizeof(*v), cmp_by_id);
	for (i = 1; i < img->ndescs; i++)
		if (v[i]->id == v[i - 1]->id) {
			const struct sif_descriptor *a = v[i - 1], *b = v[i];
			if (a->slot > b->slot) {
				a = v[i];
				b = v[i - 1];
			}
			return err_set(
			    err, 0,
			    "sif '%s': descriptor %u (id %u): object "
			    "ID already used by descriptor %u",
			    img->name, b->slot, b->id, a->slot);
		}
	return 0;
}

int sif_load_fd(int fd, const char *name, struct sif_image *img,
		mpictr_err **err)
{
	uint8_t h[SIF_HEADER_SIZE];
	cleanup_free uint8_t *table = NULL;
	struct stat st;
	uint64_t fsize;
	size_t i, n;

	memset(img, 0, sizeof(*img));
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "sif '%s': stat", name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, 0, "sif '%s': not a regular file", name);
	fsize = (uint64_t)st.st_size;
	if (fsize < SIF_HEADER_SIZE)
		return err_set(err, 0,
			       "sif '%s': file is too small for a SIF header "
			       "(%" PRIu64 " bytes, need %d)",
			       name, fsize, SIF_HEADER_SIZE);
	if (pread_full(fd, h, sizeof(h), 0) < 0)
		return err_set(err, errno, "sif '%s': read header", name);
	if (check_header(h, fsize, name, &img->hdr, err) < 0)
		return -1;

	n = (size_t)img->hdr.desc_total;
	if (n) {
		table = xmalloc(n * SIF_DESC_SIZE);
		if (pread_full(fd, table, n * SIF_DESC_SIZE,
			       (off_t)img->hdr.desc_offset) < 0)
			return err_set(err, errno,
				       "sif '%s': read descriptor table", name);
	}
	img->name = xstrdup(name);
	img->file_size = fsize;
	img->descs = xcalloc(n ? n : 1, sizeof(*img->descs));
	for (i = 0; i < n; i++) {
		const uint8_t *p = table + i * SIF_DESC_SIZE;
		struct sif_descriptor *d = &img->descs[img->ndescs];
		if (p[D_USED] == 0)
			continue;
		if (p[D_USED] != 1) {
			err_set(err, 0,
				"sif '%s': descriptor %zu: Used byte is %u "
				"(expected 0 or 1)",
				name, i + 1, p[D_USED]);
			goto fail;
		}
		decode_descriptor(p, (uint32_t)(i + 1), d);
		if (check_descriptor(d, &img->hdr, fsize, name, err) < 0)
			goto fail;
		img->ndescs++;
	}
	if (check_descriptor_set(img, err) < 0)
		goto fail;
	return 0;
fail:
	sif_image_free(img);
	return -1;
}

int sif_load(const char *path, struct sif_image *img, mpictr_err **err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(img, 0, sizeof(*img));
	if (fd < 0)
		return err_set(err, errno, "sif '%s': open", path);
	return sif_load_fd(fd, path, img, err);
}

void sif_image_free(struct sif_image *img)
{
	if (!img)
		return;
	free(img->name);
	free(img->descs);
	memset(img, 0, sizeof(*img));
}

const struct sif_descriptor *sif_find_id(const struct sif_image *img,
					 uint32_t id)
{
	size_t i;

	for (i = 0; i < img->ndescs; i++)
		if (img->descs[i].id == id)
			return &img->descs[i];
	return NULL;
}

const struct sif_descriptor *sif_primary_partition(const struct sif_image *img)
{
	size_t i;

	for (i = 0; i < img->ndescs; i++) {
		const struct sif_descriptor *d = &img->descs[i];
		int32_t fs, pt;
		char arch[3];

		if (d->datatype != SIF_DATA_PARTITION)
			continue;
		sif_partition_meta(d, &fs, &pt, arch);
		if (pt == SIF_PART_PRIM_SYS)
			return d;
	}
	return NULL;
}

/* ---- formatting ---- */

/* Untrusted text from the file goes to a terminal: control characters
 * become '?'. */
static void sb_put_clean(struct strbuf *sb, const char *s)
{
	for (; *s; s++)
		sb_putc(sb,
			((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s);
}

/* Go's time.Time.String() in UTC: "2020-06-30 00:01:56 +0000 UTC". */
static char *fmt_time(int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	char buf[64];

	if ((int64_t)tt != t || !gmtime_r(&tt, &tm) ||
	    tm.tm_year + 1900LL < 0 || tm.tm_year + 1900LL > 9999)
		return xasprintf("%" PRId64 " (seconds since 1970)", t);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
	return xstrdup(buf);
}

/* Go siftool's readableSize: "%d B" below 1 KiB, else one rounded
 * number and a binary unit. */
static char *fmt_size(int64_t size)
{
	static const char units[] = "KMGTPE";
	int64_t div = 1024, n;
	int exp = 0;

	if (size < 1024)
		return xasprintf("%" PRId64 " B", size);
	for (n = size / 1024; n >= 1024 && exp < 5; n /= 1024) {
		div *= 1024;
		exp++;
	}
	return xasprintf("%.0f %ciB", (double)size / (double)div, units[exp]);
}

static char *fmt_uuid(const uint8_t *u)
{
	return xasprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
			 u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Rows of "label:<pad>value" aligned as Go's tabwriter does: the label
 * column is as wide as the longest label plus padding. */
struct rows {
	char *label[24];
	char *value[24];
	size_t n;
};

static void row_add(struct rows *r, const char *label, char *value)
{
	if (r->n >= ARRAY_SIZE(r->label)) {
		free(value);
		return;
	}
	r->label[r->n] = xstrdup(label);
	r->value[r->n] = value;
	r->n++;
}

static void rows_flush(struct rows *r, struct strbuf *sb, size_t pad)
{
	size_t i, w = 0;

	for (i = 0; i < r->n; i++)
		if (strlen(r->label[i]) > w)
			w = strlen(r->label[i]);
	for (i = 0; i < r->n; i++) {
		sb_printf(sb, "%-*s", (int)(w + pad), r->label[i]);
		sb_put_clean(sb, r->value[i]);
		sb_putc(sb, '\n');
		free(r->label[i]);
		free(r->value[i]);
	}
	r->n = 0;
}

static char *group_text(uint32_t raw)
{
	uint32_t g = raw & ~SIF_GROUP_MASK;

	return g ? xasprintf("%u", g) : xstrdup("NONE");
}

/* Linked ID as list (padded "1   (G)") or info ("1 (G)") shows it. */
static char *link_text(uint32_t raw, bool list)
{
	uint32_t l = raw & ~SIF_GROUP_MASK;

	if (l == 0)
		return xstrdup("NONE");
	if ((raw & SIF_GROUP_MASK) == SIF_GROUP_MASK)
		return list ? xasprintf("%-3u (G)", l) : xasprintf("%u (G)", l);
	return xasprintf("%u", l);
}

static char *type_text(const struct sif_descriptor *d)
{
	int32_t a = (int32_t)get_u32(d->extra), b;
	int32_t fs, pt;
	char arch[3];

	switch (d->datatype) {
	case SIF_DATA_PARTITION:
		sif_partition_meta(d, &fs, &pt, arch);
		return xasprintf("FS (%s/%s/%s)", fstype_name(fs),
				 parttype_name(pt), sif_arch_name(arch));
	case SIF_DATA_SIGNATURE:
		return xasprintf("Signature (%s)", hashtype_name(a));
	case SIF_DATA_CRYPTO_MESSAGE:
		b = (int32_t)get_u32(d->extra + 4);
		return xasprintf("Cryptographic Message (%s/%s)",
				 formattype_name(a), messagetype_name(b));
	case SIF_DATA_SBOM:
		return xasprintf("SBOM (%s)", sbom_format_name(a));
	default:
		return xstrdup(sif_datatype_name(d->datatype));
	}
}

char *sif_format_list(const struct sif_image *img)
{
	static const char rule[] = "---------------------------------------"
				   "---------------------------------------\n";
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_puts(&sb, rule);
	sb_puts(&sb,
		"ID   |GROUP   |LINK    |SIF POSITION (start-end)  |TYPE\n");
	sb_puts(&sb, rule);
	for (i = 0; i < img->ndescs; i++) {
		const struct sif_descriptor *d = &img->descs[i];
		cleanup_free char *id = xasprintf("%u", d->id);
		cleanup_free char *grp = group_text(d->group_id);
		cleanup_free char *lnk = link_text(d->linked_id, true);
		cleanup_free char *pos = xasprintf(
		    "%" PRId64 "-%" PRId64, d->offset, d->offset + d->size);
		cleanup_free char *type = type_text(d);

		sb_printf(&sb, "%-4s |%-7s |%-7s |%-25s |%s\n", id, grp, lnk,
			  pos, type);
	}
	return sb_steal(&sb);
}

/* The digest text of an OCI object's Extra, if it looks like one. */
static char *oci_digest(const struct sif_descriptor *d)
{
	char buf[SIF_EXTRA_SIZE + 1];

	get_str(buf, d->extra, SIF_EXTRA_SIZE);
	return buf[0] && strchr(buf, ':') ? xstrdup(buf) : NULL;
}

char *sif_format_info(const struct sif_image *img, uint32_t id,
		      mpictr_err **err)
{
	const struct sif_descriptor *d = sif_find_id(img, id);
	struct strbuf sb = STRBUF_INIT;
	struct rows r = {0};
	int32_t a, b;
	char arch[3], *s;

	if (!d) {
		if (img->ndescs == 0)
			err_set(err, 0,
				"sif '%s': no object with id %u (the "
				"image has no objects)",
				img->name, id);
		else
			err_set(err, 0, "sif '%s': no object with id %u",
				img->name, id);
		return NULL;
	}
	row_add(&r, "  Data Type:", xstrdup(sif_datatype_name(d->datatype)));
	row_add(&r, "  ID:", xasprintf("%u", d->id));
	row_add(&r, "  Group ID:", group_text(d->group_id));
	row_add(&r, "  Linked ID:", link_text(d->linked_id, false));
	row_add(&r, "  Offset:", xasprintf("%" PRId64, d->offset));
	row_add(&r, "  Size:", xasprintf("%" PRId64, d->size));
	if (d->created_at != SIF_ZERO_TIME)
		row_add(&r, "  Created At:", fmt_time(d->created_at));
	if (d->modified_at != SIF_ZERO_TIME)
		row_add(&r, "  Modified At:", fmt_time(d->modified_at));
	if (d->name[0])
		row_add(&r, "  Name:", xstrdup(d->name));
	a = (int32_t)get_u32(d->extra);
	b = (int32_t)get_u32(d->extra + 4);
	switch (d->datatype) {
	case SIF_DATA_PARTITION:
		sif_partition_meta(d, &a, &b, arch);
		row_add(&r, "  Filesystem Type:", xstrdup(fstype_name(a)));
		row_add(&r, "  Partition Type:", xstrdup(parttype_name(b)));
		row_add(&r, "  Architecture:", xstrdup(sif_arch_name(arch)));
		break;
	case SIF_DATA_SIGNATURE: {
		static const uint8_t zero[20];
		const uint8_t *fp = d->extra + 4;
		row_add(&r, "  Hash Type:", xstrdup(hashtype_name(a)));
		if (memcmp(fp, zero, sizeof(zero)) != 0) {
			struct strbuf hex = STRBUF_INIT;
			for (size_t i = 0; i < sizeof(zero); i++)
				sb_printf(&hex, "%02X", fp[i]);
			row_add(&r, "  Entity:", sb_steal(&hex));
		}
		break;
	}
	case SIF_DATA_CRYPTO_MESSAGE:
		row_add(&r, "  Format Type:", xstrdup(formattype_name(a)));
		row_add(&r, "  Message Type:", xstrdup(messagetype_name(b)));
		break;
	case SIF_DATA_SBOM:
		row_add(&r, "  Format:", xstrdup(sbom_format_name(a)));
		break;
	case SIF_DATA_OCI_ROOT_INDEX:
	case SIF_DATA_OCI_BLOB:
		s = oci_digest(d);
		if (s)
			row_add(&r, "  Digest:", s);
		break;
	default:
		break;
	}
	rows_flush(&r, &sb, 2);
	return sb_steal(&sb);
}

char *sif_format_header(const struct sif_image *img)
{
	static const uint8_t zero_id[16];
	const struct sif_header *h = &img->hdr;
	struct strbuf sb = STRBUF_INIT;
	struct rows r = {0};

	if (h->launch[0]) {
		char *ls = xstrdup(h->launch);
		size_t n = strlen(ls);
		while (n && (ls[n - 1] == '\n' || ls[n - 1] == ' ' ||
			     ls[n - 1] == '\t' || ls[n - 1] == '\r'))
			ls[--n] = '\0';
		row_add(&r, "Launch Script:", ls);
	}
	row_add(&r, "Version:", xstrdup(h->version));
	if (strcmp(sif_arch_name(h->arch), "unknown") != 0)
		row_add(&r, "Primary Architecture:",
			xstrdup(sif_arch_name(h->arch)));
	if (memcmp(h->id, zero_id, sizeof(zero_id)) != 0)
		row_add(&r, "ID:", fmt_uuid(h->id));
	if (h->created_at != SIF_ZERO_TIME)
		row_add(&r, "Created At:", fmt_time(h->created_at));
	if (h->modified_at != SIF_ZERO_TIME)
		row_add(&r, "Modified At:", fmt_time(h->modified_at));
	row_add(&r, "Descriptors Free:", xasprintf("%" PRId64, h->desc_free));
	row_add(&r, "Descriptors Total:", xasprintf("%" PRId64, h->desc_total));
	row_add(&r,
		"Descriptors Offset:", xasprintf("%" PRId64, h->desc_offset));
	row_add(&r, "Descriptors Size:", fmt_size(h->desc_size));
	row_add(&r, "Data Offset:", xasprintf("%" PRId64, h->data_offset));
	row_add(&r, "Data Size:", fmt_size(h->data_size));
	rows_flush(&r, &sb, 1);
	return sb_steal(&sb);
}
