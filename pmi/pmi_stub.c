/* pmi_stub.c - TEMPORARY until the PMI servers land: -n fails cleanly. */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "pmi.h"

int pmi_job_single_node(uint32_t n, uid_t uid, gid_t gid, struct pmi_job *job,
			mpictr_err **err)
{
	memset(job, 0, sizeof(*job));
	return 0;
}

void pmi_job_free(struct pmi_job *job)
{
}

int pmi_server_start(const struct pmi_job *job, const char *tmpdir_base,
		     pmi_abort_fn on_abort, void *data,
		     struct pmi_server **out, mpictr_err **err)
{
	return err_set(err, ENOSYS, "start the PMI servers");
}

int pmi_server_rank_env(struct pmi_server *s, uint32_t rank, char ***env,
			int *child_fd, mpictr_err **err)
{
	return err_set(err, ENOSYS, "PMI environment");
}

void pmi_server_rank_forked(struct pmi_server *s, uint32_t rank)
{
}

void pmi_server_rank_exited(struct pmi_server *s, uint32_t rank)
{
}

void pmi_server_stop(struct pmi_server *s)
{
}

const char *pmi_library_version(void)
{
	return NULL;
}
