/* bindspec.c - parse bind specifications and resolve them against the host
 * (bindspec.h). bind_parse is pure and fuzzed (tests/fuzz/fuzz_bind.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/bindspec.h"
#include "common/error.h"
#include "common/util.h"

void bind_specs_free(struct bind_spec *binds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(binds[i].src);
		free(binds[i].dst);
	}
	free(binds);
}

/* Parse "SRC[:DST[:ro|rw]]" (one element of a comma list). */
static int bind_parse_one(const char *elem, struct bind_spec *b,
			  mpictr_err **err)
{
	cleanup_free char *copy = xstrdup(elem);
	char *parts[4] = {NULL, NULL, NULL, NULL};
	size_t np = 0;
	char *p = copy;

	for (;;) {
		char *colon = strchr(p, ':');
		if (np == 3)
			return err_set(err, 0,
				       "invalid bind '%s': too many ':' "
				       "fields (expected SRC[:DST[:ro|rw]])",
				       elem);
		parts[np++] = p;
		if (!colon)
			break;
		*colon = '\0';
		p = colon + 1;
	}
	if (!*parts[0])
		return err_set(err, 0, "invalid bind '%s': empty source path",
			       elem);
	if (np >= 2 && !*parts[1])
		return err_set(
		    err, 0, "invalid bind '%s': empty destination path", elem);
	if (np >= 2 && parts[1][0] != '/')
		return err_set(err, 0,
			       "invalid bind '%s': destination '%s' is not "
			       "an absolute path",
			       elem, parts[1]);
	if (np == 3 && strcmp(parts[2], "ro") && strcmp(parts[2], "rw"))
		return err_set(err, 0,
			       "invalid bind '%s': unknown option '%s' "
			       "(expected ro or rw)",
			       elem, parts[2]);
	if (np == 1 && parts[0][0] != '/')
		return err_set(err, 0,
			       "invalid bind '%s': a relative source needs "
			       "an explicit destination (SRC:DST)",
			       elem);
	b->src = xstrdup(parts[0]);
	b->dst = xstrdup(np >= 2 ? parts[1] : parts[0]);
	b->ro = np == 3 && strcmp(parts[2], "ro") == 0;
	return 0;
}

int bind_parse(const char *spec, struct bind_spec **binds, size_t *n,
	       mpictr_err **err)
{
	cleanup_free char *copy = NULL;
	struct bind_spec *out = NULL;
	size_t nout = 0;
	char *save = NULL, *tok;

	if (!spec || !*spec)
		return err_set(err, 0, "invalid bind '': empty");
	if (strlen(spec) > 65536)
		return err_set(err, 0, "invalid bind: longer than 65536 bytes");
	copy = xstrdup(spec);
	if (spec[0] == ',' || spec[strlen(spec) - 1] == ',' ||
	    strstr(spec, ",,"))
		return err_set(err, 0, "invalid bind '%s': empty list element",
			       spec);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		out = xrealloc(out, (nout + 1) * sizeof(*out));
		if (bind_parse_one(tok, &out[nout], err) < 0) {
			bind_specs_free(out, nout);
			return -1;
		}
		nout++;
	}
	*binds = xrealloc(*binds, (*n + nout) * sizeof(**binds));
	memcpy(*binds + *n, out, nout * sizeof(*out));
	*n += nout;
	free(out);
	return 0;
}

static char *real_path(const char *path, void *ctx)
{
	(void)ctx;
	return realpath(path, NULL);
}

int bind_resolve(const struct bind_spec *b, const char *cwd, const char *origin,
		 char **src, char **dst, mpictr_err **err)
{
	return bind_resolve_with(b, cwd, origin, real_path, NULL, src, dst,
				 err);
}

int bind_resolve_with(const struct bind_spec *b, const char *cwd,
		      const char *origin, bind_realpath_fn rp, void *ctx,
		      char **src, char **dst, mpictr_err **err)
{
	cleanup_free char *from =
	    origin ? xasprintf(" (from %s)", origin) : xstrdup("");
	cleanup_free char *abs = NULL, *real = NULL, *clean = NULL;

	*src = *dst = NULL;
	if (b->src[0] == '/' || !cwd)
		abs = xstrdup(b->src);
	else
		abs = xasprintf("%s/%s", cwd, b->src);
	real = rp(abs, ctx);
	if (!real)
		return err_set(err, errno, "bind source '%s'%s", b->src, from);
	if (has_dotdot(b->dst))
		return err_set(err, 0,
			       "bind destination '%s'%s contains '..' "
			       "(destinations must stay inside the container)",
			       b->dst, from);
	clean = clean_path(b->dst);
	if (strcmp(clean, "/") == 0)
		return err_set(err, 0,
			       "bind destination '/'%s would replace the image "
			       "root (bind below it instead)",
			       from);
	if (strcmp(clean, "/proc") == 0 || strcmp(clean, "/sys") == 0 ||
	    strcmp(clean, "/dev") == 0)
		return err_set(err, 0,
			       "bind destination '%s'%s would replace the "
			       "container's own %s, which mpictr mounts (bind "
			       "below it instead, e.g. %s/NAME)",
			       clean, *from ? from : " (-B/--bind)", clean,
			       clean);
	*src = steal_ptr(&real);
	*dst = steal_ptr(&clean);
	return 0;
}
