/* store.c - blobs from an OCI layout directory or a tar file (store.h).
 *
 * A tar is indexed by its own small ustar/PAX/GNU header reader, because
 * the blobs are then read in place with pread (libarchive would copy them
 * through its buffers). Only the fields needed are parsed: the name (PAX
 * path, GNU long name, ustar prefix), the size (octal or base-256), the
 * type and a symlink's target; the header checksum is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "pull/cache.h"
#include "pull/merge.h"
#include "pull/oci.h"
#include "pull/store.h"

#define TAR_BLOCK 512
#define TAR_MAX_MEMBERS 100000
#define TAR_MAX_PAX (1u << 20)

json_t *json_parse(const char *buf, size_t len, const char *what,
		   mpictr_err **err)
{
	json_error_t je;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		err_set(err, EINVAL, "%s: invalid JSON at line %d: %s", what,
			je.line, je.text);
	else if (!json_is_object(j) && !json_is_array(j)) {
		json_decref(j);
		j = NULL;
		err_set(err, EINVAL, "%s: not a JSON object", what);
	}
	return j;
}

int store_open_dir(const char *path, struct store *s, mpictr_err **err)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->name = xstrdup(path);
	s->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		err_set(err, errno, "open OCI layout '%s'", path);
		store_close(s);
		return -1;
	}
	return 0;
}

void store_close(struct store *s)
{
	if (s->dirfd >= 0)
		close(s->dirfd);
	if (s->fd >= 0)
		close(s->fd);
	for (size_t i = 0; i < s->nmembers; i++) {
		free(s->members[i].name);
		free(s->members[i].link);
	}
	free(s->members);
	free(s->name);
	memset(s, 0, sizeof(*s));
	s->dirfd = s->fd = -1;
}

void blob_close(struct blob *b)
{
	if (b->own && b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->own = false;
}

/* ---- tar index ---- */

static int tar_number(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) { /* base-256 */
		if (f[0] != 0x80)
			return -1;
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return -1;
			v = (v << 8) | f[i];
		}
		*out = v;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != ' ' && f[i] != '\0')
		return -1;
	*out = v;
	return 0;
}

static bool tar_checksum_ok(const unsigned char *h)
{
	uint64_t want;
	unsigned sum = 0;

	if (tar_number(h + 148, 8, &want) < 0)
		return false;
	for (int i = 0; i < TAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum == want;
}

/* The value of key in PAX records buf[0..len), or NULL. */
static char *pax_value(const char *buf, size_t len, const char *key)
{
	size_t klen = strlen(key), pos = 0;

	while (pos < len) {
		char *end;
		unsigned long rec = strtoul(buf + pos, &end, 10);
		const char *kv = end + 1;
		if (end == buf + pos || *end != ' ' || rec == 0 ||
		    rec > len - pos)
			return NULL;
		if ((size_t)(kv - (buf + pos)) + klen + 1 < rec &&
		    strncmp(kv, key, klen) == 0 && kv[klen] == '=')
			return xstrndup(kv + klen + 1,
					rec - (size_t)(kv - (buf + pos)) -
					    klen - 2);
		pos += rec;
	}
	return NULL;
}

static char *field(const unsigned char *f, size_t n)
{
	return xstrndup((const char *)f, strnlen((const char *)f, n));
}

struct tar_scan {
	struct store *s;
	uint64_t pos, fsize;
	char *long_name, *long_link; /* from PAX or GNU L/K */
	size_t cap;
};

static int tar_bad(struct tar_scan *t, const char *why, mpictr_err **err)
{
	return err_set(err, EINVAL, "archive '%s': offset %llu: %s", t->s->name,
		       (unsigned long long)t->pos, why);
}

/* Read the data of an extension header (PAX or GNU long name). */
static int tar_ext_data(struct tar_scan *t, uint64_t size, char **buf,
			mpictr_err **err)
{
	if (size > TAR_MAX_PAX)
		return tar_bad(t, "extended header over 1 MiB", err);
	*buf = xmalloc((size_t)size + 1);
	if (pread_full(t->s->fd, *buf, (size_t)size,
		       (off_t)(t->pos + TAR_BLOCK)) < 0) {
		free(*buf);
		*buf = NULL;
		return err_set(err, errno ? errno : EIO, "archive '%s': read",
			       t->s->name);
	}
	(*buf)[size] = '\0';
	return 0;
}

static void tar_add(struct tar_scan *t, const unsigned char *h, uint64_t size)
{
	struct store *s = t->s;
	cleanup_free char *raw = NULL, *norm = NULL;
	struct tar_member *m;

	if (t->long_name) {
		raw = t->long_name;
	} else if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
		cleanup_free char *pre = field(h + 345, 155);
		cleanup_free char *nm = field(h, 100);
		raw = xasprintf("%s/%s", pre, nm);
	} else {
		raw = field(h, 100);
	}
	t->long_name = NULL;
	if (merge_norm_path(raw, &norm) < 0 || !norm[0]) {
		free(t->long_link);
		t->long_link = NULL;
		return; /* never looked up */
	}
	if (s->nmembers == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		s->members = xrealloc(s->members, t->cap * sizeof(*s->members));
	}
	m = &s->members[s->nmembers++];
	m->name = norm;
	norm = NULL;
	m->link = NULL;
	if (h[156] == '2')
		m->link = t->long_link ? t->long_link : field(h + 157, 100);
	else
		free(t->long_link);
	t->long_link = NULL;
	m->off = t->pos + TAR_BLOCK;
	m->size = size;
}

