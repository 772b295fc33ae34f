/* mpiinject.c - identify MPI libraries (ELF DT_SONAME, file-name version),
 * find the image's, and check that the host's may replace them. The image
 * is inspected by the holder at run time, once mounted and before the
 * pivot: that works for every image kind without a second squashfs reader,
 * and sees exactly the files the ranks will see.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "host/imgread.h"
#include "host/mpiinject.h"
#include "common/syscalls.h"
#include "common/util.h"

/* ---- ELF ------------------------------------------------------------- */

#define ELF_MAX_SECTIONS 4096
#define ELF_MAX_DYN 8192
#define SONAME_MAX 255

int mpiabi_elf_soname(mpiabi_read_fn rd, void *ctx, uint64_t size,
		      const char *what, char **soname, mpictr_err **err)
{
	Elf64_Ehdr eh;
	Elf64_Shdr dyn, str;
	uint64_t soff = UINT64_MAX;
	bool found = false;
	char name[SONAME_MAX + 1];

	*soname = NULL;
	if (size < sizeof(eh) || rd(ctx, &eh, sizeof(eh), 0) < 0)
		return err_set(err, 0, "'%s': too short for an ELF header",
			       what);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return err_set(err, 0, "'%s': not an ELF file", what);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return err_set(err, 0,
			       "'%s': not a 64-bit little-endian ELF object",
			       what);
	if (eh.e_type != ET_DYN)
		return err_set(err, 0, "'%s': not a shared object (e_type %u)",
			       what, (unsigned)eh.e_type);
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > ELF_MAX_SECTIONS || eh.e_shoff > size ||
	    (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
		return err_set(err, 0,
			       "'%s': section header table (e_shoff %llu, "
			       "e_shnum %u) outside the file",
			       what, (unsigned long long)eh.e_shoff,
			       (unsigned)eh.e_shnum);
	for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
		if (rd(ctx, &dyn, sizeof(dyn),
		       eh.e_shoff + (uint64_t)i * sizeof(dyn)) < 0)
			return err_set(err, EIO, "'%s': read section %u", what,
				       i);
		found = dyn.sh_type == SHT_DYNAMIC;
	}
	if (!found)
		return 0; /* static or odd: no soname */
	if (dyn.sh_link >= eh.e_shnum ||
	    rd(ctx, &str, sizeof(str),
	       eh.e_shoff + (uint64_t)dyn.sh_link * sizeof(str)) < 0)
		return err_set(err, 0,
			       "'%s': dynamic section links to section %u, "
			       "outside the table",
			       what, (unsigned)dyn.sh_link);
	if (dyn.sh_offset > size || dyn.sh_size > size - dyn.sh_offset ||
	    str.sh_offset > size || str.sh_size > size - str.sh_offset)
		return err_set(err, 0,
			       "'%s': dynamic section or its string table "
			       "outside the file",
			       what);
	for (uint64_t k = 0;
	     k < dyn.sh_size / sizeof(Elf64_Dyn) && k < ELF_MAX_DYN; k++) {
		Elf64_Dyn d;
		if (rd(ctx, &d, sizeof(d), dyn.sh_offset + k * sizeof(d)) < 0)
			return err_set(err, EIO, "'%s': read dynamic entry",
				       what);
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_SONAME) {
			soff = d.d_un.d_val;
			break;
		}
	}
	if (soff == UINT64_MAX)
		return 0;
	if (soff >= str.sh_size)
		return err_set(err, 0,
			       "'%s': DT_SONAME offset %llu outside the string "
			       "table (%llu bytes)",
			       what, (unsigned long long)soff,
			       (unsigned long long)str.sh_size);
	{
		uint64_t avail = str.sh_size - soff;
		size_t n = avail > SONAME_MAX ? SONAME_MAX : (size_t)avail;
		if (rd(ctx, name, n, str.sh_offset + soff) < 0)
			return err_set(err, EIO, "'%s': read DT_SONAME", what);
		name[n] = '\0';
		if (strnlen(name, n) == n)
			return err_set(err, 0,
				       "'%s': DT_SONAME is not terminated "
				       "within %zu bytes",
				       what, n);
	}
	if (!*name)
		return 0;
	*soname = xstrdup(name);
	return 0;
}

