/* tree.h - the merged file tree of an image being pulled: what merge.c
 * builds from the layers (topmost first) and sqfs.c serializes.
 *
 * Every node is found by its path ("" is the root, "usr/bin/ls" a file)
 * in one hash table. Nodes that only record what upper layers hide
 * (whiteouts, dropped devices, directories made only to hold those) stay
 * in the table for the merge and are skipped by the serializer.
 */
#ifndef MPICTR_PULL_TREE_H
#define MPICTR_PULL_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sqfs/predef.h>

enum node_kind {
	NODE_DIR,
	NODE_FILE,
	NODE_SLINK,
	NODE_FIFO,
	NODE_WHITEOUT, /* deleted for the layers below `layer` */
	NODE_DROPPED,  /* a device or socket: hides lower, not written */
};

struct xattr {
	char *key;
	void *value;
	size_t size;
};

struct node {
	char *path; /* full path; name points into it */
	char *name; /* last component ("" for the root) */
	struct node *parent;
	struct node *children; /* first child; siblings through next */
	struct node *next;
	struct node *hash_next;
	enum node_kind kind;
	int layer;	/* the layer of the entry (or that created it) */
	int hide_lower; /* children from layers below this are hidden */
	bool implicit;	/* a directory made as a parent, no entry yet */
	bool ghost;	/* a directory that holds only whiteouts so far */
	mode_t mode;	/* permission bits and setuid/setgid/sticky */
	uint32_t uid, gid;
	int64_t mtime;
	char *target; /* symlink target */
	struct xattr *xattrs;
	size_t nxattrs;
	/* files: the inode the block processor fills in */
	sqfs_inode_generic_t *inode;
	/* a hardlink: the node whose inode this entry shares */
	struct node *link;
	/* serializer */
	uint32_t ino;
	uint32_t nlink;
	uint64_t ref;
	bool written;
};

struct tree {
	struct node *root;
	struct node **buckets;
	size_t nbuckets, count;
	/* nodes outside the tree whose data a hardlink needed */
	struct node *detached;
};

void tree_init(struct tree *t);
void tree_free(struct tree *t);
struct node *tree_get(const struct tree *t, const char *path);
/* A new node at path (its parent must exist), linked under the parent. */
struct node *tree_add(struct tree *t, struct node *parent, const char *path,
		      enum node_kind kind);
/* A node kept only for its data (a hardlink target hidden from above). */
struct node *tree_detached(struct tree *t, const char *path);
/* Before a file node is reused: move its inode (which the block
 * processor may still fill in) to a detached node. */
void tree_retire_inode(struct tree *t, struct node *n);
/* Release a node's payload (target, xattrs) before it is reused. */
void node_clear(struct node *n);
/* The node a hardlink chain ends at. */
struct node *node_resolve(struct node *n);
/* Whether the serializer writes n (real, not a whiteout or a ghost). */
bool node_visible(const struct node *n);

#endif
