/* save.h - `mpictr instance save NAME PATH`: an instance's container as it
 * is now, packed into a new squashfs image (save.c). */
#ifndef MPICTR_SAVE_H
#define MPICTR_SAVE_H

#include "config/config.h"

/* cfg->image is instance://NAME. */
int instance_save(const struct mpictr_config *cfg, const char *path,
		  mpictr_err **err);

#endif
