/* siteconf.c - parse mpictr.conf and user config files into struct
 * siteconf, and check user binds against the site's rules. Pure apart from
 * siteconf_load() reading the file; the format is documented in
 * docs/admin.md and mpictr(1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/bindspec.h"
#include "common/error.h"
#include "config/siteconf.h"
#include "common/util.h"

static void item_free(struct site_item *it)
{
	free(it->value);
	free(it->origin);
	memset(it, 0, sizeof(*it));
}

static void items_free(struct site_items *v)
{
	for (size_t i = 0; i < v->n; i++)
		item_free(&v->v[i]);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

static void profile_free(struct site_profile *p)
{
	free(p->name);
	free(p->origin);
	free(p->description);
	items_free(&p->binds);
	items_free(&p->env);
	items_free(&p->env_prepend);
	item_free(&p->mpi);
	items_free(&p->mpi_deps);
}

void siteconf_free(struct siteconf *sc)
{
	items_free(&sc->binds);
	items_free(&sc->env);
	item_free(&sc->devices);
	item_free(&sc->lock_devices);
	item_free(&sc->transport_env);
	item_free(&sc->lock_transport_env);
	item_free(&sc->user_binds);
	items_free(&sc->allow_binds);
	items_free(&sc->deny_binds);
	item_free(&sc->shm_size);
	item_free(&sc->tmp_size);
	item_free(&sc->writable_tmpfs_size);
	item_free(&sc->require_signature);
	items_free(&sc->trusted_keys);
	item_free(&sc->oversubscribe);
	item_free(&sc->cache_dir);
	for (size_t i = 0; i < sc->nprofiles; i++)
		profile_free(&sc->profiles[i]);
	free(sc->profiles);
	memset(sc, 0, sizeof(*sc));
}

static void item_set(struct site_item *it, const char *value,
		     const char *origin, bool site)
{
	item_free(it);
	it->value = xstrdup(value);
	it->origin = xstrdup(origin);
	it->site = site;
}

static void items_add(struct site_items *v, const char *value,
		      const char *origin, bool site)
{
	v->v = xrealloc(v->v, (v->n + 1) * sizeof(*v->v));
	memset(&v->v[v->n], 0, sizeof(v->v[0]));
	item_set(&v->v[v->n++], value, origin, site);
}

/* Move every element of src to the end of dst. */
static void items_move(struct site_items *dst, struct site_items *src)
{
	if (!src->n)
		return;
	dst->v = xrealloc(dst->v, (dst->n + src->n) * sizeof(*dst->v));
	memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
	dst->n += src->n;
	free(src->v);
	memset(src, 0, sizeof(*src));
}

static void item_move(struct site_item *dst, struct site_item *src)
{
	if (!src->value)
		return;
	item_free(dst);
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

const struct site_profile *siteconf_profile(const struct siteconf *sc,
					    const char *name)
{
	for (size_t i = 0; i < sc->nprofiles; i++)
		if (strcmp(sc->profiles[i].name, name) == 0)
			return &sc->profiles[i];
	return NULL;
}

char *siteconf_profile_names(const struct siteconf *sc)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < sc->nprofiles; i++) {
		if (i)
			sb_puts(&sb, ", ");
		sb_puts(&sb, sc->profiles[i].name);
	}
	if (!sc->nprofiles)
		sb_puts(&sb, "none");
	return sb_steal(&sb);
}

/* ---- parsing ---------------------------------------------------------- */

struct parser {
	const struct siteconf *base; /* what earlier files set (locks) */
	struct siteconf add;	     /* what this file adds */
	struct site_profile *prof;   /* current [profile] section or NULL */
	const char *fname;
	unsigned line;
	bool site;
	char origin[4200];
};

__attribute__((format(printf, 3, 4))) static int
perr(struct parser *ps, mpictr_err **err, const char *fmt, ...)
{
	cleanup_free char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	return err_set(err, 0, "%s:%u: %s", ps->fname, ps->line, msg);
}

static int parse_bool(struct parser *ps, const char *key, const char *v,
		      bool *out, mpictr_err **err)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return perr(ps, err, "invalid value '%s' for '%s' (expected yes or no)",
		    v, key);
}

static int check_env(struct parser *ps, const char *key, const char *v,
		     mpictr_err **err)
{
	const char *eq = strchr(v, '=');

	if (!eq || !env_name_valid(v, (size_t)(eq - v)))
		return perr(ps, err,
			    "invalid '%s' value '%s' (expected NAME=VALUE, "
			    "NAME of letters, digits and '_')",
			    key, v);
	return 0;
}

