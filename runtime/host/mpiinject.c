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
#include "host/ldcache.h"
#include "host/mpiinject.h"
#include "common/syscalls.h"
#include "common/util.h"

/* ---- ELF ------------------------------------------------------------- */

#define ELF_MAX_SECTIONS 4096
#define ELF_MAX_DYN 8192
#define SONAME_MAX 255

/* A string of the dynamic string table str at off: *out (malloc'ed,
 * NULL when empty). */
static int dyn_string(mpiabi_read_fn rd, void *ctx, const Elf64_Shdr *str,
		      uint64_t off, const char *what, const char *tag,
		      char **out, mpictr_err **err)
{
	char name[SONAME_MAX + 1];
	uint64_t avail;
	size_t n;

	*out = NULL;
	if (off >= str->sh_size)
		return err_set(err, 0,
			       "'%s': %s offset %llu outside the string "
			       "table (%llu bytes)",
			       what, tag, (unsigned long long)off,
			       (unsigned long long)str->sh_size);
	avail = str->sh_size - off;
	n = avail > SONAME_MAX ? SONAME_MAX : (size_t)avail;
	if (rd(ctx, name, n, str->sh_offset + off) < 0)
		return err_set(err, EIO, "'%s': read %s", what, tag);
	name[n] = '\0';
	if (strnlen(name, n) == n)
		return err_set(err, 0,
			       "'%s': %s is not terminated within %zu bytes",
			       what, tag, n);
	if (*name)
		*out = xstrdup(name);
	return 0;
}

/* The dynamic section and its string table: 1 when found, 0 when the
 * object has none (static), -1 with *err. */
static int dyn_sections(mpiabi_read_fn rd, void *ctx, uint64_t size,
			const char *what, bool shared_only, Elf64_Shdr *dyn,
			Elf64_Shdr *str, mpictr_err **err)
{
	Elf64_Ehdr eh;
	bool found = false;

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
	if (eh.e_type != ET_DYN && (shared_only || eh.e_type != ET_EXEC))
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
		if (rd(ctx, dyn, sizeof(*dyn),
		       eh.e_shoff + (uint64_t)i * sizeof(*dyn)) < 0)
			return err_set(err, EIO, "'%s': read section %u", what,
				       i);
		found = dyn->sh_type == SHT_DYNAMIC;
	}
	if (!found)
		return 0; /* static or odd: no dynamic section */
	if (dyn->sh_link >= eh.e_shnum ||
	    rd(ctx, str, sizeof(*str),
	       eh.e_shoff + (uint64_t)dyn->sh_link * sizeof(*str)) < 0)
		return err_set(err, 0,
			       "'%s': dynamic section links to section %u, "
			       "outside the table",
			       what, (unsigned)dyn->sh_link);
	if (dyn->sh_offset > size || dyn->sh_size > size - dyn->sh_offset ||
	    str->sh_offset > size || str->sh_size > size - str->sh_offset)
		return err_set(err, 0,
			       "'%s': dynamic section or its string table "
			       "outside the file",
			       what);
	return 1;
}

/* The entries of the dynamic section that name things. */
static int dyn_entry(mpiabi_read_fn rd, void *ctx, const Elf64_Shdr *str,
		     const Elf64_Dyn *d, const char *what,
		     struct elf_dynamic *out, mpictr_err **err)
{
	char *s = NULL;

	switch (d->d_tag) {
	case DT_SONAME:
		if (out->soname)
			return 0;
		if (dyn_string(rd, ctx, str, d->d_un.d_val, what, "DT_SONAME",
			       &s, err) < 0)
			return -1;
		out->soname = s;
		return 0;
	case DT_NEEDED:
		if (dyn_string(rd, ctx, str, d->d_un.d_val, what, "DT_NEEDED",
			       &s, err) < 0)
			return -1;
		if (s)
			strv_push_own(&out->needed, s);
		return 0;
	case DT_RUNPATH:
	case DT_RPATH:
		if (dyn_string(rd, ctx, str, d->d_un.d_val, what,
			       d->d_tag == DT_RPATH ? "DT_RPATH" : "DT_RUNPATH",
			       &s, err) < 0)
			return -1;
		if (d->d_tag == DT_RUNPATH || !out->runpath) {
			free(out->runpath);
			out->runpath = s;
		} else {
			free(s);
		}
		return 0;
	default:
		return 0;
	}
}

