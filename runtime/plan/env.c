/* env.c - a rank's environment, in the order env.h documents. */
#include <string.h>
#include <unistd.h>

#include "plan/env.h"
#include "common/error.h"
#include "host/mpiinject.h"
#include "plan/transport.h"

/* Is name one of exact, or does it start with one of prefix (both
 * NULL-terminated)? */
static bool name_listed(const char *name, const char *const *exact,
			const char *const *prefix)
{
	for (size_t i = 0; exact[i]; i++)
		if (strcmp(name, exact[i]) == 0)
			return true;
	for (size_t i = 0; prefix[i]; i++)
		if (str_has_prefix(name, prefix[i]))
			return true;
	return false;
}

bool plan_env_excluded(const char *name)
{
	/* Loader variables name host libraries that do not match the image's
	 * libc; PATH names host directories. MPICTR_* configure mpictr, the
	 * Apptainer prefixes are read in step 4. */
	static const char *const exact[] = {"PATH", NULL};
	static const char *const prefix[] = {"LD_", "MPICTR_", "APPTAINERENV_",
					     "SINGULARITYENV_", NULL};

	return name_listed(name, exact, prefix);
}

/* NAME=VALUE into env (set). */
static void set_kv(char ***env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	cleanup_free char *name = eq ? xstrndup(kv, (size_t)(eq - kv)) : NULL;

	if (name && *name)
		env_set(env, name, eq + 1);
}

/* NAME=VALUE into env, prepended to the current value with ':'. */
static void prepend_kv(char ***env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	cleanup_free char *name = eq ? xstrndup(kv, (size_t)(eq - kv)) : NULL;
	const char *cur = name ? env_get(*env, name) : NULL;
	cleanup_free char *v = NULL;

	if (!name || !*name)
		return;
	v = cur && *cur ? xasprintf("%s:%s", eq + 1, cur) : xstrdup(eq + 1);
	env_set(env, name, v);
}

/* Step 2: the site file's variables and the selected profiles'. */
static void site_env(const struct mpictr_config *cfg,
		     const struct site_profile *const *profs, char ***env)
{
	const struct siteconf *sc = &cfg->site;

	for (size_t i = 0; i < sc->env.n; i++)
		set_kv(env, sc->env.v[i].value);
	for (size_t i = 0; profs && profs[i]; i++) {
		for (size_t k = 0; k < profs[i]->env.n; k++)
			set_kv(env, profs[i]->env.v[k].value);
		for (size_t k = 0; k < profs[i]->env_prepend.n; k++)
			prepend_kv(env, profs[i]->env_prepend.v[k].value);
	}
}

/* Does --cleanenv keep the host variable name? The terminal, the user
 * and the locale, as Apptainer; and, unlike Apptainer, the variables of
 * the launcher (PMI, Slurm, Open MPI, PRRTE, Hydra) without which the
 * ranks of srun or mpirun could not wire up. */
static bool cleanenv_keeps(const char *name)
{
	static const char *const exact[] = {"TERM",    "HOME",	    "USER",
					    "LOGNAME", "LANG",	    "TZ",
					    "DISPLAY", "COLORTERM", NULL};
	static const char *const prefix[] = {"LC_",    "PMI_",	"PMIX_",
					     "SLURM_", "OMPI_", "PRTE_",
					     "HYDRA_", "MPI_",	NULL};

	return name_listed(name, exact, prefix);
}

/* Step 1: the host's variables that the container keeps. */
static char **host_env(const struct mpictr_config *cfg, enum run_mode mode)
{
	char **env = NULL;

	for (size_t i = 0; cfg->host_env && cfg->host_env[i]; i++) {
		const char *kv = cfg->host_env[i];
		const char *eq = strchr(kv, '=');
		cleanup_free char *name = NULL;

		if (!eq || eq == kv)
			continue;
		name = xstrndup(kv, (size_t)(eq - kv));
		if (plan_env_excluded(name) ||
		    (cfg->cleanenv && !cleanenv_keeps(name)))
			continue;
		/* Where mpictr is the PMI server, variables of an outer
		 * launcher would point the ranks at the wrong one. */
		if (run_mode_serves_pmi(mode) &&
		    (str_has_prefix(name, "PMI_") ||
		     str_has_prefix(name, "PMIX_")))
			continue;
		strv_push(&env, kv);
	}
	return env;
}

