/* transport.c - which MPI transport variables to set for the ranks (the
 * policy table is docs/transport.md). Policy only: the UCX device query
 * that feeds it is ucx.c.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "plan/transport.h"
#include "host/verbs.h"
#include "common/util.h"

/* The fallbacks for ranks that do not share a user namespace: CMA
 * (process_vm_readv) and UCX's /proc/PID/fd proc-link need ptrace access,
 * which the kernel denies across sibling user namespaces. */
static const struct {
	const char *name, *value;
} unshared_fallbacks[] = {
    {"UCX_POSIX_USE_PROC_LINK", "n"},
    {"UCX_TLS", "^cma"},
    {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
    {"FI_SHM_DISABLE_CMA", "1"},
    {"PSM2_KASSIST_MODE", "none"},
    {"I_MPI_SHM_CMA", "0"},
    {"MV2_SMP_USE_CMA", "0"},
};

/* Drivers UCX does not drive as a verbs net device worth selecting: their
 * fabric has its own library (PSM2, libfabric efa/cxi). */
static bool ucx_rdma_driver(const char *driver)
{
	static const char *const no[] = {"hfi1", "qib", "efa", "cxi"};

	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (strcmp(driver, no[i]) == 0)
			return false;
	return verbs_provider(driver) != NULL;
}

static const char *fabric_of(const char *driver)
{
	if (strcmp(driver, "hfi1") == 0 || strcmp(driver, "qib") == 0)
		return "psm2";
	if (strcmp(driver, "cxi") == 0)
		return "cxi";
	if (strcmp(driver, "efa") == 0)
		return "efa";
	return verbs_provider(driver) ? "verbs" : NULL;
}

struct netdev {
	char *name; /* mlx5_0:1 */
	int numa;
};

/* The sysfs port behind a UCX device name ("mlx5_0:1"), or NULL. */
static const struct hca *hca_of_netdev(const struct host_devices *d,
				       const char *dev)
{
	size_t n = strcspn(dev, ":");
	long port = 1;

	if (dev[n] == ':' && parse_long(dev + n + 1, 0, 255, &port) < 0)
		return NULL;
	for (size_t i = 0; d && i < d->nhcas; i++)
		if (strlen(d->hcas[i].name) == n &&
		    strncmp(d->hcas[i].name, dev, n) == 0 &&
		    d->hcas[i].port == port)
			return &d->hcas[i];
	return NULL;
}

/* The UCX_NET_DEVICES value for this rank, or NULL to leave it unset. */
static char *net_devices_value(const struct host_devices *d,
			       const struct transport_opts *o)
{
	struct netdev *nd = NULL;
	size_t n = 0;
	int numas[64], nnuma = 0, target = -1;
	struct strbuf sb = STRBUF_INIT;

	if (o->ucx_net_devices_from_ucx) {
		cleanup_free char *copy = xstrdup(o->ucx_net_devices_from_ucx);
		char *save = NULL;

		for (char *t = strtok_r(copy, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			const struct hca *h = hca_of_netdev(d, t);

			/* UCX's name, unless sysfs knows the port and it is
			 * DOWN or not exposed in the container. */
			if (h && (!h->exposed || !h->active))
				continue;
			nd = xrealloc(nd, (n + 1) * sizeof(*nd));
			nd[n++] =
			    (struct netdev){xstrdup(t), h ? h->numa_node : -1};
		}
	} else {
		for (size_t i = 0; d && i < d->nhcas; i++) {
			const struct hca *h = &d->hcas[i];
			if (!h->exposed || !h->active ||
			    !ucx_rdma_driver(h->driver))
				continue;
			nd = xrealloc(nd, (n + 1) * sizeof(*nd));
			nd[n++] = (struct netdev){
			    xasprintf("%s:%d", h->name, h->port), h->numa_node};
		}
	}
	if (n == 0)
		return NULL;

	/* Distinct NUMA nodes holding a device, in ascending order. */
	for (size_t i = 0; i < n; i++) {
		int k;
		if (nd[i].numa < 0)
			continue;
		for (k = 0; k < nnuma && numas[k] != nd[i].numa; k++)
			;
		if (k == nnuma && nnuma < (int)ARRAY_SIZE(numas))
			numas[nnuma++] = nd[i].numa;
	}
	for (int a = 1; a < nnuma; a++)
		for (int b = a; b > 0 && numas[b - 1] > numas[b]; b--) {
			int t = numas[b];
			numas[b] = numas[b - 1];
			numas[b - 1] = t;
		}
	if (nnuma >= 2) {
		if (o->numa_known) {
			target = o->numa_node;
		} else {
			int nl = o->nlocal > 0 ? o->nlocal : 1;
			int r = o->local_rank >= 0 && o->local_rank < nl
				    ? o->local_rank
				    : 0;
			target = numas[(long)r * nnuma / nl];
		}
	}
	for (int pass = 0; pass < 2 && sb.len == 0; pass++)
		for (size_t i = 0; i < n; i++) {
			/* pass 0: the rank's node only; pass 1 (no device on
			 * that node): every device. */
			if (pass == 0 && target >= 0 && nd[i].numa != target)
				continue;
			if (sb.len)
				sb_putc(&sb, ',');
			sb_puts(&sb, nd[i].name);
		}
	for (size_t i = 0; i < n; i++)
		free(nd[i].name);
	free(nd);
	return sb_steal(&sb);
}

/* FI_PROVIDER when exactly one fabric is present among the exposed active
 * devices, else NULL. */
static const char *fi_provider(const struct host_devices *d)
{
	const char *one = NULL;

	for (size_t i = 0; d && i < d->nhcas; i++) {
		const struct hca *h = &d->hcas[i];
		const char *f;

		if (!h->exposed || !h->active || !(f = fabric_of(h->driver)))
			continue;
		if (one && strcmp(one, f) != 0)
			return NULL;
		one = f;
	}
	return one;
}

static bool set_unset(char ***env, const char *name, const char *value)
{
	if (env_get(*env, name))
		return false;
	env_set(env, name, value);
	return true;
}

void transport_env(const struct host_devices *d, const struct transport_opts *o,
		   char ***env, char ***notices)
{
	cleanup_free char *netdevs = NULL;
	const char *fi;

	if (!o->enabled)
		return;
	netdevs = net_devices_value(d, o);
	if (netdevs && *netdevs)
		set_unset(env, "UCX_NET_DEVICES", netdevs);
	fi = fi_provider(d);
	if (fi)
		set_unset(env, "FI_PROVIDER", fi);
	if (!o->shared_ns) {
		struct strbuf set = STRBUF_INIT, kept = STRBUF_INIT;

		for (size_t i = 0; i < ARRAY_SIZE(unshared_fallbacks); i++) {
			const char *n = unshared_fallbacks[i].name;
			const char *v = unshared_fallbacks[i].value;

			/* Without CMA (and without posix, whose segments
			 * live in each rank's own /dev/shm) UCX finds no
			 * on-node zero-copy transport and adds tcp lanes;
			 * polling them made small messages ~8x slower. With
			 * every peer on this node tcp is never needed; across
			 * nodes it may be the only network, so keep it. */
			if (o->single_node && strcmp(n, "UCX_TLS") == 0)
				v = "^cma,tcp";
			struct strbuf *sb = set_unset(env, n, v) ? &set : &kept;
			sb_printf(sb, " %s", n);
			if (sb == &set)
				sb_printf(sb, "=%s", v);
		}
		strv_push_own(notices,
			      xasprintf("ranks do not share namespaces, so "
					"CMA and UCX proc-link are off (large "
					"messages are slower):%s%s%s",
					set.len ? set.buf : " nothing set",
					kept.len ? "; kept as set:" : "",
					kept.len ? kept.buf : ""));
		sb_free(&set);
		sb_free(&kept);
	}
}
