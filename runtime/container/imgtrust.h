/* imgtrust.h - the site's signature policy, enforced where an image is
 * about to be mounted (docs/signing.md, docs/security.md). */
#ifndef MPICTR_IMGTRUST_H
#define MPICTR_IMGTRUST_H

#include "common/error.h"
#include "plan/plan.h"

/* Under require_signature: refuse the plan's image unless it is a SIF
 * whose every object group is signed by one of the site's trusted keys
 * (the digests matching), with a message naming the image, the setting
 * and the keys tried; and unless nobody but root and the user can write
 * the file (owner, mode, open writers, FUSE daemon), since the job reads
 * it for as long as it runs; and when the plan's --overlay or
 * --writable-tmpfs is one the site does not allow (imgtrust_allows). On success
 * *fd is the image opened read-only: the file that was verified, which the
 * caller mounts (nothing can swap it in between); -1 when there is no policy.
 * Returns 0 or -1 with *err. */
int imgtrust_enforce(const struct plan *p, int *fd, mpictr_err **err);

/* What may change or repack a signed image, the site deciding
 * (signed_overlay, signed_writable_tmpfs, signed_save). */
enum imgtrust_change {
	IMGTRUST_OVERLAY,
	IMGTRUST_WRITABLE_TMPFS,
	IMGTRUST_SAVE,
};
/* Under t's require_signature: 0 when the site allows c, else -1 with
 * *err naming what (an option, an instance), the settings and why. */
int imgtrust_allows(const struct site_trust *t, enum imgtrust_change c,
		    const char *what, mpictr_err **err);

#endif
