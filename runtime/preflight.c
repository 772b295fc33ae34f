/* preflight.c - `mpictr check`, the preflight doctor: one line per item, "ok:"
 * or "problem:", with the fix for each problem. Blocking problems are the
 * ones that stop every container from starting. */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preflight.h"
#include "host/devices.h"
#include "common/error.h"
#include "common/proc.h"
#include "container/ns.h"
#include "common/plugin.h"
#include "pmi/pmi.h"
#include "host/ucx.h"
#include "common/util.h"
#include "config/config.h"

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

/* A plugin (runtime/common/plugin.h) loads: true when it did. */
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
	if (proc_privileged()) {
		line(
		    sb, false, "mpictr runs setuid or setgid",
		    "remove the setuid/setgid bit: mpictr needs no privileges");
		(*blocking)++;
		return;
	}
	line(sb, true, "not setuid or setgid", NULL);
}

/* ---- interconnect devices, UCX, limits -------------------------------- */

static void check_ucx(struct strbuf *out, const char *ucx_helper)
{
	cleanup_strv char **lines = NULL;
	mpictr_err *uerr = NULL;

	if (ucx_query(ucx_helper, &lines, &uerr) < 0) {
		sb_printf(out,
			  "problem: UCX device query failed: %s (fix: install "
			  "UCX, or ignore if the MPI does not use it)\n",
			  mpictr_err_message(uerr));
		mpictr_err_free(uerr);
		return;
	}
	sb_puts(out, "ok: UCX sees");
	for (size_t i = 0; lines && lines[i]; i++) {
		cleanup_free char *tl = NULL, *dev = NULL;
		ucx_fields(lines[i], &tl, &dev, NULL);
		if (tl && dev)
			sb_printf(out, " %s/%s", tl, dev);
	}
	sb_puts(out, lines ? "\n" : " nothing\n");
}

static void check_hcas(struct strbuf *out, const struct host_devices *d)
{
	if (d->nhcas == 0) {
		sb_puts(out, "ok: sysfs: no RDMA device (InfiniBand, RoCE, "
			     "Omni-Path, EFA, Slingshot)\n");
		return;
	}
	sb_puts(out, "ok: sysfs HCAs:");
	for (size_t i = 0; i < d->nhcas; i++) {
		const struct hca *h = &d->hcas[i];
		sb_printf(out, " %s:%d %s %s %s numa %d%s", h->name, h->port,
			  h->driver, h->link_layer,
			  h->active ? "ACTIVE" : "DOWN", h->numa_node,
			  i + 1 < d->nhcas ? ";" : "");
	}
	sb_putc(out, '\n');
}

static void check_memlock(struct strbuf *out, const struct host_devices *d)
{
	cleanup_free char *m = devices_memlock_too_low();
	bool rdma = false;

	for (size_t i = 0; i < d->ndevs; i++)
		if (d->devs[i].kind != DEVICE_KNEM &&
		    d->devs[i].kind != DEVICE_XPMEM &&
		    d->devs[i].kind != DEVICE_GPU)
			rdma = true;
	if (!m)
		sb_puts(out, "ok: RLIMIT_MEMLOCK unlimited\n");
	else if (rdma)
		sb_printf(out, "problem: %s (%s)\n", m, DEVICES_MEMLOCK_FIX);
	else
		sb_printf(out,
			  "ok: %s; no RDMA device is present, so it does not "
			  "matter here\n",
			  m);
}

static void check_ptrace(struct strbuf *out, const struct host_devices *d,
			 const char *root)
{
	if (d->ptrace_scope < 0)
		sb_printf(out,
			  "ok: Yama ptrace_scope not present ('%s/proc/sys/"
			  "kernel/yama' absent): CMA between ranks allowed\n",
			  root);
	else if (d->ptrace_scope == 0)
		sb_puts(out, "ok: Yama ptrace_scope 0: CMA between ranks "
			     "allowed\n");
	else
		sb_printf(out,
			  "problem: Yama ptrace_scope is %d, which blocks CMA "
			  "between sibling ranks (%s)\n",
			  d->ptrace_scope, DEVICES_PTRACE_FIX);
}

static void check_device_nodes(struct strbuf *out, const struct host_devices *d)
{
	bool inaccessible = false;

	for (size_t i = 0; d->warnings && d->warnings[i]; i++)
		if (str_has_prefix(d->warnings[i], "device '")) {
			sb_printf(out, "problem: %s\n", d->warnings[i]);
			inaccessible = true;
		}
	if (inaccessible)
		return;
	if (d->ndevs == 0) {
		sb_puts(out, "ok: no interconnect device node to expose\n");
		return;
	}
	sb_puts(out, "ok: device nodes accessible:");
	for (size_t i = 0; i < d->ndevs; i++)
		sb_printf(out, " %s", d->devs[i].path);
	sb_putc(out, '\n');
}

