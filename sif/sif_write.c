/* sif_write.c - SIF writer (Apptainer's layout, docs/sif.md "What is
 * written") and `mpictr sif create`: wrap a squashfs file, or a directory
 * packed with mksquashfs, into a new SIF with a primary system partition.
 * The output is written under a temporary name in the target directory and
 * renamed into place, so a failure leaves nothing behind.
 */
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "sif/image.h"
#include "common/proc.h"
#include "sif/sif.h"
#include "sif/sif_write.h"
#include "common/util.h"

#define SIF_WRITE_DESCRIPTORS 48
#define SIF_WRITE_DESC_OFFSET 4096
#define SIF_PART_ALIGN 4096
static const char sif_launch_script[] = "#!/usr/bin/env run-singularity\n";

static void put_u32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put_i64(uint8_t *p, int64_t v)
{
	uint64_t u = htole64((uint64_t)v);
	memcpy(p, &u, sizeof(u));
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t r = TEMP_FAILURE_RETRY(pwrite(fd, p, n, (off_t)off));
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Copy len bytes from in (offset 0) to out at off. Sets errno on error. */
static int copy_range(int in, int out, uint64_t off, uint64_t len)
{
	loff_t ioff = 0, ooff = (loff_t)off;
	char buf[65536];

	while (len > 0) {
		ssize_t n =
		    copy_file_range(in, &ioff, out, &ooff,
				    len > (1u << 30) ? (1u << 30) : len, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS ||
			      errno == EINVAL || errno == EOPNOTSUPP))
			break;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO; /* source shorter than announced */
			return -1;
		}
		len -= (uint64_t)n;
	}
	while (len > 0) {
		size_t want = len < sizeof(buf) ? len : sizeof(buf);
		if (pread_full(in, buf, want, ioff) < 0)
			return -1;
		if (pwrite_all(out, buf, want, (uint64_t)ooff) < 0)
			return -1;
		ioff += (loff_t)want;
		ooff += (loff_t)want;
		len -= want;
	}
	return 0;
}

int sif_write_fd(int fd, const char *name, const struct sif_object_input *objs,
		 size_t nobjs, mpictr_err **err)
{
	return sif_write_fd_fixed(fd, name, objs, nobjs, NULL, -1, err);
}

int sif_write_fd_fixed(int fd, const char *name,
		       const struct sif_object_input *objs, size_t nobjs,
		       const uint8_t *fixed_id, int64_t when, mpictr_err **err)
{
	uint8_t hdr[SIF_HEADER_SIZE] = {0};
	cleanup_free uint8_t *table = NULL;
	const uint64_t data_off =
	    SIF_WRITE_DESC_OFFSET + SIF_WRITE_DESCRIPTORS * SIF_DESC_SIZE;
	uint64_t cursor = data_off;
	int64_t now = when >= 0 ? when : (int64_t)time(NULL);
	const char *arch = "00";
	bool have_primary = false;
	uint8_t id[16];
	size_t i;

	if (nobjs > SIF_WRITE_DESCRIPTORS)
		return err_set(err, 0, "sif '%s': %zu objects, at most %d",
			       name, nobjs, SIF_WRITE_DESCRIPTORS);
	table = xcalloc(SIF_WRITE_DESCRIPTORS, SIF_DESC_SIZE);
	for (i = 0; i < nobjs; i++) {
		const struct sif_object_input *o = &objs[i];
		uint8_t *d = table + i * SIF_DESC_SIZE;
		uint64_t start = cursor;
		int rc;

		if (o->datatype == SIF_DATA_PARTITION) {
			start = (cursor + SIF_PART_ALIGN - 1) / SIF_PART_ALIGN *
				SIF_PART_ALIGN;
			if (o->parttype == SIF_PART_PRIM_SYS) {
				if (have_primary)
					return err_set(err, 0,
						       "sif '%s': a second "
						       "primary partition",
						       name);
				have_primary = true;
				arch = o->arch_code;
			}
		}
		if (o->in_place)
			rc = i == 0 && start == SIF_WRITE_DATA_START
				 ? 0
				 : (errno = EINVAL, -1);
		else if (o->fd >= 0)
			rc = copy_range(o->fd, fd, start, o->len);
		else
			rc = pwrite_all(fd, o->data, o->len, start);
		if (rc < 0)
			return err_set(err, errno, "sif '%s': write object %zu",
				       name, i + 1);
		put_u32(d + 0, (uint32_t)o->datatype);
		d[4] = 1;
		put_u32(d + 5, (uint32_t)(i + 1));
		put_u32(d + 9, SIF_GROUP_MASK | 1);
		put_u32(d + 13, 0);
		put_i64(d + 17, (int64_t)start);
		put_i64(d + 25, (int64_t)o->len);
		put_i64(d + 33, (int64_t)(start - cursor + o->len));
		put_i64(d + 41, now);
		put_i64(d + 49, now);
		if (o->name)
			strncpy((char *)d + 73, o->name, SIF_NAME_SIZE);
		if (o->datatype == SIF_DATA_PARTITION) {
			put_u32(d + 201, (uint32_t)o->fstype);
			put_u32(d + 205, (uint32_t)o->parttype);
			memcpy(d + 209, o->arch_code, 2);
		}
		cursor = start + o->len;
	}
	if (fixed_id)
		memcpy(id, fixed_id, sizeof(id));
	else if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return err_set(err, errno, "sif '%s': random ID", name);
	id[6] = (uint8_t)((id[6] & 0x0f) | 0x40); /* version 4 */
	id[8] = (uint8_t)((id[8] & 0x3f) | 0x80); /* RFC 4122 variant */

	memcpy(hdr, sif_launch_script, sizeof(sif_launch_script) - 1);
	memcpy(hdr + 32, "SIF_MAGIC", 10);
	memcpy(hdr + 42, "01", 3);
	memcpy(hdr + 45, arch, 2);
	memcpy(hdr + 48, id, 16);
	put_i64(hdr + 64, now);
	put_i64(hdr + 72, now);
	put_i64(hdr + 80, (int64_t)(SIF_WRITE_DESCRIPTORS - nobjs));
	put_i64(hdr + 88, SIF_WRITE_DESCRIPTORS);
	put_i64(hdr + 96, SIF_WRITE_DESC_OFFSET);
	put_i64(hdr + 104, SIF_WRITE_DESCRIPTORS * SIF_DESC_SIZE);
	put_i64(hdr + 112, (int64_t)data_off);
	put_i64(hdr + 120, (int64_t)(cursor - data_off));
	/* Objects first, then the table, then the header, as the Go library
	 * does; bytes 128..4095 stay zero (a hole). */
	if (pwrite_all(fd, table, SIF_WRITE_DESCRIPTORS * SIF_DESC_SIZE,
		       SIF_WRITE_DESC_OFFSET) < 0 ||
	    pwrite_all(fd, hdr, sizeof(hdr), 0) < 0)
		return err_set(err, errno, "sif '%s': write header", name);
	if (ftruncate(fd, (off_t)cursor) < 0)
		return err_set(err, errno, "sif '%s': set size", name);
	return 0;
}

