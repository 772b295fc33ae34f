/* squash_plugin.c - the entry of the "squash" plugin (runtime/common/plugin.h):
 * sif/squash.c with libsquashfuse and libfuse3, loaded only by the
 * processes that mount an image. */
#include <string.h>

#include "common/plugin.h"
#include "sif/squash.h"

static const struct squash_plugin squash_table = {
    .mount = squash_mount,
    .umount = squash_umount,
    .abort = squash_abort,
    .reap_workers = squash_reap_workers,
    .worker_pids = squash_worker_pids,
    .image_open = squash_image_open,
    .image_list = squash_image_list,
    .image_stat = squash_image_stat,
    .image_pread = squash_image_pread,
    .image_read = squash_image_read,
    .image_close = squash_image_close,
};

MPICTR_PLUGIN_DEFINE(squash_table)
