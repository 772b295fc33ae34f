/* util.c - allocation, string buffer, JSON writer, string vectors and I/O
 * helpers. */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"

void cleanup_freep(void *p)
{
	free(*(void **)p);
}

void cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

void cleanup_fclosep(FILE **f)
{
	if (*f) {
		int saved = errno;
		fclose(*f);
		errno = saved;
	}
}

void cleanup_strvp(char ***v)
{
	strv_free(*v);
}

static void oom(void)
{
	static const char msg[] = "mpictr: out of memory\n";
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		oom();
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

static void sb_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;

	if (need <= sb->cap)
		return;
	if (sb->cap == 0)
		sb->cap = 64;
	while (sb->cap < need)
		sb->cap *= 2;
	sb->buf = xrealloc(sb->buf, sb->cap);
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sb_puts(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_putc(struct strbuf *sb, char c)
{
	sb_add(sb, &c, 1);
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	sb_puts(sb, s);
	free(s);
}

void sb_json_str(struct strbuf *sb, const char *s)
{
	if (!s) {
		sb_puts(sb, "null");
		return;
	}
	sb_putc(sb, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			sb_puts(sb, "\\\"");
			break;
		case '\\':
			sb_puts(sb, "\\\\");
			break;
		case '\n':
			sb_puts(sb, "\\n");
			break;
		case '\t':
			sb_puts(sb, "\\t");
			break;
		case '\r':
			sb_puts(sb, "\\r");
			break;
		default:
			if (*p < 0x20)
				sb_printf(sb, "\\u%04x", *p);
			else
				sb_putc(sb, (char)*p);
		}
	}
	sb_putc(sb, '"');
}

void sb_json_strv(struct strbuf *sb, char *const *v)
{
	sb_putc(sb, '[');
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			sb_puts(sb, ", ");
		sb_json_str(sb, v[i]);
	}
	sb_putc(sb, ']');
}

const struct jw_layout jw_inline = {"", ", ", ""};
const struct jw_layout jw_lines = {"\n  ", ",\n  ", "\n"};
const struct jw_layout jw_lines2 = {"\n    ", ",\n    ", "\n  "};

void jw_key(struct jw *w, const char *key)
{
	if (w->depth > 0) {
		struct jw_level *l = &w->lv[w->depth - 1];
		sb_puts(w->sb, l->n++ ? l->layout->next : l->layout->first);
	}
	if (key) {
		sb_json_str(w->sb, key);
		sb_puts(w->sb, ": ");
	}
}

static void jw_open(struct jw *w, const char *key,
		    const struct jw_layout *layout, char open, char close)
{
	jw_key(w, key);
	sb_putc(w->sb, open);
	/* a nesting deeper than JW_DEPTH is a bug of the caller's shape */
	assert(w->depth < JW_DEPTH);
	w->lv[w->depth++] = (struct jw_level){layout, 0, close};
}

void jw_obj(struct jw *w, const char *key, const struct jw_layout *layout)
{
	jw_open(w, key, layout, '{', '}');
}

void jw_arr(struct jw *w, const char *key, const struct jw_layout *layout)
{
	jw_open(w, key, layout, '[', ']');
}

void jw_end(struct jw *w)
{
	struct jw_level *l = &w->lv[--w->depth];

	if (l->n)
		sb_puts(w->sb, l->layout->last);
	sb_putc(w->sb, l->close);
}

void jw_relayout(struct jw *w, const struct jw_layout *layout)
{
	w->lv[w->depth - 1].layout = layout;
}

void jw_str(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	sb_json_str(w->sb, s);
}

void jw_strv(struct jw *w, const char *key, char *const *v)
{
	jw_key(w, key);
	sb_json_strv(w->sb, v);
}

void jw_strv_null(struct jw *w, const char *key, char *const *v)
{
	if (v)
		jw_strv(w, key, v);
	else
		jw_null(w, key);
}

void jw_bool(struct jw *w, const char *key, bool b)
{
	jw_key(w, key);
	sb_puts(w->sb, b ? "true" : "false");
}

