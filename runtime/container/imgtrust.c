/* imgtrust.c - require_signature (imgtrust.h): the namespace holder
 * verifies the image with the site's trusted keys, before it creates the
 * namespaces or mounts anything. There is one holder per node and job (the
 * join-mode keeper's, or the launch supervisor's), so the image is read
 * once per node, not per task; and the data digests of an image file
 * verified before (same device, inode, size, mtime, ctime) are taken from
 * the user's cache, so a big image is hashed once, not at every start.
 *
 * What the job reads later is what was verified only if nobody else can
 * change the file meanwhile: squashfuse reads it lazily, for as long as
 * the job runs, through the descriptor verified here. So the file must be
 * one that only root and the user can write (owner, mode bits, no process
 * holding it open for writing, no FUSE daemon of another user serving
 * it); renaming or replacing its name changes nothing, since nothing
 * opens the path again. The options that put unsigned files over the
 * image, and saves, are the site's to allow (imgtrust_allows). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "container/imgtrust.h"
#include "sif/verify.h"

static char *keys_text(char *const *keys)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; keys && keys[i]; i++)
		sb_printf(&sb, "%s%s", i ? ", " : "", keys[i]);
	if (!sb.len)
		sb_puts(&sb, "none (no trusted_keys)");
	return sb_steal(&sb);
}

static const char *kind_name(enum image_kind k)
{
	return k == IMAGE_DIR ? "directory" : "plain squashfs file";
}

#define FUSE_SUPER_MAGIC 0x65735546

/* The uid of the FUSE daemon serving the mount that holds fd (user_id= of
 * the mount's options), or -1 when it cannot be told. */
static long fuse_owner(int fd)
{
	char path[64], *line, *save = NULL;
	cleanup_free char *info = NULL, *mi = NULL;
	const char *m;
	long mnt = -1, uid = -1;
	size_t len;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	info = read_file(path, 1 << 16, &len);
	if (!info || !(m = strstr(info, "mnt_id:")) ||
	    sscanf(m + 7, "%ld", &mnt) != 1)
		return -1;
	mi = read_file("/proc/self/mountinfo", 16 << 20, &len);
	for (line = mi ? strtok_r(mi, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *sep = strstr(line, " - "), *u;

		if (strtol(line, NULL, 10) != mnt || !sep)
			continue;
		u = strstr(sep, "user_id=");
		if (strncmp(sep + 3, "fuse", 4) == 0 && u &&
		    (u[-1] == ',' || u[-1] == ' '))
			uid = strtol(u + 8, NULL, 10);
		break;
	}
	return uid;
}

/* Could anyone but root and the user change the bytes of the image fd
 * holds while the job runs? Then refuse it, saying why. */
static int check_writers(int fd, const char *img, const struct site_trust *t,
			 mpictr_err **err)
{
	uid_t me = getuid();
	cleanup_free char *why = NULL;
	struct stat st;
	struct statfs sf;
	long owner;

	if (fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0)
		return err_set(err, errno, "image '%s'", img);
	if (st.st_uid != 0 && st.st_uid != me)
		why = xasprintf("it belongs to uid %u, who could rewrite it "
				"while the job runs",
				(unsigned)st.st_uid);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		why = xasprintf("its mode %04o lets %s write it while the job "
				"runs",
				(unsigned)(st.st_mode & 07777),
				st.st_mode & S_IWOTH ? "every user"
						     : "its group");
	else if ((unsigned long)sf.f_type == FUSE_SUPER_MAGIC &&
		 (owner = fuse_owner(fd)) != 0 && owner != (long)me)
		why = owner < 0 ? xstrdup("it lies on a FUSE file system of "
					  "unknown owner, whose daemon "
					  "decides what each read returns")
				: xasprintf("it lies on a FUSE file system "
					    "served by uid %ld, whose daemon "
					    "decides what each read returns",
					    owner);
	else if (st.st_uid == me) {
		/* a read lease is refused while anyone has it open for
		 * writing (opened before a chmod, say); only the owner may
		 * take one, and it is dropped at once */
		if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0)
			fcntl(fd, F_SETLEASE, F_UNLCK);
		else if (errno == EAGAIN)
			why = xstrdup("a process holds it open for writing");
	}
	if (!why)
		return 0;
	return err_set(err, 0,
		       "image '%s' refused: %s (%s: require_signature = yes "
		       "runs only image files that nobody but root and the "
		       "user can write; hint: copy it to a file of your own, "
		       "mode 0644 or stricter, or ask the site to install it "
		       "as root's)",
		       img, why, t->origin);
}

