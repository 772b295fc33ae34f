/* store.h - where an image's blobs are read from: an OCI layout directory
 * (oci:DIR, the cache) or a tar file read in place (oci-archive:,
 * docker-archive:), whose members are indexed once and never copied. */
#ifndef MPICTR_PULL_STORE_H
#define MPICTR_PULL_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Limits on the JSON documents of an image (oci-import.md 5.3). */
#define STORE_MAX_MANIFEST (4u << 20)
#define STORE_MAX_CONFIG (16u << 20)

struct tar_member {
	char *name; /* normalized ("blobs/sha256/<hex>") */
	char *link; /* symlink target, or NULL */
	uint64_t off, size;
};

struct store {
	char *name; /* the path, for messages */
	int dirfd;  /* a layout directory, or -1 */
	int fd;	    /* a tar file, or -1 */
	struct tar_member *members;
	size_t nmembers;
};

/* A readable range: size bytes at off in fd (owned when own is set). */
struct blob {
	int fd;
	uint64_t off, size;
	bool own;
};

int store_open_dir(const char *path, struct store *s, mpictr_err **err);
int store_open_tar(const char *path, struct store *s, mpictr_err **err);
void store_close(struct store *s);
/* The member (layout file or tar member) called name; symlink members of
 * a tar are followed within it. ENOENT if there is none. */
int store_member(struct store *s, const char *name, struct blob *b,
		 mpictr_err **err);
/* The blob of digest "sha256:<hex>" (blobs/sha256/<hex>). */
int store_blob(struct store *s, const char *digest, struct blob *b,
	       mpictr_err **err);
void blob_close(struct blob *b);
/* Read a whole blob of at most max bytes; *buf is NUL-terminated. */
int blob_read(const struct blob *b, size_t max, const char *what, char **buf,
	      size_t *len, mpictr_err **err);
/* (A digest's syntax is cache_digest_valid's, pull/cache.h; the sha256 of
 * a document sha256_digest's, pull/oci.h.) */
/* Parse untrusted JSON: duplicate keys refused; what names it. */
json_t *json_parse(const char *buf, size_t len, const char *what,
		   mpictr_err **err);
/* Read the blob digest (at most max bytes), check its digest and parse
 * it. *raw and *rawlen receive the bytes when raw is not NULL. */
json_t *store_json(struct store *s, const char *digest, size_t max,
		   const char *what, char **raw, size_t *rawlen,
		   mpictr_err **err);

#endif
