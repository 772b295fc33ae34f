/* image.c - manifests, indexes and configs of an image in a store (image.h:
 * an OCI layout, oci-archive: or docker-archive:). Every JSON document is
 * untrusted: size-limited, digest-checked where it has a digest, parsed
 * with duplicate keys refused, and each field checked for its type before
 * use. Media types, the layer check and the platform an index resolves to
 * are the OCI model's (oci.c), the same as a registry pull's. */
#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "pull/cache.h"
#include "pull/image.h"
#include "pull/oci.h"

#define MAX_INDEX_DEPTH 4

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---- an OCI layout (oci:, oci-archive:) ---- */

/* index.json names the image: by its ref.name annotation, or the only
 * entry. Its digest is not followed yet (image_from_manifest does). */
int image_select(struct store *s, const char *ref, const char *what,
		 char digest[72], mpictr_err **err)
{
	struct blob b;
	cleanup_free char *buf = NULL;
	size_t len = 0, i, found = 0;
	json_t *index, *list, *d;
	int rc = -1;

	if (store_member(s, "index.json", &b, err) < 0)
		return err_wrap(err, "%s: not an OCI layout", what);
	rc = blob_read(&b, STORE_MAX_MANIFEST, "index.json", &buf, &len, err);
	blob_close(&b);
	if (rc < 0 || !(index = json_parse(buf, len, "index.json", err)))
		return err_wrap(err, "%s", what);
	rc = -1;
	list = json_object_get(index, "manifests");
	json_array_foreach(list, i, d)
	{
		const char *name = str(json_object_get(d, "annotations"),
				       "org.opencontainers.image.ref.name");
		if (ref && (!name || strcmp(name, ref) != 0))
			continue;
		if (found++ == 0 && cache_digest_valid(str(d, "digest")))
			snprintf(digest, 72, "%s", str(d, "digest"));
	}
	if (found == 1 && digest[0])
		rc = 0;
	else if (found == 0)
		err_set(err, ENOENT, "%s: %s", what,
			ref ? "no image of that name in index.json"
			    : "index.json lists no image");
	else if (found > 1)
		err_set(err, EINVAL, "%s: index.json lists %zu images%s", what,
			found,
			ref ? " of that name" : ": name one with oci:DIR:REF");
	else
		err_set(err, EINVAL, "%s: index.json: bad digest", what);
	json_decref(index);
	return rc;
}

/* The first bytes of a layer against its media type. */
static int check_magic(struct layer_src *l, size_t i, const char *what,
		       mpictr_err **err)
{
	unsigned char m[4] = {0};
	enum layer_comp got = LAYER_TAR;
	static const char *const names[] = {"an uncompressed tar", "gzip",
					    "zstd"};

	if (l->size >= 4 && pread_full(l->fd, m, 4, (off_t)l->off) < 0)
		return err_set(err, errno ? errno : EIO, "%s: layer %zu: read",
			       what, i + 1);
	if (m[0] == 0x1f && m[1] == 0x8b)
		got = LAYER_GZIP;
	else if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
		got = LAYER_ZSTD;
	if (got != l->comp)
		return err_set(err, EINVAL,
			       "%s: layer %zu (%s): the data is %s, its media "
			       "type says %s",
			       what, i + 1, l->digest, names[got],
			       names[l->comp]);
	return 0;
}

/* Layer i of a manifest: the descriptor checked (oci_layer_check), the
 * blob found in the store with the size the descriptor says, and its
 * first bytes against the media type. The blob's sha256 is checked as the
 * merge reads it (merge.c), not here. */
static int add_layer(struct store *s, json_t *d, size_t i, const char *what,
		     struct image_input *in, mpictr_err **err)
{
	struct layer_src *l = &in->layers[i];
	const char *dg = str(d, "digest");
	json_t *size = json_object_get(d, "size");

