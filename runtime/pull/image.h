/* image.h - from a store to what the assembler needs: the image config
 * and the layers, checked (schema 2, media types, sizes, digests), for an
 * OCI layout (index.json, manifests, indexes by platform) and for a
 * docker-archive (manifest.json). */
#ifndef MPICTR_PULL_IMAGE_H
#define MPICTR_PULL_IMAGE_H

#include <jansson.h>

#include "pull/merge.h"
#include "pull/store.h"

struct image_input {
	json_t *config; /* the image config (architecture, config, rootfs) */
	char *config_raw;
	size_t config_len;
	char manifest_digest[72]; /* "" for a docker-archive */
	struct layer_src *layers;
	struct blob *blobs; /* one per layer, closed by image_input_free */
	size_t nlayers;
};

/* The manifest that ref (an org.opencontainers.image.ref.name; NULL: the
 * only one) names in the layout's index.json. */
int image_select(struct store *s, const char *ref, const char *what,
		 char digest[72], mpictr_err **err);
/* Load manifest digest (an image index is resolved to arch as --arch takes
 * it, NULL: this machine's; oci_index_pick) with its config and layers. */
int image_from_manifest(struct store *s, const char *digest, const char *arch,
			const char *what, struct image_input *in,
			mpictr_err **err);
/* The same from a docker-archive's manifest.json; ref is "REPO:TAG",
 * "@N" or NULL (the only image). */
int image_from_docker_archive(struct store *s, const char *ref,
			      const char *what, struct image_input *in,
			      mpictr_err **err);
void image_input_free(struct image_input *in);
/* Write the image in as the SIF out (assemble.c). */
int assemble_image(const struct image_input *in, const char *out,
		   const char *what, const struct pull_opts *o,
		   struct pull_stats *st, mpictr_err **err);

#endif
