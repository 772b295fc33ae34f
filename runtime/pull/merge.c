/* merge.c - merge the layers of an image top-down, as streams (merge.h).
 *
 * Layers are read topmost first, each once, with libarchive over a reader
 * that hashes the compressed bytes as they pass. The first occurrence of a
 * path wins, so only the data of files that survive is compressed:
 *   - ".wh.NAME" hides NAME and its subtree in the layers below;
 *     ".wh..wh..opq" hides the lower children of its directory;
 *   - a member is hidden when its path exists from above, when an
 *     ancestor exists from above as a non-directory or was whited out, or
 *     when an ancestor is opaque; a directory over a directory that an
 *     upper layer only implied (a/b/c without a/b) gives it attributes;
 *   - a member under a symlink is refused (never followed), in its own
 *     layer and under an upper layer's implied directory;
 *   - hardlinks share the inode of their target: in the same layer, in a
 *     lower one (resolved when it arrives), or hidden from above in the
 *     same layer (the layer is read again for it);
 *   - devices and sockets are dropped and counted; owners, modes, mtimes
 *     and the user., security. and trusted. xattrs are kept;
 *   - a name given twice in a layer: the later member wins, as when the
 *     layer is extracted (umoci).
 * Anything malformed fails the pull: "..", absolute names, a bare ".wh.",
 * hardlinks to nothing, to a directory, to themselves or in a cycle,
 * names over PATH_MAX, a layer that expands more than max_expansion
 * times or whose tree needs more than PULL_MAX_TREE, a digest that does
 * not match. Every member costs a bounded number of hash lookups (no
 * walk of earlier members), so no layer makes the merge quadratic.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "pull/merge.h"

#define READ_CHUNK (256u << 10)
/* Slack on top of max_expansion x the compressed size: a small layer of
 * empty files is mostly tar headers and compresses far better than 100x. */
#define EXPANSION_SLACK (16u << 20)
/* What the block processor's inode of a file with data costs, and each
 * pending hardlink besides its path (counted against PULL_MAX_TREE). */
#define FILE_INODE_BYTES 96u
#define PENDING_BYTES 64u
/* What the kernel takes: a longer xattr could never be set. */
#define XATTR_VALUE_MAX 65536u

/* A hardlink whose target is still to be found. They are kept by target
 * in a hash table (struct tree, the pending list of a target in the
 * node's pend), so that each member costs one lookup however many
 * hardlinks wait. */
struct pending {
	char *from;	   /* the hardlink's own path */
	int layer;	   /* the layer of the hardlink */
	struct node *node; /* the hardlink's node, linked when found; NULL
			      for a hidden or replaced hardlink, only
			      checked */
	struct pending *next;
};

struct pendings {
	struct tree ix; /* by target; node->pend: its struct pending list */
	size_t count;	/* hardlinks waiting */
	size_t bytes;	/* their memory, as counted (never less) */
};

/* The directories this layer has put members under, as 64-bit hashes of
 * their paths (open addressing, 0 is empty); a collision only makes a
 * rare refusal below more likely. */
struct hset {
	uint64_t *v;
	size_t cap, count;
};

struct merge {
	struct tree *t;
	struct sqw *w;
	const struct layer_src *layers;
	const char *what;
	unsigned max_expansion;
	struct pull_stats *st;
	struct pendings lower;	   /* targets in a lower layer */
	struct pendings lower_new; /* the same, added by this layer */
	struct pendings same;	   /* targets hidden from above, this layer */
	struct tree hidden;	   /* this layer's hidden non-directories */
	struct hset under;	   /* this layer's parent directories */
	mpictr_err **err;
};

static bool hset_has(const struct hset *h, uint64_t k)
{
	for (size_t i = k & (h->cap - 1); h->cap && h->v[i];
	     i = (i + 1) & (h->cap - 1))
		if (h->v[i] == k)
			return true;
	return false;
}

static void hset_add(struct hset *h, uint64_t k)
{
	if (hset_has(h, k))
		return;
	if (2 * (h->count + 1) > h->cap) {
		struct hset g = {.cap = h->cap ? 2 * h->cap : 1024};
		g.v = xcalloc(g.cap, sizeof(*g.v));
		for (size_t i = 0; i < h->cap; i++)
			if (h->v[i])
				hset_add(&g, h->v[i]);
		free(h->v);
		*h = g;
	}
	for (size_t i = k & (h->cap - 1);; i = (i + 1) & (h->cap - 1))
		if (!h->v[i]) {
			h->v[i] = k;
			h->count++;
			return;
		}
}

