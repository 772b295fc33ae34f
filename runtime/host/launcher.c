/* launcher.c - the launcher detection of docs/launchers.md (research:
 * shared/reference/launchers.md §6 and §8). Rules are tried in order; the
 * first whose trigger variables are present fires and then either
 * succeeds or fails with an error naming what it read. Only Slurm can be
 * passed over after it matched: its variables go stale under every nested
 * launcher, so they count only after the §6 checks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "host/launcher.h"
#include "sched/slurm.h"
#include "common/util.h"

/* Slurm's special step ids (slurm/slurm.h); setup_env() prints step ids
 * with %d, so they may also appear as negative numbers. */
#define SLURM_MAX_NORMAL_STEP_ID 0xfffffff0u
#define SLURM_PENDING_STEP 0xfffffffdu
#define SLURM_EXTERN_CONT 0xfffffffcu
#define SLURM_BATCH_SCRIPT 0xfffffffbu
#define SLURM_INTERACTIVE_STEP 0xfffffffau

/* Longest value taken into a key; a longer one is an error, not cut. */
#define KEY_PART_MAX 4096
/* How far up the process tree the hydra_pmi_proxy search goes. */
#define ANCESTOR_DEPTH 32

struct det {
	char *const *env;
	const struct launcher_proc *proc;
	struct launch_peers *out;
	struct strbuf key;
	int nparts;
};

static const char *const rule_names[] = {
    [LAUNCHER_EXPLICIT] = "explicit", [LAUNCHER_OPENMPI] = "openmpi",
    [LAUNCHER_HYDRA] = "hydra",	      [LAUNCHER_FLUX] = "flux",
    [LAUNCHER_JSM] = "jsm",	      [LAUNCHER_PALS] = "pals",
    [LAUNCHER_SLURM] = "slurm",	      [LAUNCHER_ALPS] = "alps",
    [LAUNCHER_PMIX] = "pmix",	      [LAUNCHER_PMI] = "pmi",
    [LAUNCHER_NONE] = "none",
};

const char *launcher_rule_name(enum launcher_rule rule)
{
	if ((size_t)rule < ARRAY_SIZE(rule_names))
		return rule_names[rule];
	return "?";
}

/* ---- reading the environment ---- */

static const char *raw(const struct det *d, const char *name)
{
	return env_get(d->env, name);
}

/* Read a variable the decision uses, recording its name once. */
static const char *get(struct det *d, const char *name)
{
	const char *v = env_get(d->env, name);

	if (!v)
		return NULL;
	for (char **r = d->out->read; r && *r; r++)
		if (strcmp(*r, name) == 0)
			return v;
	strv_push(&d->out->read, name);
	return v;
}

/* A decimal in 0..max: digits only (no sign, space or '+'). */
static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	long v;

	if (!s || *s < '0' || *s > '9' || strlen(s) > 10 ||
	    parse_long(s, 0, (long)max, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Read name as a number below LAUNCHER_MAX_TASKS. Returns 1 when set, 0
 * when not set and !required, -1 with *err otherwise. */
static int num(struct det *d, const char *name, bool required, uint32_t *out,
	       mpictr_err **err)
{
	const char *v = get(d, name);

	*out = LAUNCHER_UNKNOWN;
	if (!v) {
		if (required)
			return err_set(err, 0, "%s is not set", name);
		return 0;
	}
	if (parse_u32(v, LAUNCHER_MAX_TASKS - 1, out) < 0) {
		*out = LAUNCHER_UNKNOWN;
		return err_set(err, 0, "%s '%.32s' is not a number in 0..%u",
			       name, v, LAUNCHER_MAX_TASKS - 1);
	}
	return 1;
}

/* Two variables that must agree when both are set. */
static int agree(struct det *d, const char *a, uint32_t va, const char *b,
		 mpictr_err **err)
{
	uint32_t vb;
	int r = num(d, b, false, &vb, err);

	if (r <= 0 || va == LAUNCHER_UNKNOWN)
		return r;
	if (va != vb)
		return err_set(err, 0,
			       "%s %u and %s %u disagree (variables of two "
			       "launchers, one inside the other?)",
			       a, va, b, vb);
	return 0;
}

/* ---- the key ---- */

static int key_add(struct det *d, const char *name, const char *v,
		   mpictr_err **err)
{
	if (d->nparts++)
		sb_putc(&d->key, '|');
	if (!v)
		v = "";
	if (strlen(v) > KEY_PART_MAX)
		return err_set(err, 0, "%s is longer than %d bytes", name,
			       KEY_PART_MAX);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '|' || *p == '\\' || *p < 0x20 || *p == 0x7f)
			sb_printf(&d->key, "\\x%02x", *p);
		else
			sb_putc(&d->key, (char)*p);
	}
	return 0;
}

