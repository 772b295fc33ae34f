/* sigobj.c - parse SIF signature objects (sigobj.h): a small JSON reader
 * (depth and size bounded, for the DSSE envelope and the signed
 * metadata), base64, DSSE's PAE, the metadata writer, and the header and
 * descriptor bytes that the digests cover. No cryptography here.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "sif/sigobj.h"

/* ---- a bounded JSON reader ------------------------------------------- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype t;
	char *s; /* J_STR (NUL-terminated, may hold NULs: slen), J_NUM text */
	size_t slen;
	struct jval *items; /* J_ARR, J_OBJ */
	char **keys;	    /* J_OBJ */
	size_t n;
};

struct jparser {
	const char *p, *end;
	int depth;
	size_t nodes;
};

#define JSON_MAX_DEPTH 16
#define JSON_MAX_NODES 400000

static void jfree(struct jval *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

static void jws(struct jparser *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
				   *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v << 4 | (unsigned)h;
	}
	*out = v;
	return 0;
}

static void put_utf8(struct strbuf *sb, unsigned c)
{
	if (c < 0x80) {
		sb_putc(sb, (char)c);
	} else if (c < 0x800) {
		sb_putc(sb, (char)(0xc0 | c >> 6));
		sb_putc(sb, (char)(0x80 | (c & 0x3f)));
	} else if (c < 0x10000) {
		sb_putc(sb, (char)(0xe0 | c >> 12));
		sb_putc(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
		sb_putc(sb, (char)(0x80 | (c & 0x3f)));
	} else {
		sb_putc(sb, (char)(0xf0 | c >> 18));
		sb_putc(sb, (char)(0x80 | ((c >> 12) & 0x3f)));
		sb_putc(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
		sb_putc(sb, (char)(0x80 | (c & 0x3f)));
	}
}

/* An escape after the backslash at jp->p; 0 or -1. */
static int jescape(struct jparser *jp, struct strbuf *sb)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	unsigned c, lo;
	const char *k;

	if (jp->p >= jp->end)
		return -1;
	k = *jp->p ? strchr(from, *jp->p) : NULL;
	if (k) {
		sb_putc(sb, to[k - from]);
		jp->p++;
		return 0;
	}
	if (*jp->p != 'u' || jp->end - jp->p < 5 || hex4(jp->p + 1, &c) < 0)
		return -1;
	jp->p += 5;
	if (c >= 0xd800 && c < 0xdc00 && jp->end - jp->p >= 6 &&
	    jp->p[0] == '\\' && jp->p[1] == 'u' && hex4(jp->p + 2, &lo) == 0 &&
	    lo >= 0xdc00 && lo < 0xe000) {
		c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
		jp->p += 6;
	} else if (c >= 0xd800 && c < 0xe000) {
		c = 0xfffd; /* a lone surrogate, as Go decodes it */
	}
	put_utf8(sb, c);
	return 0;
}

static int jstring(struct jparser *jp, char **out, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	jp->p++; /* the quote */
	while (jp->p < jp->end && *jp->p != '"') {
		if ((unsigned char)*jp->p < 0x20)
			goto bad;
		if (*jp->p == '\\') {
			jp->p++;
			if (jescape(jp, &sb) < 0)
				goto bad;
			continue;
		}
		sb_putc(&sb, *jp->p++);
	}
	if (jp->p >= jp->end)
		goto bad;
	jp->p++;
	*len = sb.len;
	*out = sb.buf ? sb_steal(&sb) : xstrdup("");
	return 0;
bad:
	sb_free(&sb);
	return -1;
}

static int jvalue(struct jparser *jp, struct jval *v);

static int jcontainer(struct jparser *jp, struct jval *v, bool obj)
{
	char close = obj ? '}' : ']';

	v->t = obj ? J_OBJ : J_ARR;
	jp->p++;
	jws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		size_t kl;

		jws(jp);
		if (obj) {
			if (jp->p >= jp->end || *jp->p != '"' ||
			    jstring(jp, &key, &kl) < 0)
				return -1;
			jws(jp);
			if (jp->p >= jp->end || *jp->p != ':') {
				free(key);
				return -1;
			}
			jp->p++;
		}
		v->items = xrealloc(v->items, (v->n + 1) * sizeof(*v->items));
		memset(&v->items[v->n], 0, sizeof(*v->items));
		if (obj) {
			v->keys =
			    xrealloc(v->keys, (v->n + 1) * sizeof(char *));
			v->keys[v->n] = key;
		}
		v->n++;
		if (jvalue(jp, &v->items[v->n - 1]) < 0)
			return -1;
		jws(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return 0;
		}
		return -1;
	}
}

