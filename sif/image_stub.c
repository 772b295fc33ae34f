/* image_stub.c - TEMPORARY: directory images only, until sif/image.c lands. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "image.h"
#include "util.h"

int image_probe(const char *path, struct image_info *info, mpictr_err **err)
{
	struct stat st;
	char *real;

	memset(info, 0, sizeof(*info));
	if (stat(path, &st) < 0)
		return err_set(err, errno, "image '%s'", path);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ENOSYS, "image '%s': only directories "
				       "for now", path);
	real = realpath(path, NULL);
	if (!real)
		return err_set(err, errno, "image '%s'", path);
	info->kind = IMAGE_DIR;
	info->path = real;
	return 0;
}

void image_info_free(struct image_info *info)
{
	free(info->path);
	free(info->arch);
	memset(info, 0, sizeof(*info));
}