static void hset_free(struct hset *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

/* The tree's keyed hash of s[0..n), never 0. */
static uint64_t path_key(const char *s, size_t n)
{
	uint64_t k = tree_hash(s, n);

	return k ? k : 1;
}

/* Record the parent directories of member path in m->under. */
static void note_parents(struct merge *m, const char *path)
{
	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/'))
		hset_add(&m->under, path_key(path, (size_t)(s - path)));
}

/* The layer reader: libarchive's client callback over fd. */
struct lreader {
	const struct layer_src *src;
	uint64_t pos;
	EVP_MD_CTX *md;
	unsigned char *buf;
	int errnum;
};

enum verdict { V_HIDDEN, V_NEW, V_ATTRS, V_REPLACE };

static la_ssize_t lr_read(struct archive *a, void *data, const void **out)
{
	struct lreader *r = data;
	uint64_t left = r->src->size - r->pos;
	size_t want = left < READ_CHUNK ? (size_t)left : READ_CHUNK;

	(void)a;
	*out = r->buf;
	if (want == 0)
		return 0;
	if (pread_full(r->src->fd, r->buf, want,
		       (off_t)(r->src->off + r->pos)) < 0) {
		r->errnum = errno ? errno : EIO;
		if (a)
			archive_set_error(a, r->errnum, "read");
		return -1;
	}
	EVP_DigestUpdate(r->md, r->buf, want);
	r->pos += want;
	return (la_ssize_t)want;
}

int merge_norm_path(const char *raw, char **out)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = raw;

	*out = NULL;
	if (raw[0] == '/' && raw[strspn(raw, "/.")] != '\0')
		return -1;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(sb_steal(&sb));
			return -1;
		}
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (sb.len)
				sb_putc(&sb, '/');
			sb_add(&sb, p, n);
		}
		p += n;
		while (*p == '/')
			p++;
	}
	*out = sb.len ? sb_steal(&sb) : (free(sb_steal(&sb)), xstrdup(""));
	return 0;
}

static int bad_member(struct merge *m, int layer, const char *path,
		      const char *why)
{
	return err_set(m->err, EINVAL, "%s: layer %d (%s): member '%s': %s",
		       m->what, layer + 1, m->layers[layer].digest, path, why);
}

static int check_expansion(struct merge *m, struct archive *a, int layer)
{
	uint64_t in = (uint64_t)archive_filter_bytes(a, 0);
	uint64_t cap = (uint64_t)m->max_expansion * m->layers[layer].size +
		       EXPANSION_SLACK;

	if (m->max_expansion && in > cap) {
		err_set(m->err, EFBIG,
			"%s: layer %d (%s) expands to more than %u times its "
			"%" PRIu64 " compressed bytes",
			m->what, layer + 1, m->layers[layer].digest,
			m->max_expansion, m->layers[layer].size);
		return err_hint(m->err, "a legitimate image: pull with "
					"--no-expansion-limit");
	}
	return 0;
}

/* The pull's memory bound (PULL_MAX_TREE, docs/pull.md "Memory"): what
 * the tree, this layer's hidden names and the pending hardlinks hold. */
static int check_memory(struct merge *m, int layer)
{
	size_t used = m->t->bytes + m->hidden.bytes +
		      m->under.cap * sizeof(*m->under.v) + m->lower.ix.bytes +
		      m->lower.bytes + m->lower_new.ix.bytes +
		      m->lower_new.bytes + m->same.ix.bytes + m->same.bytes;

	if (!m->max_expansion || used <= PULL_MAX_TREE)
		return 0;
	err_set(m->err, EFBIG,
		"%s: layer %d (%s): the file tree needs more than the %u MiB "
		"a pull may hold (%" PRIu64 " entries so far)",
		m->what, layer + 1, m->layers[layer].digest,
		PULL_MAX_TREE >> 20, m->st->entries);
	return err_hint(m->err, "a legitimate image: pull with "
				"--no-expansion-limit");
}

static int archive_fail(struct merge *m, struct archive *a, int layer)
{
	int e = archive_errno(a);

	return err_set(m->err, e > 0 ? e : 0, "%s: layer %d (%s): %s", m->what,
		       layer + 1, m->layers[layer].digest,
		       archive_error_string(a) ? archive_error_string(a)
					       : "unreadable tar");
}

/* Read the data of the current entry into file node n (NULL: discard),
 * sparse holes as zeros. */
static int copy_data(struct merge *m, struct archive *a, int layer,
		     struct node *n)
{
	static const char zeros[65536];
	const void *buf;
	size_t len;
	la_int64_t off;
	uint64_t at = 0;
	bool begun = false;
	int rc;

