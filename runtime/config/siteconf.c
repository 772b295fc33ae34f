/* siteconf.c - parse mpictr.conf and user config files into struct
 * siteconf, and check user binds against the site's rules. Pure apart from
 * siteconf_load() reading the file; the format is documented in
 * docs/admin.md and mpictr(1). Every key is a row of siteconf_keys: the
 * parser, merging, freeing and siteconf_container_digest() follow it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/bindspec.h"
#include "common/error.h"
#include "config/siteconf.h"
#include "common/util.h"

/* ---- validators (site_key.check) -------------------------------------- */

static int check_bool(const struct site_key *k, const char *v, char **out,
		      char **why)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = xstrdup("yes");
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*out = xstrdup("no");
			return 0;
		}
	}
	*why = xasprintf("invalid value '%s' for '%s' (expected yes or no)", v,
			 k->name);
	return -1;
}

/* A lock: yes sets it, no clears it. */
static int check_lock(const struct site_key *k, const char *v, char **out,
		      char **why)
{
	if (check_bool(k, v, out, why) < 0)
		return -1;
	if (strcmp(*out, "yes") == 0)
		return 0;
	free(*out);
	*out = NULL;
	return 1;
}

static int check_on_off(const struct site_key *k, const char *v, char **out,
			char **why)
{
	(void)out;
	if (strcmp(v, "on") && strcmp(v, "off")) {
		*why = xasprintf("invalid value '%s' for '%s' (expected on or "
				 "off)",
				 v, k->name);
		return -1;
	}
	return 0;
}

static int check_mpi_abi(const struct site_key *k, const char *v, char **out,
			 char **why)
{
	if (strcmp(v, "enforce") && strcmp(v, "warn")) {
		*why = xasprintf("invalid value '%s' for '%s' (expected "
				 "enforce or warn)",
				 v, k->name);
		return -1;
	}
	*out = xstrdup(strcmp(v, "warn") == 0 ? "yes" : "no");
	return 0;
}

static int check_env(const struct site_key *k, const char *v, char **out,
		     char **why)
{
	const char *eq = strchr(v, '=');

	(void)out;
	if (!eq || !env_name_valid(v, (size_t)(eq - v))) {
		*why = xasprintf("invalid '%s' value '%s' (expected "
				 "NAME=VALUE, NAME of letters, digits and "
				 "'_')",
				 k->name, v);
		return -1;
	}
	return 0;
}

static int check_abs(const struct site_key *k, const char *v, char **out,
		     char **why)
{
	(void)out;
	if (v[0] != '/') {
		*why = xasprintf("'%s' needs an absolute path, not '%s'",
				 k->name, v);
		return -1;
	}
	return 0;
}

/* An absolute path, stored without trailing slashes. */
static int check_prefix(const struct site_key *k, const char *v, char **out,
			char **why)
{
	size_t l;

	if (check_abs(k, v, out, why) < 0)
		return -1;
	*out = xstrdup(v);
	l = strlen(*out);
	while (l > 1 && (*out)[l - 1] == '/')
		(*out)[--l] = '\0';
	return 0;
}

static int check_bind(const struct site_key *k, const char *v, char **out,
		      char **why)
{
	struct bind_spec *b = NULL;
	size_t n = 0;
	mpictr_err *e = NULL;

	(void)k;
	(void)out;
	if (bind_parse(v, &b, &n, &e) < 0) {
		*why = xstrdup(mpictr_err_message(e));
		mpictr_err_free(e);
		return -1;
	}
	for (size_t i = 0; i < n && !*why; i++)
		if (b[i].src[0] != '/')
			*why = xasprintf("bind source '%s' is not an absolute "
					 "path",
					 b[i].src);
	bind_specs_free(b, n);
	return *why ? -1 : 0;
}

/* Is v a size as siteconf_parse_size takes it? */
static bool size_ok(const char *v)
{
	unsigned long long bytes;
	unsigned pct;

	return siteconf_parse_size(v, &bytes, &pct) == 0;
}

