/* testutil.h - helpers shared by the Check suites. */
#ifndef MPICTR_TESTUTIL_H
#define MPICTR_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* Root of the source tree (MPICTR_TEST_ROOT, set by make), or ".". */
static inline const char *test_root(void)
{
	const char *r = getenv("MPICTR_TEST_ROOT");
	return r && *r ? r : ".";
}

/* Entries of dir other than "." and "..": 0 when a test left nothing. */
static inline int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

#endif