static int check_abs(struct parser *ps, const char *key, const char *v,
		     mpictr_err **err)
{
	if (v[0] != '/')
		return perr(ps, err, "'%s' needs an absolute path, not '%s'",
			    key, v);
	return 0;
}

static int check_bind(struct parser *ps, const char *v, mpictr_err **err)
{
	struct bind_spec *b = NULL;
	size_t n = 0;
	mpictr_err *e = NULL;
	int rc = 0;

	if (bind_parse(v, &b, &n, &e) < 0) {
		rc = perr(ps, err, "%s", mpictr_err_message(e));
		mpictr_err_free(e);
		return rc;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (b[i].src[0] != '/')
			rc = perr(ps, err,
				  "bind source '%s' is not an absolute path",
				  b[i].src);
	bind_specs_free(b, n);
	return rc;
}

/* Is v a size as siteconf_parse_size takes it? */
static bool size_ok(const char *v)
{
	unsigned long long bytes;
	unsigned pct;

	return siteconf_parse_size(v, &bytes, &pct) == 0;
}

/* require_signature = yes|no, trusted_keys = FILE... (absolute paths,
 * separated by blanks; the key may be repeated). */
static int signature_key(struct parser *ps, const char *key, const char *v,
			 mpictr_err **err)
{
	struct siteconf *a = &ps->add;
	cleanup_free char *copy = NULL;
	char *save = NULL, *tok;
	bool b;

	if (key[0] == 'r') {
		if (parse_bool(ps, key, v, &b, err) < 0)
			return -1;
		item_set(&a->require_signature, b ? "yes" : "no", ps->origin,
			 true);
		return 0;
	}
	copy = xstrdup(v);
	for (tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (check_abs(ps, key, tok, err) < 0)
			return -1;
		items_add(&a->trusted_keys, tok, ps->origin, true);
	}
	return 0;
}

/* A key of the global part. */
static int global_key(struct parser *ps, const char *key, const char *v,
		      mpictr_err **err)
{
	struct siteconf *a = &ps->add;
	static const char *const site_only[] = {
	    "lock_devices",	 "lock_transport_env", "user_binds",
	    "allow_bind",	 "deny_bind",	       "shm_size",
	    "tmp_size",		 "cache_dir",	       "writable_tmpfs_size",
	    "require_signature", "trusted_keys"};
	bool b;

	for (size_t i = 0; i < ARRAY_SIZE(site_only); i++)
		if (!ps->site && strcmp(key, site_only[i]) == 0)
			return perr(ps, err,
				    "'%s' may only be set in the site "
				    "configuration file",
				    key);
	if (strcmp(key, "bind") == 0) {
		if (check_bind(ps, v, err) < 0)
			return -1;
		items_add(&a->binds, v, ps->origin, ps->site);
	} else if (strcmp(key, "env") == 0) {
		if (check_env(ps, key, v, err) < 0)
			return -1;
		items_add(&a->env, v, ps->origin, ps->site);
	} else if (strcmp(key, "devices") == 0) {
		if (ps->base->lock_devices.value)
			return perr(ps, err,
				    "'devices' is locked by the site (%s)",
				    ps->base->lock_devices.origin);
		item_set(&a->devices, v, ps->origin, ps->site);
	} else if (strcmp(key, "transport_env") == 0) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return perr(ps, err,
				    "invalid value '%s' for 'transport_env' "
				    "(expected on or off)",
				    v);
		if (ps->base->lock_transport_env.value)
			return perr(
			    ps, err,
			    "'transport_env' is locked by the site (%s)",
			    ps->base->lock_transport_env.origin);
		item_set(&a->transport_env, v, ps->origin, ps->site);
	} else if (strcmp(key, "lock_devices") == 0 ||
		   strcmp(key, "lock_transport_env") == 0) {
		struct site_item *it =
		    key[5] == 'd' ? &a->lock_devices : &a->lock_transport_env;
		if (parse_bool(ps, key, v, &b, err) < 0)
			return -1;
		if (b)
			item_set(it, "yes", ps->origin, true);
		else
			item_free(it);
	} else if (strcmp(key, "user_binds") == 0 ||
		   strcmp(key, "oversubscribe") == 0) {
		if (parse_bool(ps, key, v, &b, err) < 0)
			return -1;
		item_set(key[0] == 'u' ? &a->user_binds : &a->oversubscribe,
			 b ? "yes" : "no", ps->origin,
			 key[0] == 'u' || ps->site);
	} else if (strcmp(key, "allow_bind") == 0 ||
		   strcmp(key, "deny_bind") == 0) {
		cleanup_free char *clean = NULL;
		size_t l;
		if (check_abs(ps, key, v, err) < 0)
			return -1;
		clean = xstrdup(v);
		l = strlen(clean);
		while (l > 1 && clean[l - 1] == '/')
			clean[--l] = '\0';
		items_add(key[0] == 'a' ? &a->allow_binds : &a->deny_binds,
			  clean, ps->origin, true);
	} else if (strcmp(key, "shm_size") == 0 ||
		   strcmp(key, "tmp_size") == 0) {
		unsigned long long bytes;
		unsigned pct;
		if (siteconf_parse_size(v, &bytes, &pct) < 0)
			return perr(ps, err,
				    "invalid value '%s' for '%s' "
				    "(expected a size such as 512m or 8g: a "
				    "number of bytes with an optional k, m or "
				    "g suffix; or a percentage from 1%% to "
				    "100%% of the memory the job may use)",
				    v, key);
		item_set(key[0] == 's' ? &a->shm_size : &a->tmp_size, v,
			 ps->origin, true);
	} else if (strcmp(key, "writable_tmpfs_size") == 0) {
		if (!size_ok(v))
			return perr(ps, err,
				    "invalid value '%s' for '%s' (a size as "
				    "for 'shm_size': 512m, 8g or a percentage "
				    "such as 25%%)",
				    v, key);
		item_set(&a->writable_tmpfs_size, v, ps->origin, true);
	} else if (strcmp(key, "cache_dir") == 0) {
		/* a shared image cache for `mpictr pull` (pull/cache.h) */
		if (check_abs(ps, key, v, err) < 0)
			return -1;
		item_set(&a->cache_dir, v, ps->origin, true);
	} else if (strcmp(key, "require_signature") == 0 ||
		   strcmp(key, "trusted_keys") == 0) {
		return signature_key(ps, key, v, err);
	} else {
		static const char *const pkeys[] = {
		    "description", "env_prepend", "mpi", "mpi_dep", "mpi_abi"};
		for (size_t i = 0; i < ARRAY_SIZE(pkeys); i++)
			if (strcmp(key, pkeys[i]) == 0)
				return perr(ps, err,
					    "'%s' belongs in a [profile NAME] "
					    "section",
					    key);
		return perr(ps, err, "unknown key '%s'", key);
	}
	return 0;
}

