/* local.c - the local sources of `mpictr pull`: oci:DIR[:REF],
 * oci-archive:FILE[:REF], docker-archive:FILE[:REF]. */
#include <errno.h>

#include "pull/pull.h"

int pull_local(const struct image_ref *ref, const char *out,
	       const struct pull_opts *o, struct pull_stats *st,
	       mpictr_err **err)
{
	return err_set(err, ENOSYS,
		       "'%s': local sources are not implemented "
		       "yet",
		       ref->path);
}
