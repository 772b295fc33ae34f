/* verify_stub.c - verify.h for the host: the calls go to a verify plugin
 * (runtime/common/plugin.h), loaded by the first of them: "verify-pgp"
 * (OpenSSL and RNP) when a key file is an OpenPGP key, else "verify"
 * (OpenSSL only; RNP and Botan take longer to load than checking a DSSE
 * signature takes). */
#include <stdlib.h>

#include "common/error.h"
#include "common/plugin.h"
#include "common/util.h"
#include "sif/sigobj.h"
#include "sif/verify.h"

/* Key files are small; a bigger one is not a key, and the plugin says so. */
#define KEY_PEEK_MAX (1u << 20)

static bool any_pgp(char *const *keys)
{
	bool pgp = false;

	for (size_t i = 0; keys && keys[i] && !pgp; i++) {
		size_t len = 0;
		char *s = read_file(keys[i], KEY_PEEK_MAX, &len);
		pgp = s && sigobj_key_is_pgp((const uint8_t *)s, len);
		free(s);
	}
	return pgp;
}

static const struct verify_plugin *verify_table(char *const *keys,
						mpictr_err **err)
{
	return plugin_load(any_pgp(keys) ? "verify-pgp" : "verify", err);
}

int verify_image_fd(int fd, const char *name, char *const *keys, unsigned flags,
		    const struct verify_cache *cache,
		    struct verify_report **out, mpictr_err **err)
{
	const struct verify_plugin *t = verify_table(keys, err);

	*out = NULL;
	if (!t)
		return err_wrap(err, "verify '%s'", name);
	return t->verify_image_fd(fd, name, keys, flags, cache, out, err);
}

int sign_image(const char *path, const char *keyfile, char **summary,
	       mpictr_err **err)
{
	char *const keys[] = {(char *)keyfile, NULL};
	const struct verify_plugin *t = verify_table(keys, err);

	*summary = NULL;
	if (!t)
		return err_wrap(err, "sif sign '%s'", path);
	return t->sign_image(path, keyfile, summary, err);
}
