/* squash.c - mount a squashfs image in-process with libsquashfuse and libfuse3,
 * served by several forked worker processes (the only file that includes
 * squashfuse or libfuse headers).
 *
 * Sequence (docs/mount.md has the reasoning):
 *   1. check the image ourselves (magic, version, compressor, size) so that
 *      the library never prints and every failure has a real message; then
 *      sqfs_init() and read the root inode;
 *   2. open /dev/fuse, mount(2) "fuse.squashfuse" with fd=N ourselves (errno
 *      and hints stay ours), and hand the fd to libfuse as "/dev/fd/N";
 *   3. answer FUSE_INIT here, in the caller: libfuse keeps the negotiated
 *      connection state per process, and a process that did not see INIT
 *      rejects every request;
 *   4. fork the workers: each inherits the post-INIT libfuse session and its
 *      own copy of the libsquashfuse state, and reads the shared /dev/fuse fd
 *      (the kernel gives each request to exactly one reader). The caller then
 *      drops its own copies, so the connection dies with the last worker.
 */

/* squashfuse installs its autoconf config.h and includes it from common.h;
 * it defines _POSIX_C_SOURCE, PACKAGE and friends. Defining its include
 * guard keeps it out (as charliecloud's bin/ch_fuse.c does, squashfuse issue
 * #65); we then provide the two settings its headers need. */
#define SQFS_CONFIG_H
#define FUSE_USE_VERSION 32
#define HAVE_LINUX_TYPES_LE16 1
#include <squashfuse.h>
#include <fuse_lowlevel.h>
#include <libdeflate.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "sif/image.h"
#include "common/proc.h"
#include "sif/squash.h"
#include "common/util.h"

/* A directory entry's name as libsquashfuse reads it (sqfs_dir_next,
 * sqfs_dir_lookup): the entry's 16-bit size plus one, not checked against
 * SQUASHFS_NAME_LEN, then a NUL, so a crafted image overflows a sqfs_name
 * (257 bytes) (found by tests/fuzz/fuzz_squash.c). Room for the largest. */
typedef char squash_name[65536 + 2];

/* Is the metadata cursor (block at table + block, offset) inside its
 * block? libsquashfuse's sqfs_md_read takes it on trust and copies from
 * past the block's end when it is not (found by fuzz_squash). */
static bool squash_cursor_ok(sqfs *fs, uint64_t table, uint64_t block,
			     size_t offset)
{
	sqfs_off_t pos = (sqfs_off_t)(table + block);
	sqfs_block *b;

	if (table + block < table || table + block >= fs->sb.bytes_used)
		return false;
	/* (a block that failed to read may come back as NULL) */
	return sqfs_md_cache(fs, &pos, &b) == SQFS_OK && b && offset < b->size;
}

/* sqfs_inode_get with the inode's cursor, and a directory's listing
 * cursor, checked first (squash_cursor_ok). */
static sqfs_err squash_inode_get(sqfs *fs, sqfs_inode *in, sqfs_inode_id id)
{
	sqfs_err e;

	if (!squash_cursor_ok(fs, fs->sb.inode_table_start, id >> 16,
			      id & 0xffff))
		return SQFS_ERR;
	e = sqfs_inode_get(fs, in, id);
	if (e == SQFS_OK && S_ISREG(in->base.mode) &&
	    in->xtra.reg.frag_idx != SQUASHFS_INVALID_FRAG &&
	    in->xtra.reg.frag_idx >= fs->sb.fragments)
		return SQFS_ERR; /* sqfs_table_get does not check the index */
	if (e == SQFS_OK && S_ISDIR(in->base.mode) &&
	    in->xtra.dir.dir_size > 3 &&
	    !squash_cursor_ok(fs, fs->sb.directory_table_start,
			      in->xtra.dir.start_block, in->xtra.dir.offset))
		return SQFS_ERR;
	return e;
}

/* Entry idx of table t (the id or the fragment table): below count, and
 * whole inside its metadata block. sqfs_table_get takes both on trust
 * (found by fuzz_squash). */
static bool squash_table_ok(sqfs *fs, sqfs_table *t, size_t count, size_t idx)
{
	size_t pos = idx * t->each;

	return idx < count && t->blocks &&
	       squash_cursor_ok(fs, 0, t->blocks[pos / SQUASHFS_METADATA_SIZE],
				pos % SQUASHFS_METADATA_SIZE + t->each - 1);
}

/* A data block at pos of input size len (0: a hole) that libsquashfuse
 * may read: its caches key blocks by position with 0 for an empty slot,
 * so a block at 0 comes back as NULL (a failed read leaves the slot so
 * too), and dereferenced; and the size is allocated as given, while no
 * stored block is larger than the image's block size. */
static bool squash_block_ok(sqfs *fs, uint64_t pos, uint32_t len)
{
	return len == 0 || (pos != 0 && len <= fs->sb.block_size &&
			    pos < fs->sb.bytes_used);
}

/* The data blocks of in that n bytes at off reach, checked with
 * squash_block_ok before sqfs_read_range reads them. */
static bool squash_blocks_ok(sqfs *fs, sqfs_inode *in, sqfs_off_t off,
			     sqfs_off_t n)
{
	sqfs_blocklist bl;

	/* (its block list lies in the image: a size beyond it makes
	 * libsquashfuse's block index allocate as much) */
	if (sqfs_blocklist_count(fs, in) > fs->sb.bytes_used / 4 ||
	    sqfs_blockidx_blocklist(fs, in, &bl, off) != SQFS_OK)
		return false;
	while (bl.remain > 0) {
		if (sqfs_blocklist_next(&bl) != SQFS_OK)
			return false;
		if (bl.pos >= (uint64_t)(off + n))
			break;
		if (!squash_block_ok(fs, bl.block, bl.input_size))
			return false;
	}
	return true;
}

/* The fragment block of in: its table entry and the block checked
 * (squash_table_ok, squash_block_ok), then the file's tail inside it:
 * libsquashfuse copies the tail from frag_off of the block without
 * looking at the block's size. */
static bool squash_frag_ok(sqfs *fs, sqfs_inode *in)
{
	struct squashfs_fragment_entry fe;
	size_t foff, flen;
	sqfs_block *b;

	return squash_table_ok(fs, &fs->frag_table, fs->sb.fragments,
			       in->xtra.reg.frag_idx) &&
	       sqfs_frag_entry(fs, &fe, in->xtra.reg.frag_idx) == SQFS_OK &&
	       squash_block_ok(fs, fe.start_block,
			       fe.size & ~SQUASHFS_COMPRESSED_BIT_BLOCK) &&
	       fe.start_block != 0 &&
	       sqfs_frag_block(fs, in, &foff, &flen, &b) == SQFS_OK && b &&
	       foff <= b->size && flen <= b->size - foff;
}

