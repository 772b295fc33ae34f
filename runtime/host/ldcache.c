/* ldcache.c - read glibc's ld.so.cache (what `ldconfig -p` prints), to find
 * the host's NVIDIA driver libraries. ldcache_parse is pure and fuzzed
 * (tests/fuzz/fuzz_ldcache.c): the file is the host's, but under
 * MPICTR_SYSROOT it is any file the user names.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "host/ldcache.h"
#include "common/util.h"

#define LDCACHE_OLD_MAGIC "ld.so-1.7.0"
#define LDCACHE_NEW_MAGIC "glibc-ld.so.cache1.1"
#define LDCACHE_FLAG_LIBC6 0x0003
#if defined(__x86_64__)
#define LDCACHE_NATIVE 0x0303
#elif defined(__aarch64__)
#define LDCACHE_NATIVE 0x0a03
#elif defined(__powerpc64__)
#define LDCACHE_NATIVE 0x0503
#else
#define LDCACHE_NATIVE 0
#endif

static bool ldcache_native(int32_t flags)
{
	if (LDCACHE_NATIVE)
		return flags == LDCACHE_NATIVE;
	return (flags & 0xff) == LDCACHE_FLAG_LIBC6;
}

void ldcache_parse(const char *buf, size_t len, char ***keys, char ***values)
{
	size_t off = 0, nlibs, hdr = 48, ent = 24;
	uint32_t n32;

	if (len >= 16 && memcmp(buf, LDCACHE_OLD_MAGIC, 11) == 0) {
		memcpy(&n32, buf + 12, 4);
		if (n32 > (len - 16) / 12)
			return;
		off = 16 + (size_t)n32 * 12;
		off = (off + 7) & ~(size_t)7; /* alignment of the new header */
	}
	if (off > len || len - off < hdr ||
	    memcmp(buf + off, LDCACHE_NEW_MAGIC, 20) != 0)
		return;
	memcpy(&n32, buf + off + 20, 4);
	nlibs = n32;
	if (nlibs > (len - off - hdr) / ent)
		return;
	for (size_t i = 0; i < nlibs; i++) {
		const char *e = buf + off + hdr + i * ent;
		int32_t flags;
		uint32_t k, v;
		const char *key, *val;

		memcpy(&flags, e, 4);
		memcpy(&k, e + 4, 4);
		memcpy(&v, e + 8, 4);
		/* String offsets count from the new header. */
		if (k >= len - off || v >= len - off)
			continue;
		key = buf + off + k;
		val = buf + off + v;
		if (!memchr(key, 0, len - off - k) ||
		    !memchr(val, 0, len - off - v) || !ldcache_native(flags))
			continue;
		if (strv_contains(*keys, key))
			continue;
		strv_push(keys, key);
		strv_push(values, val);
	}
}

int ldcache_read(const char *path, char ***keys, char ***values,
		 mpictr_err **err)
{
	cleanup_free char *buf = NULL;
	size_t len;

	*keys = *values = NULL;
	buf = read_file(path, 64 << 20, &len);
	if (!buf)
		return err_set(err, errno, "read ld cache '%s'", path);
	ldcache_parse(buf, len, keys, values);
	return 0;
}
