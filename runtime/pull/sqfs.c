/* sqfs.c - write a squashfs from a struct tree with libsquashfs (sqfs.h).
 *
 * File data goes through the block processor as the merge finds it
 * (parallel zstd, fragments, deduplication). sqw_finish() then numbers the
 * inodes, writes them and the directory listings children first (a
 * directory's listing needs its children's inode references), and the
 * fragment, id and xattr tables. The superblock is written last, so a
 * squashfs that was not finished has none and is never mounted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqfs/block_processor.h>
#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>
#include <sqfs/xattr_writer.h>

#include "common/util.h"
#include "pull/sqfs.h"

#define SQW_BLOCK_SIZE (128 * 1024)

/* A sqfs_file_t on our fd, shifted by the partition offset. */
struct sqw_file {
	sqfs_file_t f;
	int fd;
	uint64_t base, size;
	int last_errno;
};

struct sqw {
	struct sqw_file file;
	const char *name;
	sqfs_super_t super;
	sqfs_compressor_t *cmp;
	sqfs_block_writer_t *bw;
	sqfs_frag_table_t *frags;
	sqfs_block_processor_t *proc;
	sqfs_id_table_t *ids;
	sqfs_xattr_writer_t *xwr;
	sqfs_meta_writer_t *im, *dm;
	sqfs_dir_writer_t *dirwr;
	uint32_t next_ino;
	bool in_file, finished;
};

static void file_destroy(sqfs_object_t *o)
{
	(void)o; /* embedded in struct sqw */
}

static int file_read_at(sqfs_file_t *f, sqfs_u64 off, void *buf, size_t n)
{
	struct sqw_file *s = (struct sqw_file *)f;

	if (off + n > s->size)
		return SQFS_ERROR_OUT_OF_BOUNDS;
	if (pread_full(s->fd, buf, n, (off_t)(s->base + off)) < 0) {
		s->last_errno = errno ? errno : EIO;
		return SQFS_ERROR_IO;
	}
	return 0;
}

