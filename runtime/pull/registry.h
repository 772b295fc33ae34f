/* registry.h - images from OCI/Docker registries (HTTP API v2) into the
 * image cache (cache.h): reference parsing, credentials, the client.
 *
 * Everything here but reg_ref_* and the credential-file parsers lives in
 * the pull plugin (libcurl, jansson, libcrypto); libmpictr only decides
 * whether an IMAGE names a registry (reg_ref_is_registry) and looks up the
 * cache (cache.h). Secrets read from credential files stay in memory: they
 * never reach a log line, an error message, argv or a file we write.
 */
#ifndef MPICTR_PULL_REGISTRY_H
#define MPICTR_PULL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpictr.h"

/* The registry Docker Hub's names go to, and the name users give it. */
#define REG_DOCKER_HUB "registry-1.docker.io"

/* Largest manifest or index, and largest image config, accepted. */
#define REG_MANIFEST_MAX (4u << 20)
#define REG_CONFIG_MAX (16u << 20)

struct image_ref;
struct cache;
struct pull_opts;

/* ---- credentials (auth.c) ----------------------------------------------- */

struct reg_cred {
	char *user;
	char *secret; /* password or token: never logged */
	char *origin; /* the file it came from */
};
void reg_cred_free(struct reg_cred *c);

/* The credentials of host (as in struct reg_ref) for user (NULL: any),
 * from the first of these files that has some: $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json,
 * $DOCKER_CONFIG/config.json or ~/.docker/config.json, Enroot's
 * $ENROOT_CONFIG_PATH/.credentials (default ~/.config/enroot/.credentials).
 * Returns 1 with *c filled, 0 when none, -1 on a malformed file. The
 * JSON files need jansson: this is plugin code. */
int reg_cred_find(const char *host, const char *repo, const char *user,
		  struct reg_cred *c, mpictr_err **err);
/* The netrc-style parser (Enroot's .credentials): the entry for machine
 * host (and login user when not NULL). Returns 1, 0 or -1 as above; fname
 * names the file in errors. Pure. */
int reg_netrc_find(const char *text, size_t len, const char *fname,
		   const char *host, const char *user, struct reg_cred *c,
		   mpictr_err **err);
/* The names a credential file may file host under (Docker Hub's several,
 * "https://" forms): whether key names host. Pure. */
bool reg_cred_key_matches(const char *key, const char *host);

/* A parsed WWW-Authenticate challenge. */
struct reg_challenge {
	enum { REG_AUTH_NONE, REG_AUTH_BASIC, REG_AUTH_BEARER } scheme;
	char *realm;
	char *service;
	char *scope;
	char *error; /* e.g. "insufficient_scope" */
};
/* Parse a WWW-Authenticate header value. Returns 0, or -1 when it is not
 * one challenge of a scheme we know. Pure. */
int reg_challenge_parse(const char *value, struct reg_challenge *ch);
void reg_challenge_free(struct reg_challenge *ch);
/* base64 of n bytes (for Basic), and its inverse (NULL when invalid). */
char *reg_base64(const void *data, size_t n);
char *reg_unbase64(const char *s, size_t *n);

/* ---- the client (registry.c, plugin) ------------------------------------ */

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
	reg_progress_fn progress;
	void *progress_data;
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

/* The platform ("linux/amd64", "linux/arm64/v8") an index entry must have
 * for arch (NULL: this machine's, from uname). Pure. */
char *reg_platform_wanted(const char *arch);

#endif
