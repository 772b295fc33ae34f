/* oci.h - the one OCI image model of the pull plugin, shared by every
 * source: the registry (client.c) and the local layouts and archives
 * (image.c: oci:, oci-archive:, docker-archive:). It holds the media types
 * of manifests, indexes, configs and layers, and the one rule that
 * resolves an index to a platform. Its input is untrusted JSON (jansson
 * values parsed with duplicate keys refused); nothing here does I/O.
 *
 * The one sha256 of a document is here too (sha256_digest); a digest's
 * syntax is cache_digest_valid (pull/cache.h), which libmpictr's cache
 * uses as well. */
#ifndef MPICTR_PULL_OCI_H
#define MPICTR_PULL_OCI_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"
#include "pull/merge.h"

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_DOCKER_LIST                                                     \
	"application/vnd.docker.distribution.manifest.list.v2+json"
#define OCI_MT_DOCKER_MANIFEST                                                 \
	"application/vnd.docker.distribution.manifest.v2+json"

/* "sha256:<hex>" of buf (libcrypto). */
void sha256_digest(const void *buf, size_t len, char out[72]);

/* An index (OCI image index or Docker manifest list) by media type. */
bool oci_is_index(const char *mt);
/* An image manifest (OCI or Docker schema 2) by media type. */
bool oci_is_manifest(const char *mt);
/* An image config (OCI or Docker) by media type. */
bool oci_is_config(const char *mt);
/* The media type of a manifest or index document: its "mediaType", else
 * (OCI allows none) told by its content: "manifests" without "config" is
 * an index, anything else a manifest. NULL when "mediaType" is not a
 * string. */
const char *oci_doc_type(const json_t *doc);

/* Layer i of a manifest (descriptor l), checked: not foreign, not
 * non-distributable, no "urls", a media type mpictr reads (OCI tar,
 * tar+gzip, tar+zstd; Docker tar and tar.gzip). *comp: its compression.
 * what names the image in messages. */
int oci_layer_check(const json_t *l, size_t i, const char *what,
		    enum layer_comp *comp, mpictr_err **err);

/* The platform to resolve an index to, "linux/ARCH[/VARIANT]": arch as
 * --arch takes it ("arm64", "arm/v7", "linux/ppc64le"), or NULL for this
 * machine's (uname -m: x86_64 -> amd64, aarch64 -> arm64, ...). */
char *oci_platform_wanted(const char *arch);

/* The entry of index (an index document) for want ("linux/arm64/v8"),
 * its digest checked, into digest. The rule: os and architecture equal;
 * the variant equal once the defaults are filled in (arm64: v8, arm: v7),
 * and when want names no variant and no entry has the default one, the
 * first entry of any variant. Entries without a platform, or with
 * "unknown" in it (attestations), are never chosen. When nothing matches
 * the error lists the index's platforms, with a hint for --arch. */
int oci_index_pick(const json_t *index, const char *want, const char *what,
		   char digest[72], mpictr_err **err);

#endif