static int jliteral(struct jparser *jp, struct jval *v)
{
	static const struct {
		const char *word;
		enum jtype t;
	} lits[] = {{"true", J_BOOL}, {"false", J_BOOL}, {"null", J_NULL}};
	const char *s = jp->p;

	for (size_t i = 0; i < ARRAY_SIZE(lits); i++) {
		size_t l = strlen(lits[i].word);
		if ((size_t)(jp->end - s) >= l &&
		    memcmp(s, lits[i].word, l) == 0) {
			v->t = lits[i].t;
			jp->p += l;
			return 0;
		}
	}
	/* a number: -?digits[.digits][e[+-]digits] */
	if (s < jp->end && *s == '-')
		s++;
	if (s >= jp->end || *s < '0' || *s > '9')
		return -1;
	while (s < jp->end &&
	       ((*s >= '0' && *s <= '9') || *s == '.' || *s == 'e' ||
		*s == 'E' || *s == '+' || *s == '-'))
		s++;
	v->t = J_NUM;
	v->s = xstrndup(jp->p, (size_t)(s - jp->p));
	v->slen = (size_t)(s - jp->p);
	jp->p = s;
	return 0;
}

static int jvalue(struct jparser *jp, struct jval *v)
{
	int rc;

	jws(jp);
	if (jp->p >= jp->end || ++jp->nodes > JSON_MAX_NODES)
		return -1;
	if (*jp->p == '"') {
		v->t = J_STR;
		return jstring(jp, &v->s, &v->slen);
	}
	if (*jp->p != '{' && *jp->p != '[')
		return jliteral(jp, v);
	if (++jp->depth > JSON_MAX_DEPTH)
		return -1;
	rc = jcontainer(jp, v, *jp->p == '{');
	jp->depth--;
	return rc;
}

/* Parse a whole document (white space around it allowed). */
static int jparse(const uint8_t *data, size_t len, struct jval *v)
{
	struct jparser jp = {.p = (const char *)data,
			     .end = (const char *)data + len};

	memset(v, 0, sizeof(*v));
	if (jvalue(&jp, v) < 0) {
		jfree(v);
		return -1;
	}
	jws(&jp);
	if (jp.p != jp.end) {
		jfree(v);
		return -1;
	}
	return 0;
}

/* The member called key (case-insensitive, the last one: as Go's
 * encoding/json matches struct fields), or NULL. */
static const struct jval *jget(const struct jval *o, const char *key)
{
	if (o->t != J_OBJ)
		return NULL;
	for (size_t i = o->n; i-- > 0;)
		if (strcasecmp(o->keys[i], key) == 0)
			return &o->items[i];
	return NULL;
}

/* A string member without NULs, or NULL. */
static const char *jget_str(const struct jval *o, const char *key)
{
	const struct jval *v = jget(o, key);

	return v && v->t == J_STR && strlen(v->s) == v->slen ? v->s : NULL;
}

/* ---- base64 ------------------------------------------------------------ */

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

