/* fuzz_envfile.c - libFuzzer target for the parsers of what an image (or
 * an --env-file) says about itself: one environment line (Enroot's
 * /etc/environment, --env-file: env_line_parse) and the JSON validator
 * that decides whether an image's labels are embedded in `inspect --json`
 * (json_object_valid); runtime/common/util.c alone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char *name, *value;
	int rc;

	memcpy(s, data, size);
	s[size] = '\0';
	(void)json_object_valid(s);
	if (json_object_valid(s) && s[strspn(s, " \t\r\n")] != '{')
		abort(); /* an object starts with '{' */
	rc = env_line_parse(s, &name, &value);
	if (rc == 1 && (!env_name_valid(name, strlen(name)) || value < name ||
			value > s + size))
		abort(); /* the parser promised a valid name inside s */
	free(s);
	return 0;
}
