/* pmix_stub.c - the libpmix-backed functions of pmi.h and pmi_internal.h
 * for the host: each goes to the "pmix" plugin (runtime/common/plugin.h),
 * loaded by the first pmi_pmix_start() or pmi_upstream_start(). Functions that
 * take a struct pmi_upstream run after the start that made it, so their
 * lookup never loads anything. */
#include "common/error.h"
#include "common/plugin.h"
#include "pmi/pmi_internal.h"
#include "pmi/pmix_guard.h"

static const struct pmix_plugin *pmix_table(mpictr_err **err)
{
	return plugin_load("pmix", err);
}

int pmi_pmix_start(const struct pmi_job *job, const char *tmpdir,
		   const struct pmi_hooks *hooks, mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	if (!t)
		return err_wrap(err, "start the PMIx server");
	/* libpmix listens and accepts inside its init: the guard must be in
	 * front of it already (pmix_guard.c), or no server at all. */
	if (pmix_guard_install() < 0 || !pmix_guard_in_effect())
		return err_set(err, 0,
			       "pmix: libpmix's accept() could not be pointed "
			       "at mpictr's guard (no accept() relocation "
			       "found in the loaded libpmix, or it could not "
			       "be written): not serving PMIx unguarded "
			       "(docs/pmi.md, \"Who may connect\")");
	pmix_guard_arm(job->uid, job->gid);
	if (t->pmix_start(job, tmpdir, hooks, err) < 0) {
		pmix_guard_disarm();
		return -1;
	}
	/* The server has taken the gate's test connection (pmix_gate.c):
	 * through the guard, or libpmix binds to another accept(). */
	if (pmix_guard_seen() == 0) {
		t->pmix_stop();
		pmix_guard_disarm();
		return err_set(err, 0,
			       "pmix: libpmix accepted a connection without "
			       "mpictr's guard (another accept() is in front "
			       "of it): not serving PMIx unguarded");
	}
	return 0;
}

int pmi_pmix_rank_env(uint32_t rank, char ***env, mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	return t ? t->pmix_rank_env(rank, env, err) : -1;
}

void pmi_pmix_stop(void)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	if (t)
		t->pmix_stop();
	pmix_guard_disarm();
}

int pmi_pmix_spawn_register(const struct pmi_job *job, struct pmi_spawn *sp,
			    mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	return t ? t->pmix_spawn_register(job, sp, err) : -1;
}

int pmi_pmix_spawn_env(const char *nspace, uint32_t rank, char ***env,
		       mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	return t ? t->pmix_spawn_env(nspace, rank, env, err) : -1;
}

void pmi_pmix_spawn_done(struct pmi_spawn *sp, bool ok)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	if (t)
		t->pmix_spawn_done(sp, ok);
}

const char *pmi_library_version(void)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	return t ? t->library_version() : NULL;
}

int pmi_upstream_start(struct pmi_upstream **out, mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	*out = NULL;
	if (!t)
		return err_wrap(err, "start the PMIx upstream agent");
	return t->upstream_start(out, err);
}

uint32_t pmi_upstream_rank(const struct pmi_upstream *u)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	return t && u ? t->upstream_rank(u) : 0;
}

uint32_t pmi_upstream_size(const struct pmi_upstream *u)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	return t && u ? t->upstream_size(u) : 0;
}

const char *pmi_upstream_step_dir(const struct pmi_upstream *u)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	return t && u ? t->upstream_step_dir(u) : NULL;
}

int pmi_upstream_attach(struct pmi_upstream *u, mpictr_err **err)
{
	const struct pmix_plugin *t = pmix_table(err);

	return t ? t->upstream_attach(u, err) : -1;
}

int pmi_upstream_fence(struct pmi_upstream *u, const char *data, size_t n,
		       pmi_upstream_done_fn done, void *arg)
{
	const struct pmix_plugin *t = pmix_table(NULL);

	return t ? t->upstream_fence(u, data, n, done, arg) : -1;
}

void pmi_upstream_abort(struct pmi_upstream *u, int code, const char *msg)
{
	const struct pmix_plugin *t;

	if (u && (t = pmix_table(NULL)))
		t->upstream_abort(u, code, msg);
}

void pmi_upstream_detach(struct pmi_upstream *u)
{
	const struct pmix_plugin *t;

	if (u && (t = pmix_table(NULL)))
		t->upstream_detach(u);
}

void pmi_upstream_stop(struct pmi_upstream *u)
{
	const struct pmix_plugin *t;

	if (u && (t = pmix_table(NULL)))
		t->upstream_stop(u);
}
