/* verify.c - the verify plugin's check of a SIF image's signatures
 * (verify.h), as sylabs/sif's pkg/integrity does it: per signature object
 * linked to a group, the signature (DSSE with PEM keys, OpenPGP
 * clear-signed), then the signed metadata against the image (the exact set
 * of the group's objects, the header digest, each descriptor's and each
 * object's data digest). The data digests of an image file whose identity
 * (device, inode, size, mtime, ctime) and signatures were verified before
 * may be taken from a per-user cache (docs/signing.md, "Cost").
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "sif/sif.h"
#include "sif/sigobj.h"
#include "sif/verify.h"
#include "sif/vkeys.h"

struct vctx {
	int fd;
	struct sif_image img;
	uint8_t hdr[SIF_HEADER_SIZE];
	struct vkey *keys;
	size_t nkeys;
	unsigned flags;
	bool skip_data; /* the cache vouches for the data digests */
	struct verify_report *r;
};

static int read_desc_raw(struct vctx *c, const struct sif_descriptor *d,
			 uint8_t raw[SIF_DESC_SIZE])
{
	off_t off = (off_t)c->img.hdr.desc_offset +
		    (off_t)(d->slot - 1) * SIF_DESC_SIZE;

	return pread_full(c->fd, raw, SIF_DESC_SIZE, off);
}

/* The objects of group g (raw group id without the mask), sorted by ID
 * (the descriptor table's order is the slot order). */
static size_t group_objects(const struct sif_image *img, uint32_t g,
			    const struct sif_descriptor ***out)
{
	const struct sif_descriptor **v = xcalloc(img->ndescs + 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < img->ndescs; i++)
		if (img->descs[i].group_id == (g | SIF_GROUP_MASK))
			v[n++] = &img->descs[i];
	*out = v;
	return n;
}

static uint32_t min_id(const struct sif_descriptor **v, size_t n)
{
	uint32_t m = UINT32_MAX;

	for (size_t i = 0; i < n; i++)
		if (v[i]->id < m)
			m = v[i]->id;
	return m;
}

static bool digest_is(const struct sig_digest *want, const uint8_t *got,
		      size_t len)
{
	return want->len == len && memcmp(want->value, got, len) == 0;
}

/* ---- the metadata against the image ----------------------------------- */

static int check_header(struct vctx *c, const struct sig_metadata *m,
			char **msg)
{
	uint8_t hb[SIGOBJ_HEADER_BYTES], dg[SIGOBJ_DIGEST_MAX];
	size_t dl;

	sigobj_header_bytes(c->hdr, hb);
	if (vdigest_mem(m->header.alg, hb, sizeof(hb), dg, &dl, NULL) < 0 ||
	    !digest_is(&m->header, dg, dl)) {
		*msg = xstrdup("the global header (launch script, magic, "
			       "version or ID) is not the one that was signed");
		return -1;
	}
	return 0;
}

static int check_object(struct vctx *c, const struct sif_descriptor *d,
			uint32_t rel, const struct sig_object_meta *om,
			char **msg)
{
	uint8_t raw[SIF_DESC_SIZE], db[SIGOBJ_DESC_BYTES],
	    dg[SIGOBJ_DIGEST_MAX];
	mpictr_err *e = NULL;
	size_t dl;

	if (read_desc_raw(c, d, raw) < 0) {
		*msg = xasprintf("read the descriptor of object %u: %s", d->id,
				 strerror(errno));
		return -1;
	}
	sigobj_descriptor_bytes(raw, rel, db);
	if (vdigest_mem(om->descriptor.alg, db, sizeof(db), dg, &dl, NULL) <
		0 ||
	    !digest_is(&om->descriptor, dg, dl)) {
		*msg =
		    xasprintf("the descriptor of object %u (type, link, size, "
			      "name or metadata) is not the one that was "
			      "signed",
			      d->id);
		return -1;
	}
	if (c->skip_data)
		return 0;
	if (vdigest_fd(om->object.alg, c->fd, (uint64_t)d->offset,
		       (uint64_t)d->size, dg, &dl, &e) < 0) {
		*msg = xasprintf("object %u: %s", d->id, mpictr_err_message(e));
		mpictr_err_free(e);
		return -1;
	}
	if (!digest_is(&om->object, dg, dl)) {
		*msg = xasprintf("the data of object %u is not what was signed "
				 "(the image was modified)",
				 d->id);
		return -1;
	}
	return 0;
}

