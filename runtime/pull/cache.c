/* cache.c - the image cache of cache.h: directory choice and checks (the
 * root by its path, everything below by descriptors, O_NOFOLLOW, owners
 * checked), blob and image entries (ours, or another member's: theirs is
 * verified by the caller or never run), fcntl locks waited for a bounded
 * time, temporary files (O_EXCL) renamed into place, tag references (plain
 * files, and the layout's index.json rewritten from them), list and clean
 * (by descriptors, as a job's cleanup). Pure POSIX, no JSON parser, no
 * hash: index.json is only ever written, digests are checked by the
 * plugin (client.c, merge.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "common/util.h"
#include "pull/cache.h"

#define LAYOUT_JSON "{\"imageLayoutVersion\":\"1.0.0\"}\n"
#define INDEX_EMPTY "{\"schemaVersion\":2,\"manifests\":[]}\n"

char *cache_dir_choose(const char *dir, const char *site_dir, char *const *env,
		       mpictr_err **err)
{
	const char *v;
	struct passwd *pw;

	if (!env)
		env = environ;
	if (dir && *dir)
		return xstrdup(dir);
	v = env_get(env, "MPICTR_CACHEDIR");
	if (v && *v)
		return xstrdup(v);
	if (site_dir && *site_dir)
		return xstrdup(site_dir);
	v = env_get(env, "XDG_CACHE_HOME");
	if (v && v[0] == '/')
		return xasprintf("%s/mpictr", v);
	v = env_get(env, "HOME");
	if (v && v[0] == '/')
		return xasprintf("%s/.cache/mpictr", v);
	/* no HOME (a task of a daemon started without one): the user's home
	 * from the user database, never another process's */
	pw = getpwuid(getuid());
	if (pw && pw->pw_dir && pw->pw_dir[0] == '/')
		return xasprintf("%s/.cache/mpictr", pw->pw_dir);
	err_set(err, 0,
		"no image cache directory: HOME is not set and uid %u "
		"has no home directory in the user database",
		(unsigned)getuid());
	err_hint(err, "set MPICTR_CACHEDIR or XDG_CACHE_HOME");
	return NULL;
}

/* ---- directories, by descriptor ----------------------------------------
 *
 * The root is opened once by its path (the user's or the site's choice);
 * everything below it from descriptors, O_NOFOLLOW, its type and owner
 * checked with fstat. Trusted owners: us, root and the root's owner (who
 * can rename anything in it anyway). In a shared cache every directory is
 * sticky, so a member can neither rename nor remove another's entries. */

static bool trusted_uid(const struct cache *c, uid_t uid)
{
	return uid == geteuid() || uid == 0 || uid == c->owner;
}

/* A directory of the cache: its owner trusted, writable by no one else
 * than its group, and sticky when that is writable (ours get the bit). */
static int check_dir(const struct cache *c, int fd, const char *name,
		     mpictr_err **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "image cache '%s/%s'", c->dir, name);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ENOTDIR, "image cache '%s/%s'", c->dir,
			       name);
	if (!trusted_uid(c, st.st_uid)) {
		err_set(err, 0,
			"image cache '%s': '%s' belongs to uid %u, not to you, "
			"root or the cache's owner (uid %u)",
			c->dir, name, (unsigned)st.st_uid, (unsigned)c->owner);
		return err_hint(err, "a member made it: the cache's owner or "
				     "root removes it, or chowns it");
	}
	if (st.st_mode & S_IWOTH)
		return err_set(err, 0,
			       "image cache '%s': '%s' is writable by anyone "
			       "(mode %o)",
			       c->dir, name, (unsigned)(st.st_mode & 07777));
	if ((st.st_mode & S_IWGRP) && !(st.st_mode & S_ISVTX)) {
		if (st.st_uid == geteuid() &&
		    fchmod(fd, (st.st_mode & 07777) | S_ISVTX) == 0)
			return 0;
		err_set(err, 0,
			"image cache '%s': '%s' is group-writable without the "
			"sticky bit: a member could rename others' entries",
			c->dir, name);
		return err_hint(err, "its owner (uid %u) runs chmod +t on it",
				(unsigned)st.st_uid);
	}
	return 0;
}

/* Directory name of dfd, opened (created when missing: 0755, or 03775
 * in a shared cache, then only by us, root or the owner) and checked. */
