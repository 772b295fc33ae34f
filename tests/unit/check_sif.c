/* check_sif.c - the SIF reader against the conformance images and their
 * siftool golden output, one test per class of malformed input (each built
 * by corrupting a valid image in memory), the writer round trip, and
 * image_probe on every kind of image and every refusal. */
#include <check.h>
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sif/image.h"
#include "sif/sif.h"
#include "sif/sif_write.h"
#include "testutil.h"
#include "common/util.h"

/* Conformance images live next to the project: ../shared/conformance/sif. */
static char *conf_path(const char *name)
{
	return xasprintf("%s/../shared/conformance/sif/%s", test_root(), name);
}

static uint8_t *read_conf(const char *name, size_t *len)
{
	char *p = conf_path(name);
	char *buf = read_file(p, 1 << 22, len);

	ck_assert_msg(buf != NULL, "cannot read %s", p);
	free(p);
	return (uint8_t *)buf;
}

static int mem_fd(const void *buf, size_t len)
{
	int fd = memfd_create("t.sif", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_full(fd, buf, len), 0);
	return fd;
}

/* Load len bytes of buf; returns the loader's result, error in *err. */
static int load_mem(const void *buf, size_t len, struct sif_image *img,
		    mpictr_err **err)
{
	int fd = mem_fd(buf, len);
	int rc = sif_load_fd(fd, "x.sif", img, err);

	close(fd);
	return rc;
}

static void put64(uint8_t *p, int64_t v)
{
	uint64_t u = htole64((uint64_t)v);
	memcpy(p, &u, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/* Byte offset of field off of descriptor slot (1-based) in the default
 * table at 4096. */
#define DESC(slot, off) (4096 + ((slot)-1) * 585 + (off))

/* Corrupt a copy of base (via mutate) and expect the loader to fail with a
 * message containing want. */
static void expect_fail(const char *base, void (*mutate)(uint8_t *, size_t *),
			const char *want)
{
	size_t len;
	uint8_t *buf = read_conf(base, &len);
	struct sif_image img;
	mpictr_err *err = NULL;

	mutate(buf, &len);
	ck_assert_int_eq(load_mem(buf, len, &img, &err), -1);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(mpictr_err_message(err), want) != NULL,
		      "message '%s' lacks '%s'", mpictr_err_message(err), want);
	ck_assert_msg(
	    strncmp(mpictr_err_message(err), "sif 'x.sif': ", 13) == 0,
	    "message '%s' does not name the file", mpictr_err_message(err));
	ck_assert_ptr_null(strchr(mpictr_err_message(err), '\n'));
	mpictr_err_free(err);
	free(buf);
}

/* ---- conformance images ---- */

static const struct {
	const char *golden, *image;
} list_golden[] = {
    {"Empty", "empty"},
    {"EmptyID", "empty-id"},
    {"EmptyLaunchScript", "empty-launch-script"},
    {"OneGroup", "one-group"},
    {"OneGroupSignedLegacy", "one-group-signed-legacy"},
    {"OneGroupSignedLegacyAll", "one-group-signed-legacy-all"},
    {"OneGroupSignedLegacyGroup", "one-group-signed-legacy-group"},
    {"OneGroupSignedPGP", "one-group-signed-pgp"},
    {"OneObjectCryptMessage", "one-object-crypt-message"},
    {"OneObjectGenericJSON", "one-object-generic-json"},
    {"OneObjectOCIBlob", "one-object-oci-blob"},
    {"OneObjectOCIRootIndex", "one-object-oci-root-index"},
    {"OneObjectSBOM", "one-object-sbom"},
    {"OneObjectTime", "one-object-time"},
    {"TwoGroups", "two-groups"},
    {"TwoGroupsSignedLegacy", "two-groups-signed-legacy"},
    {"TwoGroupsSignedLegacyAll", "two-groups-signed-legacy-all"},
    {"TwoGroupsSignedLegacyGroup", "two-groups-signed-legacy-group"},
    {"TwoGroupsSignedPGP", "two-groups-signed-pgp"},
};

static char *golden(const char *dir, const char *name)
{
	char *p = xasprintf("%s/../shared/conformance/sif/siftool-golden/%s/"
			    "%s.golden",
			    test_root(), dir, name);
	char *s = read_file(p, 1 << 16, NULL);

	ck_assert_msg(s != NULL, "cannot read %s", p);
	free(p);
	return s;
}

static void load_conf(const char *image, struct sif_image *img)
{
	char *p = xasprintf("%s/../shared/conformance/sif/%s.sif", test_root(),
			    image);
	mpictr_err *err = NULL;

	ck_assert_msg(sif_load(p, img, &err) == 0, "%s: %s", p,
		      mpictr_err_message(err));
	free(p);
}

START_TEST(test_list_and_header_golden)
{
	struct sif_image img;
	char *want, *got;

	load_conf(list_golden[_i].image, &img);
	want = golden("TestApp_List", list_golden[_i].golden);
	got = sif_format_list(&img);
	ck_assert_str_eq(got, want);
	free(want);
	free(got);
	/* every List golden has a Header golden of the same name */
	want = golden("TestApp_Header", list_golden[_i].golden);
	got = sif_format_header(&img);
	ck_assert_str_eq(got, want);
	free(want);
	free(got);
	sif_image_free(&img);
}
END_TEST

static const struct {
	const char *golden, *image;
	uint32_t id;
} info_golden[] = {
    {"Time", "one-object-time", 1},
    {"GenericJSON", "one-object-generic-json", 1},
    {"CryptMessage", "one-object-crypt-message", 1},
    {"DataPartitionRaw", "two-groups-signed-pgp", 1},
    {"DataPartitionSquashFS", "two-groups-signed-pgp", 2},
    {"DataPartitionEXT3", "two-groups-signed-pgp", 3},
    {"DataSignature", "two-groups-signed-pgp", 4},
    {"OCIBlob", "one-object-oci-blob", 1},
    {"OCIRootIndex", "one-object-oci-root-index", 1},
    {"SBOM", "one-object-sbom", 1},
};

START_TEST(test_info_golden)
{
	struct sif_image img;
	char *want, *got;

	load_conf(info_golden[_i].image, &img);
	want = golden("TestApp_Info", info_golden[_i].golden);
	got = sif_format_info(&img, info_golden[_i].id, NULL);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(want);
	free(got);
	sif_image_free(&img);
}
END_TEST

START_TEST(test_every_conformance_image_loads)
{
	char *dir = conf_path("");
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct sif_image img;
		mpictr_err *err = NULL;
		char *p;

		if (l < 5 || strcmp(e->d_name + l - 4, ".sif") != 0)
			continue;
		p = xasprintf("%s%s", dir, e->d_name);
		ck_assert_msg(sif_load(p, &img, &err) == 0, "%s: %s", p,
			      mpictr_err_message(err));
		ck_assert_int_eq(img.hdr.desc_total, 48);
		sif_image_free(&img);
		free(p);
		n++;
	}
	closedir(d);
	free(dir);
	ck_assert_int_eq(n, 21);
}
END_TEST