/* Add a variable's value (empty when unset) to the key. */
static int key_var(struct det *d, const char *name, mpictr_err **err)
{
	return key_add(d, name, get(d, name), err);
}

static void fire(struct det *d, enum launcher_rule rule, const char *name)
{
	d->out->rule = rule;
	d->out->name = name;
	key_add(d, "", rule_names[rule], NULL);
}

static void note(struct det *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct det *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strv_push_own(&d->out->notes, xvasprintf(fmt, ap));
	va_end(ap);
}

/* Global rank and size from two variables, rank < size when both set. */
static int rank_size(struct det *d, const char *rn, const char *sn,
		     bool required, mpictr_err **err)
{
	struct launch_peers *o = d->out;

	if (num(d, rn, required, &o->rank, err) < 0 ||
	    num(d, sn, required, &o->size, err) < 0)
		return -1;
	if (o->rank != LAUNCHER_UNKNOWN && o->size != LAUNCHER_UNKNOWN &&
	    o->rank >= o->size)
		return err_set(err, 0, "%s %u is not below %s %u", rn, o->rank,
			       sn, o->size);
	return 0;
}

static int local(struct det *d, const char *rn, const char *sn,
		 mpictr_err **err)
{
	struct launch_peers *o = d->out;

	if (num(d, rn, true, &o->local_rank, err) < 0 ||
	    (sn && num(d, sn, true, &o->local_size, err) < 0))
		return -1;
	if (sn && o->local_rank >= o->local_size)
		return err_set(err, 0, "%s %u is not below %s %u", rn,
			       o->local_rank, sn, o->local_size);
	return 0;
}

/* ---- process facts ---- */

static int lookup(struct det *d, pid_t pid, struct launcher_proc_info *pi,
		  mpictr_err **err)
{
	if (!d->proc || !d->proc->lookup)
		return err_set(err, 0,
			       "the %s rule needs the parent process, and no "
			       "process information was given",
			       d->out->name);
	memset(pi, 0, sizeof(*pi));
	if (d->proc->lookup(d->proc->ctx, pid, pi, err) < 0)
		return -1;
	pi->comm[sizeof(pi->comm) - 1] = '\0';
	return 0;
}

/* Anchor the key on the nearest ancestor called comm (NULL: the parent),
 * or on the parent when there is none. */
static int anchor(struct det *d, const char *comm, mpictr_err **err)
{
	struct launcher_proc_info self, pi;
	pid_t pid, parent;

	if (lookup(d, 0, &self, err) < 0)
		return -1;
	parent = self.ppid;
	if (parent <= 0)
		return err_set(err, 0,
			       "the parent process is outside this PID "
			       "namespace (hint: set MPICTR_JOB_KEY)");
	pid = parent;
	for (int depth = 0; comm && depth < ANCESTOR_DEPTH && pid > 1;
	     depth++) {
		if (lookup(d, pid, &pi, err) < 0)
			return -1;
		if (strcmp(pi.comm, comm) == 0)
			goto found;
		pid = pi.ppid;
	}
	if (comm)
		note(d, "no %s among the ancestors: the key is the parent",
		     comm);
	pid = parent;
	if (lookup(d, pid, &pi, err) < 0)
		return -1;
found:
	d->out->anchor_pid = pid;
	d->out->anchor_start = pi.start_time;
	sb_printf(&d->key, "|%d:%" PRIu64, (int)pid, pi.start_time);
	d->nparts++;
	return 0;
}

/* ---- the rules; each returns 1 when it fired, 0 when it did not, -1 on
 * error (after firing) ---- */

