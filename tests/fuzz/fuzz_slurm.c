/* fuzz_slurm.c - libFuzzer target for the Slurm step variable parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "sched/slurm.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint32_t *c = NULL, n = 0;
	char **h = NULL;
	mpictr_err *err = NULL;

	memcpy(s, data, size);
	s[size] = '\0';
	if (slurm_parse_tasks_per_node(s, &c, &n, &err) == 0)
		free(c);
	mpictr_err_free(err);
	err = NULL;
	if (slurm_expand_hostlist(s, &h, &err) == 0)
		strv_free(h);
	mpictr_err_free(err);
	free(s);
	return 0;
}