struct memsrc {
	const unsigned char *p;
	size_t len;
};

static int mem_read(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct memsrc *m = ctx;

	if (off > m->len || n > m->len - off)
		return -1;
	memcpy(buf, m->p + off, n);
	return 0;
}

int mpiabi_elf_soname_mem(const void *buf, size_t len, char **soname,
			  mpictr_err **err)
{
	struct memsrc m = {buf, len};

	return mpiabi_elf_soname(mem_read, &m, len, "buffer", soname, err);
}

static int fd_read(void *ctx, void *buf, size_t n, uint64_t off)
{
	return pread_full(*(int *)ctx, buf, n, (off_t)off);
}

/* ---- names and versions --------------------------------------------- */

/* "PREFIX.so.N" exactly, N decimal: N, else -1. */
static int so_major(const char *name, const char *prefix)
{
	size_t l = strlen(prefix);
	long v;

	if (strncmp(name, prefix, l) || strncmp(name + l, ".so.", 4))
		return -1;
	if (parse_long(name + l + 4, 0, 1000000, &v) < 0)
		return -1;
	return (int)v;
}

enum mpi_family mpiabi_family(const char *soname, int *major)
{
	int m;

	*major = -1;
	if (!soname)
		return MPI_FAMILY_NONE;
	if ((m = so_major(soname, "libmpich")) >= 0) {
		*major = m;
		return MPI_FAMILY_MPICH;
	}
	if ((m = so_major(soname, "libmpi")) >= 0) {
		*major = m;
		return m == 12 ? MPI_FAMILY_MPICH : MPI_FAMILY_OPENMPI;
	}
	return MPI_FAMILY_NONE;
}

int mpiabi_file_minor(const char *file)
{
	const char *s = strstr(file, ".so.");
	char *end;
	long v;

	if (!s)
		return -1;
	s += 4;
	s = strchr(s, '.');
	if (!s || s[1] < '0' || s[1] > '9')
		return -1;
	errno = 0;
	v = strtol(s + 1, &end, 10);
	if (errno || v > 1000000 || (*end && *end != '.'))
		return -1;
	return (int)v;
}

const char *mpiabi_family_name(enum mpi_family f)
{
	switch (f) {
	case MPI_FAMILY_MPICH:
		return "MPICH";
	case MPI_FAMILY_OPENMPI:
		return "Open MPI";
	case MPI_FAMILY_NONE:
	default:
		return "unknown";
	}
}

static char *lib_desc(const struct mpi_lib *l)
{
	return xasprintf("%s %s ('%s', %s)", mpiabi_family_name(l->family),
			 l->soname, l->path, l->file);
}

int mpiabi_compatible(const struct mpi_lib *host, const struct mpi_lib *image,
		      mpictr_err **err)
{
	cleanup_free char *h = lib_desc(host), *i = lib_desc(image);

	if (host->family == MPI_FAMILY_NONE)
		return err_set(err, 0,
			       "host library %s is not an MPI library "
			       "of a known ABI",
			       h);
	if (host->family != image->family)
		return err_set(err, 0,
			       "host %s is not ABI compatible with the "
			       "image's %s: different MPI families",
			       h, i);
	if (host->major != image->major)
		return err_set(err, 0,
			       "host %s is not ABI compatible with the "
			       "image's %s: different major versions (%d, %d)",
			       h, i, host->major, image->major);
	if (host->family == MPI_FAMILY_MPICH && host->minor >= 0 &&
	    image->minor >= 0 && host->minor < image->minor)
		return err_set(err, 0,
			       "host %s is older than the image's %s (minor "
			       "version %d < %d): the image may use symbols "
			       "it lacks",
			       h, i, host->minor, image->minor);
	return 0;
}

void mpi_lib_free(struct mpi_lib *l)
{
	free(l->path);
	free(l->soname);
	free(l->file);
	memset(l, 0, sizeof(*l));
}

void mpi_libs_free(struct mpi_lib *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mpi_lib_free(&l[i]);
	free(l);
}