static int check_size(const struct site_key *k, const char *v, char **out,
		      char **why)
{
	(void)out;
	if (size_ok(v))
		return 0;
	*why = xasprintf("invalid value '%s' for '%s' (expected a size such "
			 "as 512m or 8g: a number of bytes with an optional "
			 "k, m or g suffix; or a percentage from 1%% to 100%% "
			 "of the memory the job may use)",
			 v, k->name);
	return -1;
}

static int check_tmpfs_size(const struct site_key *k, const char *v, char **out,
			    char **why)
{
	(void)out;
	if (size_ok(v))
		return 0;
	*why = xasprintf("invalid value '%s' for '%s' (a size as for "
			 "'shm_size': 512m, 8g or a percentage such as 25%%)",
			 v, k->name);
	return -1;
}

/* ---- the table -------------------------------------------------------- */

#define G(f) false, offsetof(struct siteconf, f)
#define P(f) true, offsetof(struct site_profile, f)

/* {name, kind, section and field, site_only, container, once, lock,
 * check, example}. container: what planning makes part of the container
 * (its mounts, sizes, devices, the image it accepts, the policy its binds
 * are checked against, the environment it is given) is in; only the
 * profile's description, the image cache of `mpictr pull` (the image is
 * keyed by its real path) and oversubscribe (like --no-oversubscribe:
 * MPI_Comm_spawn's limit, not the container) are out. */
const struct site_key siteconf_keys[] = {
    {"bind", SITE_KEY_LIST, G(binds), false, true, false, NULL, check_bind,
     "/srv"},
    {"env", SITE_KEY_LIST, G(env), false, true, false, NULL, check_env,
     "SITE=1"},
    {"devices", SITE_KEY_ITEM, G(devices), false, true, false, "lock_devices",
     NULL, "none"},
    {"lock_devices", SITE_KEY_ITEM, G(lock_devices), true, true, false, NULL,
     check_lock, "yes"},
    {"transport_env", SITE_KEY_ITEM, G(transport_env), false, true, false,
     "lock_transport_env", check_on_off, "off"},
    {"lock_transport_env", SITE_KEY_ITEM, G(lock_transport_env), true, true,
     false, NULL, check_lock, "yes"},
    {"user_binds", SITE_KEY_ITEM, G(user_binds), true, true, false, NULL,
     check_bool, "no"},
    {"allow_bind", SITE_KEY_LIST, G(allow_binds), true, true, false, NULL,
     check_prefix, "/home"},
    {"deny_bind", SITE_KEY_LIST, G(deny_binds), true, true, false, NULL,
     check_prefix, "/etc"},
    {"writable_tmpfs_size", SITE_KEY_ITEM, G(writable_tmpfs_size), true, true,
     false, NULL, check_tmpfs_size, "64m"},
    {"shm_size", SITE_KEY_ITEM, G(shm_size), true, true, false, NULL,
     check_size, "25%"},
    {"cache_dir", SITE_KEY_ITEM, G(cache_dir), true, false, false, NULL,
     check_abs, "/var/cache/mpictr"},
    {"offline_cache", SITE_KEY_ITEM, G(offline_cache), true, false, false, NULL,
     check_bool, "no"},
    {"tmp_size", SITE_KEY_ITEM, G(tmp_size), true, true, false, NULL,
     check_size, "1g"},
    {"require_signature", SITE_KEY_ITEM, G(require_signature), true, true,
     false, NULL, check_bool, "yes"},
    {"trusted_keys", SITE_KEY_WORDS, G(trusted_keys), true, true, false, NULL,
     check_abs, "/etc/mpictr/a.pub /etc/mpictr/b.pub"},
    {"signed_overlay", SITE_KEY_ITEM, G(signed_overlay), true, true, false,
     NULL, check_bool, "yes"},
    {"signed_writable_tmpfs", SITE_KEY_ITEM, G(signed_writable_tmpfs), true,
     true, false, NULL, check_bool, "no"},
    {"signed_save", SITE_KEY_ITEM, G(signed_save), true, true, false, NULL,
     check_bool, "no"},
    {"oversubscribe", SITE_KEY_ITEM, G(oversubscribe), false, false, false,
     NULL, check_bool, "no"},
    {"description", SITE_KEY_TEXT, P(description), false, false, false, NULL,
     NULL, "host MPI"},
    {"bind", SITE_KEY_LIST, P(binds), false, true, false, NULL, check_bind,
     "/opt/mpi:/opt/mpi:ro"},
    {"env", SITE_KEY_LIST, P(env), false, true, false, NULL, check_env,
     "MPI=1"},
    {"env_prepend", SITE_KEY_LIST, P(env_prepend), false, true, false, NULL,
     check_env, "PATH=/opt/mpi/bin"},
    {"mpi", SITE_KEY_ITEM, P(mpi), false, true, true, NULL, check_abs,
     "/opt/mpi/lib/libmpi.so.40"},
    {"mpi_dep", SITE_KEY_LIST, P(mpi_deps), false, true, false, NULL, check_abs,
     "/opt/mpi/lib/libhwloc.so.15"},
    {"mpi_abi", SITE_KEY_FLAG, P(mpi_warn), false, true, false, NULL,
     check_mpi_abi, "warn"},
};
const size_t siteconf_nkeys = ARRAY_SIZE(siteconf_keys);