static int rule_explicit(struct det *d, mpictr_err **err)
{
	struct launch_peers *o = d->out;
	const char *key = raw(d, "MPICTR_JOB_KEY");

	if (!key)
		return 0;
	fire(d, LAUNCHER_EXPLICIT, "explicit (MPICTR_JOB_KEY)");
	get(d, "MPICTR_JOB_KEY");
	if (!*key)
		return err_set(err, 0, "MPICTR_JOB_KEY is empty");
	if (key_add(d, "MPICTR_JOB_KEY", key, err) < 0 ||
	    num(d, "MPICTR_LOCAL_RANK", false, &o->local_rank, err) < 0 ||
	    num(d, "MPICTR_LOCAL_SIZE", false, &o->local_size, err) < 0)
		return -1;
	if (o->local_rank != LAUNCHER_UNKNOWN &&
	    o->local_size != LAUNCHER_UNKNOWN && o->local_rank >= o->local_size)
		return err_set(err, 0,
			       "MPICTR_LOCAL_RANK %u is not below "
			       "MPICTR_LOCAL_SIZE %u",
			       o->local_rank, o->local_size);
	return 1;
}

static const char *const pmix_uris[] = {
    "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",  "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI2",	 "PMIX_SERVER_URI21",
};

/* The PMIx server URIs present, in a fixed order: a part of the key that
 * tells two servers (two mpirun or prted, two jobs) apart. */
static int key_uris(struct det *d, mpictr_err **err)
{
	for (size_t i = 0; i < ARRAY_SIZE(pmix_uris); i++)
		if (raw(d, pmix_uris[i]) && key_var(d, pmix_uris[i], err) < 0)
			return -1;
	return 0;
}

static int rule_openmpi(struct det *d, mpictr_err **err)
{
	struct launch_peers *o = d->out;
	const char *ns, *hnp;

	if (!raw(d, "OMPI_COMM_WORLD_RANK") ||
	    !raw(d, "OMPI_COMM_WORLD_SIZE") ||
	    !raw(d, "OMPI_COMM_WORLD_LOCAL_RANK") ||
	    !raw(d, "OMPI_COMM_WORLD_LOCAL_SIZE"))
		return 0;
	hnp = raw(d, "OMPI_MCA_orte_hnp_uri");
	fire(d, LAUNCHER_OPENMPI, hnp ? "Open MPI (ORTE)" : "Open MPI (PRRTE)");
	if (rank_size(d, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", true,
		      err) < 0 ||
	    local(d, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
		  err) < 0 ||
	    agree(d, "OMPI_COMM_WORLD_RANK", o->rank, "PMIX_RANK", err) < 0)
		return -1;
	if (o->local_size > o->size)
		return err_set(err, 0,
			       "OMPI_COMM_WORLD_LOCAL_SIZE %u is above "
			       "OMPI_COMM_WORLD_SIZE %u",
			       o->local_size, o->size);
	/* ORTE's job id is a 16-bit fold of mpirun's host and pid, which two
	 * concurrent mpiruns can share: mpirun's URI (its IP and port) makes
	 * the key unique. PRRTE's namespace is unique, the local server's
	 * URIs tell apart daemons of a DVM. */
	ns = raw(d, "PMIX_NAMESPACE") ? "PMIX_NAMESPACE"
				      : "OMPI_MCA_ess_base_jobid";
	if (!raw(d, ns))
		return err_set(err, 0,
			       "Open MPI gave no job id (PMIX_NAMESPACE, "
			       "OMPI_MCA_ess_base_jobid)");
	if (key_var(d, ns, err) < 0)
		return -1;
	if (hnp ? key_var(d, "OMPI_MCA_orte_hnp_uri", err) < 0
		: key_uris(d, err) < 0)
		return -1;
	if (get(d, "PMIX_HOSTNAME"))
		o->node_name = xstrdup(get(d, "PMIX_HOSTNAME"));
	return 1;
}

static int rule_hydra(struct det *d, mpictr_err **err)
{
	struct launch_peers *o = d->out;
	const char *rank_var = raw(d, "PMI_RANK") ? "PMI_RANK" : "PMI_ID";

	if (!raw(d, "MPI_LOCALRANKID") || !raw(d, "MPI_LOCALNRANKS") ||
	    !raw(d, rank_var))
		return 0;
	fire(d, LAUNCHER_HYDRA, "MPICH Hydra");
	if (rank_size(d, rank_var, "PMI_SIZE", false, err) < 0 ||
	    num(d, rank_var, true, &o->rank, err) < 0 ||
	    local(d, "MPI_LOCALRANKID", "MPI_LOCALNRANKS", err) < 0)
		return -1;
	if (o->size != LAUNCHER_UNKNOWN && o->local_size > o->size)
		return err_set(err, 0,
			       "MPI_LOCALNRANKS %u is above PMI_SIZE %u",
			       o->local_size, o->size);
	if (get(d, "PMI_HOSTNAME"))
		o->node_name = xstrdup(get(d, "PMI_HOSTNAME"));
	/* Hydra gives no job id. In port mode the proxy's PMI_PORT is one per
	 * proxy; otherwise the proxy itself is, found by name so that a
	 * wrapper shell between it and us does not matter. */
	if (raw(d, "PMI_PORT"))
		return key_var(d, "PMI_PORT", err) < 0 ? -1 : 1;
	return anchor(d, "hydra_pmi_proxy", err) < 0 ? -1 : 1;
}

