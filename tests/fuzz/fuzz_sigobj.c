/* fuzz_sigobj.c - libFuzzer target for the signature-object parsers
 * (sif/sigobj.c): the input is a signature object's data; its form is
 * classified, it is parsed as a DSSE envelope (and the payload as signed
 * metadata, which is written back and parsed again), as signed metadata
 * itself and as a legacy SIFHASH text. Build with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sif/sigobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure must carry a message. */
static void failed(mpictr_err *err)
{
	if (!err || !mpictr_err_message(err)[0])
		abort();
	mpictr_err_free(err);
}

static void metadata(const uint8_t *p, size_t n)
{
	struct sig_metadata m, again;
	mpictr_err *err = NULL;
	char *s;

	if (sigmeta_parse(p, n, &m, &err) < 0) {
		failed(err);
		return;
	}
	/* what we write, we read back the same */
	s = sigmeta_format(&m);
	if (sigmeta_parse((const uint8_t *)s, strlen(s), &again, &err) < 0 ||
	    again.nobjects != m.nobjects ||
	    memcmp(again.header.value, m.header.value, m.header.len) != 0)
		abort();
	sigmeta_free(&again);
	free(s);
	sigmeta_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dsse_envelope e;
	struct sig_digest d;
	mpictr_err *err = NULL;

	(void)sigobj_form(data, size);
	if (dsse_parse(data, size, &e, &err) == 0) {
		size_t n;
		uint8_t *pae = dsse_pae(e.payload_type, e.payload,
					e.payload_len, &n);
		free(pae);
		metadata(e.payload, e.payload_len);
	} else {
		failed(err);
		err = NULL;
	}
	dsse_envelope_free(&e);
	metadata(data, size);
	if (sigobj_legacy_digest(data, size, "sha384", &d, &err) < 0)
		failed(err);
	return 0;
}
