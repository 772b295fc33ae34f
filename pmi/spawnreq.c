/* spawnreq.c - a spawn request as plain data (see pmi.h, "dynamic
 * processes"): the apps a client asked for, checked. Pure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmi/pmi_internal.h"
#include "common/util.h"

bool pmi_var_reserved(const char *kv)
{
	static const char *const pmi1_vars[] = {
	    "PMI_FD",	"PMI_PORT", "PMI_ID",
	    "PMI_RANK", "PMI_SIZE", "PMI_SPAWNED",
	};
	const char *eq = strchr(kv, '=');
	size_t n = eq ? (size_t)(eq - kv) : strlen(kv);

	if (str_has_prefix(kv, "PMIX_"))
		return !str_has_prefix(kv, "PMIX_MCA_");
	for (size_t i = 0; i < ARRAY_SIZE(pmi1_vars); i++)
		if (strlen(pmi1_vars[i]) == n &&
		    strncmp(kv, pmi1_vars[i], n) == 0)
			return true;
	return false;
}

int pmi_spawn_add_app(struct pmi_spawn *sp, const char *cmd, char *const *argv,
		      char *const *env, const char *cwd, int maxprocs,
		      mpictr_err **err)
{
	struct pmi_spawn_app *a;
	const char *exe = cmd && *cmd ? cmd : argv && argv[0] ? argv[0] : NULL;

	if (!exe || !*exe)
		return err_set(err, 0, "spawn: app %zu has no command",
			       sp->napps);
	if (maxprocs < 1)
		return err_set(err, 0,
			       "spawn: app %zu asks for %d processes (at "
			       "least 1)",
			       sp->napps, maxprocs);
	if ((uint64_t)sp->nprocs + (uint64_t)maxprocs > PMI_JOB_MAX_RANKS)
		return err_set(err, 0,
			       "spawn: more than %u processes in one spawn",
			       PMI_JOB_MAX_RANKS);
	sp->apps = xrealloc(sp->apps, (sp->napps + 1) * sizeof(*sp->apps));
	a = &sp->apps[sp->napps++];
	memset(a, 0, sizeof(*a));
	strv_push(&a->argv, exe);
	for (size_t i = 1; argv && argv[0] && argv[i]; i++)
		strv_push(&a->argv, argv[i]);
	for (size_t i = 0; env && env[i]; i++)
		if (strchr(env[i], '=') && env[i][0] != '=' &&
		    !pmi_var_reserved(env[i]))
			strv_push(&a->env, env[i]);
	a->cwd = cwd && *cwd ? xstrdup(cwd) : NULL;
	a->nprocs = (uint32_t)maxprocs;
	sp->nprocs += (uint32_t)maxprocs;
	return 0;
}

int pmi_spawn_check(const struct pmi_spawn *sp, uint32_t in_use,
		    uint32_t universe, mpictr_err **err)
{
	if (sp->napps == 0 || sp->nprocs == 0)
		return err_set(err, 0, "spawn: no processes requested");
	if ((uint64_t)in_use + sp->nprocs > universe) {
		err_set(err, 0,
			"spawn of %u processes: %u of the universe's %u slots "
			"are in use",
			sp->nprocs, in_use, universe);
		return err_hint(err, "raise it with --universe-size, or drop "
				     "--no-oversubscribe");
	}
	return 0;
}

size_t pmi_spawn_app_of(const struct pmi_spawn *sp, uint32_t rank,
			uint32_t *app_rank)
{
	for (size_t i = 0; i < sp->napps; i++) {
		if (rank < sp->apps[i].nprocs) {
			*app_rank = rank;
			return i;
		}
		rank -= sp->apps[i].nprocs;
	}
	*app_rank = 0;
	return sp->napps;
}

void pmi_spawn_free(struct pmi_spawn *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < sp->napps; i++) {
		strv_free(sp->apps[i].argv);
		strv_free(sp->apps[i].env);
		free(sp->apps[i].cwd);
	}
	free(sp->apps);
	free(sp->parent_nspace);
	free(sp->nspace);
	free(sp);
}