void jw_int(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	sb_printf(w->sb, "%lld", v);
}

void jw_uint(struct jw *w, const char *key, unsigned long long v)
{
	jw_key(w, key);
	sb_printf(w->sb, "%llu", v);
}

void jw_null(struct jw *w, const char *key)
{
	jw_key(w, key);
	sb_puts(w->sb, "null");
}

char *sb_steal(struct strbuf *sb)
{
	char *s = sb->buf ? sb->buf : xstrdup("");
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return s;
}

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

void strv_push_own(char ***v, char *s)
{
	size_t n = strv_len(*v);
	*v = xrealloc(*v, (n + 2) * sizeof(char *));
	(*v)[n] = s;
	(*v)[n + 1] = NULL;
}

void strv_push(char ***v, const char *s)
{
	strv_push_own(v, xstrdup(s));
}

char **strv_dup(char *const *v)
{
	char **out = xcalloc(strv_len(v) + 1, sizeof(char *));
	for (size_t i = 0; v && v[i]; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

bool strv_contains(char *const *v, const char *s)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static int name_cmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

char **dir_names(const char *path)
{
	DIR *d = opendir(path);
	char **v = NULL;
	struct dirent *e;

	if (!d)
		return NULL;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			strv_push(&v, e->d_name);
	closedir(d);
	strv_sort(v, true);
	return v;
}

static int byte_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **v, bool version)
{
	if (v)
		qsort(v, strv_len(v), sizeof(char *),
		      version ? name_cmp : byte_cmp);
}

ssize_t env_find(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return (ssize_t)i;
	return -1;
}

const char *env_get(char *const *env, const char *name)
{
	ssize_t i = env_find(env, name);
	return i < 0 ? NULL : env[i] + strlen(name) + 1;
}

void env_set(char ***env, const char *name, const char *value)
{
	ssize_t i = env_find(*env, name);
	char *kv = xasprintf("%s=%s", name, value);

	if (i < 0) {
		strv_push_own(env, kv);
		return;
	}
	free((*env)[i]);
	(*env)[i] = kv;
}

void env_unset(char ***env, const char *name)
{
	ssize_t i = env_find(*env, name);
	size_t n;

	if (i < 0)
		return;
	n = strv_len(*env);
	free((*env)[i]);
	memmove(&(*env)[i], &(*env)[i + 1], (n - (size_t)i) * sizeof(char *));
}

int pread_full(int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = TEMP_FAILURE_RETRY(pread(fd, p, n, off));
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t r = TEMP_FAILURE_RETRY(write(fd, p, n));
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

char *read_file(const char *path, size_t max, size_t *len)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf)));
		if (r < 0) {
			int saved = errno;
			sb_free(&sb);
			errno = saved;
			return NULL;
		}
		if (r == 0)
			break;
		if (sb.len + (size_t)r > max) {
			sb_free(&sb);
			errno = EFBIG;
			return NULL;
		}
		sb_add(&sb, buf, (size_t)r);
	}
	if (len)
		*len = sb.len;
	return sb_steal(&sb);
}

int write_file(const char *path, const char *s, int flags)
{
	cleanup_close int fd = open(path, flags | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	return write_full(fd, s, strlen(s));
}

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0') {
		errno = EINVAL;
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h * 0x100000001b3ULL;
}

uint64_t fnv1a_str(uint64_t h, const char *s)
{
	return s ? fnv1a(h ^ 1, s) : fnv1a(h ^ 2, "");
}

uint64_t fnv1a_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

