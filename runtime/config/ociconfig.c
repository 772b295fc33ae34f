/* ociconfig.c - read the run-time fields of an OCI image config
 * (ociconfig.h) with a small recursive-descent JSON reader: RFC 8259
 * strict (no trailing commas, no comments, no control characters in
 * strings, \u escapes with surrogate pairs to UTF-8), nesting at most 64
 * deep. Values other than the fields of ociconfig.h are checked and
 * skipped; Labels, ExposedPorts and Volumes of another type than an
 * object, StopSignal of another than a string, are skipped too (they only
 * describe the image). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "config/ociconfig.h"

#define MAX_DEPTH 64

struct jr {
	const char *begin, *p, *end, *name;
	mpictr_err **err;
};

static int jfail(struct jr *j, const char *why)
{
	return err_set(j->err, EINVAL, "%s: invalid JSON at byte %zu: %s",
		       j->name, (size_t)(j->p - j->begin), why);
}

static void ws(struct jr *j)
{
	while (j->p < j->end && strchr(" \t\r\n", *j->p) && *j->p)
		j->p++;
}

static bool eat(struct jr *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static int hex4(struct jr *j, unsigned *out)
{
	unsigned v = 0;

	if (j->end - j->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = *j->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static void put_utf8(struct strbuf *sb, unsigned cp)
{
	if (cp < 0x80) {
		sb_putc(sb, (char)cp);
	} else if (cp < 0x800) {
		sb_putc(sb, (char)(0xc0 | (cp >> 6)));
		sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		sb_putc(sb, (char)(0xe0 | (cp >> 12)));
		sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3f)));
		sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
	} else {
		sb_putc(sb, (char)(0xf0 | (cp >> 18)));
		sb_putc(sb, (char)(0x80 | ((cp >> 12) & 0x3f)));
		sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3f)));
		sb_putc(sb, (char)(0x80 | (cp & 0x3f)));
	}
}

static int escape(struct jr *j, struct strbuf *sb)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	unsigned cp, lo;

	if (j->p >= j->end)
		return jfail(j, "unterminated string");
	if (*j->p != 'u') {
		if (!(k = strchr(from, *j->p)) || !*j->p)
			return jfail(j, "bad escape");
		sb_putc(sb, to[k - from]);
		j->p++;
		return 0;
	}
	j->p++;
	if (hex4(j, &cp) < 0)
		return jfail(j, "bad \\u escape");
	if (cp >= 0xd800 && cp < 0xdc00) {
		if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
			return jfail(j, "lone surrogate");
		j->p += 2;
		if (hex4(j, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return jfail(j, "bad surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (cp >= 0xdc00 && cp < 0xe000) {
		return jfail(j, "lone surrogate");
	}
	if (cp == 0)
		return jfail(j, "NUL in a string");
	put_utf8(sb, cp);
	return 0;
}

/* A string at j->p (after whitespace); *out (may be NULL: skip). */
static int jstring(struct jr *j, char **out)
{
	struct strbuf sb = STRBUF_INIT;

	if (!eat(j, '"'))
		return jfail(j, "expected a string");
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			free(sb_steal(&sb));
			return jfail(j, "control character in a string");
		}
		j->p++;
		if (c == '\\') {
			if (escape(j, &sb) < 0) {
				free(sb_steal(&sb));
				return -1;
			}
		} else {
			sb_putc(&sb, (char)c);
		}
	}
	if (j->p >= j->end) {
		free(sb_steal(&sb));
		return jfail(j, "unterminated string");
	}
	j->p++;
	if (out)
		*out =
		    sb.len ? sb_steal(&sb) : (free(sb_steal(&sb)), xstrdup(""));
	else
		free(sb_steal(&sb));
	return 0;
}

static int jnumber(struct jr *j)
{
	const char *s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return jfail(j, "bad value");
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(j, "bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(j, "bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s ? 0 : jfail(j, "bad value");
}

static int jvalue(struct jr *j, int depth);

static int jcontainer(struct jr *j, int depth, char close, bool object)
{
	if (depth > MAX_DEPTH)
		return jfail(j, "nested too deep");
	if (eat(j, close))
		return 0;
	do {
		if (object && (jstring(j, NULL) < 0 || !eat(j, ':')))
			return j->err && *j->err ? -1
						 : jfail(j, "expected ':'");
		if (jvalue(j, depth + 1) < 0)
			return -1;
	} while (eat(j, ','));
	return eat(j, close) ? 0
			     : jfail(j, "expected ',' or a closing bracket");
}

static int jvalue(struct jr *j, int depth)
{
	static const char *const lits[] = {"true", "false", "null"};

	ws(j);
	if (j->p >= j->end)
		return jfail(j, "unexpected end");
	if (*j->p == '"')
		return jstring(j, NULL);
	if (*j->p == '{' || *j->p == '[') {
		bool obj = *j->p == '{';
		j->p++;
		return jcontainer(j, depth, obj ? '}' : ']', obj);
	}
	for (size_t i = 0; i < ARRAY_SIZE(lits); i++) {
		size_t n = strlen(lits[i]);
		if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lits[i], n)) {
			j->p += n;
			return 0;
		}
	}
	return jnumber(j);
}

static bool jnull(struct jr *j)
{
	ws(j);
	if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
		j->p += 4;
		return true;
	}
	return false;
}

