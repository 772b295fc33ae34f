/* bindpol.c - deny_bind and allow_bind checked on the descriptor that is
 * mounted (see bindpol.h). A place is a chain of (mount, device, inode):
 * the object, then each directory above it up to the root, found with
 * openat(dir, "..") -- never by resolving a path a second time, except to
 * find the directory holding a non-directory, which is then verified to
 * hold that very object.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config/bindpol.h"
#include "common/error.h"
#include "common/util.h"

/* Deeper than any path the kernel resolves (PATH_MAX / 2). */
#define CHAIN_MAX 2048

struct fid {
	dev_t dev;
	ino_t ino;
};

struct chain {
	struct fid *v;
	size_t n;
};

static void items_copy(struct site_items *dst, const struct site_items *src)
{
	dst->n = src->n;
	dst->v = src->n ? xcalloc(src->n, sizeof(*dst->v)) : NULL;
	for (size_t i = 0; i < src->n; i++) {
		dst->v[i].value = xstrdup(src->v[i].value);
		dst->v[i].origin = xstrdup(src->v[i].origin);
		dst->v[i].site = src->v[i].site;
	}
}

static void items_clear(struct site_items *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free(v->v[i].value);
		free(v->v[i].origin);
	}
	free(v->v);
	memset(v, 0, sizeof(*v));
}

void bind_policy_init(struct bind_policy *bp, const struct siteconf *sc)
{
	items_copy(&bp->deny, &sc->deny_binds);
	items_copy(&bp->allow, &sc->allow_binds);
}

void bind_policy_free(struct bind_policy *bp)
{
	items_clear(&bp->deny);
	items_clear(&bp->allow);
}

static void chain_push(struct chain *c, const struct stat *st)
{
	c->v = xrealloc(c->v, (c->n + 1) * sizeof(*c->v));
	c->v[c->n].dev = st->st_dev;
	c->v[c->n].ino = st->st_ino;
	c->n++;
}

static bool chain_has(const struct chain *c, struct fid f)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].dev == f.dev && c->v[i].ino == f.ino)
			return true;
	return false;
}

/* Mount id, device and inode of fd. */
static int ident(int fd, uint64_t *mnt, struct stat *st)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_INO | STATX_MNT_ID, &stx) < 0)
		return -1;
	if (!(stx.stx_mask & STATX_MNT_ID)) {
		errno = ENOSYS;
		return -1;
	}
	*mnt = stx.stx_mnt_id;
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	st->st_ino = stx.stx_ino;
	return 0;
}

/* Append directory dfd and every directory above it, up to the root. */
static int chain_dirs(int dfd, struct chain *c)
{
	cleanup_close int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	uint64_t mnt, pmnt;
	struct stat st, pst;

	if (cur < 0 || ident(cur, &mnt, &st) < 0)
		return -1;
	for (size_t depth = 0; depth < CHAIN_MAX; depth++) {
		int up;

		chain_push(c, &st);
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return -1;
		if (ident(up, &pmnt, &pst) < 0) {
			close(up);
			return -1;
		}
		close(cur);
		cur = up;
		/* ".." of the root is the root itself (same mount too: a
		 * directory bound below itself is not the root). */
		if (pmnt == mnt && pst.st_dev == st.st_dev &&
		    pst.st_ino == st.st_ino)
			return 0;
		mnt = pmnt;
		st = pst;
	}
	errno = ELOOP;
	return -1;
}

/* The directory the kernel names for non-directory fd (st: its stat),
 * verified to hold an entry of that name that is this very object: fd
 * of the directory, or -1 with errno (ESTALE: it moved meanwhile). */
