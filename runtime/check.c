/* check.c - `mpictr check`, the preflight doctor: one line per item, "ok:"
 * or "problem:", with the fix for each problem. Blocking problems are the
 * ones that stop every container from starting. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "ns.h"
#include "devices.h"
#include "plan.h"
#include "plugin.h"
#include "pmi.h"
#include "util.h"

static void line(struct strbuf *sb, bool ok, const char *what, const char *fix)
{
	sb_printf(sb, "%s %s", ok ? "ok:" : "problem:", what);
	if (!ok && fix)
		sb_printf(sb, " (fix: %s)", fix);
	sb_putc(sb, '\n');
}

static void check_userns(struct strbuf *sb, int *blocking)
{
	mpictr_err *e = NULL;
	long left = ns_userns_left();

	if (ns_probe(&e) == 0) {
		cleanup_free char *s =
		    xasprintf("unprivileged user namespaces work "
			      "(user.max_user_namespaces = %ld)",
			      left);
		line(sb, true, s, NULL);
		return;
	}
	line(sb, false, mpictr_err_message(e),
	     "see the hint; a site administrator must allow unprivileged "
	     "user namespaces");
	mpictr_err_free(e);
	(*blocking)++;
}

static void check_fuse(struct strbuf *sb, int *blocking)
{
	struct stat st;
	int fd;

	if (stat("/dev/fuse", &st) < 0) {
		line(sb, false,
		     "/dev/fuse is missing: SIF and squashfs images "
		     "cannot be mounted",
		     "modprobe fuse, or install fuse3 (directory images still "
		     "work)");
		(*blocking)++;
		return;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		cleanup_free char *s = xasprintf(
		    "/dev/fuse is not usable by this user (mode %o): %s",
		    (unsigned)(st.st_mode & 07777), strerror(errno));
		line(sb, false, s,
		     "chmod 0666 /dev/fuse, as udev does on a standard system");
		(*blocking)++;
		return;
	}
	close(fd);
	line(sb, true, "/dev/fuse is usable (squashfuse mounts in-process)",
	     NULL);
}

/* A plugin (runtime/plugin.h) loads: true when it did. */
static bool check_plugin(struct strbuf *sb, const char *name, const char *what)
{
	mpictr_err *e = NULL;
	cleanup_free char *s = NULL;

	if (plugin_load(name, &e)) {
		s = xasprintf("plugin '%s' loads: %s", name, what);
		line(sb, true, s, NULL);
		return true;
	}
	s = xasprintf("plugin '%s' (%s): %s", name, what,
		      mpictr_err_message(e));
	line(sb, false, s,
	     "reinstall mpictr; 'make install' puts it in " MPICTR_PLUGINDIR);
	mpictr_err_free(e);
	return false;
}

static void check_setuid(struct strbuf *sb, int *blocking)
{
	if (getuid() != geteuid() || getgid() != getegid()) {
		line(
		    sb, false, "mpictr runs setuid or setgid",
		    "remove the setuid/setgid bit: mpictr needs no privileges");
		(*blocking)++;
		return;
	}
	line(sb, true, "not setuid or setgid", NULL);
}

MPICTR_PUBLIC int mpictr_check(char **report, int *blocking, mpictr_err **err)
{
	struct strbuf sb = STRBUF_INIT;
	int nblock = 0;

	if (!report || !blocking)
		return err_set(err, EINVAL, "mpictr_check: missing argument");
	sb_printf(&sb, "mpictr %s\n", mpictr_version());
	check_setuid(&sb, &nblock);
	check_userns(&sb, &nblock);
	check_fuse(&sb, &nblock);
	{
		mpictr_err *e = NULL;
		cleanup_free char *helper = plan_ucx_helper_path();
		if (devices_check_report(devices_sysroot(true), helper, &sb,
					 &nblock, &e) < 0) {
			line(&sb, false, mpictr_err_message(e), NULL);
			mpictr_err_free(e);
		}
	}
	check_plugin(&sb, "squash",
		     "the image mounts (libsquashfuse, libfuse3)");
	if (check_plugin(&sb, "pmix", "the PMIx server (libpmix)")) {
		const char *v = pmi_library_version();
		cleanup_free char *s =
		    xasprintf("PMIx library %s", v ? v : "unknown");
		line(&sb, v != NULL, s,
		     "install libpmix2 (Debian) or openpmix");
	}
	*report = sb_steal(&sb);
	*blocking = nblock;
	return 0;
}