/* sqfs_read_range, the blocks it reaches checked first (squash_blocks_ok,
 * squash_frag_ok when the read reaches the file's tail). */
static sqfs_err squash_read_range(sqfs *fs, sqfs_inode *in, sqfs_off_t off,
				  sqfs_off_t *n, void *buf)
{
	uint64_t size = in->xtra.reg.file_size;

	if (!squash_blocks_ok(fs, in, off, *n))
		return SQFS_ERR;
	if (in->xtra.reg.frag_idx != SQUASHFS_INVALID_FRAG &&
	    (uint64_t)off + (uint64_t)*n > size - size % fs->sb.block_size &&
	    !squash_frag_ok(fs, in))
		return SQFS_ERR;
	return sqfs_read_range(fs, in, off, n, buf);
}

/* sqfs_destroy, and the xattr table it leaves (also after sqfs_init
 * failed: its tables are destroyed but this one). */
static void squash_fs_destroy(sqfs *fs)
{
	sqfs_destroy(fs);
	sqfs_table_destroy(&fs->xattr_table);
}

/* sqfs_id_get with the index checked (squash_table_ok). */
static sqfs_err squash_id_get(sqfs *fs, uint16_t idx, sqfs_id_t *id)
{
	if (!squash_table_ok(fs, &fs->id_table, fs->sb.no_ids, idx))
		return SQFS_ERR;
	return sqfs_id_get(fs, idx, id);
}

/* The image is immutable: let the kernel cache names, attributes, negative
 * lookups, directory listings and file pages for as long as it likes. */
#define SQUASH_TIMEOUT (86400.0 * 365)
/* Decompressed data blocks each worker keeps (squash_grow_data_cache):
 * 8 x the block size, at most 8 MiB with 1 MiB blocks. */
#define SQUASH_DATA_CACHE_BLOCKS 8

/* How long squash_umount() lets workers finish requests in flight. */
#define SQUASH_GRACE_MS 2000

/* Inode numbers (nodeids).
 *
 * Every worker must hand out and understand the same nodeids: the kernel may
 * send LOOKUP to one worker and GETATTR/OPEN/READ for the result to another.
 * squashfuse 0.1.105 (ll_inode.c) picks its mapping in sqfs_ll_init(): on a
 * 64-bit fuse_ino_t it is "ino64", a pure function of the on-disk inode
 * reference (sqfs_inode_id = metadata block << 16 | offset): root -> 1,
 * id 0 -> 2, otherwise the id itself; only 32-bit builds use a per-process
 * hash map. So the mapping is deterministic and safe across processes; we
 * compute the same function here (needs no ll state at all).
 *
 * What is NOT safe in 0.1.105's ll.c: sqfs_ll_op_open() and
 * sqfs_ll_op_opendir() malloc() a struct and pass its address to the kernel
 * in fi->fh, and read/readdir/release dereference it. With several worker
 * processes a READ may reach a worker whose heap never held that pointer.
 * Hence our own operations below, on the core API (sqfs_inode_get,
 * sqfs_read_range, sqfs_dir_*), keep nothing in fi->fh and re-derive the
 * inode from the nodeid (one metadata-cache lookup) on every request. */
_Static_assert(sizeof(fuse_ino_t) >= SQFS_INODE_ID_BYTES,
	       "nodeids must hold a squashfs inode reference");

struct squash_ctx {
	sqfs fs; /* libsquashfuse state: one copy per process, no locking */
	int image_fd;
	char *image; /* the image file's path (mounts: for messages), or NULL */
	bool have_xattrs;
	bool warned; /* a worker: it said a read failed */
	bool got_init;
	bool no_open, no_opendir; /* the kernel can skip OPEN/OPENDIR */
	/* per worker */
	char *buf;
	size_t buf_size;
	unsigned long long requests;
	unsigned long long read_bytes;
};

struct squash_mount {
	char *mountpoint;
	pid_t *pids;
	size_t npids;
};

/* ---- libfuse messages ---------------------------------------------------- */

/* libfuse logs through fuse_log(); keep the last message for our errors and
 * pass everything to the debug log instead of stderr. */
static char squash_fuse_msg[256];

__attribute__((format(printf, 2, 0))) static void
squash_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t n;

	vsnprintf(squash_fuse_msg, sizeof(squash_fuse_msg), fmt, ap);
	n = strlen(squash_fuse_msg);
	while (n && squash_fuse_msg[n - 1] == '\n')
		squash_fuse_msg[--n] = '\0';
	if (level <= FUSE_LOG_ERR)
		log_warn("libfuse: %s", squash_fuse_msg);
	else
		log_debug("libfuse: %s", squash_fuse_msg);
}

static const char *squash_fuse_last(void)
{
	return squash_fuse_msg[0] ? squash_fuse_msg : "no details";
}

/* ---- inode helpers ------------------------------------------------------- */

static sqfs_inode_id squash_node_to_id(struct squash_ctx *c, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return sqfs_inode_root(&c->fs);
	if (ino == 2)
		return 0;
	return ino;
}

static fuse_ino_t squash_id_to_node(struct squash_ctx *c, sqfs_inode_id id)
{
	if (id == sqfs_inode_root(&c->fs))
		return FUSE_ROOT_ID;
	if (id == 0)
		return 2;
	return id;
}

/* Fetch the inode of a nodeid; on failure reply EIO and return -1. */
static int squash_iget(fuse_req_t req, fuse_ino_t ino, sqfs_inode *in)
{
	struct squash_ctx *c = fuse_req_userdata(req);

	if (squash_inode_get(&c->fs, in, squash_node_to_id(c, ino)) == SQFS_OK)
		return 0;
	fuse_reply_err(req, EIO);
	return -1;
}

static int squash_stat(struct squash_ctx *c, sqfs_inode *in, fuse_ino_t ino,
		       struct stat *st)
{
	sqfs_id_t id;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = in->base.mode;
	st->st_nlink = in->nlink;
	st->st_atim.tv_sec = in->base.mtime;
	st->st_mtim.tv_sec = in->base.mtime;
	st->st_ctim.tv_sec = in->base.mtime;
	st->st_blksize = c->fs.sb.block_size;
	if (S_ISREG(st->st_mode))
		st->st_size = (off_t)in->xtra.reg.file_size;
	else if (S_ISLNK(st->st_mode))
		st->st_size = (off_t)in->xtra.symlink_size;
	else if (S_ISDIR(st->st_mode))
		st->st_size = in->xtra.dir.dir_size;
	else if (S_ISBLK(st->st_mode) || S_ISCHR(st->st_mode))
		st->st_rdev = makedev(in->xtra.dev.major, in->xtra.dev.minor);
	st->st_blocks = (st->st_size + 511) / 512;
	if (squash_id_get(&c->fs, in->base.uid, &id) != SQFS_OK)
		return -1;
	st->st_uid = id;
	if (squash_id_get(&c->fs, in->base.guid, &id) != SQFS_OK)
		return -1;
	st->st_gid = id;
	return 0;
}