/* Fill *out from the library read through rd (size bytes); real is its
 * resolved path. */
static int describe(mpiabi_read_fn rd, void *ctx, uint64_t size,
		    const char *path, const char *real, struct mpi_lib *out,
		    mpictr_err **err)
{
	const char *base = strrchr(real, '/');
	char *soname = NULL;

	memset(out, 0, sizeof(*out));
	if (mpiabi_elf_soname(rd, ctx, size, path, &soname, err) < 0)
		return -1;
	out->path = xstrdup(path);
	out->file = xstrdup(base ? base + 1 : real);
	if (!soname) {
		const char *b = strrchr(path, '/');
		soname = xstrdup(b ? b + 1 : path);
	}
	out->soname = soname;
	out->family = mpiabi_family(soname, &out->major);
	out->minor = mpiabi_file_minor(out->file);
	return 0;
}

/* Fill *out from an open fd of the library; real is its resolved path. */
static int describe_fd(int fd, const char *path, const char *real,
		       struct mpi_lib *out, mpictr_err **err)
{
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "stat '%s'", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, 0, "'%s' is not a regular file", path);
	return describe(fd_read, &fd, (uint64_t)st.st_size, path, real, out,
			err);
}

int mpiabi_inspect_host(const char *path, struct mpi_lib *out, mpictr_err **err)
{
	cleanup_close int fd = -1;
	cleanup_free char *real = realpath(path, NULL);

	if (!real)
		return err_set(err, errno, "MPI library '%s'", path);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, errno, "open MPI library '%s'", path);
	return describe_fd(fd, path, real, out, err);
}

/* ---- the image's libraries ------------------------------------------ */

static const char *const image_lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
    "/lib",
    "/usr/local/lib",
    "/usr/local/lib64",
};

/* Directories the image's /etc/ld.so.conf.d/\*.conf files name. */
static void conf_dirs(struct image_reader *r, char ***dirs)
{
	cleanup_strv char **names = NULL;

	if (image_reader_list(r, "/etc/ld.so.conf.d", &names, NULL) < 0)
		return;
	for (size_t i = 0; names && names[i]; i++) {
		size_t l = strlen(names[i]), len;
		cleanup_free char *p = NULL, *text = NULL;
		char *save = NULL, *line;

		if (l < 6 || strcmp(names[i] + l - 5, ".conf"))
			continue;
		p = xasprintf("/etc/ld.so.conf.d/%s", names[i]);
		if (image_reader_read(r, p, 16383, &text, &len, NULL) < 0)
			continue;
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			line += strspn(line, " \t");
			if (line[0] == '/' && strlen(line) < 1024)
				strv_push(dirs, line);
		}
	}
}

static bool mpi_name(const char *n)
{
	return so_major(n, "libmpi") >= 0 || so_major(n, "libmpich") >= 0;
}

/* mpiabi_read_fn over a file of an image. */
struct image_file {
	struct image_reader *r;
	const char *path;
};

static int image_file_read(void *ctx, void *buf, size_t n, uint64_t off)
{
	struct image_file *f = ctx;

	return image_reader_pread(f->r, f->path, buf, n, off, NULL);
}

/* The MPI library at path of the image, unless seen (by the path it
 * resolves to); 1 when *out was filled. */
static int image_lib(struct image_reader *r, const char *path, char ***seen,
		     struct mpi_lib *out)
{
	cleanup_free char *canon = NULL;
	struct image_file f = {r, path};
	mpictr_err *e = NULL;
	uint64_t size;
	mode_t mode;

	if (image_reader_stat(r, path, &mode, &size, &canon, NULL) < 0 ||
	    !S_ISREG(mode) || strv_contains(*seen, canon))
		return 0;
	strv_push(seen, canon);
	/* Reported as the container sees it. */
	if (describe(image_file_read, &f, size, canon, canon, out, &e) < 0) {
		log_debug("image library: %s", mpictr_err_message(e));
		mpictr_err_free(e);
		return 0;
	}
	return 1;
}

