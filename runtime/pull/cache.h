/* cache.h - the image cache: an OCI image layout of blobs, the SIFs built
 * from them, tag references, and the locks that let many pulls of one
 * image (8 ranks of a node, 8 jobs) share it. Pure POSIX: libmpictr uses it
 * to find an image pulled before without loading the pull plugin.
 *
 *   DIR/oci-layout, DIR/index.json   the OCI layout (index: tagged images)
 *   DIR/blobs/sha256/HEX             manifests, configs, layers
 *   DIR/images/sha256/HEX.sif        the SIF of image manifest sha256:HEX
 *   DIR/{blobs,images}/sha256/HEX.UID[.sif]  a member's own copy, where the
 *                                    shared name holds another's
 *   DIR/refs/HOST/REPO/:TAG          "MANIFEST TOP PLATFORM MEDIATYPE"
 *   DIR/locks/NAME.lock              fcntl locks (never removed)
 *   DIR/tmp/                         downloads and SIFs being written
 *
 * DIR: --cache-dir or $MPICTR_CACHEDIR, else the site's cache_dir, else
 * $XDG_CACHE_HOME/mpictr, else ~/.cache/mpictr. Files appear under a final
 * name only by rename(2) of a complete, verified file, so a pull killed at
 * any point leaves only files in tmp/ (removed by the next clean).
 */
#ifndef MPICTR_PULL_CACHE_H
#define MPICTR_PULL_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpictr.h"

/* The directories of a cache, each held open: every entry is reached
 * from these descriptors with O_NOFOLLOW, never by a path another user
 * could have replaced (docs/security.md, "Shared image cache"). */
enum cache_sub {
	CACHE_BLOBS,  /* blobs/sha256 */
	CACHE_IMAGES, /* images/sha256 */
	CACHE_REFS,   /* refs */
	CACHE_LOCKS,  /* locks */
	CACHE_TMP,    /* tmp */
	CACHE_NSUB
};

struct cache {
	char *dir;
	int lockfd; /* the shared lock on locks/cache.lock (clean: exclusive) */
	bool shared; /* group-writable: a site's cache (files for the group) */
	int rootfd;
	int fd[CACHE_NSUB];
	uid_t owner;	    /* the root's owner: trusted with root and us */
	unsigned lock_wait; /* seconds a lock held by another is waited for */
};

/* What a blob or image of the cache is to us. */
enum cache_entry {
	CACHE_MISSING, /* not there (or not a regular file, or the wrong size)
			*/
	CACHE_TRUSTED, /* ours, root's or the cache owner's: used as it is */
	CACHE_OTHERS,  /* another member's: verified before use */
};

/* How long a lock another process holds is waited for (seconds): the
 * default, and the variable that changes it. */
#define CACHE_LOCK_WAIT 900
#define CACHE_LOCK_WAIT_ENV "MPICTR_CACHE_LOCK_WAIT"

/* The cache directory: dir if not NULL, else $MPICTR_CACHEDIR, else
 * site_dir (the site configuration's cache_dir) if not NULL, else
 * $XDG_CACHE_HOME/mpictr or $HOME/.cache/mpictr, the variables read from
 * env (NULL: this process's environment; a SPANK task passes the job's,
 * since slurmstepd's own HOME is root's or unset), else the calling
 * user's home in the user database + /.cache/mpictr. Returns a new
 * string, or NULL with *err when there is no home to put it in. */
char *cache_dir_choose(const char *dir, const char *site_dir, char *const *env,
		       mpictr_err **err);
/* Open (creating the layout if needed) the cache in dir and take the
 * shared cache lock that `cache clean` waits for. A directory we create
 * ourselves is 0700; an existing one must be owned by us or by root and
 * not writable by others; a group-writable one (a site's shared cache,
 * 3775) must be sticky, its directories owned by us, root or the cache's
 * owner (only they create them), and gets sticky group-writable
 * directories and group-writable locks. */
int cache_open(struct cache *c, const char *dir, mpictr_err **err);
void cache_close(struct cache *c);

/* Whether d is "sha256:" and 64 lower-case hex digits. */
bool cache_digest_valid(const char *d);

