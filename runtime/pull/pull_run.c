/* pull_run.c - the host side of the image cache, in libmpictr: a registry
 * image given as IMAGE (exec, run, -n, srun, mpirun, instance start, the
 * SPANK plugin's --container-image) becomes the path of its SIF in the
 * cache, pulled first when needed; `mpictr cache list|clean`. A cached
 * image named by digest needs neither the network nor the pull plugin;
 * anything else loads mpictr-pull.so, whose per-image lock makes one of
 * many tasks starting at once pull while the others wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "config/config.h"
#include "config/imageref.h"
#include "pull/cache.h"
#include "pull/pull.h"

/* Run-time pulls: steps go to the log at info level (-v), but that a
 * download starts is a notice (one line, from the one task that pulls). */
static void log_progress(const char *line, int transient, void *data)
{
	const char *image = data;

	if (transient)
		return;
	if (str_has_prefix(line, "manifest "))
		log_notice("pulling '%s' into the image cache: %s", image,
			   line);
	else
		log_info("pull: %s", line);
}

/* The cached SIF of a digest reference, without the plugin; NULL if not
 * there. */
static char *cached_by_digest(const struct image_ref *ref, const char *dir)
{
	struct cache c;
	mpictr_err *e = NULL;
	char *sif = NULL;

	if (!ref->digest || cache_open(&c, dir, &e) < 0) {
		mpictr_err_free(e);
		return NULL;
	}
	sif = cache_image_find(&c, ref->digest);
	cache_close(&c);
	return sif;
}

/* MPICTR_PULL_STALL_TIMEOUT: pull's --stall-timeout for an IMAGE. */
static int stall_env(char *const *env, struct pull_opts *o, mpictr_err **err)
{
	const char *v = env_get(env, "MPICTR_PULL_STALL_TIMEOUT");
	long s;

	if (!v || !*v)
		return 0;
	if (parse_long(v, 1, 86400, &s) < 0)
		return err_set(
		    err, EINVAL,
		    "MPICTR_PULL_STALL_TIMEOUT='%s': not a number of "
		    "seconds from 1 to 86400",
		    v);
	o->stall_timeout = (unsigned)s;
	return 0;
}

/* The registry cannot be reached (pull_image's errno says so): the SIF
 * of the tag's last resolution in the cache, with a one-line notice, unless
 * the site forbids it (offline_cache = no); NULL when there is none. */
static char *cached_by_tag(const mpictr_config *cfg,
			   const struct image_ref *ref, const char *dir,
			   const mpictr_err *why)
{
	int e = mpictr_err_errno(why);
	cleanup_free char *man = NULL;
	struct cache c;
	mpictr_err *ce = NULL;
	char *sif = NULL;

	if ((e != ECONNREFUSED && e != EHOSTUNREACH && e != ENETUNREACH &&
	     e != ETIMEDOUT) ||
	    !ref->tag || ref->digest ||
	    streq0(cfg->site.offline_cache.value, "no"))
		return NULL;
	if (cache_open(&c, dir, &ce) < 0) {
		mpictr_err_free(ce);
		return NULL;
	}
	/* Only a resolution this user made: in a shared cache another
	 * member's reference could name any image of theirs. */
	if (cache_ref_own(&c, ref->registry, ref->repository, ref->tag) &&
	    cache_ref_get(&c, ref->registry, ref->repository, ref->tag, &man,
			  NULL))
		sif = cache_image_find(&c, man); /* one this user may run */
	cache_close(&c);
	if (sif)
		log_notice("registry '%s' cannot be reached (%s): using the "
			   "cached '%s:%s' (%s)",
			   ref->registry, strerror(e), ref->repository,
			   ref->tag, man);
	return sif;
}

int pull_resolve_image(mpictr_config *cfg, mpictr_err **err)
{
	struct pull_opts o = {.max_expansion = PULL_MAX_EXPANSION,
			      .quiet = true,
			      .run_time = true,
			      .progress = log_progress};
	struct pull_stats st = {0};
	struct image_ref ref;
	char *const *env = cfg->host_env ? cfg->host_env : environ;
	cleanup_free char *dir = NULL, *sif = NULL;
	int rc = 0;

	if (!cfg->image || !image_ref_is_pull_source(cfg->image))
		return 0;
	if (image_ref_parse(cfg->image, &ref, err) < 0)
		return -1;
	if (ref.transport != IMAGE_REF_DOCKER) {
		image_ref_free(&ref);
		err_set(err, EINVAL,
			"image '%s': local sources are not run "
			"directly",
			cfg->image);
		return err_hint(err,
				"write a SIF first: mpictr pull '%s' "
				"IMAGE.sif",
				cfg->image);
	}
	o.progress_data = cfg->image;
	o.cache_dir = cfg->site.cache_dir.value;
	o.insecure = env_get(env, "MPICTR_PULL_INSECURE");
	o.tls_ca = env_get(env, "MPICTR_PULL_TLS_CA");
	o.arch = env_get(env, "MPICTR_PULL_ARCH");
	if (stall_env(env, &o, err) < 0)
		rc = -1;
	else if (!(dir = cache_dir_choose(NULL, o.cache_dir, env, err)))
		rc = -1;
	if (rc == 0) {
		o.cache_dir = dir;
		sif = cached_by_digest(&ref, dir);
	}
	if (rc == 0 && !sif) {
		mpictr_err *pe = NULL;

		rc = pull_image(&ref, NULL, &o, &st, &sif, &pe);
		if (rc < 0 && (sif = cached_by_tag(cfg, &ref, dir, pe))) {
			mpictr_err_free(pe);
			rc = 0;
		} else if (rc < 0) {
			if (err)
				*err = pe;
			else
				mpictr_err_free(pe);
		}
	}
	if (rc < 0) {
		err_wrap(err, "image '%s'", cfg->image);
	} else {
		log_info("image '%s' is '%s'", cfg->image, sif);
		free(cfg->image);
		cfg->image = steal_ptr(&sif);
	}
	image_ref_free(&ref);
	return rc;
}

static char *cache_dir_for(const char *dir, mpictr_err **err)
{
	cleanup_free char *site = dir ? NULL : pull_site_cache_dir();

	return cache_dir_choose(dir, site, NULL, err);
}

MPICTR_PUBLIC int mpictr_cache_list(const char *dir, char **text,
				    mpictr_err **err)
{
	cleanup_free char *d = cache_dir_for(dir, err);
	struct cache c;

	*text = NULL;
	if (!d || cache_open(&c, d, err) < 0)
		return -1;
	*text = cache_list_text(&c);
	cache_close(&c);
	return 0;
}

MPICTR_PUBLIC int mpictr_cache_clean(const char *dir, int all, uint64_t *freed,
				     mpictr_err **err)
{
	cleanup_free char *d = cache_dir_for(dir, err);

	if (!d)
		return -1;
	return cache_clean(d, all != 0, freed, err);
}
