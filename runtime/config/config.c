/* config.c - mpictr_config setters. Pure: nothing here touches the file
 * system; validation against the host happens when the plan is built.
 */
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
	strv_free(cfg->host_env);
	free(cfg->devices);
	free(cfg->bind_to);
	siteconf_free(&cfg->site);
	strv_free(cfg->profiles);
	free(cfg);
}

static int check_arg(const void *p, const char *what, mpictr_err **err)
{
	if (!p)
		return err_set(err, EINVAL, "missing %s", what);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_image(mpictr_config *cfg, const char *path,
					  mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(path, "image path", err) < 0)
		return -1;
	if (!*path)
		return err_set(err, 0, "empty image path");
	free(cfg->image);
	cfg->image = xstrdup(path);
	return 0;
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

MPICTR_PUBLIC int mpictr_config_set_pwd(mpictr_config *cfg, const char *dir,
					mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(dir, "directory", err) < 0)
		return -1;
	if (dir[0] != '/')
		return err_set(err, 0,
			       "invalid --pwd '%s': not an absolute path", dir);
	free(cfg->pwd);
	cfg->pwd = xstrdup(dir);
	return 0;
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

MPICTR_PUBLIC int mpictr_config_set_flag(mpictr_config *cfg,
					 enum mpictr_flag flag, int on,
					 mpictr_err **err)
{
	bool v = on != 0;

	if (check_arg(cfg, "config", err) < 0)
		return -1;
	switch (flag) {
	case MPICTR_FLAG_CONTAIN:
		cfg->contain = v;
		break;
	case MPICTR_FLAG_FAKEROOT:
		cfg->fakeroot = v;
		break;
	case MPICTR_FLAG_NO_SHARE:
		cfg->no_share = v;
		break;
	case MPICTR_FLAG_TAG_OUTPUT:
		cfg->tag_output = v;
		break;
	case MPICTR_FLAG_TRANSPORT_ENV:
		cfg->transport_env = v;
		cfg->transport_env_set = true;
		break;
	case MPICTR_FLAG_GPU:
		cfg->gpu = v;
		break;
	case MPICTR_FLAG_NO_OVERSUBSCRIBE:
		cfg->no_oversubscribe = v;
		break;
	case MPICTR_FLAG_INJECT_VERBS:
		cfg->inject_verbs = v;
		break;
	default:
		return err_set(err, EINVAL, "unknown flag %d", (int)flag);
	}
	return 0;
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

MPICTR_PUBLIC int mpictr_config_set_devices(mpictr_config *cfg,
					    const char *spec, mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(spec, "device list", err) < 0)
		return -1;
	if (!*spec)
		return err_set(err, 0,
			       "invalid --devices '': empty (use "
			       "none, all or a comma list)");
	free(cfg->devices);
	cfg->devices = xstrdup(spec);
	return 0;
}

MPICTR_PUBLIC int mpictr_config_set_bind_to(mpictr_config *cfg,
					    const char *policy,
					    mpictr_err **err)
{
	if (check_arg(cfg, "config", err) < 0 ||
	    check_arg(policy, "binding policy", err) < 0)
		return -1;
	if (strcmp(policy, "none") && strcmp(policy, "core"))
		return err_set(err, 0,
			       "invalid --bind-to '%s' (expected core or "
			       "none)",
			       policy);
	free(cfg->bind_to);
	cfg->bind_to = xstrdup(policy);
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