int check_devices_report(const char *sysroot, const char *ucx_helper,
			 struct strbuf *out, int *blocking, mpictr_err **err)
{
	struct host_devices d;

	if (devices_discover(sysroot, "all", false, &d, err) < 0)
		return -1;
	if (ucx_helper)
		check_ucx(out, ucx_helper);
	check_hcas(out, &d);
	check_memlock(out, &d);
	check_ptrace(out, &d, sysroot && *sysroot ? sysroot : "");
	check_device_nodes(out, &d);
	(void)blocking; /* nothing in this area prevents running */
	host_devices_free(&d);
	return 0;
}

/* The site's configuration file and the user's (MPICTR_CONF), as every
 * job loads them, then a job planned with them (the host's root as a
 * directory image, /bin/true as the command, nothing run): a file that
 * does not parse, a site bind whose source is missing, a profile that
 * names no library... fail every job, and so fail here, with the file and
 * line the error names. */
static void check_config(struct strbuf *sb, int *blocking)
{
	mpictr_config *cfg = mpictr_config_new();
	const char *user = getenv("MPICTR_CONF");
	char *const argv[] = {"/bin/true", NULL};
	cleanup_free char *json = NULL;
	mpictr_err *e = NULL;
	int rc;

	rc = mpictr_config_load_site(cfg, NULL, &e);
	if (rc == 0 && user && *user)
		rc = mpictr_config_add_config_file(cfg, user, &e);
	if (rc == 0)
		rc = mpictr_config_set_image(cfg, "/", &e) < 0 ||
			     mpictr_config_set_command(cfg, 1, argv, &e) < 0 ||
			     mpictr_plan_json(cfg, &json, &e) < 0
			 ? -1
			 : 0;
	if (rc < 0) {
		cleanup_free char *what =
		    xasprintf("configuration: every job would fail: %s",
			      mpictr_err_message(e));
		line(sb, false, what,
		     "correct the file and line named (mpictr(1), "
		     "docs/admin.md)");
		(*blocking)++;
	} else {
		line(sb, true,
		     user && *user ? "configuration (the site's and "
				     "MPICTR_CONF): a job can be planned"
				   : "configuration: a job can be planned",
		     NULL);
	}
	mpictr_err_free(e);
	mpictr_config_free(cfg);
}

/* The site's signature policy: with require_signature = yes, every job
 * is refused unless a trusted key is there to verify with; a missing or
 * unreadable trusted_keys file (or none at all) is said here. */
static void check_trust(struct strbuf *sb, int *blocking)
{
	mpictr_config *cfg = mpictr_config_new();
	struct site_trust t;
	mpictr_err *e = NULL;
	size_t bad = 0;

	if (mpictr_config_load_site(cfg, NULL, &e) < 0 ||
	    config_site_trust(cfg, &t, &e) < 0) {
		mpictr_err_free(e); /* said by check_config */
		mpictr_config_free(cfg);
		return;
	}
	for (size_t i = 0; t.require && t.keys && t.keys[i]; i++) {
		cleanup_free char *what = NULL;

		if (access(t.keys[i], R_OK) == 0)
			continue;
		what = xasprintf("signature policy: trusted key '%s' (%s: "
				 "require_signature = yes): %s",
				 t.keys[i], t.origin ? t.origin : "site file",
				 strerror(errno));
		line(sb, false, what,
		     "install the key file or correct trusted_keys "
		     "(docs/signing.md)");
		bad++;
	}
	if (t.require && !t.keys) {
		cleanup_free char *what = xasprintf(
		    "signature policy: require_signature = yes (%s) and no "
		    "trusted_keys: every image is refused",
		    t.origin ? t.origin : "site file");
		line(sb, false, what, "name the site's keys with trusted_keys");
		bad++;
	}
	if (bad)
		(*blocking)++;
	else if (t.require)
		line(sb, true,
		     "signature policy: every trusted key file is readable",
		     NULL);
	site_trust_free(&t);
	mpictr_config_free(cfg);
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
	check_config(&sb, &nblock);
	check_trust(&sb, &nblock);
	{
		mpictr_err *e = NULL;
		cleanup_free char *helper = ucx_helper_path();
		if (check_devices_report(devices_sysroot(true), helper, &sb,
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