/* Step 3: where the command is, under Apptainer's names too. */
static void container_vars(const struct mpictr_config *cfg, const char *image,
			   const char *pwd, const char *home, char ***env)
{
	const char *base = strrchr(image, '/');
	cleanup_free char *prompt = NULL;

	base = base && base[1] ? base + 1 : image;
	env_set(env, "MPICTR_CONTAINER", image);
	env_set(env, "APPTAINER_CONTAINER", image);
	env_set(env, "SINGULARITY_CONTAINER", image);
	env_set(env, "APPTAINER_NAME", base);
	env_set(env, "SINGULARITY_NAME", base);
	env_set(env, "PWD", pwd);
	if (home)
		env_set(env, "HOME", home);
	if (cfg->shell) {
		prompt = xasprintf("mpictr %s:\\w> ", base);
		env_set(env, "PS1", prompt);
	}
}

/* The host variables PREFIX_NAME=VALUE as NAME=VALUE into *user_env. */
static void prefixed(const struct mpictr_config *cfg, const char *prefix,
		     char ***user_env)
{
	size_t l = strlen(prefix);

	for (size_t i = 0; cfg->host_env && cfg->host_env[i]; i++)
		if (str_has_prefix(cfg->host_env[i], prefix))
			set_kv(user_env, cfg->host_env[i] + l);
}

void env_plan(const struct mpictr_config *cfg, enum run_mode mode,
	      const struct site_profile *const *profs, const char *image,
	      const char *pwd, const char *home, char *const *image_env,
	      char ***env, char ***user_env)
{
	*env = host_env(cfg, mode);
	*user_env = NULL;
	env_set(env, "PATH", CONTAINER_DEFAULT_PATH);
	/* A pulled image's Env as Apptainer's env script has it (export
	 * X="${X:-value}"): PATH is the image's, every other variable the
	 * host's where the host sets it (not empty). A front end with
	 * Pyxis's rules (a default start directory: the SPANK plugin) takes
	 * Docker's: the image's Env wins, --container-env names exceptions. */
	for (size_t i = 0; image_env && image_env[i]; i++) {
		const char *kv = image_env[i], *eq = strchr(kv, '=');
		cleanup_free char *name =
		    eq ? xstrndup(kv, (size_t)(eq - kv)) : NULL;
		const char *now = name ? env_get(*env, name) : NULL;

		if (name && (cfg->pwd_default || strcmp(name, "PATH") == 0 ||
			     !now || !*now))
			set_kv(env, kv);
	}
	site_env(cfg, profs, env);
	container_vars(cfg, image, pwd, home, env);
	/* Step 4: SINGULARITYENV_NAME, APPTAINERENV_NAME, MPICTR_ENV_NAME,
	 * then --env-file, then --env, which wins over all (Apptainer's
	 * order). */
	prefixed(cfg, "SINGULARITYENV_", user_env);
	prefixed(cfg, "APPTAINERENV_", user_env);
	prefixed(cfg, "MPICTR_ENV_", user_env);
	for (size_t i = 0; cfg->file_env && cfg->file_env[i]; i++)
		set_kv(user_env, cfg->file_env[i]);
	for (size_t i = 0; cfg->user_env && cfg->user_env[i]; i++)
		set_kv(user_env, cfg->user_env[i]);
	for (size_t i = 0; *user_env && (*user_env)[i]; i++)
		if (!env_path_edit((*user_env)[i], NULL))
			set_kv(env, (*user_env)[i]);
	for (size_t i = 0; *user_env && (*user_env)[i]; i++)
		env_path_apply(env, (*user_env)[i]);
}

int env_path_edit(const char *kv, const char **value)
{
	int how = str_has_prefix(kv, "PREPEND_PATH=")  ? -1
		  : str_has_prefix(kv, "APPEND_PATH=") ? 1
						       : 0;

	if (how && value)
		*value = strchr(kv, '=') + 1;
	return how;
}

