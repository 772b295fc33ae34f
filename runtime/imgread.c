/* imgread.c - read an image without mounting it (imgread.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "imgread.h"
#include "squash.h"
#include "syscalls.h"
#include "util.h"

struct image_reader {
	char *name;		 /* the image, for messages */
	int root;		 /* directory images: the root, else -1 */
	struct squash_image *sq; /* squashfs and SIF images */
};

int image_reader_open_dir(const char *root, struct image_reader **r,
			  mpictr_err **err)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	*r = NULL;
	if (fd < 0)
		return err_set(err, errno, "image '%s'", root);
	*r = xcalloc(1, sizeof(**r));
	(*r)->name = xstrdup(root);
	(*r)->root = fd;
	return 0;
}

int image_reader_open(const struct image_info *img, struct image_reader **r,
		      mpictr_err **err)
{
	struct squash_image *sq = NULL;

	if (img->kind == IMAGE_DIR)
		return image_reader_open_dir(img->path, r, err);
	*r = NULL;
	if (squash_image_open(img->path, img->offset, &sq, err) < 0)
		return -1;
	*r = xcalloc(1, sizeof(**r));
	(*r)->name = xstrdup(img->path);
	(*r)->root = -1;
	(*r)->sq = sq;
	return 0;
}

/* The names below fd (a directory), at most IMGREAD_MAX_ENTRIES. */
static int dir_list(struct image_reader *r, const char *path, int fd,
		    char ***names, mpictr_err **err)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		close(fd);
		return err_set(err, errno, "image '%s': directory '%s'",
			       r->name, path);
	}
	while ((e = readdir(d))) {
		if (++n > IMGREAD_MAX_ENTRIES) {
			closedir(d);
			return err_set(err, E2BIG,
				       "image '%s': directory '%s' has more "
				       "than %d entries",
				       r->name, path, IMGREAD_MAX_ENTRIES);
		}
		strv_push(names, e->d_name);
	}
	closedir(d);
	return 0;
}

int image_reader_list(struct image_reader *r, const char *path, char ***names,
		      mpictr_err **err)
{
	char **all = NULL;
	int rc;

	*names = NULL;
	if (r->sq) {
		rc = squash_image_list(r->sq, path, IMGREAD_MAX_ENTRIES, &all,
				       err);
	} else {
		int fd = sys_openat_in_root(r->root, path,
					    O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		rc = fd < 0 ? err_set(err, errno, "image '%s': directory '%s'",
				      r->name, path)
			    : dir_list(r, path, fd, &all, err);
	}
	if (rc < 0) {
		strv_free(all);
		return -1;
	}
	for (size_t i = 0; all && all[i]; i++)
		if (all[i][0] != '.')
			strv_push(names, all[i]);
	strv_free(all);
	strv_sort(*names, false);
	return 0;
}

/* A descriptor of path below a directory image's root. */
static int open_below(struct image_reader *r, const char *path, int flags,
		      mpictr_err **err)
{
	int fd = sys_openat_in_root(r->root, path, flags | O_CLOEXEC);

	if (fd < 0)
		err_set(err, errno, "image '%s': '%s'", r->name, path);
	return fd;
}

int image_reader_stat(struct image_reader *r, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err)
{
	cleanup_close int fd = -1;
	cleanup_free char *real = NULL, *root = NULL;
	struct stat st;
	size_t rl;

	if (canon)
		*canon = NULL;
	if (r->sq)
		return squash_image_stat(r->sq, path, mode, size, canon, err);
	fd = open_below(r, path, O_PATH, err);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "image '%s': '%s'", r->name, path);
	*mode = st.st_mode;
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	if (!canon)
		return 0;
	real = fd_path_dup(fd);
	root = fd_path_dup(r->root);
	rl = root ? strlen(root) : 0;
	if (!real || !root || strncmp(real, root, rl) != 0 ||
	    (real[rl] != '/' && real[rl] != '\0'))
		return err_set(err, EXDEV, "image '%s': '%s' is not below it",
			       r->name, path);
	*canon = xstrdup(real[rl] ? real + rl : "/");
	return 0;
}

int image_reader_pread(struct image_reader *r, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err)
{
	cleanup_close int fd = -1;

	if (r->sq)
		return squash_image_pread(r->sq, path, buf, n, off, err);
	fd = open_below(r, path, O_RDONLY, err);
	if (fd < 0)
		return -1;
	if (pread_full(fd, buf, n, (off_t)off) < 0)
		return err_set(err, errno ? errno : EIO,
			       "image '%s': read '%s'", r->name, path);
	return 0;
}

int image_reader_read(struct image_reader *r, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err)
{
	mode_t mode;
	uint64_t size;

	*buf = NULL;
	*len = 0;
	if (r->sq)
		return squash_image_read(r->sq, path, max, buf, len, err);
	if (image_reader_stat(r, path, &mode, &size, NULL, err) < 0)
		return -1;
	if (!S_ISREG(mode))
		return err_set(err, EINVAL, "image '%s': '%s' is not a file",
			       r->name, path);
	if (size > max)
		return err_set(err, EFBIG,
			       "image '%s': '%s' is larger than %zu bytes",
			       r->name, path, max);
	*buf = xmalloc((size_t)size + 1);
	if (image_reader_pread(r, path, *buf, (size_t)size, 0, err) < 0) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	(*buf)[size] = '\0';
	*len = (size_t)size;
	return 0;
}

bool image_reader_exists(struct image_reader *r, const char *path)
{
	mode_t mode;
	uint64_t size;

	return image_reader_stat(r, path, &mode, &size, NULL, NULL) == 0;
}

void image_reader_close(struct image_reader *r)
{
	if (!r)
		return;
	if (r->root >= 0)
		close(r->root);
	squash_image_close(r->sq);
	free(r->name);
	free(r);
}