/* The worker's reply buffer (requests are at most ~1 MiB). */
static char *squash_buf(struct squash_ctx *c, size_t n)
{
	if (n > c->buf_size) {
		char *b = realloc(c->buf, n);
		if (!b)
			return NULL;
		c->buf = b;
		c->buf_size = n;
	}
	return c->buf;
}

/* ---- FUSE operations ----------------------------------------------------- */

static void squash_op_init(void *data, struct fuse_conn_info *conn)
{
	struct squash_ctx *c = data;

	/* Splice would use a pipe cached per thread in the session; after
	 * fork() every worker would share the caller's pipe. Plain read/writev
	 * keep the workers independent. */
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	/* Immutable image: nothing to revalidate, symlinks may be cached. */
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Nothing is kept per open file or directory, so let the kernel
	 * open without asking (and close without RELEASE): an exec or a
	 * script read then costs no round trip through a worker. Pages and
	 * listings stay cached as with keep_cache and cache_readdir. */
	c->no_open = conn->capable & FUSE_CAP_NO_OPEN_SUPPORT;
	c->no_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	/* Let readahead of many readers queue up for several workers. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	c->got_init = true;
}

static void squash_op_lookup(fuse_req_t req, fuse_ino_t parent,
			     const char *name)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	struct fuse_entry_param e;
	sqfs_inode dir, in;
	sqfs_dir_entry ent;
	squash_name namebuf;
	bool found = false;
	size_t len = strlen(name);

	if (squash_iget(req, parent, &dir))
		return;
	if (!S_ISDIR(dir.base.mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	memset(&e, 0, sizeof(e));
	sqfs_dentry_init(&ent, namebuf);
	if (len <= SQUASHFS_NAME_LEN &&
	    sqfs_dir_lookup(&c->fs, &dir, name, len, &ent, &found) != SQFS_OK) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (!found) {
		/* ino 0 with a timeout: the kernel caches the negative entry,
		 * which matters for the dynamic loader's path probing. */
		e.entry_timeout = SQUASH_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	e.ino = squash_id_to_node(c, sqfs_dentry_inode(&ent));
	if (squash_inode_get(&c->fs, &in, sqfs_dentry_inode(&ent)) != SQFS_OK ||
	    squash_stat(c, &in, e.ino, &e.attr)) {
		fuse_reply_err(req, EIO);
		return;
	}
	e.attr_timeout = e.entry_timeout = SQUASH_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void squash_op_getattr(fuse_req_t req, fuse_ino_t ino,
			      struct fuse_file_info *fi)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_inode in;
	struct stat st;

	if (squash_iget(req, ino, &in))
		return;
	if (squash_stat(c, &in, ino, &st))
		fuse_reply_err(req, EIO);
	else
		fuse_reply_attr(req, &st, SQUASH_TIMEOUT);
}

