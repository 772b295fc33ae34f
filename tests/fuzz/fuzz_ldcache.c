/* fuzz_ldcache.c - libFuzzer target for the ld.so.cache parser
 * (runtime/host/ldcache.c alone): under MPICTR_SYSROOT the file is the user's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/ldcache.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **keys = NULL, **values = NULL;

	ldcache_parse((const char *)data, size, &keys, &values);
	if (strv_len(keys) != strv_len(values))
		abort(); /* the two vectors are parallel */
	strv_free(keys);
	strv_free(values);
	return 0;
}
