/* tree.c - the merged file tree (tree.h): nodes by path in a hash table
 * that grows by doubling (at one node a bucket), each node and its path
 * one piece of an arena freed with the tree. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sqfs/predef.h>

#include "common/util.h"
#include "pull/tree.h"

/* A key drawn once a process: the names come from the image, and a
 * layer of names made to share a bucket would make every lookup a walk. */
static uint64_t hash_key[2];

static void hash_key_init(void)
{
	if (hash_key[0] || hash_key[1])
		return;
	if (getrandom(hash_key, sizeof(hash_key), 0) != sizeof(hash_key)) {
		hash_key[0] = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
		hash_key[1] = (uint64_t)getpid() * 0xbf58476d1ce4e5b9ULL;
	}
	hash_key[0] |= 1;
}

uint64_t tree_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL ^ hash_key[0]; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	h ^= hash_key[1]; /* then splitmix64's finalizer */
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

static size_t path_hash(const char *s)
{
	return (size_t)tree_hash(s, strlen(s));
}

#define ARENA_BLOCK (256u << 10)

struct arena_block {
	struct arena_block *prev;
	size_t used, size;
	_Alignas(16) char mem[];
};

static void *arena_alloc(struct tree *t, size_t n)
{
	struct arena_block *b = t->arena;
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (!b || b->size - b->used < n) {
		size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = xmalloc(sizeof(*b) + size);
		b->prev = t->arena;
		b->used = 0;
		b->size = size;
		t->arena = b;
	}
	p = b->mem + b->used;
	b->used += n;
	t->bytes += n;
	return p;
}

void tree_init(struct tree *t)
{
	hash_key_init();
	memset(t, 0, sizeof(*t));
	t->nbuckets = 1024;
	t->buckets = xcalloc(t->nbuckets, sizeof(*t->buckets));
	t->bytes = t->nbuckets * sizeof(*t->buckets);
	t->root = tree_add(t, NULL, "", NODE_DIR);
	t->root->mode = 0755;
	t->root->layer = -1;
	t->root->hide_lower = -1;
}

/* Release what n holds outside the arena. */
static void node_release(struct node *n)
{
	node_clear(n);
	if (n->inode) {
		sqfs_free(*n->inode);
		free(n->inode);
	}
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
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct node *n = t->buckets[i]; n; n = n->hash_next)
			node_release(n);
	for (struct node *n = t->detached; n; n = n->next)
		node_release(n);
	while (t->arena) {
		struct arena_block *prev = t->arena->prev;
		free(t->arena);
		t->arena = prev;
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
	t->bytes += (nb - t->nbuckets) * sizeof(*b);
	t->buckets = b;
	t->nbuckets = nb;
}

static struct node *node_new(struct tree *t, const char *path,
			     enum node_kind kind)
{
	size_t len = strlen(path);
	struct node *n = arena_alloc(t, sizeof(*n) + len + 1);
	const char *slash = strrchr(path, '/');

	memset(n, 0, sizeof(*n));
	n->path = (char *)(n + 1);
	memcpy(n->path, path, len + 1);
	n->name_off = slash ? (uint16_t)(slash + 1 - path) : 0;
	n->kind = (uint8_t)kind;
	n->hide_lower = -1;
	return n;
}

struct node *tree_add(struct tree *t, struct node *parent, const char *path,
		      enum node_kind kind)
{
	struct node *n = node_new(t, path, kind);
	size_t h;

	if (t->count >= t->nbuckets)
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
	struct node *n = node_new(t, path, NODE_FILE);

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

static void unhash(struct tree *t, struct node *n)
{
	struct node **pp = &t->buckets[path_hash(n->path) & (t->nbuckets - 1)];

	while (*pp && *pp != n)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = n->hash_next;
		t->count--;
	}
	n->hash_next = NULL;
}

void tree_drop_children(struct tree *t, struct node *n)
{
	struct node *c = n->children;

	n->children = NULL;
	while (c) {
		struct node *next = c->next;
		tree_drop_children(t, c);
		unhash(t, c);
		c->parent = NULL;
		c->next = t->detached;
		t->detached = c;
		c = next;
	}
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