/* One header at t->pos: 1 to go on, 0 at the end, -1 on error. */
static int tar_step(struct tar_scan *t, mpictr_err **err)
{
	unsigned char h[TAR_BLOCK];
	uint64_t size;
	char *ext = NULL;
	static const unsigned char zero[TAR_BLOCK];

	if (t->pos + TAR_BLOCK > t->fsize)
		return t->pos == t->fsize ? 0 : tar_bad(t, "truncated", err);
	if (pread_full(t->s->fd, h, TAR_BLOCK, (off_t)t->pos) < 0)
		return err_set(err, errno ? errno : EIO, "archive '%s': read",
			       t->s->name);
	if (memcmp(h, zero, TAR_BLOCK) == 0)
		return 0;
	if (!tar_checksum_ok(h) || tar_number(h + 124, 12, &size) < 0)
		return tar_bad(t, "not a tar header (bad checksum or size)",
			       err);
	if (size > t->fsize - t->pos - TAR_BLOCK)
		return tar_bad(t, "member extends past the end of the file",
			       err);
	if (h[156] == 'x' || h[156] == 'L' || h[156] == 'K') {
		if (tar_ext_data(t, size, &ext, err) < 0)
			return -1;
		if (h[156] == 'x') {
			char *p = pax_value(ext, (size_t)size, "path");
			char *l = pax_value(ext, (size_t)size, "linkpath");
			char *sz = pax_value(ext, (size_t)size, "size");
			free(sz); /* a size here only matters for sparse
				     files, which blobs are not */
			if (p) {
				free(t->long_name);
				t->long_name = p;
			}
			if (l) {
				free(t->long_link);
				t->long_link = l;
			}
		} else if (h[156] == 'L') {
			free(t->long_name);
			t->long_name = ext;
			ext = NULL;
		} else {
			free(t->long_link);
			t->long_link = ext;
			ext = NULL;
		}
		free(ext);
	} else if (h[156] == '0' || h[156] == '\0' || h[156] == '2') {
		if (t->s->nmembers >= TAR_MAX_MEMBERS)
			return tar_bad(t, "more than 100000 members", err);
		tar_add(t, h, h[156] == '2' ? 0 : size);
	} else {
		free(t->long_name);
		free(t->long_link);
		t->long_name = t->long_link = NULL;
	}
	t->pos += TAR_BLOCK + (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
	return 1;
}

int store_open_tar(const char *path, struct store *s, mpictr_err **err)
{
	struct tar_scan t = {.s = s};
	struct stat st;
	int rc;

	memset(s, 0, sizeof(*s));
	s->dirfd = -1;
	s->name = xstrdup(path);
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		err_set(err, errno, "open archive '%s'", path);
		store_close(s);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(err, EINVAL, "archive '%s': not a regular file", path);
		store_close(s);
		return -1;
	}
	t.fsize = (uint64_t)st.st_size;
	while ((rc = tar_step(&t, err)) > 0)
		;
	free(t.long_name);
	free(t.long_link);
	if (rc < 0) {
		store_close(s);
		return -1;
	}
	return 0;
}

/* ---- lookups ---- */

