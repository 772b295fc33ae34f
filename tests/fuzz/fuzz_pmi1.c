/* fuzz_pmi1.c - libFuzzer target for the PMI-1 wire parser: any bytes must
 * parse or be refused without a crash, and what parses must be consistent
 * (a command, bounded pairs, keys and values free of blanks). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pmi/pmi1_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pmi1_msg m;
	int rc = pmi1_parse((const char *)data, size, &m);

	if (rc != PMI1_OK) {
		if (rc > 0 || rc < PMI1_ERR_DUP_KEY)
			abort();
		return 0;
	}
	if (!m.cmd || !m.cmd[0] || m.npairs > PMI1_MAXPAIRS)
		abort();
	for (size_t i = 0; i < m.npairs; i++) {
		const struct pmi1_pair *p = &m.pairs[i];

		if (!p->key[0] || strchr(p->key, ' ') || strchr(p->key, '=') ||
		    strchr(p->value, ' ') || strchr(p->value, '\n'))
			abort();
		if (pmi1_get(&m, p->key) != p->value)
			abort(); /* keys are unique */
		if (!pmi1_value_ok(p->value, PMI1_MAXLINE))
			abort();
	}
	return 0;
}
