/* imgtrust.h - the site's signature policy, enforced where an image is
 * about to be mounted (docs/signing.md, docs/security.md). */
#ifndef MPICTR_IMGTRUST_H
#define MPICTR_IMGTRUST_H

#include "common/error.h"
#include "plan/plan.h"

/* Under require_signature: refuse the plan's image unless it is a SIF
 * whose every object group is signed by one of the site's trusted keys
 * (the digests matching), with a message naming the image, the setting
 * and the keys tried. On success *fd is the image opened read-only: the
 * file that was verified, which the caller mounts (nothing can swap it in
 * between); -1 when there is no policy. Returns 0 or -1 with *err. */
int imgtrust_enforce(const struct plan *p, int *fd, mpictr_err **err);

#endif