uint8_t *b64_decode(const char *s, size_t n, size_t *outlen)
{
	uint8_t *out;
	size_t o = 0, i;
	unsigned acc = 0;
	int bits = 0;

	while (n && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	out = xmalloc(n / 4 * 3 + 3);
	for (i = 0; i < n; i++) {
		int v = b64val(s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
		acc &= (1u << bits) - 1;
	}
	*outlen = o;
	return out;
}

char *b64_encode(const uint8_t *p, size_t n, bool pad)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
				  "qrstuvwxyz0123456789+/";
	char *out = xmalloc(n / 3 * 4 + 5), *q = out;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		unsigned v =
		    (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		*q++ = tab[(v >> 6) & 63];
		*q++ = tab[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 |
			     (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		if (i + 1 < n)
			*q++ = tab[(v >> 6) & 63];
		else if (pad)
			*q++ = '=';
		if (pad)
			*q++ = '=';
	}
	*q = '\0';
	return out;
}

bool sigobj_key_is_pgp(const uint8_t *data, size_t len)
{
	return len && ((data[0] & 0x80) ||
		       memmem(data, len, "-----BEGIN PGP", 14) != NULL);
}

/* ---- forms ------------------------------------------------------------- */

static const char pgp_begin[] = "-----BEGIN PGP SIGNED MESSAGE-----";

enum sigobj_form sigobj_form(const uint8_t *data, size_t len)
{
	const uint8_t *p = data, *end = data + len, *body;
	size_t bl = sizeof(pgp_begin) - 1;

	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	if (p < end && *p == '{')
		return SIGOBJ_DSSE;
	if ((size_t)(end - p) < bl || memcmp(p, pgp_begin, bl) != 0)
		return SIGOBJ_UNKNOWN;
	/* the armor headers end at the first empty line */
	body = memmem(p, (size_t)(end - p), "\n\n", 2);
	if (body)
		body += 2;
	else if ((body = memmem(p, (size_t)(end - p), "\r\n\r\n", 4)))
		body += 4;
	if (body && (size_t)(end - body) >= 8 &&
	    memcmp(body, "SIFHASH:", 8) == 0)
		return SIGOBJ_LEGACY;
	return SIGOBJ_PGP;
}

const char *sigobj_form_name(enum sigobj_form f)
{
	switch (f) {
	case SIGOBJ_DSSE:
		return "dsse";
	case SIGOBJ_PGP:
		return "pgp";
	case SIGOBJ_LEGACY:
		return "legacy";
	case SIGOBJ_UNKNOWN:
	default:
		return "unknown";
	}
}

/* ---- DSSE -------------------------------------------------------------- */

void dsse_envelope_free(struct dsse_envelope *e)
{
	for (size_t i = 0; i < e->nsigs; i++) {
		free(e->sigs[i].keyid);
		free(e->sigs[i].sig);
	}
	free(e->sigs);
	free(e->payload_type);
	free(e->payload);
	memset(e, 0, sizeof(*e));
}

static int dsse_sigs(const struct jval *a, struct dsse_envelope *e,
		     mpictr_err **err)
{
	if (!a || a->t != J_ARR || a->n == 0)
		return err_set(err, 0, "DSSE envelope has no signatures");
	if (a->n > SIGOBJ_MAX_SIGS)
		return err_set(err, 0,
			       "DSSE envelope has %zu signatures (at most %d)",
			       a->n, SIGOBJ_MAX_SIGS);
	e->sigs = xcalloc(a->n, sizeof(*e->sigs));
	for (size_t i = 0; i < a->n; i++) {
		const char *kid = jget_str(&a->items[i], "keyid");
		const char *sig = jget_str(&a->items[i], "sig");
		struct dsse_sig *s = &e->sigs[e->nsigs++];

		s->keyid = xstrdup(kid ? kid : "");
		if (!sig ||
		    !(s->sig = b64_decode(sig, strlen(sig), &s->siglen)) ||
		    s->siglen == 0)
			return err_set(
			    err, 0,
			    "DSSE signature %zu: 'sig' is missing or "
			    "not base64",
			    i + 1);
	}
	return 0;
}

int dsse_parse(const uint8_t *data, size_t len, struct dsse_envelope *e,
	       mpictr_err **err)
{
	struct jval v;
	const char *type, *payload;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	if (jparse(data, len, &v) < 0)
		return err_set(err, 0, "DSSE envelope is not valid JSON");
	type = jget_str(&v, "payloadType");
	payload = jget_str(&v, "payload");
	if (v.t != J_OBJ) {
		err_set(err, 0, "DSSE envelope is not a JSON object");
	} else if (!type) {
		err_set(err, 0, "DSSE envelope has no 'payloadType'");
	} else if (!payload ||
		   !(e->payload = b64_decode(payload, strlen(payload),
					     &e->payload_len))) {
		err_set(err, 0,
			"DSSE envelope: 'payload' is missing or not "
			"base64");
	} else {
		e->payload_type = xstrdup(type);
		rc = dsse_sigs(jget(&v, "signatures"), e, err);
	}
	jfree(&v);
	return rc;
}

uint8_t *dsse_pae(const char *type, const uint8_t *payload, size_t len,
		  size_t *outlen)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "DSSEv1 %zu %s %zu ", strlen(type), type, len);
	sb_add(&sb, (const char *)payload, len);
	*outlen = sb.len;
	return (uint8_t *)sb_steal(&sb);
}

/* ---- metadata ---------------------------------------------------------- */

static const struct {
	const char *name;
	size_t size;
} digest_algs[] = {
    {"sha224", 28}, {"sha256", 32},	{"sha384", 48},
    {"sha512", 64}, {"sha512_224", 28}, {"sha512_256", 32},
};

size_t sig_digest_size(const char *alg)
{
	for (size_t i = 0; i < ARRAY_SIZE(digest_algs); i++)
		if (strcmp(alg, digest_algs[i].name) == 0)
			return digest_algs[i].size;
	return 0;
}

const char *sig_hashtype_alg(int32_t hashtype)
{
	/* sif's HashType: 1 SHA256, 2 SHA384, 3 SHA512 (BLAKE2 has no
	 * metadata name) */
	switch (hashtype) {
	case 1:
		return "sha256";
	case 2:
		return "sha384";
	case 3:
		return "sha512";
	default:
		return NULL;
	}
}

static int hex_decode(const char *s, size_t n, uint8_t *out, size_t max,
		      size_t *len)
{
	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int a = hexval(s[i]), b = hexval(s[i + 1]);
		if (a < 0 || b < 0)
			return -1;
		out[i / 2] = (uint8_t)(a << 4 | b);
	}
	*len = n / 2;
	return 0;
}

