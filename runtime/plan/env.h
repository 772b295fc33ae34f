/* env.h - a rank's environment, built in one place, in this order
 * (docs/architecture.md, "Environment"):
 *
 *  1. the host's, filtered: minus PATH, LD_*, MPICTR_*, APPTAINERENV_* and
 *     SINGULARITYENV_* (with --cleanenv only the terminal, user, locale
 *     and launcher variables: cleanenv_keeps); where mpictr
 *     serves PMI (launch and node daemon mode) also minus PMI_* and PMIX_*
 *     of an outer launcher;
 *  2. PATH reset to the container default; a pulled image's Env (its
 *     config's, docs/pull.md: PATH overrides, the rest only
 *     where the host sets none, as Apptainer's env script); the site's
 *     variables, then the selected profiles' (set, or prepended with ':');
 *  3. MPICTR_CONTAINER, APPTAINER_/SINGULARITY_CONTAINER and _NAME, PWD,
 *     HOME (--home), PS1 (`mpictr shell`);
 *  4. the user's: SINGULARITYENV_NAME, APPTAINERENV_NAME, MPICTR_ENV_NAME,
 *     --env-file, then -e/--env (kept apart too, see 7); PREPEND_PATH and
 *     APPEND_PATH among them edit PATH last (env_path_edit);
 *     -- env_plan above, once per plan; env_rank below, per rank --
 *  5. the transport variables, only where still unset (or set by the
 *     image's Env only: they win over the image's); the host library
 *     directories (GPU driver libraries, injected MPI) prepended to
 *     LD_LIBRARY_PATH;
 *  6. launch and node daemon mode: the binding hints (env_binding) and the
 *     PMI variables (the PMI server's pmi_server_rank_env);
 *  7. at exec, inside the container (exec.c): the image's
 *     /.singularity.d/env/\*.sh, then 4 once more, so that the user's win.
 *
 * Used by launch, join and node daemon mode alike; nothing here reads the
 * process's environment (the host's comes from the config).
 */
#ifndef MPICTR_ENV_H
#define MPICTR_ENV_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/proc.h"
#include "config/config.h"
#include "plan/mode.h"
#include "plan/transport.h"

#define CONTAINER_DEFAULT_PATH PROC_DEFAULT_PATH

/* Is the host variable name left out in step 1 (PMI variables aside)? */
bool plan_env_excluded(const char *name);

/* Steps 1 to 4 for cfg in mode: *env the command's environment, *user_env
 * the user's variables of step 4 alone (both NULL-terminated, new). */
void env_plan(const struct mpictr_config *cfg, enum run_mode mode,
	      const struct site_profile *const *profs, const char *image,
	      const char *pwd, const char *home, char *const *image_env,
	      char ***env, char ***user_env);

/* Apptainer's PREPEND_PATH=DIR / APPEND_PATH=DIR among the user's
 * variables (step 4): they edit PATH and are not variables themselves.
 * env_path_edit: -1 (prepend), 1 (append) or 0 (another variable), with
 * *value (when value is not NULL) the directory; env_path_apply: PATH of
 * *env edited (nothing for another variable). */
int env_path_edit(const char *kv, const char **value);
void env_path_apply(char ***env, const char *kv);
/* PATH of env before user_env's edits (new string): what the image's env
 * scripts start from, the edits being made again after them. */
char *env_path_unedited(char *const *env, char *const *user_env);

/* Step 5 for one rank: base (steps 1 to 4, copied), the transport
 * variables of o for the host's devices hd (only where still unset), the
 * host library directories and, with mpi_injected, the injected MPI's
 * directory prepended to LD_LIBRARY_PATH. Caller frees with strv_free
 * (plan.h's plan_rank_env does this for a plan's rank). image_env: the
 * pulled image's config Env (NAME=VALUE), whose values the transport
 * variables replace; NULL when none. */
char **env_rank(char *const *base, const struct host_devices *hd,
		const struct transport_opts *o, bool mpi_injected,
		char *const *image_env);

/* Step 6's binding hints: with --bind-to core (mpictr binds), what Slurm's
 * schizo component tells Open MPI, unless already set: do not bind again
 * (reference pmix-server.md §10). */
void env_binding(char ***env, const char *bind_to);

/* A rank joining an instance (its holder's pid, its name): a launcher's
 * PMIx server directory (PMIX_SERVER_TMPDIR, made by srun or mpirun after
 * the instance started) that is not visible inside it makes the PMIx
 * client use its hash store (PMIX_MCA_gds=hash, unless set) instead of
 * failing to attach to the shared-memory one with an error per rank. */
void env_instance_pmix(char ***env, pid_t holder, const char *name);

#endif