static void squash_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_inode in;
	size_t size;
	char *buf;

	if (squash_iget(req, ino, &in))
		return;
	if (!S_ISLNK(in.base.mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (sqfs_readlink(&c->fs, &in, NULL, &size) != SQFS_OK) {
		fuse_reply_err(req, EIO);
		return;
	}
	buf = squash_buf(c, size + 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size += 1;
	if (sqfs_readlink(&c->fs, &in, buf, &size) != SQFS_OK)
		fuse_reply_err(req, EIO);
	else
		fuse_reply_readlink(req, buf);
}

static void squash_op_open(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_inode in;

	/* ENOSYS: "open without asking from now on" (see squash_op_init).
	 * The mount is read-only, so the VFS refuses writers before us. */
	if (c->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (squash_iget(req, ino, &in))
		return;
	if (S_ISDIR(in.base.mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->fh = 0; /* nothing per open file: any worker serves its reads */
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void squash_op_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_off_t n = (sqfs_off_t)size;
	sqfs_inode in;
	char *buf;

	if (squash_iget(req, ino, &in))
		return;
	buf = squash_buf(c, size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (squash_read_range(&c->fs, &in, off, &n, buf) != SQFS_OK) {
		if (!c->warned)
			log_error("squashfs image '%s': reading file %lu at "
				  "offset %lld failed: the image is corrupt "
				  "(its readers get an I/O error)",
				  c->image ? c->image : "?", (unsigned long)ino,
				  (long long)off);
		c->warned = true;
		fuse_reply_err(req, EIO);
		return;
	}
	c->read_bytes += (unsigned long long)n;
	fuse_reply_buf(req, buf, (size_t)n);
}

static void squash_op_opendir(fuse_req_t req, fuse_ino_t ino,
			      struct fuse_file_info *fi)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_inode in;

	if (c->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (squash_iget(req, ino, &in))
		return;
	if (!S_ISDIR(in.base.mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->fh = 0;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

/* READDIR and READDIRPLUS. The offset of an entry is squashfuse's position
 * of the next one, so a listing can resume on any worker. */
static void squash_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, bool plus)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	sqfs_err serr = SQFS_OK;
	sqfs_dir_entry ent;
	squash_name namebuf;
	sqfs_inode dir;
	sqfs_dir d;
	size_t used = 0;
	char *buf;

	if (squash_iget(req, ino, &dir))
		return;
	if (!S_ISDIR(dir.base.mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (sqfs_dir_open(&c->fs, &dir, &d, off) != SQFS_OK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = squash_buf(c, size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	sqfs_dentry_init(&ent, namebuf);
	while (sqfs_dir_next(&c->fs, &d, &ent, &serr)) {
		const char *name = sqfs_dentry_name(&ent);
		off_t next = sqfs_dentry_next_offset(&ent);
		fuse_ino_t node = squash_id_to_node(c, sqfs_dentry_inode(&ent));
		size_t esize;

		if (plus) {
			struct fuse_entry_param e;
			sqfs_inode in;

			memset(&e, 0, sizeof(e));
			e.ino = node;
			if (squash_inode_get(&c->fs, &in,
					     sqfs_dentry_inode(&ent)) !=
				SQFS_OK ||
			    squash_stat(c, &in, node, &e.attr)) {
				serr = SQFS_ERR;
				break;
			}
			e.attr_timeout = e.entry_timeout = SQUASH_TIMEOUT;
			esize = fuse_add_direntry_plus(
			    req, buf + used, size - used, name, &e, next);
		} else {
			struct stat st;

			memset(&st, 0, sizeof(st));
			st.st_ino = node;
			st.st_mode = sqfs_dentry_mode(&ent);
			esize = fuse_add_direntry(req, buf + used, size - used,
						  name, &st, next);
		}
		if (esize > size - used)
			break;
		used += esize;
	}
	if (serr != SQFS_OK && used == 0)
		fuse_reply_err(req, EIO);
	else
		fuse_reply_buf(req, buf, used);
}

static void squash_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t off, struct fuse_file_info *fi)
{
	squash_readdir(req, ino, size, off, false);
}

static void squash_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
				  off_t off, struct fuse_file_info *fi)
{
	squash_readdir(req, ino, size, off, true);
}

static void squash_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	struct statvfs sv;
	uint32_t bs = c->fs.sb.block_size;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = bs;
	sv.f_blocks = (c->fs.sb.bytes_used + bs - 1) / bs;
	sv.f_files = c->fs.sb.inodes;
	sv.f_namemax = SQUASHFS_NAME_LEN;
	fuse_reply_statfs(req, &sv);
}

static void squash_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			       size_t size)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	size_t real = size;
	sqfs_inode in;
	char dummy, *buf = &dummy;

	if (squash_iget(req, ino, &in))
		return;
	if (size && !(buf = squash_buf(c, size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (sqfs_xattr_lookup(&c->fs, &in, name, buf, &real) != SQFS_OK)
		fuse_reply_err(req, EIO);
	else if (real == 0)
		fuse_reply_err(req, ENODATA);
	else if (size == 0)
		fuse_reply_xattr(req, real);
	else if (size < real)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, real);
}

static void squash_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct squash_ctx *c = fuse_req_userdata(req);
	size_t count = 0;
	sqfs_inode in;
	sqfs_xattr x;
	char *buf = NULL;

	if (squash_iget(req, ino, &in))
		return;
	if (size && !(buf = squash_buf(c, size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (sqfs_xattr_open(&c->fs, &in, &x) != SQFS_OK) {
		fuse_reply_err(req, EIO);
		return;
	}
	while (x.remain) {
		size_t n;

		if (sqfs_xattr_read(&x) != SQFS_OK) {
			fuse_reply_err(req, EIO);
			return;
		}
		n = sqfs_xattr_name_size(&x);
		if (buf) {
			if (count + n + 1 > size) {
				fuse_reply_err(req, ERANGE);
				return;
			}
			if (sqfs_xattr_name(&x, buf + count, true) != SQFS_OK) {
				fuse_reply_err(req, EIO);
				return;
			}
			buf[count + n] = '\0';
		}
		count += n + 1;
	}
	if (buf)
		fuse_reply_buf(req, buf, count);
	else
		fuse_reply_xattr(req, count);
}

/* Operations left NULL are answered by libfuse: ENOSYS (the kernel then stops
 * asking: flush, access, xattrs on images without any), or success without a
 * call (release, releasedir, forget: nothing is kept per open or lookup). */
static const struct fuse_lowlevel_ops squash_ops = {
    .init = squash_op_init,
    .lookup = squash_op_lookup,
    .getattr = squash_op_getattr,
    .readlink = squash_op_readlink,
    .open = squash_op_open,
    .read = squash_op_read,
    .opendir = squash_op_opendir,
    .readdir = squash_op_readdir,
    .readdirplus = squash_op_readdirplus,
    .statfs = squash_op_statfs,
    .getxattr = squash_op_getxattr,
    .listxattr = squash_op_listxattr,
};

/* ---- opening the image --------------------------------------------------- */

/* libsquashfuse keeps one decompressed data block per process. The kernel's
 * READs are at most 128 KiB and, for page faults, centred on the faulting
 * page rather than aligned to the image's blocks, so most of them span two
 * blocks and the next one needs one of those again: with one cached block a
 * cold exec decompressed each block about twice (measured: 30 READs for a
 * 1.5 MB binary). A few blocks per worker make that once. Each worker has
 * its own copy (forked after this), so a block may still be decompressed
 * once per worker. Keeps the library's cache if the new one cannot be
 * made. */
static void squash_grow_data_cache(struct squash_ctx *c)
{
	sqfs_cache bigger;

	if (sqfs_block_cache_init(&bigger, SQUASH_DATA_CACHE_BLOCKS) != SQFS_OK)
		return;
	sqfs_cache_destroy(&c->fs.data_cache);
	c->fs.data_cache = bigger;
}

/* gzip images (mksquashfs's and Apptainer's default) hold one zlib stream
 * per block, always whole in memory: libdeflate inflates such buffers
 * about 2.3x faster than zlib's streaming inflate, which libsquashfuse
 * uses (busybox's sixteen 128 KiB blocks: 8.8 -> 3.9 ms on the test VM),
 * and every binary and library a rank loads from the image goes through
 * it. One decompressor per process: each FUSE worker is a process of its
 * own and serves one request at a time. squash_inflate is installed only
 * once squash_inflater exists (squash_open_image). */
static struct libdeflate_decompressor *squash_inflater;

static sqfs_err squash_inflate(void *in, size_t insz, void *out, size_t *outsz)
{
	size_t got = 0;

	if (libdeflate_zlib_decompress(squash_inflater, in, insz, out, *outsz,
				       &got) != LIBDEFLATE_SUCCESS)
		return SQFS_ERR;
	*outsz = got;
	return SQFS_OK;
}

/* The superblock of the squashfs at offset of image (avail bytes from
 * there) into *super, checked (image_squashfs_super); -1 with *err naming
 * what is wrong with it. */
static int squash_check_super(int fd, const char *image, uint64_t offset,
			      uint64_t avail, struct squashfs_super *super,
			      mpictr_err **err)
{
	struct squashfs_super sb;

	switch (image_squashfs_super(fd, offset, avail, &sb)) {
	case SQUASHFS_OK:
		*super = sb;
		return 0;
	case SQUASHFS_SHORT:
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": not a squashfs image (only %" PRIu64
			       " bytes there)",
			       image, offset, avail);
	case SQUASHFS_READ_ERROR:
		return err_set(err, errno,
			       "read squashfs '%s' at offset %" PRIu64, image,
			       offset);
	case SQUASHFS_NO_MAGIC:
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": not a squashfs image",
			       image, offset);
	case SQUASHFS_BAD_VERSION:
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": unsupported squashfs version %u.%u (only "
			       "4.0 is supported)",
			       image, offset, sb.major, sb.minor);
	case SQUASHFS_TRUNCATED:
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": truncated image (the superblock says %" PRIu64
			       " bytes, the file has %" PRIu64
			       " from the offset)",
			       image, offset, sb.bytes_used, avail);
	default:
		return err_set(err, EINVAL, "squashfs '%s' at offset %" PRIu64,
			       image, offset);
	}
}

/* Check the superblock ourselves, then let sqfs_init() read the tables. */
static int squash_open_image(struct squash_ctx *c, const char *image,
			     uint64_t offset, mpictr_err **err)
{
	struct squashfs_super sb = {0};
	struct stat st;
	uint64_t avail;
	unsigned comp;
	sqfs_inode root;
	sqfs_err serr;

	c->image_fd = open(image, O_RDONLY | O_CLOEXEC);
	if (c->image_fd < 0)
		return err_set(err, errno, "open squashfs image '%s'", image);
	if (fstat(c->image_fd, &st))
		return err_set(err, errno, "stat squashfs image '%s'", image);
	if (!S_ISREG(st.st_mode))
		return err_set(
		    err, 0, "squashfs image '%s': not a regular file", image);
	if (offset >= (uint64_t)st.st_size)
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": offset is beyond the end of the file "
			       "(%lld bytes)",
			       image, offset, (long long)st.st_size);
	avail = (uint64_t)st.st_size - offset;
	if (squash_check_super(c->image_fd, image, offset, avail, &sb, err) < 0)
		return -1;
	comp = sb.compression;
	if (!sqfs_decompressor_get((sqfs_compression_type)comp)) {
		const char *name = image_compression_name(comp);

		if (!name)
			return err_set(err, 0,
				       "squashfs '%s' at offset %" PRIu64
				       ": unknown compression id %u",
				       image, offset, comp);
		err_set(err, 0,
			"squashfs '%s' at offset %" PRIu64
			": compression '%s' is not supported (supported: "
			"gzip, xz, zstd, lz4, lzo)",
			image, offset, name);
		return err_hint(err, "rebuild the image, e.g. with "
				     "'mksquashfs DIR IMG -comp xz'");
	}

	serr = sqfs_init(&c->fs, c->image_fd, (size_t)offset);
	if (serr != SQFS_OK) {
		sqfs_table_destroy(&c->fs.xattr_table);
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": cannot read the inode, id or fragment tables "
			       "(corrupt image, squashfuse error %d)",
			       image, offset, (int)serr);
	}
	/* libsquashfuse divides by it and allocates it (found by
	 * fuzz_squash: 0 is a SIGFPE) */
	if (c->fs.sb.block_size < 4096 || c->fs.sb.block_size > (1u << 20) ||
	    c->fs.sb.block_log > 20 ||
	    c->fs.sb.block_size != 1u << c->fs.sb.block_log) {
		squash_fs_destroy(&c->fs);
		return err_set(err, 0,
			       "squashfs '%s' at offset %" PRIu64
			       ": block size %u is not a power of two from 4 "
			       "KiB to 1 MiB (corrupt image)",
			       image, offset, c->fs.sb.block_size);
	}
	if (squash_inode_get(&c->fs, &root, sqfs_inode_root(&c->fs)) !=
		SQFS_OK ||
	    !S_ISDIR(root.base.mode)) {
		squash_fs_destroy(&c->fs);
		return err_set(
		    err, 0,
		    "squashfs '%s' at offset %" PRIu64
		    ": cannot read the root directory (corrupt image)",
		    image, offset);
	}
	c->have_xattrs =
	    c->fs.sb.xattr_id_table_start != (uint64_t)SQUASHFS_INVALID_BLK;
	squash_grow_data_cache(c);
	/* Allocated before the workers are forked: each inherits its copy.
	 * Without it libsquashfuse's own zlib path stays in use. */
	if (comp == ZLIB_COMPRESSION &&
	    (squash_inflater ||
	     (squash_inflater = libdeflate_alloc_decompressor())))
		c->fs.decompressor = squash_inflate;
	return 0;
}

/* ---- workers ------------------------------------------------------------- */

/* Close every descriptor but stderr and the two in keep[] (sorted). */
static void squash_close_fds(int a, int b)
{
	int keep[3] = {2, a < b ? a : b, a < b ? b : a};
	unsigned lo = 0;

	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0U, 0);
}

/* The request a worker is serving (its FUSE unique id, 0: none) and its
 * /dev/fuse descriptor. A worker that crashes (a fault in libsquashfuse
 * the checks above do not catch) answers that request with EIO before it
 * dies (squash_crash): with other workers alive the kernel would never
 * fail it, and its reader, perhaps the holder itself while it builds the
 * root, would wait forever. */
static volatile uint64_t squash_unique;
static int squash_fuse_fd = -1;

static void squash_crash(int sig)
{
	struct {
		uint32_t len;
		int32_t error;
		uint64_t unique;
	} out = {.len = sizeof(out), .error = -EIO, .unique = squash_unique};

	(void)sig;
	if (out.unique && squash_fuse_fd >= 0 &&
	    write(squash_fuse_fd, &out, sizeof(out)) < 0) {
		/* nothing more to do: the holder aborts the mount */
	}
	/* SA_RESETHAND: the fault recurs (or abort() raises again) with
	 * the default action, and the worker dies of the signal */
}

/* Install squash_crash for the signals of a crash, on its own stack. */
static void squash_crash_handlers(int fuse_fd)
{
	static const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	static char altstack[32768];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
	struct sigaction sa = {.sa_handler = squash_crash,
			       .sa_flags = SA_RESETHAND | SA_ONSTACK};

	squash_fuse_fd = fuse_fd;
	sigaltstack(&ss, NULL);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(crash); i++)
		sigaction(crash[i], &sa, NULL);
}

/* The body of one worker: never returns. */
static _Noreturn void squash_worker(struct fuse_session *se,
				    struct squash_ctx *c)
{
	/* SIGTERM, SIGUSR1/2 too: sent to a whole process group (`timeout`,
	 * `kill -- -PGID`) they are meant for the job, whose supervisor
	 * forwards them to the ranks; the mount must outlive the ranks. */
	static const int ignored[] = {SIGINT,  SIGQUIT, SIGHUP,	 SIGPIPE,
				      SIGTSTP, SIGTTIN, SIGTTOU, SIGTERM,
				      SIGUSR1, SIGUSR2};
	struct fuse_buf fbuf = {.mem = NULL};
	int fd, r = 0;

	/* proc_fork_child: the caller's handlers reset, no signal blocked,
	 * dead with the caller. Terminal and group signals are for the
	 * payload, and the caller's death reaches us. */
	prctl(PR_SET_NAME, "mpictr-sqfs");
	for (size_t i = 0; i < ARRAY_SIZE(ignored); i++)
		signal(ignored[i], SIG_IGN);

	/* Hold no descriptor of the caller's (a pipe kept open here would
	 * hide an EOF the caller's peers wait for). */
	squash_close_fds(fuse_session_fd(se), c->image_fd);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		if (fd > 1)
			close(fd);
	}

	squash_crash_handlers(fuse_session_fd(se));
	for (;;) {
		r = fuse_session_receive_buf(se, &fbuf);
		if (r == -EINTR)
			continue;
		if (r <= 0) /* 0: unmounted or aborted (ENODEV) */
			break;
		c->requests++;
		/* the request header: len, opcode, unique (8 bytes in) */
		if (!(fbuf.flags & FUSE_BUF_IS_FD) && fbuf.mem &&
		    (size_t)r >= 16)
			memcpy((void *)&squash_unique, (char *)fbuf.mem + 8,
			       sizeof(uint64_t));
		fuse_session_process_buf(se, &fbuf);
		squash_unique = 0;
		if (fuse_session_exited(se))
			break;
	}
	if (r < 0)
		log_warn("squashfs worker %d: read '/dev/fuse': %s", getpid(),
			 strerror(-r));
	log_debug("squashfs worker %d: served %llu requests, %llu bytes read",
		  getpid(), c->requests, c->read_bytes);
	_exit(r < 0 ? 1 : 0);
}

static void squash_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait up to grace_ms for the workers to exit, then SIGKILL the rest, and
 * reap all. A pid is only signalled while it is our unreaped child, so it
 * cannot have been recycled. */
static void squash_stop_workers(pid_t *pids, size_t n, long grace_ms)
{
	long waited = 0;
	size_t left;

	for (;;) {
		left = 0;
		for (size_t i = 0; i < n; i++) {
			pid_t r;

			if (pids[i] <= 0)
				continue;
			r = waitpid(pids[i], NULL, WNOHANG);
			if (r == pids[i] || (r < 0 && errno == ECHILD))
				pids[i] = -pids[i];
			else
				left++;
		}
		if (!left || waited >= grace_ms)
			break;
		squash_sleep_ms(5);
		waited += 5;
	}
	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGKILL);
		TEMP_FAILURE_RETRY(waitpid(pids[i], NULL, 0));
		pids[i] = -pids[i];
	}
	for (size_t i = 0; i < n; i++)
		pids[i] = -pids[i];
}

