/* sign.c - the verify plugin's `sif sign` (verify.h): one signature
 * object per object group, as sylabs/sif's pkg/integrity Signer writes
 * it: the metadata JSON (SHA-256 digests of the header, of each of the
 * group's descriptors and of its objects' data), signed in a DSSE
 * envelope with a PEM private key or clear-signed with an OpenPGP secret
 * key, in an object of no group linked to the group.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "sif/sif.h"
#include "sif/sigobj.h"
#include "sif/verify.h"
#include "sif/vkeys.h"

#define SIGN_HASH "sha256"
#define SIGN_HASHTYPE 1 /* SHA-256 in the descriptor */

/* The metadata of group g, signed: *meta (caller frees). */
static int group_metadata(int fd, const struct sif_image *img,
			  const uint8_t hdr[SIF_HEADER_SIZE], uint32_t g,
			  char **meta, mpictr_err **err)
{
	struct sig_metadata m = {0};
	uint8_t hb[SIGOBJ_HEADER_BYTES];
	uint32_t base = UINT32_MAX;
	int rc = -1;

	for (size_t i = 0; i < img->ndescs; i++)
		if (img->descs[i].group_id == (g | SIF_GROUP_MASK) &&
		    img->descs[i].id < base)
			base = img->descs[i].id;
	sigobj_header_bytes(hdr, hb);
	snprintf(m.header.alg, sizeof(m.header.alg), SIGN_HASH);
	if (vdigest_mem(SIGN_HASH, hb, sizeof(hb), m.header.value,
			&m.header.len, err) < 0)
		return -1;
	m.objects = xcalloc(img->ndescs + 1, sizeof(*m.objects));
	for (size_t i = 0; i < img->ndescs; i++) {
		const struct sif_descriptor *d = &img->descs[i];
		struct sig_object_meta *o;
		uint8_t raw[SIF_DESC_SIZE], db[SIGOBJ_DESC_BYTES];

		if (d->group_id != (g | SIF_GROUP_MASK))
			continue;
		o = &m.objects[m.nobjects++];
		o->relative_id = d->id - base;
		snprintf(o->descriptor.alg, sizeof(o->descriptor.alg),
			 SIGN_HASH);
		snprintf(o->object.alg, sizeof(o->object.alg), SIGN_HASH);
		if (pread_full(fd, raw, sizeof(raw),
			       (off_t)img->hdr.desc_offset +
				   (off_t)(d->slot - 1) * SIF_DESC_SIZE) < 0) {
			err_set(err, errno, "read descriptor %u", d->slot);
			goto out;
		}
		sigobj_descriptor_bytes(raw, o->relative_id, db);
		if (vdigest_mem(SIGN_HASH, db, sizeof(db), o->descriptor.value,
				&o->descriptor.len, err) < 0 ||
		    vdigest_fd(SIGN_HASH, fd, (uint64_t)d->offset,
			       (uint64_t)d->size, o->object.value,
			       &o->object.len, err) < 0) {
			err_wrap(err, "object %u", d->id);
			goto out;
		}
	}
	*meta = sigmeta_format(&m);
	rc = 0;
out:
	sigmeta_free(&m);
	return rc;
}

static char *dsse_envelope(const struct vkey *k, const char *meta, size_t *len,
			   mpictr_err **err)
{
	cleanup_free uint8_t *pae = NULL, *sig = NULL;
	cleanup_free char *p64 = NULL, *s64 = NULL;
	size_t pl, sl;
	char *env;

	pae = dsse_pae(SIGOBJ_DSSE_TYPE, (const uint8_t *)meta, strlen(meta),
		       &pl);
	sig = vkey_dsse_sign(k, pae, pl, &sl, err);
	if (!sig)
		return NULL;
	p64 = b64_encode((const uint8_t *)meta, strlen(meta), true);
	s64 = b64_encode(sig, sl, true);
	/* as Go's json.Encoder writes it, newline included */
	env = xasprintf("{\"payloadType\":\"%s\",\"payload\":\"%s\","
			"\"signatures\":[{\"keyid\":\"%s\",\"sig\":\"%s\"}]}\n",
			SIGOBJ_DSSE_TYPE, p64, k->id, s64);
	*len = strlen(env);
	return env;
}