static int file_write_at(sqfs_file_t *f, sqfs_u64 off, const void *buf,
			 size_t n)
{
	struct sqw_file *s = (struct sqw_file *)f;
	const char *p = buf;
	uint64_t at = s->base + off;

	while (n > 0) {
		ssize_t w = TEMP_FAILURE_RETRY(pwrite(s->fd, p, n, (off_t)at));
		if (w <= 0) {
			s->last_errno = w < 0 ? errno : ENOSPC;
			return SQFS_ERROR_IO;
		}
		p += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	if (at - s->base > s->size)
		s->size = at - s->base;
	return 0;
}

static sqfs_u64 file_get_size(const sqfs_file_t *f)
{
	return ((const struct sqw_file *)f)->size;
}

static int file_truncate(sqfs_file_t *f, sqfs_u64 size)
{
	struct sqw_file *s = (struct sqw_file *)f;

	if (ftruncate(s->fd, (off_t)(s->base + size)) < 0) {
		s->last_errno = errno;
		return SQFS_ERROR_IO;
	}
	s->size = size;
	return 0;
}

static int sq_fail(struct sqw *w, int rc, const char *what, mpictr_err **err)
{
	int e = w->file.last_errno;

	if (rc == SQFS_ERROR_ALLOC)
		e = ENOMEM;
	if (e)
		return err_set(err, e, "squashfs '%s': %s", w->name, what);
	return err_set(err, 0, "squashfs '%s': %s: libsquashfs error %d",
		       w->name, what, rc);
}

static int sqw_create_parts(struct sqw *w, int level, mpictr_err **err)
{
	sqfs_compressor_config_t cfg;
	sqfs_block_processor_desc_t desc;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	sqfs_compressor_config_init(&cfg, SQFS_COMP_ZSTD, SQW_BLOCK_SIZE, 0);
	cfg.level = (sqfs_u32)(level > 0 ? level : 3);
	if ((rc = sqfs_compressor_create(&cfg, &w->cmp)) != 0)
		return sq_fail(w, rc, "create the zstd compressor", err);
	rc = w->cmp->write_options(w->cmp, &w->file.f);
	if (rc < 0)
		return sq_fail(w, rc, "write the compressor options", err);
	if (rc > 0)
		w->super.flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;
	w->bw = sqfs_block_writer_create(&w->file.f, 4096, 0);
	w->frags = sqfs_frag_table_create(0);
	w->ids = sqfs_id_table_create(0);
	w->xwr = sqfs_xattr_writer_create(0);
	if (!w->bw || !w->frags || !w->ids || !w->xwr)
		return sq_fail(w, SQFS_ERROR_ALLOC, "set up", err);
	memset(&desc, 0, sizeof(desc));
	desc.size = sizeof(desc);
	desc.max_block_size = SQW_BLOCK_SIZE;
	desc.num_workers = (sqfs_u32)(cpus > 0 ? cpus : 1);
	desc.max_backlog = desc.num_workers * 4;
	desc.cmp = w->cmp;
	desc.wr = w->bw;
	desc.tbl = w->frags;
	if ((rc = sqfs_block_processor_create_ex(&desc, &w->proc)) != 0)
		return sq_fail(w, rc, "start the block processor", err);
	return 0;
}

int sqw_open(int fd, uint64_t base, int level, const char *name,
	     struct sqw **out, mpictr_err **err)
{
	struct sqw *w = xcalloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	w->name = name;
	w->file.f.base.destroy = file_destroy;
	w->file.f.read_at = file_read_at;
	w->file.f.write_at = file_write_at;
	w->file.f.get_size = file_get_size;
	w->file.f.truncate = file_truncate;
	w->file.fd = fd;
	w->file.base = base;
	sqfs_super_init(&w->super, SQW_BLOCK_SIZE, 0, SQFS_COMP_ZSTD);
	/* room for the superblock, written for real by sqw_finish() */
	rc = file_truncate(&w->file.f, sizeof(sqfs_super_t));
	if (rc == 0)
		w->file.size = sizeof(sqfs_super_t);
	if (rc != 0 || sqw_create_parts(w, level, err) < 0) {
		if (rc != 0)
			sq_fail(w, rc, "start", err);
		sqw_free(w);
		return -1;
	}
	*out = w;
	return 0;
}

int sqw_file_begin(struct sqw *w, struct node *n, mpictr_err **err)
{
	int rc;

	if (!n->inode) /* a cell of its own, at a fixed address */
		n->inode = xcalloc(1, sizeof(*n->inode));
	rc = sqfs_block_processor_begin_file(w->proc, n->inode, NULL, 0);

	w->in_file = rc == 0;
	return rc ? sq_fail(w, rc, "begin a file", err) : 0;
}

int sqw_file_append(struct sqw *w, const void *buf, size_t len,
		    mpictr_err **err)
{
	int rc = sqfs_block_processor_append(w->proc, buf, len);

	return rc ? sq_fail(w, rc, "write file data", err) : 0;
}

int sqw_file_end(struct sqw *w, mpictr_err **err)
{
	int rc = sqfs_block_processor_end_file(w->proc);

	w->in_file = false;
	return rc ? sq_fail(w, rc, "end a file", err) : 0;
}

void sqw_free(struct sqw *w)
{
	if (!w)
		return;
	/* A pull that failed midway: let the workers drain, else the
	 * blocks in flight are lost with the processor (libsquashfs) */
	if (w->proc && w->in_file)
		sqfs_block_processor_end_file(w->proc);
	if (w->proc && !w->finished)
		sqfs_block_processor_finish(w->proc);
	sqfs_destroy(w->proc);
	sqfs_destroy(w->dirwr);
	sqfs_destroy(w->dm);
	sqfs_destroy(w->im);
	sqfs_destroy(w->xwr);
	sqfs_destroy(w->ids);
	sqfs_destroy(w->frags);
	sqfs_destroy(w->bw);
	sqfs_destroy(w->cmp);
	free(w);
}

/* ---- serializer ---- */

static uint16_t node_type_bits(const struct node *n)
{
	switch (n->kind) {
	case NODE_DIR:
		return SQFS_INODE_MODE_DIR;
	case NODE_SLINK:
		return SQFS_INODE_MODE_LNK;
	case NODE_FIFO:
		return SQFS_INODE_MODE_FIFO;
	default:
		return SQFS_INODE_MODE_REG;
	}
}

static int cmp_names(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a;
	const struct node *y = *(struct node *const *)b;

	return strcmp(node_name(x), node_name(y));
}

/* The visible children of dir d, sorted by name. */
static struct node **sorted_children(struct node *d, size_t *count)
{
	struct node **v = NULL;
	size_t n = 0, cap = 0;

	for (struct node *c = d->children; c; c = c->next) {
		if (!node_visible(c))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, (cap) * sizeof(*v));
		}
		v[n++] = c;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_names);
	*count = n;
	return v;
}

