/* squash_stub.c - TEMPORARY until sif/squash.c lands. */
#include <errno.h>

#include "error.h"
#include "squash.h"

int squash_mount(const char *image, uint64_t offset, const char *mountpoint,
		 int nworkers, struct squash_mount **out, mpictr_err **err)
{
	return err_set(err, ENOSYS, "mount squashfs '%s'", image);
}

int squash_umount(struct squash_mount *m, mpictr_err **err)
{
	return 0;
}

size_t squash_worker_pids(const struct squash_mount *m, const pid_t **pids)
{
	*pids = NULL;
	return 0;
}
