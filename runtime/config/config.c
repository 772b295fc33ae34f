/* config.c - mpictr_config setters and the option table (config.h). Only
 * mpictr_site_config_path, mpictr_config_load_site and config_site_trust
 * touch the file system (they read the site file); validation against the
 * host happens when the plan is built.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "common/error.h"
#include "common/util.h"

extern char **environ;

MPICTR_PUBLIC mpictr_config *mpictr_config_new(void)
{
	mpictr_config *cfg = xcalloc(1, sizeof(*cfg));

	cfg->transport_env = true;
	cfg->host_env = strv_dup(environ);
	return cfg;
}

MPICTR_PUBLIC void mpictr_config_free(mpictr_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->image);
	strv_free(cfg->argv);
	bind_specs_free(cfg->binds, cfg->nbinds);
	strv_free(cfg->user_env);
	free(cfg->pwd);
	free(cfg->pwd_default);
	strv_free(cfg->host_env);
	free(cfg->devices);
	free(cfg->bind_to);
	siteconf_free(&cfg->site);
	strv_free(cfg->profiles);
	free(cfg->inst_origin);
	strv_free(cfg->inst_image_dirs);
	free(cfg->overlay_dir);
	free(cfg->home_src);
	free(cfg->home_dst);
	strv_free(cfg->file_env);
	free(cfg->shell_path);
	free(cfg);
}

static int check_arg(const void *p, const char *what, mpictr_err **err)
{
	if (!p)
		return err_set(err, EINVAL, "missing %s", what);
	return 0;
}

/* A setter's own rule for its value: 0, or -1 with *err set. */
typedef int (*str_rule)(const char *value, mpictr_err **err);

/* The one body of the plain string setters: cfg and value given ("missing
 * WHAT" otherwise), the setter's rule, then a copy of value replaces the
 * string at offset AT of the config. */
static int set_str(mpictr_config *cfg, size_t at, const char *value,
		   const char *what, str_rule rule, mpictr_err **err)
{
	char **field;

	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(value, what, err) < 0 || rule(value, err) < 0)
		return -1;
	field = (char **)((char *)cfg + at);
	free(*field);
	*field = xstrdup(value);
	return 0;
}

#define OPT_AT(field) offsetof(struct mpictr_config, field)

static int image_rule(const char *path, mpictr_err **err)
{
	return *path ? 0 : err_set(err, 0, "empty image path");
}

MPICTR_PUBLIC int mpictr_config_set_image(mpictr_config *cfg, const char *path,
					  mpictr_err **err)
{
	return set_str(cfg, OPT_AT(image), path, "image path", image_rule, err);
}

static int set_argv(mpictr_config *cfg, int argc, char *const argv[],
		    bool runscript, mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (argc < (runscript ? 0 : 1) || (argc > 0 && !argv))
		return err_set(err, 0, "missing command");
	if (argc > 65536)
		return err_set(err, 0,
			       "too many arguments (%d, at most "
			       "65536)",
			       argc);
	strv_free(cfg->argv);
	cfg->argv = xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++) {
		if (!argv[i]) {
			strv_free(cfg->argv);
			cfg->argv = NULL;
			return err_set(err, 0, "argument %d is NULL", i);
		}
		cfg->argv[i] = xstrdup(argv[i]);
	}
	if (!runscript && !*cfg->argv[0])
		return err_set(err, 0, "empty command name");
	cfg->runscript = runscript;
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_command(mpictr_config *cfg, int argc,
					    char *const argv[],
					    mpictr_err **err)
{
	return set_argv(cfg, argc, argv, false, err);
}

MPICTR_PUBLIC int mpictr_config_set_runscript(mpictr_config *cfg, int argc,
					      char *const argv[],
					      mpictr_err **err)
{
	return set_argv(cfg, argc, argv, true, err);
}

MPICTR_PUBLIC int mpictr_config_add_bind(mpictr_config *cfg, const char *spec,
					 mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	return bind_parse(spec, &cfg->binds, &cfg->nbinds, err);
}