static int rule_flux(struct det *d, mpictr_err **err)
{
	struct launch_peers *o = d->out;

	if (!raw(d, "FLUX_JOB_ID") || !raw(d, "FLUX_TASK_RANK") ||
	    !raw(d, "FLUX_TASK_LOCAL_ID"))
		return 0;
	fire(d, LAUNCHER_FLUX, "Flux");
	if (rank_size(d, "FLUX_TASK_RANK", "FLUX_JOB_SIZE", false, err) < 0 ||
	    num(d, "FLUX_TASK_RANK", true, &o->rank, err) < 0 ||
	    local(d, "FLUX_TASK_LOCAL_ID", NULL, err) < 0 ||
	    agree(d, "FLUX_TASK_RANK", o->rank, "PMI_RANK", err) < 0 ||
	    agree(d, "FLUX_JOB_SIZE", o->size, "PMI_SIZE", err) < 0)
		return -1;
	/* FLUX_JOB_TMPDIR is per job and per shell (jobtmp-<shell>-<id>). */
	if (key_var(d, "FLUX_URI", err) < 0 ||
	    key_var(d, "FLUX_JOB_ID", err) < 0 ||
	    key_var(d, "FLUX_JOB_TMPDIR", err) < 0)
		return -1;
	return 1;
}

static int rule_jsm(struct det *d, mpictr_err **err)
{
	if (!raw(d, "JSM_NAMESPACE_RANK") ||
	    !raw(d, "JSM_NAMESPACE_LOCAL_RANK") ||
	    !raw(d, "JSM_NAMESPACE_LOCAL_SIZE"))
		return 0;
	fire(d, LAUNCHER_JSM, "LSF jsrun (JSM)");
	if (rank_size(d, "JSM_NAMESPACE_RANK", "JSM_NAMESPACE_SIZE", false,
		      err) < 0 ||
	    num(d, "JSM_NAMESPACE_RANK", true, &d->out->rank, err) < 0 ||
	    local(d, "JSM_NAMESPACE_LOCAL_RANK", "JSM_NAMESPACE_LOCAL_SIZE",
		  err) < 0)
		return -1;
	if (key_var(d, "LSB_JOBID", err) < 0 ||
	    key_var(d, "PMIX_NAMESPACE", err) < 0 ||
	    key_var(d, "JSM_JSRUN_PORT", err) < 0)
		return -1;
	return 1;
}

static int rule_pals(struct det *d, mpictr_err **err)
{
	struct launch_peers *o = d->out;
	uint32_t pmi_size;

	if (!raw(d, "PALS_APID") || !raw(d, "PALS_RANKID") ||
	    !raw(d, "PALS_LOCAL_RANKID"))
		return 0;
	fire(d, LAUNCHER_PALS, "HPE PALS");
	if (rank_size(d, "PALS_RANKID", "PMI_SIZE", false, err) < 0 ||
	    num(d, "PALS_RANKID", true, &o->rank, err) < 0 ||
	    agree(d, "PALS_RANKID", o->rank, "PMI_RANK", err) < 0 ||
	    local(d, "PALS_LOCAL_RANKID", NULL, err) < 0 ||
	    agree(d, "PALS_LOCAL_RANKID", o->local_rank, "PMI_LOCAL_RANK",
		  err) < 0 ||
	    num(d, "PALS_LOCAL_SIZE", false, &o->local_size, err) < 0 ||
	    num(d, "PMI_LOCAL_SIZE", false, &pmi_size, err) < 0 ||
	    num(d, "PALS_NODEID", false, &o->node_id, err) < 0)
		return -1;
	if (o->local_size == LAUNCHER_UNKNOWN)
		o->local_size = pmi_size;
	else if (pmi_size != LAUNCHER_UNKNOWN && pmi_size != o->local_size)
		return err_set(err, 0,
			       "PALS_LOCAL_SIZE %u and PMI_LOCAL_SIZE %u "
			       "disagree",
			       o->local_size, pmi_size);
	if (o->local_size != LAUNCHER_UNKNOWN && o->local_rank >= o->local_size)
		return err_set(err, 0,
			       "PALS_LOCAL_RANKID %u is not below the local "
			       "size %u",
			       o->local_rank, o->local_size);
	if (key_var(d, "PALS_APID", err) < 0 ||
	    key_var(d, "PALS_NODEID", err) < 0)
		return -1;
	return 1;
}