static int holder_dir(int fd, const struct stat *st)
{
	cleanup_free char *path = NULL;
	struct stat est;
	char *slash;
	int pfd;

	errno = 0;
	path = fd_path_dup(fd);
	if (!path || path[0] != '/' || !(slash = strrchr(path, '/')) ||
	    !slash[1]) {
		if (!errno)
			errno = ENOENT;
		return -1;
	}
	*slash = '\0';
	pfd =
	    open(slash == path ? "/" : path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	if (fstatat(pfd, slash + 1, &est, AT_SYMLINK_NOFOLLOW) < 0 ||
	    est.st_dev != st->st_dev || est.st_ino != st->st_ino) {
		close(pfd);
		errno = ESTALE;
		return -1;
	}
	return pfd;
}

/* The place of fd: itself, then the directories above it. A directory is
 * walked up from itself; a non-directory has no "..": the directory that
 * holds it is found by holder_dir (a few tries, in case it was renamed
 * meanwhile). */
static int chain_of(int fd, struct chain *c, mpictr_err **err, const char *what)
{
	cleanup_close int pfd = -1;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "%s: stat", what);
	if (S_ISDIR(st.st_mode)) {
		if (chain_dirs(fd, c) < 0)
			return err_set(err, errno,
				       "%s: find the directories above it",
				       what);
		return 0;
	}
	for (int i = 0; i < 3 && pfd < 0; i++)
		pfd = holder_dir(fd, &st);
	if (pfd < 0)
		return err_set(err, errno == ESTALE ? 0 : errno,
			       errno == ESTALE
				   ? "%s: cannot find the directory that holds "
				     "it (it moved while being checked)"
				   : "%s: find the directory that holds it",
			       what);
	chain_push(c, &st);
	if (chain_dirs(pfd, c) < 0)
		return err_set(err, errno, "%s: find the directories above it",
			       what);
	return 0;
}

/* The place of rule path rule; 1 when it cannot be reached (nothing to
 * protect, or nothing the user could bind), 0 when found, -1 on error. */
static int rule_chain(const char *rule, struct chain *c, mpictr_err **err)
{
	cleanup_close int fd = open(rule, O_PATH | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			return 1;
		return err_set(err, errno, "site rule path '%s'", rule);
	}
	return chain_of(fd, c, err, rule) < 0 ? -1 : 0;
}

int bind_policy_check_fd(const struct bind_policy *bp, enum bind_who who,
			 int fd, const char *src, mpictr_err **err)
{
	struct chain s = {0};
	cleanup_free char *what = NULL, *real = NULL;
	int rc = -1;

	if (who == BIND_TRUSTED ||
	    (!bp->deny.n && !(who == BIND_USER && bp->allow.n)))
		return 0;
	real = fd_path_dup(fd);
	what = real && strcmp(real, src)
		   ? xasprintf("bind source '%s' (opened as '%s')", src, real)
		   : xasprintf("bind source '%s'", src);
	if (chain_of(fd, &s, err, what) < 0)
		goto out;
	for (size_t i = 0; i < bp->deny.n; i++) {
		const struct site_item *r = &bp->deny.v[i];
		struct chain d = {0};
		int found = rule_chain(r->value, &d, err);

		if (found < 0) {
			free(d.v);
			goto out;
		}
		if (found == 0 && chain_has(&s, d.v[0])) {
			err_set(err, 0,
				"%s refused: it is or lies below '%s', denied "
				"by %s: deny_bind = %s",
				what, r->value, r->origin, r->value);
			free(d.v);
			goto out;
		}
		if (found == 0 && chain_has(&d, s.v[0])) {
			err_set(err, 0,
				"%s refused: it contains '%s', denied by %s: "
				"deny_bind = %s",
				what, r->value, r->origin, r->value);
			free(d.v);
			goto out;
		}
		free(d.v);
	}
	if (who == BIND_USER && bp->allow.n) {
		struct strbuf sb = STRBUF_INIT;

		for (size_t i = 0; i < bp->allow.n; i++) {
			struct stat st;
			if (stat(bp->allow.v[i].value, &st) == 0 &&
			    chain_has(&s, (struct fid){st.st_dev, st.st_ino})) {
				rc = 0;
				goto out;
			}
		}
		for (size_t i = 0; i < bp->allow.n; i++)
			sb_printf(&sb, "%s%s: allow_bind = %s", i ? "; " : "",
				  bp->allow.v[i].origin, bp->allow.v[i].value);
		err_set(err, 0,
			"%s refused: it is outside the paths the site allows "
			"(%s)",
			what, sb.buf);
		sb_free(&sb);
		goto out;
	}
	rc = 0;
out:
	free(s.v);
	return rc;
}