/* ---- mount and unmount --------------------------------------------------- */

static int squash_open_fuse(mpictr_err **err)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	int e = errno;

	if (fd >= 0)
		return fd;
	err_set(err, e, "open '/dev/fuse'");
	if (e == EACCES || e == EPERM)
		err_hint(err, "/dev/fuse must be readable and writable by "
			      "every user, as udev makes it: chmod 0666 "
			      "/dev/fuse (and install fuse3)");
	else if (e == ENOENT || e == ENODEV || e == ENXIO)
		err_hint(err, "load the kernel's FUSE support (modprobe fuse) "
			      "and install fuse3");
	return -1;
}

static int squash_kernel_mount(const char *image, const char *mountpoint,
			       int fd, mpictr_err **err)
{
	cleanup_free char *opts = xasprintf(
	    "fd=%d,rootmode=%o,user_id=%u,group_id=%u,default_permissions", fd,
	    (unsigned)S_IFDIR, (unsigned)getuid(), (unsigned)getgid());
	int e;

	if (!mount(image, mountpoint, "fuse.squashfuse",
		   MS_RDONLY | MS_NOSUID | MS_NODEV, opts))
		return 0;
	e = errno;
	err_set(err, e, "mount squashfs '%s' on '%s'", image, mountpoint);
	if (e == EPERM)
		err_hint(err, "an unprivileged FUSE mount needs a user and "
			      "mount namespace of its own and Linux 4.18 or "
			      "later");
	else if (e == ENODEV)
		err_hint(err, "load the kernel's FUSE support (modprobe fuse)");
	else if (e == EINVAL)
		err_hint(err, "/dev/fuse must be opened inside the user "
			      "namespace that mounts");
	return -1;
}

