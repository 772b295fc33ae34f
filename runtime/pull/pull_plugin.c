/* pull_plugin.c - the entry of the "pull" plugin (runtime/common/plugin.h)
 * and the dispatcher from a parsed reference to the registry client or the
 * local sources. */
#include <errno.h>
#include <string.h>

#include "common/plugin.h"
#include "pull/pull.h"

int pull_source(const struct image_ref *ref, const char *out,
		const struct pull_opts *o, struct pull_stats *st,
		char **sif_out, mpictr_err **err)
{
	*sif_out = NULL;
	if (ref->transport == IMAGE_REF_DOCKER)
		return pull_registry(ref, out, o, st, sif_out, err);
	return pull_local(ref, out, o, st, err);
}

static const struct pull_plugin pull_table = {
    .pull = pull_source,
    .assemble = pull_assemble,
};

MPICTR_PLUGIN_DEFINE(pull_table)