/* Number the inodes and count the links: each hardlink group once; a
 * directory's nlink counts its subdirectories here (+2 when written). */
static void number(struct sqw *w, struct node *d)
{
	for (struct node *c = d->children; c; c = c->next) {
		struct node *r;
		if (!node_visible(c))
			continue;
		if (c->kind == NODE_DIR) {
			c->ino = w->next_ino++;
			c->nlink = 0;
			d->nlink++;
			number(w, c);
			continue;
		}
		r = node_resolve(c);
		if (r->nlink++ == 0)
			r->ino = w->next_ino++;
	}
}

static int add_xattrs(struct sqw *w, const struct node *n, uint32_t *idx)
{
	int rc;

	*idx = 0xFFFFFFFF;
	if (n->nxattrs == 0)
		return 0;
	if ((rc = sqfs_xattr_writer_begin(w->xwr, 0)) != 0)
		return rc;
	for (size_t i = 0; i < n->nxattrs; i++) {
		rc = sqfs_xattr_writer_add(w->xwr, n->xattrs[i].key,
					   n->xattrs[i].value,
					   n->xattrs[i].size);
		if (rc != 0)
			return rc;
	}
	return sqfs_xattr_writer_end(w->xwr, idx);
}

static sqfs_inode_generic_t *make_inode(const struct node *n)
{
	size_t tlen = n->kind == NODE_SLINK ? strlen(n->target) : 0;
	sqfs_inode_generic_t *in = xcalloc(1, sizeof(*in) + tlen + 1);

	if (n->kind == NODE_SLINK) {
		in->base.type = SQFS_INODE_SLINK;
		in->data.slink.nlink = n->nlink;
		in->data.slink.target_size = (sqfs_u32)tlen;
		in->payload_bytes_available = (sqfs_u32)tlen;
		in->payload_bytes_used = (sqfs_u32)tlen;
		memcpy(in->extra, n->target, tlen);
	} else if (n->kind == NODE_FILE) {
		/* an empty file: no blocks, no fragment */
		in->base.type = SQFS_INODE_FILE;
		in->data.file.fragment_index = 0xFFFFFFFF;
	} else {
		in->base.type = SQFS_INODE_FIFO;
		in->data.ipc.nlink = n->nlink;
	}
	return in;
}

/* Fill in the common fields of n's inode and write it. */
static int write_inode(struct sqw *w, struct node *n, sqfs_inode_generic_t *in)
{
	sqfs_u64 block;
	sqfs_u32 off, xidx;
	int rc;

	in->base.mode = (sqfs_u16)(node_type_bits(n) | (n->mode & 07777));
	in->base.mod_time = n->mtime;
	in->base.inode_number = n->ino;
	if ((rc = sqfs_id_table_id_to_index(w->ids, n->uid,
					    &in->base.uid_idx)) ||
	    (rc = sqfs_id_table_id_to_index(w->ids, n->gid,
					    &in->base.gid_idx)) ||
	    (rc = add_xattrs(w, n, &xidx)))
		return rc;
	if (n->kind == NODE_FILE && n->nlink > 1) {
		if ((rc = sqfs_inode_make_extended(in)) != 0)
			return rc;
		in->data.file_ext.nlink = n->nlink;
	}
	if ((rc = sqfs_inode_set_xattr_index(in, xidx)) != 0)
		return rc;
	sqfs_meta_writer_get_position(w->im, &block, &off);
	n->ref = (block << 16) | off;
	n->written = true;
	return sqfs_meta_writer_write_inode(w->im, in);
}