/* SLURM_STEP_ID as a number; a special step (batch, extern, interactive,
 * pending) gets a name in *special. -1 when not a step id at all. */
static int slurm_step_num(const char *s, uint32_t *step, const char **special)
{
	static const struct {
		uint32_t id;
		const char *name;
	} specials[] = {
	    {SLURM_BATCH_SCRIPT, "batch"},
	    {SLURM_EXTERN_CONT, "extern"},
	    {SLURM_INTERACTIVE_STEP, "interactive"},
	    {SLURM_PENDING_STEP, "pending"},
	};
	long v;

	*special = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(specials); i++)
		if (strcmp(s, specials[i].name) == 0) {
			*step = specials[i].id;
			*special = specials[i].name;
			return 0;
		}
	if (s[0] == '-' && s[1] >= '1' && s[1] <= '9' && strlen(s) <= 11 &&
	    parse_long(s, INT32_MIN, -1, &v) == 0)
		*step = (uint32_t)(int32_t)v;
	else if (s[0] >= '0' && s[0] <= '9' && strlen(s) <= 10 &&
		 parse_long(s, 0, UINT32_MAX, &v) == 0)
		*step = (uint32_t)v;
	else
		return -1;
	if (*step > SLURM_MAX_NORMAL_STEP_ID) {
		*special = "special";
		for (size_t i = 0; i < ARRAY_SIZE(specials); i++)
			if (specials[i].id == *step)
				*special = specials[i].name;
	}
	return 0;
}

/* SLURM_GTIDS: "0,1,2", the global task ids of this step on this node.
 * Returns the number of entries and whether proc_id is among them. */
static int slurm_gtids(const char *v, uint32_t proc_id, uint32_t *count,
		       bool *has_proc, mpictr_err **err)
{
	const char *p = v;

	*count = 0;
	*has_proc = false;
	for (;;) {
		uint32_t id = 0;
		const char *start = p;

		while (*p >= '0' && *p <= '9' && p - start < 9)
			id = id * 10 + (uint32_t)(*p++ - '0');
		if (p == start || (*p != ',' && *p != '\0') ||
		    id >= SLURM_MAX_TASKS || *count >= SLURM_MAX_TASKS)
			return err_set(err, 0,
				       "SLURM_GTIDS '%.64s' is malformed at "
				       "offset %zu",
				       v, (size_t)(p - v));
		++*count;
		*has_proc |= id == proc_id;
		if (!*p++)
			return 0;
	}
}

/* Fail as the named rule (before it fired: no key part). */
static int fail_as(struct det *d, enum launcher_rule rule, const char *name)
{
	d->out->rule = rule;
	d->out->name = name;
	return -1;
}

/* Do the PMIx and PMI variables belong to this step (srun --mpi=pmix or
 * pmi2), or to a launcher inside it? True (with a note) when they are
 * another's: then the SLURM_* are stale too. */
static bool slurm_pmi_stale(struct det *d, const char *jobstep)
{
	const struct launch_peers *o = d->out;
	const char *v, *size;
	cleanup_free char *ns = xasprintf("slurm.pmix.%s", jobstep);
	uint32_t r, n;

	if ((v = raw(d, "PMIX_RANK"))) {
		if (parse_u32(v, LAUNCHER_MAX_TASKS - 1, &r) < 0 ||
		    r != o->rank || !streq0(raw(d, "PMIX_NAMESPACE"), ns)) {
			note(d,
			     "slurm: PMIX_RANK/PMIX_NAMESPACE are not this "
			     "step's (SLURM_PROCID %u, %s)",
			     o->rank, ns);
			return true;
		}
		get(d, "PMIX_RANK");
		get(d, "PMIX_NAMESPACE");
	}
	if ((v = raw(d, "PMI_RANK"))) {
		size = raw(d, "PMI_SIZE");
		if (parse_u32(v, LAUNCHER_MAX_TASKS - 1, &r) < 0 ||
		    r != o->rank || !streq0(raw(d, "PMI_JOBID"), jobstep) ||
		    (size && (parse_u32(size, LAUNCHER_MAX_TASKS, &n) < 0 ||
			      n != o->size))) {
			note(d,
			     "slurm: PMI_RANK/PMI_SIZE/PMI_JOBID are not "
			     "this step's (SLURM_PROCID %u of %u, %s)",
			     o->rank, o->size, jobstep);
			return true;
		}
		get(d, "PMI_RANK");
		get(d, "PMI_SIZE");
		get(d, "PMI_JOBID");
	}
	return false;
}