	while ((rc = archive_read_data_block(a, &buf, &len, &off)) ==
	       ARCHIVE_OK) {
		if (check_expansion(m, a, layer) < 0)
			return -1;
		if (!n || (!len && (off < 0 || (uint64_t)off <= at)))
			continue;
		/* begun at the first byte: an empty file takes no inode of
		 * the block processor (sqfs.c writes it) */
		if (!begun && sqw_file_begin(m->w, n, m->err) < 0)
			return -1;
		if (!begun)
			m->t->bytes += FILE_INODE_BYTES;
		begun = true;
		while (off >= 0 && (uint64_t)off > at) {
			size_t z = (uint64_t)off - at < sizeof(zeros)
				       ? (size_t)((uint64_t)off - at)
				       : sizeof(zeros);
			if (sqw_file_append(m->w, zeros, z, m->err) < 0)
				return -1;
			at += z;
		}
		if (len && sqw_file_append(m->w, buf, len, m->err) < 0)
			return -1;
		at += len;
	}
	if (rc != ARCHIVE_EOF)
		return archive_fail(m, a, layer);
	m->t->bytes += at / (128u << 10) * 4; /* the inode's block sizes */
	return begun ? sqw_file_end(m->w, m->err) : 0;
}

static bool keep_xattr(const char *key)
{
	if (strncmp(key, "trusted.overlay.", 16) == 0)
		return false;
	return strncmp(key, "user.", 5) == 0 ||
	       strncmp(key, "security.", 9) == 0 ||
	       strncmp(key, "trusted.", 8) == 0;
}

static int set_attrs(struct merge *m, struct node *n, struct archive_entry *e,
		     int layer)
{
	const char *key;
	const void *value;
	size_t size;

	node_clear(n);
	n->layer = layer;
	n->implicit = false;
	n->ghost = false;
	n->mode = archive_entry_perm(e) & 07777;
	n->uid = (uint32_t)archive_entry_uid(e);
	n->gid = (uint32_t)archive_entry_gid(e);
	n->mtime = archive_entry_mtime(e) < 0 ? 0
		   : archive_entry_mtime(e) > 0xFFFFFFFFLL
		       ? 0xFFFFFFFFu
		       : (uint32_t)archive_entry_mtime(e);
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &key, &value, &size) == ARCHIVE_OK) {
		if (!keep_xattr(key))
			continue;
		if (strlen(key) > 255 || size > XATTR_VALUE_MAX)
			return bad_member(m, layer, n->path,
					  "an xattr larger than the kernel "
					  "takes (name 255, value 65536 "
					  "bytes)");
		m->t->bytes += sizeof(*n->xattrs) + strlen(key) + size + 32;
		n->xattrs =
		    xrealloc(n->xattrs, (n->nxattrs + 1) * sizeof(*n->xattrs));
		n->xattrs[n->nxattrs].key = xstrdup(key);
		n->xattrs[n->nxattrs].value = xmalloc(size ? size : 1);
		memcpy(n->xattrs[n->nxattrs].value, value, size);
		n->xattrs[n->nxattrs].size = size;
		n->nxattrs++;
	}
	return 0;
}

static enum node_kind entry_kind(struct archive_entry *e)
{
	switch (archive_entry_filetype(e)) {
	case AE_IFDIR:
		return NODE_DIR;
	case AE_IFLNK:
		return NODE_SLINK;
	case AE_IFIFO:
		return NODE_FIFO;
	case AE_IFREG:
		return NODE_FILE;
	default:
		return NODE_DROPPED;
	}
}

/* The ancestors of path, as seen by a member of layer L: V_HIDDEN, V_NEW
 * (visible), or -1 (a member under a same-layer non-directory). */
static int check_ancestors(struct merge *m, const char *path, int L)
{
	cleanup_free char *q = xstrdup(path);

	/* the root is every path's ancestor: an opaque "./.wh..wh..opq" */
	if (path[0] && m->t->root->hide_lower > L)
		return V_HIDDEN;
	for (char *s = strchr(q, '/'); s; s = strchr(s + 1, '/')) {
		struct node *a;
		*s = '\0';
		a = tree_get(m->t, q);
		if (!a)
			return V_NEW;
		if (a->kind == NODE_DIR) {
			if (a->hide_lower > L)
				return V_HIDDEN;
		} else if (a->kind == NODE_WHITEOUT && a->layer == L) {
			/* deleted below, recreated here as a parent */
			a->kind = NODE_DIR;
			a->implicit = true;
			a->hide_lower = L;
			a->mode = 0755;
		} else if (a->layer > L) {
			return V_HIDDEN;
		} else {
			return bad_member(m, L, path,
					  a->kind == NODE_SLINK
					      ? "lies under a symlink of the "
						"same layer"
					      : "lies under a non-directory of "
						"the same layer");
		}
		*s = '/';
	}
	return V_NEW;
}