/* The kernel queued FUSE_INIT when mount(2) returned: answer it here, once,
 * before the workers exist. */
static int squash_handshake(struct fuse_session *se, struct squash_ctx *c,
			    const char *mountpoint, mpictr_err **err)
{
	struct fuse_buf fbuf = {.mem = NULL};
	int r;

	do
		r = fuse_session_receive_buf(se, &fbuf);
	while (r == -EINTR);
	if (r <= 0)
		return err_set(err, r < 0 ? -r : ENODEV,
			       "read the FUSE INIT request for '%s'",
			       mountpoint);
	fuse_session_process_buf(se, &fbuf);
	free(fbuf.mem);
	if (!c->got_init)
		return err_set(err, 0, "FUSE handshake for '%s' failed: %s",
			       mountpoint, squash_fuse_last());
	return 0;
}

/* nworkers forked servers of the session, recorded in m->pids. */
static int squash_fork_workers(struct fuse_session *se, struct squash_ctx *c,
			       int nworkers, struct squash_mount *m,
			       mpictr_err **err)
{
	sigset_t none;

	sigemptyset(&none);
	m->pids = xcalloc((size_t)nworkers, sizeof(pid_t));
	for (int i = 0; i < nworkers; i++) {
		pid_t pid = proc_fork_child(&none, "squashfs worker", err);

		if (pid < 0)
			return -1;
		if (pid == 0)
			squash_worker(se, c);
		m->pids[m->npids++] = pid;
	}
	return 0;
}

int squash_mount(const char *image, uint64_t offset, const char *mountpoint,
		 int nworkers, struct squash_mount **out, mpictr_err **err)
{
	char *fargv[] = {"mpictr", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct fuse_lowlevel_ops ops = squash_ops;
	struct fuse_session *se = NULL;
	struct squash_mount *m = NULL;
	struct squash_ctx *c;
	struct statfs sfs;
	struct stat st;
	char fdpath[32];
	bool mounted = false;
	int fd = -1;

	*out = NULL;
	if (nworkers < 1 || nworkers > SQUASH_MAX_WORKERS)
		return err_set(err, EINVAL,
			       "squashfs worker count %d (allowed: 1 to %d)",
			       nworkers, SQUASH_MAX_WORKERS);
	if (stat(mountpoint, &st))
		return err_set(err, errno, "mount point '%s'", mountpoint);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ENOTDIR, "mount point '%s'", mountpoint);

	c = xcalloc(1, sizeof(*c));
	c->image_fd = -1;
	if (squash_open_image(c, image, offset, err)) {
		if (c->image_fd >= 0)
			close(c->image_fd);
		free(c);
		return -1;
	}
	/* the file's own name, for the workers' messages (image may be a
	 * /proc/self/fd/N of the caller's) */
	c->image = fd_path_dup(c->image_fd);
	if (!c->have_xattrs)
		ops.getxattr = NULL, ops.listxattr = NULL;

	fuse_set_log_func(squash_fuse_log);
	squash_fuse_msg[0] = '\0';
	fd = squash_open_fuse(err);
	if (fd < 0)
		goto fail;
	if (squash_kernel_mount(image, mountpoint, fd, err))
		goto fail;
	mounted = true;

	se = fuse_session_new(&args, &ops, sizeof(ops), c);
	fuse_opt_free_args(&args);
	if (!se) {
		err_set(err, 0, "create the FUSE session for '%s': %s",
			mountpoint, squash_fuse_last());
		goto fail;
	}
	snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", fd);
	if (fuse_session_mount(se, fdpath)) {
		err_set(err, 0, "attach the FUSE session for '%s': %s",
			mountpoint, squash_fuse_last());
		goto fail;
	}
	fd = -1; /* the session owns it now */

	if (squash_handshake(se, c, mountpoint, err) < 0)
		goto fail;
	m = xcalloc(1, sizeof(*m));
	m->mountpoint = xstrdup(mountpoint);
	if (squash_fork_workers(se, c, nworkers, m, err) < 0)
		goto fail;

	/* Drop the caller's copies: the connection now lives exactly as long
	 * as some worker holds /dev/fuse. */
	fuse_session_destroy(se);
	se = NULL;
	squash_fs_destroy(&c->fs);
	close(c->image_fd);
	free(c->image);
	free(c);
	c = NULL;

	/* A round trip through a worker: the mount is served. */
	if (statfs(mountpoint, &sfs)) {
		err_set(err, errno, "statfs squashfs mount '%s'", mountpoint);
		goto fail;
	}
	if (sfs.f_type != FUSE_SUPER_MAGIC) {
		err_set(err, 0,
			"squashfs mount '%s' is not visible after mount",
			mountpoint);
		goto fail;
	}
	log_debug("squashfs '%s' at offset %" PRIu64
		  " mounted on '%s' with %d workers",
		  image, offset, mountpoint, nworkers);
	*out = m;
	return 0;

fail:
	if (mounted && umount2(mountpoint, MNT_DETACH))
		log_warn("unmount '%s': %s", mountpoint, strerror(errno));
	if (se)
		fuse_session_destroy(se);
	if (fd >= 0)
		close(fd);
	if (m) {
		squash_stop_workers(m->pids, m->npids, 0);
		free(m->pids);
		free(m->mountpoint);
		free(m);
	}
	if (c) {
		squash_fs_destroy(&c->fs);
		close(c->image_fd);
		free(c->image);
		free(c);
	}
	return -1;
}

