/* pmix_register.c - registering a job's namespace and its local clients
 * with the PMIx server (the first job and spawned ones), a client's fork
 * environment, and deregistering: what the server (pmix_server.c) and the
 * dynamic processes (pmix_dyn.c) share. As OpenPMIx and PRRTE do
 * (src/server/pmix_server_registration.c), registration is a file of its
 * own, below both.
 *
 * Library calls that complete asynchronously are awaited on a
 * mutex+condvar (struct waiter), never by spinning. Registration uses the
 * blocking forms (NULL cbfunc), which 4.2 documents. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pmix.h>
#include <pmix_server.h>

#include "common/util.h"
#include "pmi/pmi_internal.h"
#include "pmi/pmix_register.h"

/* ---- waiting for asynchronous completions ---- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	pmix_status_t status;
};

#define WAITER_INIT                                                            \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false,    \
		    PMIX_SUCCESS                                               \
	}

static void waiter_op_cb(pmix_status_t status, void *cbdata)
{
	struct waiter *w = cbdata;

	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static pmix_status_t waiter_wait(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return w->status;
}

int pmix_fail(mpictr_err **err, pmix_status_t rc, const char *what)
{
	return err_set(err, 0, "pmix: %s: %s", what, PMIx_Error_string(rc));
}

static bool pmix_ok(pmix_status_t rc)
{
	return rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED;
}

/* ---- job registration ---- */

static int list_add(void *list, const char *key, const void *value,
		    pmix_data_type_t type, mpictr_err **err)
{
	pmix_status_t rc = PMIx_Info_list_add(list, key, value, type);

	if (rc != PMIX_SUCCESS)
		return err_set(err, 0, "pmix: add job key '%s': %s", key,
			       PMIx_Error_string(rc));
	return 0;
}

static int add_regex(void *list, const char *key, const char *input, bool ppn,
		     mpictr_err **err)
{
	char *regex = NULL;
	pmix_status_t rc = ppn ? PMIx_generate_ppn(input, &regex)
			       : PMIx_generate_regex(input, &regex);
	int r;

	if (rc != PMIX_SUCCESS)
		return err_set(err, 0, "pmix: generate %s: %s", key,
			       PMIx_Error_string(rc));
	/* The result may be a binary blob with NULs (zlib form); only the
	 * PMIX_REGEX type copies it by its real length. */
	r = list_add(list, key, regex, PMIX_REGEX, err);
	free(regex);
	return r;
}

static int add_proc_data(void *list, const struct pmi_job *job,
			 const struct pmi_spawn *sp, uint32_t r,
			 mpictr_err **err)
{
	void *pl = PMIx_Info_list_start();
	pmix_data_array_t darray;
	pmix_rank_t rank = r, ldr = 0, app_rank = r;
	uint32_t appnum = 0, nodeid = job->rank_node[r];
	long li = pmi_job_local_index(job, r);
	int ret = -1;
	pmix_status_t rc;

	if (sp) {
		/* MPI_Comm_spawn_multiple: ranks app by app (MPI_APPNUM) */
		appnum = (uint32_t)pmi_spawn_app_of(sp, r, &app_rank);
		ldr = r - app_rank;
	}
	if (list_add(pl, PMIX_RANK, &rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_APPNUM, &appnum, PMIX_UINT32, err) < 0 ||
	    list_add(pl, PMIX_APPLDR, &ldr, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_GLOBAL_RANK, &rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_APP_RANK, &app_rank, PMIX_PROC_RANK, err) < 0 ||
	    list_add(pl, PMIX_HOSTNAME, job->hostnames[nodeid], PMIX_STRING,
		     err) < 0 ||
	    list_add(pl, PMIX_NODEID, &nodeid, PMIX_UINT32, err) < 0)
		goto out;
	if (li >= 0) {
		/* One app per job, so the node rank is the local rank. */
		uint16_t lr = (uint16_t)li;

		if (list_add(pl, PMIX_LOCAL_RANK, &lr, PMIX_UINT16, err) < 0 ||
		    list_add(pl, PMIX_NODE_RANK, &lr, PMIX_UINT16, err) < 0)
			goto out;
	}
	memset(&darray, 0, sizeof(darray));
	rc = PMIx_Info_list_convert(pl, &darray);
	if (rc != PMIX_SUCCESS) {
		pmix_fail(err, rc, "build proc data");
		goto out;
	}
	ret = list_add(list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY, err);
	PMIx_Data_array_destruct(&darray);
out:
	PMIx_Info_list_release(pl);
	return ret;
}

/* The parent of a spawned job: PMIX_PARENT_ID tells Open MPI's
 * MPI_Comm_get_parent whom to connect to. */
static int add_parent(void *list, const struct pmi_spawn *sp, mpictr_err **err)
{
	pmix_proc_t parent;
	bool yes = true;

	PMIX_LOAD_PROCID(&parent, sp->parent_nspace, sp->parent_rank);
	if (list_add(list, PMIX_PARENT_ID, &parent, PMIX_PROC, err) < 0)
		return -1;
	return list_add(list, PMIX_SPAWNED, &yes, PMIX_BOOL, err);
}