/* What a member of kind k in layer L does to the node n at its path. */
static int check_node(struct merge *m, struct node *n, const char *path,
		      enum node_kind k, int L)
{
	bool dir = k == NODE_DIR;

	if (n->layer > L) {
		if (n->kind != NODE_DIR || !n->implicit)
			return V_HIDDEN;
		if (dir)
			return V_ATTRS;
		if (n->ghost)
			return V_REPLACE;
		if (k == NODE_SLINK)
			return bad_member(m, L, path,
					  "is a symlink that an upper layer "
					  "has members under");
		return V_HIDDEN;
	}
	if (n->kind == NODE_WHITEOUT) {
		n->hide_lower = L;
		return V_REPLACE;
	}
	if (n->kind == NODE_DIR && dir)
		return V_ATTRS;
	if (n->kind == NODE_DIR && n->implicit)
		return bad_member(m, L, path,
				  "is not a directory but earlier members of "
				  "its layer lie under it");
	return V_REPLACE;
}

/* Create the missing ancestors of path (implicit directories of layer
 * L); ghost: for a whiteout. Returns the parent. */
static struct node *ensure_parents(struct merge *m, const char *path, int L,
				   bool ghost)
{
	cleanup_free char *q = xstrdup(path);
	struct node *parent = m->t->root;

	for (char *s = strchr(q, '/'); s; s = strchr(s + 1, '/')) {
		struct node *a;
		*s = '\0';
		a = tree_get(m->t, q);
		if (!a) {
			a = tree_add(m->t, parent, q, NODE_DIR);
			a->layer = L;
			a->implicit = true;
			a->ghost = ghost;
			a->mode = 0755;
		}
		*s = '/';
		parent = a;
	}
	if (!ghost)
		for (struct node *a = parent; a && a->ghost; a = a->parent)
			a->ghost = false;
	return parent;
}

static int whiteout(struct merge *m, const char *path, const char *base, int L)
{
	cleanup_free char *dir = xstrndup(path, (size_t)(base - path));
	cleanup_free char *target = NULL;
	struct node *n, *parent;
	int v;

	if (dir[0])
		dir[strlen(dir) - 1] = '\0'; /* the '/' before base */
	if (strcmp(base, ".wh..wh..opq") == 0) {
		if ((v = check_ancestors(m, path, L)) != V_NEW)
			return v < 0 ? -1 : 0;
		n = tree_get(m->t, dir);
		if (!n) {
			parent = ensure_parents(m, path, L, true);
			n = parent;
		}
		if (n->kind == NODE_DIR && n->hide_lower < L)
			n->hide_lower = L;
		return 0;
	}
	if (strncmp(base, ".wh..wh.", 8) == 0)
		return 0; /* aufs bookkeeping (.wh..wh.plnk ...) */
	if (!base[4])
		return bad_member(m, L, path, "a bare whiteout '.wh.'");
	target = dir[0] ? xasprintf("%s/%s", dir, base + 4) : xstrdup(base + 4);
	if ((v = check_ancestors(m, target, L)) != V_NEW)
		return v < 0 ? -1 : 0;
	n = tree_get(m->t, target);
	if (n) {
		/* recreated by this layer or implied by an upper one: the
		 * lower subtree is gone all the same */
		if (n->kind == NODE_DIR && n->hide_lower < L)
			n->hide_lower = L;
		return 0;
	}
	parent = ensure_parents(m, target, L, true);
	n = tree_add(m->t, parent, target, NODE_WHITEOUT);
	n->layer = L;
	return 0;
}

static void pendings_init(struct pendings *ps)
{
	tree_init(&ps->ix);
	ps->count = 0;
	ps->bytes = 0;
}

/* Hang list p (one or more entries) under target in ps. */
static void pendings_put(struct pendings *ps, const char *target,
			 struct pending *p)
{
	struct node *t = tree_get(&ps->ix, target);
	struct pending *last = p;

	if (!t)
		t = tree_add(&ps->ix, NULL, target, NODE_FILE);
	for (ps->count++; last->next; last = last->next)
		ps->count++;
	last->next = t->pend;
	t->pend = p;
}

static void pending_add(struct pendings *ps, const char *target, int layer,
			struct node *n, const char *from)
{
	struct pending *p = xcalloc(1, sizeof(*p));