int mpiabi_elf_dynamic(mpiabi_read_fn rd, void *ctx, uint64_t size,
		       const char *what, unsigned flags,
		       struct elf_dynamic *out, mpictr_err **err)
{
	Elf64_Shdr dyn, str;
	int r;

	memset(out, 0, sizeof(*out));
	r = dyn_sections(rd, ctx, size, what, !(flags & ELF_DYN_PROGRAM), &dyn,
			 &str, err);
	if (r <= 0)
		return r;
	for (uint64_t k = 0;
	     k < dyn.sh_size / sizeof(Elf64_Dyn) && k < ELF_MAX_DYN; k++) {
		Elf64_Dyn d;
		if (rd(ctx, &d, sizeof(d), dyn.sh_offset + k * sizeof(d)) < 0) {
			elf_dynamic_free(out);
			return err_set(err, EIO, "'%s': read dynamic entry",
				       what);
		}
		if (d.d_tag == DT_NULL)
			break;
		if (!(flags & ELF_DYN_NEEDED) && d.d_tag != DT_SONAME)
			continue;
		if (dyn_entry(rd, ctx, &str, &d, what, out, err) < 0) {
			elf_dynamic_free(out);
			return -1;
		}
		if (!(flags & ELF_DYN_NEEDED) && out->soname)
			break;
	}
	return 0;
}

void elf_dynamic_free(struct elf_dynamic *d)
{
	free(d->soname);
	strv_free(d->needed);
	free(d->runpath);
	memset(d, 0, sizeof(*d));
}

int mpiabi_elf_soname(mpiabi_read_fn rd, void *ctx, uint64_t size,
		      const char *what, char **soname, mpictr_err **err)
{
	struct elf_dynamic d;

	*soname = NULL;
	if (mpiabi_elf_dynamic(rd, ctx, size, what, 0, &d, err) < 0)
		return -1;
	*soname = steal_ptr(&d.soname);
	elf_dynamic_free(&d);
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

/* ---- the MPI a program links ---------------------------------------- */

/* How many objects the dependency walk reads at most. */
#define DEPS_MAX_OBJECTS 64

/* The system libraries every program links, which link no MPI: not
 * worth opening. */
static bool dep_is_libc(const char *n)
{
	static const char *const skip[] = {
	    "libc.so.6",       "libm.so.6",
	    "libpthread.so.0", "libdl.so.2",
	    "librt.so.1",      "libgcc_s.so.1",
	    "libstdc++.so.6",  "ld-linux-x86-64.so.2",
	    "libutil.so.1",    "libz.so.1",
	};

	for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
		if (strcmp(n, skip[i]) == 0)
			return true;
	return false;
}

struct deps_walk {
	char *const *env;
	char **queue; /* paths to read, in order */
	size_t next;
	char **cache_keys, **cache_values; /* ld.so.cache, once read */
	bool cache_read;
};

/* Push dir/name when it is a file; true when it was. */
static bool dep_try(struct deps_walk *w, const char *dir, size_t dlen,
		    const char *origin, const char *name)
{
	cleanup_free char *d = xstrndup(dir, dlen), *path = NULL;
	struct stat st;

	if (strncmp(d, "$ORIGIN", 7) == 0 || strncmp(d, "${ORIGIN}", 9) == 0) {
		char *rest = d + (d[1] == '{' ? 9 : 7);
		char *o = xasprintf("%s%s", origin, rest);
		free(d);
		d = o;
	}
	if (!*d)
		return false;
	path = xasprintf("%s/%s", d, name);
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (!strv_contains(w->queue, path))
		strv_push(&w->queue, path);
	return true;
}

/* dep_try over each directory of a ':'-separated list. */
static bool dep_try_list(struct deps_walk *w, const char *list,
			 const char *origin, const char *name)
{
	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ":");
		if (l && dep_try(w, p, l, origin, name))
			return true;
		p += l + (p[l] == ':');
	}
	return false;
}

