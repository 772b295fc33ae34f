/* auth.c - registry credentials and challenges (auth.h): the files
 * users already have (containers' auth.json, Docker's config.json,
 * Enroot's netrc-style .credentials), WWW-Authenticate parsing
 * (RFC 7235 auth-params; distribution's token.md), base64 for Basic.
 *
 * Prefix legend: json_* is jansson. A secret read here is kept in a
 * struct reg_cred and never formatted into a message: errors name the
 * file and the entry, not the value.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/util.h"
#include "pull/auth.h"

#define CRED_FILE_MAX (1u << 20)

void reg_cred_free(struct reg_cred *c)
{
	if (c->secret)
		explicit_bzero(c->secret, strlen(c->secret));
	free(c->user);
	free(c->secret);
	free(c->origin);
	memset(c, 0, sizeof(*c));
}

/* ---- base64 -------------------------------------------------------------- */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *reg_base64(const void *data, size_t n)
{
	const unsigned char *p = data;
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = b64[(v >> 18) & 63];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

char *reg_unbase64(const char *s, size_t *n)
{
	size_t len = strlen(s), k = 0;
	unsigned v = 0, bits = 0;
	char *out = xmalloc(len / 4 * 3 + 3);

	for (size_t i = 0; i < len; i++) {
		const char *c = strchr(b64, s[i]);
		if (s[i] == '=') {
			if (len - i > 2 || (len % 4) != 0 ||
			    strspn(s + i, "=") != len - i)
				goto bad;
			break;
		}
		if (!c || !s[i])
			goto bad;
		v = (v << 6) | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)((v >> bits) & 0xff);
		}
	}
	out[k] = '\0';
	if (n)
		*n = k;
	return out;
bad:
	free(out);
	return NULL;
}

/* ---- WWW-Authenticate ------------------------------------------------------
 */

void reg_challenge_free(struct reg_challenge *ch)
{
	free(ch->realm);
	free(ch->service);
	free(ch->scope);
	free(ch->error);
	memset(ch, 0, sizeof(*ch));
}

/* One auth-param: token '=' (token | quoted-string). Advances *s. */
static int auth_param(const char **s, char **key, char **val)
{
	const char *p = *s, *k0;
	struct strbuf sb = STRBUF_INIT;

	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	if (!*p)
		return 0;
	k0 = p;
	while (isalnum((unsigned char)*p) || *p == '_' || *p == '-')
		p++;
	if (p == k0 || *p != '=')
		return -1;
	*key = xstrndup(k0, (size_t)(p - k0));
	p++;
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			sb_putc(&sb, *p);
		}
		if (*p != '"') {
			sb_free(&sb);
			free(*key);
			return -1;
		}
		p++;
		*val = sb_steal(&sb);
		if (!*val)
			*val = xstrdup("");
	} else {
		const char *v0 = p;
		while (*p && *p != ',' && *p != ' ')
			p++;
		*val = xstrndup(v0, (size_t)(p - v0));
	}
	*s = p;
	return 1;
}

int reg_challenge_parse(const char *value, struct reg_challenge *ch)
{
	const char *p = value;
	int rc;

	memset(ch, 0, sizeof(*ch));
	while (*p == ' ')
		p++;
	if (strncasecmp(p, "Bearer", 6) == 0 && (p[6] == ' ' || !p[6]))
		ch->scheme = REG_AUTH_BEARER, p += 6;
	else if (strncasecmp(p, "Basic", 5) == 0 && (p[5] == ' ' || !p[5]))
		ch->scheme = REG_AUTH_BASIC, p += 5;
	else
		return -1;
	for (;;) {
		char *k = NULL, *v = NULL, **slot = NULL;
		rc = auth_param(&p, &k, &v);
		if (rc <= 0)
			break;
		if (strcasecmp(k, "realm") == 0)
			slot = &ch->realm;
		else if (strcasecmp(k, "service") == 0)
			slot = &ch->service;
		else if (strcasecmp(k, "scope") == 0)
			slot = &ch->scope;
		else if (strcasecmp(k, "error") == 0)
			slot = &ch->error;
		if (slot && !*slot)
			*slot = steal_ptr(&v);
		free(k);
		free(v);
	}
	if (rc < 0 || (ch->scheme == REG_AUTH_BEARER && !ch->realm)) {
		reg_challenge_free(ch);
		return -1;
	}
	return 0;
}

/* ---- credential files -------------------------------------------------------
 */

/* key as the files write it: "host", "host:port", "https://host/v1/",
 * "host/namespace" (auth.json's per-repository entries are matched by
 * their host: the most specific entry is not needed for pull). */
bool reg_cred_key_matches(const char *key, const char *host)
{
	static const char *const hub[] = {"docker.io", "index.docker.io",
					  "registry-1.docker.io",
					  "registry.hub.docker.com"};
	cleanup_free char *k = NULL;
	char *slash;
	bool key_hub = false, host_hub = false;

	if (str_has_prefix(key, "https://"))
		key += 8;
	else if (str_has_prefix(key, "http://"))
		key += 7;
	k = xstrdup(key);
	slash = strchr(k, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(hub); i++) {
		key_hub |= strcmp(k, hub[i]) == 0;
		host_hub |= strcmp(host, hub[i]) == 0;
	}
	if (key_hub || host_hub)
		return key_hub && host_hub;
	return strcmp(k, host) == 0;
}

/* netrc tokens: whitespace-separated words; "machine M login L password
 * P" groups, "default" ignored. */