MPICTR_PUBLIC int mpictr_config_set_env(mpictr_config *cfg, const char *name,
					const char *value, mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(name, "variable name", err) < 0 ||
	    check_arg(value, "variable value", err) < 0)
		return -1;
	if (!env_name_valid(name, strlen(name)))
		return err_set(err, 0,
			       "invalid environment variable name '%s' "
			       "(letters, digits and '_', not starting with "
			       "a digit)",
			       name);
	env_set(&cfg->user_env, name, value);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_add_env_list(mpictr_config *cfg,
					     const char *list, mpictr_err **err)
{
	cleanup_strv char **pairs = NULL;
	cleanup_free char *copy = NULL;
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(list, "--env", err) < 0)
		return -1;
	copy = xstrdup(list);
	/* strsep keeps empty pieces: "P=/a," is P with value "/a,". */
	for (char *p = copy, *piece; (piece = strsep(&p, ",")) != NULL;) {
		const char *eq = strchr(piece, '=');
		size_t n = strv_len(pairs);

		if (eq && eq > piece &&
		    env_name_valid(piece, (size_t)(eq - piece))) {
			strv_push(&pairs, piece);
		} else if (n > 0) {
			char *joined = xasprintf("%s,%s", pairs[n - 1], piece);

			free(pairs[n - 1]);
			pairs[n - 1] = joined;
		} else {
			return err_set(err, 0,
				       "invalid --env '%s' (expected "
				       "NAME=VALUE[,NAME=VALUE...])",
				       list);
		}
	}
	for (size_t i = 0; pairs && pairs[i]; i++) {
		char *eq = strchr(pairs[i], '=');

		*eq = '\0';
		if (mpictr_config_set_env(cfg, pairs[i], eq + 1, err) < 0)
			return -1;
	}
	return 0;
}

MPICTR_PUBLIC int mpictr_config_add_env_binds(mpictr_config *cfg,
					      mpictr_err **err)
{
	static const char *const vars[] = {
	    "APPTAINER_BIND", "APPTAINER_BINDPATH", "SINGULARITY_BIND",
	    "SINGULARITY_BINDPATH"};
	const char *v = NULL, *name = NULL;

	if (check_arg(cfg, "config", err) < 0)
		return -1;
	for (size_t i = 0; !v && i < sizeof(vars) / sizeof(*vars); i++) {
		v = env_get(cfg->host_env, vars[i]);
		name = vars[i];
		if (v && !*v)
			v = NULL;
	}
	if (!v)
		return 0;
	if (bind_parse(v, &cfg->binds, &cfg->nbinds, err) < 0)
		return err_wrap(err, "%s", name);
	return 0;
}

MPICTR_PUBLIC int
mpictr_config_set_instance_origin(mpictr_config *cfg, const char *origin,
				  const char *const *image_dirs,
				  mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(origin, "origin", err) < 0)
		return -1;
	if (!*origin || strchr(origin, '\n'))
		return err_set(err, EINVAL, "invalid instance origin '%s'",
			       origin);
	for (size_t i = 0; image_dirs && image_dirs[i]; i++)
		if (image_dirs[i][0] != '/')
			return err_set(err, EINVAL,
				       "image directory '%s' is not an "
				       "absolute path",
				       image_dirs[i]);
	free(cfg->inst_origin);
	cfg->inst_origin = xstrdup(origin);
	strv_free(cfg->inst_image_dirs);
	cfg->inst_image_dirs = NULL;
	for (size_t i = 0; image_dirs && image_dirs[i]; i++)
		strv_push(&cfg->inst_image_dirs, image_dirs[i]);
	return 0;
}