	if (oci_layer_check(d, i, what, &l->comp, err) < 0)
		return -1;
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return err_set(err, EINVAL, "%s: layer %zu: no size", what,
			       i + 1);
	if (store_blob(s, dg, &in->blobs[i], err) < 0)
		return err_wrap(err, "%s: layer %zu", what, i + 1);
	if (in->blobs[i].size != (uint64_t)json_integer_value(size))
		return err_set(err, EBADMSG,
			       "%s: layer %zu (%s) is %llu bytes, the manifest "
			       "says %lld",
			       what, i + 1, dg,
			       (unsigned long long)in->blobs[i].size,
			       (long long)json_integer_value(size));
	l->fd = in->blobs[i].fd;
	l->off = in->blobs[i].off;
	l->size = in->blobs[i].size;
	snprintf(l->digest, sizeof(l->digest), "%s", dg);
	return check_magic(l, i, what, err);
}

/* The image config's shape: an object, "config" an object or null, as
 * many diff_ids as layers (what ociconfig.c reads later trusts this). */
static int check_config(json_t *config, size_t nlayers, const char *what,
			mpictr_err **err)
{
	json_t *rootfs = json_object_get(config, "rootfs");
	json_t *ids = json_object_get(rootfs, "diff_ids");
	json_t *c = json_object_get(config, "config");

	if (!json_is_object(config))
		return err_set(err, EINVAL, "%s: config: not an object", what);
	if (c && !json_is_object(c) && !json_is_null(c))
		return err_set(err, EINVAL,
			       "%s: config: 'config' is not an "
			       "object",
			       what);
	if (json_is_array(ids) && json_array_size(ids) != nlayers)
		return err_set(err, EINVAL,
			       "%s: config lists %zu diff_ids for %zu layers",
			       what, json_array_size(ids), nlayers);
	return 0;
}

static int load_layers(struct store *s, json_t *layers, const char *what,
		       struct image_input *in, mpictr_err **err)
{
	json_t *d;
	size_t i;

	if (!json_is_array(layers))
		return err_set(err, EINVAL, "%s: manifest without 'layers'",
			       what);
	in->nlayers = json_array_size(layers);
	in->layers = xcalloc(in->nlayers + 1, sizeof(*in->layers));
	in->blobs = xcalloc(in->nlayers + 1, sizeof(*in->blobs));
	for (i = 0; i < in->nlayers; i++)
		in->blobs[i].fd = -1;
	json_array_foreach(layers, i, d) if (add_layer(s, d, i, what, in, err) <
					     0) return -1;
	return 0;
}

/* A schema 2 manifest: its config (digest-checked, at most
 * STORE_MAX_CONFIG) and its layers. */
static int load_manifest(struct store *s, json_t *m, const char *what,
			 struct image_input *in, mpictr_err **err)
{
	json_t *cfg = json_object_get(m, "config");
	const char *cdg = str(cfg, "digest");

	if (json_integer_value(json_object_get(m, "schemaVersion")) != 2)
		return err_set(err, EINVAL,
			       "%s: manifest schema version %lld: only schema "
			       "2 (OCI or Docker v2.2) is supported",
			       what,
			       (long long)json_integer_value(
				   json_object_get(m, "schemaVersion")));
	if (!cdg)
		return err_set(err, EINVAL, "%s: manifest without a config",
			       what);
	in->config = store_json(s, cdg, STORE_MAX_CONFIG, "image config",
				&in->config_raw, &in->config_len, err);
	if (!in->config)
		return err_wrap(err, "%s", what);
	if (load_layers(s, json_object_get(m, "layers"), what, in, err) < 0)
		return -1;
	return check_config(in->config, in->nlayers, what, err);
}

/* Each document is read by digest and checked against it (store_json);
 * an index is followed to the platform's entry, at most MAX_INDEX_DEPTH
 * deep, by the registry's rule (oci_index_pick). */