#undef G
#undef P

static const struct site_key *key_find(const char *name, bool profile)
{
	for (size_t i = 0; i < siteconf_nkeys; i++)
		if (siteconf_keys[i].profile == profile &&
		    strcmp(siteconf_keys[i].name, name) == 0)
			return &siteconf_keys[i];
	return NULL;
}

void *siteconf_key_field(const void *base, const struct site_key *k)
{
	return (char *)base + k->offset;
}

/* ---- values of the keys ----------------------------------------------- */

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

/* Free the fields of the keys of one section (base: sc or a profile). */
static void keys_free(void *base, bool profile)
{
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];
		void *f = siteconf_key_field(base, k);

		if (k->profile != profile)
			continue;
		switch (k->kind) {
		case SITE_KEY_ITEM:
			item_free(f);
			break;
		case SITE_KEY_LIST:
		case SITE_KEY_WORDS:
			items_free(f);
			break;
		case SITE_KEY_TEXT:
			free(*(char **)f);
			*(char **)f = NULL;
			break;
		case SITE_KEY_FLAG:
		default:
			*(bool *)f = false;
			break;
		}
	}
}

static void profile_free(struct site_profile *p)
{
	free(p->name);
	free(p->origin);
	keys_free(p, true);
}

void siteconf_free(struct siteconf *sc)
{
	keys_free(sc, false);
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

static uint64_t digest_items(uint64_t h, const struct site_items *it)
{
	h = fnv1a_u64(h, it->n);
	for (size_t i = 0; i < it->n; i++)
		h = fnv1a_str(h, it->v[i].value);
	return h;
}

static uint64_t digest_keys(uint64_t h, const void *base, bool profile)
{
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];
		const void *f = siteconf_key_field(base, k);

		if (k->profile != profile || !k->container)
			continue;
		h = fnv1a_str(h, k->name);
		switch (k->kind) {
		case SITE_KEY_ITEM:
			h = fnv1a_str(h, ((const struct site_item *)f)->value);
			break;
		case SITE_KEY_LIST:
		case SITE_KEY_WORDS:
			h = digest_items(h, f);
			break;
		case SITE_KEY_TEXT:
			h = fnv1a_str(h, *(char *const *)f);
			break;
		case SITE_KEY_FLAG:
		default:
			h = fnv1a_u64(h, *(const bool *)f);
			break;
		}
	}
	return h;
}

