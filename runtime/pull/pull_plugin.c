/* pull_plugin.c - the entry of the "pull" plugin (runtime/common/plugin.h)
 * and the dispatcher from a parsed reference to the registry client or the
 * local sources. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "common/plugin.h"
#include "common/util.h"
#include "pull/cache.h"
#include "pull/pull.h"

/* An interrupted pull (^C, SIGTERM, SIGHUP) removes its partial files,
 * then ends as the signal says. Only where the signal would end the
 * process anyway (its disposition is the default). */
static const int end_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_end_signal(int sig)
{
	cache_tmp_remove_all();
	raise(sig); /* SA_RESETHAND: the default action now */
}

int pull_source(const struct image_ref *ref, const char *out,
		const struct pull_opts *o, struct pull_stats *st,
		char **sif_out, mpictr_err **err)
{
	struct sigaction old[ARRAY_SIZE(end_signals)];
	bool set[ARRAY_SIZE(end_signals)] = {false};
	struct sigaction sa = {.sa_handler = on_end_signal,
			       .sa_flags = SA_RESETHAND};
	int rc;

	for (size_t i = 0; i < ARRAY_SIZE(end_signals); i++)
		set[i] = sigaction(end_signals[i], NULL, &old[i]) == 0 &&
			 old[i].sa_handler == SIG_DFL &&
			 sigaction(end_signals[i], &sa, NULL) == 0;
	*sif_out = NULL;
	if (ref->transport == IMAGE_REF_DOCKER)
		rc = pull_registry(ref, out, o, st, sif_out, err);
	else
		rc = pull_local(ref, out, o, st, err);
	for (size_t i = 0; i < ARRAY_SIZE(end_signals); i++)
		if (set[i])
			sigaction(end_signals[i], &old[i], NULL);
	return rc;
}

static const struct pull_plugin pull_table = {
    .pull = pull_source,
    .assemble = pull_assemble,
};

MPICTR_PLUGIN_DEFINE(pull_table)