static int open_sub(const struct cache *c, int dfd, const char *name,
		    const char *what, mpictr_err **err)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	mode_t mode = c->shared ? 03775 : 0755;
	bool made = false;
	int fd = openat(dfd, name, flags);

	if (fd < 0 && errno == ENOENT) {
		if (c->shared && geteuid() != c->owner && geteuid() != 0) {
			err_set(err, ENOENT,
				"shared image cache '%s' has no '%s'", c->dir,
				what);
			return err_hint(err,
					"its owner (uid %u) or root makes the "
					"layout: mpictr cache list --cache-dir "
					"'%s'",
					(unsigned)c->owner, c->dir);
		}
		if (mkdirat(dfd, name, 0700) == 0)
			made = true;
		else if (errno != EEXIST)
			return err_set(err, errno, "create '%s/%s'", c->dir,
				       what);
		fd = openat(dfd, name, flags);
	}
	if (fd < 0) {
		int e = errno;
		struct stat st;
		if ((e == ELOOP || e == ENOTDIR) &&
		    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			return err_set(err, 0,
				       "image cache '%s': '%s' is a symlink: "
				       "refused (never followed)",
				       c->dir, what);
		return err_set(err, e, "image cache '%s/%s'", c->dir, what);
	}
	if (made) { /* ours, just made: its mode exactly (no umask) */
		struct stat st;
		if (fstat(fd, &st) == 0 && st.st_uid == geteuid())
			(void)fchmod(fd, mode);
	}
	if (check_dir(c, fd, what, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* mkdir -p of path's parents (the path the user or the site named). */
static int mkdir_parents(const char *path, mpictr_err **err)
{
	cleanup_free char *p = xstrdup(path);

	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return err_set(err, errno,
				       "create cache directory '%s'", p);
		*s = '/';
	}
	return 0;
}

/* The cache root: ours (created 0700) or a shared one that others cannot
 * plant images in: owned by us or root, writable by no one else but its
 * group (*shared then). Its fd, or -1. */
static int open_root(const char *dir, bool *shared, uid_t *owner,
		     mpictr_err **err)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		if (mkdir_parents(dir, err) < 0)
			return -1;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return err_set(err, errno, "create image cache '%s'",
				       dir);
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return err_set(err, errno, "image cache '%s'", dir);
	if (fstat(fd, &st) < 0) {
		err_set(err, errno, "image cache '%s'", dir);
		goto fail;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		err_set(err, 0,
			"image cache '%s' is owned by uid %u, not by you or "
			"root",
			dir, (unsigned)st.st_uid);
		goto fail;
	}
	if (st.st_mode & S_IWOTH) {
		err_set(err, 0,
			"image cache '%s' is writable by anyone (mode %o): "
			"anyone could plant an image there",
			dir, (unsigned)(st.st_mode & 07777));
		err_hint(err, "a shared cache belongs to a group: chgrp it "
			      "and chmod 3775");
		goto fail;
	}
	*shared = (st.st_mode & S_IWGRP) != 0;
	*owner = st.st_uid;
	if (*shared && !(st.st_mode & S_ISVTX) &&
	    (st.st_uid != geteuid() ||
	     fchmod(fd, (st.st_mode & 07777) | S_ISVTX) < 0)) {
		err_set(err, 0,
			"shared image cache '%s' is not sticky (mode %o): a "
			"member could rename its directories",
			dir, (unsigned)(st.st_mode & 07777));
		err_hint(err, "its owner runs: chmod 3775 '%s'", dir);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* A lock file of the locks directory, opened for fcntl write locks
 * (O_NOFOLLOW, a regular file). Only one we create is chmod'ed: group-
 * writable in a shared cache so that its other users can lock it too. */
static int open_lock(const struct cache *c, const char *name, mpictr_err **err)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd =
	    openat(c->fd[CACHE_LOCKS], name, flags | O_CREAT | O_EXCL, 0644);

	if (fd >= 0) {
		if (c->shared)
			(void)fchmod(fd, 0664);
		return fd;
	}
	if (errno == EEXIST)
		fd = openat(c->fd[CACHE_LOCKS], name, flags);
	if (fd < 0)
		return err_set(err, errno, "open lock '%s/locks/%s'", c->dir,
			       name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(err, EINVAL,
			       "lock '%s/locks/%s' is not a regular file",
			       c->dir, name);
	}
	return fd;
}

/* Who holds a lock on fd that conflicts with type: "pid P (uid U)". */
static char *lock_holder(int fd, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
	uid_t uids[4];

	if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return xstrdup("another process");
	if (fl.l_pid <= 0)
		return xstrdup("a process of another pid namespace");
	if (proc_uids(fl.l_pid, uids) == 0)
		return xasprintf("pid %d (uid %u)", (int)fl.l_pid,
				 (unsigned)uids[1]);
	return xasprintf("pid %d", (int)fl.l_pid);
}

/* Take an fcntl lock of type on fd, waiting at most wait seconds for a
 * holder, with a notice every 10 s; then an error naming the holder. */
static int lock_wait(int fd, short type, unsigned wait, const char *what,
		     mpictr_err **err)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
	struct timespec t0, now;
	long next = 10;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long dt, ms;
		if (fcntl(fd, F_SETLK, &fl) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES && errno != EINTR)
			return err_set(err, errno, "lock '%s'", what);
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (long)(now.tv_sec - t0.tv_sec) * 1000 +
		     (now.tv_nsec - t0.tv_nsec) / 1000000;
		dt = ms / 1000;
		if (ms >= (long)wait * 1000) {
			cleanup_free char *who = lock_holder(fd, type);
			err_set(err, ETIMEDOUT,
				"lock '%s' is held by %s: waited %u s", what,
				who, wait);
			return err_hint(
			    err,
			    "a pull of the same image may still "
			    "run; else that process holds it: "
			    "end it, or wait longer with " CACHE_LOCK_WAIT_ENV
			    "=SECONDS");
		}
		if (dt >= next) {
			cleanup_free char *who = lock_holder(fd, type);
			log_notice("waiting for lock '%s', held by %s (%ld of "
				   "%u s)",
				   what, who, dt, wait);
			next += 10;
		}
		/* polled (a thread of a pull cannot take a signal for a
		 * timeout): the waiters of one image wake soon after */
		usleep(dt < 1 ? 10000 : 50000);
	}
}

