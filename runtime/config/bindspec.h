/* bindspec.h - bind specifications: the SRC[:DST[:ro|rw]] parser behind
 * -B/--bind and the `bind` key of configuration files, and their
 * resolution against the host (one place for the rules every bind obeys).
 * The site's allow/deny rules are not here: siteconf.h checks the resolved
 * source (siteconf_check_bind), so that this module sits below both
 * config.c and siteconf.c.
 */
#ifndef MPICTR_BINDSPEC_H
#define MPICTR_BINDSPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "mpictr.h"

struct bind_spec {
	char *src; /* as typed; resolved against cwd when planning */
	char *dst; /* absolute path inside the container */
	bool ro;
};

/* Parse one -B argument (comma list of SRC[:DST[:ro|rw]]) and append the
 * results to *binds and *n. Pure. On error nothing is appended. */
int bind_parse(const char *spec, struct bind_spec **binds, size_t *n,
	       mpictr_err **err);
void bind_specs_free(struct bind_spec *binds, size_t n);

/* Resolve b for mounting: *src becomes the real path of its source (a
 * relative one taken against cwd, which may be NULL when the source is
 * absolute) and *dst its destination with "//", "/./" and a trailing '/'
 * collapsed. Refused: a missing source, a destination containing ".." or
 * one that is '/' (it would replace the image root). origin, when not
 * NULL, names the file the bind came from in the errors. Returns 0 with
 * *src and *dst allocated, or -1 with both NULL. */
int bind_resolve(const struct bind_spec *b, const char *cwd, const char *origin,
		 char **src, char **dst, mpictr_err **err);
/* How bind_resolve_with makes a source real: a malloc'ed real path, or
 * NULL with errno set (realpath(3), or recorded facts). */
typedef char *(*bind_realpath_fn)(const char *path, void *ctx);
/* bind_resolve with the source made real by rp (plan_build passes the
 * recorded host facts, so that planning reads no file). */
int bind_resolve_with(const struct bind_spec *b, const char *cwd,
		      const char *origin, bind_realpath_fn rp, void *ctx,
		      char **src, char **dst, mpictr_err **err);

#endif