START_TEST(test_parse_fields)
{
	struct sif_image img;
	const struct sif_descriptor *d;
	int32_t fs, pt;
	char arch[3];

	load_conf("two-groups-signed-pgp", &img);
	ck_assert_str_eq(img.hdr.arch, "01");
	ck_assert_int_eq(img.hdr.desc_free, 43);
	ck_assert_int_eq(img.hdr.data_offset, 32176);
	ck_assert_int_eq(img.ndescs, 5);
	d = sif_primary_partition(&img);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(d->id, 2);
	ck_assert_int_eq(d->offset, 36864);
	ck_assert_int_eq(d->size, 4096);
	ck_assert_int_eq(d->created_at, SIF_ZERO_TIME);
	sif_partition_meta(d, &fs, &pt, arch);
	ck_assert_int_eq(fs, SIF_FS_SQUASH);
	ck_assert_int_eq(pt, SIF_PART_PRIM_SYS);
	ck_assert_str_eq(sif_arch_name(arch), "386");
	d = sif_find_id(&img, 3);
	ck_assert_uint_eq(d->group_id, 0xf0000002u);
	sif_partition_meta(d, &fs, &pt, arch);
	ck_assert_int_eq(fs, SIF_FS_EXT3);
	ck_assert_str_eq(sif_arch_name(arch), "amd64");
	d = sif_find_id(&img, 5);
	ck_assert_int_eq(d->datatype, SIF_DATA_SIGNATURE);
	ck_assert_uint_eq(d->linked_id, 0xf0000002u);
	ck_assert_ptr_null(sif_find_id(&img, 6));
	sif_image_free(&img);

	load_conf("one-group-signed-legacy", &img);
	ck_assert_str_eq(img.hdr.launch, "#!/usr/bin/env run-singularity\n");
	ck_assert_int_eq(img.hdr.data_offset, 32768);
	d = sif_find_id(&img, 3);
	ck_assert_str_eq(d->name, "part-signature");
	ck_assert_int_eq(d->uid, 1000);
	ck_assert_uint_eq(d->linked_id, 2);
	sif_image_free(&img);
}
END_TEST

