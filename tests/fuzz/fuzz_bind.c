/* fuzz_bind.c - libFuzzer target for the -B/--bind option parser and the
 * destination cleaning of bind_resolve (runtime/config/bindspec.c alone). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/bindspec.h"
#include "common/error.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct bind_spec *b = NULL;
	size_t n = 0;
	mpictr_err *err = NULL;

	memcpy(s, data, size);
	s[size] = '\0';
	if (bind_parse(s, &b, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++) {
			char *c;

			if (!b[i].src[0] || b[i].dst[0] != '/')
				abort(); /* the parser promised otherwise */
			c = clean_path(b[i].dst);
			if (c[0] != '/' || strstr(c, "//") ||
			    has_dotdot(c) != has_dotdot(b[i].dst))
				abort();
			free(c);
		}
	}
	bind_specs_free(b, n);
	mpictr_err_free(err);
	free(s);
	return 0;
}
