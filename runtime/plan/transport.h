/* transport.h - the MPI transport environment policy (docs/transport.md).
 * Its UCX input comes from ucx.h.
 */
#ifndef MPICTR_TRANSPORT_H
#define MPICTR_TRANSPORT_H

#include <stdbool.h>

#include "host/devices.h"
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
	 * ucx_net_devices(); NULL when UCX was not asked (then the
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

#endif