START_TEST(test_info_unknown_id)
{
	struct sif_image img;
	mpictr_err *err = NULL;

	load_conf("one-group", &img);
	ck_assert_ptr_null(sif_format_info(&img, 9, &err));
	{
		char *want = xasprintf("sif '%s/../shared/conformance/sif/"
				       "one-group.sif': no object with id 9",
				       test_root());
		ck_assert_str_eq(mpictr_err_message(err), want);
		free(want);
	}
	mpictr_err_free(err);
	sif_image_free(&img);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(sif_arch_name("02"), "amd64");
	ck_assert_str_eq(sif_arch_name("13"), "loong64");
	ck_assert_str_eq(sif_arch_name("14"), "unknown");
	ck_assert_str_eq(sif_arch_name("0"), "unknown");
	ck_assert_str_eq(sif_arch_name("x1"), "unknown");
	ck_assert_str_eq(sif_arch_code("arm64"), "04");
	ck_assert_ptr_null(sif_arch_code("unknown"));
	ck_assert_ptr_null(sif_arch_code("vax"));
	ck_assert_str_eq(sif_datatype_name(0x4001), "Def.FILE");
	ck_assert_str_eq(sif_datatype_name(0x400b), "OCI.Blob");
	ck_assert_str_eq(sif_datatype_name(0x400c), "Unknown");
}
END_TEST

/* ---- malformed input: one test per class ---- */

static void m_truncate_header(uint8_t *b, size_t *len)
{
	*len = 100;
}
static void m_magic(uint8_t *b, size_t *len)
{
	b[40] = 'X';
}
static void m_version(uint8_t *b, size_t *len)
{
	b[43] = '2';
}
static void m_total_absurd(uint8_t *b, size_t *len)
{
	put64(b + 88, 1LL << 40);
}
static void m_total_negative(uint8_t *b, size_t *len)
{
	put64(b + 88, -1);
}
static void m_desc_size(uint8_t *b, size_t *len)
{
	put64(b + 104, 28081);
}
static void m_table_beyond(uint8_t *b, size_t *len)
{
	*len = 20000;
}
static void m_table_offset_huge(uint8_t *b, size_t *len)
{
	put64(b + 96, INT64_MAX - 10);
}
static void m_table_in_header(uint8_t *b, size_t *len)
{
	put64(b + 96, 64);
}
static void m_free(uint8_t *b, size_t *len)
{
	put64(b + 80, 49);
}
static void m_data_beyond(uint8_t *b, size_t *len)
{
	put64(b + 120, 99999);
}
static void m_used_byte(uint8_t *b, size_t *len)
{
	b[DESC(3, 4)] = 2;
}
static void m_used_byte_unused(uint8_t *b, size_t *len)
{
	b[DESC(40, 4)] = 0xff; /* a free slot: still checked */
}
static void m_object_beyond(uint8_t *b, size_t *len)
{
	put64(b + DESC(2, 17), 99999);
	put64(b + DESC(2, 25), 10);
}
static void m_object_overflow(uint8_t *b, size_t *len)
{
	put64(b + DESC(2, 17), INT64_MAX - 5);
}
static void m_negative_size(uint8_t *b, size_t *len)
{
	put64(b + DESC(1, 25), -4);
}
static void m_negative_offset(uint8_t *b, size_t *len)
{
	put64(b + DESC(1, 17), -1);
}
static void m_overlap(uint8_t *b, size_t *len)
{
	put64(b + DESC(1, 17), 36866); /* inside id 2 (36864-40960) */
}
static void m_overlap_table(uint8_t *b, size_t *len)
{
	put64(b + DESC(1, 17), 5000);
}
static void m_overlap_header(uint8_t *b, size_t *len)
{
	put64(b + DESC(1, 17), 100);
}
static void m_two_primaries(uint8_t *b, size_t *len)
{
	put32(b + DESC(1, 201 + 4), SIF_PART_PRIM_SYS);
}
static void m_duplicate_id(uint8_t *b, size_t *len)
{
	put32(b + DESC(2, 5), 1);
}
static void m_zero_id(uint8_t *b, size_t *len)
{
	put32(b + DESC(1, 5), 0);
}