uint64_t siteconf_container_digest(const struct siteconf *sc)
{
	uint64_t h = digest_keys(FNV1A_INIT, sc, false);

	h = fnv1a_u64(h, sc->nprofiles);
	for (size_t i = 0; i < sc->nprofiles; i++) {
		h = fnv1a_str(h, sc->profiles[i].name);
		h = digest_keys(h, &sc->profiles[i], true);
	}
	return h;
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

/* Check one value of k and store it in field f. */
static int key_value(struct parser *ps, const struct site_key *k, void *f,
		     const char *v, mpictr_err **err)
{
	cleanup_free char *out = NULL, *why = NULL;
	int rc = k->check ? k->check(k, v, &out, &why) : 0;

	if (rc < 0)
		return perr(ps, err, "%s", why);
	if (k->lock) {
		const struct site_item *lock =
		    siteconf_key_field(ps->base, key_find(k->lock, false));
		if (lock->value)
			return perr(ps, err, "'%s' is locked by the site (%s)",
				    k->name, lock->origin);
	}
	if (k->once && ((struct site_item *)f)->value)
		return perr(ps, err,
			    "'%s' given twice in profile '%s' (first "
			    "at %s)",
			    k->name, ps->prof->name,
			    ((struct site_item *)f)->origin);
	if (!out)
		out = xstrdup(v);
	switch (k->kind) {
	case SITE_KEY_ITEM:
		if (rc == 1)
			item_free(f);
		else
			item_set(f, out, ps->origin, ps->site);
		break;
	case SITE_KEY_LIST:
	case SITE_KEY_WORDS:
		items_add(f, out, ps->origin, ps->site);
		break;
	case SITE_KEY_TEXT:
		free(*(char **)f);
		*(char **)f = xstrdup(out);
		break;
	case SITE_KEY_FLAG:
	default:
		*(bool *)f = strcmp(out, "yes") == 0;
		break;
	}
	return 0;
}

static int key_line(struct parser *ps, const char *key, const char *v,
		    mpictr_err **err)
{
	const struct site_key *k = key_find(key, ps->prof != NULL);
	void *f;

	if (!k && ps->prof)
		return perr(ps, err, "unknown key '%s' in profile '%s'", key,
			    ps->prof->name);
	if (!k && key_find(key, true))
		return perr(ps, err, "'%s' belongs in a [profile NAME] section",
			    key);
	if (!k)
		return perr(ps, err, "unknown key '%s'", key);
	if (k->site_only && !ps->site)
		return perr(ps, err,
			    "'%s' may only be set in the site configuration "
			    "file",
			    key);
	f = siteconf_key_field(ps->prof ? (void *)ps->prof : (void *)&ps->add,
			       k);
	if (k->kind == SITE_KEY_WORDS) {
		cleanup_free char *copy = xstrdup(v);
		char *save = NULL, *tok;

		for (tok = strtok_r(copy, " \t", &save); tok;
		     tok = strtok_r(NULL, " \t", &save))
			if (key_value(ps, k, f, tok, err) < 0)
				return -1;
		return 0;
	}
	return key_value(ps, k, f, v, err);
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

/* May key be empty (free text)? In either section: a profile key given in
 * the global part gets the message that says where it belongs. */
static bool empty_ok(const char *key)
{
	for (size_t i = 0; i < siteconf_nkeys; i++)
		if (siteconf_keys[i].kind == SITE_KEY_TEXT &&
		    strcmp(siteconf_keys[i].name, key) == 0)
			return true;
	return false;
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
	if (!*v && !empty_ok(key))
		return perr(ps, err, "empty value for '%s'", key);
	return key_line(ps, key, v, err);
}

/* Append what the parser collected to sc. */
static void merge(struct siteconf *sc, struct siteconf *a)
{
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];

		if (k->profile)
			continue;
		if (k->kind == SITE_KEY_ITEM)
			item_move(siteconf_key_field(sc, k),
				  siteconf_key_field(a, k));
		else
			items_move(siteconf_key_field(sc, k),
				   siteconf_key_field(a, k));
	}
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