/* A new file tmp/NAME (O_EXCL, never through a link): its fd. */
static int create_tmp(const struct cache *c, const char *name)
{
	return openat(c->fd[CACHE_TMP], name,
		      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

/* The name of a file of ours in tmp/ (from the path we gave out). */
static const char *tmp_base(const struct cache *c, const char *tmp)
{
	size_t n = strlen(c->dir);

	if (strncmp(tmp, c->dir, n) == 0 && strncmp(tmp + n, "/tmp/", 5) == 0 &&
	    !strchr(tmp + n + 5, '/'))
		return tmp + n + 5;
	return NULL;
}

/* The layout file name (oci-layout, index.json) unless it is there: a new
 * file in tmp/ renamed to it (RENAME_NOREPLACE: another pull may win). */
static int ensure_file(const struct cache *c, const char *name,
		       const char *text, mpictr_err **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_close int fd = -1;
	struct stat st;

	if (fstatat(c->rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	fd = cache_tmpfile(c, name, &tmp, err);
	if (fd < 0)
		return -1;
	if (write_full(fd, text, strlen(text)) < 0) {
		err_set(err, errno, "write '%s'", tmp);
	} else if (renameat2(c->fd[CACHE_TMP], tmp_base(c, tmp), c->rootfd,
			     name, RENAME_NOREPLACE) == 0) {
		return 0;
	} else if (errno != EEXIST) {
		err_set(err, errno, "rename '%s' to '%s/%s'", tmp, c->dir,
			name);
	} else {
		unlinkat(c->fd[CACHE_TMP], tmp_base(c, tmp), 0);
		return 0;
	}
	unlinkat(c->fd[CACHE_TMP], tmp_base(c, tmp), 0);
	return -1;
}

static void close_fds(struct cache *c)
{
	for (int i = 0; i < CACHE_NSUB; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		c->fd[i] = -1;
	}
	if (c->rootfd >= 0)
		close(c->rootfd);
	c->rootfd = -1;
}

/* The root and every directory of the layout, open (creating them). */
static int open_dirs(struct cache *c, const char *dir, mpictr_err **err)
{
	static const struct {
		const char *parent, *name;
		int slot;
	} sub[] = {
	    {NULL, "blobs", -1},	{"blobs", "sha256", CACHE_BLOBS},
	    {NULL, "images", -1},	{"images", "sha256", CACHE_IMAGES},
	    {NULL, "refs", CACHE_REFS}, {NULL, "locks", CACHE_LOCKS},
	    {NULL, "tmp", CACHE_TMP}};
	const char *v = getenv(CACHE_LOCK_WAIT_ENV);
	int parent = -1;

	memset(c, 0, sizeof(*c));
	c->lockfd = c->rootfd = -1;
	for (int i = 0; i < CACHE_NSUB; i++)
		c->fd[i] = -1;
	c->lock_wait =
	    v && *v ? (unsigned)strtoul(v, NULL, 10) : CACHE_LOCK_WAIT;
	c->dir = xstrdup(dir);
	c->rootfd = open_root(dir, &c->shared, &c->owner, err);
	if (c->rootfd < 0)
		goto fail;
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++) {
		cleanup_free char *what =
		    sub[i].parent
			? xasprintf("%s/%s", sub[i].parent, sub[i].name)
			: xstrdup(sub[i].name);
		int fd = open_sub(c, sub[i].parent ? parent : c->rootfd,
				  sub[i].name, what, err);
		if (fd < 0)
			goto fail;
		if (sub[i].parent && parent >= 0)
			close(parent);
		parent = -1;
		if (sub[i].slot >= 0)
			c->fd[sub[i].slot] = fd;
		else
			parent = fd;
	}
	return 0;
fail:
	if (parent >= 0)
		close(parent);
	close_fds(c);
	free(c->dir);
	c->dir = NULL;
	return -1;
}

int cache_open(struct cache *c, const char *dir, mpictr_err **err)
{
	cleanup_free char *what = NULL;

	if (open_dirs(c, dir, err) < 0)
		return -1;
	if (ensure_file(c, "oci-layout", LAYOUT_JSON, err) < 0 ||
	    ensure_file(c, "index.json", INDEX_EMPTY, err) < 0)
		goto fail;
	c->lockfd = open_lock(c, "cache.lock", err);
	what = xasprintf("%s/locks/cache.lock", dir);
	if (c->lockfd < 0 ||
	    lock_wait(c->lockfd, F_RDLCK, c->lock_wait, what, err) < 0)
		goto fail;
	return 0;
fail:
	cache_close(c);
	return -1;
}

void cache_close(struct cache *c)
{
	if (c->lockfd >= 0)
		close(c->lockfd);
	c->lockfd = -1;
	close_fds(c);
	free(c->dir);
	c->dir = NULL;
}

static const char *digest_hex(const char *digest)
{
	const char *colon = strchr(digest, ':');
	return colon ? colon + 1 : digest;
}

/* ---- blobs and images ----------------------------------------------------
 *
 * HEX (HEX.sif) is the shared name; where another member's copy holds it
 * and is not what we can use, ours goes beside it as HEX.UID (HEX.UID.sif):
 * in a sticky directory we could not replace theirs. */

static char *own_name(const char *hex, const char *ext)
{
	return xasprintf("%s.%u%s", hex, (unsigned)geteuid(), ext);
}

/* name of directory dfd: a regular file of ours (O_NOFOLLOW), or -1. */
static int open_entry(int dfd, const char *name, struct stat *st)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

char *cache_blob_path(const struct cache *c, const char *digest)
{
	const char *hex = digest_hex(digest);
	cleanup_free char *own = own_name(hex, "");
	struct stat st;

	if (fstatat(c->fd[CACHE_BLOBS], own, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_uid == geteuid())
		return xasprintf("%s/blobs/sha256/%s", c->dir, own);
	return xasprintf("%s/blobs/sha256/%s", c->dir, hex);
}

enum cache_entry cache_blob(const struct cache *c, const char *digest,
			    uint64_t size, int *fdp)
{
	const char *hex = digest_hex(digest);
	cleanup_free char *own = own_name(hex, "");
	const char *names[] = {own, hex};
	struct stat st;

	if (fdp)
		*fdp = -1;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		int fd = open_entry(c->fd[CACHE_BLOBS], names[i], &st);
		if (fd < 0)
			continue;
		if ((i == 0 && st.st_uid != geteuid()) ||
		    (size != UINT64_MAX && (uint64_t)st.st_size != size)) {
			close(fd);
			continue;
		}
		if (trusted_uid(c, st.st_uid) &&
		    !(st.st_mode & (S_IWGRP | S_IWOTH))) {
			close(fd);
			return CACHE_TRUSTED;
		}
		if (fdp)
			*fdp = fd;
		else
			close(fd);
		return CACHE_OTHERS;
	}
	return CACHE_MISSING;
}

bool cache_has_blob(const struct cache *c, const char *digest, uint64_t size)
{
	return cache_blob(c, digest, size, NULL) != CACHE_MISSING;
}

/* Rename our tmp file to the shared name in dfd unless that is taken and
 * usable (*taken then), else to our own name beside it. */
static int commit_entry(const struct cache *c, const char *tmp, int dfd,
			const char *sub, const char *name, const char *own,
			bool shared_ok, char **final, mpictr_err **err)
{
	const char *base = tmp_base(c, tmp);

	if (!base)
		return err_set(err, EINVAL, "'%s' is not in '%s/tmp'", tmp,
			       c->dir);
	if (renameat2(c->fd[CACHE_TMP], base, dfd, name, RENAME_NOREPLACE) ==
	    0) {
		if (final)
			*final = xasprintf("%s/%s/%s", c->dir, sub, name);
		return 0;
	}
	if (errno != EEXIST)
		return err_set(err, errno, "rename '%s' to '%s/%s/%s'", tmp,
			       c->dir, sub, name);
	if (shared_ok) { /* someone we trust was first: same content */
		unlinkat(c->fd[CACHE_TMP], base, 0);
		if (final)
			*final = xasprintf("%s/%s/%s", c->dir, sub, name);
		return 0;
	}
	if (renameat(c->fd[CACHE_TMP], base, dfd, own) < 0)
		return err_set(err, errno, "rename '%s' to '%s/%s/%s'", tmp,
			       c->dir, sub, own);
	if (final)
		*final = xasprintf("%s/%s/%s", c->dir, sub, own);
	return 0;
}

int cache_commit_blob(const struct cache *c, const char *tmp,
		      const char *digest, mpictr_err **err)
{
	const char *hex = digest_hex(digest);
	cleanup_free char *own = own_name(hex, "");
	struct stat st;
	bool ok = false;
	int fd = open_entry(c->fd[CACHE_BLOBS], hex, &st);

	if (fd >= 0) { /* taken: usable as it is when trusted */
		ok = trusted_uid(c, st.st_uid) &&
		     !(st.st_mode & (S_IWGRP | S_IWOTH));
		close(fd);
	}
	return commit_entry(c, tmp, c->fd[CACHE_BLOBS], "blobs/sha256", hex,
			    own, ok, NULL, err);
}

char *cache_image_path(const struct cache *c, const char *digest)
{
	return xasprintf("%s/images/sha256/%s.sif", c->dir, digest_hex(digest));
}

/* Whether name of images/sha256 is a SIF this user may run. */
static bool image_usable(const struct cache *c, const char *name, bool own)
{
	struct stat st;
	int fd = open_entry(c->fd[CACHE_IMAGES], name, &st);

	if (fd < 0)
		return false;
	close(fd);
	return st.st_size > 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	       (own ? st.st_uid == geteuid() : trusted_uid(c, st.st_uid));
}

char *cache_image_find(const struct cache *c, const char *digest)
{
	const char *hex = digest_hex(digest);
	cleanup_free char *name = xasprintf("%s.sif", hex);
	cleanup_free char *own = own_name(hex, ".sif");

	if (image_usable(c, name, false))
		return xasprintf("%s/images/sha256/%s", c->dir, name);
	if (image_usable(c, own, true))
		return xasprintf("%s/images/sha256/%s", c->dir, own);
	return NULL;
}

bool cache_has_image(const struct cache *c, const char *digest)
{
	cleanup_free char *p = cache_image_find(c, digest);

	return p != NULL;
}

int cache_commit_image(const struct cache *c, const char *tmp,
		       const char *digest, char **final, mpictr_err **err)
{
	const char *hex = digest_hex(digest);
	const char *base = tmp_base(c, tmp);
	cleanup_free char *name = xasprintf("%s.sif", hex);
	cleanup_free char *own = own_name(hex, ".sif");
	struct stat st;
	int fd = base ? openat(c->fd[CACHE_TMP], base,
			       O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
		      : -1;

	/* ours (just written): read-only for all but us; in a shared cache
	 * readable by the group whatever our umask */
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() ||
	    fchmod(fd, c->shared ? 0755 : st.st_mode & 0755) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return err_set(err, e ? e : EINVAL, "'%s'", tmp);
	}
	close(fd);
	return commit_entry(c, tmp, c->fd[CACHE_IMAGES], "images/sha256", name,
			    own, image_usable(c, name, false), final, err);
}

int cache_lock(const struct cache *c, const char *name, mpictr_err **err)
{
	cleanup_free char *file = xasprintf("%s.lock", name);
	cleanup_free char *what = xasprintf("%s/locks/%s", c->dir, file);
	int fd = open_lock(c, file, err);

	if (fd < 0)
		return -1;
	if (lock_wait(fd, F_WRLCK, c->lock_wait, what, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void cache_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the fcntl lock */
}

/* The partial files this process made lately, for cache_tmp_remove_all
 * (a ring: a slot is reused once its file is long renamed or removed; an
 * unlink of a name that is gone does nothing). */
#define TMP_SLOTS 64
static char tmp_slots[TMP_SLOTS][512];
static atomic_uint tmp_next;

void cache_tmp_track(const char *path)
{
	size_t l = strlen(path);
	char *slot;

	if (l >= sizeof(tmp_slots[0]))
		return;
	slot = tmp_slots[atomic_fetch_add(&tmp_next, 1) % TMP_SLOTS];
	slot[0] = '\0';
	memcpy(slot + 1, path + 1, l);
	__atomic_store_n(&slot[0], path[0], __ATOMIC_RELEASE);
}

void cache_tmp_remove_all(void)
{
	for (size_t i = 0; i < TMP_SLOTS; i++)
		if (__atomic_load_n(&tmp_slots[i][0], __ATOMIC_ACQUIRE))
			unlink(tmp_slots[i]);
}

static char *tmp_random(const char *prefix)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	return xasprintf("%s.%d.%016llx.partial", prefix, (int)getpid(),
			 (unsigned long long)r);
}

char *cache_tmpname(const struct cache *c, const char *prefix)
{
	cleanup_free char *name = tmp_random(prefix);
	char *p = xasprintf("%s/tmp/%s", c->dir, name);

	cache_tmp_track(p);
	return p;
}

int cache_tmpfile(const struct cache *c, const char *prefix, char **path,
		  mpictr_err **err)
{
	for (int tries = 0; tries < 8; tries++) {
		cleanup_free char *name = tmp_random(prefix);
		int fd = create_tmp(c, name);
		if (fd >= 0) {
			*path = xasprintf("%s/tmp/%s", c->dir, name);
			cache_tmp_track(*path);
			return fd;
		}
		if (errno != EEXIST)
			return err_set(err, errno, "create '%s/tmp/%s'", c->dir,
				       name);
	}
	return err_set(err, EEXIST, "create a file in '%s/tmp'", c->dir);
}

/* ---- tag references ------------------------------------------------------
 *
 * refs/HOST/REPO/:TAG, one line. They only name images in `cache list` and
 * index.json (run by tag only offline, through the user's own file:
 * cache_ref_own); in a shared cache another
 * member's file of the same tag is kept (sticky): ours is then not
 * written, which is no error. */

/* A directory below refs/, opened or made (a member's will do: a name in
 * it is only ever read with O_NOFOLLOW, and names nothing that runs). */
static int refs_sub(const struct cache *c, int dfd, const char *name,
		    const char *what, mpictr_err **err)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dfd, name, flags);
	struct stat st;

	if (fd < 0 && errno == ENOENT && mkdirat(dfd, name, 0700) == 0) {
		fd = openat(dfd, name, flags);
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid())
			(void)fchmod(fd, c->shared ? 03775 : 0755);
	} else if (fd < 0 && errno == ENOENT) {
		fd = openat(dfd, name, flags); /* another pull made it */
	}
	if (fd < 0)
		return err_set(err, errno, "image cache '%s': '%s'", c->dir,
			       what);
	return fd;
}

/* The directory refs/HOST/REPO, opened component by component (created
 * when create is set); -1 when it is not there or a component is not a
 * plain name. */
static int refs_dir(const struct cache *c, const char *host, const char *repo,
		    bool create, mpictr_err **err)
{
	cleanup_free char *path = xasprintf("%s/%s", host, repo);
	char *save = NULL;
	int fd = fcntl(c->fd[CACHE_REFS], F_DUPFD_CLOEXEC, 0);

	for (char *t = strtok_r(path, "/", &save); t && fd >= 0;
	     t = strtok_r(NULL, "/", &save)) {
		cleanup_free char *what = xasprintf("refs/.../%s", t);
		int sub = -1;
		if (!strcmp(t, ".") || !strcmp(t, "..") || t[0] == ':') {
			err_set(err, EINVAL, "tag reference '%s/%s'", host,
				repo);
		} else if (create) {
			sub = refs_sub(c, fd, t, what, err);
		} else {
			sub = openat(fd, t,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
		}
		close(fd);
		fd = sub;
	}
	return fd;
}

/* Every reference file below directory fd (closed after; relative name
 * prefix), for index.json and list: calls fn(name "host/repo:tag", file
 * text). Never follows a symlink. */
typedef void (*ref_fn)(const char *name, const char *text, void *data);

static void refs_walk(int fd, const char *prefix, int depth, ref_fn fn,
		      void *data)
{
	DIR *d = depth > 32 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	rewinddir(d); /* a dup shares the offset of the cache's fd */
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (e->d_name[0] == ':') {
			char text[512];
			cleanup_free char *name = NULL;
			int f = openat(dirfd(d), e->d_name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					   O_CLOEXEC);
			struct stat st;
			ssize_t n = -1;
			if (f >= 0 && fstat(f, &st) == 0 && S_ISREG(st.st_mode))
				n = read(f, text, sizeof(text) - 1);
			if (f >= 0)
				close(f);
			if (n <= 0)
				continue;
			text[n] = '\0';
			name = xasprintf("%s:%s", prefix, e->d_name + 1);
			fn(name, text, data);
		} else {
			cleanup_free char *sub =
			    *prefix ? xasprintf("%s/%s", prefix, e->d_name)
				    : xstrdup(e->d_name);
			int f = openat(dirfd(d), e->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					   O_CLOEXEC);
			if (f >= 0)
				refs_walk(f, sub, depth + 1, fn, data);
		}
	}
	closedir(d);
}

static void refs_each(const struct cache *c, ref_fn fn, void *data)
{
	int fd = fcntl(c->fd[CACHE_REFS], F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		refs_walk(fd, "", 0, fn, data);
}

struct index_acc {
	const struct cache *c;
	struct strbuf sb;
	int n;
};

static void index_add(const char *name, const char *text, void *data)
{
	struct index_acc *a = data;
	char man[80], top[80], plat[64], mt[128];
	struct stat st;

	if (sscanf(text, "%79s %79s %63s %127s", man, top, plat, mt) != 4 ||
	    !cache_digest_valid(man) ||
	    fstatat(a->c->fd[CACHE_BLOBS], man + 7, &st, AT_SYMLINK_NOFOLLOW) <
		0)
		return;
	sb_puts(&a->sb, a->n++ ? ",\n" : "\n");
	sb_puts(&a->sb, "  {\"mediaType\":");
	sb_json_str(&a->sb, mt);
	sb_puts(&a->sb, ",\"digest\":");
	sb_json_str(&a->sb, man);
	sb_printf(&a->sb, ",\"size\":%lld,", (long long)st.st_size);
	sb_puts(&a->sb, "\"annotations\":{\"org.opencontainers.image.ref."
			"name\":");
	sb_json_str(&a->sb, name);
	sb_puts(&a->sb, "}}");
}

/* Write text as a new file in tmp/ and rename it to name of dfd
 * (replacing it). A shared cache's file of another member (EPERM: sticky)
 * is kept, which is no error here. */
static int replace_file(const struct cache *c, int dfd, const char *name,
			const char *text, mpictr_err **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_close int fd = cache_tmpfile(c, "ref", &tmp, err);
	int rc = 0;

	if (fd < 0)
		return -1;
	if (write_full(fd, text, strlen(text)) < 0)
		rc = err_set(err, errno, "write '%s'", tmp);
	else if (renameat(c->fd[CACHE_TMP], tmp_base(c, tmp), dfd, name) == 0)
		return 0;
	else if (!(c->shared && errno == EPERM))
		rc = err_set(err, errno, "rename '%s' to '%s'", tmp, name);
	unlinkat(c->fd[CACHE_TMP], tmp_base(c, tmp), 0);
	return rc;
}

static int index_rewrite(const struct cache *c, mpictr_err **err)
{
	struct index_acc a = {.c = c, .sb = STRBUF_INIT};
	cleanup_free char *text = NULL;

	sb_puts(&a.sb, "{\"schemaVersion\":2,\"manifests\":[");
	refs_each(c, index_add, &a);
	sb_puts(&a.sb, a.n ? "\n]}\n" : "]}\n");
	text = sb_steal(&a.sb);
	return replace_file(c, c->rootfd, "index.json", text, err);
}

int cache_ref_set(const struct cache *c, const char *host, const char *repo,
		  const char *tag, const char *manifest, const char *top,
		  const char *platform, const char *media_type,
		  mpictr_err **err)
{
	cleanup_free char *line =
	    xasprintf("%s %s %s %s\n", manifest, top, platform, media_type);
	cleanup_free char *name = xasprintf(":%s", tag);
	cleanup_close int dfd = -1;
	int lock, rc;

	if (strchr(tag, '/'))
		return err_set(err, EINVAL, "tag '%s'", tag);
	lock = cache_lock(c, "index", err);
	if (lock < 0)
		return -1;
	dfd = refs_dir(c, host, repo, true, err);
	rc = dfd < 0 ? -1 : replace_file(c, dfd, name, line, err);
	if (rc == 0)
		rc = index_rewrite(c, err);
	cache_unlock(lock);
	return rc;
}

bool cache_ref_own(const struct cache *c, const char *host, const char *repo,
		   const char *tag)
{
	cleanup_free char *name = xasprintf(":%s", tag);
	cleanup_close int dfd = refs_dir(c, host, repo, false, NULL);
	struct stat st;

	return dfd >= 0 && !strchr(tag, '/') &&
	       fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_uid == getuid();
}

int cache_ref_get(const struct cache *c, const char *host, const char *repo,
		  const char *tag, char **manifest, char **top)
{
	cleanup_free char *name = xasprintf(":%s", tag);
	cleanup_close int dfd = refs_dir(c, host, repo, false, NULL);
	cleanup_close int fd = -1;
	char text[512], man[80], t[80];
	ssize_t n;

	if (dfd < 0 || strchr(tag, '/'))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, text, sizeof(text) - 1)) <= 0)
		return 0;
	text[n] = '\0';
	if (sscanf(text, "%79s %79s", man, t) != 2)
		return 0;
	*manifest = xstrdup(man);
	if (top)
		*top = xstrdup(t);
	return 1;
}