static const struct {
	const char *base;
	void (*mutate)(uint8_t *, size_t *);
	const char *want;
} malformed[] = {
    {"one-group.sif", m_truncate_header,
     "file is too small for a SIF header (100 bytes, need 128)"},
    {"one-group.sif", m_magic, "not a SIF file (Magic is 'SIF_MAGIX'"},
    {"one-group.sif", m_version, "unsupported Version '02'"},
    {"one-group.sif", m_total_absurd,
     "DescriptorsTotal 1099511627776 is out of range (0..65536)"},
    {"one-group.sif", m_total_negative, "DescriptorsTotal -1 is out"},
    {"one-group.sif", m_desc_size,
     "DescriptorsSize 28081 does not match DescriptorsTotal 48 x 585"},
    {"one-group.sif", m_table_beyond,
     "descriptor table (DescriptorsOffset 4096 + DescriptorsSize 28080) "
     "is beyond the end of the file (20000 bytes)"},
    {"one-group.sif", m_table_offset_huge,
     "is beyond the end of the file (40960 bytes)"},
    {"one-group.sif", m_table_in_header,
     "DescriptorsOffset 64 overlaps the 128-byte header"},
    {"one-group.sif", m_free, "DescriptorsFree 49 is out of range (0..48)"},
    {"one-group.sif", m_data_beyond,
     "data section (DataOffset 32176 + DataSize 99999) is beyond the end"},
    {"one-group-signed-pgp.sif", m_used_byte,
     "descriptor 3: Used byte is 2 (expected 0 or 1)"},
    {"one-group.sif", m_used_byte_unused,
     "descriptor 40: Used byte is 255 (expected 0 or 1)"},
    {"one-group.sif", m_object_beyond,
     "sif 'x.sif': descriptor 2 (id 2): object offset 99999 + size 10 is "
     "beyond the end of the file (40960 bytes)"},
    {"one-group.sif", m_object_overflow,
     "descriptor 2 (id 2): object offset 9223372036854775802 + size 4096 "
     "is beyond the end of the file"},
    {"one-group.sif", m_negative_size,
     "descriptor 1 (id 1): negative object size -4"},
    {"one-group.sif", m_negative_offset,
     "descriptor 1 (id 1): negative object offset -1"},
    {"one-group.sif", m_overlap,
     "descriptor 1 (id 1): object 36866-36870 overlaps object id 2 "
     "(36864-40960)"},
    {"one-group.sif", m_overlap_table,
     "descriptor 1 (id 1): object 5000-5004 overlaps the descriptor table "
     "(4096-32176)"},
    {"one-group.sif", m_overlap_header,
     "descriptor 1 (id 1): object 100-104 overlaps the header"},
    {"one-group.sif", m_two_primaries,
     "descriptor 2 (id 2): second primary partition (the first is id 1)"},
    {"one-group.sif", m_duplicate_id,
     "descriptor 2 (id 1): object ID already used by descriptor 1"},
    {"one-group.sif", m_zero_id, "descriptor 1: object ID is 0"},
};

START_TEST(test_malformed)
{
	expect_fail(malformed[_i].base, malformed[_i].mutate,
		    malformed[_i].want);
}
END_TEST

