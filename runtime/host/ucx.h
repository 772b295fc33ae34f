/* ucx.h - ask UCX which devices it sees, through the mpictr-ucx-query
 * helper (runtime/helpers/), never by loading UCX into this process.
 */
#ifndef MPICTR_UCX_H
#define MPICTR_UCX_H

#include "mpictr.h"

/* Path of the UCX query helper: beside an uninstalled CLI
 * (build/mpictr -> build/libexec/), else the installed one
 * (MPICTR_LIBEXECDIR). Caller frees. */
char *ucx_helper_path(void);

/* Run the UCX query helper (helper_path, normally
 * MPICTR_LIBEXECDIR "/mpictr-ucx-query") with a 10 s timeout, stdout
 * captured, stderr discarded, and return its lines in *lines (NULL-
 * terminated, caller frees with strv_free; NULL when UCX sees nothing).
 * -1 with *err when it cannot run, times out or fails. Never loads UCX
 * into this process. Forks: call it before threads are started, or accept
 * the usual fork-in-threads rules (only async-signal-safe calls run in the
 * child before exec). */
int ucx_query(const char *helper_path, char ***lines, mpictr_err **err);

/* Split one helper line ("md=... tl=... dev=... type=...") into malloc'ed
 * fields; any of the out pointers may be NULL; missing fields give NULL. */
void ucx_fields(const char *line, char **tl, char **dev, char **type);

/* UCX's RDMA network devices (type=net, not tcp) from the helper's lines,
 * as a comma list in the order seen, without duplicates ("mlx5_0:1,
 * mlx5_1:1" without the space); "" when there are none. Malloc'ed. */
char *ucx_net_devices(char *const *lines);

#endif