/* ---- mksquashfs ---- */

int sif_mksquashfs(const char *dir, const char *out, sif_progress_fn progress,
		   void *data, mpictr_err **err)
{
	return sif_mksquashfs_keep(dir, out, -1, progress, data, err);
}

int sif_mksquashfs_keep(const char *dir, const char *out, int keep_fd,
			sif_progress_fn progress, void *data, mpictr_err **err)
{
	const char *prog = getenv("MPICTR_MKSQUASHFS");
	/* Owners are kept (no -all-root): see docs/sif.md. With progress,
	 * mksquashfs's own progress bar is relayed as it comes. */
	const char *argv[] = {"mksquashfs", dir,      out,
			      "-noappend",  "-quiet", "-no-progress",
			      "-comp",	    "gzip",   NULL};
	int fd, status;
	char buf[4096];
	size_t len = 0;
	pid_t pid;
	mpictr_err *e = NULL;

	if (prog && *prog)
		argv[0] = prog;
	prog = argv[0];
	if (progress)
		argv[5] = "-progress";
	pid = proc_spawn_output_keep(prog, (char **)argv, true, true, keep_fd,
				     &fd, &e);
	if (pid < 0) {
		int en = mpictr_err_errno(e);

		mpictr_err_free(e);
		if (en == ENOENT)
			return err_set(err, ENOENT,
				       "run %s to pack '%s' (hint: install "
				       "squashfs-tools)",
				       prog, dir);
		return err_set(err, en, "run %s to pack '%s'", prog, dir);
	}
	for (;;) {
		ssize_t n = TEMP_FAILURE_RETRY(
		    read(fd, buf + len, sizeof(buf) - 1 - len));
		if (n <= 0)
			break;
		if (progress)
			progress(buf + len, (size_t)n, data);
		len += (size_t)n;
		if (len == sizeof(buf) - 1) { /* keep the tail */
			memmove(buf, buf + len / 2, len - len / 2);
			len -= len / 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)) < 0)
		return err_set(err, errno, "wait for %s", prog);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* the last non-empty line of its output */
		char *line, *end;
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
			buf[--len] = '\0';
		line = strrchr(buf, '\n');
		line = line ? line + 1 : buf;
		for (end = line; *end; end++)
			if ((unsigned char)*end < 0x20)
				*end = ' ';
		return err_set(err, 0, "%s '%s' failed (%s %d)%s%s", prog, dir,
			       WIFEXITED(status) ? "exit status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status)
						 : WTERMSIG(status),
			       *line ? ": " : "", line);
	}
	return 0;
}