char *env_path_unedited(char *const *env, char *const *user_env)
{
	const char *cur = env_get(env, "PATH");
	char *path = xstrdup(cur ? cur : "");
	size_t n = strv_len(user_env);

	/* Undo the edits, last first. */
	for (size_t i = n; i-- > 0;) {
		const char *v;
		int how = env_path_edit(user_env[i], &v);
		size_t lp = strlen(path), lv = strlen(v);

		if (how < 0 && lp > lv && strncmp(path, v, lv) == 0 &&
		    path[lv] == ':')
			memmove(path, path + lv + 1, lp - lv);
		else if (how > 0 && lp > lv && strcmp(path + lp - lv, v) == 0 &&
			 path[lp - lv - 1] == ':')
			path[lp - lv - 1] = '\0';
		else if (how && strcmp(path, v) == 0)
			path[0] = '\0';
	}
	return path;
}

void env_path_apply(char ***env, const char *kv)
{
	const char *v, *cur;
	int how = env_path_edit(kv, &v);
	cleanup_free char *path = NULL;

	if (!how)
		return;
	cur = env_get(*env, "PATH");
	if (!cur || !*cur)
		path = xstrdup(v);
	else
		path = how < 0 ? xasprintf("%s:%s", v, cur)
			       : xasprintf("%s:%s", cur, v);
	env_set(env, "PATH", path);
}

/* Step 5. */
char **env_rank(char *const *base, const struct host_devices *hd,
		const struct transport_opts *o, bool mpi_injected,
		char *const *image_env)
{
	char **env = strv_dup(base);
	char **notices = NULL;
	cleanup_strv char **from_image = NULL;

	/* The transport variables win over the image's Env: what still has
	 * the image's value is unset for transport_env, and put back where
	 * it sets nothing. */
	for (size_t i = 0; image_env && image_env[i]; i++) {
		const char *kv = image_env[i], *eq = strchr(kv, '=');
		cleanup_free char *name = xstrndup(kv, (size_t)(eq - kv));
		const char *now = env_get(env, name);
		if (strcmp(name, "PATH") != 0 && now &&
		    strcmp(now, eq + 1) == 0) {
			strv_push(&from_image, kv);
			env_unset(&env, name);
		}
	}
	transport_env(hd, o, &env, &notices);
	for (size_t i = 0; from_image && from_image[i]; i++) {
		const char *eq = strchr(from_image[i], '=');
		cleanup_free char *name =
		    xstrndup(from_image[i], (size_t)(eq - from_image[i]));
		if (!env_get(env, name))
			env_set(&env, name, eq + 1);
	}
	/* Notices are the same for every rank: say them once. */
	for (size_t i = 0; o->local_rank == 0 && notices && notices[i]; i++)
		log_notice("%s", notices[i]);
	strv_free(notices);
	for (size_t i = 0; hd->lib_dirs && hd->lib_dirs[i]; i++) {
		cleanup_free char *kv =
		    xasprintf("LD_LIBRARY_PATH=%s", hd->lib_dirs[i]);
		prepend_kv(&env, kv);
	}
	if (mpi_injected)
		prepend_kv(&env, "LD_LIBRARY_PATH=" MPIINJECT_DIR);
	return env;
}

void env_binding(char ***env, const char *bind_to)
{
	if (!bind_to || strcmp(bind_to, "core") != 0)
		return;
	if (!env_get(*env, "OMPI_MCA_hwloc_base_binding_policy"))
		env_set(env, "OMPI_MCA_hwloc_base_binding_policy", "none");
	if (!env_get(*env, "OMPI_MCA_orte_externally_bound"))
		env_set(env, "OMPI_MCA_orte_externally_bound", "1");
}

void env_instance_pmix(char ***env, pid_t holder, const char *name)
{
	const char *d = env_get(*env, "PMIX_SERVER_TMPDIR");
	cleanup_free char *path = NULL;

	if (!d || d[0] != '/' || env_get(*env, "PMIX_MCA_gds") || holder <= 0)
		return;
	path = xasprintf("/proc/%d/root%s", (int)holder, d);
	if (access(path, F_OK) == 0)
		return;
	log_info("the launcher's PMIx server directory '%s' "
		 "(PMIX_SERVER_TMPDIR) is not in instance '%s': "
		 "PMIX_MCA_gds=hash",
		 d, name);
	env_set(env, "PMIX_MCA_gds", "hash");
}