static char *netrc_word(const char **p, const char *end)
{
	const char *s = *p, *w;

	while (s < end && isspace((unsigned char)*s))
		s++;
	if (s < end && *s == '#') { /* a comment line */
		while (s < end && *s != '\n')
			s++;
		*p = s;
		return netrc_word(p, end);
	}
	w = s;
	while (s < end && !isspace((unsigned char)*s))
		s++;
	*p = s;
	return s > w ? xstrndup(w, (size_t)(s - w)) : NULL;
}

int reg_netrc_find(const char *text, size_t len, const char *fname,
		   const char *host, const char *user, struct reg_cred *c,
		   mpictr_err **err)
{
	const char *p = text, *end = text + len;
	char *w, *mach = NULL, *login = NULL, *pass = NULL;
	int found = 0;

	memset(c, 0, sizeof(*c));
	for (;;) {
		w = netrc_word(&p, end);
		if (!w || strcmp(w, "machine") == 0) {
			if (mach && login && pass && !found &&
			    reg_cred_key_matches(mach, host) &&
			    (!user || strcmp(user, login) == 0)) {
				c->user = steal_ptr(&login);
				c->secret = steal_ptr(&pass);
				c->origin = xstrdup(fname);
				found = 1;
			}
			free(mach);
			free(login);
			if (pass)
				explicit_bzero(pass, strlen(pass));
			free(pass);
			mach = login = pass = NULL;
			if (!w)
				break;
			free(w);
			mach = netrc_word(&p, end);
			continue;
		}
		if (strcmp(w, "login") == 0 || strcmp(w, "password") == 0) {
			char **slot = w[0] == 'l' ? &login : &pass;
			free(*slot);
			*slot = netrc_word(&p, end);
			if (*slot && (*slot)[0] == '$' && (*slot)[1] == '(' &&
			    slot == &pass) {
				err_set(err, 0,
					"'%s': the password of machine '%s' "
					"is a command ($(...)); mpictr does "
					"not run commands from credential "
					"files",
					fname, mach ? mach : "?");
				free(w);
				found = -1;
				break;
			}
		}
		free(w);
	}
	if (found < 0) {
		free(mach);
		free(login);
		free(pass);
	}
	return found;
}

/* The auths entry of host in a config.json / auth.json text. */
static int json_cred(const char *text, size_t len, const char *fname,
		     const char *host, const char *user, struct reg_cred *c,
		     mpictr_err **err)
{
	json_error_t je;
	json_t *root, *auths, *ent;
	const char *key;
	int found = 0;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return err_set(err, 0, "credentials file '%s': line %d: %s",
			       fname, je.line, je.text);
	auths = json_object_get(root, "auths");
	json_object_foreach(auths, key, ent)
	{
		const char *a = json_string_value(json_object_get(ent, "auth"));
		cleanup_free char *dec = NULL;
		char *colon;
		if (!a || !reg_cred_key_matches(key, host))
			continue;
		dec = reg_unbase64(a, NULL);
		colon = dec ? strchr(dec, ':') : NULL;
		if (!colon) {
			found = err_set(err, 0,
					"credentials file '%s': the 'auth' of "
					"'%s' is not base64 of USER:PASSWORD",
					fname, key);
			break;
		}
		*colon = '\0';
		if (user && strcmp(user, dec) != 0) {
			explicit_bzero(colon + 1, strlen(colon + 1));
			continue;
		}
		c->user = xstrdup(dec);
		c->secret = xstrdup(colon + 1);
		c->origin = xstrdup(fname);
		explicit_bzero(colon + 1, strlen(colon + 1));
		found = 1;
		break;
	}
	json_decref(root);
	return found;
}

static int file_cred(const char *path, bool netrc, const char *host,
		     const char *user, struct reg_cred *c, mpictr_err **err)
{
	size_t len = 0;
	char *text = read_file(path, CRED_FILE_MAX, &len);
	int rc;

	if (!text) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return err_set(err, errno, "read credentials file '%s'", path);
	}
	rc = netrc ? reg_netrc_find(text, len, path, host, user, c, err)
		   : json_cred(text, len, path, host, user, c, err);
	explicit_bzero(text, len);
	free(text);
	return rc;
}

int reg_cred_find(const char *host, const char *repo, const char *user,
		  struct reg_cred *c, mpictr_err **err)
{
	const char *home = getenv("HOME"), *v;
	char *paths[8] = {NULL};
	bool netrc[8] = {false};
	size_t n = 0;
	int rc = 0;

	(void)repo;
	memset(c, 0, sizeof(*c));
	if ((v = getenv("REGISTRY_AUTH_FILE")) && *v)
		paths[n++] = xstrdup(v);
	if ((v = getenv("XDG_RUNTIME_DIR")) && *v)
		paths[n++] = xasprintf("%s/containers/auth.json", v);
	if ((v = getenv("XDG_CONFIG_HOME")) && *v)
		paths[n++] = xasprintf("%s/containers/auth.json", v);
	else if (home)
		paths[n++] = xasprintf("%s/.config/containers/auth.json", home);
	if ((v = getenv("DOCKER_CONFIG")) && *v)
		paths[n++] = xasprintf("%s/config.json", v);
	else if (home)
		paths[n++] = xasprintf("%s/.docker/config.json", home);
	netrc[n] = true;
	if ((v = getenv("ENROOT_CONFIG_PATH")) && *v)
		paths[n++] = xasprintf("%s/.credentials", v);
	else if ((v = getenv("XDG_CONFIG_HOME")) && *v)
		paths[n++] = xasprintf("%s/enroot/.credentials", v);
	else if (home)
		paths[n++] = xasprintf("%s/.config/enroot/.credentials", home);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = file_cred(paths[i], netrc[i], host, user, c, err);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return rc;
}
