/* fuzz_regauth.c - libFuzzer target for the registry parsers of untrusted
 * text (runtime/pull/auth.c): WWW-Authenticate challenges from a registry,
 * credential files (JSON with jansson, Enroot's netrc) and base64. The
 * input's first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "pull/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reg_challenge ch;
	struct reg_cred c;
	mpictr_err *err = NULL;
	char *s;
	size_t n = 0;

	if (size < 1)
		return 0;
	s = xstrndup((const char *)data + 1, size - 1);
	switch (data[0] % 3) {
	case 0:
		if (reg_challenge_parse(s, &ch) == 0) {
			if (ch.scheme == REG_AUTH_BEARER && !ch.realm)
				abort();
			reg_challenge_free(&ch);
		}
		break;
	case 1: {
		int rc = reg_netrc_find(s, strlen(s), "fuzz", "nvcr.io", NULL,
					&c, &err);
		if (rc == 1 && (!c.user || !c.secret))
			abort();
		if (rc < 0 && !err)
			abort();
		reg_cred_free(&c);
		mpictr_err_free(err);
		break;
	}
	default: {
		char *d = reg_unbase64(s, &n);
		if (d) {
			char *e = reg_base64(d, n);
			free(e);
			free(d);
		}
		break;
	}
	}
	free(s);
	return 0;
}