static int digest_parse(const struct jval *v, const char *what,
			struct sig_digest *d, mpictr_err **err)
{
	const char *colon;
	size_t want;

	memset(d, 0, sizeof(*d));
	if (!v || v->t != J_STR || strlen(v->s) != v->slen)
		return err_set(err, 0, "metadata: %s is missing", what);
	colon = strchr(v->s, ':');
	if (!colon || strchr(colon + 1, ':') ||
	    (size_t)(colon - v->s) >= sizeof(d->alg))
		return err_set(err, 0,
			       "metadata: %s is not 'ALGORITHM:HEX' (digest "
			       "malformed)",
			       what);
	memcpy(d->alg, v->s, (size_t)(colon - v->s));
	want = sig_digest_size(d->alg);
	if (!want)
		return err_set(err, 0,
			       "metadata: %s uses hash algorithm '%s', which "
			       "is not supported",
			       what, d->alg);
	if (hex_decode(colon + 1, strlen(colon + 1), d->value, sizeof(d->value),
		       &d->len) < 0 ||
	    d->len != want)
		return err_set(err, 0,
			       "metadata: %s is not %zu bytes of hex (digest "
			       "malformed)",
			       what, want);
	return 0;
}

/* A JSON number that is a whole number in 0..max. */
static int juint(const struct jval *v, unsigned long long max,
		 unsigned long long *out)
{
	char *end;

	if (!v || v->t != J_NUM || v->s[0] == '-')
		return -1;
	errno = 0;
	*out = strtoull(v->s, &end, 10);
	return errno || *end || *out > max ? -1 : 0;
}

void sigmeta_free(struct sig_metadata *m)
{
	free(m->objects);
	memset(m, 0, sizeof(*m));
}

static int sigmeta_objects(const struct jval *a, struct sig_metadata *m,
			   mpictr_err **err)
{
	if (!a || a->t != J_ARR)
		return err_set(err, 0, "metadata has no 'objects' list");
	if (a->n > SIGOBJ_MAX_OBJECTS)
		return err_set(err, 0,
			       "metadata lists %zu objects (at most %d)", a->n,
			       SIGOBJ_MAX_OBJECTS);
	m->objects = xcalloc(a->n ? a->n : 1, sizeof(*m->objects));
	for (size_t i = 0; i < a->n; i++) {
		struct sig_object_meta *o = &m->objects[m->nobjects++];
		const struct jval *e = &a->items[i];
		unsigned long long id;
		char what[64];

		if (e->t != J_OBJ ||
		    juint(jget(e, "relativeId"), UINT32_MAX, &id) < 0)
			return err_set(err, 0,
				       "metadata: object %zu has no valid "
				       "'relativeId'",
				       i + 1);
		o->relative_id = (uint32_t)id;
		snprintf(what, sizeof(what), "object %zu descriptorDigest",
			 i + 1);
		if (digest_parse(jget(e, "descriptorDigest"), what,
				 &o->descriptor, err) < 0)
			return -1;
		snprintf(what, sizeof(what), "object %zu objectDigest", i + 1);
		if (digest_parse(jget(e, "objectDigest"), what, &o->object,
				 err) < 0)
			return -1;
	}
	return 0;
}