static int pwd_rule(const char *dir, mpictr_err **err)
{
	if (dir[0] != '/')
		return err_set(err, 0,
			       "invalid --pwd '%s': not an absolute path", dir);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_pwd(mpictr_config *cfg, const char *dir,
					mpictr_err **err)
{
	return set_str(cfg, OPT_AT(pwd), dir, "directory", pwd_rule, err);
}

MPICTR_PUBLIC int mpictr_config_set_pwd_default(mpictr_config *cfg,
						const char *dir,
						mpictr_err **err)
{
	return set_str(cfg, OPT_AT(pwd_default), dir, "directory", pwd_rule,
		       err);
}

MPICTR_PUBLIC int mpictr_config_set_host_env(mpictr_config *cfg,
					     char *const envp[],
					     mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	strv_free(cfg->host_env);
	cfg->host_env = strv_dup(envp);
	return 0;
}

/* In the order an instance names a refused option (the first given). */
const struct config_opt config_opts[] = {
    {"-B/--bind", CONFIG_BINDS, OPT_AT(binds), 0, true, NULL},
    {"--contain", CONFIG_BOOL, OPT_AT(contain), MPICTR_FLAG_CONTAIN, true,
     "contain"},
    {"--fakeroot", CONFIG_BOOL, OPT_AT(fakeroot), MPICTR_FLAG_FAKEROOT, true,
     "fakeroot"},
    {"--gpu", CONFIG_BOOL, OPT_AT(gpu), MPICTR_FLAG_GPU, true, "gpu"},
    {"--inject-verbs", CONFIG_BOOL, OPT_AT(inject_verbs),
     MPICTR_FLAG_INJECT_VERBS, true, "verbs"},
    {"--devices", CONFIG_STR, OPT_AT(devices), 0, true, "devices"},
    {"--no-share", CONFIG_BOOL, OPT_AT(no_share), MPICTR_FLAG_NO_SHARE, true,
     NULL},
    {"--profile", CONFIG_STRV, OPT_AT(profiles), 0, true, "profile"},
    {"--tag-output", CONFIG_BOOL, OPT_AT(tag_output), MPICTR_FLAG_TAG_OUTPUT,
     false, NULL},
    {"--no-oversubscribe", CONFIG_BOOL, OPT_AT(no_oversubscribe),
     MPICTR_FLAG_NO_OVERSUBSCRIBE, false, NULL},
    {"--transport-env", CONFIG_BOOL, OPT_AT(transport_env),
     MPICTR_FLAG_TRANSPORT_ENV, false, NULL},
    {"--bind-to", CONFIG_STR, OPT_AT(bind_to), 0, false, NULL},
    {"--pwd", CONFIG_STR, OPT_AT(pwd), 0, false, NULL},
    {"--writable-tmpfs", CONFIG_BOOL, OPT_AT(writable_tmpfs),
     MPICTR_FLAG_WRITABLE_TMPFS, true, NULL},
    {"--overlay", CONFIG_STR, OPT_AT(overlay_dir), 0, true, NULL},
    {"--home", CONFIG_STR, OPT_AT(home_src), 0, true, NULL},
    {"--home", CONFIG_STR, OPT_AT(home_dst), 0, true, NULL},
    {"--no-home", CONFIG_BOOL, OPT_AT(no_home), MPICTR_FLAG_NO_HOME, true,
     NULL},
    {"--cleanenv", CONFIG_BOOL, OPT_AT(cleanenv), MPICTR_FLAG_CLEANENV, false,
     NULL},
};
const size_t config_nopts = sizeof(config_opts) / sizeof(config_opts[0]);

static void *opt_field(const struct mpictr_config *cfg,
		       const struct config_opt *o)
{
	return (char *)cfg + o->offset;
}

bool config_opt_given(const struct mpictr_config *cfg,
		      const struct config_opt *o)
{
	void *f = opt_field(cfg, o);

	switch (o->kind) {
	case CONFIG_BOOL:
		return *(bool *)f;
	case CONFIG_STR:
		return *(char **)f != NULL;
	case CONFIG_STRV:
		return strv_len(*(char ***)f) > 0;
	case CONFIG_BINDS:
	default:
		return cfg->nbinds > 0;
	}
}

void config_opt_values(const struct mpictr_config *cfg,
		       const struct config_opt *o,
		       void (*fn)(void *data, const char *value), void *data)
{
	void *f = opt_field(cfg, o);
	char **v;

	switch (o->kind) {
	case CONFIG_BOOL:
		fn(data, *(bool *)f ? "1" : "0");
		break;
	case CONFIG_STR:
		if (*(char **)f)
			fn(data, *(char **)f);
		break;
	case CONFIG_STRV:
		for (v = *(char ***)f; v && *v; v++)
			fn(data, *v);
		break;
	case CONFIG_BINDS:
	default:
		for (size_t i = 0; i < cfg->nbinds; i++) {
			fn(data, cfg->binds[i].src);
			fn(data, cfg->binds[i].dst);
			fn(data, cfg->binds[i].ro ? "ro" : "rw");
		}
		break;
	}
}

void config_opt_put(struct mpictr_config *cfg, const struct config_opt *o,
		    const char *value)
{
	void *f = opt_field(cfg, o);

	switch (o->kind) {
	case CONFIG_BOOL:
		*(bool *)f = strcmp(value, "0") != 0;
		break;
	case CONFIG_STR:
		free(*(char **)f);
		*(char **)f = xstrdup(value);
		break;
	case CONFIG_STRV:
		strv_push((char ***)f, value);
		break;
	case CONFIG_BINDS:
	default:
		break;
	}
}

void config_opt_clear(struct mpictr_config *cfg, const struct config_opt *o)
{
	void *f = opt_field(cfg, o);

	switch (o->kind) {
	case CONFIG_BOOL:
		*(bool *)f = false;
		break;
	case CONFIG_STR:
		free(*(char **)f);
		*(char **)f = NULL;
		break;
	case CONFIG_STRV:
		strv_free(*(char ***)f);
		*(char ***)f = NULL;
		break;
	case CONFIG_BINDS:
	default:
		bind_specs_free(cfg->binds, cfg->nbinds);
		cfg->binds = NULL;
		cfg->nbinds = 0;
		break;
	}
}

const struct config_opt *config_container_given(const struct mpictr_config *cfg)
{
	for (size_t i = 0; i < config_nopts; i++)
		if (config_opts[i].container &&
		    config_opt_given(cfg, &config_opts[i]))
			return &config_opts[i];
	return NULL;
}

static void hash_value(void *data, const char *value)
{
	uint64_t *h = data;

	*h = fnv1a_str(*h, value);
}

uint64_t config_container_digest(const struct mpictr_config *cfg)
{
	uint64_t h = FNV1A_INIT;

	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];

		if (!o->container)
			continue;
		/* The name, then the values: a value never slides into the
		 * next option's. */
		h = fnv1a_str(h, o->option);
		config_opt_values(cfg, o, hash_value, &h);
	}
	return h;
}

