/* plugin.c - find, load and check the plugins of plugin.h. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/plugin.h"
#include "common/util.h"

struct loaded {
	const char *name;
	const void *table;
};

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loaded plugins[8];

static void host_log_line(enum mpictr_log_level level, const char *line)
{
	log_msg(level, "%s", line);
}

static const struct plugin_host host = {
    .abi = MPICTR_PLUGIN_ABI,
    .version = MPICTR_VERSION_STRING,
    .log_enabled = log_enabled,
    .log_line = host_log_line,
};

/* The directory of the file this code was loaded from: libmpictr.so, or
 * the executable that libmpictr.a was linked into. NULL if unknown. */
static char *self_dir(void)
{
	char buf[PATH_MAX];
	Dl_info info;
	char *path = NULL, *slash;

	if (dladdr((void *)plugin_load, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/')
		path = xstrdup(info.dli_fname);
	if (!path) {
		/* the main program (its name as started, maybe relative) */
		ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
		if (n <= 0)
			return NULL;
		buf[n] = '\0';
		path = xstrdup(buf);
	}
	slash = strrchr(path, '/');
	if (!slash) {
		free(path);
		return NULL;
	}
	*slash = '\0';
	return path;
}

static const void *plugin_open(const char *name, mpictr_err **err)
{
	cleanup_free char *dir = self_dir();
	cleanup_free char *tried = NULL;
	char *cands[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
	const char *why = NULL;
	const void *table = NULL;
	void *h = NULL;
	size_t n = 0;

	if (dir) {
		/* the build tree: build/mpictr, build/libmpictr.so and
		 * build/tests/... next to build/plugins/ */
		cands[n++] = xasprintf("%s/plugins/mpictr-%s.so", dir, name);
		cands[n++] = xasprintf("%s/../plugins/mpictr-%s.so", dir, name);
		/* a relocated installation: LIBDIR/libmpictr.so and
		 * PREFIX/bin/mpictr next to LIBDIR/mpictr/ */
		cands[n++] = xasprintf("%s/mpictr/mpictr-%s.so", dir, name);
		/* beside mpictr-spank.so (LIBDIR/mpictr/) */
		cands[n++] = xasprintf("%s/mpictr-%s.so", dir, name);
		cands[n++] =
		    xasprintf("%s/../lib/mpictr/mpictr-%s.so", dir, name);
	}
	cands[n++] = xasprintf("%s/mpictr-%s.so", MPICTR_PLUGINDIR, name);
	for (size_t i = 0; i < n && !h; i++) {
		if (access(cands[i], F_OK) < 0)
			continue;
		h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			err_set(err, 0, "load plugin '%s': %s", cands[i],
				dlerror());
			err_hint(err,
				 "the libraries it needs are listed by "
				 "'ldd %s'",
				 cands[i]);
			goto out;
		}
		why = cands[i];
	}
	if (!h) {
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < n; i++)
			sb_printf(&sb, "%s%s", i ? ", " : "", cands[i]);
		tried = sb_steal(&sb);
		err_set(err, ENOENT,
			"mpictr plugin 'mpictr-%s.so' not found "
			"(looked for %s)",
			name, tried);
		err_hint(err,
			 "install mpictr completely ('make install' "
			 "puts the plugins in %s)",
			 MPICTR_PLUGINDIR);
		goto out;
	}
	{
		mpictr_plugin_init_fn init;
		*(void **)&init = dlsym(h, MPICTR_PLUGIN_INIT);
		if (!init) {
			err_set(err, 0, "plugin '%s' has no %s", why,
				MPICTR_PLUGIN_INIT);
			dlclose(h);
			goto out;
		}
		table = init(&host);
	}
	if (!table) {
		err_set(err, 0,
			"plugin '%s' does not belong to this mpictr (version "
			"%s, plugin ABI %d)",
			why, MPICTR_VERSION_STRING, MPICTR_PLUGIN_ABI);
		err_hint(err, "reinstall mpictr so that its plugins match");
		dlclose(h);
	}
out:
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	return table;
}

const void *plugin_load(const char *name, mpictr_err **err)
{
	const void *table = NULL;
	size_t i;

	/* Loaded already: no lock, so that server threads calling through
	 * a table never hold one across another thread's fork(). */
	for (i = 0; i < ARRAY_SIZE(plugins); i++) {
		const char *n =
		    __atomic_load_n(&plugins[i].name, __ATOMIC_ACQUIRE);
		if (n && strcmp(n, name) == 0)
			return plugins[i].table;
	}
	pthread_mutex_lock(&plugin_lock);
	for (i = 0; i < ARRAY_SIZE(plugins) && plugins[i].name; i++)
		if (strcmp(plugins[i].name, name) == 0) {
			table = plugins[i].table;
			break;
		}
	if (!table && i < ARRAY_SIZE(plugins)) {
		table = plugin_open(name, err);
		if (table) {
			plugins[i].table = table;
			__atomic_store_n(&plugins[i].name, name,
					 __ATOMIC_RELEASE);
		}
	} else if (!table) {
		err_set(err, 0, "too many plugins loaded ('%s')", name);
	}
	pthread_mutex_unlock(&plugin_lock);
	return table;
}
