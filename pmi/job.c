/* job.c - the job description shared by the PMIx and PMI-1 servers: sizes,
 * node and proc maps, local peers. Pure apart from gethostname()/getpid() in
 * pmi_job_single_node(); no PMIx here. */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmi/pmi.h"
#include "common/util.h"

int pmi_job_single_node(uint32_t n, uid_t uid, gid_t gid, struct pmi_job *job,
			mpictr_err **err)
{
	static atomic_uint counter;
	char host[HOST_NAME_MAX + 1];

	memset(job, 0, sizeof(*job));
	if (n == 0 || n > PMI_JOB_MAX_RANKS)
		return err_set(err, 0, "rank count %u out of range 1..%u", n,
			       PMI_JOB_MAX_RANKS);
	if (gethostname(host, sizeof(host)) < 0)
		return err_set(err, errno, "job map: gethostname");
	host[sizeof(host) - 1] = '\0';

	job->nspace = xasprintf("mpictr.%ld.%u", (long)getpid(),
				atomic_fetch_add(&counter, 1));
	job->size = n;
	job->nnodes = 1;
	job->nodeid = 0;
	job->hostnames = xcalloc(2, sizeof(char *));
	job->hostnames[0] = xstrdup(host);
	job->rank_node = xcalloc(n, sizeof(uint32_t));
	job->nlocal = n;
	job->local_ranks = xcalloc(n, sizeof(uint32_t));
	for (uint32_t r = 0; r < n; r++)
		job->local_ranks[r] = r;
	job->uid = uid;
	job->gid = gid;
	return 0;
}

int pmi_job_node_blocks(const char *nspace, uint32_t nnodes, uint32_t nodeid,
			uint32_t ppn, char *const *hostnames, uid_t uid,
			gid_t gid, struct pmi_job *job, mpictr_err **err)
{
	uint64_t size = (uint64_t)nnodes * ppn;

	memset(job, 0, sizeof(*job));
	if (!nspace || !*nspace)
		return err_set(err, 0, "job without a namespace");
	if (nnodes == 0 || ppn == 0 || size > PMI_JOB_MAX_RANKS)
		return err_set(err, 0,
			       "%u nodes of %u ranks: the job size is out of "
			       "range 1..%u",
			       nnodes, ppn, PMI_JOB_MAX_RANKS);
	if (nodeid >= nnodes)
		return err_set(err, 0, "node index %u is outside %u nodes",
			       nodeid, nnodes);
	for (uint32_t i = 0; i < nnodes; i++)
		if (!hostnames || !hostnames[i] || !*hostnames[i])
			return err_set(err, 0, "no host name for node %u", i);

	job->nspace = xstrdup(nspace);
	job->size = (uint32_t)size;
	job->nnodes = nnodes;
	job->nodeid = nodeid;
	job->hostnames = xcalloc(nnodes + 1, sizeof(char *));
	for (uint32_t i = 0; i < nnodes; i++)
		job->hostnames[i] = xstrdup(hostnames[i]);
	job->rank_node = xcalloc(job->size, sizeof(uint32_t));
	for (uint32_t r = 0; r < job->size; r++)
		job->rank_node[r] = r / ppn;
	job->nlocal = ppn;
	job->local_ranks = xcalloc(ppn, sizeof(uint32_t));
	for (uint32_t i = 0; i < ppn; i++)
		job->local_ranks[i] = nodeid * ppn + i;
	job->uid = uid;
	job->gid = gid;
	return 0;
}

void pmi_job_free(struct pmi_job *job)
{
	if (!job)
		return;
	free(job->nspace);
	if (job->hostnames)
		for (uint32_t i = 0; i < job->nnodes; i++)
			free(job->hostnames[i]);
	free(job->hostnames);
	free(job->rank_node);
	free(job->local_ranks);
	memset(job, 0, sizeof(*job));
}

char *pmi_job_node_list(const struct pmi_job *job)
{
	struct strbuf sb = STRBUF_INIT;

	for (uint32_t i = 0; i < job->nnodes; i++) {
		if (i)
			sb_putc(&sb, ',');
		sb_puts(&sb, job->hostnames[i]);
	}
	return sb_steal(&sb);
}

char *pmi_job_proc_list(const struct pmi_job *job)
{
	struct strbuf sb = STRBUF_INIT;

	for (uint32_t node = 0; node < job->nnodes; node++) {
		bool first = true;

		if (node)
			sb_putc(&sb, ';');
		for (uint32_t r = 0; r < job->size; r++) {
			if (job->rank_node[r] != node)
				continue;
			sb_printf(&sb, first ? "%u" : ",%u", r);
			first = false;
		}
	}
	return sb_steal(&sb);
}

char *pmi_job_local_peers(const struct pmi_job *job)
{
	struct strbuf sb = STRBUF_INIT;

	for (uint32_t i = 0; i < job->nlocal; i++)
		sb_printf(&sb, i ? ",%u" : "%u", job->local_ranks[i]);
	return sb_steal(&sb);
}

/* MPICH's vector form describes block placement: each triple says "starting
 * at node F, N consecutive nodes hold P consecutive ranks each". Ranks must
 * therefore fill node 0 first, then node 1, ... */
char *pmi_job_process_mapping(const struct pmi_job *job)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t r = 0, node = 0;

	if (job->size == 0)
		return NULL;
	sb_puts(&sb, "(vector");
	while (r < job->size) {
		uint32_t start = node, nodes = 0, ppn = 0;

		if (job->rank_node[r] != node)
			goto not_blocked;
		while (r + ppn < job->size && job->rank_node[r + ppn] == node)
			ppn++;
		/* Extend over following nodes with the same count. */
		for (;;) {
			uint32_t cnt = 0;

			while (r + cnt < job->size &&
			       job->rank_node[r + cnt] == node)
				cnt++;
			if (cnt != ppn || cnt == 0)
				break;
			r += cnt;
			node++;
			nodes++;
		}
		sb_printf(&sb, ",(%u,%u,%u)", start, nodes, ppn);
	}
	if (node != job->nnodes)
		goto not_blocked;
	sb_putc(&sb, ')');
	return sb_steal(&sb);
not_blocked:
	sb_free(&sb);
	return NULL;
}

long pmi_job_local_index(const struct pmi_job *job, uint32_t rank)
{
	for (uint32_t i = 0; i < job->nlocal; i++)
		if (job->local_ranks[i] == rank)
			return i;
	return -1;
}
