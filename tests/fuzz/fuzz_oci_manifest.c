/* fuzz_oci_manifest.c - libFuzzer target for the OCI model of the pull
 * plugin (runtime/pull/oci.c), which every source's manifests and indexes
 * go through: a registry's (client.c) and a layout's or archive's
 * (image.c). The input is a platform as --arch takes it ("arm64/v8",
 * "linux/amd64"), a newline, then a document parsed as both parse it
 * (jansson, duplicate keys refused). An index is resolved to the platform
 * (oci_index_pick), a manifest's config and layers are checked
 * (oci_is_config, oci_layer_check). Invariants: a chosen digest is one of
 * the index's entries and valid; a failure has a message; the sha256 of
 * the input is a valid digest. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "pull/cache.h"
#include "pull/oci.h"

static void failed(mpictr_err **err)
{
	if (!*err || !mpictr_err_message(*err)[0])
		abort();
	mpictr_err_free(*err);
	*err = NULL;
}

static void index_case(json_t *doc, const char *arch)
{
	char *want = oci_platform_wanted(arch);
	mpictr_err *err = NULL;
	char dg[72];
	bool listed = false;
	json_t *ent;
	size_t i;

	if (oci_index_pick(doc, want, "image 'fuzz'", dg, &err) < 0) {
		failed(&err);
	} else {
		if (!cache_digest_valid(dg))
			abort();
		json_array_foreach(json_object_get(doc, "manifests"), i, ent)
		{
			const char *d =
			    json_string_value(json_object_get(ent, "digest"));
			listed |= d && strcmp(d, dg) == 0;
		}
		if (!listed)
			abort();
	}
	free(want);
}

static void manifest_case(json_t *doc)
{
	json_t *cfg = json_object_get(doc, "config"), *l;
	mpictr_err *err = NULL;
	enum layer_comp comp;
	size_t i;

	(void)oci_is_config(json_string_value(json_object_get(cfg, "mediaType")));
	json_array_foreach(json_object_get(doc, "layers"), i, l)
	{
		if (oci_layer_check(l, i, "image 'fuzz'", &comp, &err) < 0)
			failed(&err);
		else if (comp != LAYER_TAR && comp != LAYER_GZIP &&
			 comp != LAYER_ZSTD)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	char *arch;
	char dg[72];
	json_error_t je;
	json_t *doc;
	const char *mt;

	sha256_digest(data, size, dg);
	if (!cache_digest_valid(dg))
		abort();
	if (!nl)
		return 0;
	arch = xstrndup((const char *)data, (size_t)(nl - (const char *)data));
	doc = json_loadb(nl + 1, size - (size_t)(nl + 1 - (const char *)data),
			 JSON_REJECT_DUPLICATES, &je);
	if (json_is_object(doc)) {
		mt = oci_doc_type(doc);
		if (!mt && !json_object_get(doc, "mediaType"))
			abort();
		if (oci_is_index(mt))
			index_case(doc, arch);
		else
			manifest_case(doc);
	}
	json_decref(doc);
	free(arch);
	return 0;
}
