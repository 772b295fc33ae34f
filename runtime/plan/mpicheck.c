/* mpicheck.c - the PMI a rank's MPI needs against the one its launcher
 * offers (mpicheck.h). What each side speaks, as measured on Debian 12
 * (tests/integration/84-mpi-check.sh):
 *   Open MPI 4.1 (libmpi.so.40): PMIx only (PMIX_NAMESPACE and a server
 *     URI): mpirun/orted, prterun, srun --mpi=pmix, mpictr -n;
 *   MPICH 4.0 (libmpich.so.12, ABI-compatible libmpi.so.12): the PMI-1
 *     wire protocol (PMI_FD or PMI_PORT): mpiexec.hydra, srun --mpi=pmi2,
 *     mpictr -n.
 * Everything else (another launcher's PMI library, a site's PMIx-enabled
 * MPICH) is what MPICTR_MPI_CHECK=0 is for.
 */
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "plan/mode.h"
#include "plan/mpicheck.h"

bool mpicheck_disabled(char *const *env)
{
	const char *v = env_get(env, "MPICTR_MPI_CHECK");

	return v && strcmp(v, "0") == 0;
}

static bool offers_pmix(char *const *env)
{
	return env_get(env, "PMIX_NAMESPACE") && run_env_has_pmix_server(env);
}

static bool offers_pmi1(char *const *env)
{
	return env_get(env, "PMI_FD") || env_get(env, "PMI_PORT");
}

/* What the launcher offers, in words. */
static const char *offer_words(enum launcher_rule rule, char *const *env)
{
	if (offers_pmix(env))
		return rule == LAUNCHER_SLURM ? "PMIx (srun --mpi=pmix)"
					      : "PMIx";
	if (offers_pmi1(env))
		return rule == LAUNCHER_SLURM ? "PMI-2 (srun --mpi=pmi2)"
					      : "PMI-1 (PMI_FD)";
	return rule == LAUNCHER_SLURM ? "no PMI (srun without --mpi, and the "
					"site's MpiDefault is none)"
				      : "no PMI";
}

/* The option that works, for a launcher that offers the wrong PMI or
 * none. */
static const char *remedy(enum launcher_rule rule, enum mpi_family fam)
{
	bool ompi = fam == MPI_FAMILY_OPENMPI;

	switch (rule) {
	case LAUNCHER_SLURM:
		return ompi ? "srun --mpi=pmix, or one task per node "
			      "running mpictr -n N"
			    : "srun --mpi=pmi2, or one task per node "
			      "running mpictr -n N";
	case LAUNCHER_OPENMPI:
	case LAUNCHER_PMIX:
		return "MPICH's mpiexec.hydra, or mpictr -n N";
	case LAUNCHER_HYDRA:
	case LAUNCHER_PMI:
		return ompi ? "Open MPI's mpirun, or mpictr -n N"
			    : "mpictr -n N";
	default:
		return ompi ? "a launcher with PMIx (mpirun, srun --mpi=pmix), "
			      "or mpictr -n N"
			    : "a launcher with PMI-1 (mpiexec.hydra, srun "
			      "--mpi=pmi2), or mpictr -n N";
	}
}

int mpicheck_verdict(const struct mpicheck_launcher *l, char *const *env,
		     enum mpi_family fam, const char *soname, mpictr_err **err)
{
	bool ok;

	if (!l->on || fam == MPI_FAMILY_NONE || mpicheck_disabled(env))
		return 0;
	ok = fam == MPI_FAMILY_OPENMPI ? offers_pmix(env) : offers_pmi1(env);
	if (ok)
		return 0;
	/* The single process's own PMI-1 service serves MPICH; Open MPI is
	 * run again as -n 1, under PMIx. */
	if (l->rule == LAUNCHER_NONE && l->single_pmi)
		return fam == MPI_FAMILY_MPICH || offers_pmix(env)
			   ? 0
			   : MPICHECK_SINGLETON;
	if (l->rule == LAUNCHER_NONE)
		return offers_pmix(env) || offers_pmi1(env)
			   ? 0
			   : MPICHECK_SINGLETON;
	/* One MPICH task with no PMI is an MPI singleton that works. */
	if (fam == MPI_FAMILY_MPICH && l->size == 1 && !offers_pmix(env))
		return 0;
	err_set(err, 0,
		"the command links %s (%s), which needs %s, but its launcher, "
		"%s, offers %s: MPI_Init would fail or hang",
		mpiabi_family_name(fam), soname,
		fam == MPI_FAMILY_OPENMPI ? "PMIx" : "PMI-1 (PMI_FD)", l->name,
		offer_words(l->rule, env));
	return err_hint(err,
			"start it with %s; MPICTR_MPI_CHECK=0 skips "
			"this check",
			remedy(l->rule, fam));
}
