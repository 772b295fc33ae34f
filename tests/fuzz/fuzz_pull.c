/* fuzz_pull.c - libFuzzer target for what `mpictr pull` does with a
 * hostile archive (runtime/pull/: libarchive, libsquashfs and jansson
 * linked as the plugin links them): the input is indexed as an
 * oci-archive/docker-archive tar (store.c's own header reader), then
 * merged as one uncompressed layer into a squashfs (merge.c, sqfs.c), in
 * memory files. Every failure has a message; nothing crashes or leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "pull/merge.h"
#include "pull/oci.h"
#include "pull/sqfs.h"
#include "pull/store.h"

static void failed(mpictr_err **err)
{
	if (!*err || !mpictr_err_message(*err)[0])
		abort();
	mpictr_err_free(*err);
	*err = NULL;
}

static void index_it(int fd)
{
	cleanup_free char *path = xasprintf("/proc/self/fd/%d", fd);
	struct store s;
	struct blob b;
	mpictr_err *err = NULL;

	if (store_open_tar(path, &s, &err) < 0) {
		failed(&err);
		return;
	}
	for (size_t i = 0; i < s.nmembers; i++)
		if (store_member(&s, s.members[i].name, &b, &err) == 0)
			blob_close(&b);
		else
			failed(&err);
	store_close(&s);
}

static void merge_it(int fd, const uint8_t *data, size_t size)
{
	struct layer_src l = {.fd = fd, .off = 0, .size = size};
	struct pull_stats st = {0};
	struct sqw *w = NULL;
	struct tree t;
	mpictr_err *err = NULL;
	uint64_t sq = 0;
	int out = memfd_create("sqfs", 0);

	sha256_digest(data, size, l.digest);
	if (out < 0 || sqw_open(out, 0, 1, "fuzz", &w, &err) < 0)
		abort();
	tree_init(&t);
	if (merge_layers(&t, w, &l, 1, "fuzz", 100, &st, &err) == 0) {
		if (sqw_finish(w, &t, 0, &sq, &err) < 0)
			failed(&err);
	} else {
		failed(&err);
	}
	sqw_free(w);
	tree_free(&t);
	close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("layer", 0);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	index_it(fd);
	merge_it(fd, data, size);
	close(fd);
	return 0;
}