/* Rule 6. Slurm's variables describe this process only when the checks of
 * launchers.md §6 hold; a failed cross-check (a batch step, stale PMI or
 * PMIx variables of an outer step: a launcher inside the step) passes the
 * rule over with a note. Malformed values are errors. */
static int rule_slurm(struct det *d, mpictr_err **err)
{
	static const char *const inner[] = {
	    "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID", "FLUX_TASK_RANK",
	    "JSM_NAMESPACE_RANK",   "PALS_RANKID",     "ALPS_APP_PE",
	};
	static const char *const used[] = {
	    "SLURM_JOB_ID",  "SLURM_STEP_ID", "SLURM_PROCID",
	    "SLURM_LOCALID", "SLURM_NODEID",  "SLURM_STEP_TASKS_PER_NODE",
	};
	struct launch_peers *o = d->out;
	const char *job = raw(d, "SLURM_JOB_ID");
	const char *step = raw(d, "SLURM_STEP_ID");
	const char *special, *v;
	struct slurm_step s;
	cleanup_free char *jobstep = NULL;
	uint32_t step_id, n;
	bool has_proc;

	if (!job)
		return 0;
	if (!step || !raw(d, "SLURM_PROCID") || !raw(d, "SLURM_LOCALID")) {
		note(d, "slurm: SLURM_JOB_ID without SLURM_STEP_ID, "
			"SLURM_PROCID and SLURM_LOCALID (a batch script or "
			"salloc shell, not a task of srun)");
		return 0;
	}
	if (slurm_step_num(step, &step_id, &special) < 0) {
		get(d, "SLURM_STEP_ID");
		fail_as(d, LAUNCHER_SLURM, "Slurm");
		return err_set(err, 0, "SLURM_STEP_ID '%.32s' is malformed",
			       step);
	}
	if (special) {
		note(d,
		     "slurm: SLURM_STEP_ID %.32s is the %s step, not a "
		     "step of tasks",
		     step, special);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(inner); i++)
		if (raw(d, inner[i])) {
			note(d, "slurm: %s is set: an inner launcher's task",
			     inner[i]);
			return 0;
		}
	for (size_t i = 0; i < ARRAY_SIZE(used); i++)
		get(d, used[i]);
	if (slurm_step_from_env(d->env, &s, err) < 0)
		return fail_as(d, LAUNCHER_SLURM, "Slurm");
	o->rank = s.proc_id;
	o->size = s.ntasks;
	o->local_rank = s.local_id;
	o->local_size = s.local_tasks;
	o->node_id = s.node_id;
	slurm_step_free(&s);
	jobstep = xasprintf("%s.%s", job, step);
	if (slurm_pmi_stale(d, jobstep))
		goto pass;

	fire(d, LAUNCHER_SLURM, "Slurm");
	if ((v = get(d, "SLURM_GTIDS"))) {
		if (slurm_gtids(v, o->rank, &n, &has_proc, err) < 0)
			return -1;
		if (!has_proc)
			return err_set(err, 0,
				       "SLURM_GTIDS '%.64s' does not contain "
				       "SLURM_PROCID %u",
				       v, o->rank);
		if (n != o->local_size)
			return err_set(err, 0,
				       "SLURM_GTIDS has %u tasks, "
				       "SLURM_STEP_TASKS_PER_NODE %u on node "
				       "%u",
				       n, o->local_size, o->node_id);
	}
	if (get(d, "SLURMD_NODENAME"))
		o->node_name = xstrdup(get(d, "SLURMD_NODENAME"));
	if (key_var(d, "SLURM_JOB_ID", err) < 0 ||
	    key_var(d, "SLURM_STEP_ID", err) < 0 ||
	    (raw(d, "SLURM_JOB_SLUID") &&
	     key_var(d, "SLURM_JOB_SLUID", err) < 0))
		return -1;
	return 1;
pass:
	o->rank = o->size = o->local_rank = o->local_size = LAUNCHER_UNKNOWN;
	o->node_id = LAUNCHER_UNKNOWN;
	strv_free(o->read);
	o->read = NULL;
	return 0;
}

