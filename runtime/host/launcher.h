/* launcher.h - which launcher started this process, and who its local
 * peers are: one decision from the environment (and, for Hydra and unknown
 * launchers, the parent process), evaluated in the order of
 * docs/launchers.md. Pure: process facts come through a callback
 * (launcher_proc_host reads /proc). Fuzzed (tests/fuzz/fuzz_launcher.c). */
#ifndef MPICTR_LAUNCHER_H
#define MPICTR_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpictr.h"

/* The rules, in the order they are tried; the first whose variables are
 * present fires. */
enum launcher_rule {
	LAUNCHER_EXPLICIT, /* MPICTR_JOB_KEY (+MPICTR_LOCAL_RANK/SIZE) */
	LAUNCHER_OPENMPI,  /* OMPI_COMM_WORLD_* (ORTE, or PRRTE with ompi) */
	LAUNCHER_HYDRA,	   /* MPI_LOCALRANKID/MPI_LOCALNRANKS + PMI_RANK/ID */
	LAUNCHER_FLUX,	   /* FLUX_JOB_ID, FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID */
	LAUNCHER_JSM,	   /* JSM_NAMESPACE_* (LSF jsrun) */
	LAUNCHER_PALS,	   /* PALS_APID, PALS_RANKID, PALS_LOCAL_RANKID */
	LAUNCHER_SLURM,	   /* SLURM_* that pass every consistency check */
	LAUNCHER_ALPS,	   /* ALPS_APP_ID, ALPS_APP_PE */
	LAUNCHER_PMIX,	   /* PMIX_NAMESPACE + PMIX_RANK only */
	LAUNCHER_PMI,	   /* PMI_RANK, PMI_ID, PMI_FD or PMI_PORT only */
	LAUNCHER_NONE,	   /* nothing a launcher sets */
};

/* A value the launcher did not give. Every known value is below it
 * (counts are bounded by LAUNCHER_MAX_TASKS). */
#define LAUNCHER_UNKNOWN UINT32_MAX
#define LAUNCHER_MAX_TASKS (1u << 24)

struct launch_peers {
	enum launcher_rule rule;
	const char *name; /* static, for messages: "Open MPI (ORTE)" */
	/* The launcher's part of the job key: printable, the same in every
	 * local task of one job and different between jobs (the caller adds
	 * uid, host and boot id). Parts are joined with '|'; a '|', '\\' or
	 * control character inside a part is written as \xHH. */
	char *key;
	uint32_t rank, size;		 /* global; LAUNCHER_UNKNOWN */
	uint32_t local_rank, local_size; /* local_size unknown: counting */
	uint32_t node_id;		 /* LAUNCHER_UNKNOWN when not given */
	char *node_name;		 /* NULL when not given */
	/* Hydra: the hydra_pmi_proxy (or, failing that, the parent) the key
	 * was made from; rules PMI and NONE: the parent. 0 otherwise. */
	pid_t anchor_pid;
	uint64_t anchor_start; /* its start time, /proc/<pid>/stat field 22 */
	char **read;	       /* names of the variables used, in order */
	char **notes;	       /* rules passed over, and why */
};

/* What a rule may need to know about a process. */
struct launcher_proc_info {
	pid_t ppid;
	uint64_t start_time; /* clock ticks after boot (stat field 22) */
	char comm[16];
};

/* Process facts, injectable for tests. lookup() describes pid (0: the
 * calling process) and returns 0, or -1 with *err set. */
struct launcher_proc {
	int (*lookup)(void *ctx, pid_t pid, struct launcher_proc_info *out,
		      mpictr_err **err);
	void *ctx;
};

/* Reads /proc/<pid>/stat. */
extern const struct launcher_proc launcher_proc_host;

/* Decide from env ("NAME=VALUE" vector) and proc (used only by the Hydra
 * rule without PMI_PORT and by rules PMI and NONE; NULL makes those fail).
 * Fills *out (free with launch_peers_free(), also after an error) and
 * returns 0; or returns -1 with *err naming the variables when a value is
 * malformed or values contradict each other: never a guess. */
int launcher_detect(char *const *env, const struct launcher_proc *proc,
		    struct launch_peers *out, mpictr_err **err);
void launch_peers_free(struct launch_peers *p);

/* One line for -v and --dry-run ("launcher: Open MPI (ORTE), rank 1 of 4,
 * local rank 1 of 4, node vm, key ..., read OMPI_COMM_WORLD_LOCAL_RANK,
 * ..."). Caller frees. */
char *launcher_describe(const struct launch_peers *p);
/* "read A, B, C" of the variables used, for error messages. Caller
 * frees. */
char *launcher_read_list(const struct launch_peers *p);

/* The short name of a rule ("openmpi", "slurm", ...). */
const char *launcher_rule_name(enum launcher_rule rule);

/* Parse the text of /proc/<pid>/stat (len bytes, need not be terminated).
 * Returns 0, or -1 with errno EINVAL when malformed. */
int launcher_parse_stat(const char *buf, size_t len,
			struct launcher_proc_info *out);

#endif
