/* pmix_probe.c - a raw PMIx client: prints what the server registered for
 * this rank (job size, universe, local peers and size, local/node rank,
 * hostname), then exchanges one key per rank through Put/Commit/Fence
 * (collect) and checks every peer's value. Exits non-zero on any failure.
 * Build: cc pmix_probe.c $(pkg-config --cflags --libs pmix) */
#include <pmix.h>
#include <stdio.h>
#include <string.h>

#define CHECK(rc, what)                                                        \
	do {                                                                   \
		if ((rc) != PMIX_SUCCESS) {                                    \
			fprintf(stderr, "probe: %s: %s\n", what,               \
				PMIx_Error_string(rc));                        \
			return 1;                                              \
		}                                                              \
	} while (0)

static pmix_value_t *get(const pmix_proc_t *p, const char *key)
{
	pmix_value_t *v = NULL;

	if (PMIx_Get(p, key, NULL, 0, &v) != PMIX_SUCCESS)
		return NULL;
	return v;
}

int main(void)
{
	pmix_proc_t me, job, peer;
	pmix_value_t *v, val;
	pmix_info_t info;
	bool collect = true;
	uint32_t size, usize, lsize;
	uint16_t lrank, nrank;
	char peers[4096], host[256], key[64], want[64];
	int bad = 0;

	CHECK(PMIx_Init(&me, NULL, 0), "init");
	PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
	if (!(v = get(&job, PMIX_JOB_SIZE)))
		return 1;
	size = v->data.uint32;
	if (!(v = get(&job, PMIX_UNIV_SIZE)))
		return 1;
	usize = v->data.uint32;
	if (!(v = get(&job, PMIX_LOCAL_SIZE)))
		return 1;
	lsize = v->data.uint32;
	if (!(v = get(&job, PMIX_LOCAL_PEERS)))
		return 1;
	snprintf(peers, sizeof(peers), "%s", v->data.string);
	if (!(v = get(&me, PMIX_LOCAL_RANK)))
		return 1;
	lrank = v->data.uint16;
	if (!(v = get(&me, PMIX_NODE_RANK)))
		return 1;
	nrank = v->data.uint16;
	if (!(v = get(&me, PMIX_HOSTNAME)))
		return 1;
	snprintf(host, sizeof(host), "%s", v->data.string);

	snprintf(key, sizeof(key), "probe.%u", me.rank);
	snprintf(want, sizeof(want), "value-of-%u", me.rank);
	PMIX_VALUE_LOAD(&val, want, PMIX_STRING);
	CHECK(PMIx_Put(PMIX_GLOBAL, key, &val), "put");
	CHECK(PMIx_Commit(), "commit");
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	CHECK(PMIx_Fence(&job, 1, &info, 1), "fence");
	for (uint32_t r = 0; r < size; r++) {
		PMIX_LOAD_PROCID(&peer, me.nspace, r);
		snprintf(key, sizeof(key), "probe.%u", r);
		snprintf(want, sizeof(want), "value-of-%u", r);
		v = get(&peer, key);
		if (!v || v->type != PMIX_STRING ||
		    strcmp(v->data.string, want) != 0)
			bad++;
	}
	printf("probe rank %u size %u univ %u local_size %u peers %s "
	       "local_rank %u node_rank %u host %s exchange %s\n",
	       me.rank, size, usize, lsize, peers, lrank, nrank, host,
	       bad ? "BAD" : "ok");
	fflush(stdout);
	CHECK(PMIx_Finalize(NULL, 0), "finalize");
	return bad ? 1 : 0;
}