/* ---- create ---- */

/* Create a new file next to target: "<dir>/.<base>.<tag>.XXXXXX", mode
 * 0777 & ~umask (like Apptainer's 0777 create) for the SIF, 0600 for the
 * scratch squashfs. Stores the name in *tmp. Returns the fd or -1. */
int sif_open_temp(const char *target, const char *tag, mode_t mode, char **tmp,
		  mpictr_err **err)
{
	cleanup_free char *d = xstrdup(target), *b = xstrdup(target);
	const char *dir = dirname(d), *base = basename(b);
	int tries, fd;

	for (tries = 0; tries < 16; tries++) {
		uint32_t r;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return err_set(err, errno, "random name");
		*tmp = xasprintf("%s/.%s.%s.%08x", dir, base, tag, r);
		fd = open(*tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			break;
		free(*tmp);
		*tmp = NULL;
	}
	err_set(err, errno, "create a temporary file in '%s'", dir);
	free(*tmp);
	*tmp = NULL;
	return -1;
}

/* ---- adding an object to an existing image ---- */

/* First free slot, and an ID for it: slot + 1 as the Go library gives,
 * or past the largest ID when that one is taken. */
static int free_slot(const struct sif_image *img, const uint8_t *table,
		     uint32_t *slot, uint32_t *id)
{
	uint32_t max = 0;

	for (size_t i = 0; i < img->ndescs; i++)
		if (img->descs[i].id > max)
			max = img->descs[i].id;
	for (int64_t i = 0; i < img->hdr.desc_total; i++) {
		if (table[i * SIF_DESC_SIZE + 4] != 0)
			continue;
		*slot = (uint32_t)i;
		*id = sif_find_id(img, (uint32_t)i + 1) ? max + 1
							: (uint32_t)i + 1;
		return 0;
	}
	return -1;
}

int sif_append_object(int fd, const struct sif_image *img,
		      const struct sif_append *a, uint32_t *id_out,
		      mpictr_err **err)
{
	uint8_t hdr[SIF_HEADER_SIZE], *d;
	cleanup_free uint8_t *table = NULL;
	size_t tl = (size_t)img->hdr.desc_size;
	uint64_t off =
	    (uint64_t)img->hdr.data_offset + (uint64_t)img->hdr.data_size;
	bool zero = img->hdr.modified_at == SIF_ZERO_TIME;
	int64_t now = zero ? SIF_ZERO_TIME : (int64_t)time(NULL);
	uint32_t slot, id;

	table = xmalloc(tl + 1);
	if (pread_full(fd, hdr, sizeof(hdr), 0) < 0 ||
	    pread_full(fd, table, tl, (off_t)img->hdr.desc_offset) < 0)
		return err_set(err, errno, "sif '%s': read", img->name);
	if (free_slot(img, table, &slot, &id) < 0)
		return err_set(err, 0,
			       "sif '%s': no free descriptor (all %" PRId64
			       " are used)",
			       img->name, img->hdr.desc_total);
	for (size_t i = 0; i < img->ndescs; i++) {
		uint64_t e = (uint64_t)img->descs[i].offset +
			     (uint64_t)img->descs[i].size;
		if (e > off)
			off = e;
	}
	d = table + (size_t)slot * SIF_DESC_SIZE;
	memset(d, 0, SIF_DESC_SIZE);
	put_u32(d + 0, (uint32_t)a->datatype);
	d[4] = 1;
	put_u32(d + 5, id);
	put_u32(d + 9, a->group);
	put_u32(d + 13, a->link);
	put_i64(d + 17, (int64_t)off);
	put_i64(d + 25, (int64_t)a->len);
	put_i64(d + 33, (int64_t)a->len);
	put_i64(d + 41, now);
	put_i64(d + 49, now);
	memcpy(d + 201, a->extra, SIF_EXTRA_SIZE);
	put_i64(hdr + 72, now);
	put_i64(hdr + 80, img->hdr.desc_free - 1);
	put_i64(hdr + 120, (int64_t)(off + a->len) - img->hdr.data_offset);
	/* data, then its descriptor, then the header, as the Go library
	 * writes them */
	if (pwrite_all(fd, a->data, a->len, off) < 0 ||
	    pwrite_all(fd, d, SIF_DESC_SIZE,
		       (uint64_t)img->hdr.desc_offset +
			   (uint64_t)slot * SIF_DESC_SIZE) < 0 ||
	    pwrite_all(fd, hdr, sizeof(hdr), 0) < 0)
		return err_set(err, errno, "sif '%s': write", img->name);
	*id_out = id;
	return 0;
}
