/* fuzz_squash.c - libFuzzer target for the squash plugin's image reader
 * (sif/squash.c squash_image_open/list/stat/read/pread): the input is a
 * squashfs image, written to a memfd and opened through /proc/self/fd. The
 * target walks the tree it finds (bounded: depth, entries per directory),
 * stats every name with its canonical path, reads every regular file and
 * resolves a few fixed paths that exercise "..", symlinks and loops. The
 * invariants: every failure carries a message; a canonical path starts
 * with '/' and has no "." or ".." component; a read returns the size stat
 * gave. libsquashfuse itself is the distribution's (not instrumented): a
 * crash in it still stops the run. Build with `make fuzz`; seeds in
 * tests/fuzz/corpus/squash/ (tests/fuzz/mkseeds-squash.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sif/squash.h"
#include "common/util.h"

#include "fuzz_check.h"

#define WALK_DEPTH 6
#define WALK_ENTRIES 32
#define READ_MAX (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* stat (with canon), then read a regular file and compare its size. */
static void visit(struct squash_image *h, const char *path)
{
	mpictr_err *err = NULL;
	char *canon = NULL, *buf = NULL, small[16];
	mode_t mode;
	uint64_t size;
	size_t len;

	if (squash_image_stat(h, path, &mode, &size, &canon, &err) < 0) {
		check_failed(&err);
		return;
	}
	check_canon(canon);
	free(canon);
	if (!S_ISREG(mode))
		return;
	if (squash_image_read(h, path, READ_MAX, &buf, &len, &err) < 0) {
		check_failed(&err);
	} else {
		if (len != size || buf[len] != '\0')
			abort();
		free(buf);
	}
	if (squash_image_pread(h, path, small, sizeof(small), size / 2, &err) <
	    0)
		check_failed(&err);
}

static void walk(struct squash_image *h, const char *dir, int depth)
{
	mpictr_err *err = NULL;
	char **names = NULL;

	if (squash_image_list(h, dir, WALK_ENTRIES, &names, &err) < 0) {
		check_failed(&err);
		return;
	}
	for (size_t i = 0; names && names[i]; i++) {
		char *p = xasprintf("%s/%s", strcmp(dir, "/") ? dir : "",
				    names[i]);

		if (!names[i][0] || strchr(names[i], '/'))
			abort(); /* a name is one component */
		visit(h, p);
		if (depth < WALK_DEPTH)
			walk(h, p, depth + 1);
		free(p);
	}
	strv_free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fixed[] = {
	    "/",	 "..",	      "/../..", "/a/../../b", "/etc/passwd",
	    "/l/..",	 "/loop",     "/l/x",	"/d/../l",    "/./a/./b",
	    "/long/l/x", "/etc/profile.d"};
	static int fd = -1;
	static char path[64];
	struct squash_image *h = NULL;
	mpictr_err *err = NULL;

	if (fd < 0) {
		fd = memfd_create("fuzz.sqfs", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    write_full(fd, data, size) < 0)
		abort();
	if (squash_image_open(path, 0, &h, &err) < 0) {
		check_failed(&err);
		return 0;
	}
	walk(h, "/", 0);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		visit(h, fixed[i]);
	squash_image_close(h);
	return 0;
}