static int rule_alps(struct det *d, mpictr_err **err)
{
	if (!raw(d, "ALPS_APP_ID") || !raw(d, "ALPS_APP_PE"))
		return 0;
	fire(d, LAUNCHER_ALPS, "Cray ALPS");
	if (num(d, "ALPS_APP_PE", true, &d->out->rank, err) < 0 ||
	    key_var(d, "ALPS_APP_ID", err) < 0)
		return -1;
	return 1;
}

static int rule_pmix(struct det *d, mpictr_err **err)
{
	if (!raw(d, "PMIX_NAMESPACE") || !raw(d, "PMIX_RANK"))
		return 0;
	fire(d, LAUNCHER_PMIX,
	     raw(d, "PRTE_LAUNCHED") ? "PMIx (PRRTE)" : "PMIx");
	if (num(d, "PMIX_RANK", true, &d->out->rank, err) < 0 ||
	    key_var(d, "PMIX_NAMESPACE", err) < 0 || key_uris(d, err) < 0)
		return -1;
	if (get(d, "PMIX_HOSTNAME"))
		d->out->node_name = xstrdup(get(d, "PMIX_HOSTNAME"));
	return 1;
}

static int rule_pmi(struct det *d, mpictr_err **err)
{
	if (!raw(d, "PMI_RANK") && !raw(d, "PMI_ID") && !raw(d, "PMI_FD") &&
	    !raw(d, "PMI_PORT"))
		return 0;
	fire(d, LAUNCHER_PMI, "PMI");
	if (rank_size(d, "PMI_RANK", "PMI_SIZE", false, err) < 0)
		return -1;
	return anchor(d, NULL, err) < 0 ? -1 : 1;
}

static int rule_none(struct det *d, mpictr_err **err)
{
	fire(d, LAUNCHER_NONE, "no launcher");
	return anchor(d, NULL, err) < 0 ? -1 : 1;
}

/* MPICTR_LOCAL_RANK/SIZE without MPICTR_JOB_KEY complete what a launcher
 * does not give (Flux's local size from a shell plugin) and must match
 * what it does give. */
static int apply_override(struct det *d, const char *name, uint32_t *field,
			  mpictr_err **err)
{
	uint32_t v;
	int r;

	if (!raw(d, name))
		return 0;
	if ((r = num(d, name, true, &v, err)) < 0)
		return -1;
	if (*field == LAUNCHER_UNKNOWN)
		*field = v;
	else if (*field != v)
		return err_set(err, 0, "%s %u contradicts the %s launcher's %u",
			       name, v, d->out->name, *field);
	return 0;
}

static int (*const rules[])(struct det *, mpictr_err **) = {
    rule_explicit, rule_openmpi, rule_hydra, rule_flux, rule_jsm,  rule_pals,
    rule_slurm,	   rule_alps,	 rule_pmix,  rule_pmi,	rule_none,
};

int launcher_detect(char *const *env, const struct launcher_proc *proc,
		    struct launch_peers *out, mpictr_err **err)
{
	struct det d = {env, proc, out, STRBUF_INIT, 0};
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->rule = LAUNCHER_NONE;
	out->name = "no launcher";
	out->rank = out->size = LAUNCHER_UNKNOWN;
	out->local_rank = out->local_size = LAUNCHER_UNKNOWN;
	out->node_id = LAUNCHER_UNKNOWN;
	for (size_t i = 0; i < ARRAY_SIZE(rules) && r == 0; i++)
		r = rules[i](&d, err);
	if (r > 0 && out->rule != LAUNCHER_EXPLICIT &&
	    (apply_override(&d, "MPICTR_LOCAL_RANK", &out->local_rank, err) <
		 0 ||
	     apply_override(&d, "MPICTR_LOCAL_SIZE", &out->local_size, err) <
		 0))
		r = -1;
	if (r > 0 && out->local_rank != LAUNCHER_UNKNOWN &&
	    out->local_size != LAUNCHER_UNKNOWN &&
	    out->local_rank >= out->local_size)
		r = err_set(err, 0, "local rank %u is not below local size %u",
			    out->local_rank, out->local_size);
	out->key = sb_steal(&d.key);
	if (r < 0) {
		cleanup_free char *what = launcher_read_list(out);
		return err_wrap(err, "%s launcher (%s)", out->name, what);
	}
	return 0;
}