/* An array of strings (or null) into *out. */
static int jstrings(struct jr *j, char ***out)
{
	char **v = NULL;

	if (jnull(j))
		return 0;
	if (!eat(j, '['))
		return jfail(j, "expected an array of strings");
	v = xcalloc(1, sizeof(*v));
	if (!eat(j, ']')) {
		do {
			char *s = NULL;
			if (jstring(j, &s) < 0) {
				strv_free(v);
				return -1;
			}
			strv_push_own(&v, s);
		} while (eat(j, ','));
		if (!eat(j, ']')) {
			strv_free(v);
			return jfail(j, "expected ',' or ']'");
		}
	}
	*out = v;
	return 0;
}

/* An object's keys into *keys and, when vals is not NULL, its values
 * (a string as itself, another value as its JSON text) into *vals; null
 * or a value of another type gives nothing. */
static int jkeys(struct jr *j, char ***keys, char ***vals)
{
	char **k = NULL, **v = NULL;

	if (jnull(j))
		return 0;
	if (!eat(j, '{'))
		return jvalue(j, 2);
	k = xcalloc(1, sizeof(*k));
	v = vals ? xcalloc(1, sizeof(*v)) : NULL;
	if (!eat(j, '}')) {
		do {
			char *s = NULL;
			const char *at;

			if (jstring(j, &s) < 0)
				goto bad;
			strv_push_own(&k, s);
			if (!eat(j, ':')) {
				jfail(j, "expected ':'");
				goto bad;
			}
			ws(j);
			at = j->p;
			s = NULL;
			if (vals && j->p < j->end && *j->p == '"') {
				if (jstring(j, &s) < 0)
					goto bad;
			} else if (jvalue(j, 3) < 0) {
				goto bad;
			} else if (vals) {
				s = xstrndup(at, (size_t)(j->p - at));
			}
			if (vals)
				strv_push_own(&v, s);
		} while (eat(j, ','));
		if (!eat(j, '}')) {
			jfail(j, "expected ',' or '}'");
			goto bad;
		}
	}
	*keys = k;
	if (vals)
		*vals = v;
	return 0;
bad:
	strv_free(k);
	strv_free(v);
	return -1;
}

static int field(struct jr *j, const char *key, struct oci_config *c,
		 unsigned *seen)
{
	static const char *const keys[] = {
	    "Entrypoint", "Cmd",	  "Env",     "WorkingDir", "User",
	    "StopSignal", "ExposedPorts", "Volumes", "Labels"};
	char ***lists[] = {&c->entrypoint, &c->cmd, &c->env};
	char **strs[] = {&c->workdir, &c->user, &c->stop_signal};

	for (unsigned i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strcmp(key, keys[i]) != 0)
			continue;
		if (*seen & (1u << i))
			return err_set(j->err, EINVAL, "%s: duplicate key '%s'",
				       j->name, key);
		*seen |= 1u << i;
		if (i < 3)
			return jstrings(j, lists[i]);
		if (i == 5) { /* describes only: another type is skipped */
			ws(j);
			if (j->p < j->end && *j->p == '"')
				return jstring(j, strs[2]);
			return jvalue(j, 2);
		}
		if (i < 5)
			return jnull(j) ? 0 : jstring(j, strs[i - 3]);
		if (i == 6)
			return jkeys(j, &c->exposed_ports, NULL);
		if (i == 7)
			return jkeys(j, &c->volumes, NULL);
		return jkeys(j, &c->label_keys, &c->label_values);
	}
	return jvalue(j, 2);
}

int oci_config_parse(const char *buf, size_t len, const char *name,
		     struct oci_config *c, mpictr_err **err)
{
	struct jr j = {
	    .begin = buf, .p = buf, .end = buf + len, .name = name, .err = err};
	unsigned seen = 0;

	memset(c, 0, sizeof(*c));
	if (len > OCI_CONFIG_MAX)
		return err_set(err, EFBIG, "%s: %zu bytes, at most %u", name,
			       len, OCI_CONFIG_MAX);
	if (!eat(&j, '{'))
		return jfail(&j, "not a JSON object");
	if (!eat(&j, '}')) {
		do {
			cleanup_free char *key = NULL;
			if (jstring(&j, &key) < 0 || !eat(&j, ':') ||
			    field(&j, key, c, &seen) < 0)
				goto bad;
		} while (eat(&j, ','));
		if (!eat(&j, '}'))
			goto bad;
	}
	ws(&j);
	if (j.p == j.end)
		return 0;
bad:
	if (err && !*err)
		jfail(&j, "expected ',' or '}'");
	oci_config_free(c);
	return -1;
}

void oci_config_free(struct oci_config *c)
{
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	strv_free(c->env);
	free(c->workdir);
	free(c->user);
	strv_free(c->label_keys);
	strv_free(c->label_values);
	strv_free(c->exposed_ports);
	strv_free(c->volumes);
	free(c->stop_signal);
	memset(c, 0, sizeof(*c));
}

bool oci_config_user_nonroot(const struct oci_config *c)
{
	static const char *const root[] = {
	    "", "0", "root", "0:0", "root:root", "root:0", "0:root"};

	if (!c->user)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(root); i++)
		if (strcmp(c->user, root[i]) == 0)
			return false;
	return true;
}