/* The metadata names exactly the group's objects; then the digests. */
static int check_metadata(struct vctx *c, struct vsig *s,
			  const struct sig_metadata *m, char **msg)
{
	cleanup_free const struct sif_descriptor **v = NULL;
	size_t n = group_objects(&c->img, s->group, &v);
	uint32_t base = min_id(v, n);

	s->objects = xcalloc(m->nobjects + 1, sizeof(uint32_t));
	for (size_t i = 0; i < m->nobjects; i++)
		s->objects[s->nobjects++] = base + m->objects[i].relative_id;
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t j = 0; j < m->nobjects && !found; j++)
			found = (uint64_t)base + m->objects[j].relative_id ==
				v[i]->id;
		if (!found) {
			*msg =
			    xasprintf("object %u of group %u is not covered "
				      "by the signature (signed over another "
				      "group?)",
				      v[i]->id, s->group);
			return -1;
		}
	}
	for (size_t j = 0; j < m->nobjects; j++) {
		const struct sif_descriptor *d = NULL;
		for (size_t i = 0; i < n && !d; i++)
			if ((uint64_t)base + m->objects[j].relative_id ==
			    v[i]->id)
				d = v[i];
		if (!d) {
			*msg = xasprintf("the signature covers object %" PRIu64
					 ", which is not in group %u",
					 (uint64_t)base +
					     m->objects[j].relative_id,
					 s->group);
			return -1;
		}
		if (j == 0 && check_header(c, m, msg) < 0)
			return -1;
		if (check_object(c, d, d->id - base, &m->objects[j], msg) < 0)
			return -1;
	}
	return 0;
}

/* ---- one signature object ----------------------------------------------- */

static void set_status(struct vsig *s, enum vsig_status st, char *msg)
{
	s->status = st;
	free(s->msg);
	s->msg = msg;
}

static void set_signer(struct vsig *s, const struct vkey *k)
{
	s->key = xstrdup(k->path);
	s->key_id = xstrdup(k->id);
}

/* DSSE: *payload receives the verified metadata. 0, or -1 with the
 * status set. */
static int check_dsse(struct vctx *c, struct vsig *s, const uint8_t *data,
		      size_t len, uint8_t **payload, size_t *plen)
{
	struct dsse_envelope e;
	mpictr_err *err = NULL;
	cleanup_free uint8_t *pae = NULL;
	struct strbuf ids = STRBUF_INIT;
	size_t pl;

	if (dsse_parse(data, len, &e, &err) < 0) {
		set_status(s, VSIG_MALFORMED, xstrdup(mpictr_err_message(err)));
		mpictr_err_free(err);
		dsse_envelope_free(&e);
		return -1;
	}
	if (strcmp(e.payload_type, SIGOBJ_DSSE_TYPE) != 0) {
		set_status(s, VSIG_MALFORMED,
			   xasprintf("unexpected DSSE payload type '%.80s' "
				     "(expected %s)",
				     e.payload_type, SIGOBJ_DSSE_TYPE));
		dsse_envelope_free(&e);
		return -1;
	}
	pae = dsse_pae(e.payload_type, e.payload, e.payload_len, &pl);
	for (size_t i = 0; i < c->nkeys && !s->key; i++)
		for (size_t j = 0; j < e.nsigs && !s->key; j++)
			if (vkey_dsse_verify(&c->keys[i], s->hash, pae, pl,
					     e.sigs[j].sig, e.sigs[j].siglen))
				set_signer(s, &c->keys[i]);
	for (size_t j = 0; j < e.nsigs; j++)
		sb_printf(&ids, "%s%.80s", j ? ", " : "",
			  e.sigs[j].keyid[0] ? e.sigs[j].keyid : "(no key id)");
	s->signer_ids = sb_steal(&ids);
	if (!s->key) {
		set_status(s, VSIG_UNKNOWN_KEY,
			   xasprintf("no given key verifies it (it names %s)",
				     s->signer_ids));
		dsse_envelope_free(&e);
		return -1;
	}
	*payload = steal_ptr(&e.payload);
	*plen = e.payload_len;
	dsse_envelope_free(&e);
	return 0;
}