/* Find the library name as ld.so would (DT_RUNPATH or DT_RPATH,
 * LD_LIBRARY_PATH, /etc/ld.so.cache, the default directories) and queue
 * it. */
static void dep_resolve(struct deps_walk *w, const char *name,
			const char *runpath, const char *origin)
{
	if (strchr(name, '/')) {
		dep_try(w, "/", 1, origin, name);
		return;
	}
	if (dep_try_list(w, runpath, origin, name) ||
	    dep_try_list(w, env_get(w->env, "LD_LIBRARY_PATH"), origin, name))
		return;
	if (!w->cache_read) {
		mpictr_err *e = NULL;
		w->cache_read = true;
		if (ldcache_read("/etc/ld.so.cache", &w->cache_keys,
				 &w->cache_values, &e) < 0)
			mpictr_err_free(e);
	}
	for (size_t i = 0; w->cache_keys && w->cache_keys[i]; i++)
		if (strcmp(w->cache_keys[i], name) == 0) {
			if (!strv_contains(w->queue, w->cache_values[i]))
				strv_push(&w->queue, w->cache_values[i]);
			return;
		}
	for (size_t i = 0; i < ARRAY_SIZE(image_lib_dirs); i++)
		if (dep_try(w, image_lib_dirs[i], strlen(image_lib_dirs[i]),
			    origin, name))
			return;
}

/* The dynamic section of the file at path (any error: none). */
static void dep_read(const char *path, struct elf_dynamic *dyn)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	mpictr_err *e = NULL;

	memset(dyn, 0, sizeof(*dyn));
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (mpiabi_elf_dynamic(fd_read, &fd, (uint64_t)st.st_size, path,
			       ELF_DYN_NEEDED | ELF_DYN_PROGRAM, dyn, &e) < 0)
		mpictr_err_free(e);
}

/* Look at one object of the walk: its MPI dependency (1, *out filled),
 * or its other dependencies queued (0). */
static int dep_visit(struct deps_walk *w, const char *path, struct mpi_lib *out)
{
	struct elf_dynamic dyn;
	cleanup_free char *origin = xstrdup(path);
	char *slash = strrchr(origin, '/');
	int found = 0;

	if (slash)
		*slash = '\0';
	dep_read(path, &dyn);
	for (char **n = dyn.needed; n && *n && !found; n++) {
		int major;
		enum mpi_family f = mpiabi_family(*n, &major);

		if (f == MPI_FAMILY_NONE)
			continue;
		memset(out, 0, sizeof(*out));
		out->soname = xstrdup(*n);
		out->family = f;
		out->major = major;
		out->minor = -1;
		out->path = xstrdup(path); /* the object that links it */
		found = 1;
	}
	for (char **n = dyn.needed; n && *n && !found; n++)
		if (!dep_is_libc(*n))
			dep_resolve(w, *n, dyn.runpath, origin);
	elf_dynamic_free(&dyn);
	return found;
}

int mpiabi_program_mpi(const char *program, char *const *env,
		       struct mpi_lib *out)
{
	struct deps_walk w = {.env = env};
	int found = 0;

	memset(out, 0, sizeof(*out));
	strv_push(&w.queue, program);
	while (!found && w.next < strv_len(w.queue) &&
	       w.next < DEPS_MAX_OBJECTS) {
		const char *path = w.queue[w.next++];
		found = dep_visit(&w, path, out);
	}
	strv_free(w.queue);
	strv_free(w.cache_keys);
	strv_free(w.cache_values);
	return found;
}