static int build_job_info(const struct pmi_job *job, const struct pmi_spawn *sp,
			  const char *tmpdir, void *list, mpictr_err **err)
{
	cleanup_free char *nodes = pmi_job_node_list(job);
	cleanup_free char *procs = pmi_job_proc_list(job);
	cleanup_free char *peers = pmi_job_local_peers(job);
	cleanup_free char *nsdir = xasprintf("%s/%s", tmpdir, job->nspace);
	bool no = false, yes = true;
	pmix_rank_t ldr = job->nlocal ? job->local_ranks[0] : 0;
	uint32_t nnodes = job->nnodes, nlocal = job->nlocal;
	uint32_t univ = job->universe ? job->universe : job->size;

	if ((sp ? add_parent(list, sp, err)
		: list_add(list, PMIX_SPAWNED, &no, PMIX_BOOL, err)) < 0 ||
	    list_add(list, PMIX_TMPDIR, tmpdir, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_NSDIR, nsdir, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_TDIR_RMCLEAN, &yes, PMIX_BOOL, err) < 0 ||
	    list_add(list, PMIX_JOBID, job->nspace, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_NODEID, &job->nodeid, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_UNIV_SIZE, &univ, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_JOB_SIZE, &job->size, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_MAX_PROCS, &univ, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_NUM_NODES, &nnodes, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_LOCAL_SIZE, &nlocal, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_NODE_SIZE, &nlocal, PMIX_UINT32, err) < 0 ||
	    list_add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING, err) < 0 ||
	    list_add(list, PMIX_LOCALLDR, &ldr, PMIX_PROC_RANK, err) < 0 ||
	    add_regex(list, PMIX_NODE_MAP, nodes, false, err) < 0 ||
	    add_regex(list, PMIX_PROC_MAP, procs, true, err) < 0)
		return -1;
	for (uint32_t r = 0; r < job->size; r++)
		if (add_proc_data(list, job, sp, r, err) < 0)
			return -1;
	/* Open MPI creates its session directories below PMIX_NSDIR; making
	 * it here keeps everything inside the private tmpdir. */
	if (mkdir(nsdir, 0700) < 0 && errno != EEXIST)
		return err_set(err, errno, "create '%s'", nsdir);
	return 0;
}

int pmix_register_job(const struct pmi_job *job, const struct pmi_spawn *sp,
		      const char *tmpdir, mpictr_err **err)
{
	void *list = PMIx_Info_list_start();
	pmix_data_array_t darray;
	pmix_nspace_t ns;
	pmix_status_t rc;
	int ret = -1;

	memset(&darray, 0, sizeof(darray));
	PMIX_LOAD_NSPACE(ns, job->nspace);
	if (build_job_info(job, sp, tmpdir, list, err) < 0)
		goto out;
	rc = PMIx_Info_list_convert(list, &darray);
	if (rc != PMIX_SUCCESS) {
		pmix_fail(err, rc, "build job info");
		goto out;
	}
	/* Blocking form: NULL cbfunc. nlocalprocs must be exact, since
	 * libpmix completes local collectives when that many have joined. */
	rc = PMIx_server_register_nspace(ns, (int)job->nlocal, darray.array,
					 darray.size, NULL, NULL);
	if (!pmix_ok(rc)) {
		pmix_fail(err, rc, "register namespace");
		goto out;
	}
	for (uint32_t i = 0; i < job->nlocal; i++) {
		pmix_proc_t proc;

		PMIX_LOAD_PROCID(&proc, ns, job->local_ranks[i]);
		/* The client sends the ids it sees in its own user namespace;
		 * they must match these exactly. */
		rc = PMIx_server_register_client(&proc, job->uid, job->gid,
						 NULL, NULL, NULL);
		if (!pmix_ok(rc)) {
			pmix_fail(err, rc, "register client");
			err_wrap(err, "rank %u", job->local_ranks[i]);
			pmix_deregister_nspace(job->nspace);
			goto out;
		}
	}
	ret = 0;
out:
	PMIx_Data_array_destruct(&darray);
	PMIx_Info_list_release(list);
	return ret;
}

int pmix_setup_fork(const char *nspace, uint32_t rank, char ***env,
		    mpictr_err **err)
{
	pmix_proc_t proc;
	char **penv = NULL;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&proc, nspace, rank);
	rc = PMIx_server_setup_fork(&proc, &penv);
	if (rc != PMIX_SUCCESS) {
		strv_free(penv);
		pmix_fail(err, rc, "setup fork");
		return err_wrap(err, "rank %u", rank);
	}
	for (char **e = penv; e && *e; e++) {
		char *eq = strchr(*e, '=');

		if (!eq)
			continue;
		*eq = '\0';
		env_set(env, *e, eq + 1);
	}
	strv_free(penv); /* malloc'ed strings in a malloc'ed array */
	return 0;
}

void pmix_deregister_nspace(const char *nspace)
{
	struct waiter w = WAITER_INIT;
	pmix_nspace_t ns;

	PMIX_LOAD_NSPACE(ns, nspace);
	PMIx_server_deregister_nspace(ns, waiter_op_cb, &w);
	waiter_wait(&w);
}