static char *fpr_hex(const uint8_t *f)
{
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; i < 20; i++)
		sb_printf(&sb, "%02X", f[i]);
	return sb_steal(&sb);
}

/* OpenPGP (metadata or legacy text): *plain receives the signed text. */
static int check_pgp(struct vctx *c, struct vsig *s,
		     const struct sif_descriptor *d, const uint8_t *data,
		     size_t len, uint8_t **plain, size_t *plen)
{
	static const uint8_t zero[20];
	const uint8_t *want = d->extra + 4;
	cleanup_free char *why = NULL;
	uint8_t fpr[20];

	s->signer_ids = memcmp(want, zero, 20) ? fpr_hex(want)
					       : xstrdup("(no fingerprint)");
	for (size_t i = 0; i < c->nkeys && !s->key; i++) {
		mpictr_err *err = NULL;
		int rc;

		free(why);
		why = NULL;
		rc = vkey_pgp_verify(&c->keys[i], data, len, plain, plen, fpr,
				     &why, &err);
		if (rc < 0) {
			set_status(s, VSIG_MALFORMED,
				   xstrdup(mpictr_err_message(err)));
			mpictr_err_free(err);
			return -1;
		}
		if (rc == 2) {
			set_status(
			    s, VSIG_MISMATCH,
			    xasprintf("the OpenPGP signature by '%s' (%s) "
				      "does not verify: the signed "
				      "metadata or the signature was "
				      "modified",
				      c->keys[i].path, c->keys[i].id));
			return -1;
		}
		if (rc == 1 && memcmp(fpr, want, 20) != 0) {
			free(*plain);
			*plain = NULL;
			set_status(
			    s, VSIG_MISMATCH,
			    xasprintf("the fingerprint in its descriptor "
				      "(%s) is not the signing key's",
				      s->signer_ids));
			return -1;
		}
		if (rc == 1)
			set_signer(s, &c->keys[i]);
	}
	if (!s->key) {
		set_status(s, VSIG_UNKNOWN_KEY,
			   xasprintf("no given key verifies it (OpenPGP key "
				     "%s%s%s)",
				     s->signer_ids, why ? "; " : "",
				     why ? why : ""));
		return -1;
	}
	return 0;
}

/* A legacy signature: the digest of its plaintext against the linked
 * object, or the group's non-signature objects one after the other. */
static void check_legacy_digest(struct vctx *c, struct vsig *s,
				const uint8_t *plain, size_t plen)
{
	cleanup_free const struct sif_descriptor **v = NULL;
	mpictr_err *err = NULL;
	struct sig_digest d;
	size_t n = 0;

	if (sigobj_legacy_digest(plain, plen, s->hash, &d, &err) < 0) {
		set_status(s, VSIG_MALFORMED, xstrdup(mpictr_err_message(err)));
		mpictr_err_free(err);
		return;
	}
	if (s->object) {
		const struct sif_descriptor *o =
		    sif_find_id(&c->img, s->object);
		v = xcalloc(1, sizeof(*v));
		if (o)
			v[n++] = o;
	} else {
		const struct sif_descriptor **all;
		size_t k = group_objects(&c->img, s->group, &all);
		v = all;
		for (size_t i = 0; i < k; i++)
			if (all[i]->datatype != SIF_DATA_SIGNATURE)
				v[n++] = all[i];
	}
	if (n == 0) {
		set_status(s, VSIG_MISMATCH,
			   xstrdup("it is linked to nothing "
				   "in the image"));
		return;
	}
	{
		uint64_t *offs = xcalloc(n, sizeof(uint64_t)),
			 *lens = xcalloc(n, sizeof(uint64_t));
		uint8_t dg[SIGOBJ_DIGEST_MAX];
		size_t dl;

		for (size_t i = 0; i < n; i++) {
			offs[i] = (uint64_t)v[i]->offset;
			lens[i] = (uint64_t)v[i]->size;
			s->objects =
			    xrealloc(s->objects, (i + 1) * sizeof(uint32_t));
			s->objects[s->nobjects++] = v[i]->id;
		}
		if (vdigest_fd_multi(d.alg, c->fd, offs, lens, n, dg, &dl,
				     NULL) < 0 ||
		    !digest_is(&d, dg, dl))
			set_status(
			    s, VSIG_MISMATCH,
			    xstrdup("the signed objects are not what was "
				    "signed (legacy digest)"));
		free(offs);
		free(lens);
	}
}

