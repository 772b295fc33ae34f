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

/* A node is allocated with its path in one piece from the tree's arena
 * and lives as long as the tree: about 150 bytes and its path per entry
 * (docs/pull.md "Memory"), so the fields are packed. */
struct node {
	char *path; /* full path, after the node; the name at name_off */
	struct node *parent;
	struct node *children; /* first child; siblings through next */
	struct node *next;
	struct node *hash_next;
	char *target; /* symlink target */
	struct xattr *xattrs;
	/* files with data: a cell the block processor fills in; the
	 * processor keeps its address until sqw_finish(), so a replaced file
	 * hands the cell on (tree_retire_inode) and never clears it. NULL
	 * for an empty file, which has no data blocks */
	sqfs_inode_generic_t **inode;
	/* a hardlink: the node whose inode this entry shares */
	struct node *link;
	/* this hardlink's entry in the merge's list of targets to find */
	void *pend;
	uint64_t ref;	/* serializer: the inode's reference */
	uint32_t mtime; /* squashfs's: 1970 to 2106 */
	int layer;	/* the layer of the entry (or that created it) */
	int hide_lower; /* children from layers below this are hidden */
	uint32_t uid, gid;
	uint32_t nxattrs;
	uint32_t ino, nlink; /* serializer */
	uint16_t mode;	     /* permission bits and setuid/setgid/sticky */
	uint16_t name_off;   /* the last component ("" for the root) */
	uint8_t kind;	     /* enum node_kind */
	bool implicit : 1;   /* a directory made as a parent, no entry yet */
	bool ghost : 1;	     /* a directory that holds only whiteouts so far */
	bool written : 1;    /* serializer */
	/* hardlinks of the same layer name this node (linked_same) or of an
	 * upper layer do (linked_upper) */
	bool linked_same : 1, linked_upper : 1;
};

struct arena_block;

struct tree {
	struct node *root;
	struct node **buckets;
	size_t nbuckets, count;
	/* nodes outside the tree whose data a hardlink needed */
	struct node *detached;
	/* where nodes come from, freed all at once */
	struct arena_block *arena;
	/* the memory the tree holds, as counted for the pull's bound:
	 * nodes, paths, buckets, targets, xattrs, file inodes */
	size_t bytes;
};

static inline const char *node_name(const struct node *n)
{
	return n->path + n->name_off;
}

void tree_init(struct tree *t);
/* The keyed hash of s[0..n) the tree uses (its key drawn by the first
 * tree_init of the process). */
uint64_t tree_hash(const char *s, size_t n);
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
/* Take the nodes below directory n out of the tree (kept, detached, for
 * the hardlinks that may name them). */
void tree_drop_children(struct tree *t, struct node *n);
/* Release a node's payload (target, xattrs) before it is reused. */
void node_clear(struct node *n);
/* The node a hardlink chain ends at. */
struct node *node_resolve(struct node *n);
/* Whether the serializer writes n (real, not a whiteout or a ghost). */
bool node_visible(const struct node *n);

#endif