	p->from = xstrdup(from);
	ps->bytes += PENDING_BYTES + strlen(from);
	p->layer = layer;
	p->node = n;
	if (n)
		n->pend = p;
	pendings_put(ps, target, p);
}

/* Take the list of hardlinks waiting for target out of ps. */
static struct pending *pendings_take(struct pendings *ps, const char *target)
{
	struct node *t = ps->count ? tree_get(&ps->ix, target) : NULL;
	struct pending *p = t ? t->pend : NULL;

	if (t)
		t->pend = NULL;
	for (struct pending *q = p; q; q = q->next)
		ps->count--;
	return p;
}

static void pending_free(struct pending *p)
{
	while (p) {
		struct pending *next = p->next;
		if (p->node)
			p->node->pend = NULL;
		free(p->from);
		free(p);
		p = next;
	}
}

/* Each target's list moved from src to dst; src emptied. */
static void pendings_move(struct pendings *dst, struct pendings *src)
{
	dst->bytes += src->bytes;
	for (size_t i = 0; src->count && i < src->ix.nbuckets; i++)
		for (struct node *t = src->ix.buckets[i]; t; t = t->hash_next)
			if (t->pend) {
				pendings_put(dst, t->path, t->pend);
				t->pend = NULL;
			}
	tree_free(&src->ix);
	pendings_init(src);
}

/* One hardlink still waiting in ps, and its target; NULL if none. */
static struct pending *pendings_any(const struct pendings *ps,
				    const char **target)
{
	for (size_t i = 0; ps->count && i < ps->ix.nbuckets; i++)
		for (struct node *t = ps->ix.buckets[i]; t; t = t->hash_next)
			if (t->pend) {
				*target = t->path;
				return t->pend;
			}
	return NULL;
}

static void pendings_free(struct pendings *ps)
{
	for (size_t i = 0; ps->ix.buckets && i < ps->ix.nbuckets; i++)
		for (struct node *t = ps->ix.buckets[i]; t; t = t->hash_next)
			pending_free(t->pend);
	tree_free(&ps->ix);
}

/* Point hardlink node n (layer L) at target: now if the target is a
 * visible node of layer L, else once it is found. */
static int link_to(struct merge *m, struct node *n, const char *target, int L)
{
	struct node *t = tree_get(m->t, target);

	if (t && t->layer == L && t->kind != NODE_WHITEOUT) {
		if (t->kind == NODE_DIR)
			return bad_member(m, L, n->path,
					  "is a hardlink to a directory");
		/* links go to earlier members, resolved (no chains to walk
		 * again), and a member that a link of its layer names is
		 * never replaced: no cycle can form but a link to itself */
		struct node *r = node_resolve(t);
		if (r == n)
			return bad_member(m, L, n->path,
					  t == n ? "is a hardlink to itself"
						 : "is a hardlink cycle");
		n->kind = r->kind;
		n->link = r;
		r->linked_same = true;
		return 0;
	}
	if (tree_get(&m->hidden, target))
		pending_add(&m->same, target, L, n, n->path);
	else
		pending_add(&m->lower_new, target, L, n, n->path);
	n->kind = NODE_FILE; /* until linked */
	return 0;
}

static int fill_node(struct merge *m, struct archive *a, struct node *n,
		     struct archive_entry *e, enum node_kind k, int L)
{
	const char *target = archive_entry_symlink(e);

	if (set_attrs(m, n, e, L) < 0)
		return -1;
	n->kind = (uint8_t)k;
	if (k == NODE_SLINK) {
		if (target && strlen(target) >= PATH_MAX)
			return bad_member(m, L, n->path,
					  "a symlink target longer than "
					  "PATH_MAX (4096)");
		n->target = xstrdup(target ? target : "");
		m->t->bytes += strlen(n->target) + 32;
		n->mode = 0777; /* what extracting one makes, whatever the
				   tar says */
	}
	if (k == NODE_DROPPED)
		m->st->devices++;
	if (k == NODE_FILE)
		return copy_data(m, a, L, n);
	return 0;
}

/* Whether hardlinks of upper layers wait for path. */
static bool wanted_lower(const struct merge *m, const char *path)
{
	const struct node *t =
	    m->lower.count ? tree_get(&m->lower.ix, path) : NULL;

	return t && t->pend;
}

/* The normalized target of hardlink path, or -1 with the error. */
static int link_target(struct merge *m, const char *hl, const char *path, int L,
		       char **target)
{
	*target = NULL;
	if (merge_norm_path(hl, target) < 0 || !(*target)[0])
		return bad_member(m, L, path,
				  "is a hardlink outside the image");
	if (strlen(*target) >= PATH_MAX)
		return bad_member(m, L, path,
				  "is a hardlink to a name longer than "
				  "PATH_MAX (4096)");
	return 0;
}