static void check_sig(struct vctx *c, const struct sif_descriptor *d,
		      struct vsig *s)
{
	cleanup_free uint8_t *data = NULL, *meta = NULL;
	struct sig_metadata m;
	mpictr_err *err = NULL;
	enum sigobj_form f;
	size_t mlen = 0;
	char *msg = NULL;

	if (d->size > (int64_t)SIGOBJ_MAX_SIZE) {
		set_status(s, VSIG_MALFORMED,
			   xasprintf("it is %" PRId64 " bytes (at most %u)",
				     d->size, SIGOBJ_MAX_SIZE));
		return;
	}
	data = xmalloc((size_t)d->size + 1);
	if (pread_full(c->fd, data, (size_t)d->size, (off_t)d->offset) < 0) {
		set_status(s, VSIG_MALFORMED,
			   xasprintf("read: %s", strerror(errno)));
		return;
	}
	f = sigobj_form(data, (size_t)d->size);
	s->form = sigobj_form_name(f);
	if (f == SIGOBJ_UNKNOWN) {
		set_status(s, VSIG_MALFORMED,
			   xstrdup("neither a DSSE envelope nor an OpenPGP "
				   "clear-signed message (truncated?)"));
		return;
	}
	if (f == SIGOBJ_LEGACY && !(c->flags & VERIFY_LEGACY)) {
		set_status(
		    s, VSIG_LEGACY,
		    xstrdup("a legacy (SIFHASH) signature, which protects "
			    "neither header nor descriptors: not "
			    "considered (see --legacy-insecure)"));
		return;
	}
	if (!s->group && f != SIGOBJ_LEGACY) {
		set_status(s, VSIG_NOT_GROUP,
			   xasprintf("linked to object %u, not to a group: not "
				     "considered",
				     s->object));
		return;
	}
	if ((f == SIGOBJ_DSSE
		 ? check_dsse(c, s, data, (size_t)d->size, &meta, &mlen)
		 : check_pgp(c, s, d, data, (size_t)d->size, &meta, &mlen)) < 0)
		return;
	if (f == SIGOBJ_LEGACY) {
		s->status = VSIG_OK;
		check_legacy_digest(c, s, meta, mlen);
		return;
	}
	if (sigmeta_parse(meta, mlen, &m, &err) < 0) {
		set_status(s, VSIG_MALFORMED, xstrdup(mpictr_err_message(err)));
		mpictr_err_free(err);
		return;
	}
	s->status = VSIG_OK;
	if (check_metadata(c, s, &m, &msg) < 0)
		set_status(s, VSIG_MISMATCH, msg);
	sigmeta_free(&m);
}

/* ---- the whole image ---------------------------------------------------- */

