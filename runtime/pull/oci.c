/* oci.c - the one OCI image model of the pull plugin (oci.h): media
 * types, the layer check, the platform rule and sha256, for the registry
 * and the local sources alike. Pure: jansson values in, answers or errors
 * out;
 * fuzzed (tests/fuzz/fuzz_oci_manifest.c) and unit-tested
 * (tests/unit/check_pullreg.c). */
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/util.h"
#include "pull/cache.h"
#include "pull/oci.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---- digests ---- */

void sha256_digest(const void *buf, size_t len, char out[72])
{
	unsigned char md[32];
	unsigned mdlen = 0;

	EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (unsigned i = 0; i < mdlen && i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

/* ---- media types ---- */

bool oci_is_index(const char *mt)
{
	return mt && (strcmp(mt, OCI_MT_INDEX) == 0 ||
		      strcmp(mt, OCI_MT_DOCKER_LIST) == 0);
}

bool oci_is_manifest(const char *mt)
{
	return mt && (strcmp(mt, OCI_MT_MANIFEST) == 0 ||
		      strcmp(mt, OCI_MT_DOCKER_MANIFEST) == 0);
}

bool oci_is_config(const char *mt)
{
	return mt &&
	       (strcmp(mt, "application/vnd.oci.image.config.v1+json") == 0 ||
		strcmp(mt, "application/vnd.docker.container.image.v1+json") ==
		    0);
}

const char *oci_doc_type(const json_t *doc)
{
	json_t *mt = json_object_get(doc, "mediaType");

	if (mt)
		return json_string_value(mt);
	return json_object_get(doc, "manifests") &&
		       !json_object_get(doc, "config")
		   ? OCI_MT_INDEX
		   : OCI_MT_MANIFEST;
}

/* The layer media types mpictr reads, and their compression. */
static const struct {
	const char *type;
	enum layer_comp comp;
} layer_types[] = {
    {"application/vnd.oci.image.layer.v1.tar", LAYER_TAR},
    {"application/vnd.oci.image.layer.v1.tar+gzip", LAYER_GZIP},
    {"application/vnd.oci.image.layer.v1.tar+zstd", LAYER_ZSTD},
    {"application/vnd.docker.image.rootfs.diff.tar.gzip", LAYER_GZIP},
    {"application/vnd.docker.image.rootfs.diff.tar", LAYER_TAR},
};

int oci_layer_check(const json_t *l, size_t i, const char *what,
		    enum layer_comp *comp, mpictr_err **err)
{
	const char *mt = str(l, "mediaType");

	if (!json_is_object(l))
		return err_set(err, EINVAL, "%s: layer %zu: not a descriptor",
			       what, i + 1);
	/* their data is not in the image: fetched from elsewhere */
	if ((mt && (strstr(mt, "foreign") || strstr(mt, "nondistributable"))) ||
	    json_object_get(l, "urls"))
		return err_set(err, EINVAL,
			       "%s: layer %zu is a foreign layer ('%s', "
			       "fetched from elsewhere): not supported",
			       what, i + 1, mt ? mt : "with urls");
	for (size_t k = 0; mt && k < ARRAY_SIZE(layer_types); k++)
		if (strcmp(mt, layer_types[k].type) == 0) {
			*comp = layer_types[k].comp;
			return 0;
		}
	return err_set(err, EINVAL,
		       "%s: layer %zu: unsupported media type '%s'", what,
		       i + 1, mt ? mt : "(none)");
}

/* ---- platforms ---- */

char *oci_platform_wanted(const char *arch)
{
	static const struct {
		const char *uname, *oci;
	} map[] = {{"x86_64", "amd64"},	   {"aarch64", "arm64"},
		   {"armv7l", "arm/v7"},   {"armv6l", "arm/v6"},
		   {"ppc64le", "ppc64le"}, {"s390x", "s390x"},
		   {"riscv64", "riscv64"}, {"i686", "386"}};
	struct utsname u;

	if (arch && *arch)
		return str_has_prefix(arch, "linux/")
			   ? xstrdup(arch)
			   : xasprintf("linux/%s", arch);
	if (uname(&u) < 0)
		return xstrdup("linux/amd64");
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (strcmp(u.machine, map[i].uname) == 0)
			return xasprintf("linux/%s", map[i].oci);
	return xasprintf("linux/%s", u.machine);
}

/* A platform's variant with the default filled in (containerd's rule:
 * arm64 is v8, arm v7 unless said otherwise). */
static const char *variant_of(const char *arch, const char *variant)
{
	if (variant && *variant)
		return variant;
	if (strcmp(arch, "arm64") == 0)
		return "v8";
	if (strcmp(arch, "arm") == 0)
		return "v7";
	return "";
}

struct platform {
	const char *os, *arch, *variant;
};

/* The platform of an index entry; false without os and architecture, or
 * for an attestation ("unknown"). */
static bool entry_platform(const json_t *ent, struct platform *p)
{
	json_t *pj = json_object_get(ent, "platform");

	p->os = str(pj, "os");
	p->arch = str(pj, "architecture");
	p->variant = str(pj, "variant");
	return p->os && p->arch && strcmp(p->os, "unknown") != 0 &&
	       strcmp(p->arch, "unknown") != 0;
}

/* Whether have serves want; exact: the variants agree (defaults filled
 * in), else any variant does. */
static bool platform_match(const struct platform *have,
			   const struct platform *want, bool exact)
{
	if (strcmp(have->os, want->os) != 0 ||
	    strcmp(have->arch, want->arch) != 0)
		return false;
	return !exact || strcmp(variant_of(have->arch, have->variant),
				variant_of(want->arch, want->variant)) == 0;
}

static int no_platform(const json_t *list, const char *want, const char *what,
		       mpictr_err **err)
{
	struct strbuf sb = STRBUF_INIT;
	struct platform p;
	size_t i;
	json_t *ent;

	json_array_foreach(list, i, ent)
	{
		if (!entry_platform(ent, &p))
			continue;
		sb_printf(&sb, "%s%s/%s%s%s", sb.len ? ", " : "", p.os, p.arch,
			  p.variant && *p.variant ? "/" : "",
			  p.variant && *p.variant ? p.variant : "");
	}
	err_set(err, ENOENT, "%s: no manifest for %s in its index (it has: %s)",
		what, want, sb.len ? sb.buf : "none");
	sb_free(&sb);
	return err_hint(err, "choose one with --arch");
}

int oci_index_pick(const json_t *index, const char *want, const char *what,
		   char digest[72], mpictr_err **err)
{
	json_t *list = json_object_get(index, "manifests"), *ent;
	cleanup_free char *w = xstrdup(want);
	struct platform wp = {"linux", NULL, NULL}, ep;
	char *slash;
	size_t i;

	if (!json_is_array(list))
		return err_set(err, EINVAL, "%s: index without 'manifests'",
			       what);
	/* want: OS/ARCH[/VARIANT] */
	wp.os = w;
	if (!(slash = strchr(w, '/')))
		return err_set(err, EINVAL, "%s: platform '%s' is not OS/ARCH",
			       what, want);
	*slash = '\0';
	wp.arch = slash + 1;
	if ((slash = strchr(slash + 1, '/'))) {
		*slash = '\0';
		wp.variant = slash + 1;
	}
	/* the variant asked for (or the default), then any variant when
	 * none was asked for */
	for (int exact = 1; exact >= 0; exact--) {
		if (!exact && wp.variant && *wp.variant)
			break;
		json_array_foreach(list, i, ent)
		{
			if (!entry_platform(ent, &ep) ||
			    !platform_match(&ep, &wp, exact))
				continue;
			if (!cache_digest_valid(str(ent, "digest")))
				return err_set(err, EINVAL,
					       "%s: index entry %zu (%s): bad "
					       "digest",
					       what, i + 1, want);
			snprintf(digest, 72, "%s", str(ent, "digest"));
			return 0;
		}
	}
	return no_platform(list, want, what, err);
}
