/* registry.c - pull_registry() of pull.h: a registry image through the
 * cache (cache.h): found there by digest without a request, by tag with
 * one manifest request; otherwise its blobs are fetched (client.c) and
 * pull_assemble() builds the SIF, under a lock per image so that of many
 * pulls of one image at once one builds it and the others wait for it.
 * Progress lines go to the caller's callback (pull_opts.progress).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "config/imageref.h"
#include "pull/cache.h"
#include "pull/pull.h"
#include "pull/client.h"

struct prog_state {
	const struct pull_opts *o;
	struct timespec t0;
	bool started;
};

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static double mb(uint64_t b)
{
	return (double)b / 1e6;
}

/* reg_progress -> lines: one per step and per blob, and transient byte
 * counts a terminal may overwrite in place. */
static void on_progress(const struct reg_progress *p, void *data)
{
	struct prog_state *ps = data;
	const struct pull_opts *o = ps->o;
	cleanup_free char *line = NULL;
	double dt;

	if (!o->progress)
		return;
	if (!ps->started && p->ev != REG_EV_STEP) {
		clock_gettime(CLOCK_MONOTONIC, &ps->t0);
		ps->started = true;
	}
	dt = ps->started ? since(&ps->t0) : 0;
	switch (p->ev) {
	case REG_EV_STEP:
		line = xasprintf("%s", p->text);
		break;
	case REG_EV_BLOB_START:
		line = xasprintf("blob %u/%u %.19s: %.1f MB, downloading",
				 p->index, p->count, p->text, mb(p->total));
		break;
	case REG_EV_BLOB_BYTES:
		line = xasprintf("downloading: %.1f of %.1f MB, %.1f MB/s",
				 mb(p->all_done), mb(p->all_total),
				 dt > 0 ? mb(p->all_done) / dt : 0.0);
		o->progress(line, true, o->progress_data);
		return;
	case REG_EV_BLOB_DONE:
		line = xasprintf(
		    "blob %u/%u %.19s: %.1f MB, done (%.1f of %.1f "
		    "MB, %.1f MB/s)",
		    p->index, p->count, p->text, mb(p->total), mb(p->all_done),
		    mb(p->all_total), dt > 0 ? mb(p->all_done) / dt : 0.0);
		break;
	case REG_EV_BLOB_CACHED:
		line = xasprintf("blob %u/%u %.19s: %.1f MB, cached", p->index,
				 p->count, p->text, mb(p->total));
		break;
	default:
		return;
	}
	o->progress(line, false, o->progress_data);
}

static char **split_hosts(const char *s)
{
	char **v = NULL;
	cleanup_free char *copy = s ? xstrdup(s) : NULL;
	char *save = NULL;

	for (char *t = copy ? strtok_r(copy, ", ", &save) : NULL; t;
	     t = strtok_r(NULL, ", ", &save))
		strv_push(&v, t);
	return v;
}

/* Copy the cached SIF to out (not a link: the cache's copy must stay what
 * its digest says). */
static int copy_out(const char *sif, const char *out, bool force,
		    mpictr_err **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_close int in = -1, fd = -1;
	struct stat st;
	off_t left;

	if (!force && access(out, F_OK) == 0) {
		err_set(err, EEXIST, "output '%s'", out);
		return err_hint(err, "use --force to replace it");
	}
	in = open(sif, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0)
		return err_set(err, errno, "open '%s'", sif);
	tmp = xasprintf("%s.%d.partial", out, (int)getpid());
	cache_tmp_track(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(err, errno, "create '%s'", tmp);
	for (left = st.st_size; left > 0;) {
		ssize_t n =
		    copy_file_range(in, NULL, fd, NULL, (size_t)left, 0);
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			unlink(tmp);
			return err_set(err, e, "copy '%s' to '%s'", sif, tmp);
		}
		left -= n;
	}
	if (rename(tmp, out) < 0) {
		int e = errno;
		unlink(tmp);
		return err_set(err, e, "rename '%s' to '%s'", tmp, out);
	}
	return 0;
}

/* Under the image's lock: fetch what is missing and build the SIF, unless
 * a pull that held the lock before us did. */
static int build_locked(struct cache *c, const struct image_ref *ref,
			const struct reg_opts *ro, const char *digest,
			const char *what, const struct pull_opts *o,
			struct pull_stats *st, mpictr_err **err)
{
	cleanup_free char *name = xasprintf("image-%s", digest + 7);
	cleanup_free char *tmp = NULL, *sif = NULL;
	struct image_ref by_digest = *ref;
	struct reg_image im;
	int lock, rc;

	lock = cache_lock(c, name, err);
	if (lock < 0)
		return -1;
	if (cache_has_image(c, digest)) {
		cache_unlock(lock);
		return 0;
	}
	/* by the digest resolved: the manifest is in the cache already */
	by_digest.digest = (char *)digest;
	rc = registry_fetch(c, &by_digest, ro, &im, err);
	if (rc == 0)
		reg_image_free(&im);
	if (rc == 0) {
		tmp = cache_tmpname(c, name);
		if (o->progress)
			o->progress("assembling the SIF", false,
				    o->progress_data);
		rc = pull_assemble(c->dir, digest, tmp, what, o, st, err);
	}
	if (rc == 0)
		rc = cache_commit_image(c, tmp, digest, &sif, err);
	if (rc < 0 && tmp)
		unlink(tmp);
	cache_unlock(lock);
	return rc;
}

int pull_registry(const struct image_ref *ref, const char *out,
		  const struct pull_opts *o, struct pull_stats *st,
		  char **sif_out, mpictr_err **err)
{
	struct prog_state ps = {.o = o};
	cleanup_strv char **insecure = split_hosts(o->insecure);
	struct reg_opts ro = {.arch = o->arch,
			      .tls_ca = o->tls_ca,
			      .insecure = insecure,
			      .stall_timeout = o->stall_timeout,
			      .progress = on_progress,
			      .progress_data = &ps,
			      .run_time = o->run_time};
	cleanup_free char *dir =
	    cache_dir_choose(o->cache_dir, NULL, NULL, err);
	cleanup_free char *what = image_ref_string(ref);
	cleanup_free char *digest = NULL;
	struct cache c;
	int rc;

	*sif_out = NULL;
	if (!dir || cache_open(&c, dir, err) < 0)
		return -1;
	rc = registry_resolve(&c, ref, &ro, &digest, err);
	if (rc == 0) {
		snprintf(st->manifest_digest, sizeof(st->manifest_digest), "%s",
			 digest);
		if (!cache_has_image(&c, digest))
			rc = build_locked(&c, ref, &ro, digest, what, o, st,
					  err);
		else if (o->progress)
			o->progress("image cached", false, o->progress_data);
	}
	if (rc == 0 && !(*sif_out = cache_image_find(&c, digest)))
		rc = err_set(err, ENOENT, "image '%s': no usable SIF in '%s'",
			     what, c.dir);
	if (rc == 0) {
		if (out)
			rc = copy_out(*sif_out, out, o->force, err);
	}
	cache_close(&c);
	if (rc < 0) {
		free(*sif_out);
		*sif_out = NULL;
	}
	return rc;
}