MPICTR_PUBLIC int mpictr_config_set_flag(mpictr_config *cfg,
					 enum mpictr_flag flag, int on,
					 mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	for (size_t i = 0; i < config_nopts; i++) {
		if (config_opts[i].flag != (int)flag || !flag)
			continue;
		*(bool *)opt_field(cfg, &config_opts[i]) = on != 0;
		if (flag == MPICTR_FLAG_TRANSPORT_ENV)
			cfg->transport_env_set = true;
		return 0;
	}
	return err_set(err, EINVAL, "unknown flag %d", (int)flag);
}

MPICTR_PUBLIC int mpictr_config_set_nranks(mpictr_config *cfg, int n,
					   mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (n < 0 || n > 4096)
		return err_set(err, 0,
			       "invalid rank count %d (expected 1..4096)", n);
	cfg->nranks = n;
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_universe_size(mpictr_config *cfg, int n,
						  mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (n < 0 || n > 65536)
		return err_set(
		    err, 0, "invalid universe size %d (expected 1..65536)", n);
	cfg->universe_size = n;
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_timeout(mpictr_config *cfg, int seconds,
					    mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (seconds < 0 || seconds > 31 * 24 * 3600)
		return err_set(err, 0,
			       "invalid --timeout %d (expected 1..2678400 "
			       "seconds)",
			       seconds);
	cfg->timeout_s = seconds;
	return 0;
}

static int devices_rule(const char *spec, mpictr_err **err)
{
	return *spec ? 0
		     : err_set(err, 0,
			       "invalid --devices '': empty (use "
			       "none, all or a comma list)");
}

MPICTR_PUBLIC int mpictr_config_set_devices(mpictr_config *cfg,
					    const char *spec, mpictr_err **err)
{
	return set_str(cfg, OPT_AT(devices), spec, "device list", devices_rule,
		       err);
}

static int bind_to_rule(const char *policy, mpictr_err **err)
{
	if (strcmp(policy, "none") && strcmp(policy, "core"))
		return err_set(err, 0,
			       "invalid --bind-to '%s' (expected core or "
			       "none)",
			       policy);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_bind_to(mpictr_config *cfg,
					    const char *policy,
					    mpictr_err **err)
{
	return set_str(cfg, OPT_AT(bind_to), policy, "binding policy",
		       bind_to_rule, err);
}

static int overlay_rule(const char *dir, mpictr_err **err)
{
	return *dir ? 0 : err_set(err, 0, "invalid --overlay '': empty path");
}

MPICTR_PUBLIC int mpictr_config_set_overlay(mpictr_config *cfg, const char *dir,
					    mpictr_err **err)
{
	return set_str(cfg, OPT_AT(overlay_dir), dir, "overlay directory",
		       overlay_rule, err);
}

MPICTR_PUBLIC int mpictr_config_set_home(mpictr_config *cfg, const char *spec,
					 mpictr_err **err)
{
	const char *colon;

	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(spec, "home specification", err) < 0)
		return -1;
	colon = strchr(spec, ':');
	if (!*spec || colon == spec)
		return err_set(err, 0,
			       "invalid --home '%s' (expected SRC or SRC:DST)",
			       spec);
	if (colon && (colon[1] != '/' || strchr(colon + 1, ':') ||
		      has_dotdot(colon + 1) || !colon[2]))
		return err_set(err, 0,
			       "invalid --home '%s': DST must be an absolute "
			       "path other than '/', without '..' or ':'",
			       spec);
	free(cfg->home_src);
	free(cfg->home_dst);
	cfg->home_src =
	    colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
	cfg->home_dst = colon ? clean_path(colon + 1) : NULL;
	return 0;
}

MPICTR_PUBLIC int mpictr_config_add_env_file(mpictr_config *cfg,
					     const char *path, mpictr_err **err)
{
	cleanup_free char *text = NULL;
	char *name, *value;
	size_t len;
	int lineno = 0, rc;

	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(path, "env file", err) < 0)
		return -1;
	text = read_file(path, 1 << 20, &len);
	if (!text)
		return err_set(err, errno, "env file '%s'", path);
	if (memchr(text, '\0', len))
		return err_set(err, 0, "env file '%s': not a text file", path);
	for (char *l = text, *nl; l && *l; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		lineno++;
		rc = env_line_parse(l, &name, &value);
		if (rc < 0)
			return err_set(err, 0,
				       "env file '%s', line %d: expected "
				       "NAME=VALUE (NAME of letters, digits "
				       "and '_')",
				       path, lineno);
		if (rc)
			env_set(&cfg->file_env, name, value);
	}
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_shell(mpictr_config *cfg, const char *shell,
					  mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (shell && shell[0] != '/')
		return err_set(err, 0,
			       "invalid --shell '%s': not an absolute path",
			       shell);
	free(cfg->shell_path);
	cfg->shell_path = shell ? xstrdup(shell) : NULL;
	cfg->shell = true;
	return 0;
}

/* ---- site configuration and profiles -------------------------------- */

MPICTR_PUBLIC const char *mpictr_site_config_path(void)
{
	return MPICTR_SITE_CONF;
}

MPICTR_PUBLIC int mpictr_config_load_site(mpictr_config *cfg, const char *path,
					  mpictr_err **err)
{
	const char *test;

	if (check_arg(cfg, "config", err) < 0)
		return -1;
	if (cfg->site.site_loaded)
		return err_set(err, 0,
			       "the site configuration is already "
			       "loaded");
	if (path)
		return siteconf_load(&cfg->site, path, true, err);
	if (access(MPICTR_SITE_CONF, F_OK) == 0)
		return siteconf_load(&cfg->site, MPICTR_SITE_CONF, true, err);
	if (errno != ENOENT)
		return err_set(err, errno, "site configuration '%s'",
			       MPICTR_SITE_CONF);
	/* Testing aid: only where no site file exists, so it can never
	 * replace (and lift) a site's restrictions. */
	test = env_get(cfg->host_env, "MPICTR_TEST_SITE_CONF");
	if (test && *test) {
		log_debug("no '%s': using MPICTR_TEST_SITE_CONF '%s'",
			  MPICTR_SITE_CONF, test);
		return siteconf_load(&cfg->site, test, true, err);
	}
	cfg->site.site_loaded = true;
	return 0;
}

MPICTR_PUBLIC int mpictr_config_add_config_file(mpictr_config *cfg,
						const char *path,
						mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(path, "configuration file", err) < 0)
		return -1;
	if (!*path)
		return err_set(err, 0, "empty configuration file path");
	return siteconf_load(&cfg->site, path, false, err);
}

MPICTR_PUBLIC int mpictr_config_add_profile(mpictr_config *cfg,
					    const char *name, mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(name, "profile name", err) < 0)
		return -1;
	if (!*name)
		return err_set(err, 0, "empty profile name");
	for (size_t i = 0; cfg->profiles && cfg->profiles[i]; i++)
		if (strcmp(cfg->profiles[i], name) == 0)
			return 0;
	strv_push(&cfg->profiles, name);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_list_profiles(const mpictr_config *cfg,
					      char **out, mpictr_err **err)
{
	struct strbuf sb = STRBUF_INIT;

	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(out, "output", err) < 0)
		return -1;
	for (size_t i = 0; i < cfg->site.nprofiles; i++) {
		const struct site_profile *p = &cfg->site.profiles[i];
		sb_printf(&sb, "%s\t%s\t%s\n", p->name,
			  p->description ? p->description : "", p->origin);
	}
	*out = sb_steal(&sb);
	return 0;
}