/* The path of the blob as this user reads it: DIR/blobs/sha256/HEX, or
 * HEX.UID when the shared name holds another member's bad copy and ours
 * is beside it (digest validated by the caller). */
char *cache_blob_path(const struct cache *c, const char *digest);
/* The blob's state, with size (UINT64_MAX: any); for CACHE_OTHERS *fd
 * (when fd is not NULL) is the file, opened, for the caller to verify. */
enum cache_entry cache_blob(const struct cache *c, const char *digest,
			    uint64_t size, int *fd);
/* Whether the blob is there with that size (size UINT64_MAX: any),
 * whoever wrote it (what reads it verifies its digest). */
bool cache_has_blob(const struct cache *c, const char *digest, uint64_t size);
/* Give the verified file tmp (in DIR/tmp, ours) the blob's name: the
 * shared name unless taken, else HEX.UID. */
int cache_commit_blob(const struct cache *c, const char *tmp,
		      const char *digest, mpictr_err **err);
/* DIR/images/sha256/HEX.sif for the image manifest digest (messages). */
char *cache_image_path(const struct cache *c, const char *digest);
/* The SIF of the image manifest digest that this user may run: ours,
 * root's or the cache owner's, writable by no one else (HEX.sif, else our
 * HEX.UID.sif); NULL when there is none (another member's is never run). */
char *cache_image_find(const struct cache *c, const char *digest);
bool cache_has_image(const struct cache *c, const char *digest);
/* Give the SIF tmp (in DIR/tmp, ours) its name (as cache_commit_blob),
 * read-only for all but us; its final path in *final. */
int cache_commit_image(const struct cache *c, const char *tmp,
		       const char *digest, char **final, mpictr_err **err);

/* Take the exclusive lock DIR/locks/NAME.lock, waiting for it (a bounded
 * time, with a notice every 10 s, then an error naming the holder); the
 * fd to give to cache_unlock(), or -1 with *err. */
int cache_lock(const struct cache *c, const char *name, mpictr_err **err);
void cache_unlock(int fd);

/* A new file DIR/tmp/PREFIX.PID.RANDOM.partial (O_EXCL, 0644): its fd,
 * path in *path. */
int cache_tmpfile(const struct cache *c, const char *prefix, char **path,
		  mpictr_err **err);
/* A path DIR/tmp/PREFIX.PID.RANDOM.partial that does not exist yet (for a
 * writer that creates its own file, O_EXCL). */
char *cache_tmpname(const struct cache *c, const char *prefix);
/* Remember path (a partial file of this process) for
 * cache_tmp_remove_all; cache_tmpname and cache_tmpfile do it. */
void cache_tmp_track(const char *path);
/* Remove every partial file remembered: async-signal-safe, for a handler
 * of SIGINT/SIGTERM/SIGHUP that then lets the signal end the process. */
void cache_tmp_remove_all(void);

/* The tag reference name ("host/repo:tag") -> what it was last resolved
 * to. cache_ref_get: 1 and *manifest (and *top when not NULL) set, 0 when
 * unknown. cache_ref_set also rewrites DIR/index.json. */
int cache_ref_set(const struct cache *c, const char *host, const char *repo,
		  const char *tag, const char *manifest, const char *top,
		  const char *platform, const char *media_type,
		  mpictr_err **err);
int cache_ref_get(const struct cache *c, const char *host, const char *repo,
		  const char *tag, char **manifest, char **top);
/* Is the tag's reference file this user's own (a regular file, not
 * another member's of a shared cache)? What a run may start by tag
 * without the registry (pull_run.c) rests on it. */
bool cache_ref_own(const struct cache *c, const char *host, const char *repo,
		   const char *tag);

/* `mpictr cache list`: one line per image, "DIGEST SIZE NAME..." (names
 * the tags that last resolved to it), then a line of totals. */
char *cache_list_text(const struct cache *c);
/* `mpictr cache clean`: remove images, blobs, refs and tmp/ (all:
 * everything; otherwise only tmp/ leftovers and blobs/images no tag
 * names). Takes the cache lock exclusively without waiting: fails with
 * EBUSY when a pull is running. Bytes freed in *freed. */
int cache_clean(const char *dir, bool all, uint64_t *freed, mpictr_err **err);

#endif