int imgtrust_allows(const struct site_trust *t, enum imgtrust_change c,
		    const char *what, mpictr_err **err)
{
	static const struct {
		const char *key, *why;
	} ch[] = {
	    [IMGTRUST_OVERLAY] = {"signed_overlay",
				  "no signature covers the files of an "
				  "overlay directory, and they hide the "
				  "image's own"},
	    [IMGTRUST_WRITABLE_TMPFS] = {"signed_writable_tmpfs",
					 "the site allows no writable layer "
					 "over a signed image"},
	    [IMGTRUST_SAVE] = {"signed_save",
			       "the site allows no new image packed from a "
			       "container of a signed one"},
	};
	const struct site_trust_allow *a = c == IMGTRUST_OVERLAY ? &t->overlay
					   : c == IMGTRUST_SAVE
					       ? &t->save
					       : &t->writable_tmpfs;

	if (!t->require || a->allow)
		return 0;
	return err_set(err, 0,
		       "%s refused under the site's signature policy (%s: "
		       "require_signature = yes; %s%s%s = no): %s (hint: "
		       "the site may allow it: %s = yes)",
		       what, t->origin, a->origin ? a->origin : "default ",
		       a->origin ? ": " : "", ch[c].key, ch[c].why, ch[c].key);
}

int imgtrust_enforce(const struct plan *p, int *fd, mpictr_err **err)
{
	const struct site_trust *t = &p->trust;
	const char *img = p->image.path;
	struct verify_cache cache = {.dir = p->trust_cache};
	struct verify_report *r = NULL;
	cleanup_free char *keys = NULL, *why = NULL;
	cleanup_close int ifd = -1;
	struct timespec t0, t1;
	int rc;

	*fd = -1;
	if (!t->require)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (p->overlay_dir) {
		cleanup_free char *what =
		    xasprintf("--overlay '%s'", p->overlay_dir);
		if (imgtrust_allows(t, IMGTRUST_OVERLAY, what, err) < 0)
			return -1;
	}
	if (p->overlay_tmpfs && imgtrust_allows(t, IMGTRUST_WRITABLE_TMPFS,
						"--writable-tmpfs", err) < 0)
		return -1;
	keys = keys_text(t->keys);
	if (p->image.kind != IMAGE_SIF)
		return err_set(err, 0,
			       "image '%s' refused: the site runs only signed "
			       "SIF images (%s: require_signature = yes; "
			       "trusted keys: %s), and a %s carries no "
			       "signature",
			       img, t->origin, keys, kind_name(p->image.kind));
	if (!t->keys)
		return err_set(
		    err, 0,
		    "image '%s' refused: the site requires signed "
		    "images (%s: require_signature = yes) but trusts "
		    "no key (hint: the site configuration needs "
		    "trusted_keys = FILE...)",
		    img, t->origin);
	ifd = open(img, O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		return err_set(err, errno, "open image '%s'", img);
	if (check_writers(ifd, img, t, err) < 0)
		return -1;
	if (verify_image_fd(ifd, img, t->keys, 0, &cache, &r, err) < 0)
		return err_wrap(err,
				"image '%s' refused: its signatures cannot be "
				"checked (%s: require_signature = yes; trusted "
				"keys: %s)",
				img, t->origin, keys);
	if (!verify_report_trusted(r)) {
		why = verify_report_why(r);
		rc = err_set(err, 0,
			     "image '%s' refused: not signed by a key the site "
			     "trusts (%s: require_signature = yes; keys tried: "
			     "%s): %s",
			     img, t->origin, keys, why);
		verify_report_free(r);
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("image '%s': every object group signed by a trusted key%s, "
		 "checked in %.1f ms",
		 img, r->data_cached ? " (data digests from the cache)" : "",
		 (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		     (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	verify_report_free(r);
	*fd = steal_fd(&ifd);
	return 0;
}
