/* tree.c - the merged file tree (tree.h): nodes by path in a hash table
 * that grows by doubling. */
#include <stdlib.h>
#include <string.h>

#include <sqfs/predef.h>

#include "common/util.h"
#include "pull/tree.h"

static size_t path_hash(const char *s)
{
	size_t h = 14695981039346656037ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

void tree_init(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = 1024;
	t->buckets = xcalloc(t->nbuckets, sizeof(*t->buckets));
	t->root = tree_add(t, NULL, "", NODE_DIR);
	t->root->mode = 0755;
	t->root->layer = -1;
	t->root->hide_lower = -1;
}

static void node_free(struct node *n)
{
	node_clear(n);
	sqfs_free(n->inode);
	free(n->path);
	free(n);
}

void node_clear(struct node *n)
{
	free(n->target);
	n->target = NULL;
	for (size_t i = 0; i < n->nxattrs; i++) {
		free(n->xattrs[i].key);
		free(n->xattrs[i].value);
	}
	free(n->xattrs);
	n->xattrs = NULL;
	n->nxattrs = 0;
}

void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct node *n = t->buckets[i];
		while (n) {
			struct node *next = n->hash_next;
			node_free(n);
			n = next;
		}
	}
	while (t->detached) {
		struct node *next = t->detached->next;
		node_free(t->detached);
		t->detached = next;
	}
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}

struct node *tree_get(const struct tree *t, const char *path)
{
	struct node *n = t->buckets[path_hash(path) & (t->nbuckets - 1)];

	while (n && strcmp(n->path, path) != 0)
		n = n->hash_next;
	return n;
}

static void grow(struct tree *t)
{
	size_t nb = t->nbuckets * 2;
	struct node **b = xcalloc(nb, sizeof(*b));

	for (size_t i = 0; i < t->nbuckets; i++) {
		struct node *n = t->buckets[i];
		while (n) {
			struct node *next = n->hash_next;
			size_t h = path_hash(n->path) & (nb - 1);
			n->hash_next = b[h];
			b[h] = n;
			n = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
}

static struct node *node_new(const char *path, enum node_kind kind)
{
	struct node *n = xcalloc(1, sizeof(*n));
	char *slash;

	n->path = xstrdup(path);
	slash = strrchr(n->path, '/');
	n->name = slash ? slash + 1 : n->path;
	n->kind = kind;
	n->hide_lower = -1;
	return n;
}

struct node *tree_add(struct tree *t, struct node *parent, const char *path,
		      enum node_kind kind)
{
	struct node *n = node_new(path, kind);
	size_t h;

	if (t->count * 2 > t->nbuckets)
		grow(t);
	h = path_hash(path) & (t->nbuckets - 1);
	n->hash_next = t->buckets[h];
	t->buckets[h] = n;
	t->count++;
	n->parent = parent;
	if (parent) {
		n->next = parent->children;
		parent->children = n;
	}
	return n;
}

struct node *tree_detached(struct tree *t, const char *path)
{
	struct node *n = node_new(path, NODE_FILE);

	n->next = t->detached;
	t->detached = n;
	return n;
}

struct node *node_resolve(struct node *n)
{
	/* chains are short and acyclic: a link always points to a node
	 * that existed before it */
	while (n->link)
		n = n->link;
	return n;
}

bool node_visible(const struct node *n)
{
	return n->kind != NODE_WHITEOUT && n->kind != NODE_DROPPED &&
	       !(n->kind == NODE_DIR && n->ghost);
}

void tree_retire_inode(struct tree *t, struct node *n)
{
	if (n->inode) {
		struct node *d = tree_detached(t, n->path);
		d->kind = NODE_DROPPED;
		d->inode = n->inode;
		n->inode = NULL;
	}
	n->link = NULL;
}
