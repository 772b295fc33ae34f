/* verify_stub.c - verify.h for the host: the calls go to the "verify"
 * plugin (runtime/common/plugin.h), loaded by the first of them. */
#include "common/error.h"
#include "common/plugin.h"
#include "sif/verify.h"

static const struct verify_plugin *verify_table(mpictr_err **err)
{
	return plugin_load("verify", err);
}

int verify_image_fd(int fd, const char *name, char *const *keys, unsigned flags,
		    const struct verify_cache *cache,
		    struct verify_report **out, mpictr_err **err)
{
	const struct verify_plugin *t = verify_table(err);

	*out = NULL;
	if (!t)
		return err_wrap(err, "verify '%s'", name);
	return t->verify_image_fd(fd, name, keys, flags, cache, out, err);
}

int sign_image(const char *path, const char *keyfile, char **summary,
	       mpictr_err **err)
{
	const struct verify_plugin *t = verify_table(err);

	*summary = NULL;
	if (!t)
		return err_wrap(err, "sif sign '%s'", path);
	return t->sign_image(path, keyfile, summary, err);
}