int squash_umount(struct squash_mount *m, mpictr_err **err)
{
	int rc = 0;

	if (!m)
		return 0;
	/* EINVAL: no longer a mount point (someone unmounted it already). */
	if (umount2(m->mountpoint, MNT_DETACH) && errno != EINVAL)
		rc = err_set(err, errno, "unmount '%s'", m->mountpoint);
	squash_stop_workers(m->pids, m->npids, SQUASH_GRACE_MS);
	free(m->pids);
	free(m->mountpoint);
	free(m);
	return rc;
}

void squash_abort(struct squash_mount *m)
{
	if (!m)
		return;
	squash_stop_workers(m->pids, m->npids, 0);
	free(m->pids);
	free(m->mountpoint);
	free(m);
}

pid_t squash_reap_workers(struct squash_mount *m, int *status)
{
	pid_t dead = 0;

	if (!m)
		return 0;
	for (size_t i = 0; i < m->npids; i++) {
		int st;
		pid_t r;

		if (m->pids[i] <= 0)
			continue;
		r = waitpid(m->pids[i], &st, WNOHANG);
		if (r != m->pids[i])
			continue;
		/* Reaped: forget the pid, which may be reused now. */
		m->pids[i] = 0;
		if (!dead) {
			dead = r;
			*status = st;
		}
	}
	return dead;
}

size_t squash_worker_pids(const struct squash_mount *m, const pid_t **pids)
{
	*pids = m ? m->pids : NULL;
	return m ? m->npids : 0;
}

/* ---- reading an image without mounting it -------------------------------- */

struct squash_image {
	struct squash_ctx c;
	char *name; /* for messages */
};

int squash_image_open(const char *image, uint64_t offset,
		      struct squash_image **out, mpictr_err **err)
{
	struct squash_image *h = xcalloc(1, sizeof(*h));

	*out = NULL;
	h->c.image_fd = -1;
	if (squash_open_image(&h->c, image, offset, err) < 0) {
		if (h->c.image_fd >= 0)
			close(h->c.image_fd);
		free(h);
		return -1;
	}
	h->name = xstrdup(image);
	*out = h;
	return 0;
}

void squash_image_close(struct squash_image *h)
{
	if (!h)
		return;
	squash_fs_destroy(&h->c.fs);
	close(h->c.image_fd);
	free(h->name);
	free(h);
}

/* Pop the next component of *rest (skipping slashes) into name. */
static bool squash_next_name(const char **rest, char *name, size_t size)
{
	const char *s = *rest, *e;

	while (*s == '/')
		s++;
	if (!*s)
		return false;
	e = strchrnul(s, '/');
	snprintf(name, size, "%.*s", (int)(e - s), s);
	*rest = e;
	return true;
}

/* The target of symlink in, prepended to rest (malloc'ed). */
static char *squash_link_path(struct squash_image *h, sqfs_inode *in,
			      const char *rest, const char *path,
			      mpictr_err **err)
{
	char target[PATH_MAX];
	size_t size = sizeof(target);

	if (sqfs_readlink(&h->c.fs, in, NULL, &size) != SQFS_OK ||
	    size >= sizeof(target) ||
	    sqfs_readlink(&h->c.fs, in, target, &size) != SQFS_OK) {
		err_set(err, ENAMETOOLONG, "image '%s': symlink in '%s'",
			h->name, path);
		return NULL;
	}
	if (strlen(target) + strlen(rest) + 2 > PATH_MAX) {
		err_set(err, ENAMETOOLONG, "image '%s': '%s'", h->name, path);
		return NULL;
	}
	return xasprintf("%s/%s", target, rest);
}

/* Resolve path inside the image as RESOLVE_IN_ROOT does: every symlink
 * (the last component's too) followed with the image root as "/", ".."
 * never above it; at most SQUASH_MAX_LINKS symlinks. cp gets the path the
 * walk ended at (its components, no link). */
#define SQUASH_MAX_LINKS 40
#define SQUASH_MAX_DEPTH 128
struct squash_walk {
	sqfs_inode_id id[SQUASH_MAX_DEPTH]; /* id[0]: the root */
	size_t end[SQUASH_MAX_DEPTH];	    /* cp.len at each depth */
	size_t depth;
	struct strbuf cp;
};

static void squash_walk_to(struct squash_walk *w, size_t depth)
{
	w->depth = depth;
	w->cp.len = w->end[depth];
	if (w->cp.buf)
		w->cp.buf[w->cp.len] = '\0';
}

/* One component: lookup in the current directory; a symlink makes *next
 * the rest of the walk (malloc'ed), else the walk goes down. */