/* A hardlink hidden from above is checked all the same: a layer with a
 * hardlink outside the image, to a directory or to nothing is refused
 * whether or not the link survives. */
static int check_hidden_link(struct merge *m, const char *path, const char *hl,
			     int L)
{
	cleanup_free char *target = NULL;
	struct node *t;

	if (link_target(m, hl, path, L, &target) < 0)
		return -1;
	t = tree_get(m->t, target);
	if (t && t->layer == L && t->kind == NODE_DIR)
		return bad_member(m, L, path, "is a hardlink to a directory");
	if ((t && t->layer == L && t->kind != NODE_WHITEOUT) ||
	    tree_get(&m->hidden, target))
		return 0;
	pending_add(&m->lower_new, target, L, NULL, path);
	return 0;
}

/* Member path of layer L, of kind k, takes the place of node n: the
 * later member wins, as when the layer is extracted (what umoci does),
 * but never over a member that a hardlink names (that hardlink keeps the
 * old file where a tar extraction would; refused rather than guessed). */
static int replace(struct merge *m, struct node *n, const char *path,
		   enum node_kind k, int L)
{
	if (n->linked_same)
		return bad_member(
		    m, L, path,
		    "replaces an earlier member of its layer that "
		    "a hardlink names (a hardlink cycle or a "
		    "file given twice)");
	if (n->linked_upper && k == NODE_DIR)
		return bad_member(m, L, path,
				  "is a directory that a hardlink of an upper "
				  "layer names");
	if (n->pend) { /* a hardlink still waiting for its target */
		((struct pending *)n->pend)->node = NULL;
		n->pend = NULL;
	}
	if (n->layer == L && n->kind == NODE_DIR) {
		/* a directory's members are gone with it; so are the lower
		 * layers' */
		tree_drop_children(m->t, n);
		n->hide_lower = L;
	} else if (n->layer == L && k == NODE_DIR) {
		n->hide_lower = L; /* a new directory: nothing from below */
	}
	tree_retire_inode(m->t, n);
	return 0;
}

/* A member that is not a whiteout. *made: the node it became, or NULL
 * when hidden. */
static int on_member(struct merge *m, struct archive *a,
		     struct archive_entry *e, const char *path, int L,
		     struct node **made)
{
	enum node_kind k = entry_kind(e);
	const char *hl = archive_entry_hardlink(e);
	struct node *n = path[0] ? tree_get(m->t, path) : m->t->root;
	int v;

	*made = NULL;
	if (hl)
		k = NODE_FILE;
	v = check_ancestors(m, path, L);
	if (v == V_NEW && n) {
		v = check_node(m, n, path, k, L);
		/* a non-directory under an upper directory replaced what the
		 * layers below had there: their children are gone; so are the
		 * earlier members of its own layer under it, which merged
		 * with the upper directory already: refused, not unpicked */
		if (v == V_HIDDEN && k != NODE_DIR && n->kind == NODE_DIR &&
		    hset_has(&m->under, path_key(path, strlen(path))))
			return bad_member(m, L, path,
					  "is not a directory but earlier "
					  "members of its layer lie under it "
					  "and an upper layer has a directory "
					  "there (not merged)");
		if (v == V_HIDDEN && k != NODE_DIR && n->kind == NODE_DIR &&
		    n->hide_lower < L)
			n->hide_lower = L;
	}
	if (v < 0)
		return -1;
	if (v == V_HIDDEN) {
		m->st->hidden++;
		if (k != NODE_DIR)
			tree_add(&m->hidden, NULL, path, NODE_FILE);
		if (hl)
			return check_hidden_link(m, path, hl, L);
		/* read through it here, where the expansion is checked,
		 * unless a hardlink above needs the data */
		return k == NODE_FILE && !wanted_lower(m, path)
			   ? copy_data(m, a, L, NULL)
			   : 0;
	}
	if (v != V_NEW)
		for (struct node *p = n->parent; p && p->ghost; p = p->parent)
			p->ghost = false;
	if (v == V_ATTRS) {
		*made = n;
		return set_attrs(m, n, e, L);
	}
	if (v == V_REPLACE && replace(m, n, path, k, L) < 0)
		return -1;
	if (v != V_REPLACE)
		n = tree_add(m->t, ensure_parents(m, path, L, false), path, k);
	*made = n;
	if (hl) {
		cleanup_free char *target = NULL;
		if (link_target(m, hl, path, L, &target) < 0 ||
		    set_attrs(m, n, e, L) < 0)
			return -1;
		return link_to(m, n, target, L);
	}
	return fill_node(m, a, n, e, k, L);
}