START_TEST(test_not_regular_and_missing)
{
	struct sif_image img;
	mpictr_err *err = NULL;
	int fd = open("/", O_RDONLY | O_DIRECTORY);

	ck_assert_int_eq(sif_load_fd(fd, "/", &img, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "sif '/': not a regular file");
	mpictr_err_free(err);
	close(fd);
	err = NULL;
	ck_assert_int_eq(sif_load("/nonexistent.sif", &img, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "sif '/nonexistent.sif': open: No such file or "
			 "directory");
	mpictr_err_free(err);
}
END_TEST

/* Every prefix of a valid image fails cleanly or loads (never crashes). */
START_TEST(test_truncations)
{
	size_t len, cut;
	uint8_t *buf = read_conf("one-group-signed-pgp.sif", &len);

	for (cut = 0; cut < len; cut += (cut < 4200 ? 1 : 997)) {
		struct sif_image img;
		mpictr_err *err = NULL;
		if (load_mem(buf, cut, &img, &err) == 0) {
			sif_image_free(&img);
			ck_abort_msg("prefix of %zu bytes loaded", cut);
		}
		ck_assert_str_ne(mpictr_err_message(err), "");
		mpictr_err_free(err);
	}
	free(buf);
}
END_TEST

/* ---- writer ---- */

/* The real gzip squashfs (4096 bytes) inside one-group.sif, id 2. */
static uint8_t *conf_squashfs(size_t *len)
{
	size_t n;
	uint8_t *buf = read_conf("one-group.sif", &n), *sq;

	ck_assert_uint_eq(n, 40960);
	sq = xmalloc(4096);
	memcpy(sq, buf + 36864, 4096);
	free(buf);
	*len = 4096;
	return sq;
}

START_TEST(test_write_round_trip)
{
	static const char def[] = "Bootstrap: scratch\n";
	size_t sqlen;
	uint8_t *sq = conf_squashfs(&sqlen);
	int sqfd = mem_fd(sq, sqlen);
	struct sif_object_input objs[] = {
	    {.datatype = SIF_DATA_DEFFILE,
	     .data = def,
	     .len = sizeof(def) - 1,
	     .fd = -1},
	    {.datatype = SIF_DATA_GENERIC_JSON,
	     .data = "{}",
	     .len = 2,
	     .fd = -1,
	     .name = "data.json"},
	    {.datatype = SIF_DATA_PARTITION,
	     .len = sqlen,
	     .fd = sqfd,
	     .fstype = SIF_FS_SQUASH,
	     .parttype = SIF_PART_PRIM_SYS,
	     .arch_code = "02"},
	};
	int fd = memfd_create("w.sif", MFD_CLOEXEC);
	struct sif_image img;
	const struct sif_descriptor *d;
	struct image_info info;
	mpictr_err *err = NULL;
	uint8_t got[4096];

	ck_assert_int_eq(sif_write_fd(fd, "w.sif", objs, 3, &err), 0);
	ck_assert_int_eq(sif_load_fd(fd, "w.sif", &img, &err), 0);
	ck_assert_str_eq(img.hdr.launch, "#!/usr/bin/env run-singularity\n");
	ck_assert_str_eq(img.hdr.arch, "02");
	ck_assert_int_eq(img.hdr.desc_total, 48);
	ck_assert_int_eq(img.hdr.desc_free, 45);
	ck_assert_int_eq(img.hdr.desc_offset, 4096);
	ck_assert_int_eq(img.hdr.data_offset, 32176);
	ck_assert_int_eq(img.hdr.data_size, 32768 + 4096 - 32176);
	ck_assert_uint_eq(img.hdr.id[6] >> 4, 4);      /* v4 UUID */
	ck_assert_uint_eq(img.hdr.id[8] & 0xc0, 0x80); /* RFC 4122 */
	ck_assert_uint_eq(img.file_size, 32768 + 4096);
	ck_assert_int_eq(img.ndescs, 3);
	d = sif_find_id(&img, 1);
	ck_assert_int_eq(d->datatype, SIF_DATA_DEFFILE);
	ck_assert_int_eq(d->offset, 32176);
	ck_assert_uint_eq(d->group_id, 0xf0000001u);
	d = sif_find_id(&img, 2);
	ck_assert_str_eq(d->name, "data.json");
	ck_assert_int_eq(d->offset, 32176 + 19);
	d = sif_primary_partition(&img);
	ck_assert_uint_eq(d->id, 3);
	ck_assert_int_eq(d->offset, 32768); /* 4 KiB aligned */
	ck_assert_int_eq(d->size_with_padding, 32768 - (32176 + 21) + 4096);
	ck_assert_int_ge(d->created_at, 1700000000);
	ck_assert_int_eq(pread_full(fd, got, sizeof(got), 32768), 0);
	ck_assert_int_eq(memcmp(got, sq, sizeof(got)), 0);
	sif_image_free(&img);
	/* and what running needs is there */
	ck_assert_int_eq(image_probe_fd(fd, "w.sif", &info, &err), 0);
	ck_assert_int_eq(info.kind, IMAGE_SIF);
	ck_assert_uint_eq(info.offset, 32768);
	ck_assert_int_eq(info.compression, SQUASHFS_COMP_GZIP);
	image_info_free(&info);
	close(fd);
	close(sqfd);
	free(sq);
}
END_TEST

START_TEST(test_create_from_squashfs)
{
	char tmpl[] = "/tmp/check-sif.XXXXXX";
	char *dir = mkdtemp(tmpl), *sqp, *out, *def;
	size_t sqlen;
	uint8_t *sq = conf_squashfs(&sqlen);
	mpictr_sif_create_opts *o = mpictr_sif_create_opts_new();
	mpictr_err *err = NULL;
	struct image_info info;
	struct sif_image img;
	struct stat st;
	int fd;

	ck_assert_ptr_nonnull(dir);
	sqp = xasprintf("%s/root.sqfs", dir);
	out = xasprintf("%s/out.sif", dir);
	def = xasprintf("%s/def", dir);
	fd = open(sqp, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write_full(fd, sq, sqlen), 0);
	close(fd);
	fd = open(def, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write_full(fd, "From: x\n", 8), 0);
	close(fd);
	ck_assert_int_eq(mpictr_sif_create_opts_set_deffile(o, def, &err), 0);
	ck_assert_int_eq(mpictr_sif_create(out, sqp, o, &err), 0);
	ck_assert_int_eq(dir_entries(dir), 3); /* no temporary left */
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert(st.st_mode & S_IXUSR); /* executable, like Apptainer's */
	ck_assert_int_eq(sif_load(out, &img, &err), 0);
	ck_assert_int_eq(img.ndescs, 2);
	ck_assert_str_eq(img.hdr.arch, sif_arch_code(sif_host_arch()));
	sif_image_free(&img);
	ck_assert_int_eq(image_probe(out, &info, &err), 0);
	ck_assert_int_eq(info.kind, IMAGE_SIF);
	ck_assert_str_eq(info.arch, sif_host_arch());
	image_info_free(&info);

	/* an existing output is refused without force, and kept */
	ck_assert_int_eq(mpictr_sif_create(out, sqp, o, &err), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "--force"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(dir_entries(dir), 3);
	mpictr_sif_create_opts_set_force(o, 1);

	/* failures leave nothing: a source that is not squashfs */
	ck_assert_int_eq(mpictr_sif_create(out, def, o, &err), -1);
	ck_assert_ptr_nonnull(
	    strstr(mpictr_err_message(err), "is neither a squashfs file"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(dir_entries(dir), 3);
	/* an option file that does not exist */
	ck_assert_int_eq(
	    mpictr_sif_create_opts_set_labels(o, "/nonexistent", &err), -1);
	ck_assert_str_eq(mpictr_err_message(err), "--labels '/nonexistent': "
						  "No such file or directory");
	mpictr_err_free(err);

	mpictr_sif_create_opts_free(o);
	unlink(sqp);
	unlink(out);
	unlink(def);
	rmdir(dir);
	free(sqp);
	free(out);
	free(def);
	free(sq);
}
END_TEST

/* mksquashfs (the SPANK plugin's --container-save runs it in a child of
 * slurmstepd, and exec makes it dumpable again) inherits only its stdio
 * and the directory it is told to read: a stand-in lists its descriptors
 * into its OUT argument. Before, it got every descriptor the caller's
 * process held without FD_CLOEXEC (fd 77 here: slurmstepd's there). */
static char *fds_seen(const char *dir, int keep)
{
	cleanup_free char *out = xasprintf("%s/fds", dir);
	cleanup_free char *src =
	    keep >= 0 ? xasprintf("/proc/self/fd/%d/.", keep) : xstrdup(dir);
	mpictr_err *err = NULL;
	size_t len;
	char *list;

	unlink(out);
	ck_assert_msg(sif_mksquashfs_keep(src, out, keep, NULL, NULL, &err) ==
			  0,
		      "%s", err ? mpictr_err_message(err) : "");
	list = read_file(out, 4096, &len);
	ck_assert_ptr_nonnull(list);
	for (char *p = list; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return list;
}

START_TEST(test_mksquashfs_descriptors)
{
	char tmpl[] = "/tmp/check-sif.XXXXXX";
	char *dir = mkdtemp(tmpl);
	static const char script[] = "#!/bin/sh\nexec ls /proc/self/fd >\"$2\"\n";
	cleanup_free char *fake = NULL, *seen = NULL, *seen2 = NULL, *fds = NULL;
	int fd;

	ck_assert_ptr_nonnull(dir);
	fake = xasprintf("%s/mksquashfs", dir);
	fd = open(fake, O_WRONLY | O_CREAT | O_EXCL, 0755);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_full(fd, script, strlen(script)), 0);
	close(fd);
	setenv("MPICTR_MKSQUASHFS", fake, 1);
	ck_assert_int_eq(dup2(open("/dev/null", O_RDONLY), 77), 77);
	ck_assert_int_eq(dup2(open(dir, O_RDONLY | O_DIRECTORY), 78), 78);
	seen = fds_seen(dir, 78);
	/* 0-2, ls's own listing (3), the directory; not 77 */
	ck_assert_str_eq(seen, "0 1 2 3 78 ");
	seen2 = fds_seen(dir, -1);
	ck_assert_str_eq(seen2, "0 1 2 3 ");
	unsetenv("MPICTR_MKSQUASHFS");
	close(77);
	close(78);
	unlink(fake);
	fds = xasprintf("%s/fds", dir);
	unlink(fds);
	rmdir(dir);
}
END_TEST

/* ---- image_probe ---- */

START_TEST(test_probe_kinds)
{
	struct image_info info;
	mpictr_err *err = NULL;
	char *p = conf_path("one-group.sif");
	size_t sqlen;
	uint8_t *sq = conf_squashfs(&sqlen);
	int fd = mem_fd(sq, sqlen);

	ck_assert_int_eq(image_probe("/", &info, &err), 0);
	ck_assert_int_eq(info.kind, IMAGE_DIR);
	ck_assert_str_eq(info.path, "/");
	ck_assert_ptr_null(info.arch);
	image_info_free(&info);

	/* 386 is accepted on amd64 (see image_arch_runnable) */
	if (strcmp(sif_host_arch(), "amd64") == 0) {
		ck_assert_int_eq(image_probe(p, &info, &err), 0);
		ck_assert_int_eq(info.kind, IMAGE_SIF);
		ck_assert_uint_eq(info.offset, 36864);
		ck_assert_uint_eq(info.size, 4096);
		ck_assert_int_eq(info.compression, SQUASHFS_COMP_GZIP);
		ck_assert_str_eq(info.arch, "386");
		ck_assert_int_eq(info.path[0], '/');
		image_info_free(&info);
	}

	ck_assert_int_eq(image_probe_fd(fd, "root.sqfs", &info, &err), 0);
	ck_assert_int_eq(info.kind, IMAGE_SQUASHFS);
	ck_assert_uint_eq(info.offset, 0);
	ck_assert_uint_eq(info.size, 4096);
	ck_assert_int_eq(info.compression, SQUASHFS_COMP_GZIP);
	image_info_free(&info);
	close(fd);
	free(sq);
	free(p);
}
END_TEST

static void p_ext3(uint8_t *b, size_t *len)
{
	put32(b + DESC(2, 201), 2);
}
static void p_arm64(uint8_t *b, size_t *len)
{
	memcpy(b + DESC(2, 209), "04", 2);
}
static void p_arch_unknown(uint8_t *b, size_t *len)
{
	memcpy(b + DESC(2, 209), "00", 2);
}
static void p_lzma(uint8_t *b, size_t *len)
{
	b[36864 + 20] = 2;
}
static void p_comp9(uint8_t *b, size_t *len)
{
	b[36864 + 20] = 9;
}
static void p_no_magic(uint8_t *b, size_t *len)
{
	b[36864] = 'x';
}
static void p_version(uint8_t *b, size_t *len)
{
	b[36864 + 28] = 3;
}
static void p_bytes_used(uint8_t *b, size_t *len)
{
	put64(b + 36864 + 40, 5000);
}
static void p_no_primary(uint8_t *b, size_t *len)
{
	put32(b + DESC(2, 205), SIF_PART_SYSTEM);
}
static void p_garbage(uint8_t *b, size_t *len)
{
	memset(b, 'z', 64);
}
static void p_none(uint8_t *b, size_t *len)
{
}

static const struct {
	const char *base;
	void (*mutate)(uint8_t *, size_t *);
	const char *want; /* NULL: must succeed */
} probe_cases[] = {
    {"one-group.sif", p_ext3,
     "primary partition (id 2) has file system type 2; only squashfs"},
    {"one-group.sif", p_arm64,
     "primary partition (id 2) is for architecture arm64, this host runs"},
    {"one-group.sif", p_arch_unknown, NULL},
    {"one-group.sif", p_lzma,
     "legacy lzma compressor (id 2), which "
     "libsquashfuse does not support"},
    {"one-group.sif", p_comp9, "unknown squashfs compressor id 9"},
    {"one-group.sif", p_no_magic, "offset 36864 has no squashfs magic"},
    {"one-group.sif", p_version, "squashfs version 3.0; only 4.0"},
    {"one-group.sif", p_bytes_used,
     "squashfs bytes_used 5000 is larger than its 4096 bytes"},
    {"one-group.sif", p_no_primary, "SIF has no primary system partition"},
    {"one-group.sif", p_garbage, "unknown format"},
    {"empty.sif", p_none, "SIF has no primary system partition"},
    {"one-group-signed-legacy.sif", p_none,
     "primary partition (id 2) at offset 36864 is too small for a "
     "squashfs superblock (4 bytes, need 96)"},
    {"one-group.sif", m_object_beyond, "sif 'p.sif': descriptor 2 (id 2)"},
};

START_TEST(test_probe_failures)
{
	size_t len;
	uint8_t *buf = read_conf(probe_cases[_i].base, &len);
	struct image_info info;
	mpictr_err *err = NULL;
	int fd, rc;

	if (strcmp(sif_host_arch(), "amd64") != 0 &&
	    strcmp(sif_host_arch(), "386") != 0)
		memcpy(buf + DESC(2, 209), sif_arch_code(sif_host_arch()), 2);
	probe_cases[_i].mutate(buf, &len);
	fd = mem_fd(buf, len);
	rc = image_probe_fd(fd, "p.sif", &info, &err);
	if (!probe_cases[_i].want) {
		ck_assert_msg(rc == 0, "%s", mpictr_err_message(err));
		image_info_free(&info);
	} else {
		ck_assert_int_eq(rc, -1);
		ck_assert_msg(strstr(mpictr_err_message(err),
				     probe_cases[_i].want) != NULL,
			      "message '%s' lacks '%s'",
			      mpictr_err_message(err), probe_cases[_i].want);
		ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "p.sif"));
		mpictr_err_free(err);
	}
	close(fd);
	free(buf);
}
END_TEST

START_TEST(test_probe_missing)
{
	struct image_info info;
	mpictr_err *err = NULL;

	ck_assert_int_eq(image_probe("/nonexistent/x.sif", &info, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err), "image '/nonexistent/x.sif': "
						  "No such file or directory");
	mpictr_err_free(err);
	ck_assert(image_arch_runnable(sif_host_arch()));
	ck_assert(!image_arch_runnable("s390x") ||
		  strcmp(sif_host_arch(), "s390x") == 0);
}
END_TEST

/* The conformance checks (testutil.h): 7 tests and 4 loops. */
static bool have_conformance(void)
{
	return test_have_conformance(
	    "check_sif", (int)(ARRAY_SIZE(list_golden) + ARRAY_SIZE(info_golden) +
			       ARRAY_SIZE(malformed) + ARRAY_SIZE(probe_cases)) +
			     7);
}

Suite *suite_sif(void);
Suite *suite_sif(void)
{
	Suite *s = suite_create("sif");
	TCase *tc = tcase_create("reader");
	TCase *tm = tcase_create("malformed");
	TCase *tw = tcase_create("writer");
	TCase *tp = tcase_create("probe");

	tcase_add_test(tc, test_names);
	tcase_add_test(tm, test_not_regular_and_missing);
	tcase_add_test(tp, test_probe_missing);
	if (have_conformance()) {
		/* 7 tests and 4 loops (the count above) */
		tcase_add_loop_test(tc, test_list_and_header_golden, 0,
				    (int)ARRAY_SIZE(list_golden));
		tcase_add_loop_test(tc, test_info_golden, 0,
				    (int)ARRAY_SIZE(info_golden));
		tcase_add_test(tc, test_every_conformance_image_loads);
		tcase_add_test(tc, test_parse_fields);
		tcase_add_test(tc, test_info_unknown_id);
		tcase_add_loop_test(tm, test_malformed, 0,
				    (int)ARRAY_SIZE(malformed));
		tcase_add_test(tm, test_truncations);
		tcase_add_test(tw, test_write_round_trip);
		tcase_add_test(tw, test_create_from_squashfs);
		tcase_add_test(tw, test_mksquashfs_descriptors);
		tcase_add_test(tp, test_probe_kinds);
		tcase_add_loop_test(tp, test_probe_failures, 0,
				    (int)ARRAY_SIZE(probe_cases));
	}
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tm);
	suite_add_tcase(s, tw);
	suite_add_tcase(s, tp);
	return s;
}
