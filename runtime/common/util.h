/* util.h - small helpers shared by every module: scope-bound cleanup,
 * allocators that abort on out-of-memory, a growable string buffer with a
 * JSON writer, NULL-terminated string vectors, and full read/write loops.
 */
#ifndef MPICTR_UTIL_H
#define MPICTR_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef MPICTR_VERSION_STRING
#define MPICTR_VERSION_STRING "0.1.0"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TEMP_FAILURE_RETRY
#define TEMP_FAILURE_RETRY(expr)                                               \
	({                                                                     \
		long _r;                                                       \
		do                                                             \
			_r = (long)(expr);                                     \
		while (_r == -1L && errno == EINTR);                           \
		_r;                                                            \
	})
#endif

/* ---- cleanup attributes ---- */
void cleanup_freep(void *p);
void cleanup_closep(int *fd);
void cleanup_fclosep(FILE **f);
void cleanup_strvp(char ***v);
#define cleanup_free __attribute__((cleanup(cleanup_freep)))
#define cleanup_close __attribute__((cleanup(cleanup_closep)))
#define cleanup_fclose __attribute__((cleanup(cleanup_fclosep)))
#define cleanup_strv __attribute__((cleanup(cleanup_strvp)))

/* Take ownership out of a cleanup variable. */
static inline void *steal_ptr(void *pp)
{
	void **p = pp;
	void *v = *p;
	*p = NULL;
	return v;
}
static inline int steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

/* ---- allocation: abort on OOM (documented in mpictr.h) ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));

/* ---- string buffer ---- */
struct strbuf {
	char *buf; /* always NUL-terminated once anything was added */
	size_t len;
	size_t cap;
};
#define STRBUF_INIT                                                            \
	{                                                                      \
		NULL, 0, 0                                                     \
	}
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putc(struct strbuf *sb, char c);
void sb_printf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal, quotes included. NULL gives null. */
void sb_json_str(struct strbuf *sb, const char *s);
/* Append the NULL-terminated v as a JSON array of strings; NULL gives []. */
void sb_json_strv(struct strbuf *sb, char *const *v);
/* Return the buffer (never NULL) and reset sb. */
char *sb_steal(struct strbuf *sb);
void sb_free(struct strbuf *sb);

/* ---- JSON writer: the separators and the layout, on a strbuf ----
 * Every member goes through jw_*, which puts the comma, the line break
 * and the indent its container's layout asks for; key is NULL for the
 * top value and in arrays:
 *	struct jw w = {.sb = &sb};
 *	jw_obj(&w, NULL, &jw_lines);
 *	jw_str(&w, "path", p);		  -> {\n  "path": "/x"
 *	jw_strv(&w, "argv", v);		  -> ,\n  "argv": ["a", "b"]
 *	jw_end(&w);			  -> \n}
 */
struct jw_layout {
	const char *first; /* before the first member */
	const char *next;  /* between two members */
	const char *last;  /* after the last one, when there was one */
};
/* {"a": 1, "b": 2} */
extern const struct jw_layout jw_inline;
/* One member a line, two spaces in: the top of --dry-run and inspect. */
extern const struct jw_layout jw_lines;
/* One member a line, four spaces in: a list in a jw_lines object. */
extern const struct jw_layout jw_lines2;
#define JW_DEPTH 8 /* containers open at once */
struct jw {
	struct strbuf *sb;
	int depth;
	struct jw_level {
		const struct jw_layout *layout;
		size_t n; /* members so far */
		char close;
	} lv[JW_DEPTH];
};
/* Open an object or array (member key of the open object; NULL in an
 * array or at the top) whose members are laid out as layout says. */
void jw_obj(struct jw *w, const char *key, const struct jw_layout *layout);
void jw_arr(struct jw *w, const char *key, const struct jw_layout *layout);
void jw_end(struct jw *w);
/* Lay the open container's next members out as layout says. */
void jw_relayout(struct jw *w, const struct jw_layout *layout);
/* The separator and "key": of the next member, whose value the caller
 * writes to w->sb itself. */
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *key, const char *s);   /* NULL: null */
void jw_strv(struct jw *w, const char *key, char *const *v); /* NULL: [] */
/* NULL (absent, not empty): null */
void jw_strv_null(struct jw *w, const char *key, char *const *v);
void jw_bool(struct jw *w, const char *key, bool b);
void jw_int(struct jw *w, const char *key, long long v);
void jw_uint(struct jw *w, const char *key, unsigned long long v);
void jw_null(struct jw *w, const char *key);