int image_from_manifest(struct store *s, const char *digest, const char *arch,
			const char *what, struct image_input *in,
			mpictr_err **err)
{
	cleanup_free char *want = oci_platform_wanted(arch);
	char dg[72];
	int rc = -1;

	memset(in, 0, sizeof(*in));
	snprintf(dg, sizeof(dg), "%s", digest);
	for (int depth = 0; depth <= MAX_INDEX_DEPTH; depth++) {
		json_t *m = store_json(s, dg, STORE_MAX_MANIFEST, "manifest",
				       NULL, NULL, err);
		if (!m)
			return err_wrap(err, "%s", what);
		/* an index: the platform's entry, the same as a registry
		 * pull's (oci_index_pick) */
		if (oci_is_index(oci_doc_type(m))) {
			rc = oci_index_pick(m, want, what, dg, err);
			json_decref(m);
			if (rc < 0)
				return -1;
			continue;
		}
		snprintf(in->manifest_digest, sizeof(in->manifest_digest), "%s",
			 dg);
		rc = load_manifest(s, m, what, in, err);
		json_decref(m);
		return rc;
	}
	return err_set(err, ELOOP, "%s: indexes nested more than %d deep", what,
		       MAX_INDEX_DEPTH);
}

/* ---- docker-archive ---- */

/* Whether a RepoTags entry names want, with or without the registry and
 * library/ prefixes Docker and Podman add. */
static bool repo_tag_matches(const char *have, const char *want)
{
	static const char *const prefixes[] = {
	    "", "docker.io/", "docker.io/library/", "localhost/"};

	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(have, prefixes[i], n) == 0 &&
		    strcmp(have + n, want) == 0)
			return true;
		if (strncmp(want, prefixes[i], n) == 0 &&
		    strcmp(want + n, have) == 0)
			return true;
	}
	return false;
}

/* The entry of manifest.json that ref (REPO:TAG or @N; NULL: the only
 * one) names. */
static json_t *pick_archive_entry(json_t *list, const char *ref,
				  const char *what, mpictr_err **err)
{
	json_t *d, *tag;
	size_t i, j;

	if (!json_is_array(list) || json_array_size(list) == 0) {
		err_set(err, EINVAL, "%s: manifest.json lists no image", what);
		return NULL;
	}
	if (!ref) {
		if (json_array_size(list) == 1)
			return json_array_get(list, 0);
		err_set(err, EINVAL,
			"%s: the archive holds %zu images: name one with "
			"docker-archive:FILE:REPO:TAG or :@N",
			what, json_array_size(list));
		return NULL;
	}
	if (ref[0] == '@') {
		char *end;
		unsigned long n = strtoul(ref + 1, &end, 10);
		if (*end || end == ref + 1 || n >= json_array_size(list)) {
			err_set(err, ENOENT, "%s: no image %s in the archive",
				what, ref);
			return NULL;
		}
		return json_array_get(list, n);
	}
	json_array_foreach(list, i, d)
	{
		json_array_foreach(json_object_get(d, "RepoTags"), j, tag)
		{
			if (json_is_string(tag) &&
			    repo_tag_matches(json_string_value(tag), ref))
				return d;
		}
	}
	err_set(err, ENOENT, "%s: no image tagged '%s' in the archive", what,
		ref);
	return NULL;
}

/* A docker-archive layer: an uncompressed tar whose sha256 is its
 * diff_id (a compressed one must be named by its own digest). */
