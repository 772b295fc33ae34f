/* fuzz_pmixhello.c - libFuzzer target for the check of a PMIx client's
 * connect message (pmi/pmix_peer.c), the bytes any local process of the
 * job's user sends before libpmix sees them: any input is passed, refused
 * or found short without a crash, and the answer is consistent (short:
 * the message needs more than was given; passed: the header's size fits). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pmi/pmix_peer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why;
	size_t need;
	uint64_t nbytes;

	switch (pmix_hello_check(data, size, 1000, 1000, &need, &why)) {
	case PMIX_HELLO_SHORT:
		if (need <= size || need > PMIX_HELLO_MAX)
			abort();
		break;
	case PMIX_HELLO_OK:
		memcpy(&nbytes, data + 8, sizeof(nbytes));
		if (size < PMIX_HELLO_HDR + nbytes ||
		    need != PMIX_HELLO_HDR + nbytes)
			abort();
		break;
	case PMIX_HELLO_BAD:
		if (!why || !*why)
			abort();
		break;
	default:
		abort();
	}
	return 0;
}