/* ---- string vectors (NULL-terminated char *[]) ---- */
size_t strv_len(char *const *v);
void strv_push(char ***v, const char *s); /* copies s */
void strv_push_own(char ***v, char *s);	  /* takes s */
char **strv_dup(char *const *v);
void strv_free(char **v);
/* Is s one of v's strings (v may be NULL)? */
bool strv_contains(char *const *v, const char *s);
/* Sort v in place: bytewise (strcmp, the C locale's glob order) or, with
 * version, as dir_names does (strverscmp). NULL is a no-op. */
void strv_sort(char **v, bool version);
/* The entry names of directory path, without those starting with '.',
 * in strverscmp order; NULL when it cannot be read or has none. */
char **dir_names(const char *path);
/* For "NAME=VALUE" vectors: find, set (replace or append), remove. */
const char *env_get(char *const *env, const char *name);
/* The index of NAME=... in env, or -1. */
ssize_t env_find(char *const *env, const char *name);
void env_set(char ***env, const char *name, const char *value);
void env_unset(char ***env, const char *name);

/* ---- I/O (sets errno on error) ---- */
/* Read exactly n bytes at off; returns 0, or -1 with errno (EIO on EOF). */
int pread_full(int fd, void *buf, size_t n, off_t off);
int write_full(int fd, const void *buf, size_t n);
/* Read a whole small file (at most max bytes) into a NUL-terminated buffer.
 * Returns NULL with errno set (EFBIG when larger than max). */
/* The path the kernel has for descriptor fd (readlink of
 * /proc/self/fd/N), or NULL. Caller frees. */
char *fd_path_dup(int fd);
char *read_file(const char *path, size_t max, size_t *len);
/* Write s to path (O_WRONLY, no create/truncate semantics beyond open flags
 * given). Returns 0 or -1 with errno. */
int write_file(const char *path, const char *s, int flags);

/* Close every descriptor >= 3 except the nkeep listed (for freshly forked
 * helpers that must not hold their siblings' pipes open). */
void close_all_fds_except(const int *keep, size_t nkeep);

/* Parse a decimal integer in [min,max]; the whole string must be a number.
 * Returns 0 or -1 with errno (EINVAL, ERANGE). */
int parse_long(const char *s, long min, long max, long *out);

/* Is s[0..n) a valid environment variable name (letters, digits, '_',
 * not starting with a digit)? */
bool env_name_valid(const char *s, size_t n);
/* One line of an environment file (--env-file, Enroot's /etc/environment):
 * NAME=VALUE, an optional 'export ', one pair of quotes around VALUE
 * stripped; changes line in place. 1 with *name and *value pointing into
 * it, 0 for a blank line or a comment, -1 for anything else. */
int env_line_parse(char *line, char **name, char **value);
/* Is text (NUL-terminated) one JSON object (RFC 8259's grammar, nesting
 * at most 64 deep)? For embedding untrusted JSON in JSON output. */
bool json_object_valid(const char *text);

/* FNV-1a, 64 bits: start from FNV1A_INIT. fnv1a_str tells NULL apart
 * from ""; fnv1a_u64 hashes the 8 bytes of v (little end first). Not
 * keyed: for digests of what is ours, never for names others must not
 * predict (rendezvous.h has SipHash for those). */
#define FNV1A_INIT 0xcbf29ce484222325ULL
uint64_t fnv1a_str(uint64_t h, const char *s);
uint64_t fnv1a_u64(uint64_t h, uint64_t v);

/* True when a and b are equal C strings (both may be NULL). */
bool streq0(const char *a, const char *b);
bool str_has_prefix(const char *s, const char *prefix);

/* path with "//", "/./" and a trailing '/' collapsed ("" and "/" give
 * "/"); ".." is kept: callers that must refuse it use has_dotdot(). */
char *clean_path(const char *path);
/* Does path have a ".." component? */
bool has_dotdot(const char *path);

#endif