static const struct tar_member *tar_find(const struct store *s,
					 const char *name)
{
	/* the last one wins, as when a tar is extracted */
	for (size_t i = s->nmembers; i-- > 0;)
		if (strcmp(s->members[i].name, name) == 0)
			return &s->members[i];
	return NULL;
}

/* Follow symlink members (docker save's "<id>/layer.tar" links). */
static const struct tar_member *tar_follow(const struct store *s,
					   const char *name)
{
	const struct tar_member *m = tar_find(s, name);

	for (int hops = 0; m && m->link && hops < 8; hops++) {
		cleanup_free char *joined = NULL, *norm = NULL;
		const char *slash = strrchr(m->name, '/');
		if (m->link[0] == '/')
			return NULL;
		joined = slash ? xasprintf("%.*s/%s", (int)(slash - m->name),
					   m->name, m->link)
			       : xstrdup(m->link);
		if (merge_norm_path(joined, &norm) < 0)
			return NULL;
		m = tar_find(s, norm);
	}
	return m && !m->link ? m : NULL;
}

int store_member(struct store *s, const char *name, struct blob *b,
		 mpictr_err **err)
{
	struct stat st;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	if (s->dirfd < 0) {
		const struct tar_member *m = tar_follow(s, name);
		if (!m)
			return err_set(err, ENOENT, "'%s': no member '%s'",
				       s->name, name);
		b->fd = s->fd;
		b->off = m->off;
		b->size = m->size;
		return 0;
	}
	b->fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0)
		return err_set(err, errno, "'%s/%s'", s->name, name);
	b->own = true;
	if (fstat(b->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		blob_close(b);
		return err_set(err, EINVAL, "'%s/%s': not a regular file",
			       s->name, name);
	}
	b->size = (uint64_t)st.st_size;
	return 0;
}

int store_blob(struct store *s, const char *digest, struct blob *b,
	       mpictr_err **err)
{
	cleanup_free char *name = NULL;

	if (!cache_digest_valid(digest))
		return err_set(err, EINVAL,
			       "'%s': digest '%s' is not sha256:<64 hex>",
			       s->name, digest ? digest : "(none)");
	if (s->dirfd >= 0) {
		/* the image cache: our own copy beside another member's
		 * (cache.h); only ours, and only a file (the digest is
		 * checked as the blob is read in any case) */
		cleanup_free char *own = xasprintf(
		    "blobs/sha256/%s.%u", digest + 7, (unsigned)geteuid());
		struct stat st;
		int fd =
		    openat(s->dirfd, own, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid()) {
			memset(b, 0, sizeof(*b));
			b->fd = fd;
			b->own = true;
			b->size = (uint64_t)st.st_size;
			return 0;
		}
		if (fd >= 0)
			close(fd);
	}
	name = xasprintf("blobs/sha256/%s", digest + 7);
	return store_member(s, name, b, err);
}

int blob_read(const struct blob *b, size_t max, const char *what, char **buf,
	      size_t *len, mpictr_err **err)
{
	*buf = NULL;
	if (b->size > max)
		return err_set(err, EFBIG, "%s: %llu bytes, at most %zu", what,
			       (unsigned long long)b->size, max);
	*buf = xmalloc((size_t)b->size + 1);
	if (pread_full(b->fd, *buf, (size_t)b->size, (off_t)b->off) < 0) {
		free(*buf);
		*buf = NULL;
		return err_set(err, errno ? errno : EIO, "%s: read", what);
	}
	(*buf)[b->size] = '\0';
	*len = (size_t)b->size;
	return 0;
}

json_t *store_json(struct store *s, const char *digest, size_t max,
		   const char *what, char **raw, size_t *rawlen,
		   mpictr_err **err)
{
	struct blob b;
	char *buf = NULL;
	size_t len = 0;
	char got[72];
	json_t *j = NULL;

	if (store_blob(s, digest, &b, err) < 0)
		return NULL;
	if (blob_read(&b, max, what, &buf, &len, err) == 0) {
		sha256_digest(buf, len, got);
		if (strcmp(got, digest) != 0)
			err_set(err, EBADMSG,
				"%s: digest mismatch: the blob is %s, its "
				"reference says %s",
				what, got, digest);
		else
			j = json_parse(buf, len, what, err);
	}
	blob_close(&b);
	if (j && raw) {
		*raw = buf;
		*rawlen = len;
	} else {
		free(buf);
	}
	return j;
}
