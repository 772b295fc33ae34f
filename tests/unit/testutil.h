/* testutil.h - helpers shared by the Check suites. */
#ifndef MPICTR_TESTUTIL_H
#define MPICTR_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Root of the source tree (MPICTR_TEST_ROOT, set by make), or ".". */
static inline const char *test_root(void)
{
	const char *r = getenv("MPICTR_TEST_ROOT");
	return r && *r ? r : ".";
}

/* Are the SIF conformance images (../shared/conformance/sif/ beside the
 * tree) there? Without ../shared (a fresh clone) a suite leaves its n
 * checks that read them out, with one line saying so; under CI (CI=true)
 * they always run, so a CI without them fails. */
static inline bool test_have_conformance(const char *suite, int n)
{
	char dir[4096];
	struct stat st;
	const char *ci = getenv("CI");

	snprintf(dir, sizeof(dir), "%s/../shared/conformance/sif/",
		 test_root());
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	if (ci && strcmp(ci, "true") == 0)
		return true;
	fprintf(stderr,
		"%s: %d conformance checks skipped: no '%s' (the SIF "
		"conformance images, in ../shared beside the tree)\n",
		suite, n, dir);
	return false;
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
