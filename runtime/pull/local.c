/* local.c - the local sources of `mpictr pull`: oci:DIR[:REF] (a layout
 * directory), oci-archive:FILE[:REF] (a tar of one) and
 * docker-archive:FILE[:REF] (`docker save`, `podman save`, skopeo). The
 * archives are indexed once and their blobs read in place. */
#include <errno.h>
#include <stdlib.h>

#include "pull/image.h"
#include "pull/pull.h"
#include "common/util.h"

static int check_layout(struct store *s, const char *what, mpictr_err **err)
{
	struct blob b;
	char *buf = NULL;
	size_t len = 0;
	json_t *j;
	int rc;

	if (store_member(s, "oci-layout", &b, err) < 0)
		return err_wrap(err, "%s: not an OCI image layout", what);
	rc = blob_read(&b, 4096, "oci-layout", &buf, &len, err);
	blob_close(&b);
	if (rc < 0 || !(j = json_parse(buf, len, "oci-layout", err))) {
		free(buf);
		return err_wrap(err, "%s", what);
	}
	free(buf);
	if (!json_string_value(json_object_get(j, "imageLayoutVersion"))) {
		json_decref(j);
		return err_set(err, EINVAL,
			       "%s: oci-layout has no imageLayoutVersion",
			       what);
	}
	json_decref(j);
	return 0;
}

int pull_local(const struct image_ref *ref, const char *out,
	       const struct pull_opts *o, struct pull_stats *st,
	       mpictr_err **err)
{
	cleanup_free char *what = image_ref_string(ref);
	struct store s;
	struct image_input in = {0};
	char digest[72] = "";
	int rc;

	if (ref->transport == IMAGE_REF_OCI_DIR)
		rc = store_open_dir(ref->path, &s, err);
	else
		rc = store_open_tar(ref->path, &s, err);
	if (rc < 0)
		return err_wrap(err, "%s", what);
	if (ref->transport == IMAGE_REF_DOCKER_ARCHIVE) {
		rc = image_from_docker_archive(&s, ref->tag, what, &in, err);
	} else {
		rc = check_layout(&s, what, err);
		if (rc == 0)
			rc = image_select(&s, ref->tag, what, digest, err);
		if (rc == 0)
			rc = image_from_manifest(&s, digest, o->arch, what, &in,
						 err);
	}
	if (rc == 0)
		rc = assemble_image(&in, out, what, o, st, err);
	image_input_free(&in);
	store_close(&s);
	return rc;
}
