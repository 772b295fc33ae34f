/* pmix_plugin.c - the entry of the "pmix" plugin (runtime/common/plugin.h): the
 * PMIx server and the upstream agent with libpmix (and its hwloc, libevent,
 * munge and udev), loaded only by a launcher or node daemon that serves
 * PMIx. */
#include <string.h>

#include "common/plugin.h"
#include "pmi/pmi_internal.h"

static const struct pmix_plugin pmix_table = {
    .pmix_start = pmi_pmix_start,
    .pmix_rank_env = pmi_pmix_rank_env,
    .pmix_stop = pmi_pmix_stop,
    .pmix_spawn_register = pmi_pmix_spawn_register,
    .pmix_spawn_env = pmi_pmix_spawn_env,
    .pmix_spawn_done = pmi_pmix_spawn_done,
    .library_version = pmi_library_version,
    .upstream_start = pmi_upstream_start,
    .upstream_rank = pmi_upstream_rank,
    .upstream_size = pmi_upstream_size,
    .upstream_step_dir = pmi_upstream_step_dir,
    .upstream_attach = pmi_upstream_attach,
    .upstream_fence = pmi_upstream_fence,
    .upstream_abort = pmi_upstream_abort,
    .upstream_detach = pmi_upstream_detach,
    .upstream_stop = pmi_upstream_stop,
};

MPICTR_PLUGIN_DEFINE(pmix_table)
