/* mpiinject.h - host MPI injection (the "bind model"): identify an MPI
 * library by its ELF soname and file-name version, find the image's MPI
 * libraries, and decide whether the host's may replace them (an ABI check
 * in the manner of Sarus's MPI hook).
 *
 * ABI families: MPICH (libmpi.so.12 as Cray and Intel ship it,
 * libmpich.so.12 as Debian does): same major, and the host's minor version
 * (from the file name, libmpich.so.12.2.2 -> 2) no older than the image's.
 * Open MPI (libmpi.so.N, N != 12, e.g. 40): same major.
 */
#ifndef MPICTR_MPIINJECT_H
#define MPICTR_MPIINJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpictr.h"

/* Where injected libraries appear in the container; prepended to
 * LD_LIBRARY_PATH. */
#define MPIINJECT_DIR "/.mpictr/mpi/lib"

enum mpi_family {
	MPI_FAMILY_NONE = 0,
	MPI_FAMILY_MPICH,
	MPI_FAMILY_OPENMPI,
};

struct mpi_lib {
	char *path;   /* where it was found (host path or path in the image) */
	char *soname; /* DT_SONAME, or the file name when there is none */
	char *file;   /* the real file's name, e.g. libmpich.so.12.2.2 */
	enum mpi_family family;
	int major, minor; /* -1: unknown */
};

/* Reader for the ELF parser: copy n bytes at off into buf; 0 or -1. */
typedef int (*mpiabi_read_fn)(void *ctx, void *buf, size_t n, uint64_t off);

/* DT_SONAME of a 64-bit little-endian ELF shared object read through rd
 * (size bytes in all). *soname is NULL when the object has none. Returns 0,
 * or -1 with *err naming the malformed field (what names the file). Every
 * offset is checked against size. */
int mpiabi_elf_soname(mpiabi_read_fn rd, void *ctx, uint64_t size,
		      const char *what, char **soname, mpictr_err **err);
/* What the dynamic section of an ELF object names. */
struct elf_dynamic {
	char *soname;  /* DT_SONAME, or NULL */
	char **needed; /* DT_NEEDED, in order (NULL: none) */
	char *runpath; /* DT_RUNPATH, else DT_RPATH, or NULL */
};
/* mpiabi_elf_dynamic flags: also DT_NEEDED and the run path (else only
 * the soname); accept an executable (ET_EXEC) too. */
#define ELF_DYN_NEEDED 1u
#define ELF_DYN_PROGRAM 2u
/* The dynamic section of an ELF object read through rd, as
 * mpiabi_elf_soname: every offset checked against size; a static object
 * gives an empty *out. Free with elf_dynamic_free (also after -1). */
int mpiabi_elf_dynamic(mpiabi_read_fn rd, void *ctx, uint64_t size,
		       const char *what, unsigned flags,
		       struct elf_dynamic *out, mpictr_err **err);
void elf_dynamic_free(struct elf_dynamic *d);
/* The same over a memory buffer (unit tests, fuzzing). */
int mpiabi_elf_soname_mem(const void *buf, size_t len, char **soname,
			  mpictr_err **err);

/* Family and major of a soname ("libmpich.so.12" -> MPICH, 12). */
enum mpi_family mpiabi_family(const char *soname, int *major);
/* Minor version from a file name: "libmpich.so.12.2.2" -> 2; -1 when the
 * name carries none. */
int mpiabi_file_minor(const char *file);
const char *mpiabi_family_name(enum mpi_family f);

/* Is host compatible with image (same family and major; MPICH: host minor
 * >= image minor when both are known)? 0, or -1 with *err saying why. */
int mpiabi_compatible(const struct mpi_lib *host, const struct mpi_lib *image,
		      mpictr_err **err);

/* Describe a host library (path may be a symlink). */
int mpiabi_inspect_host(const char *path, struct mpi_lib *out,
			mpictr_err **err);
/* Find the MPI libraries (libmpi.so.N, libmpich.so.N) in the image whose
 * root directory is root: its standard library directories and those named
 * in its /etc/ld.so.conf.d/\*.conf, every path resolved inside root. */
int mpiabi_find_in_image(const char *root, struct mpi_lib **libs, size_t *n,
			 mpictr_err **err);
struct image_reader;
/* The same through an image reader (imgread.h: the image not mounted, or
 * mounted); libraries that cannot be read are left out. */
int mpiabi_find_in_reader(struct image_reader *r, struct mpi_lib **libs,
			  size_t *n);
/* The MPI library the program at path links, directly or through its
 * other libraries (breadth first, at most 64 objects), resolved in the
 * current root as ld.so would (DT_RUNPATH/DT_RPATH with $ORIGIN,
 * LD_LIBRARY_PATH from env, /etc/ld.so.cache, the default directories).
 * 1 with *out filled (soname, family, major; path: the object that links
 * it; free with mpi_lib_free), or 0: none found, or nothing readable. */
int mpiabi_program_mpi(const char *program, char *const *env,
		       struct mpi_lib *out);
void mpi_lib_free(struct mpi_lib *l);
void mpi_libs_free(struct mpi_lib *l, size_t n);

/* What planning decided to inject for one profile. */
struct mpi_inject {
	char *profile;
	struct mpi_lib host;
	bool warn_only; /* mpi_abi = warn */
};

/* The check the holder runs once the image is mounted at image_root,
 * before anything is bound: for each injection, refuse (or, warn_only, log
 * a warning) when the image's MPI of the same family is missing or not ABI
 * compatible. */
int mpiinject_check(const struct mpi_inject *inj, size_t n,
		    const char *image_root, mpictr_err **err);
/* The check itself (pure), against the image's MPI libraries img: a
 * mismatch of a warn_only injection appends a line to *warnings, any
 * other is -1 with *err. */
int mpiinject_check_libs(const struct mpi_inject *inj, size_t n,
			 const struct mpi_lib *img, size_t nimg,
			 char ***warnings, mpictr_err **err);

#endif
