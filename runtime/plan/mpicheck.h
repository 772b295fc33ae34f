/* mpicheck.h - does the launcher offer the PMI that the command's MPI
 * speaks? Decided in the rank, inside the container, just before the exec
 * (container/exec.c), from the MPI library the command links (found by
 * mpiabi_program_mpi()) and the PMI variables of the rank's environment,
 * so that a mismatch is named before MPI_Init can hang, and a command
 * linking an MPI with no launcher at all runs as a singleton under our own
 * PMI servers (docs/launchers.md "Which PMI the MPI needs").
 */
#ifndef MPICTR_MPICHECK_H
#define MPICTR_MPICHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "host/launcher.h"
#include "host/mpiinject.h"

/* What the plan records of the launcher for the check. */
struct mpicheck_launcher {
	bool on; /* join or single mode, MPICTR_MPI_CHECK not 0 */
	enum launcher_rule rule;
	const char *name; /* static: launch_peers.name */
	uint32_t size;	  /* global size, LAUNCHER_UNKNOWN */
	/* a single process given mpictr's own PMI-1 service (PMI_PORT,
	 * pmi/pmi1_single.c): MPICH is served; Open MPI still needs PMIx */
	bool single_pmi;
};

/* mpicheck_verdict: run as a one-rank job under our PMI servers. */
#define MPICHECK_SINGLETON 1

/* The exit code a rank's error carries when the command is to run as a
 * singleton: launch mode catches it and starts the job again as -n 1; it
 * never reaches the user (no exit status is above 255). */
#define MPICHECK_EXIT_SINGLETON 1000

/* Is MPI family fam (soname: the library, path: where it was found) served
 * by what l and env offer? 0: yes, or nothing to say;
 * MPICHECK_SINGLETON: no launcher at all (run under our PMI); -1 with
 * *err (exit 255) naming the launcher, the MPI and the option that
 * works. Pure. */
int mpicheck_verdict(const struct mpicheck_launcher *l, char *const *env,
		     enum mpi_family fam, const char *soname, mpictr_err **err);
/* Is the check turned off in env (MPICTR_MPI_CHECK=0)? */
bool mpicheck_disabled(char *const *env);

#endif