static int profile_key(struct parser *ps, const char *key, const char *v,
		       mpictr_err **err)
{
	struct site_profile *p = ps->prof;

	if (strcmp(key, "description") == 0) {
		free(p->description);
		p->description = xstrdup(v);
	} else if (strcmp(key, "bind") == 0) {
		if (check_bind(ps, v, err) < 0)
			return -1;
		items_add(&p->binds, v, ps->origin, ps->site);
	} else if (strcmp(key, "env") == 0 || strcmp(key, "env_prepend") == 0) {
		if (check_env(ps, key, v, err) < 0)
			return -1;
		items_add(key[3] ? &p->env_prepend : &p->env, v, ps->origin,
			  ps->site);
	} else if (strcmp(key, "mpi") == 0) {
		if (check_abs(ps, key, v, err) < 0)
			return -1;
		if (p->mpi.value)
			return perr(ps, err,
				    "'mpi' given twice in profile '%s' (first "
				    "at %s)",
				    p->name, p->mpi.origin);
		item_set(&p->mpi, v, ps->origin, ps->site);
	} else if (strcmp(key, "mpi_dep") == 0) {
		if (check_abs(ps, key, v, err) < 0)
			return -1;
		items_add(&p->mpi_deps, v, ps->origin, ps->site);
	} else if (strcmp(key, "mpi_abi") == 0) {
		if (strcmp(v, "enforce") && strcmp(v, "warn"))
			return perr(ps, err,
				    "invalid value '%s' for 'mpi_abi' "
				    "(expected enforce or warn)",
				    v);
		p->mpi_warn = strcmp(v, "warn") == 0;
	} else {
		return perr(ps, err, "unknown key '%s' in profile '%s'", key,
			    p->name);
	}
	return 0;
}

