/* rootfs.c - assemble the container root from a plan.
 *
 * Runs in the holder, which owns the job's user and mount namespaces.
 * The image is untrusted: its symlinks may point anywhere (absolute, "..",
 * through /proc magic links). No image path is followed while anything of
 * the host but the planned sources is reachable, and nothing is created
 * through a path string checked once and used again:
 *   1. make every mount private, so nothing propagates to the host;
 *   2. open every host source with O_PATH while the host root is still the
 *      root: a host path is resolved on the host, never through a symlink
 *      planted in the image; the site's deny/allow rules are checked on
 *      these descriptors (bindpol.h);
 *   3. clone each source's mount tree (open_tree OPEN_TREE_CLONE: a
 *      detached copy that outlives the host root's detach) and set its
 *      flags on the clone (mount_setattr, recursively for directories);
 *   4. mount a tmpfs on /dev/shm (in this namespace only) as the writable
 *      layer; mount the image read-only at LAYER/image (squashfuse, or a
 *      bind for a directory image); fill LAYER/root with the image's
 *      top-level entries (binds and copied symlinks). A writable
 *      container's root is instead an overlay on the image
 *      (LAYER/overlay): the whole tree takes writes; the mount points
 *      the image lacks are made in a lower layer above it (LAYER/mp);
 *   5. pivot_root into LAYER/root and detach the old root at once: from
 *      here a path can only reach the container (the image, the layer and
 *      what is bound), the sources are held as detached clones;
 *   6. each target is resolved by the kernel inside the new root (openat2
 *      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS from a descriptor of the
 *      root), and the clone (or a new tmpfs, devpts) is moved onto the
 *      resolved descriptor. A missing target is created relative to a
 *      verified parent descriptor (mkdirat, openat O_CREAT|O_EXCL|
 *      O_NOFOLLOW), only in the writable layer: an image directory (or a
 *      read-only host bind such as /sys) that should hold it is replaced
 *      by a tmpfs re-populated with binds of its entries; a dangling image
 *      symlink there is replaced by the mount point; a writable host
 *      directory is never written (error);
 *   7. remount the materialized directories and the root (unless it
 *      is a writable container's overlay) read-only.
 * Device binds keep dev and get nosuid,noexec; every other bind gets
 * nosuid,nodev. Flags are only ever set (mount_setattr), so the flags the
 * kernel locked on a source mount are kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "container/rootfs.h"
#include "common/error.h"
#include "host/imgread.h"
#include "host/mpiinject.h"
#include "sif/squash.h"
#include "common/syscalls.h"
#include "host/verbs.h"

#define OLDROOT "/.mpictr-oldroot"
#define GENDIR "/.mpictr-gen"

struct mnt_set {
	uint64_t *ids;
	size_t n;
};

struct rootfs {
	const struct plan *p;
	int image_fd; /* the image as verified (imgtrust.h), or -1; not ours */
	int *src_fd;  /* per op: O_PATH fd of the host source, or -1 */
	int *src_mnt; /* per op: detached clone of the source, or -1 */
	int pts_mnt;  /* clone of the host's /dev/pts (fallback), or -1 */
	int root;     /* O_PATH fd of the container root (after step 5) */
	struct mnt_set image; /* mounts that show image content */
	struct mnt_set layer; /* tmpfs mounts of the writable layer */
	/* A writable container (--writable-tmpfs, --overlay): the root is
	 * the overlay itself, so the whole tree takes writes; its mount. */
	bool overlay_root;
	uint64_t overlay_id;
	int *ro_mnt; /* materialized tmpfs mounts, made ro at the end */
	size_t nro;
	struct devices_bind *inject; /* --inject-verbs: host provider files */
	int *inject_fd;
	int *inject_mnt;
	size_t ninject;
	/* Where the layer is mounted until the pivot: /dev/shm (or /tmp
	 * where there is none), hidden in this namespace only and detached
	 * with the old root right after the pivot. /dev/shm, because host
	 * paths the holder still reads before the pivot (MPICTR_SYSROOT
	 * trees, providers) are far more likely under /tmp. */
	const char *layer_dir;
	int gen; /* root of the tmpfs of generated files, or -1 */
	char *l_image, *l_root;
};

static int mnt_id_at(int dfd, const char *path, int flags, uint64_t *id)
{
	struct statx stx;

	if (statx(dfd, path, flags | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) <
	    0)
		return -1;
	if (!(stx.stx_mask & STATX_MNT_ID)) {
		errno = ENOSYS;
		return -1;
	}
	*id = stx.stx_mnt_id;
	return 0;
}

static void mnt_set_add_id(struct mnt_set *s, uint64_t id)
{
	s->ids = xrealloc(s->ids, (s->n + 1) * sizeof(*s->ids));
	s->ids[s->n++] = id;
}

static void mnt_set_add_path(struct mnt_set *s, const char *path)
{
	uint64_t id;

	if (mnt_id_at(AT_FDCWD, path, 0, &id) == 0)
		mnt_set_add_id(s, id);
}

/* The mount whose root fd refers to (a clone, a new tmpfs). */
static void mnt_set_add_fd(struct mnt_set *s, int fd)
{
	uint64_t id;

	if (mnt_id_at(fd, "", AT_EMPTY_PATH, &id) == 0)
		mnt_set_add_id(s, id);
}

static bool mnt_set_has(const struct mnt_set *s, uint64_t id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == id)
			return true;
	return false;
}

/* The flags of the mount at path that a bind remount must keep. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_RDONLY)
		f |= MS_RDONLY;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* Bind src onto dst (recursively for directories), then apply flags.
 * Before the pivot only, on paths of the private layer. */
static int bind_path(const char *src, const char *dst, bool rec,
		     unsigned long flags, mpictr_err **err)
{
	unsigned long keep;

	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return err_set(err, errno, "bind '%s' on '%s'", src, dst);
	keep = locked_flags(dst);
	if (!flags || (keep | flags) == keep)
		return 0;
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | keep | flags, NULL) <
	    0)
		return err_set(err, errno, "remount '%s' with flags 0x%lx", dst,
			       keep | flags);
	return 0;
}

static const char *fd_path(int fd, char *buf, size_t n)
{
	snprintf(buf, n, "/proc/self/fd/%d", fd);
	return buf;
}