static int archive_layer(struct store *s, const char *member, json_t *diff_id,
			 size_t i, const char *what, struct image_input *in,
			 mpictr_err **err)
{
	struct layer_src *l = &in->layers[i];
	const char *id = json_string_value(diff_id);
	const char *hex = strstr(member, "sha256/");

	if (store_member(s, member, &in->blobs[i], err) < 0)
		return err_wrap(err, "%s: layer %zu", what, i + 1);
	l->fd = in->blobs[i].fd;
	l->off = in->blobs[i].off;
	l->size = in->blobs[i].size;
	l->comp = LAYER_TAR;
	if (check_magic(l, i, "", NULL) < 0) {
		/* compressed: named blobs/sha256/<hex> (Docker >= 25) */
		unsigned char m[2] = {0};
		(void)pread_full(l->fd, m, 2, (off_t)l->off);
		l->comp = m[0] == 0x1f ? LAYER_GZIP : LAYER_ZSTD;
		if (!hex || strlen(hex + 7) != 64)
			return err_set(err, EINVAL,
				       "%s: layer %zu ('%s') is compressed and "
				       "not named by its digest",
				       what, i + 1, member);
		snprintf(l->digest, sizeof(l->digest), "sha256:%s", hex + 7);
		return check_magic(l, i, what, err);
	}
	if (!cache_digest_valid(id))
		return err_set(err, EINVAL,
			       "%s: config: diff_id %zu is not sha256:<hex>",
			       what, i + 1);
	snprintf(l->digest, sizeof(l->digest), "%s", id);
	return 0;
}

static int load_archive_config(struct store *s, const char *name,
			       const char *what, struct image_input *in,
			       mpictr_err **err)
{
	struct blob b;
	int rc;

	if (!name)
		return err_set(err, EINVAL,
			       "%s: manifest.json entry without 'Config'",
			       what);
	if (store_member(s, name, &b, err) < 0)
		return err_wrap(err, "%s", what);
	rc = blob_read(&b, STORE_MAX_CONFIG, "image config", &in->config_raw,
		       &in->config_len, err);
	blob_close(&b);
	if (rc == 0 && !(in->config = json_parse(in->config_raw, in->config_len,
						 "image config", err)))
		rc = -1;
	return rc < 0 ? err_wrap(err, "%s", what) : 0;
}

int image_from_docker_archive(struct store *s, const char *ref,
			      const char *what, struct image_input *in,
			      mpictr_err **err)
{
	struct blob b;
	cleanup_free char *buf = NULL;
	size_t len = 0, i;
	json_t *list = NULL, *entry, *layers, *ids, *d;
	int rc = -1;

	memset(in, 0, sizeof(*in));
	if (store_member(s, "manifest.json", &b, err) < 0)
		return err_wrap(err, "%s: not a docker-archive", what);
	rc =
	    blob_read(&b, STORE_MAX_MANIFEST, "manifest.json", &buf, &len, err);
	blob_close(&b);
	if (rc < 0 || !(list = json_parse(buf, len, "manifest.json", err)))
		return err_wrap(err, "%s", what);
	rc = -1;
	if (!(entry = pick_archive_entry(list, ref, what, err)) ||
	    load_archive_config(s, str(entry, "Config"), what, in, err) < 0)
		goto out;
	layers = json_object_get(entry, "Layers");
	ids =
	    json_object_get(json_object_get(in->config, "rootfs"), "diff_ids");
	if (!json_is_array(layers) || !json_is_array(ids) ||
	    json_array_size(ids) != json_array_size(layers)) {
		err_set(err, EINVAL,
			"%s: manifest.json 'Layers' and the config's "
			"diff_ids do not match",
			what);
		goto out;
	}
	in->nlayers = json_array_size(layers);
	in->layers = xcalloc(in->nlayers + 1, sizeof(*in->layers));
	in->blobs = xcalloc(in->nlayers + 1, sizeof(*in->blobs));
	json_array_foreach(layers, i, d)
	{
		if (!json_is_string(d) ||
		    archive_layer(s, json_string_value(d),
				  json_array_get(ids, i), i, what, in, err) < 0)
			goto out;
	}
	rc = check_config(in->config, in->nlayers, what, err);
out:
	json_decref(list);
	return rc;
}

void image_input_free(struct image_input *in)
{
	for (size_t i = 0; in->blobs && i < in->nlayers; i++)
		blob_close(&in->blobs[i]);
	free(in->blobs);
	free(in->layers);
	free(in->config_raw);
	json_decref(in->config);
	memset(in, 0, sizeof(*in));
}