/* ---- list and clean ------------------------------------------------------ */

struct list_acc {
	char **names; /* "DIGEST NAME" */
};

static void list_add(const char *name, const char *text, void *data)
{
	struct list_acc *a = data;
	char man[80];

	if (sscanf(text, "%79s", man) == 1)
		strv_push_own(&a->names, xasprintf("%s %s", man, name));
}

/* The regular files of directory fd (not followed): bytes, count. */
static uint64_t dir_bytes(int fd, unsigned *count)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
	struct dirent *e;
	uint64_t sum = 0;
	struct stat st;

	if (!d) {
		if (copy >= 0)
			close(copy);
		return 0;
	}
	rewinddir(d); /* a dup shares the offset of the cache's fd */
	while ((e = readdir(d)))
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			sum += (uint64_t)st.st_size;
			(*count)++;
		}
	closedir(d);
	return sum;
}

char *cache_list_text(const struct cache *c)
{
	struct list_acc a = {NULL};
	struct strbuf sb = STRBUF_INIT;
	int copy = fcntl(c->fd[CACHE_IMAGES], F_DUPFD_CLOEXEC, 0);
	DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
	struct dirent *e;
	cleanup_free char *tmps = xasprintf("%s/tmp", c->dir);
	unsigned nimg = 0, nblob = 0, ntmp = 0;
	uint64_t isz, bsz, tsz;
	struct stat st;

	refs_each(c, list_add, &a);
	if (d)
		rewinddir(d);
	while (d && (e = readdir(d))) {
		/* HEX.sif, or a member's own HEX.UID.sif */
		size_t len = strlen(e->d_name),
		       hl = strspn(e->d_name, "0123456789abcdef");
		if (len < 5 || hl != 64 ||
		    strcmp(e->d_name + len - 4, ".sif") ||
		    fstatat(c->fd[CACHE_IMAGES], e->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		sb_printf(&sb, "sha256:%.64s %10lld", e->d_name,
			  (long long)st.st_size);
		if (len != 64 + 4)
			sb_printf(&sb, " (uid %u's)", (unsigned)st.st_uid);
		for (size_t j = 0; a.names && a.names[j]; j++)
			if (strncmp(a.names[j] + 7, e->d_name, 64) == 0 &&
			    a.names[j][7 + 64] == ' ')
				sb_printf(&sb, " %s", a.names[j] + 8 + 64);
		sb_putc(&sb, '\n');
	}
	if (d)
		closedir(d);
	else if (copy >= 0)
		close(copy);
	strv_free(a.names);
	isz = dir_bytes(c->fd[CACHE_IMAGES], &nimg);
	bsz = dir_bytes(c->fd[CACHE_BLOBS], &nblob);
	tsz = dir_bytes(c->fd[CACHE_TMP], &ntmp);
	sb_printf(&sb, "%u images %llu bytes, %u blobs %llu bytes in %s\n",
		  nimg, (unsigned long long)isz, nblob, (unsigned long long)bsz,
		  c->dir);
	/* Downloads or builds in progress, or left by a pull that was
	 * killed: 'cache clean --tmp' removes them when none runs. */
	if (ntmp)
		sb_printf(&sb,
			  "%u partial downloads %llu bytes in %s (in "
			  "progress, or left by a killed pull: 'mpictr cache "
			  "clean --tmp' removes them)\n",
			  ntmp, (unsigned long long)tsz, tmps);
	return sb_steal(&sb);
}

/* Empty directory fd of the cache through descriptors (proc.c's tree
 * removal: no symlink followed, no path resolved twice, no other mount
 * entered); in a shared cache others' entries stay (sticky). */
static int empty_sub(const struct cache *c, int fd, const char *what,
		     uint64_t *freed, mpictr_err **err)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	int rc;

	if (copy < 0)
		return err_set(err, errno, "clean '%s/%s'", c->dir, what);
	rc = rm_tree_empty_count(copy, c->shared, freed);
	close(copy);
	if (rc < 0)
		return err_set(err, errno, "clean '%s/%s'", c->dir, what);
	return 0;
}

int cache_clean(const char *dir, bool all, uint64_t *freed, mpictr_err **err)
{
	static const int every[] = {CACHE_TMP, CACHE_IMAGES, CACHE_BLOBS,
				    CACHE_REFS};
	static const char *const names[] = {"tmp", "images/sha256",
					    "blobs/sha256", "refs"};
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct cache c;
	int rc = 0;

	*freed = 0;
	if (open_dirs(&c, dir, err) < 0)
		return -1;
	c.lockfd = open_lock(&c, "cache.lock", err);
	if (c.lockfd < 0) {
		cache_close(&c);
		return -1;
	}
	if (fcntl(c.lockfd, F_SETLK, &fl) < 0) {
		cleanup_free char *who = lock_holder(c.lockfd, F_WRLCK);
		if (errno == EACCES || errno == EAGAIN)
			errno = EBUSY;
		err_set(err, errno, "clean image cache '%s' (locked by %s)",
			dir, who);
		cache_close(&c);
		return err_hint(err, "a pull or a run from the cache is in "
				     "progress; try again when it is over");
	}
	for (size_t i = 0; i < (all ? ARRAY_SIZE(every) : 1) && rc == 0; i++)
		rc = empty_sub(&c, c.fd[every[i]], names[i], freed, err);
	if (rc == 0 && all)
		rc = replace_file(&c, c.rootfd, "index.json", INDEX_EMPTY, err);
	cache_close(&c);
	return rc;
}

bool cache_digest_valid(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'f'))
			return false;
	return true;
}