static int sign_group(int fd, const struct sif_image *img,
		      const uint8_t hdr[SIF_HEADER_SIZE], const struct vkey *k,
		      uint32_t g, struct sif_append *a, mpictr_err **err)
{
	cleanup_free char *meta = NULL;
	uint32_t ht = htole32(SIGN_HASHTYPE);

	if (group_metadata(fd, img, hdr, g, &meta, err) < 0)
		return -1;
	memset(a, 0, sizeof(*a));
	a->datatype = SIF_DATA_SIGNATURE;
	a->group = SIF_GROUP_MASK;
	a->link = SIF_GROUP_MASK | g;
	memcpy(a->extra, &ht, 4);
	if (k->kind == VKEY_PGP) {
		memcpy(a->extra + 4, k->fpr, 20);
		a->data = vkey_pgp_sign(k, meta, &a->len, err);
	} else {
		a->data = dsse_envelope(k, meta, &a->len, err);
	}
	return a->data ? 0 : -1;
}

/* The groups of img, ascending. */
static size_t groups_of(const struct sif_image *img, uint32_t **out)
{
	uint32_t *v = xcalloc(img->ndescs + 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < img->ndescs; i++) {
		uint32_t g = img->descs[i].group_id & ~SIF_GROUP_MASK;
		size_t j = 0;
		if (!g)
			continue;
		while (j < n && v[j] < g)
			j++;
		if (j < n && v[j] == g)
			continue;
		memmove(v + j + 1, v + j, (n - j) * sizeof(*v));
		v[j] = g;
		n++;
	}
	*out = v;
	return n;
}

static int sign_all(int fd, const char *path, struct vkey *k, char **summary,
		    mpictr_err **err)
{
	struct sif_image img;
	uint8_t hdr[SIF_HEADER_SIZE];
	cleanup_free uint32_t *groups = NULL;
	struct sif_append *a = NULL;
	struct strbuf sb = STRBUF_INIT;
	size_t n, done = 0;
	int rc = -1;

	if (sif_load_fd(fd, path, &img, err) < 0)
		return -1;
	n = groups_of(&img, &groups);
	if (n == 0) {
		err_set(err, 0, "sif '%s': no object groups to sign", path);
		goto out;
	}
	if (pread_full(fd, hdr, sizeof(hdr), 0) < 0) {
		err_set(err, errno, "sif '%s': read header", path);
		goto out;
	}
	/* every signature first (they sign what is there now), then add */
	a = xcalloc(n, sizeof(*a));
	for (done = 0; done < n; done++)
		if (sign_group(fd, &img, hdr, k, groups[done], &a[done], err) <
		    0)
			goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t id;
		if (sif_append_object(fd, &img, &a[i], &id, err) < 0)
			goto out;
		sif_image_free(&img);
		if (sif_load_fd(fd, path, &img, err) < 0)
			goto out;
		sb_printf(&sb,
			  "%s: added signature object %u (%s, %s key %s) "
			  "over group %u\n",
			  path, id, k->kind == VKEY_PGP ? "pgp" : "dsse",
			  k->desc, k->id, groups[i]);
	}
	if (fsync(fd) < 0) {
		err_set(err, errno, "sif '%s': sync", path);
		goto out;
	}
	*summary = sb_steal(&sb);
	rc = 0;
out:
	for (size_t i = 0; a && i < done; i++)
		free((void *)a[i].data);
	free(a);
	sb_free(&sb);
	sif_image_free(&img);
	return rc;
}

int vplug_sign_image(const char *path, const char *keyfile, char **summary,
		     mpictr_err **err)
{
	cleanup_close int fd = open(path, O_RDWR | O_CLOEXEC);
	struct vkey k;
	int rc;

	*summary = NULL;
	if (fd < 0)
		return err_set(err, errno, "sif sign: open '%s'", path);
	if (vkey_load(keyfile, true, &k, err) < 0)
		return err_wrap(err, "sif sign");
	rc = sign_all(fd, path, &k, summary, err);
	vkey_free(&k);
	return rc;
}
