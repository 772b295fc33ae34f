/* client.h - the registry client (client.c, in the pull plugin: libcurl,
 * jansson, libcrypto): HTTP API v2 into the image cache (cache.h); used by
 * pull_registry() (registry.c).
 */
#ifndef MPICTR_PULL_CLIENT_H
#define MPICTR_PULL_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "mpictr.h"

/* Largest manifest or index, and largest image config, accepted. */
#define REG_MANIFEST_MAX (4u << 20)
#define REG_CONFIG_MAX (16u << 20)

struct image_ref;
struct cache;

enum reg_event {
	REG_EV_STEP,	   /* text: "resolve ...", "manifest ..." */
	REG_EV_BLOB_START, /* a blob download starts */
	REG_EV_BLOB_BYTES, /* bytes arrived (done / total) */
	REG_EV_BLOB_DONE,  /* verified and in the cache */
	REG_EV_BLOB_CACHED /* already in the cache */
};
struct reg_progress {
	enum reg_event ev;
	const char *text;   /* step text, or the blob's digest */
	unsigned index;	    /* blob number, 1-based */
	unsigned count;	    /* blobs of the image */
	uint64_t done;	    /* bytes of this blob so far */
	uint64_t total;	    /* its size */
	uint64_t all_done;  /* bytes of all blobs so far */
	uint64_t all_total; /* bytes of all blobs to download */
};
typedef void (*reg_progress_fn)(const struct reg_progress *p, void *data);

struct reg_opts {
	const char *arch;      /* --arch: "arm64", "linux/arm/v7"; NULL: ours */
	const char *tls_ca;    /* --tls-ca: extra CA bundle, or NULL */
	char *const *insecure; /* --insecure hosts (plain HTTP), NULL-ended */
	unsigned parallel;     /* blobs in flight (0: 4) */
	unsigned retries;      /* tries after a 429/503 (0: 4) */
	unsigned retry_max_wait; /* longest Retry-After honoured, s (0: 60) */
	unsigned stall_timeout;	 /* s below PULL_LOW_SPEED (0: the default) */
	reg_progress_fn progress;
	void *progress_data;
	/* a run verb's pull (IMAGE docker://...): hints name what run verbs
	 * accept (MPICTR_PULL_INSECURE, MPICTR_PULL_TLS_CA), not pull's
	 * options */
	bool run_time;
};

/* What registry_fetch leaves in the cache. */
struct reg_image {
	char *manifest_digest; /* the platform's image manifest */
	char *top_digest;      /* what the tag names (index or manifest) */
	char *config_digest;
	uint64_t bytes;	    /* bytes downloaded */
	unsigned blobs_got; /* blobs downloaded (not in the cache before) */
};
void reg_image_free(struct reg_image *im);

/* Resolve ref to this platform's image manifest and put it, its config and
 * layers into the cache's OCI layout (cache.h), each blob once however
 * many processes fetch it at once; records ref's tag in the cache. By
 * digest with the manifest cached: no request. Returns 0, or -1 with *err
 * naming the image and the cause. */
int registry_fetch(struct cache *c, const struct image_ref *ref,
		   const struct reg_opts *o, struct reg_image *im,
		   mpictr_err **err);
/* Only the manifest digest ref resolves to on this platform (one manifest
 * request for a tag; none when ref has a digest whose manifest is cached).
 */
int registry_resolve(struct cache *c, const struct image_ref *ref,
		     const struct reg_opts *o, char **manifest_digest,
		     mpictr_err **err);

#endif
