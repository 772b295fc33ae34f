/* cache.c - the image cache of cache.h: directory choice and checks, blob
 * and image paths, fcntl locks, temporary files renamed into place, tag
 * references (plain files, and the layout's index.json rewritten from
 * them), list and clean. Pure POSIX, no JSON parser: index.json is only
 * ever written.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "pull/cache.h"

#define LAYOUT_JSON "{\"imageLayoutVersion\":\"1.0.0\"}\n"
#define INDEX_EMPTY "{\"schemaVersion\":2,\"manifests\":[]}\n"

char *cache_dir_choose(const char *dir, const char *site_dir, mpictr_err **err)
{
	const char *v;

	if (dir && *dir)
		return xstrdup(dir);
	v = getenv("MPICTR_CACHEDIR");
	if (v && *v)
		return xstrdup(v);
	if (site_dir && *site_dir)
		return xstrdup(site_dir);
	v = getenv("XDG_CACHE_HOME");
	if (v && v[0] == '/')
		return xasprintf("%s/mpictr", v);
	v = getenv("HOME");
	if (v && v[0] == '/')
		return xasprintf("%s/.cache/mpictr", v);
	err_set(err, 0, "no image cache directory: HOME is not set");
	err_hint(err, "set MPICTR_CACHEDIR or XDG_CACHE_HOME");
	return NULL;
}

/* mkdir that accepts an existing directory; mode exactly (no umask). */
static int mkdir_ok(const char *path, mode_t mode, mpictr_err **err)
{
	if (mkdir(path, mode) == 0) {
		if ((mode & 02070) && chmod(path, mode) < 0)
			return err_set(err, errno, "chmod '%s'", path);
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	return err_set(err, errno, "create cache directory '%s'", path);
}

/* The mode of a new directory below parent: 0755, or 02775 below a
 * setgid group-writable one (a site's shared cache, owned by a group). */
static mode_t child_mode(const char *path)
{
	cleanup_free char *parent = xstrdup(path);
	char *slash = strrchr(parent, '/');
	struct stat st;

	if (slash && slash != parent)
		*slash = '\0';
	if (stat(parent, &st) == 0 && (st.st_mode & S_ISGID) &&
	    (st.st_mode & S_IWGRP))
		return 02775;
	return 0755;
}

/* mkdir -p of path's parents. */
static int mkdir_parents(const char *path, mpictr_err **err)
{
	cleanup_free char *p = xstrdup(path);

	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (access(p, F_OK) < 0 && mkdir_ok(p, child_mode(p), err) < 0)
			return -1;
		*s = '/';
	}
	return 0;
}

/* The cache root: ours (created 0700) or a shared one that others cannot
 * plant images in: owned by us or root, writable by no one else but its
 * group (*shared then). */
static int check_root(const char *dir, bool *shared, mpictr_err **err)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT)
			return err_set(err, errno, "image cache '%s'", dir);
		if (mkdir_parents(dir, err) < 0)
			return -1;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return err_set(err, errno, "create image cache '%s'",
				       dir);
		if (stat(dir, &st) < 0)
			return err_set(err, errno, "image cache '%s'", dir);
	}
	if (!S_ISDIR(st.st_mode))
		return err_set(err, ENOTDIR, "image cache '%s'", dir);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return err_set(err, 0,
			       "image cache '%s' is owned by uid %u, not by "
			       "you or root",
			       dir, (unsigned)st.st_uid);
	if (st.st_mode & S_IWOTH) {
		err_set(err, 0,
			"image cache '%s' is writable by anyone (mode %o): "
			"anyone could plant an image there",
			dir, (unsigned)(st.st_mode & 07777));
		return err_hint(err, "a shared cache belongs to a group: "
				     "chmod 2775 and chgrp it");
	}
	*shared = (st.st_mode & S_IWGRP) != 0;
	return 0;
}

/* A lock file, opened for fcntl write locks; group-writable in a shared
 * cache so that its other users can lock it too. */
static int open_lock(const char *path, bool shared)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0 && shared)
		(void)fchmod(fd, 0664); /* not ours: its creator did */
	return fd;
}

