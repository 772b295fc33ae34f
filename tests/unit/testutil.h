/* testutil.h - helpers shared by the Check suites. */
#ifndef MPICTR_TESTUTIL_H
#define MPICTR_TESTUTIL_H

#include <stdlib.h>

/* Root of the source tree (MPICTR_TEST_ROOT, set by make), or ".". */
static inline const char *test_root(void)
{
	const char *r = getenv("MPICTR_TEST_ROOT");
	return r && *r ? r : ".";
}

#endif
