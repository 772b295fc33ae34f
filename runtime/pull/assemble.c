/* assemble.c - the layer merge and SIF writer of `mpictr pull`. */
#include <errno.h>

#include "pull/pull.h"

int pull_assemble(const char *layout_dir, const char *manifest_digest,
		  const char *out, const char *what, const struct pull_opts *o,
		  struct pull_stats *st, mpictr_err **err)
{
	return err_set(err, ENOSYS, "%s: assembling is not implemented yet",
		       what);
}