bool streq0(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

void close_all_fds_except(const int *keep, size_t nkeep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int *list = NULL;
	size_t n = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		long fd;
		bool kept = false;

		if (parse_long(de->d_name, 3, INT_MAX, &fd) < 0 ||
		    fd == dirfd(d))
			continue;
		for (size_t i = 0; i < nkeep; i++)
			kept |= keep[i] == fd;
		if (!kept) {
			list = xrealloc(list, (n + 1) * sizeof(*list));
			list[n++] = (int)fd;
		}
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		close(list[i]);
	free(list);
}

bool env_name_valid(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* ---- a small JSON validator (RFC 8259 grammar, bounded depth) ---- */

#define JSON_MAX_DEPTH 64

static const char *json_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *json_value(const char *p, const char *e, int depth);

static const char *json_string(const char *p, const char *e)
{
	if (p >= e || *p != '"')
		return NULL;
	for (p++; p < e; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			if (++p >= e || !strchr("\"\\/bfnrtu", *p))
				return NULL;
			if (*p == 'u') {
				for (int i = 0; i < 4; i++)
					if (++p >= e ||
					    !strchr("0123456789abcdefABCDEF",
						    *p))
						return NULL;
			}
		}
	}
	return NULL;
}

static const char *json_number(const char *p, const char *e)
{
	const char *s = p;

	if (p < e && *p == '-')
		p++;
	if (p >= e || *p < '0' || *p > '9')
		return NULL;
	while (p < e && ((*p >= '0' && *p <= '9') || strchr(".eE+-", *p)))
		p++;
	return p > s ? p : NULL;
}

/* An object or array at p (its opening bracket). */
static const char *json_container(const char *p, const char *e, int depth)
{
	char close = *p == '{' ? '}' : ']';
	bool obj = *p == '{';

	p = json_ws(p + 1, e);
	if (p < e && *p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			p = json_string(p, e);
			if (!p)
				return NULL;
			p = json_ws(p, e);
			if (p >= e || *p != ':')
				return NULL;
			p++;
		}
		p = json_value(p, e, depth + 1);
		if (!p)
			return NULL;
		p = json_ws(p, e);
		if (p < e && *p == ',') {
			p = json_ws(p + 1, e);
			continue;
		}
		return p < e && *p == close ? p + 1 : NULL;
	}
}

static const char *json_value(const char *p, const char *e, int depth)
{
	static const char *const words[] = {"true", "false", "null"};

	p = json_ws(p, e);
	if (p >= e || depth > JSON_MAX_DEPTH)
		return NULL;
	if (*p == '{' || *p == '[')
		return json_container(p, e, depth);
	if (*p == '"')
		return json_string(p, e);
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		size_t l = strlen(words[i]);
		if ((size_t)(e - p) >= l && memcmp(p, words[i], l) == 0)
			return p + l;
	}
	return json_number(p, e);
}

bool json_object_valid(const char *text)
{
	const char *e = text + strlen(text);
	const char *p = json_ws(text, e);

	if (p >= e || *p != '{')
		return false;
	p = json_value(p, e, 0);
	return p && json_ws(p, e) == e;
}

int env_line_parse(char *line, char **name, char **value)
{
	char *eq, *v;
	size_t vl;

	line += strspn(line, " \t");
	if (!*line || *line == '#' || *line == '\r')
		return 0;
	if (str_has_prefix(line, "export "))
		line += 7 + strspn(line + 7, " \t");
	eq = strchr(line, '=');
	if (!eq || !env_name_valid(line, (size_t)(eq - line)))
		return -1;
	*eq = '\0';
	v = eq + 1;
	vl = strlen(v);
	while (vl &&
	       (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
		v[--vl] = '\0';
	if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
		v[vl - 1] = '\0';
		v++;
	}
	*name = line;
	*value = v;
	return 1;
}

char *fd_path_dup(int fd)
{
	char link[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

char *clean_path(const char *path)
{
	/* Collapse "//", "/./" and trailing "/"; ".." is rejected by the
	 * callers that need it to be. */
	struct strbuf sb = STRBUF_INIT;
	const char *s = path;

	while (*s) {
		const char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if (!(n == 1 && s[0] == '.')) {
			sb_putc(&sb, '/');
			sb_add(&sb, s, n);
		}
		s = e;
	}
	if (sb.len == 0)
		sb_putc(&sb, '/');
	return sb_steal(&sb);
}

bool has_dotdot(const char *path)
{
	for (const char *s = path; (s = strstr(s, "..")); s += 2)
		if ((s == path || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return true;
	return false;
}
