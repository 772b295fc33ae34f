/* pull_stub.c - the host side of the "pull" plugin (pull.h), in libmpictr:
 * the public mpictr_pull* entry points parse the reference and the
 * options, then load mpictr-pull.so and call it. Nothing here links the
 * libraries of the plugin. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/plugin.h"
#include "common/util.h"
#include "config/config.h"
#include "pull/pull.h"

struct mpictr_pull_opts {
	struct pull_opts o;
	char *arch, *tls_ca, *insecure, *cache_dir;
	char *dir; /* --dir: where NAME_TAG.sif goes without OUT */
};

MPICTR_PUBLIC mpictr_pull_opts *mpictr_pull_opts_new(void)
{
	mpictr_pull_opts *p = xcalloc(1, sizeof(*p));

	p->o.max_expansion = PULL_MAX_EXPANSION;
	return p;
}

MPICTR_PUBLIC void mpictr_pull_opts_free(mpictr_pull_opts *p)
{
	if (!p)
		return;
	free(p->arch);
	free(p->tls_ca);
	free(p->insecure);
	free(p->cache_dir);
	free(p->dir);
	free(p);
}

static int set_string(char **slot, const char **view, const char *name,
		      const char *value, mpictr_err **err)
{
	if (!value || !*value)
		return err_set(err, EINVAL, "pull option '--%s' needs a value",
			       name);
	free(*slot);
	*slot = xstrdup(value);
	*view = *slot;
	return 0;
}

/* --stall-timeout SECONDS: 1 s to a day. */
static int set_stall(mpictr_pull_opts *p, const char *value, mpictr_err **err)
{
	long v;

	if (!value || parse_long(value, 1, 86400, &v) < 0)
		return err_set(err, EINVAL,
			       "pull option '--stall-timeout %s': not a number "
			       "of seconds from 1 to 86400",
			       value ? value : "");
	p->o.stall_timeout = (unsigned)v;
	return 0;
}

MPICTR_PUBLIC int mpictr_pull_opts_set(mpictr_pull_opts *p, const char *name,
				       const char *value, mpictr_err **err)
{
	if (strcmp(name, "force") == 0)
		p->o.force = true;
	else if (strcmp(name, "quiet") == 0)
		p->o.quiet = true;
	else if (strcmp(name, "no-expansion-limit") == 0)
		p->o.max_expansion = 0;
	else if (strcmp(name, "stall-timeout") == 0)
		return set_stall(p, value, err);
	else if (strcmp(name, "arch") == 0)
		return set_string(&p->arch, &p->o.arch, name, value, err);
	else if (strcmp(name, "tls-ca") == 0)
		return set_string(&p->tls_ca, &p->o.tls_ca, name, value, err);
	else if (strcmp(name, "insecure") == 0 && p->insecure && value &&
		 *value) { /* given again: one more host */
		char *all = xasprintf("%s,%s", p->insecure, value);
		free(p->insecure);
		p->o.insecure = p->insecure = all;
	} else if (strcmp(name, "insecure") == 0)
		return set_string(&p->insecure, &p->o.insecure, name, value,
				  err);
	else if (strcmp(name, "cache-dir") == 0)
		return set_string(&p->cache_dir, &p->o.cache_dir, name, value,
				  err);
	else if (strcmp(name, "dir") == 0) {
		const char *view;
		return set_string(&p->dir, &view, name, value, err);
	} else
		return err_set(err, EINVAL, "unknown pull option '%s'", name);
	return 0;
}

MPICTR_PUBLIC void mpictr_pull_opts_progress(
    mpictr_pull_opts *p,
    void (*fn)(const char *line, int transient, void *data), void *data)
{
	p->o.progress = fn;
	p->o.progress_data = data;
}

char *pull_site_cache_dir(void)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *e = NULL;
	char *dir = NULL;

	if (mpictr_config_load_site(cfg, NULL, &e) == 0 &&
	    cfg->site.cache_dir.value)
		dir = xstrdup(cfg->site.cache_dir.value);
	mpictr_err_free(e);
	mpictr_config_free(cfg);
	return dir;
}

int pull_image(const struct image_ref *ref, const char *out,
	       const struct pull_opts *o, struct pull_stats *st, char **sif_out,
	       mpictr_err **err)
{
	const struct pull_plugin *t = plugin_load("pull", err);

	if (!t)
		return -1;
	return t->pull(ref, out, o, st, sif_out, err);
}

MPICTR_PUBLIC int mpictr_pull(const char *source, const char *out,
			      const mpictr_pull_opts *opts, char **summary,
			      mpictr_err **err)
{
	static const mpictr_pull_opts defaults = {
	    .o = {.max_expansion = PULL_MAX_EXPANSION}};
	struct image_ref ref;
	struct pull_stats st = {0};
	struct pull_opts o;
	cleanup_free char *def = NULL, *what = NULL, *site = NULL;
	char *sif = NULL;
	int rc;

	*summary = NULL;
	if (!opts)
		opts = &defaults;
	o = opts->o;
	if (!o.cache_dir) /* the site's shared cache, if it names one */
		o.cache_dir = site = pull_site_cache_dir();
	if (image_ref_parse(source, &ref, err) < 0)
		return -1;
	/* No OUT: NAME_TAG.sif in the current directory (or --dir), as
	 * Apptainer; the cache keeps its copy either way. */
	if (!out) {
		cleanup_free char *name = image_ref_default_out(&ref);
		out = def = opts->dir ? xasprintf("%s/%s", opts->dir, name)
				      : xstrdup(name);
	}
	what = image_ref_string(&ref);
	rc = pull_image(&ref, out, &o, &st, &sif, err);
	if (rc < 0) {
		err_wrap(err, "pull '%s'", source);
	} else {
		*summary = xasprintf(
		    "%s: %" PRIu64 " layers, %" PRIu64 " entries, %" PRIu64
		    " device nodes dropped, %" PRIu64 " bytes -> %s\n",
		    what, st.layers, st.entries, st.devices, st.sif_bytes,
		    out ? out : (sif ? sif : "?"));
	}
	free(sif);
	image_ref_free(&ref);
	return rc;
}