static int squash_step(struct squash_image *h, struct squash_walk *w,
		       const char *name, const char *rest, const char *path,
		       char **next, mpictr_err **err)
{
	sqfs_dir_entry ent;
	squash_name nb;
	sqfs_inode dir, in;
	bool found = false;

	*next = NULL;
	sqfs_dentry_init(&ent, nb);
	if (squash_inode_get(&h->c.fs, &dir, w->id[w->depth]) != SQFS_OK ||
	    !S_ISDIR(dir.base.mode))
		return err_set(err, ENOTDIR, "image '%s': '%s'", h->name, path);
	if (sqfs_dir_lookup(&h->c.fs, &dir, name, strlen(name), &ent, &found) !=
		SQFS_OK ||
	    !found ||
	    squash_inode_get(&h->c.fs, &in, sqfs_dentry_inode(&ent)) != SQFS_OK)
		return err_set(err, ENOENT, "image '%s': '%s'", h->name, path);
	if (S_ISLNK(in.base.mode)) {
		*next = squash_link_path(h, &in, rest, path, err);
		return *next ? 0 : -1;
	}
	if (w->depth + 1 >= SQUASH_MAX_DEPTH)
		return err_set(err, ENAMETOOLONG, "image '%s': '%s'", h->name,
			       path);
	w->id[++w->depth] = sqfs_dentry_inode(&ent);
	sb_printf(&w->cp, "/%s", name);
	w->end[w->depth] = w->cp.len;
	return 0;
}

static int squash_resolve(struct squash_image *h, const char *path,
			  sqfs_inode *out, char **canon, mpictr_err **err)
{
	struct squash_walk w = {.depth = 0, .cp = STRBUF_INIT};
	int links = 0, rc = 0;
	cleanup_free char *buf = xstrdup(path);
	const char *rest = buf;
	char name[SQUASHFS_NAME_LEN + 1];

	w.id[0] = sqfs_inode_root(&h->c.fs);
	w.end[0] = 0;
	while (rc == 0 && squash_next_name(&rest, name, sizeof(name))) {
		char *next = NULL;

		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			squash_walk_to(&w, w.depth ? w.depth - 1 : 0);
			continue;
		}
		rc = squash_step(h, &w, name, rest, path, &next, err);
		if (rc < 0 || !next)
			continue;
		if (++links > SQUASH_MAX_LINKS) {
			free(next);
			rc = err_set(err, ELOOP, "image '%s': '%s'", h->name,
				     path);
			continue;
		}
		if (*next == '/')
			squash_walk_to(&w, 0);
		free(buf);
		buf = next;
		rest = buf;
	}
	if (rc == 0 &&
	    squash_inode_get(&h->c.fs, out, w.id[w.depth]) != SQFS_OK)
		rc = err_set(err, EIO, "image '%s': '%s'", h->name, path);
	if (rc == 0 && canon)
		*canon = w.cp.len ? sb_steal(&w.cp) : xstrdup("/");
	sb_free(&w.cp);
	return rc;
}

/* A name a directory may hold: one component, no NUL in it. */
static bool squash_name_ok(sqfs_dir_entry *ent)
{
	const char *name = sqfs_dentry_name(ent);
	size_t len = sqfs_dentry_name_size(ent);

	return len > 0 && len <= SQUASHFS_NAME_LEN && strlen(name) == len &&
	       !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

int squash_image_list(struct squash_image *h, const char *path, size_t max,
		      char ***names, mpictr_err **err)
{
	sqfs_err serr = SQFS_OK;
	sqfs_dir_entry ent;
	squash_name nb;
	sqfs_inode dir;
	sqfs_dir d;
	size_t n = 0;

	*names = NULL;
	if (squash_resolve(h, path, &dir, NULL, err) < 0)
		return -1;
	if (!S_ISDIR(dir.base.mode))
		return err_set(err, ENOTDIR, "image '%s': '%s'", h->name, path);
	if (sqfs_dir_open(&h->c.fs, &dir, &d, 0) != SQFS_OK)
		return err_set(err, EIO, "image '%s': directory '%s'", h->name,
			       path);
	sqfs_dentry_init(&ent, nb);
	while (sqfs_dir_next(&h->c.fs, &d, &ent, &serr)) {
		if (++n > max) {
			strv_free(*names);
			*names = NULL;
			return err_set(err, E2BIG,
				       "image '%s': directory '%s' has more "
				       "than %zu entries",
				       h->name, path, max);
		}
		if (!squash_name_ok(&ent)) {
			strv_free(*names);
			*names = NULL;
			return err_set(err, EIO,
				       "image '%s': directory '%s': a corrupt "
				       "entry",
				       h->name, path);
		}
		strv_push(names, sqfs_dentry_name(&ent));
	}
	if (serr != SQFS_OK) {
		strv_free(*names);
		*names = NULL;
		return err_set(err, EIO, "image '%s': directory '%s'", h->name,
			       path);
	}
	return 0;
}

int squash_image_stat(struct squash_image *h, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err)
{
	sqfs_inode in;

	if (squash_resolve(h, path, &in, canon, err) < 0)
		return -1;
	*mode = in.base.mode;
	*size = S_ISREG(in.base.mode) ? (uint64_t)in.xtra.reg.file_size : 0;
	return 0;
}

int squash_image_pread(struct squash_image *h, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err)
{
	sqfs_inode in;
	sqfs_off_t got = (sqfs_off_t)n;

	if (squash_resolve(h, path, &in, NULL, err) < 0)
		return -1;
	if (!S_ISREG(in.base.mode))
		return err_set(err, EINVAL, "image '%s': '%s' is not a file",
			       h->name, path);
	if (off > (uint64_t)in.xtra.reg.file_size ||
	    n > (uint64_t)in.xtra.reg.file_size - off)
		return err_set(err, EINVAL,
			       "image '%s': '%s': read beyond the end", h->name,
			       path);
	if (n && (squash_read_range(&h->c.fs, &in, (sqfs_off_t)off, &got,
				    buf) != SQFS_OK ||
		  got != (sqfs_off_t)n))
		return err_set(err, EIO, "image '%s': read '%s'", h->name,
			       path);
	return 0;
}

int squash_image_read(struct squash_image *h, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err)
{
	sqfs_inode in;
	sqfs_off_t n;

	*buf = NULL;
	*len = 0;
	if (squash_resolve(h, path, &in, NULL, err) < 0)
		return -1;
	if (!S_ISREG(in.base.mode))
		return err_set(err, EINVAL, "image '%s': '%s' is not a file",
			       h->name, path);
	if ((uint64_t)in.xtra.reg.file_size > max)
		return err_set(err, EFBIG,
			       "image '%s': '%s' is larger than %zu bytes",
			       h->name, path, max);
	n = (sqfs_off_t)in.xtra.reg.file_size;
	*buf = xmalloc((size_t)n + 1);
	if (n && (squash_read_range(&h->c.fs, &in, 0, &n, *buf) != SQFS_OK ||
		  n != (sqfs_off_t)in.xtra.reg.file_size)) {
		free(*buf);
		*buf = NULL;
		return err_set(err, EIO, "image '%s': read '%s'", h->name,
			       path);
	}
	(*buf)[n] = '\0';
	*len = (size_t)n;
	return 0;
}