static int section(struct parser *ps, char *s, size_t n, mpictr_err **err)
{
	struct siteconf *a = &ps->add;
	const struct site_profile *old;
	char *name;
	size_t nl;

	/* s is "[...]" */
	s[n - 1] = '\0';
	s++;
	if (strncmp(s, "profile", 7) || (s[7] != ' ' && s[7] != '\t'))
		return perr(ps, err,
			    "unknown section '[%s]' (expected [profile NAME])",
			    s);
	name = s + 7;
	name += strspn(name, " \t");
	nl = strlen(name);
	while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t'))
		name[--nl] = '\0';
	if (nl == 0 || nl > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") != nl)
		return perr(ps, err,
			    "invalid profile name '%s' (1 to 64 letters, "
			    "digits, '_', '.', '-')",
			    name);
	old = siteconf_profile(ps->base, name);
	if (!old)
		old = siteconf_profile(a, name);
	if (old)
		return perr(ps, err, "profile '%s' is already defined at %s",
			    name, old->origin);
	a->profiles =
	    xrealloc(a->profiles, (a->nprofiles + 1) * sizeof(*a->profiles));
	ps->prof = &a->profiles[a->nprofiles++];
	memset(ps->prof, 0, sizeof(*ps->prof));
	ps->prof->name = xstrdup(name);
	ps->prof->origin = xstrdup(ps->origin);
	ps->prof->site = ps->site;
	return 0;
}

static int parse_line(struct parser *ps, char *s, mpictr_err **err)
{
	size_t n;
	char *eq, *key, *v;
	size_t kl;

	s += strspn(s, " \t\r");
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	if (n == 0 || s[0] == '#' || s[0] == ';')
		return 0;
	if (s[0] == '[') {
		if (s[n - 1] != ']')
			return perr(ps, err, "unterminated section header");
		return section(ps, s, n, err);
	}
	eq = strchr(s, '=');
	if (!eq)
		return perr(ps, err,
			    "expected 'key = value' or "
			    "'[profile NAME]'");
	key = s;
	kl = (size_t)(eq - s);
	while (kl && (key[kl - 1] == ' ' || key[kl - 1] == '\t'))
		kl--;
	key[kl] = '\0';
	if (kl == 0 || strspn(key, "abcdefghijklmnopqrstuvwxyz_") != kl)
		return perr(ps, err, "invalid key '%s'", key);
	v = eq + 1;
	v += strspn(v, " \t");
	if (!*v && strcmp(key, "description"))
		return perr(ps, err, "empty value for '%s'", key);
	return ps->prof ? profile_key(ps, key, v, err)
			: global_key(ps, key, v, err);
}

/* Append what the parser collected to sc. */
static void merge(struct siteconf *sc, struct siteconf *a)
{
	items_move(&sc->binds, &a->binds);
	items_move(&sc->env, &a->env);
	item_move(&sc->devices, &a->devices);
	item_move(&sc->lock_devices, &a->lock_devices);
	item_move(&sc->transport_env, &a->transport_env);
	item_move(&sc->lock_transport_env, &a->lock_transport_env);
	item_move(&sc->user_binds, &a->user_binds);
	items_move(&sc->allow_binds, &a->allow_binds);
	items_move(&sc->deny_binds, &a->deny_binds);
	item_move(&sc->shm_size, &a->shm_size);
	item_move(&sc->tmp_size, &a->tmp_size);
	item_move(&sc->writable_tmpfs_size, &a->writable_tmpfs_size);
	item_move(&sc->require_signature, &a->require_signature);
	items_move(&sc->trusted_keys, &a->trusted_keys);
	item_move(&sc->oversubscribe, &a->oversubscribe);
	item_move(&sc->cache_dir, &a->cache_dir);
	if (a->nprofiles) {
		sc->profiles =
		    xrealloc(sc->profiles, (sc->nprofiles + a->nprofiles) *
					       sizeof(*sc->profiles));
		memcpy(sc->profiles + sc->nprofiles, a->profiles,
		       a->nprofiles * sizeof(*a->profiles));
		sc->nprofiles += a->nprofiles;
		free(a->profiles);
		a->profiles = NULL;
		a->nprofiles = 0;
	}
}

int siteconf_parse(struct siteconf *sc, const char *text, size_t len,
		   const char *fname, bool site, mpictr_err **err)
{
	struct parser ps = {.base = sc, .fname = fname, .site = site};
	size_t pos = 0;
	int rc = 0;

	if (site && sc->user_loaded)
		return err_set(err, 0,
			       "%s: the site configuration must be loaded "
			       "before user configuration files",
			       fname);
	if (len > SITECONF_MAX_SIZE)
		return err_set(err, EFBIG, "%s: larger than %d bytes", fname,
			       SITECONF_MAX_SIZE);
	if (memchr(text, '\0', len))
		return err_set(err, 0,
			       "%s: contains a NUL byte (not a text "
			       "file?)",
			       fname);
	while (pos < len && rc == 0) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - text) - pos : len - pos;
		cleanup_free char *line = NULL;

		ps.line++;
		snprintf(ps.origin, sizeof(ps.origin), "%s:%u", fname, ps.line);
		if (l > SITECONF_MAX_LINE) {
			rc = perr(&ps, err, "line longer than %d bytes",
				  SITECONF_MAX_LINE);
			break;
		}
		line = xstrndup(text + pos, l);
		rc = parse_line(&ps, line, err);
		pos += l + 1;
	}
	if (rc == 0) {
		merge(sc, &ps.add);
		if (site)
			sc->site_loaded = true;
		else
			sc->user_loaded = true;
	}
	siteconf_free(&ps.add);
	return rc;
}

