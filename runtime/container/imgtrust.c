/* imgtrust.c - require_signature (imgtrust.h): the namespace holder
 * verifies the image with the site's trusted keys, before it creates the
 * namespaces or mounts anything. There is one holder per node and job (the
 * join-mode keeper's, or the launch supervisor's), so the image is read
 * once per node, not per task; and the data digests of an image file
 * verified before (same device, inode, size, mtime, ctime) are taken from
 * the user's cache, so a big image is hashed once, not at every start. */
#include <errno.h>
#include <fcntl.h>
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