void launch_peers_free(struct launch_peers *p)
{
	free(p->key);
	free(p->node_name);
	strv_free(p->read);
	strv_free(p->notes);
	memset(p, 0, sizeof(*p));
}

char *launcher_read_list(const struct launch_peers *p)
{
	struct strbuf sb = STRBUF_INIT;

	sb_puts(&sb, "read ");
	if (!p->read || !*p->read)
		sb_puts(&sb, "no variables");
	for (size_t i = 0; p->read && p->read[i]; i++)
		sb_printf(&sb, "%s%s", i ? ", " : "", p->read[i]);
	return sb_steal(&sb);
}

static void put_num(struct strbuf *sb, uint32_t v)
{
	if (v == LAUNCHER_UNKNOWN)
		sb_putc(sb, '?');
	else
		sb_printf(sb, "%u", v);
}

char *launcher_describe(const struct launch_peers *p)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *rd = launcher_read_list(p);

	sb_printf(&sb, "launcher: %s", p->name ? p->name : "?");
	if (p->rank != LAUNCHER_UNKNOWN || p->size != LAUNCHER_UNKNOWN) {
		sb_puts(&sb, ", rank ");
		put_num(&sb, p->rank);
		sb_puts(&sb, " of ");
		put_num(&sb, p->size);
	}
	sb_puts(&sb, ", local rank ");
	put_num(&sb, p->local_rank);
	sb_puts(&sb, " of ");
	put_num(&sb, p->local_size);
	if (p->local_size == LAUNCHER_UNKNOWN)
		sb_puts(&sb, " (counting mode)");
	if (p->node_name)
		sb_printf(&sb, ", node %.64s", p->node_name);
	else if (p->node_id != LAUNCHER_UNKNOWN)
		sb_printf(&sb, ", node %u", p->node_id);
	if (p->anchor_pid)
		sb_printf(&sb, ", anchor pid %d", (int)p->anchor_pid);
	sb_printf(&sb, ", key %.512s, %s", p->key ? p->key : "", rd);
	for (size_t i = 0; p->notes && p->notes[i]; i++)
		sb_printf(&sb, "; %s", p->notes[i]);
	return sb_steal(&sb);
}

/* ---- /proc ---- */

int launcher_parse_stat(const char *buf, size_t len,
			struct launcher_proc_info *out)
{
	const char *open, *close = NULL, *p, *end = buf + len;
	unsigned long long v[20];
	size_t n;

	memset(out, 0, sizeof(*out));
	open = memchr(buf, '(', len);
	/* comm may hold ')' and spaces: the last ')' ends it */
	for (p = buf; p < end; p++)
		if (*p == ')')
			close = p;
	if (!open || !close || close < open) {
		errno = EINVAL;
		return -1;
	}
	n = (size_t)(close - open - 1);
	if (n >= sizeof(out->comm))
		n = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, n);
	/* fields 3..22: state, ppid, ..., starttime */
	p = close + 1;
	for (int i = 0; i < 20; i++) {
		if (p >= end || *p != ' ') {
			errno = EINVAL;
			return -1;
		}
		p++;
		if (i == 0) { /* state: one letter */
			if (p >= end || *p == ' ') {
				errno = EINVAL;
				return -1;
			}
			p++;
			continue;
		}
		if (p < end && *p == '-' && i != 1 && i != 19)
			p++;
		if (p >= end || *p < '0' || *p > '9') {
			errno = EINVAL;
			return -1;
		}
		v[i] = 0;
		while (p < end && *p >= '0' && *p <= '9') {
			if (v[i] > (UINT64_MAX - 9) / 10) {
				errno = EINVAL;
				return -1;
			}
			v[i] = v[i] * 10 + (unsigned)(*p++ - '0');
		}
	}
	if (v[1] > INT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	out->ppid = (pid_t)v[1];
	out->start_time = v[19];
	return 0;
}

static int host_lookup(void *ctx, pid_t pid, struct launcher_proc_info *out,
		       mpictr_err **err)
{
	char path[64];
	cleanup_free char *buf = NULL;
	size_t len;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	if (!(buf = read_file(path, 4096, &len)))
		return err_set(err, errno, "read '%s'", path);
	if (launcher_parse_stat(buf, len, out) < 0)
		return err_set(err, 0, "'%s' is malformed", path);
	return 0;
}

const struct launcher_proc launcher_proc_host = {host_lookup, NULL};