int siteconf_load(struct siteconf *sc, const char *path, bool site,
		  mpictr_err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;

	text = read_file(path, SITECONF_MAX_SIZE, &len);
	if (!text)
		return err_set(err, errno, "read configuration file '%s'",
			       path);
	return siteconf_parse(sc, text, len, path, site, err);
}

/* ---- values ----------------------------------------------------------- */

int siteconf_parse_size(const char *s, unsigned long long *bytes,
			unsigned *percent)
{
	const unsigned long long max = 1ULL << 50;
	unsigned long long n = 0;
	size_t i = 0;
	int shift = 0;

	*bytes = 0;
	*percent = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		n = n * 10 + (unsigned)(s[i] - '0');
		if (n > max)
			return -1;
	}
	if (i == 0 || n == 0)
		return -1;
	if (s[i] == '%' && !s[i + 1]) {
		if (n > 100)
			return -1;
		*percent = (unsigned)n;
		return 0;
	}
	if (s[i] && s[i + 1])
		return -1;
	switch (s[i]) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -1;
	}
	if (n > max >> shift)
		return -1;
	*bytes = n << shift;
	return 0;
}

/* ---- policy ----------------------------------------------------------- */

bool siteconf_path_below(const char *path, const char *prefix)
{
	size_t l = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, l) == 0 &&
	       (path[l] == '\0' || path[l] == '/');
}

bool siteconf_restricts_binds(const struct siteconf *sc)
{
	return streq0(sc->user_binds.value, "no") || sc->allow_binds.n ||
	       sc->deny_binds.n;
}

int siteconf_check_bind(const struct siteconf *sc, const char *resolved_src,
			enum bind_who who, const char *what, mpictr_err **err)
{
	if (who == BIND_TRUSTED)
		return 0;
	if (who == BIND_USER && streq0(sc->user_binds.value, "no"))
		return err_set(err, 0,
			       "%s refused: the site allows no user binds "
			       "(%s: user_binds = no)",
			       what, sc->user_binds.origin);
	for (size_t i = 0; i < sc->deny_binds.n; i++) {
		const struct site_item *r = &sc->deny_binds.v[i];
		if (siteconf_path_below(resolved_src, r->value))
			return err_set(err, 0,
				       "%s refused: '%s' is denied by %s: "
				       "deny_bind = %s",
				       what, resolved_src, r->origin, r->value);
		if (siteconf_path_below(r->value, resolved_src))
			return err_set(err, 0,
				       "%s refused: '%s' contains '%s', denied "
				       "by %s: deny_bind = %s",
				       what, resolved_src, r->value, r->origin,
				       r->value);
	}
	if (who == BIND_USER && sc->allow_binds.n) {
		struct strbuf sb = STRBUF_INIT;
		int rc;

		for (size_t i = 0; i < sc->allow_binds.n; i++)
			if (siteconf_path_below(resolved_src,
						sc->allow_binds.v[i].value))
				return 0;
		for (size_t i = 0; i < sc->allow_binds.n; i++)
			sb_printf(&sb, "%s%s: allow_bind = %s", i ? "; " : "",
				  sc->allow_binds.v[i].origin,
				  sc->allow_binds.v[i].value);
		rc = err_set(err, 0,
			     "%s refused: '%s' is outside the paths the site "
			     "allows (%s)",
			     what, resolved_src, sb.buf);
		sb_free(&sb);
		return rc;
	}
	return 0;
}

int siteconf_check_user_bind(const struct siteconf *sc,
			     const char *resolved_src, const char *what,
			     mpictr_err **err)
{
	return siteconf_check_bind(sc, resolved_src, BIND_USER, what, err);
}
