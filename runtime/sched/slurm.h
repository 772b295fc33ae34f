/* slurm.h - Slurm step variables, parsed from the task's environment only
 * (no scontrol call per task). Pure; fuzzed (tests/fuzz/fuzz_slurm.c). */
#ifndef MPICTR_SLURM_H
#define MPICTR_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "mpictr.h"

#define SLURM_MAX_NODES 65536
#define SLURM_MAX_TASKS (1u << 24)

/* "4(x2),3" -> {4,4,3}, *nnodes = 3. Counts are >= 1. */
int slurm_parse_tasks_per_node(const char *spec, uint32_t **counts,
			       uint32_t *nnodes, mpictr_err **err);
/* "node[1-3,07],login1" -> {"node1","node2","node3","node07","login1"}. */
int slurm_expand_hostlist(const char *spec, char ***hosts, mpictr_err **err);

struct slurm_step {
	char *job_id;	  /* SLURM_JOB_ID */
	char *step_id;	  /* SLURM_STEP_ID */
	uint32_t node_id; /* SLURM_NODEID */
	uint32_t nnodes;  /* entries of tasks_per_node */
	uint32_t *tasks_per_node;
	uint32_t local_tasks; /* tasks_per_node[node_id] */
	uint32_t proc_id;     /* SLURM_PROCID (global rank) */
	uint32_t local_id;    /* SLURM_LOCALID */
	uint32_t ntasks;      /* sum of tasks_per_node */
};

/* True when env looks like an srun task (job, step and task ids set). */
bool slurm_in_step(char *const *env);
/* Fill *s from env; every error names the variable. */
int slurm_step_from_env(char *const *env, struct slurm_step *s,
			mpictr_err **err);
void slurm_step_free(struct slurm_step *s);

#endif
