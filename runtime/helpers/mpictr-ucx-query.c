/* mpictr-ucx-query - print what UCX sees on this host, one line per memory
 * domain transport and device, the same information as `ucx_info -d`:
 *
 *   md=mlx5_0 tl=rc_mlx5 dev=mlx5_0:1 type=net
 *   md=posix tl=posix dev=memory type=shm
 *
 * A separate short-lived program so that libucs (its signal handlers, its
 * threads, its printing) never enters libmpictr or the processes embedding
 * it; ucx_query() (runtime/host/ucx.c) runs it with a timeout. Exit status 0
 * when the component list could be read, 1 otherwise; unusable memory
 * domains are skipped, as ucx_info does.
 */
#include <stdio.h>
#include <stdlib.h>

#include <uct/api/uct.h>

static const char *type_name(uct_device_type_t t)
{
	switch (t) {
	case UCT_DEVICE_TYPE_NET:
		return "net";
	case UCT_DEVICE_TYPE_SHM:
		return "shm";
	case UCT_DEVICE_TYPE_ACC:
		return "acc";
	case UCT_DEVICE_TYPE_SELF:
		return "self";
	default:
		return "other";
	}
}

static void query_md(uct_component_h comp, const char *md_name)
{
	uct_md_config_t *config;
	uct_md_h md;
	uct_tl_resource_desc_t *res;
	unsigned nres;
	ucs_status_t st;

	if (uct_md_config_read(comp, NULL, NULL, &config) != UCS_OK)
		return;
	st = uct_md_open(comp, md_name, config, &md);
	uct_config_release(config);
	if (st != UCS_OK)
		return;
	if (uct_md_query_tl_resources(md, &res, &nres) == UCS_OK) {
		for (unsigned i = 0; i < nres; i++)
			printf("md=%s tl=%s dev=%s type=%s\n", md_name,
			       res[i].tl_name, res[i].dev_name,
			       type_name(res[i].dev_type));
		uct_release_tl_resource_list(res);
	}
	uct_md_close(md);
}

int main(void)
{
	uct_component_h *comps;
	unsigned ncomps;

	if (uct_query_components(&comps, &ncomps) != UCS_OK)
		return 1;
	for (unsigned c = 0; c < ncomps; c++) {
		uct_component_attr_t attr = {
		    .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
				  UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT,
		};
		uct_md_resource_desc_t *mds;

		if (uct_component_query(comps[c], &attr) != UCS_OK ||
		    attr.md_resource_count == 0)
			continue;
		mds = calloc(attr.md_resource_count, sizeof(*mds));
		if (!mds)
			break;
		attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
		attr.md_resources = mds;
		if (uct_component_query(comps[c], &attr) == UCS_OK)
			for (unsigned m = 0; m < attr.md_resource_count; m++)
				query_md(comps[c], mds[m].md_name);
		free(mds);
	}
	uct_release_component_list(comps);
	return fflush(stdout) == 0 ? 0 : 1;
}
