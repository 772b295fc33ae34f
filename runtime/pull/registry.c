/* registry.c - the registry client of `mpictr pull` (docker://, bare
 * REPO[:TAG], REGISTRY#IMAGE): not written yet (issue 22, h22b). */
#include <errno.h>

#include "pull/pull.h"

int pull_registry(const struct image_ref *ref, const char *out,
		  const struct pull_opts *o, struct pull_stats *st,
		  char **sif_out, mpictr_err **err)
{
	*sif_out = NULL;
	err_set(err, ENOSYS,
		"registry '%s': pulling from a registry is not "
		"implemented yet",
		ref->registry);
	return err_hint(err, "copy the image to a local form first, e.g. "
			     "'skopeo copy docker://... oci-archive:img.tar' "
			     "and pull 'oci-archive:img.tar'");
}