static int ensure_file(const char *dir, const char *name, const char *text,
		       mpictr_err **err)
{
	cleanup_free char *p = xasprintf("%s/%s", dir, name);
	cleanup_free char *tmp = NULL;
	cleanup_close int fd = -1;

	if (access(p, F_OK) == 0)
		return 0;
	tmp = xasprintf("%s/tmp/%s.%d", dir, name, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_full(fd, text, strlen(text)) < 0)
		return err_set(err, errno, "write '%s'", tmp);
	/* another pull may have won: either file is the same */
	if (rename(tmp, p) < 0)
		return err_set(err, errno, "rename '%s'", tmp);
	return 0;
}

int cache_open(struct cache *c, const char *dir, mpictr_err **err)
{
	static const char *const sub[] = {
	    "blobs", "blobs/sha256", "images", "images/sha256",
	    "refs",  "locks",	     "tmp"};
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	cleanup_free char *lockp = NULL;

	c->dir = NULL;
	c->lockfd = -1;
	if (check_root(dir, &c->shared, err) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++) {
		cleanup_free char *p = xasprintf("%s/%s", dir, sub[i]);
		if (mkdir_ok(p, c->shared ? 02775 : 0755, err) < 0)
			return -1;
	}
	if (ensure_file(dir, "oci-layout", LAYOUT_JSON, err) < 0 ||
	    ensure_file(dir, "index.json", INDEX_EMPTY, err) < 0)
		return -1;
	lockp = xasprintf("%s/locks/cache.lock", dir);
	c->lockfd = open_lock(lockp, c->shared);
	if (c->lockfd < 0)
		return err_set(err, errno, "open '%s'", lockp);
	if (TEMP_FAILURE_RETRY(fcntl(c->lockfd, F_SETLKW, &fl)) < 0) {
		err_set(err, errno, "lock '%s'", lockp);
		close(c->lockfd);
		c->lockfd = -1;
		return -1;
	}
	c->dir = xstrdup(dir);
	return 0;
}

void cache_close(struct cache *c)
{
	if (c->lockfd >= 0)
		close(c->lockfd);
	c->lockfd = -1;
	free(c->dir);
	c->dir = NULL;
}

static const char *digest_hex(const char *digest)
{
	const char *colon = strchr(digest, ':');
	return colon ? colon + 1 : digest;
}

char *cache_blob_path(const struct cache *c, const char *digest)
{
	return xasprintf("%s/blobs/sha256/%s", c->dir, digest_hex(digest));
}

bool cache_has_blob(const struct cache *c, const char *digest, uint64_t size)
{
	cleanup_free char *p = cache_blob_path(c, digest);
	struct stat st;

	if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	return size == UINT64_MAX || (uint64_t)st.st_size == size;
}

char *cache_image_path(const struct cache *c, const char *digest)
{
	return xasprintf("%s/images/sha256/%s.sif", c->dir, digest_hex(digest));
}

