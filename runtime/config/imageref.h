/* imageref.h - image references as `mpictr pull` and the IMAGE argument take
 * them (docs/pull.md):
 *
 *   docker://[USER@]HOST[:PORT]/REPO[:TAG][@DIGEST]   (HOST optional: Docker
 * Hub) docker://[USER@][REGISTRY#]IMAGE[:TAG][@DIGEST]   (Enroot's form)
 *   [USER@]REGISTRY#IMAGE[:TAG][@DIGEST]              (Pyxis/Enroot)
 *   REPO[:TAG][@DIGEST]                               (bare: Docker Hub)
 *   docker-archive:FILE[:REF]   oci-archive:FILE[:REF]   oci:DIR[:REF]
 *
 * Pure parsing: no file is looked at and nothing is resolved. A Docker Hub
 * repository of one component gets "library/" as Docker does.
 */
#ifndef MPICTR_IMAGEREF_H
#define MPICTR_IMAGEREF_H

#include <stdbool.h>

#include "common/error.h"

#define IMAGE_REF_DOCKER_HUB "registry-1.docker.io"
#define IMAGE_REF_MAX 4096

enum image_transport {
	IMAGE_REF_DOCKER = 1,	  /* a registry (docker://, bare, Pyxis) */
	IMAGE_REF_DOCKER_ARCHIVE, /* docker-archive:FILE[:REF] */
	IMAGE_REF_OCI_ARCHIVE,	  /* oci-archive:FILE[:REF] */
	IMAGE_REF_OCI_DIR,	  /* oci:DIR[:REF] */
};

struct image_ref {
	enum image_transport transport;
	/* registry forms */
	char *user;	  /* USER@ or NULL */
	char *registry;	  /* "host[:port]", IMAGE_REF_DOCKER_HUB if none */
	char *repository; /* "library/debian", "nvidia/pytorch" */
	char *tag;	  /* TAG (or "latest" without TAG and DIGEST); for
			     the local forms REF (NULL if not given) */
	char *digest;	  /* "sha256:<64 hex>" or NULL */
	/* local forms */
	char *path; /* FILE or DIR */
};

/* Parse s into *ref (zeroed first). Returns 0, or -1 with *err naming s
 * and the part that is wrong. */
int image_ref_parse(const char *s, struct image_ref *ref, mpictr_err **err);
void image_ref_free(struct image_ref *ref);
/* The canonical text: "docker://HOST/REPO:TAG[@DIGEST]", "oci:DIR:REF"...
 * (no user). Caller frees. */
char *image_ref_string(const struct image_ref *ref);
/* True for an IMAGE argument that is a reference to pull rather than a
 * file or directory: "docker://..." or "REGISTRY#IMAGE" and the local
 * transports "docker-archive:", "oci-archive:", "oci:". */
bool image_ref_is_pull_source(const char *s);
/* A file name for the SIF of ref when `mpictr pull` is given no OUT
 * (Apptainer's "NAME_TAG.sif"). Caller frees. */
char *image_ref_default_out(const struct image_ref *ref);

#endif
