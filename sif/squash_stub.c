/* squash_stub.c - squash.h for the host: every call goes to the "squash"
 * plugin (runtime/common/plugin.h), loaded by the first squash_mount(). The
 * other functions take a mount, so the plugin is loaded when they are called.
 */
#include <errno.h>

#include "common/error.h"
#include "common/plugin.h"
#include "sif/squash.h"

static const struct squash_plugin *squash_table(mpictr_err **err)
{
	return plugin_load("squash", err);
}

int squash_mount(const char *image, uint64_t offset, const char *mountpoint,
		 int nworkers, struct squash_mount **out, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	*out = NULL;
	if (!t)
		return err_wrap(err, "mount squashfs '%s'", image);
	return t->mount(image, offset, mountpoint, nworkers, out, err);
}

int squash_umount(struct squash_mount *m, mpictr_err **err)
{
	const struct squash_plugin *t;

	if (!m)
		return 0;
	t = squash_table(err);
	return t ? t->umount(m, err) : -1;
}

void squash_abort(struct squash_mount *m)
{
	const struct squash_plugin *t;

	if (m && (t = squash_table(NULL)))
		t->abort(m);
}

pid_t squash_reap_workers(struct squash_mount *m, int *status)
{
	const struct squash_plugin *t;

	if (!m || !(t = squash_table(NULL)))
		return 0;
	return t->reap_workers(m, status);
}

size_t squash_worker_pids(const struct squash_mount *m, const pid_t **pids)
{
	const struct squash_plugin *t;

	*pids = NULL;
	if (!m || !(t = squash_table(NULL)))
		return 0;
	return t->worker_pids(m, pids);
}

int squash_image_open(const char *image, uint64_t offset,
		      struct squash_image **out, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	*out = NULL;
	if (!t)
		return err_wrap(err, "read squashfs '%s'", image);
	return t->image_open(image, offset, out, err);
}

int squash_image_list(struct squash_image *h, const char *path, size_t max,
		      char ***names, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	*names = NULL;
	return t ? t->image_list(h, path, max, names, err) : -1;
}

int squash_image_stat(struct squash_image *h, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	*mode = 0;
	*size = 0;
	return t ? t->image_stat(h, path, mode, size, canon, err) : -1;
}

int squash_image_pread(struct squash_image *h, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	return t ? t->image_pread(h, path, buf, n, off, err) : -1;
}

int squash_image_read(struct squash_image *h, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err)
{
	const struct squash_plugin *t = squash_table(err);

	*buf = NULL;
	*len = 0;
	return t ? t->image_read(h, path, max, buf, len, err) : -1;
}

void squash_image_close(struct squash_image *h)
{
	const struct squash_plugin *t;

	if (h && (t = squash_table(NULL)))
		t->image_close(h);
}
