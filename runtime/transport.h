/* transport.h - the MPI transport environment policy (docs/transport.md)
 * and the UCX device query through the mpictr-ucx-query helper.
 */
#ifndef MPICTR_TRANSPORT_H
#define MPICTR_TRANSPORT_H

#include <stdbool.h>

#include "devices.h"
#include "mpictr.h"

struct transport_opts {
	bool enabled;	/* false: --transport-env=off, nothing is set */
	bool shared_ns; /* all local ranks share one user+mount namespace */
	/* Every rank of the job runs on this node (launch mode without the
	 * node daemon): the unshared fallback may then keep UCX off tcp. */
	bool single_node;
	int local_rank; /* 0..nlocal-1 */
	int nlocal;	/* local ranks on this node (0 or 1: one process) */
	/* Comma list of UCX's RDMA network devices, from
	 * transport_ucx_net_devices(); NULL when UCX was not asked (then the
	 * sysfs ports are used), "" when UCX sees none (then
	 * UCX_NET_DEVICES is left alone). */
	const char *ucx_net_devices_from_ucx;
	/* The rank's NUMA node when it is bound to one (numa_known); else
	 * ranks are spread over the HCAs' NUMA nodes in blocks by local_rank,
	 * matching a bind-to-core placement that fills node 0 first. */
	bool numa_known;
	int numa_node;
};

/* Add the transport variables to *env ("NAME=VALUE" vector) where unset,
 * per the policy table in docs/transport.md, and append one-line notices
 * (no prefix) to *notices. d may be NULL (no devices known). A variable
 * already in *env is never changed; with o->enabled false nothing is
 * added at all. */
void transport_env(const struct host_devices *d, const struct transport_opts *o,
		   char ***env, char ***notices);

/* Run the UCX query helper (helper_path, normally
 * MPICTR_LIBEXECDIR "/mpictr-ucx-query") with a 10 s timeout, stdout
 * captured, stderr discarded, and return its lines in *lines (NULL-
 * terminated, caller frees with strv_free; NULL when UCX sees nothing).
 * -1 with *err when it cannot run, times out or fails. Never loads UCX
 * into this process. Forks: call it before threads are started, or accept
 * the usual fork-in-threads rules (only async-signal-safe calls run in the
 * child before exec). */
int transport_ucx_query(const char *helper_path, char ***lines,
			mpictr_err **err);

/* Split one helper line ("md=... tl=... dev=... type=...") into malloc'ed
 * fields; any of the out pointers may be NULL; missing fields give NULL. */
void transport_ucx_fields(const char *line, char **tl, char **dev, char **type);

/* UCX's RDMA network devices (type=net, not tcp) from the helper's lines,
 * as a comma list in the order seen, without duplicates ("mlx5_0:1,
 * mlx5_1:1" without the space); "" when there are none. Malloc'ed. */
char *transport_ucx_net_devices(char *const *lines);

#endif