/* Member path of layer L is the target of lower hardlinks: link them to
 * made (the member's node) or, when hidden, to a detached copy. */
static int resolve_lower(struct merge *m, struct archive *a,
			 struct archive_entry *e, const char *path, int L,
			 struct node *made)
{
	struct pending *list = pendings_take(&m->lower, path);
	struct node *copy = NULL;
	int rc = 0;

	for (struct pending *p = list; p && rc == 0; p = p->next) {
		if (entry_kind(e) == NODE_DIR) {
			rc = bad_member(m, p->layer, p->from,
					"is a hardlink to a directory");
			break;
		}
		if (!p->node) /* a hidden one: its target exists */
			continue;
		if (!made && !copy) {
			copy = tree_detached(m->t, path);
			if (archive_entry_hardlink(e)) {
				rc = bad_member(m, L, path,
						"is a hardlink that a hardlink "
						"of an upper layer names");
				break;
			}
			if ((rc = fill_node(m, a, copy, e, entry_kind(e), L)) <
			    0)
				break;
		}
		p->node->link = made ? made : copy;
		p->node->link->linked_upper = true;
		p->node->kind = node_resolve(p->node->link)->kind;
	}
	pending_free(list);
	return rc;
}

/* Second reading of layer L: the same-layer hardlink targets that were
 * hidden from above. */
static int on_reread(struct merge *m, struct archive *a,
		     struct archive_entry *e, const char *path, int L)
{
	struct pending *list = pendings_take(&m->same, path);
	struct node *copy = NULL;
	int rc = 0;

	for (struct pending *p = list; p && rc == 0; p = p->next) {
		if (!p->node) /* replaced since */
			continue;
		if (!copy) {
			if (archive_entry_hardlink(e)) {
				rc = bad_member(m, L, p->from,
						"is a hardlink to a hardlink");
				break;
			}
			copy = tree_detached(m->t, path);
			if ((rc = fill_node(m, a, copy, e, entry_kind(e), L)) <
			    0)
				break;
		}
		p->node->link = copy;
		p->node->kind = copy->kind;
	}
	pending_free(list);
	return rc;
}

/* Whether a component of path is longer than the kernel (and squashfs)
 * take. */
static bool long_component(const char *path)
{
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n > NAME_MAX)
			return true;
		p += n + (p[n] == '/');
	}
	return false;
}

static int on_entry(struct merge *m, struct archive *a, struct archive_entry *e,
		    int L, bool reread)
{
	const char *raw = archive_entry_pathname(e);
	cleanup_free char *path = NULL;
	const char *base;
	struct node *made = NULL;

	if (!raw || merge_norm_path(raw, &path) < 0)
		return bad_member(m, L, raw ? raw : "(no name)",
				  "an absolute name or a '..' component");
	if (strlen(path) >= PATH_MAX || long_component(path))
		return bad_member(m, L, path,
				  "a name longer than PATH_MAX (4096) or a "
				  "component longer than NAME_MAX (255)");
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (strncmp(base, ".wh.", 4) == 0)
		return reread ? 0 : whiteout(m, path, base, L);
	if (reread)
		return on_reread(m, a, e, path, L);
	note_parents(m, path);
	if (on_member(m, a, e, path, L, &made) < 0)
		return -1;
	if (wanted_lower(m, path))
		return resolve_lower(m, a, e, path, L, made);
	return 0;
}

static int finish_digest(struct merge *m, struct lreader *r, int L)
{
	const struct layer_src *src = &m->layers[L];
	unsigned char md[EVP_MAX_MD_SIZE];
	char hex[2 * EVP_MAX_MD_SIZE + 8];
	unsigned mdlen = 0;
	const void *unused;

	/* libarchive stops at the end-of-archive blocks: hash the rest */
	while (r->pos < src->size)
		if (lr_read(NULL, r, &unused) < 0)
			return err_set(m->err, r->errnum, "%s: layer %d (%s)",
				       m->what, L + 1, src->digest);
	EVP_DigestFinal_ex(r->md, md, &mdlen);
	strcpy(hex, "sha256:");
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 7 + 2 * i, 3, "%02x", md[i]);
	if (strcmp(hex, src->digest) != 0)
		return err_set(m->err, EBADMSG,
			       "%s: layer %d: digest mismatch: the blob is %s, "
			       "the manifest says %s",
			       m->what, L + 1, hex, src->digest);
	return 0;
}

