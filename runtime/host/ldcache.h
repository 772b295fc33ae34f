/* ldcache.h - glibc's ld.so.cache, read without running ldconfig. */
#ifndef MPICTR_LDCACHE_H
#define MPICTR_LDCACHE_H

#include <stddef.h>

#include "mpictr.h"

/* Parse a glibc ld.so.cache ("glibc-ld.so.cache1.1", alone or after the
 * old "ld.so-1.7.0" table) in buf[0..len) and push the key (soname) and
 * value (path) of each native (this architecture's libc6) entry, first
 * entry per key (the cache lists the preferred one first), to *keys and
 * *values. Every offset is checked against len; a malformed or
 * foreign-format buffer adds nothing. Pure. */
void ldcache_parse(const char *buf, size_t len, char ***keys, char ***values);

/* Read the ld cache at path into two parallel vectors (*keys, *values;
 * caller frees), as ldcache_parse. -1 with *err when the file cannot be
 * read (at most 64 MiB). */
int ldcache_read(const char *path, char ***keys, char ***values,
		 mpictr_err **err);

#endif
