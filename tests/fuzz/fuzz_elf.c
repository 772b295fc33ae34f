/* fuzz_elf.c - libFuzzer target for the ELF dynamic section reader
 * (runtime/host/mpiinject.c): the programs and libraries the MPI check
 * reads are the image's, hence the user's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "host/mpiinject.h"

struct buf {
	const uint8_t *p;
	size_t n;
};

static int rd(void *ctx, void *out, size_t n, uint64_t off)
{
	const struct buf *b = ctx;

	if (off > b->n || n > b->n - off)
		return -1;
	memcpy(out, b->p + off, n);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf b = {data, size};
	struct elf_dynamic d;
	mpictr_err *err = NULL;

	if (mpiabi_elf_dynamic(rd, &b, size, "fuzz",
			       ELF_DYN_NEEDED | ELF_DYN_PROGRAM, &d, &err) < 0) {
		if (!err || d.needed || d.soname || d.runpath)
			abort(); /* an error, and nothing returned with it */
		mpictr_err_free(err);
		return 0;
	}
	for (char **n = d.needed; n && *n; n++)
		if (!**n || strlen(*n) > 255)
			abort(); /* names are non-empty and bounded */
	elf_dynamic_free(&d);
	return 0;
}
