/* bindm.c - assemble the container root from a plan (R8, R9).
 *
 * Runs in the holder, which owns the job's user and mount namespaces:
 *   1. make every mount private, so nothing propagates to the host;
 *   2. open every host source with O_PATH while the host root is still the
 *      root: later binds use /proc/self/fd/N, so a host path is resolved
 *      on the host and never through a symlink planted in the image; the
 *      site's deny/allow rules are checked on these descriptors;
 *   3. mount a tmpfs on /dev/shm (in this namespace only) as the writable
 *      layer; mount the image read-only at LAYER/image (squashfuse, or a
 *      bind for a directory image); fill LAYER/root with the image's
 *      top-level entries (binds and copied symlinks);
 *   4. pivot_root into LAYER/root, keeping the host at /.mpictr-oldroot
 *      until the binds are made. From here every target path is resolved
 *      by the kernel inside the container root: an absolute or ".."
 *      symlink in the image cannot lead a bind onto a host path;
 *   5. a bind destination missing from the read-only image is created in
 *      the writable layer: the image directory that should hold it is
 *      replaced by a tmpfs re-populated with binds of its entries. It is
 *      never created in the image, and never in a host directory (error);
 *   6. detach the old root: only planned binds of the host remain, then
 *      remount the root read-only.
 * Device binds keep dev and get nosuid,noexec; every other bind gets
 * nosuid,nodev. Bind remounts keep the flags the kernel locked on the
 * source mount (statvfs), or the remount fails with EPERM in a user ns.
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

#include "bindm.h"
#include "error.h"
#include "mpiinject.h"
#include "squash.h"
#include "syscalls.h"
#include "verbs.h"

#define OLDROOT "/.mpictr-oldroot"
#define GENDIR "/.mpictr-gen"

struct mnt_set {
	uint64_t *ids;
	size_t n;
};

struct rootfs {
	const struct plan *p;
	int *src_fd;	      /* per op: O_PATH fd of the host source, or -1 */
	struct mnt_set image; /* mounts that show image content */
	struct mnt_set layer; /* tmpfs mounts of the writable layer */
	char **ro_layers;     /* materialized dirs, remounted ro at the end */
	struct devices_bind *inject; /* --inject-verbs: host provider files */
	int *inject_fd;
	size_t ninject;
	/* Where the layer is mounted until the pivot: /dev/shm (or /tmp
	 * where there is none), hidden in this namespace only and detached
	 * right after the pivot. /dev/shm, because host paths the holder
	 * still reads before the pivot (MPICTR_SYSROOT trees, providers) are
	 * far more likely under /tmp. */
	const char *layer_dir;
	bool gen_mounted;
	char *l_image, *l_root;
};

static int mnt_id_of(const char *path, uint64_t *id)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
		return -1;
	if (!(stx.stx_mask & STATX_MNT_ID)) {
		errno = ENOSYS;
		return -1;
	}
	*id = stx.stx_mnt_id;
	return 0;
}

static void mnt_set_add_path(struct mnt_set *s, const char *path)
{
	uint64_t id;

	if (mnt_id_of(path, &id) < 0)
		return;
	s->ids = xrealloc(s->ids, (s->n + 1) * sizeof(*s->ids));
	s->ids[s->n++] = id;
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

/* Bind src onto dst (recursively for directories), then apply flags. */
static int bind_path(const char *src, const char *dst, bool rec,
		     unsigned long flags, bool keep_dev, mpictr_err **err)
{
	unsigned long keep;

	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return err_set(err, errno, "bind '%s' on '%s'", src, dst);
	keep = locked_flags(dst);
	if (keep_dev)
		keep &= ~(unsigned long)MS_NODEV;
	if (!flags || (keep | flags) == keep)
		return 0;
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | keep | flags, NULL) <
	    0)
		return err_set(err, errno, "remount '%s' with flags 0x%lx", dst,
			       keep | flags);
	if (rec && (flags & MS_RDONLY)) {
		/* Sub-mounts too (e.g. /sys/fs/cgroup), where the kernel
		 * can; older kernels leave them as they were. */
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
		if (sys_mount_setattr(AT_FDCWD, dst, AT_RECURSIVE, &attr,
				      sizeof(attr)) < 0 &&
		    errno != ENOSYS && errno != EINVAL)
			log_debug("make '%s' read-only recursively: %s", dst,
				  strerror(errno));
	}
	return 0;
}

