/* node_daemon.c - node daemon mode:
 * `srun --ntasks-per-node=1 --mpi=pmix mpictr -n N IMAGE CMD`. This task
 * launches its N ranks as in launch mode (launch.c), and its PMI servers
 * register the global job - N ranks on each node of the step, computed the
 * same way on every node from the SLURM_* step variables - with fences
 * across nodes going through the upstream agent (pmi/upstream.c), Slurm's
 * PMIx client. docs/pmi.md, "node daemon mode". mode.c decides the mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/node_daemon.h"
#include "common/error.h"
#include "sched/slurm.h"
#include "common/util.h"

/* Check the step shape and fork the agent: before any PMIx call in this
 * process and while it is single-threaded. */
int daemon_start(const struct mpictr_config *cfg, struct pmi_upstream **up,
		 mpictr_err **err)
{
	const char *tpn = env_get(cfg->host_env, "SLURM_STEP_TASKS_PER_NODE");
	struct slurm_step step;

	if (slurm_step_from_env(cfg->host_env, &step, err) < 0)
		return err_wrap(err, "node daemon mode");
	for (uint32_t i = 0; i < step.nnodes; i++) {
		if (step.tasks_per_node[i] == 1)
			continue;
		slurm_step_free(&step);
		err_set(err, 0,
			"node daemon mode (mpictr -n under srun --mpi=pmix) "
			"needs exactly one srun task per node, but "
			"SLURM_STEP_TASKS_PER_NODE is '%.64s'",
			tpn);
		return err_hint(err, "srun --ntasks-per-node=1 ... mpictr -n "
				     "N; or let srun start every rank and run "
				     "mpictr without -n");
	}
	slurm_step_free(&step);
	if (pmi_upstream_start(up, err) < 0)
		return err_wrap(err, "node daemon mode");
	return 0;
}

/* The global job: node i of the step runs global ranks i*N .. i*N+N-1. */
int daemon_job(const struct mpictr_config *cfg, struct pmi_upstream *up,
	       int nranks, uid_t uid, gid_t gid, struct pmi_job *pj,
	       uint32_t *rank_base, mpictr_err **err)
{
	const char *nodelist = env_get(cfg->host_env, "SLURM_STEP_NODELIST");
	struct slurm_step step;
	char **hosts = NULL;
	cleanup_free char *nspace = NULL;
	int rc = -1;

	if (slurm_step_from_env(cfg->host_env, &step, err) < 0)
		return err_wrap(err, "node daemon mode");
	if (slurm_expand_hostlist(nodelist, &hosts, err) < 0)
		goto out;
	if (strv_len(hosts) != step.nnodes) {
		err_set(err, 0,
			"SLURM_STEP_NODELIST '%.64s' names %zu hosts but "
			"SLURM_STEP_TASKS_PER_NODE %u nodes",
			nodelist, strv_len(hosts), step.nnodes);
		goto out;
	}
	if (pmi_upstream_size(up) != step.nnodes) {
		err_set(err, 0,
			"Slurm's PMIx job has %u tasks, but the step has %u "
			"nodes of one task",
			pmi_upstream_size(up), step.nnodes);
		goto out;
	}
	/* The same name on every node: Open MPI derives its job id from it
	 * and the fence data names it. */
	nspace = xasprintf("mpictr.%s.%s", step.job_id, step.step_id);
	if (pmi_job_node_blocks(nspace, step.nnodes, step.node_id,
				(uint32_t)nranks, hosts, uid, gid, pj, err) < 0)
		goto out;
	*rank_base = step.node_id * (uint32_t)nranks;
	rc = 0;
out:
	if (rc < 0)
		err_wrap(err, "node daemon mode");
	strv_free(hosts);
	slurm_step_free(&step);
	return rc;
}

/* This node failed before or while starting its ranks: the other nodes
 * would wait for them in their first fence, so end the step everywhere.
 * Say why first - Slurm may kill this process before main() prints it. */
void daemon_fail(struct pmi_upstream *up, mpictr_err *const *err)
{
	const char *msg = err && *err ? mpictr_err_message(*err) : "failed";

	if (!up)
		return;
	log_error("node daemon: ending the step on every node: %s", msg);
	pmi_upstream_abort(up, MPICTR_EXIT_FAILURE, msg);
}
