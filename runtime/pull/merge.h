/* merge.h - the top-down streaming merge of an image's layers into a
 * struct tree, file data straight into the squashfs writer (docs/pull.md
 * "How layers are merged"). */
#ifndef MPICTR_PULL_MERGE_H
#define MPICTR_PULL_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "pull/pull.h"
#include "pull/sqfs.h"
#include "pull/tree.h"

enum layer_comp { LAYER_TAR, LAYER_GZIP, LAYER_ZSTD };

/* One layer: size bytes at off in fd, whose sha256 must be digest. */
struct layer_src {
	int fd;
	uint64_t off, size;
	char digest[72]; /* "sha256:<64 hex>" */
	enum layer_comp comp;
};

/* Merge layers[0..n) (base first) into t, writing file data to w.
 * what names the image in messages. */
int merge_layers(struct tree *t, struct sqw *w, const struct layer_src *layers,
		 size_t n, const char *what, unsigned max_expansion,
		 struct pull_stats *st, mpictr_err **err);

/* Normalize a member name: "./a//b/" -> "a/b", "./" -> "". -1 for an
 * absolute name or a ".." component. Caller frees *out. */
int merge_norm_path(const char *raw, char **out);

#endif