int mpiabi_find_in_reader(struct image_reader *r, struct mpi_lib **libs,
			  size_t *n)
{
	cleanup_strv char **dirs = NULL;
	cleanup_strv char **seen = NULL;

	*libs = NULL;
	*n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(image_lib_dirs); i++)
		strv_push(&dirs, image_lib_dirs[i]);
	conf_dirs(r, &dirs);
	for (size_t i = 0; dirs[i]; i++) {
		cleanup_strv char **names = NULL;

		if (image_reader_list(r, dirs[i], &names, NULL) < 0)
			continue;
		for (size_t k = 0; names && names[k]; k++) {
			cleanup_free char *p = NULL;
			struct mpi_lib l;

			if (!mpi_name(names[k]))
				continue;
			p = xasprintf("%s/%s", dirs[i], names[k]);
			if (!image_lib(r, p, &seen, &l))
				continue;
			*libs = xrealloc(*libs, (*n + 1) * sizeof(**libs));
			(*libs)[(*n)++] = l;
		}
	}
	return 0;
}

int mpiabi_find_in_image(const char *root, struct mpi_lib **libs, size_t *n,
			 mpictr_err **err)
{
	struct image_reader *r = NULL;
	int rc;

	*libs = NULL;
	*n = 0;
	if (image_reader_open_dir(root, &r, err) < 0)
		return err_wrap(err, "open the image root");
	rc = mpiabi_find_in_reader(r, libs, n);
	image_reader_close(r);
	return rc;
}

/* ---- the check --------------------------------------------------------- */

static int check_one(const struct mpi_inject *inj, const struct mpi_lib *img,
		     size_t nimg, mpictr_err **err)
{
	struct strbuf found = STRBUF_INIT;
	size_t same = 0;
	int rc = 0;

	for (size_t i = 0; i < nimg && rc == 0; i++) {
		if (img[i].family != inj->host.family)
			continue;
		same++;
		rc = mpiabi_compatible(&inj->host, &img[i], err);
	}
	if (rc == 0 && same == 0) {
		for (size_t i = 0; i < nimg; i++)
			sb_printf(&found, "%s%s %s at '%s'", i ? ", " : "",
				  mpiabi_family_name(img[i].family),
				  img[i].soname, img[i].path);
		rc = err_set(err, 0,
			     "the image has no %s library for host %s '%s' "
			     "to replace (image: %s)",
			     mpiabi_family_name(inj->host.family),
			     inj->host.soname, inj->host.path,
			     nimg ? found.buf : "no MPI library found");
	}
	sb_free(&found);
	if (rc < 0)
		err_wrap(err, "profile '%s': MPI ABI check", inj->profile);
	return rc;
}

int mpiinject_check_libs(const struct mpi_inject *inj, size_t n,
			 const struct mpi_lib *img, size_t nimg,
			 char ***warnings, mpictr_err **err)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		mpictr_err *e = NULL;

		if (check_one(&inj[i], img, nimg, &e) == 0)
			continue;
		if (inj[i].warn_only) {
			strv_push_own(warnings,
				      xasprintf("%s (continuing: mpi_abi = "
						"warn)",
						mpictr_err_message(e)));
			mpictr_err_free(e);
			continue;
		}
		if (err)
			*err = e;
		else
			mpictr_err_free(e);
		rc = -1;
	}
	if (rc < 0)
		err_hint(err, "pick a profile whose MPI matches the image's, "
			      "or run without --profile to use the image's "
			      "own MPI");
	return rc;
}

int mpiinject_check(const struct mpi_inject *inj, size_t n,
		    const char *image_root, mpictr_err **err)
{
	struct mpi_lib *img = NULL;
	size_t nimg = 0;
	char **warnings = NULL;
	int rc;

	if (n == 0)
		return 0;
	if (mpiabi_find_in_image(image_root, &img, &nimg, err) < 0)
		return -1;
	rc = mpiinject_check_libs(inj, n, img, nimg, &warnings, err);
	for (size_t i = 0; warnings && warnings[i]; i++)
		log_warn("%s", warnings[i]);
	strv_free(warnings);
	mpi_libs_free(img, nimg);
	return rc;
}
