/* pull.h - `mpictr pull`: the "pull" plugin (mpictr-pull.so, loaded on
 * first use as runtime/common/plugin.h describes: libarchive, libsquashfs,
 * jansson, libcrypto and libcurl are linked into it, never into libmpictr).
 *
 * Every source ends in one code path: an OCI image layout (oci-layout,
 * index.json, blobs/sha256/<hex>) and a manifest digest in it, given to
 * pull_assemble(). oci:DIR is such a layout; oci-archive: and
 * docker-archive: files are indexed in place (local.c, store.c); the registry
 * client (registry.c) downloads the blobs into the cache's layout first.
 * Manifests and indexes of every source go through one OCI model (oci.c).
 *
 * Which side a file is on (PULL_HOST_SRCS in the Makefile): pull_stub.c,
 * pull_run.c and cache.c are in libmpictr (cache.c in the plugin too: a
 * run finds a cached image without loading it); every other file of
 * runtime/pull/ is the plugin's.
 */
#ifndef MPICTR_PULL_H
#define MPICTR_PULL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "config/imageref.h"

/* The default and the flag that lifts it: a layer may expand to at most
 * this many times its compressed size (a "zip bomb" guard). */
#define PULL_MAX_EXPANSION 100

/* The bound on a pull's memory that the layers decide: the merged file
 * tree (about 150 bytes and the path per entry), the hidden names of a
 * layer and the hardlinks still to resolve. A layer that needs more is
 * refused; --no-expansion-limit lifts this too. The rest of a pull's
 * memory is fixed (buffers, libraries: about 15 MiB) but for the JSON
 * documents (at most 4 MiB each). */
#define PULL_MAX_TREE (48u << 20)

/* A transfer slower than PULL_LOW_SPEED bytes a second for the stall
 * timeout (--stall-timeout SECONDS, MPICTR_PULL_STALL_TIMEOUT) ends the
 * pull: a registry that stalls or trickles cannot hold it for ever. */
#define PULL_LOW_SPEED 1024
#define PULL_STALL_TIMEOUT 60

struct pull_opts {
	bool force;		/* replace an existing OUT */
	bool quiet;		/* -q: no progress */
	const char *arch;	/* --arch: platform of a multi-arch index */
	const char *tls_ca;	/* --tls-ca FILE */
	const char *insecure;	/* --insecure HOST[,HOST]: plain HTTP */
	unsigned max_expansion; /* 0 = no limit (--no-expansion-limit) */
	unsigned stall_timeout; /* s, 0 = PULL_STALL_TIMEOUT */
	int comp_level;		/* zstd level, 0 = default (3) */
	const char *cache_dir;	/* NULL: the default (h22b) */
	bool run_time;		/* a run verb's pull: hints for run verbs */
	/* Progress lines (NULL: none). A transient line (byte counts) may be
	 * overwritten in place by the next on a terminal, or dropped. */
	void (*progress)(const char *line, int transient, void *data);
	void *progress_data;
};

/* What a pull did, for the summary line and the tests. */
struct pull_stats {
	uint64_t layers;
	uint64_t entries;   /* inodes written */
	uint64_t devices;   /* device nodes dropped */
	uint64_t hidden;    /* members hidden by upper layers or whiteouts */
	uint64_t bytes_in;  /* uncompressed layer bytes read */
	uint64_t sif_bytes; /* size of the SIF written */
	char manifest_digest[72];
};

/* The assembler: merge the layers of the image whose manifest is
 * manifest_digest ("sha256:<hex>") in the OCI layout at layout_dir into
 * the SIF out (written as a temporary beside it, then renamed; an existing
 * out is refused unless o->force). what names the image in messages
 * ("docker://host/repo:tag"). Returns 0 or -1 with *err. */
int pull_assemble(const char *layout_dir, const char *manifest_digest,
		  const char *out, const char *what, const struct pull_opts *o,
		  struct pull_stats *st, mpictr_err **err);

/* The registry forms (docker://, bare, Pyxis): fetch into the cache's
 * layout and assemble, or find the image cached. *sif_out receives the
 * path of the SIF in the cache; when out is not NULL the SIF is also
 * copied (or linked) there. Provided by registry.c. */
int pull_registry(const struct image_ref *ref, const char *out,
		  const struct pull_opts *o, struct pull_stats *st,
		  char **sif_out, mpictr_err **err);

/* The local forms: oci:DIR[:REF], oci-archive:FILE[:REF],
 * docker-archive:FILE[:REF]. */
int pull_local(const struct image_ref *ref, const char *out,
	       const struct pull_opts *o, struct pull_stats *st,
	       mpictr_err **err);

/* Any source: the dispatcher the plugin table points at. */
int pull_source(const struct image_ref *ref, const char *out,
		const struct pull_opts *o, struct pull_stats *st,
		char **sif_out, mpictr_err **err);

/* The plugin's table (runtime/common/plugin.h). */
struct pull_plugin {
	int (*pull)(const struct image_ref *ref, const char *out,
		    const struct pull_opts *o, struct pull_stats *st,
		    char **sif_out, mpictr_err **err);
	int (*assemble)(const char *layout_dir, const char *manifest_digest,
			const char *out, const char *what,
			const struct pull_opts *o, struct pull_stats *st,
			mpictr_err **err);
};

/* Host side (pull_stub.c, in libmpictr): load the plugin and call it. */
int pull_image(const struct image_ref *ref, const char *out,
	       const struct pull_opts *o, struct pull_stats *st, char **sif_out,
	       mpictr_err **err);

/* Host side (pull_stub.c, in libmpictr). The site configuration's
 * cache_dir, or NULL. */
char *pull_site_cache_dir(void);
/* Host side (pull_run.c, in libmpictr). */
/* When cfg->image is a registry reference, replace it with the path of its
 * SIF in the cache, pulling it first unless it is cached by digest
 * (MPICTR_PULL_INSECURE, MPICTR_PULL_TLS_CA, MPICTR_PULL_ARCH and
 * MPICTR_CACHEDIR of cfg's environment are the pull's options). Other
 * images are left alone. */
struct mpictr_config;
int pull_resolve_image(struct mpictr_config *cfg, mpictr_err **err);

#endif
