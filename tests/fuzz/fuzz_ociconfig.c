/* fuzz_ociconfig.c - libFuzzer target for the image config reader
 * (runtime/config/ociconfig.c alone): a SIF's oci-config.json is
 * untrusted. Every failure has a message; every success has only
 * NUL-free strings and as many label values as label keys. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/ociconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_config c;
	mpictr_err *err = NULL;

	if (oci_config_parse((const char *)data, size, "fuzz", &c, &err) == 0) {
		char **lists[] = {c.entrypoint, c.cmd, c.env};
		for (size_t l = 0; l < 3; l++)
			for (size_t i = 0; lists[l] && lists[l][i]; i++)
				if (strlen(lists[l][i]) > size)
					abort();
		char **keyed[] = {c.exposed_ports, c.volumes, c.label_keys,
				  c.label_values};
		size_t nk = 0, nv = 0;
		for (size_t l = 0; l < 4; l++)
			for (size_t i = 0; keyed[l] && keyed[l][i]; i++)
				if (strlen(keyed[l][i]) > size)
					abort();
		for (; c.label_keys && c.label_keys[nk]; nk++)
			;
		for (; c.label_values && c.label_values[nv]; nv++)
			;
		/* a key without its value, or the reverse */
		if (nk != nv || !c.label_keys != !c.label_values)
			abort();
		if (c.stop_signal && strlen(c.stop_signal) > size)
			abort();
		(void)oci_config_user_nonroot(&c);
		oci_config_free(&c);
	} else if (!err || !mpictr_err_message(err)[0]) {
		abort();
	}
	mpictr_err_free(err);
	return 0;
}