bool cache_has_image(const struct cache *c, const char *digest)
{
	cleanup_free char *p = cache_image_path(c, digest);
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

int cache_lock(const struct cache *c, const char *name, mpictr_err **err)
{
	cleanup_free char *p = xasprintf("%s/locks/%s.lock", c->dir, name);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int fd = open_lock(p, c->shared);

	if (fd < 0)
		return err_set(err, errno, "open lock '%s'", p);
	if (TEMP_FAILURE_RETRY(fcntl(fd, F_SETLKW, &fl)) < 0) {
		err_set(err, errno, "lock '%s'", p);
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

char *cache_tmpname(const struct cache *c, const char *prefix)
{
	uint64_t r = 0;
	char *p;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	p = xasprintf("%s/tmp/%s.%d.%016llx.partial", c->dir, prefix,
		      (int)getpid(), (unsigned long long)r);
	cache_tmp_track(p);
	return p;
}

int cache_tmpfile(const struct cache *c, const char *prefix, char **path,
		  mpictr_err **err)
{
	for (int tries = 0; tries < 8; tries++) {
		char *p = cache_tmpname(c, prefix);
		int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*path = p;
			return fd;
		}
		if (errno != EEXIST) {
			err_set(err, errno, "create '%s'", p);
			free(p);
			return -1;
		}
		free(p);
	}
	return err_set(err, EEXIST, "create a file in '%s/tmp'", c->dir);
}

int cache_commit(const char *tmp, const char *final, mpictr_err **err)
{
	if (mkdir_parents(final, err) < 0)
		return -1;
	if (rename(tmp, final) < 0)
		return err_set(err, errno, "rename '%s' to '%s'", tmp, final);
	return 0;
}

/* ---- tag references ------------------------------------------------------ */

static char *ref_path(const struct cache *c, const char *host, const char *repo,
		      const char *tag)
{
	return xasprintf("%s/refs/%s/%s/:%s", c->dir, host, repo, tag);
}

/* Every reference file below dir (relative name prefix), for index.json
 * and list: calls fn(name "host/repo:tag", file text). */
typedef void (*ref_fn)(const char *name, const char *text, void *data);

static void refs_walk(const char *dir, const char *prefix, int depth, ref_fn fn,
		      void *data)
{
	DIR *d;
	struct dirent *e;

	if (depth > 32 || !(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {
		cleanup_free char *p = NULL;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (e->d_name[0] == ':') {
			cleanup_free char *text = read_file(p, 4096, NULL);
			cleanup_free char *name =
			    xasprintf("%s:%s", prefix, e->d_name + 1);
			if (text)
				fn(name, text, data);
		} else if (e->d_name[0] != '.') {
			cleanup_free char *sub =
			    *prefix ? xasprintf("%s/%s", prefix, e->d_name)
				    : xstrdup(e->d_name);
			refs_walk(p, sub, depth + 1, fn, data);
		}
	}
	closedir(d);
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
	cleanup_free char *blob = NULL;
	struct stat st;

	if (sscanf(text, "%79s %79s %63s %127s", man, top, plat, mt) != 4)
		return;
	blob = cache_blob_path(a->c, man);
	if (stat(blob, &st) < 0)
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

static int index_rewrite(const struct cache *c, mpictr_err **err)
{
	struct index_acc a = {.c = c, .sb = STRBUF_INIT};
	cleanup_free char *refs = xasprintf("%s/refs", c->dir);
	cleanup_free char *final = xasprintf("%s/index.json", c->dir);
	cleanup_free char *tmp = NULL;
	cleanup_free char *text = NULL;
	cleanup_close int fd = -1;
	int rc;

	sb_puts(&a.sb, "{\"schemaVersion\":2,\"manifests\":[");
	refs_walk(refs, "", 0, index_add, &a);
	sb_puts(&a.sb, a.n ? "\n]}\n" : "]}\n");
	text = sb_steal(&a.sb);
	fd = cache_tmpfile(c, "index.json", &tmp, err);
	if (fd < 0)
		return -1;
	if (write_full(fd, text, strlen(text)) < 0) {
		rc = err_set(err, errno, "write '%s'", tmp);
		unlink(tmp);
		return rc;
	}
	return cache_commit(tmp, final, err);
}

int cache_ref_set(const struct cache *c, const char *host, const char *repo,
		  const char *tag, const char *manifest, const char *top,
		  const char *platform, const char *media_type,
		  mpictr_err **err)
{
	cleanup_free char *final = ref_path(c, host, repo, tag);
	cleanup_free char *tmp = NULL;
	cleanup_free char *line =
	    xasprintf("%s %s %s %s\n", manifest, top, platform, media_type);
	cleanup_close int fd = -1;
	int lock, rc;

	lock = cache_lock(c, "index", err);
	if (lock < 0)
		return -1;
	fd = cache_tmpfile(c, "ref", &tmp, err);
	rc = fd < 0 ? -1 : 0;
	if (rc == 0 && write_full(fd, line, strlen(line)) < 0)
		rc = err_set(err, errno, "write '%s'", tmp);
	if (rc == 0)
		rc = cache_commit(tmp, final, err);
	if (rc < 0 && tmp)
		unlink(tmp);
	if (rc == 0)
		rc = index_rewrite(c, err);
	cache_unlock(lock);
	return rc;
}

bool cache_ref_own(const struct cache *c, const char *host, const char *repo,
		   const char *tag)
{
	cleanup_free char *p = ref_path(c, host, repo, tag);
	struct stat st;

	return lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == getuid();
}

int cache_ref_get(const struct cache *c, const char *host, const char *repo,
		  const char *tag, char **manifest, char **top)
{
	cleanup_free char *p = ref_path(c, host, repo, tag);
	cleanup_free char *text = read_file(p, 4096, NULL);
	char man[80], t[80];

	if (!text || sscanf(text, "%79s %79s", man, t) != 2)
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

static uint64_t dir_bytes(const char *dir, unsigned *count)
{
	cleanup_strv char **names = dir_names(dir);
	uint64_t sum = 0;
	struct stat st;

	for (size_t i = 0; names && names[i]; i++) {
		cleanup_free char *p = xasprintf("%s/%s", dir, names[i]);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			sum += (uint64_t)st.st_size;
			(*count)++;
		}
	}
	return sum;
}

char *cache_list_text(const struct cache *c)
{
	struct list_acc a = {NULL};
	struct strbuf sb = STRBUF_INIT;
	cleanup_free char *refs = xasprintf("%s/refs", c->dir);
	cleanup_free char *imgs = xasprintf("%s/images/sha256", c->dir);
	cleanup_free char *blobs = xasprintf("%s/blobs/sha256", c->dir);
	cleanup_free char *tmps = xasprintf("%s/tmp", c->dir);
	cleanup_strv char **names = dir_names(imgs);
	unsigned nimg = 0, nblob = 0, ntmp = 0;
	uint64_t isz, bsz, tsz;
	struct stat st;

	refs_walk(refs, "", 0, list_add, &a);
	for (size_t i = 0; names && names[i]; i++) {
		cleanup_free char *p = xasprintf("%s/%s", imgs, names[i]);
		size_t len = strlen(names[i]);
		if (len < 5 || strcmp(names[i] + len - 4, ".sif") ||
		    stat(p, &st) < 0)
			continue;
		sb_printf(&sb, "sha256:%.*s %10lld", (int)(len - 4), names[i],
			  (long long)st.st_size);
		for (size_t j = 0; a.names && a.names[j]; j++)
			if (strncmp(a.names[j] + 7, names[i], len - 4) == 0 &&
			    a.names[j][7 + len - 4] == ' ')
				sb_printf(&sb, " %s", a.names[j] + 8 + len - 4);
		sb_putc(&sb, '\n');
	}
	strv_free(a.names);
	isz = dir_bytes(imgs, &nimg);
	bsz = dir_bytes(blobs, &nblob);
	tsz = dir_bytes(tmps, &ntmp);
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

/* rm -r of dir's entries (not dir), adding file sizes to *freed. */
static int empty_dir(const char *dir, int depth, uint64_t *freed,
		     mpictr_err **err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0
				       : err_set(err, errno, "open '%s'", dir);
	while (rc == 0 && (e = readdir(d))) {
		cleanup_free char *p = NULL;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth > 32)
				rc = err_set(err, ELOOP, "clean '%s'", p);
			else
				rc = empty_dir(p, depth + 1, freed, err);
			if (rc == 0 && rmdir(p) < 0)
				rc = err_set(err, errno, "remove '%s'", p);
		} else {
			if (unlink(p) < 0)
				rc = err_set(err, errno, "remove '%s'", p);
			else
				*freed += (uint64_t)st.st_size;
		}
	}
	closedir(d);
	return rc;
}

int cache_clean(const char *dir, bool all, uint64_t *freed, mpictr_err **err)
{
	static const char *const every[] = {"tmp", "images/sha256",
					    "blobs/sha256", "refs"};
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	cleanup_free char *lockp = xasprintf("%s/locks/cache.lock", dir);
	cleanup_close int fd = -1;
	bool shared;
	int rc = 0;

	*freed = 0;
	if (check_root(dir, &shared, err) < 0)
		return -1;
	fd = open_lock(lockp, shared);
	if (fd < 0)
		return err_set(err, errno, "open '%s'", lockp);
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		if (errno == EACCES || errno == EAGAIN)
			errno = EBUSY;
		err_set(err, errno, "clean image cache '%s'", dir);
		return err_hint(err, "a pull or a run from the cache is in "
				     "progress; try again when it is over");
	}
	for (size_t i = 0; i < (all ? ARRAY_SIZE(every) : 1) && rc == 0; i++) {
		cleanup_free char *p = xasprintf("%s/%s", dir, every[i]);
		rc = empty_dir(p, 0, freed, err);
	}
	if (rc == 0 && all) {
		cleanup_free char *idx = xasprintf("%s/index.json", dir);
		rc = write_file(idx, INDEX_EMPTY, O_WRONLY | O_TRUNC);
		if (rc < 0)
			rc = err_set(err, errno, "write '%s'", idx);
	}
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