static unsigned mount_attrs(unsigned long flags)
{
	unsigned a = 0;

	if (flags & MS_RDONLY)
		a |= MOUNT_ATTR_RDONLY;
	if (flags & MS_NOSUID)
		a |= MOUNT_ATTR_NOSUID;
	if (flags & MS_NODEV)
		a |= MOUNT_ATTR_NODEV;
	if (flags & MS_NOEXEC)
		a |= MOUNT_ATTR_NOEXEC;
	return a;
}

/* A detached clone of the mount tree at dfd/path (the mount dfd refers to
 * for ""; recursively for directories) with flags set on every mount of
 * it. Returns its fd, or -1 with errno set. */
static int clone_tree(int dfd, const char *path, bool rec, unsigned long flags)
{
	struct mount_attr attr = {.attr_set = mount_attrs(flags)};
	int fd = sys_open_tree(
	    dfd, path,
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW |
		(*path ? 0 : AT_EMPTY_PATH) | (rec ? AT_RECURSIVE : 0));

	if (fd < 0 || !attr.attr_set)
		return fd;
	if (sys_mount_setattr(fd, "", AT_EMPTY_PATH | (rec ? AT_RECURSIVE : 0),
			      &attr, sizeof(attr)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* A new detached mount of type (tmpfs, devpts) with the comma-separated
 * options data and flags. Returns its fd, or -1 with errno set. */
static int new_mount(const char *type, const char *data, unsigned long flags)
{
	cleanup_close int fs = sys_fsopen(type, FSOPEN_CLOEXEC);
	cleanup_free char *opts = xstrdup(data ? data : "");
	char *save = NULL;

	if (fs < 0)
		return -1;
	for (char *o = strtok_r(opts, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');
		int rc;
		if (eq) {
			*eq = '\0';
			rc =
			    sys_fsconfig(fs, FSCONFIG_SET_STRING, o, eq + 1, 0);
		} else {
			rc = sys_fsconfig(fs, FSCONFIG_SET_FLAG, o, NULL, 0);
		}
		if (rc < 0)
			return -1;
	}
	if (sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	return sys_fsmount(fs, FSMOUNT_CLOEXEC, mount_attrs(flags));
}

/* Attach the detached mount mnt on the object fd refers to. */
static int attach(int mnt, int fd)
{
	return sys_move_mount(
	    mnt, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

/* Resolve path inside the container root: absolute and ".." symlinks of
 * the image end at the container root, /proc magic links are refused.
 * Returns an fd (flags | O_CLOEXEC), or -1 with errno set. */
static int resolve(const struct rootfs *r, const char *path, int flags)
{
	int fd, tries = 0;

	do
		fd = sys_openat2(r->root, path, flags | O_CLOEXEC, 0,
				 MPICTR_RESOLVE_IN_ROOT |
				     MPICTR_RESOLVE_NO_MAGICLINKS);
	while (fd < 0 && errno == EAGAIN && ++tries < 16);
	return fd;
}

/* Split an absolute path into its parent (a copy) and its last name. */
static char *split_path(const char *path, const char **name)
{
	char *parent = xstrdup(path);
	char *slash = strrchr(parent, '/');

	*name = path + (slash - parent) + 1;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	return parent;
}

/* " (the image's symlinks lead it to '/x')", or "" when fd is at path. */
static char *where(int fd, const char *path)
{
	cleanup_free char *real = fd_path_dup(fd);

	if (!real || strcmp(real, path) == 0)
		return xstrdup("");
	return xasprintf(" (the image's symlinks lead it to '%s')", real);
}

/* Create the mount point name (a directory or an empty file) in dfd, a
 * directory of the writable layer. A symlink there (copied from the
 * image, dangling in the container: the caller found the path missing)
 * is replaced. path names it in messages. */
static int make_entry(int dfd, const char *name, bool dir, mode_t mode,
		      const char *path, mpictr_err **err)
{
	for (int tries = 0;; tries++) {
		struct stat st;
		int rc;

		if (dir) {
			rc = mkdirat(dfd, name, mode);
		} else {
			rc = openat(dfd, name,
				    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW |
					O_CLOEXEC,
				    mode);
			if (rc >= 0)
				close(rc);
		}
		if (rc >= 0)
			return 0;
		if (errno != EEXIST || tries ||
		    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISLNK(st.st_mode) || unlinkat(dfd, name, 0) < 0)
			break;
		log_debug("replace the dangling symlink '%s' of the image by "
			  "a mount point",
			  path);
	}
	return err_set(err, errno,
		       "create mount point '%s' in the writable layer", path);
}

/* Replace the image directory dfd (at path in the container) by a tmpfs
 * holding binds of its entries, so new mount points can be made in it.
 * Returns an fd of the new tmpfs's root. */
static int materialize(struct rootfs *r, int dfd, const char *path,
		       mpictr_err **err)
{
	cleanup_close int mnt = -1;
	struct stat st;
	DIR *d;
	struct dirent *de;
	int lfd;
	char opts[64];

	if (fstat(dfd, &st) < 0)
		return err_set(err, errno, "stat '%s'", path);
	/* Opened before the tmpfs covers it: lists the image directory. */
	lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return err_set(err, errno, "read image directory '%s'", path);
	d = fdopendir(lfd);
	if (!d) {
		close(lfd);
		return err_set(err, errno, "read image directory '%s'", path);
	}
	snprintf(opts, sizeof(opts), "mode=%o", (unsigned)(st.st_mode & 07777));
	mnt = new_mount("tmpfs", opts, MS_NOSUID | MS_NODEV);
	if (mnt < 0 || attach(mnt, dfd) < 0) {
		int e = errno;
		closedir(d);
		return err_set(err, e, "mount tmpfs on '%s'", path);
	}
	mnt_set_add_fd(&r->layer, mnt);
	r->ro_mnt = xrealloc(r->ro_mnt, (r->nro + 1) * sizeof(*r->ro_mnt));
	r->ro_mnt[r->nro++] = dup(mnt);
	while ((de = readdir(d))) {
		cleanup_free char *dst = NULL;
		cleanup_close int clone = -1, tfd = -1;
		const char *nm = de->d_name;
		struct stat est;
		uint64_t id;

		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
			continue;
		if (fstatat(lfd, nm, &est, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		dst = xasprintf("%s/%s", strcmp(path, "/") ? path : "", nm);
		if (S_ISLNK(est.st_mode)) {
			char target[PATH_MAX];
			ssize_t n =
			    readlinkat(lfd, nm, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if (symlinkat(target, mnt, nm) < 0) {
				closedir(d);
				return err_set(err, errno, "symlink '%s'", dst);
			}
			continue;
		}
		if (!S_ISDIR(est.st_mode) && !S_ISREG(est.st_mode))
			continue; /* device nodes, fifos: never exposed */
		if (make_entry(mnt, nm, S_ISDIR(est.st_mode),
			       est.st_mode &
				   (S_ISDIR(est.st_mode) ? 07777 : 0777),
			       dst, err) < 0) {
			closedir(d);
			return -1;
		}
		clone = clone_tree(lfd, nm, true, 0);
		tfd = openat(mnt, nm, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (clone < 0 || tfd < 0 || attach(clone, tfd) < 0) {
			int e = errno;
			closedir(d);
			return err_set(err, e, "bind image entry '%s'", dst);
		}
		if (mnt_id_at(lfd, nm, 0, &id) == 0 &&
		    mnt_set_has(&r->image, id))
			mnt_set_add_fd(&r->image, clone);
	}
	closedir(d);
	return steal_fd(&mnt);
}

/* An fd of directory dir of the container, in the writable layer (so it
 * can hold a new mount point): missing directories are created there,
 * image directories on the way materialized. */
static int layer_dir(struct rootfs *r, const char *dir, mpictr_err **err)
{
	cleanup_close int fd = resolve(r, dir, O_PATH | O_DIRECTORY);
	cleanup_free char *via = NULL;
	struct statvfs sv;
	uint64_t id;

	if (fd < 0 && errno == ENOENT) {
		const char *name;
		cleanup_free char *parent = split_path(dir, &name);
		cleanup_close int pfd = layer_dir(r, parent, err);

		if (pfd < 0 || make_entry(pfd, name, true, 0755, dir, err) < 0)
			return -1;
		fd = openat(pfd, name,
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_set(err, errno, "open '%s'", dir);
		return steal_fd(&fd);
	}
	if (fd < 0)
		return err_set(err, errno,
			       "bind destination parent '%s' in the container",
			       dir);
	if (mnt_id_at(fd, "", AT_EMPTY_PATH, &id) < 0)
		return err_set(err, errno, "find the mount of '%s'", dir);
	/* A directory of the overlay root takes the mount point (in the
	 * upper layer) where the container's user could write it too: a
	 * root-owned image without --fakeroot is materialized instead. */
	if (mnt_set_has(&r->layer, id) &&
	    (!r->overlay_root || id != r->overlay_id ||
	     faccessat(fd, "", W_OK | X_OK, AT_EMPTY_PATH | AT_EACCESS) == 0))
		return steal_fd(&fd);
	/* A read-only host bind (/sys) may be re-populated the same way:
	 * nothing can be created on the host through it anyway. */
	if (mnt_set_has(&r->image, id) ||
	    (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY)))
		return materialize(r, fd, dir, err);
	via = where(fd, dir);
	return err_set(err, 0,
		       "cannot create a mount point in '%s'%s: it is a host "
		       "directory bound into the container (hint: create the "
		       "destination on the host, or bind elsewhere)",
		       dir, via);
}

/* An O_PATH fd of the target of an op (a directory or not), created in
 * the writable layer if it is missing. */
static int ensure_target(struct rootfs *r, const char *target, bool dir,
			 mpictr_err **err)
{
	cleanup_close int fd = resolve(r, target, O_PATH);
	cleanup_close int pfd = -1;
	cleanup_free char *parent = NULL;
	const char *name;
	struct stat st;

	if (fd >= 0) {
		if (fstat(fd, &st) < 0)
			return err_set(err, errno, "stat '%s'", target);
		if (dir && !S_ISDIR(st.st_mode))
			return err_set(err, ENOTDIR, "bind a directory on '%s'",
				       target);
		if (!dir && S_ISDIR(st.st_mode))
			return err_set(err, EISDIR, "bind a file on '%s'",
				       target);
		return steal_fd(&fd);
	}
	if (errno != ENOENT)
		return err_set(err, errno,
			       "bind destination '%s' in the container",
			       target);
	parent = split_path(target, &name);
	pfd = layer_dir(r, parent, err);
	if (pfd < 0)
		return err_wrap(err, "bind destination '%s'", target);
	if (make_entry(pfd, name, dir, dir ? 0755 : 0644, target, err) < 0)
		return -1;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, errno, "open mount point '%s'", target);
	return steal_fd(&fd);
}

/* Content of the container's regular file path (resolved inside the
 * root, never blocking on a fifo), or NULL when there is none. */
static char *read_in_root(const struct rootfs *r, const char *path, size_t max)
{
	cleanup_close int fd =
	    resolve(r, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	char buf[4096];

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	for (;;) {
		ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf)));
		if (n <= 0 || sb.len + (size_t)n > max) {
			if (n == 0)
				return sb_steal(&sb);
			sb_free(&sb);
			return NULL;
		}
		sb_add(&sb, buf, (size_t)n);
	}
}

/* /etc/passwd or /etc/group of the container plus the user's entry. */
static char *gen_file(const struct rootfs *r, const char *which)
{
	const struct plan *p = r->p;
	bool passwd = strcmp(which, "passwd") == 0;
	cleanup_free char *path = xasprintf("/etc/%s", which);
	cleanup_free char *cur = read_in_root(r, path, 1 << 22);
	struct strbuf sb = STRBUF_INIT;
	unsigned id = passwd ? (unsigned)p->uid_in : (unsigned)p->gid_in;
	bool found = false;

	if (cur) {
		/* Is there an entry with our id already? Field 3. */
		for (char *line = cur; *line;) {
			char *nl = strchrnul(line, '\n');
			char *f = line;
			int field = 0;
			while (f < nl && field < 2) {
				f = memchr(f, ':', (size_t)(nl - f));
				if (!f)
					break;
				f++;
				field++;
			}
			if (f && field == 2 && strtoul(f, NULL, 10) == id &&
			    f[strspn(f, "0123456789")] == ':')
				found = true;
			line = *nl ? nl + 1 : nl;
		}
		sb_puts(&sb, cur);
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			sb_putc(&sb, '\n');
	}
	if (!found) {
		const char *name = id == 0 ? "root" : p->user;
		cleanup_close int sh = resolve(r, "/bin/sh", O_PATH);
		struct stat st;
		bool have_sh = sh >= 0 && fstat(sh, &st) == 0 &&
			       S_ISREG(st.st_mode) && (st.st_mode & 0111);
		if (passwd)
			sb_printf(&sb, "%s:x:%u:%u:%s:%s:%s\n", name, id,
				  (unsigned)p->gid_in, name,
				  id == 0 ? "/root" : p->home,
				  have_sh ? "/bin/sh" : "/bin/false");
		else
			sb_printf(&sb, "%s:x:%u:\n", name, id);
	}
	return sb_steal(&sb);
}

/* The generated file of op i in the tmpfs at GENDIR (mounted on first
 * use, detached at the end: the binds keep the files, nothing of them
 * stays in the tree, and a later materialize() can still re-bind them).
 * Returns a detached clone of it, flags set. */
static int gen_clone(struct rootfs *r, size_t i, mpictr_err **err)
{
	const struct mount_op *op = &r->p->ops[i];
	cleanup_free char *content = gen_file(r, op->source);
	cleanup_close int fd = -1;
	char name[32];
	int clone;

	if (r->gen < 0) {
		cleanup_close int dfd = -1;
		cleanup_close int mnt =
		    new_mount("tmpfs", "mode=755,size=8m",
			      MS_NOSUID | MS_NODEV | MS_NOEXEC);
		if (mnt < 0)
			return err_set(err, errno, "mount tmpfs on '%s'",
				       GENDIR);
		if (mkdirat(r->root, GENDIR + 1, 0700) < 0 ||
		    (dfd = openat(r->root, GENDIR + 1,
				  O_PATH | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC)) < 0 ||
		    attach(mnt, dfd) < 0)
			return err_set(err, errno, "mount tmpfs on '%s'",
				       GENDIR);
		r->gen = steal_fd(&mnt);
	}
	snprintf(name, sizeof(name), "%zu", i);
	fd = openat(r->gen, name,
		    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write_full(fd, content, strlen(content)) < 0 ||
	    fchmod(fd, 0644) < 0)
		return err_set(err, errno, "write '%s/%s'", GENDIR, name);
	clone = clone_tree(r->gen, name, false, op->flags);
	if (clone < 0)
		return err_set(err, errno, "bind '%s/%s'", GENDIR, name);
	return clone;
}

/* Move the detached mount mnt onto target (created if missing). */
static int place(struct rootfs *r, int mnt, const char *target, bool dir,
		 mpictr_err **err)
{
	cleanup_close int tfd = ensure_target(r, target, dir, err);

	if (tfd < 0)
		return -1;
	if (attach(mnt, tfd) < 0)
		return err_set(err, errno, "mount on '%s'", target);
	return 0;
}

static int do_op(struct rootfs *r, size_t i, mpictr_err **err)
{
	const struct mount_op *op = &r->p->ops[i];

	switch (op->kind) {
	case MOP_IMAGE:
	case MOP_OVERLAY:
		return 0; /* done before the pivot */
	case MOP_BIND:
	case MOP_DEV:
		if (r->src_mnt[i] < 0)
			return 0; /* optional and missing */
		return place(r, r->src_mnt[i], op->target, op->src_is_dir, err);
	case MOP_TMPFS:
	case MOP_DEVPTS: {
		const char *type = op->kind == MOP_TMPFS ? "tmpfs" : "devpts";
		cleanup_close int mnt = new_mount(type, op->data, op->flags);
		if (mnt < 0 && op->kind == MOP_DEVPTS && r->pts_mnt >= 0) {
			/* Some kernels refuse devpts in a user namespace:
			 * fall back to the host's instance. */
			log_debug("mount devpts on '%s': %s; binding the "
				  "host's",
				  op->target, strerror(errno));
			return place(r, r->pts_mnt, op->target, true, err);
		}
		if (mnt < 0)
			return err_set(err, errno, "mount %s on '%s'", type,
				       op->target);
		if (place(r, mnt, op->target, true, err) < 0)
			return -1;
		if (op->kind == MOP_TMPFS)
			mnt_set_add_fd(&r->layer, mnt);
		return 0;
	}
	case MOP_SYMLINK: {
		const char *name;
		cleanup_free char *parent = split_path(op->target, &name);
		cleanup_close int pfd =
		    resolve(r, parent, O_PATH | O_DIRECTORY);
		struct stat st;

		if (pfd >= 0 &&
		    fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return 0;
		if (pfd >= 0)
			close(steal_fd(&pfd));
		pfd = layer_dir(r, parent, err);
		if (pfd < 0)
			return -1;
		if (symlinkat(op->source, pfd, name) < 0)
			return err_set(err, errno, "symlink '%s'", op->target);
		return 0;
	}
	case MOP_FILE: {
		cleanup_close int clone = gen_clone(r, i, err);
		if (clone < 0)
			return -1;
		return place(r, clone, op->target, false, err);
	}
	default:
		return err_set(err, EINVAL, "unknown mount operation %d",
			       (int)op->kind);
	}
}

/* The plan's verbs decision, made here: the mounted image's providers
 * (read below LAYER/image, symlinks kept inside it). */
static int verbs_in_image(struct rootfs *r, char ***warnings, mpictr_err **err)
{
	const struct plan *p = r->p;
	struct image_reader *ir = NULL;
	struct verbs_tree img;

	if (image_reader_open_dir(r->l_image, &ir, err) < 0 ||
	    verbs_tree_read(ir, NULL, &img, err) < 0) {
		image_reader_close(ir);
		return err_wrap(err, "check verbs providers");
	}
	image_reader_close(ir);
	verbs_decide(&p->hostdev, &p->host_verbs, p->sysroot, &img,
		     p->inject_verbs, warnings, &r->inject, &r->ninject);
	verbs_tree_free(&img);
	return 0;
}

/* Host HCAs whose verbs provider the image lacks: say so before exec (the
 * classic "no userspace device-specific driver found" made actionable),
 * or with --inject-verbs bind the host's provider and driver file in.
 * Decided by the plan when the image could be read before mounting (its
 * binds are among the plan's operations); else here, with the image
 * mounted in the layer (read below its root, symlinks kept inside it),
 * before the pivot, so the host files can still be opened. */
static int verbs_providers(struct rootfs *r, mpictr_err **err)
{
	const struct plan *p = r->p;
	char **warnings = NULL;

	for (size_t i = 0; p->verbs_warnings && p->verbs_warnings[i]; i++)
		log_warn("%s", p->verbs_warnings[i]);
	if (!p->verbs_in_holder)
		return 0;
	if (verbs_in_image(r, &warnings, err) < 0)
		return -1;
	for (size_t i = 0; warnings && warnings[i]; i++)
		log_warn("%s", warnings[i]);
	strv_free(warnings);
	r->inject_fd = xcalloc(r->ninject ? r->ninject : 1, sizeof(int));
	r->inject_mnt = xcalloc(r->ninject ? r->ninject : 1, sizeof(int));
	for (size_t i = 0; i < r->ninject; i++)
		r->inject_fd[i] = r->inject_mnt[i] = -1;
	for (size_t i = 0; i < r->ninject; i++) {
		r->inject_fd[i] = open(r->inject[i].src, O_PATH | O_CLOEXEC);
		if (r->inject_fd[i] < 0)
			return err_set(err, errno, "--inject-verbs: open '%s'",
				       r->inject[i].src);
		r->inject_mnt[i] = clone_tree(r->inject_fd[i], "", false,
					      MS_RDONLY | MS_NOSUID | MS_NODEV);
		if (r->inject_mnt[i] < 0)
			return err_set(err, errno, "--inject-verbs: bind '%s'",
				       r->inject[i].src);
	}
	return 0;
}

/* The MPI ABI check of the plan's host MPI injections: made by the plan
 * when the image could be read before mounting (its warnings logged
 * here), else here, with the image mounted and nothing bound yet. */
static int mpi_abi(struct rootfs *r, mpictr_err **err)
{
	const struct plan *p = r->p;

	for (size_t i = 0; p->mpi_warnings && p->mpi_warnings[i]; i++)
		log_warn("%s", p->mpi_warnings[i]);
	if (p->mpi_refusal)
		return err_from_relay(err, p->mpi_refusal->errnum,
				      p->mpi_refusal->exit_code,
				      p->mpi_refusal->msg);
	if (p->mpi_checked)
		return 0;
	return mpiinject_check(p->mpi, p->nmpi, r->l_image, err);
}

/* The upper directory's parent of --overlay DIR: DIR itself, which must
 * be a directory of the user's (checked on the opened directory), with
 * upper/ and work/ made in it when missing. An fd of DIR. */
static int overlay_user_dir(const char *dir, mpictr_err **err)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (dfd < 0)
		return err_set(err, errno, "--overlay '%s'", dir);
	if (fstat(dfd, &st) < 0)
		return err_set(err, errno, "--overlay '%s'", dir);
	if (st.st_uid != geteuid())
		return err_set(err, EPERM,
			       "--overlay '%s': the directory is not yours "
			       "(owner uid %u%s)",
			       dir, (unsigned)st.st_uid,
			       st.st_uid == 65534 ? ", or unmapped" : "");
	if ((mkdirat(dfd, "upper", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(dfd, "work", 0700) < 0 && errno != EEXIST))
		return err_set(err, errno,
			       "--overlay '%s': create upper/ and work/", dir);
	return steal_fd(&dfd);
}

/* An O_PATH fd of directory name in dfd, which must be the user's. */
static int overlay_subdir(int dfd, const char *name, const char *dir,
			  mpictr_err **err)
{
	cleanup_close int fd =
	    openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return err_set(err, errno, "--overlay '%s': '%s'", dir, name);
	if (st.st_uid != geteuid())
		return err_set(err, EPERM,
			       "--overlay '%s': '%s' is not yours (owner uid "
			       "%u)",
			       dir, name, (unsigned)st.st_uid);
	return steal_fd(&fd);
}

/* Directory name of mp shows the image's directory st in the merged
 * view (mp lies above the image): its owner and mode where the user
 * namespace maps the owner, else the user's own, with the access the
 * image gave the user (its "other" bits) for every class. */
static void mp_dir_like(int mp, const char *name, const struct stat *st)
{
	mode_t o = st->st_mode & 07, mode = st->st_mode & 07777;

	if (fchownat(mp, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		mode = (st->st_mode & 07000) | o << 6 | o << 3 | o;
	if (fchmodat(mp, name, mode, 0) < 0)
		log_debug("mode of mount point directory '%s': %s", name,
			  strerror(errno));
}

/* mp_target: the mount point target in mp (an fd of LAYER/mp) where the
 * image at img lacks it: the image's directories on the way and the
 * missing rest as directories of mp (mp_dir_like), the target a
 * directory or an empty file. mp lies above the image, so overlayfs
 * looks for an opaque mark in mp's directories only, never in the
 * image's (which root's private directories would refuse). The image is read
 * one name at a time, never following a symlink (the host root is still the
 * root): a target behind an image symlink is left to step 6. Best effort: what
 * is not made here is made after the pivot. The target is added to made when it
 * was made. */
static void mp_target(int img, int mp, const char *target, bool dir,
		      struct strbuf *made)
{
	cleanup_free char *copy = xstrdup(target);
	cleanup_close int i = fcntl(img, F_DUPFD_CLOEXEC, 3);
	cleanup_close int m = fcntl(mp, F_DUPFD_CLOEXEC, 3);
	char *save = NULL, *name = strtok_r(copy, "/", &save);
	bool missing = false;

	while (name && m >= 0) {
		char *next = strtok_r(NULL, "/", &save);
		struct stat st;
		int fd;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return;
		if (!missing &&
		    fstatat(i, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				return;
			missing = true;
		}
		if (!missing && (!next || !S_ISDIR(st.st_mode)))
			return; /* there already, or behind a symlink */
		if (!next) {
			fd = dir ? mkdirat(m, name, 0755)
				 : openat(m, name,
					  O_CREAT | O_EXCL | O_WRONLY |
					      O_NOFOLLOW | O_CLOEXEC,
					  0644);
			if (!dir && fd >= 0)
				close(fd);
			if (fd >= 0)
				sb_printf(made, "%s\n", target);
			return;
		}
		if (mkdirat(m, name, 0755) == 0) {
			if (!missing)
				mp_dir_like(m, name, &st);
		} else if (errno != EEXIST) {
			return;
		}
		if (!missing) {
			fd = openat(i, name,
				    O_PATH | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
			close(i);
			i = fd;
			if (i < 0)
				return;
		}
		fd = openat(m, name,
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(m);
		m = fd;
		name = next;
	}
}

/* Is op i's target below the directory target of an earlier op (a tmpfs,
 * a bind), which covers the image there? */
static bool covered(const struct plan *p, size_t i)
{
	const char *t = p->ops[i].target;

	for (size_t j = 0; j < i; j++) {
		const char *d = p->ops[j].target;
		size_t n = strlen(d);
		bool dir = p->ops[j].kind == MOP_TMPFS ||
			   p->ops[j].kind == MOP_DEVPTS ||
			   (p->ops[j].kind == MOP_BIND && p->ops[j].src_is_dir);
		if (dir && strcmp(d, "/") && strncmp(t, d, n) == 0 &&
		    t[n] == '/')
			return true;
	}
	return false;
}

/* The mount point layer of a writable container: LAYER/mp, a lower
 * layer above the image, holds the mount points the plan's targets need
 * where the image lacks them, so that they never land in the upper
 * directory (--overlay DIR keeps only what the user wrote). Returns an
 * fd of it. */
static int mp_layer(struct rootfs *r, int img, mpictr_err **err)
{
	const struct plan *p = r->p;
	cleanup_free char *d = xasprintf("%s/mp", r->layer_dir);
	cleanup_close int mp = -1, fd = -1;
	struct strbuf made = STRBUF_INIT;

	if (mkdir(d, 0755) < 0 ||
	    (mp = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_set(err, errno, "create '%s' in the layer", d);
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		bool bind = op->kind == MOP_BIND || op->kind == MOP_DEV;

		if ((bind && r->src_fd[i] < 0) || covered(p, i) ||
		    (!bind && op->kind != MOP_TMPFS && op->kind != MOP_DEVPTS &&
		     op->kind != MOP_FILE))
			continue;
		mp_target(img, mp, op->target,
			  bind ? op->src_is_dir : op->kind != MOP_FILE, &made);
	}
	if (made.len &&
	    ((fd = openat(mp, ROOTFS_MP_LIST,
			  O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444)) < 0 ||
	     write_full(fd, made.buf, made.len) < 0)) {
		sb_free(&made);
		return err_set(err, errno, "write '%s/%s'", d, ROOTFS_MP_LIST);
	}
	sb_free(&made);
	return steal_fd(&mp);
}

/* Step 4 of a writable container: at dst (LAYER/overlay) an overlay of
 * the image (LAYER/image, never written) whose upper directory is on a
 * new tmpfs (--writable-tmpfs, sized by the plan) or the user's DIR/upper
 * (--overlay). The overlay is the container root (pivot_root into it):
 * /, /etc and every image directory take writes, and every rank that
 * joins the namespace sees the same ones. The upper directory is the
 * holder's, so / takes the pivot's and the generated files' transient
 * directories. Mount points are made in a lower layer above the image
 * (mp_layer); the rare one behind an image symlink is made after the
 * pivot in the upper layer, or, in a directory the user cannot write (a
 * root-owned image without --fakeroot), in a materialized directory. */
static int overlay_mount(struct rootfs *r, const char *dst, mpictr_err **err)
{
	const struct plan *p = r->p;
	cleanup_close int lfd = -1, dfd = -1, up = -1, work = -1, mp = -1;
	cleanup_free char *opts = NULL;
	const char *what = p->overlay_dir ? p->overlay_dir : "tmpfs";
	char ls[64], ms[64], us[64], ws[64];
	int rc;

	if (p->overlay_tmpfs) {
		cleanup_free char *d = xasprintf("%s/upper", r->layer_dir);
		cleanup_free char *o =
		    xasprintf("mode=755,%s", p->overlay_tmpfs);
		if (mkdir(d, 0755) < 0 ||
		    mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, o) < 0 ||
		    (dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
		    mkdirat(dfd, "upper", 0755) < 0 ||
		    mkdirat(dfd, "work", 0700) < 0)
			return err_set(err, errno,
				       "--writable-tmpfs: mount its tmpfs");
	} else {
		dfd = overlay_user_dir(p->overlay_dir, err);
		if (dfd < 0)
			return -1;
	}
	lfd = open(r->l_image, O_PATH | O_DIRECTORY | O_CLOEXEC);
	up = overlay_subdir(dfd, "upper", what, err);
	if (up < 0)
		return -1;
	work = overlay_subdir(dfd, "work", what, err);
	if (work < 0 || lfd < 0)
		return work < 0 ? -1
				: err_set(err, errno, "open the mounted image");
	mp = mp_layer(r, lfd, err);
	if (mp < 0)
		return -1;
	opts = xasprintf(
	    "lowerdir=%s:%s,upperdir=%s,workdir=%s,userxattr",
	    fd_path(mp, ms, sizeof(ms)), fd_path(lfd, ls, sizeof(ls)),
	    fd_path(up, us, sizeof(us)), fd_path(work, ws, sizeof(ws)));
	if (mkdir(dst, 0755) < 0)
		return err_set(err, errno, "create '%s' in the layer", dst);
	rc = mount("overlay", dst, "overlay", MS_NOSUID | MS_NODEV, opts);
	if (rc < 0 && errno == EINVAL) {
		/* Kernels before 5.11 know no userxattr (nor unprivileged
		 * overlays, which then fail here with EPERM). */
		opts[strlen(opts) - strlen(",userxattr")] = '\0';
		rc = mount("overlay", dst, "overlay", MS_NOSUID | MS_NODEV,
			   opts);
	}
	if (rc < 0) {
		err_set(err, errno, "mount the overlay on the image (%s)",
			p->overlay_dir ? "--overlay" : "--writable-tmpfs");
		return err_hint(err, "%s",
				errno == EPERM
				    ? "unprivileged overlayfs needs Linux 5.11 "
				      "or later"
				    : "the upper directory must be on a local "
				      "file system (not NFS, not another "
				      "overlay)");
	}
	return 0;
}

/* Step 4: the image at LAYER/image and its top level in LAYER/root; or,
 * for a writable container, the overlay on it at LAYER/overlay, which is
 * then the root itself (writes to / and to every image directory go to
 * the upper layer; mount points are made there too). */
static int image_and_root(struct rootfs *r, int nworkers,
			  struct squash_mount **sq, mpictr_err **err)
{
	const struct image_info *img = &r->p->image;
	cleanup_close int ifd = -1;
	char src[64];
	DIR *d;
	struct dirent *de;

	/* the file the signature policy verified, if it did */
	ifd = r->image_fd >= 0
		  ? fcntl(r->image_fd, F_DUPFD_CLOEXEC, 3)
		  : open(img->path,
			 O_RDONLY | O_CLOEXEC |
			     (img->kind == IMAGE_DIR ? O_DIRECTORY : 0));
	if (ifd < 0)
		return err_set(err, errno, "open image '%s'", img->path);
	if (mount("tmpfs", r->layer_dir, "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=755") < 0)
		return err_set(err, errno, "mount the writable layer (tmpfs)");
	if (mkdir(r->l_image, 0755) < 0 ||
	    (!r->overlay_root && mkdir(r->l_root, 0755) < 0))
		return err_set(err, errno, "create directories in the layer");
	if (img->kind == IMAGE_DIR) {
		if (bind_path(fd_path(ifd, src, sizeof(src)), r->l_image, true,
			      MS_RDONLY | MS_NOSUID | MS_NODEV, err) < 0)
			return err_wrap(err, "image '%s'", img->path);
	} else {
		if (squash_mount(fd_path(ifd, src, sizeof(src)), img->offset,
				 r->l_image, nworkers, sq, err) < 0)
			return err_wrap(err, "image '%s'", img->path);
	}
	if (r->overlay_root) {
		if (overlay_mount(r, r->l_root, err) < 0)
			return -1;
		if (mnt_id_at(AT_FDCWD, r->l_root, 0, &r->overlay_id) < 0)
			return err_set(err, errno, "find the overlay's mount");
		/* in the layer (mount points), and image content for the
		 * binds of a materialized directory of it */
		mnt_set_add_id(&r->layer, r->overlay_id);
		mnt_set_add_id(&r->image, r->overlay_id);
		return 0;
	}
	if (mount(r->l_root, r->l_root, NULL, MS_BIND, NULL) < 0)
		return err_set(err, errno, "bind the new root on itself");
	mnt_set_add_path(&r->layer, r->l_root);
	d = opendir(r->l_image);
	if (!d)
		return err_set(err, errno, "read the image's root directory");
	while ((de = readdir(d))) {
		cleanup_free char *s = NULL, *t = NULL;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		s = xasprintf("%s/%s", r->l_image, de->d_name);
		t = xasprintf("%s/%s", r->l_root, de->d_name);
		if (S_ISLNK(st.st_mode)) {
			char link[PATH_MAX];
			ssize_t n = readlink(s, link, sizeof(link) - 1);
			if (n < 0)
				continue;
			link[n] = '\0';
			if (symlink(link, t) < 0)
				goto fail;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (mkdir(t, st.st_mode & 07777) < 0)
				goto fail;
		} else if (S_ISREG(st.st_mode)) {
			int fd =
			    open(t, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
				 st.st_mode & 0777);
			if (fd < 0)
				goto fail;
			close(fd);
		} else {
			continue;
		}
		if (bind_path(s, t, true, 0, err) < 0) {
			closedir(d);
			return -1;
		}
		mnt_set_add_path(&r->image, t);
		continue;
	fail:
		closedir(d);
		return err_set(err, errno, "create '%s' in the writable layer",
			       t);
	}
	closedir(d);
	return 0;
}

/* Step 3: a detached clone of every source (and of the host's /dev/pts,
 * for the devpts fallback), flags set. Before the layer is mounted: a
 * recursive clone of /tmp or /dev/shm must not copy it. */
static int clone_sources(struct rootfs *r, mpictr_err **err)
{
	const struct plan *p = r->p;

	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];

		if (op->kind == MOP_DEVPTS && r->pts_mnt < 0) {
			cleanup_close int fd =
			    open("/dev/pts", O_PATH | O_DIRECTORY | O_CLOEXEC);
			r->pts_mnt =
			    fd < 0 ? -1 : clone_tree(fd, "", false, op->flags);
			if (r->pts_mnt < 0)
				log_debug("bind the host's /dev/pts: %s",
					  strerror(errno));
		}
		if (r->src_fd[i] < 0)
			continue;
		r->src_mnt[i] =
		    clone_tree(r->src_fd[i], "", op->src_is_dir, op->flags);
		if (r->src_mnt[i] < 0)
			return err_set(
			    err, errno, "bind source '%s'%s", op->source,
			    errno == ENOSYS ? " (hint: Linux 5.12 or later "
					      "is needed)"
					    : "");
	}
	return 0;
}

/* Step 2: every host source opened O_PATH while the host root is the
 * root, and the site's rules checked on what will be mounted. */
static int open_sources(struct rootfs *r, mpictr_err **err)
{
	const struct plan *p = r->p;

	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		if (op->kind != MOP_BIND && op->kind != MOP_DEV)
			continue;
		r->src_fd[i] = open(op->source, O_PATH | O_CLOEXEC);
		if (r->src_fd[i] < 0 && !(op->optional && errno == ENOENT))
			return err_set(err, errno, "bind source '%s'",
				       op->source);
		/* The site's rules, on what will be mounted (bindpol.h). */
		if (r->src_fd[i] >= 0 &&
		    bind_policy_check_fd(&p->bind_policy, op->who, r->src_fd[i],
					 op->source, err) < 0)
			return -1;
	}
	return 0;
}

/* Step 5: pivot into LAYER/root and detach the old root (and with it the
 * layer's own mount and the image's) before any path of the image is
 * followed; r->root is the container root from then on. */
static int pivot_and_detach(struct rootfs *r, mpictr_err **err)
{
	cleanup_free char *old = xasprintf("%s" OLDROOT, r->l_root);

	if (mkdir(old, 0700) < 0 || chdir(r->l_root) < 0)
		return err_set(err, errno,
			       "prepare the pivot into the new root");
	if (sys_pivot_root(".", "." OLDROOT) < 0)
		return err_set(err, errno,
			       "pivot_root into the container root");
	if (chdir("/") < 0)
		return err_set(err, errno, "chdir to the container root");
	if (umount2(OLDROOT, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return err_set(err, errno, "detach the host root");
	if (rmdir(OLDROOT) < 0)
		log_debug("remove '%s': %s", OLDROOT, strerror(errno));
	r->root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->root < 0)
		return err_set(err, errno, "open the container root");
	return 0;
}

/* A writable --fakeroot container of a Debian image gets apt's sandbox
 * user set to root (/etc/apt/apt.conf.d/mpictr-fakeroot), as Enroot's
 * remapped root does (its 10-aptfix.sh hook): apt drops to _apt for its
 * downloads and then checks that getuid() changed, which no system call
 * filter can fake (seccomp.h makes the switch itself report success).
 * Best effort: the file lands in the writable layer, or nowhere. */
static void apt_sandbox_root(const struct rootfs *r)
{
	static const char text[] = "// mpictr --fakeroot: apt cannot switch "
				   "to _apt in a one-uid user namespace\n"
				   "APT::Sandbox::User \"root\";\n";
	cleanup_close int dv = -1, d = -1, fd = -1;

	if (!r->overlay_root || r->p->uid_in != 0 || r->p->uid == 0)
		return;
	dv = resolve(r, "/etc/debian_version", O_PATH);
	d = dv < 0 ? -1
		   : resolve(r, "/etc/apt/apt.conf.d", O_RDONLY | O_DIRECTORY);
	if (d < 0)
		return;
	fd = openat(d, "mpictr-fakeroot",
		    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write_full(fd, text, sizeof(text) - 1) < 0)
		log_debug("write /etc/apt/apt.conf.d/mpictr-fakeroot: %s",
			  strerror(errno));
}

/* Step 7: the generated files' tmpfs goes, materialized directories and
 * the root become read-only. Best effort: the job runs either way. */
static void finish_root(struct rootfs *r)
{
	if (r->gen >= 0) {
		if (umount2(GENDIR, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			log_debug("detach '%s': %s", GENDIR, strerror(errno));
		if (unlinkat(r->root, GENDIR + 1, AT_REMOVEDIR) < 0)
			log_debug("remove '%s': %s", GENDIR, strerror(errno));
	}
	for (size_t i = 0; i < r->nro; i++) {
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
		if (sys_mount_setattr(r->ro_mnt[i], "", AT_EMPTY_PATH, &attr,
				      sizeof(attr)) < 0)
			log_debug("make a materialized directory read-only: "
				  "%s",
				  strerror(errno));
	}
	if (!r->overlay_root &&
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		log_debug("remount the root read-only: %s", strerror(errno));
}

static void close_if_open(int fd)
{
	if (fd >= 0)
		close(fd);
}

static void rootfs_free(struct rootfs *r)
{
	for (size_t i = 0; i < r->p->nops; i++) {
		close_if_open(r->src_fd[i]);
		close_if_open(r->src_mnt[i]);
	}
	free(r->src_fd);
	free(r->src_mnt);
	close_if_open(r->pts_mnt);
	close_if_open(r->root);
	close_if_open(r->gen);
	free(r->image.ids);
	free(r->layer.ids);
	for (size_t i = 0; i < r->nro; i++)
		close_if_open(r->ro_mnt[i]);
	free(r->ro_mnt);
	for (size_t i = 0; i < r->ninject; i++) {
		free(r->inject[i].src);
		free(r->inject[i].dst);
		close_if_open(r->inject_fd[i]);
		close_if_open(r->inject_mnt[i]);
	}
	free(r->inject);
	free(r->inject_fd);
	free(r->inject_mnt);
	free(r->l_image);
	free(r->l_root);
}

int rootfs_build(const struct plan *p, int nworkers, int image_fd,
		 struct squash_mount **sq, mpictr_err **err)
{
	struct rootfs r = {
	    .p = p, .pts_mnt = -1, .root = -1, .gen = -1, .image_fd = image_fd};
	struct stat st;
	int rc = -1;

	*sq = NULL;
	r.src_fd = xcalloc(p->nops ? p->nops : 1, sizeof(int));
	r.src_mnt = xcalloc(p->nops ? p->nops : 1, sizeof(int));
	r.layer_dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)
			  ? "/dev/shm"
			  : "/tmp";
	r.overlay_root = p->overlay_tmpfs || p->overlay_dir;
	r.l_image = xasprintf("%s/image", r.layer_dir);
	r.l_root = xasprintf("%s/%s", r.layer_dir,
			     r.overlay_root ? "overlay" : "root");
	for (size_t i = 0; i < p->nops; i++)
		r.src_fd[i] = r.src_mnt[i] = -1;

	/* 1. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		err_set(err, errno, "make the mount namespace private");
		goto out;
	}
	/* 2., 3. and 4.; host MPI injection is checked with the image
	 * visible and nothing bound yet. */
	if (open_sources(&r, err) < 0 || clone_sources(&r, err) < 0 ||
	    image_and_root(&r, nworkers, sq, err) < 0 ||
	    verbs_providers(&r, err) < 0 || mpi_abi(&r, err) < 0)
		goto out;
	/* 5. */
	if (pivot_and_detach(&r, err) < 0)
		goto out;
	/* 6. */
	for (size_t i = 0; i < p->nops; i++)
		if (do_op(&r, i, err) < 0)
			goto out;
	for (size_t i = 0; i < r.ninject; i++)
		if (place(&r, r.inject_mnt[i], r.inject[i].dst, false, err) < 0)
			goto out;
	apt_sandbox_root(&r);
	/* 7. */
	finish_root(&r);
	rc = 0;
out:
	rootfs_free(&r);
	return rc;
}
