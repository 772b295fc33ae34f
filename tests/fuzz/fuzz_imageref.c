/* fuzz_imageref.c - libFuzzer target for the image reference parser
 * (runtime/config/imageref.c alone): a parsed reference prints and parses
 * back to the same fields, and every failure has a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "config/imageref.h"

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct image_ref r, again;
	mpictr_err *err = NULL;

	memcpy(s, data, size);
	s[size] = '\0';
	(void)image_ref_is_pull_source(s);
	if (image_ref_parse(s, &r, &err) == 0) {
		char *text = image_ref_string(&r);
		char *out = image_ref_default_out(&r);
		if (!out[0])
			abort();
		if (r.transport == IMAGE_REF_DOCKER &&
		    (!r.registry || !r.repository || (!r.tag && !r.digest)))
			abort();
		if (r.transport == IMAGE_REF_DOCKER) {
			/* the canonical form is a fixed point */
			if (image_ref_parse(text, &again, &err) != 0 ||
			    !same(r.registry, again.registry) ||
			    !same(r.repository, again.repository) ||
			    !same(r.tag, again.tag) ||
			    !same(r.digest, again.digest))
				abort();
			image_ref_free(&again);
		}
		free(text);
		free(out);
		image_ref_free(&r);
	} else if (!err || !mpictr_err_message(err)[0]) {
		abort();
	}
	mpictr_err_free(err);
	free(s);
	return 0;
}