/* ---- the signature policy --------------------------------------------- */

static void allow_from(const struct site_item *it, bool dflt,
		       struct site_trust_allow *a)
{
	a->allow = it->value ? strcmp(it->value, "yes") == 0 : dflt;
	a->origin = it->origin ? xstrdup(it->origin) : NULL;
}

static void trust_from(const struct siteconf *sc, struct site_trust *t)
{
	t->require = streq0(sc->require_signature.value, "yes");
	t->origin = sc->require_signature.origin
			? xstrdup(sc->require_signature.origin)
			: NULL;
	for (size_t i = 0; i < sc->trusted_keys.n; i++)
		strv_push(&t->keys, sc->trusted_keys.v[i].value);
	/* files that no signature covers: refused unless the site says */
	allow_from(&sc->signed_overlay, false, &t->overlay);
	/* empty at the start, written by the job only: allowed unless */
	allow_from(&sc->signed_writable_tmpfs, true, &t->writable_tmpfs);
	allow_from(&sc->signed_save, true, &t->save);
}

int config_site_trust(const struct mpictr_config *cfg, struct site_trust *t,
		      mpictr_err **err)
{
	struct siteconf sc;
	const char *path = MPICTR_SITE_CONF;
	int rc;

	memset(t, 0, sizeof(*t));
	if (cfg->site.site_loaded) {
		trust_from(&cfg->site, t);
		return 0;
	}
	/* as mpictr_config_load_site finds the file */
	if (access(path, F_OK) < 0) {
		if (errno != ENOENT)
			return err_set(err, errno, "site configuration '%s'",
				       path);
		path = env_get(cfg->host_env, "MPICTR_TEST_SITE_CONF");
		if (!path || !*path)
			return 0;
	}
	memset(&sc, 0, sizeof(sc));
	rc = siteconf_load(&sc, path, true, err);
	if (rc == 0)
		trust_from(&sc, t);
	siteconf_free(&sc);
	return rc;
}

static void allow_copy(struct site_trust_allow *dst,
		       const struct site_trust_allow *src)
{
	dst->allow = src->allow;
	dst->origin = src->origin ? xstrdup(src->origin) : NULL;
}

void site_trust_copy(struct site_trust *dst, const struct site_trust *src)
{
	dst->require = src->require;
	dst->origin = src->origin ? xstrdup(src->origin) : NULL;
	dst->keys = strv_dup(src->keys);
	allow_copy(&dst->overlay, &src->overlay);
	allow_copy(&dst->writable_tmpfs, &src->writable_tmpfs);
	allow_copy(&dst->save, &src->save);
}

void site_trust_free(struct site_trust *t)
{
	free(t->origin);
	strv_free(t->keys);
	free(t->overlay.origin);
	free(t->writable_tmpfs.origin);
	free(t->save.origin);
	memset(t, 0, sizeof(*t));
}
