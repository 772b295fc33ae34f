/* pmi.h - TEMPORARY copy of the interface agreed with the pmi/ work; the
 * real header replaces it when the PMI servers land. */
#ifndef MPICTR_PMI_H
#define MPICTR_PMI_H

#include <stdint.h>
#include <sys/types.h>

#include "mpictr.h"

struct pmi_job {
	char *nspace;
	uint32_t size;
	uint32_t nnodes, nodeid;
	char **hostnames;
	uint32_t *rank_node;
	uint32_t nlocal;
	uint32_t *local_ranks;
	uid_t uid;
	gid_t gid;
};
int pmi_job_single_node(uint32_t n, uid_t uid, gid_t gid, struct pmi_job *job,
			mpictr_err **err);
void pmi_job_free(struct pmi_job *job);
typedef void (*pmi_abort_fn)(int exit_code, const char *msg, void *data);
struct pmi_server;
int pmi_server_start(const struct pmi_job *job, const char *tmpdir_base,
		     pmi_abort_fn on_abort, void *data,
		     struct pmi_server **out, mpictr_err **err);
int pmi_server_rank_env(struct pmi_server *s, uint32_t rank, char ***env,
			int *child_fd, mpictr_err **err);
void pmi_server_rank_forked(struct pmi_server *s, uint32_t rank);
void pmi_server_rank_exited(struct pmi_server *s, uint32_t rank);
void pmi_server_stop(struct pmi_server *s);
/* The PMIx library version string (static storage), or NULL. */
const char *pmi_library_version(void);

#endif