static void add_groups(struct vctx *c)
{
	struct verify_report *r = c->r;

	for (size_t i = 0; i < c->img.ndescs; i++) {
		const struct sif_descriptor *d = &c->img.descs[i];
		uint32_t g = d->group_id & ~SIF_GROUP_MASK;
		struct vgroup *vg = NULL;

		if (!g) {
			if (d->datatype != SIF_DATA_SIGNATURE && !r->problem)
				r->problem = xasprintf(
				    "object %u is in no object group, so no "
				    "signature can cover it",
				    d->id);
			continue;
		}
		for (size_t j = 0; j < r->ngroups && !vg; j++)
			if (r->groups[j].id == g)
				vg = &r->groups[j];
		if (!vg) {
			r->groups =
			    xrealloc(r->groups, (r->ngroups + 1) * sizeof(*vg));
			vg = &r->groups[r->ngroups++];
			memset(vg, 0, sizeof(*vg));
			vg->id = g;
		}
		vg->objects = xrealloc(vg->objects,
				       (vg->nobjects + 1) * sizeof(uint32_t));
		vg->objects[vg->nobjects++] = d->id;
	}
}

static struct vgroup *find_group(struct verify_report *r, uint32_t g)
{
	for (size_t j = 0; j < r->ngroups; j++)
		if (r->groups[j].id == g)
			return &r->groups[j];
	return NULL;
}

/* The hash type of a signature descriptor. */
static int32_t extra_u32(const struct sif_descriptor *d)
{
	uint32_t v;

	memcpy(&v, d->extra, sizeof(v));
	return (int32_t)le32toh(v);
}

/* The group a signature counts for: its linked group, or the group of
 * the object a legacy signature is linked to. */
static uint32_t sig_group(struct vctx *c, const struct vsig *s)
{
	const struct sif_descriptor *o;

	if (s->group || !s->object)
		return s->group;
	o = sif_find_id(&c->img, s->object);
	return o ? o->group_id & ~SIF_GROUP_MASK : 0;
}

static void check_all(struct vctx *c)
{
	struct verify_report *r = c->r;

	add_groups(c);
	for (size_t i = 0; i < c->img.ndescs; i++) {
		const struct sif_descriptor *d = &c->img.descs[i];
		struct vsig *s;
		struct vgroup *g;

		if (d->datatype != SIF_DATA_SIGNATURE)
			continue;
		r->sigs = xrealloc(r->sigs, (r->nsigs + 1) * sizeof(*s));
		s = &r->sigs[r->nsigs++];
		memset(s, 0, sizeof(*s));
		s->id = d->id;
		s->form = "unknown";
		if ((d->linked_id & SIF_GROUP_MASK) == SIF_GROUP_MASK)
			s->group = d->linked_id & ~SIF_GROUP_MASK;
		else
			s->object = d->linked_id;
		if (sig_hashtype_alg(extra_u32(d)))
			s->hash = xstrdup(sig_hashtype_alg(extra_u32(d)));
		check_sig(c, d, s);
		if (strcmp(s->form, "legacy") == 0)
			s->group = sig_group(c, s);
		g = find_group(r, s->group);
		if (!g)
			continue;
		g->nsigs++;
		if (s->status == VSIG_OK)
			g->nok++;
		if (s->status == VSIG_LEGACY ||
		    (s->status == VSIG_OK && strcmp(s->form, "legacy") == 0))
			g->nlegacy++;
	}
}

/* ---- the verified-identity cache ---------------------------------------- */

/* The entry name of this file as it is now, checked with these keys: a
 * SHA-256 over its identity (device, inode, size, mtime, ctime: any write
 * changes mtime and ctime, and ctime cannot be set back), its header and
 * descriptor table, and the ids of the keys. */
