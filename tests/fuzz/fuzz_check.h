/* fuzz_check.h - the invariants the image-reader fuzz targets share
 * (fuzz_squash.c, fuzz_imgread.c): each aborts, which libFuzzer reports
 * as a crash, when one is broken. */
#ifndef MPICTR_FUZZ_CHECK_H
#define MPICTR_FUZZ_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "mpictr.h"

/* A failure: its error has a message; *err is reset for the next call. */
static inline void check_failed(mpictr_err **err)
{
	if (!*err || !mpictr_err_message(*err)[0])
		abort();
	mpictr_err_free(*err);
	*err = NULL;
}

/* A canonical path inside an image: absolute, no "." or ".." or empty
 * component. */
static inline void check_canon(const char *canon)
{
	const char *s = canon;

	if (canon[0] != '/')
		abort();
	while ((s = strchr(s, '/'))) {
		s++;
		if (s[0] == '/' ||
		    (s[0] == '.' && (s[1] == '/' || !s[1] ||
				     (s[1] == '.' && (s[2] == '/' || !s[2])))))
			abort();
	}
}

#endif