static const char *fd_path(int fd, char *buf, size_t n, bool pivoted)
{
	snprintf(buf, n, "%s/proc/self/fd/%d", pivoted ? OLDROOT : "", fd);
	return buf;
}

/* Replace the image directory `dir` (inside the container root) by a
 * tmpfs holding binds of its entries, so new mount points can be made in
 * it. */
static int materialize(struct rootfs *r, const char *dir, mpictr_err **err)
{
	cleanup_close int pfd = -1;
	DIR *d;
	struct dirent *de;
	struct stat st;
	char src[PATH_MAX + 64];

	pfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return err_set(err, errno, "open image directory '%s'", dir);
	if (fstat(pfd, &st) < 0)
		return err_set(err, errno, "stat '%s'", dir);
	d = opendir(dir);
	if (!d)
		return err_set(err, errno, "read image directory '%s'", dir);
	{
		char opts[64];
		snprintf(opts, sizeof(opts), "mode=%o",
			 (unsigned)(st.st_mode & 07777));
		if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) <
		    0) {
			int e = errno;
			closedir(d);
			return err_set(err, e, "mount tmpfs on '%s'", dir);
		}
	}
	mnt_set_add_path(&r->layer, dir);
	strv_push(&r->ro_layers, dir);
	while ((de = readdir(d))) {
		cleanup_free char *dst = NULL;
		const char *nm = de->d_name;
		struct stat est;

		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
			continue;
		if (fstatat(dirfd(d), nm, &est, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		dst = xasprintf("%s/%s", strcmp(dir, "/") ? dir : "", nm);
		snprintf(src, sizeof(src), "%s/proc/self/fd/%d/%s", OLDROOT,
			 pfd, nm);
		if (S_ISLNK(est.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(dirfd(d), nm, target,
					       sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if (symlink(target, dst) < 0) {
				closedir(d);
				return err_set(err, errno, "symlink '%s'", dst);
			}
			continue;
		}
		if (S_ISDIR(est.st_mode)) {
			if (mkdir(dst, est.st_mode & 07777) < 0)
				goto fail;
		} else if (S_ISREG(est.st_mode)) {
			int fd =
			    open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
				 est.st_mode & 0777);
			if (fd < 0)
				goto fail;
			close(fd);
		} else {
			continue; /* device nodes, fifos: never exposed */
		}
		if (bind_path(src, dst, true, 0, false, err) < 0) {
			closedir(d);
			return -1;
		}
		mnt_set_add_path(&r->image, dst);
		continue;
	fail:
		closedir(d);
		return err_set(err, errno, "create '%s' in the writable layer",
			       dst);
	}
	closedir(d);
	return 0;
}

/* Make sure directory `dir` exists in the container and can hold a new
 * entry (is in the writable layer), materializing image directories on
 * the way. */
static int ensure_dir(struct rootfs *r, const char *dir, bool need_writable,
		      mpictr_err **err)
{
	struct stat st;
	uint64_t id;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return err_set(err, ENOTDIR,
				       "bind destination parent '%s'", dir);
	} else if (errno == ENOENT) {
		cleanup_free char *parent = xstrdup(dir);
		char *slash = strrchr(parent, '/');

		if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (ensure_dir(r, parent, true, err) < 0)
			return -1;
		if (mkdir(dir, 0755) < 0)
			return err_set(err, errno,
				       "create mount point '%s' in the "
				       "writable layer",
				       dir);
		return 0;
	} else {
		return err_set(err, errno, "stat '%s'", dir);
	}
	if (!need_writable)
		return 0;
	if (mnt_id_of(dir, &id) < 0)
		return err_set(err, errno, "find the mount of '%s'", dir);
	if (mnt_set_has(&r->layer, id))
		return 0;
	if (mnt_set_has(&r->image, id))
		return materialize(r, dir, err);
	/* A read-only host bind (/sys) may be re-populated the same way:
	 * nothing can be created on the host through it anyway. */
	if (locked_flags(dir) & MS_RDONLY)
		return materialize(r, dir, err);
	return err_set(err, 0,
		       "cannot create a mount point in '%s': it is a host "
		       "directory bound into the container (hint: create the "
		       "destination on the host, or bind elsewhere)",
		       dir);
}

/* Create the target of an op (file or directory) if it is missing. */
static int ensure_target(struct rootfs *r, const char *target, bool dir,
			 mpictr_err **err)
{
	struct stat st;
	cleanup_free char *parent = NULL;
	char *slash;

	if (stat(target, &st) == 0) {
		if (dir && !S_ISDIR(st.st_mode))
			return err_set(err, ENOTDIR, "bind a directory on '%s'",
				       target);
		if (!dir && S_ISDIR(st.st_mode))
			return err_set(err, EISDIR, "bind a file on '%s'",
				       target);
		return 0;
	}
	if (errno != ENOENT)
		return err_set(err, errno, "stat '%s'", target);
	parent = xstrdup(target);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (ensure_dir(r, parent, true, err) < 0)
		return err_wrap(err, "bind destination '%s'", target);
	if (dir) {
		if (mkdir(target, 0755) < 0)
			return err_set(err, errno, "create mount point '%s'",
				       target);
	} else {
		int fd =
		    open(target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return err_set(err, errno, "create mount point '%s'",
				       target);
		close(fd);
	}
	return 0;
}

/* /etc/passwd or /etc/group of the image plus the user's entry. */
static char *gen_file(const struct plan *p, const char *root, const char *which)
{
	bool passwd = strcmp(which, "passwd") == 0;
	cleanup_free char *path = xasprintf("%s/etc/%s", root, which);
	cleanup_free char *sh = xasprintf("%s/bin/sh", root);
	cleanup_free char *cur = read_file(path, 1 << 22, NULL);
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
		if (passwd)
			sb_printf(&sb, "%s:x:%u:%u:%s:%s:%s\n", name, id,
				  (unsigned)p->gid_in, name,
				  id == 0 ? "/root" : p->home,
				  access(sh, X_OK) == 0 ? "/bin/sh"
							: "/bin/false");
		else
			sb_printf(&sb, "%s:x:%u:\n", name, id);
	}
	return sb_steal(&sb);
}

static int do_op(struct rootfs *r, size_t i, mpictr_err **err)
{
	const struct mount_op *op = &r->p->ops[i];
	char src[PATH_MAX];

	switch (op->kind) {
	case MOP_IMAGE:
		return 0; /* done before the pivot */
	case MOP_BIND:
	case MOP_DEV:
		if (r->src_fd[i] < 0)
			return 0; /* optional and missing */
		if (ensure_target(r, op->target, op->src_is_dir, err) < 0)
			return -1;
		return bind_path(fd_path(r->src_fd[i], src, sizeof(src), true),
				 op->target, op->src_is_dir, op->flags,
				 op->kind == MOP_DEV, err);
	case MOP_TMPFS:
		if (ensure_target(r, op->target, true, err) < 0)
			return -1;
		if (mount("tmpfs", op->target, "tmpfs", op->flags, op->data) <
		    0)
			return err_set(err, errno, "mount tmpfs on '%s'",
				       op->target);
		mnt_set_add_path(&r->layer, op->target);
		return 0;
	case MOP_DEVPTS:
		if (ensure_target(r, op->target, true, err) < 0)
			return -1;
		if (mount("devpts", op->target, "devpts", op->flags,
			  op->data) == 0)
			return 0;
		/* Some kernels refuse devpts in a user namespace: fall back
		 * to the host's instance. */
		log_debug("mount devpts on '%s': %s; binding the host's",
			  op->target, strerror(errno));
		return bind_path(OLDROOT "/dev/pts", op->target, false,
				 op->flags, true, err);
	case MOP_SYMLINK: {
		struct stat st;
		cleanup_free char *parent = xstrdup(op->target);
		*strrchr(parent, '/') = '\0';
		if (lstat(op->target, &st) == 0)
			return 0;
		if (ensure_dir(r, *parent ? parent : "/", true, err) < 0)
			return -1;
		if (symlink(op->source, op->target) < 0)
			return err_set(err, errno, "symlink '%s'", op->target);
		return 0;
	}
	case MOP_FILE: {
		/* Written into a small tmpfs of its own, bound, and the tmpfs
		 * detached at the end: the binds keep the files, nothing of
		 * them stays in the tree, and a later materialize() can still
		 * re-bind them (an unlinked source could not be). */
		cleanup_free char *content = gen_file(r->p, "", op->source);
		cleanup_free char *path = xasprintf(GENDIR "/%zu", i);
		if (!r->gen_mounted) {
			if ((mkdir(GENDIR, 0700) < 0 && errno != EEXIST) ||
			    mount("tmpfs", GENDIR, "tmpfs",
				  MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "mode=755,size=8m") < 0)
				return err_set(err, errno,
					       "mount tmpfs on '%s'", GENDIR);
			r->gen_mounted = true;
		}
		if (write_file(path, content, O_CREAT | O_EXCL) < 0 ||
		    chmod(path, 0644) < 0)
			return err_set(err, errno, "write '%s'", path);
		if (ensure_target(r, op->target, false, err) < 0)
			return -1;
		return bind_path(path, op->target, false, op->flags, false,
				 err);
	}
	default:
		return err_set(err, EINVAL, "unknown mount operation %d",
			       (int)op->kind);
	}
}

/* Host HCAs whose verbs provider the image lacks: say so before exec (the
 * classic "no userspace device-specific driver found" made actionable),
 * or with --inject-verbs bind the host's provider and driver file in.
 * Runs with the image mounted in the layer, before the pivot, so the
 * host files can still be opened. */
static int verbs_providers(struct rootfs *r, mpictr_err **err)
{
	const struct plan *p = r->p;
	char **warnings = NULL;

	if (p->hostdev.nhcas == 0)
		return 0;
	if (verbs_check(&p->hostdev, p->sysroot, r->l_image, p->inject_verbs,
			&warnings, &r->inject, &r->ninject, err) < 0)
		return -1;
	for (size_t i = 0; warnings && warnings[i]; i++)
		log_warn("%s", warnings[i]);
	strv_free(warnings);
	r->inject_fd = xcalloc(r->ninject ? r->ninject : 1, sizeof(int));
	for (size_t i = 0; i < r->ninject; i++) {
		r->inject_fd[i] = open(r->inject[i].src, O_PATH | O_CLOEXEC);
		if (r->inject_fd[i] < 0)
			return err_set(err, errno, "--inject-verbs: open '%s'",
				       r->inject[i].src);
	}
	return 0;
}

/* Step 3: the image at LAYER/image and its top level in LAYER/root. */
static int image_and_root(struct rootfs *r, int nworkers,
			  struct squash_mount **sq, mpictr_err **err)
{
	const struct image_info *img = &r->p->image;
	cleanup_close int ifd = -1;
	char src[64];
	DIR *d;
	struct dirent *de;

	ifd = open(img->path, O_RDONLY | O_CLOEXEC |
				  (img->kind == IMAGE_DIR ? O_DIRECTORY : 0));
	if (ifd < 0)
		return err_set(err, errno, "open image '%s'", img->path);
	if (mount("tmpfs", r->layer_dir, "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=755") < 0)
		return err_set(err, errno, "mount the writable layer (tmpfs)");
	if (mkdir(r->l_image, 0755) < 0 || mkdir(r->l_root, 0755) < 0)
		return err_set(err, errno, "create directories in the layer");
	if (img->kind == IMAGE_DIR) {
		if (bind_path(fd_path(ifd, src, sizeof(src), false), r->l_image,
			      true, MS_RDONLY | MS_NOSUID | MS_NODEV, false,
			      err) < 0)
			return err_wrap(err, "image '%s'", img->path);
	} else {
		if (squash_mount(fd_path(ifd, src, sizeof(src), false),
				 img->offset, r->l_image, nworkers, sq,
				 err) < 0)
			return err_wrap(err, "image '%s'", img->path);
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
		if (bind_path(s, t, true, 0, false, err) < 0) {
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

int rootfs_build(const struct plan *p, int nworkers, struct squash_mount **sq,
		 mpictr_err **err)
{
	struct rootfs r = {.p = p};
	int rc = -1;

	*sq = NULL;
	r.src_fd = xcalloc(p->nops ? p->nops : 1, sizeof(int));
	{
		struct stat st;
		r.layer_dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)
				  ? "/dev/shm"
				  : "/tmp";
	}
	r.l_image = xasprintf("%s/image", r.layer_dir);
	r.l_root = xasprintf("%s/root", r.layer_dir);
	for (size_t i = 0; i < p->nops; i++)
		r.src_fd[i] = -1;

	/* 1. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		err_set(err, errno, "make the mount namespace private");
		goto out;
	}
	/* 2. */
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		if (op->kind != MOP_BIND && op->kind != MOP_DEV)
			continue;
		r.src_fd[i] = open(op->source, O_PATH | O_CLOEXEC);
		if (r.src_fd[i] < 0 && !(op->optional && errno == ENOENT)) {
			err_set(err, errno, "bind source '%s'", op->source);
			goto out;
		}
		/* The site's rules, on what will be mounted (bindpol.h). */
		if (r.src_fd[i] >= 0 &&
		    bind_policy_check_fd(&p->bind_policy, op->who, r.src_fd[i],
					 op->source, err) < 0)
			goto out;
	}
	/* 3. */
	if (image_and_root(&r, nworkers, sq, err) < 0 ||
	    verbs_providers(&r, err) < 0)
		goto out;
	/* Host MPI injection: the image is visible, nothing is bound yet. */
	if (mpiinject_check(p->mpi, p->nmpi, r.l_image, err) < 0)
		goto out;
	/* 4. */
	{
		cleanup_free char *old = xasprintf("%s" OLDROOT, r.l_root);
		if (mkdir(old, 0700) < 0 || chdir(r.l_root) < 0) {
			err_set(err, errno,
				"prepare the pivot into the new root");
			goto out;
		}
	}
	if (sys_pivot_root(".", "." OLDROOT) < 0) {
		err_set(err, errno, "pivot_root into the container root");
		goto out;
	}
	if (chdir("/") < 0) {
		err_set(err, errno, "chdir to the container root");
		goto out;
	}
	/* The layer stays reachable through the new root's bind; its own
	 * mount on the host's /tmp must go before /tmp is bound, or the
	 * recursive bind would copy it into the container. */
	{
		cleanup_free char *l = xasprintf(OLDROOT "%s", r.layer_dir);
		if (umount2(l, MNT_DETACH) < 0) {
			err_set(err, errno, "detach the layer from '%s'",
				r.layer_dir);
			goto out;
		}
	}
	/* 5. */
	for (size_t i = 0; i < p->nops; i++)
		if (do_op(&r, i, err) < 0)
			goto out;
	for (size_t i = 0; i < r.ninject; i++) {
		char src[64];
		if (ensure_target(&r, r.inject[i].dst, false, err) < 0 ||
		    bind_path(fd_path(r.inject_fd[i], src, sizeof(src), true),
			      r.inject[i].dst, false,
			      MS_RDONLY | MS_NOSUID | MS_NODEV, false, err) < 0)
			goto out;
	}
	/* 6. */
	if (umount2(OLDROOT, MNT_DETACH) < 0) {
		err_set(err, errno, "detach the host root");
		goto out;
	}
	if (rmdir(OLDROOT) < 0)
		log_debug("remove '%s': %s", OLDROOT, strerror(errno));
	if (r.gen_mounted && umount2(GENDIR, MNT_DETACH) < 0)
		log_debug("detach '%s': %s", GENDIR, strerror(errno));
	if (rmdir(GENDIR) < 0 && errno != ENOENT)
		log_debug("remove '%s': %s", GENDIR, strerror(errno));
	for (size_t i = 0; r.ro_layers && r.ro_layers[i]; i++)
		if (mount(NULL, r.ro_layers[i], NULL,
			  MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
			  NULL) < 0)
			log_debug("remount '%s' read-only: %s", r.ro_layers[i],
				  strerror(errno));
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		log_debug("remount the root read-only: %s", strerror(errno));
	rc = 0;
out:
	for (size_t i = 0; i < p->nops; i++)
		if (r.src_fd[i] >= 0)
			close(r.src_fd[i]);
	free(r.src_fd);
	free(r.image.ids);
	free(r.layer.ids);
	strv_free(r.ro_layers);
	for (size_t i = 0; i < r.ninject; i++) {
		free(r.inject[i].src);
		free(r.inject[i].dst);
		if (r.inject_fd[i] >= 0)
			close(r.inject_fd[i]);
	}
	free(r.inject);
	free(r.inject_fd);
	free(r.l_image);
	free(r.l_root);
	return rc;
}