/* Whether the rest of the layer hashes to its digest (errors aside). */
static bool digest_checked(struct merge *m, struct lreader *r, int L)
{
	mpictr_err *e = NULL;
	struct merge quiet = *m;
	struct lreader copy = *r;
	bool ok;

	quiet.err = &e;
	copy.md = EVP_MD_CTX_new();
	EVP_MD_CTX_copy_ex(copy.md, r->md);
	ok = finish_digest(&quiet, &copy, L) == 0;
	EVP_MD_CTX_free(copy.md);
	mpictr_err_free(e);
	return ok;
}

static struct archive *open_layer(struct lreader *r)
{
	struct archive *a = archive_read_new();

	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (r->src->comp == LAYER_GZIP)
		archive_read_support_filter_gzip(a);
	else if (r->src->comp == LAYER_ZSTD)
		archive_read_support_filter_zstd(a);
	if (archive_read_open(a, r, NULL, lr_read, NULL) != ARCHIVE_OK)
		return a; /* the caller reports the error */
	return a;
}

static int scan_layer(struct merge *m, int L, bool reread)
{
	struct lreader r = {.src = &m->layers[L]};
	struct archive_entry *e;
	struct archive *a;
	int rc = 0, ar;

	r.md = EVP_MD_CTX_new();
	r.buf = xmalloc(READ_CHUNK);
	EVP_DigestInit_ex(r.md, EVP_sha256(), NULL);
	a = open_layer(&r);
	/* gzip or zstd then tar, or tar: the media type's one filter at
	 * most ("none" counts as one), never a stream compressed twice */
	if (archive_filter_count(a) > (r.src->comp == LAYER_TAR ? 1 : 2))
		rc = err_set(m->err, EINVAL,
			     "%s: layer %d (%s) is compressed twice (%s over "
			     "%s): not what its media type says",
			     m->what, L + 1, m->layers[L].digest,
			     archive_filter_name(a, 1),
			     archive_filter_name(a, 0));
	while (rc == 0 &&
	       (ar = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
		if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
			rc = archive_fail(m, a, L);
			break;
		}
		rc = check_expansion(m, a, L);
		if (rc == 0)
			rc = on_entry(m, a, e, L, reread);
		if (rc == 0)
			rc = check_memory(m, L);
		if (rc == 0 && !reread)
			m->st->entries++;
	}
	if (rc == 0) {
		rc = finish_digest(m, &r, L);
	} else if (!digest_checked(m, &r, L)) {
		/* a corrupt blob: its digest is the cause to report */
		mpictr_err_free(*m->err);
		*m->err = NULL;
		finish_digest(m, &r, L);
	}
	if (rc == 0 && !reread)
		m->st->bytes_in += (uint64_t)archive_filter_bytes(a, 0);
	archive_read_free(a);
	EVP_MD_CTX_free(r.md);
	free(r.buf);
	return rc;
}

static int unresolved(struct merge *m, const struct pendings *ps)
{
	const char *target = "";
	const struct pending *p = pendings_any(ps, &target);

	if (!p)
		return 0;
	return bad_member(m, p->layer, p->from,
			  target[0] ? "is a hardlink to nothing (its target "
				      "is in no layer)"
				    : "is a hardlink to nothing");
}

int merge_layers(struct tree *t, struct sqw *w, const struct layer_src *layers,
		 size_t n, const char *what, unsigned max_expansion,
		 struct pull_stats *st, mpictr_err **err)
{
	struct merge m = {
	    .t = t,
	    .w = w,
	    .layers = layers,
	    .what = what,
	    .max_expansion = max_expansion,
	    .st = st,
	    .err = err,
	};
	int rc = 0;

	pendings_init(&m.lower);
	pendings_init(&m.lower_new);
	t->root->layer = INT_MAX;
	t->root->implicit = true;
	for (size_t i = n; i-- > 0 && rc == 0;) {
		tree_init(&m.hidden);
		pendings_init(&m.same);
		rc = scan_layer(&m, (int)i, false);
		if (rc == 0 && m.same.count)
			rc = scan_layer(&m, (int)i, true);
		if (rc == 0)
			rc = unresolved(&m, &m.same);
		pendings_free(&m.same);
		tree_free(&m.hidden);
		hset_free(&m.under);
		/* the layers below may hold what this one's links name */
		pendings_move(&m.lower, &m.lower_new);
		st->layers++;
	}
	if (rc == 0)
		rc = unresolved(&m, &m.lower);
	t->root->implicit = false;
	pendings_free(&m.lower);
	pendings_free(&m.lower_new);
	return rc;
}