int sigmeta_parse(const uint8_t *json, size_t len, struct sig_metadata *m,
		  mpictr_err **err)
{
	struct jval v;
	const struct jval *h;
	unsigned long long ver;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	if (jparse(json, len, &v) < 0)
		return err_set(err, 0, "signed metadata is not valid JSON");
	h = jget(&v, "header");
	if (v.t != J_OBJ)
		err_set(err, 0, "signed metadata is not a JSON object");
	else if (juint(jget(&v, "version"), 1000, &ver) < 0 || ver != 1)
		err_set(err, 0,
			"signed metadata: unknown 'version' (only 1 "
			"exists)");
	else if (!h || h->t != J_OBJ)
		err_set(err, 0, "signed metadata has no 'header'");
	else if (digest_parse(jget(h, "digest"), "header digest", &m->header,
			      err) == 0)
		rc = sigmeta_objects(jget(&v, "objects"), m, err);
	jfree(&v);
	if (rc < 0)
		sigmeta_free(m);
	return rc;
}

static void sb_digest(struct strbuf *sb, const struct sig_digest *d)
{
	sb_printf(sb, "\"%s:", d->alg);
	for (size_t i = 0; i < d->len; i++)
		sb_printf(sb, "%02x", d->value[i]);
	sb_putc(sb, '"');
}

char *sigmeta_format(const struct sig_metadata *m)
{
	struct strbuf sb = STRBUF_INIT;

	sb_puts(&sb, "{\"version\":1,\"header\":{\"digest\":");
	sb_digest(&sb, &m->header);
	sb_puts(&sb, "},\"objects\":");
	sb_puts(&sb, m->nobjects ? "[" : "null");
	for (size_t i = 0; i < m->nobjects; i++) {
		const struct sig_object_meta *o = &m->objects[i];
		sb_printf(&sb, "%s{\"relativeId\":%u,\"descriptorDigest\":",
			  i ? "," : "", o->relative_id);
		sb_digest(&sb, &o->descriptor);
		sb_puts(&sb, ",\"objectDigest\":");
		sb_digest(&sb, &o->object);
		sb_putc(&sb, '}');
	}
	sb_puts(&sb, m->nobjects ? "]}" : "}");
	return sb_steal(&sb);
}

int sigobj_legacy_digest(const uint8_t *text, size_t len, const char *alg,
			 struct sig_digest *d, mpictr_err **err)
{
	const char *p = (const char *)text;
	size_t want = alg ? sig_digest_size(alg) : 0;

	memset(d, 0, sizeof(*d));
	if (!want)
		return err_set(err, 0,
			       "legacy signature: unsupported hash type");
	if (len < 9 || memcmp(p, "SIFHASH:\n", 9) != 0)
		return err_set(err, 0, "legacy signature: no 'SIFHASH:' line");
	p += 9;
	len -= 9;
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	snprintf(d->alg, sizeof(d->alg), "%s", alg);
	if (hex_decode(p, len, d->value, sizeof(d->value), &d->len) < 0 ||
	    d->len != want)
		return err_set(err, 0,
			       "legacy signature: the digest is not %zu bytes "
			       "of hex",
			       want);
	return 0;
}

/* ---- the bytes that are digested ---------------------------------------- */

void sigobj_header_bytes(const uint8_t raw[SIF_HEADER_SIZE],
			 uint8_t out[SIGOBJ_HEADER_BYTES])
{
	/* launch script (32), magic (10), version (3); not the arch (3);
	 * the ID (16) */
	memcpy(out, raw, 45);
	memcpy(out + 45, raw + 48, 16);
}

void sigobj_descriptor_bytes(const uint8_t raw[SIF_DESC_SIZE],
			     uint32_t relative_id,
			     uint8_t out[SIGOBJ_DESC_BYTES])
{
	uint32_t rid = htole32(relative_id);

	memcpy(out, raw, 5);		 /* data type, used */
	memcpy(out + 5, &rid, 4);	 /* relative ID */
	memcpy(out + 9, raw + 13, 4);	 /* linked ID */
	memcpy(out + 13, raw + 25, 8);	 /* size */
	memcpy(out + 21, raw + 41, 8);	 /* creation time */
	memcpy(out + 29, raw + 57, 16);	 /* uid, gid */
	memcpy(out + 45, raw + 73, 512); /* name, extra */
}