static char *cache_name(struct vctx *c, const struct stat *st)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_free uint8_t *table = NULL;
	size_t tl = (size_t)c->img.hdr.desc_size, dl;
	uint8_t dg[32];
	char *name = NULL;

	sb_printf(&sb, "mpictr-verified-1 %ju %ju %jd %jd.%09ld %jd.%09ld\n",
		  (uintmax_t)st->st_dev, (uintmax_t)st->st_ino,
		  (intmax_t)st->st_size, (intmax_t)st->st_mtim.tv_sec,
		  st->st_mtim.tv_nsec, (intmax_t)st->st_ctim.tv_sec,
		  st->st_ctim.tv_nsec);
	for (size_t i = 0; i < c->nkeys; i++)
		sb_printf(&sb, "key %s\n", c->keys[i].id);
	sb_add(&sb, (const char *)c->hdr, sizeof(c->hdr));
	table = xmalloc(tl + 1);
	if (pread_full(c->fd, table, tl, (off_t)c->img.hdr.desc_offset) == 0) {
		sb_add(&sb, (const char *)table, tl);
		if (vdigest_mem("sha256", sb.buf, sb.len, dg, &dl, NULL) == 0) {
			struct strbuf hex = STRBUF_INIT;
			for (size_t i = 0; i < dl; i++)
				sb_printf(&hex, "%02x", dg[i]);
			name = sb_steal(&hex);
		}
	}
	sb_free(&sb);
	return name;
}

/* The cache directory, created 0700 if absent; -1 unless it is a
 * directory of ours that nobody else may write. */
static int cache_dir_open(const char *dir)
{
	cleanup_free char *parent = xstrdup(dir);
	char *slash = strrchr(parent, '/');
	struct stat st;
	int fd;

	if (slash && slash != parent) {
		*slash = '\0';
		cleanup_free char *grand = xstrdup(parent);
		char *s2 = strrchr(grand, '/');
		if (s2 && s2 != grand) {
			*s2 = '\0';
			mkdir(grand, 0700);
		}
		mkdir(parent, 0700);
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool cache_has(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_uid == geteuid();
}

static void cache_add(int dfd, const char *name)
{
	int fd =
	    openat(dfd, name,
		   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd >= 0)
		close(fd);
}

/* May this result be remembered: some signature verified, none of them
 * found the image different from what was signed. */
static bool cacheable(const struct verify_report *r)
{
	size_t ok = 0;

	for (size_t i = 0; i < r->nsigs; i++) {
		if (r->sigs[i].status == VSIG_MISMATCH)
			return false;
		ok += r->sigs[i].status == VSIG_OK;
	}
	return ok > 0;
}

/* ---- entry -------------------------------------------------------------- */

static int load_keys(struct vctx *c, char *const *keys, mpictr_err **err)
{
	size_t n = strv_len(keys);

	c->keys = xcalloc(n + 1, sizeof(*c->keys));
	for (size_t i = 0; i < n; i++) {
		if (vkey_load(keys[i], false, &c->keys[i], err) < 0)
			return -1;
		c->nkeys++;
	}
	return 0;
}

int vplug_verify_image_fd(int fd, const char *name, char *const *keys,
			  unsigned flags, const struct verify_cache *cache,
			  struct verify_report **out, mpictr_err **err)
{
	struct vctx c = {.fd = fd, .flags = flags};
	cleanup_free char *entry = NULL;
	struct stat st;
	int dfd = -1, rc = -1;

	*out = NULL;
	if (sif_load_fd(fd, name, &c.img, err) < 0)
		return -1;
	if (pread_full(fd, c.hdr, sizeof(c.hdr), 0) < 0 || fstat(fd, &st) < 0) {
		err_set(err, errno, "image '%s'", name);
		goto out;
	}
	if (load_keys(&c, keys, err) < 0)
		goto out;
	if (cache && cache->dir && (dfd = cache_dir_open(cache->dir)) >= 0 &&
	    (entry = cache_name(&c, &st)))
		c.skip_data = cache_has(dfd, entry);
	c.r = xcalloc(1, sizeof(*c.r));
	c.r->image = xstrdup(name);
	c.r->data_cached = c.skip_data;
	check_all(&c);
	if (dfd >= 0 && entry && !c.skip_data && cacheable(c.r))
		cache_add(dfd, entry);
	*out = steal_ptr(&c.r);
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	for (size_t i = 0; i < c.nkeys; i++)
		vkey_free(&c.keys[i]);
	free(c.keys);
	sif_image_free(&c.img);
	return rc;
}