static int write_leaf(struct sqw *w, struct node *r)
{
	sqfs_inode_generic_t *in;
	int rc;

	if (r->written)
		return 0;
	if (r->kind == NODE_FILE && r->inode)
		return *r->inode ? write_inode(w, r, *r->inode)
				 : SQFS_ERROR_INTERNAL;
	in = make_inode(r);
	rc = write_inode(w, r, in);
	free(in);
	return rc;
}

static int write_dir(struct sqw *w, struct node *d, uint32_t parent_ino)
{
	size_t n, i;
	cleanup_free struct node **kids = sorted_children(d, &n);
	sqfs_inode_generic_t *in;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		struct node *r = node_resolve(kids[i]);
		rc = kids[i]->kind == NODE_DIR ? write_dir(w, kids[i], d->ino)
					       : write_leaf(w, r);
	}
	if (rc == 0)
		rc = sqfs_dir_writer_begin(w->dirwr, 0);
	for (i = 0; i < n && rc == 0; i++) {
		struct node *r = node_resolve(kids[i]);
		rc = sqfs_dir_writer_add_entry(
		    w->dirwr, node_name(kids[i]), r->ino, r->ref,
		    (sqfs_u16)(node_type_bits(r) | (r->mode & 07777)));
	}
	if (rc == 0)
		rc = sqfs_dir_writer_end(w->dirwr);
	if (rc != 0)
		return rc;
	in = sqfs_dir_writer_create_inode(w->dirwr, d->nlink + 2, 0xFFFFFFFF,
					  parent_ino);
	if (!in)
		return SQFS_ERROR_ALLOC;
	rc = write_inode(w, d, in);
	free(in);
	return rc;
}

static int write_tables(struct sqw *w, struct tree *t)
{
	sqfs_file_t *f = &w->file.f;
	int rc;

	if (!(w->im = sqfs_meta_writer_create(f, w->cmp, 0)) ||
	    !(w->dm = sqfs_meta_writer_create(
		  f, w->cmp, SQFS_META_WRITER_KEEP_IN_MEMORY)) ||
	    !(w->dirwr = sqfs_dir_writer_create(w->dm, 0)))
		return SQFS_ERROR_ALLOC;
	w->super.inode_table_start = f->get_size(f);
	w->next_ino = 1;
	t->root->nlink = 0;
	t->root->ino = w->next_ino++;
	number(w, t->root);
	if ((rc = write_dir(w, t->root, w->next_ino)) != 0)
		return rc;
	w->super.root_inode_ref = t->root->ref;
	w->super.inode_count = w->next_ino - 1;
	if ((rc = sqfs_meta_writer_flush(w->im)) ||
	    (rc = sqfs_meta_writer_flush(w->dm)))
		return rc;
	w->super.directory_table_start = f->get_size(f);
	if ((rc = sqfs_meta_write_write_to_file(w->dm)) ||
	    (rc = sqfs_frag_table_write(w->frags, f, &w->super, w->cmp)) ||
	    (rc = sqfs_id_table_write(w->ids, f, &w->super, w->cmp)) ||
	    (rc = sqfs_xattr_writer_flush(w->xwr, f, &w->super, w->cmp)))
		return rc;
	return 0;
}

int sqw_finish(struct sqw *w, struct tree *t, int64_t mtime, uint64_t *size,
	       mpictr_err **err)
{
	sqfs_file_t *f = &w->file.f;
	uint64_t used;
	int rc;

	rc = sqfs_block_processor_finish(w->proc);
	w->finished = true;
	if (rc != 0)
		return sq_fail(w, rc, "write file data", err);
	if ((rc = write_tables(w, t)) != 0)
		return sq_fail(w, rc, "write the inode and directory tables",
			       err);
	used = f->get_size(f);
	w->super.bytes_used = used;
	w->super.modification_time = (sqfs_u32)(mtime < 0	       ? 0
						: mtime > 0xFFFFFFFFLL ? 0
								       : mtime);
	if (used % 4096 &&
	    (rc = file_truncate(f, (used + 4095) / 4096 * 4096)) != 0)
		return sq_fail(w, rc, "pad", err);
	if ((rc = sqfs_super_write(&w->super, f)) != 0)
		return sq_fail(w, rc, "write the superblock", err);
	*size = f->get_size(f);
	return 0;
}
