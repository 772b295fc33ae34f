/* fuzz_imgread.c - libFuzzer target for reading a directory image without
 * mounting it (runtime/host/imgread.c: paths resolved below the image's root,
 * listing, stat with the canonical path, bounded reads). The input is a
 * script, one command a line:
 *   d PATH          a directory      f PATH TEXT   a file
 *   l PATH TARGET   a symlink        ? PATH        list, stat, read PATH
 * The tree is made below a fresh root (each entry created in its parent
 * resolved inside the root, so the script itself never writes outside),
 * next to a file "secret" outside the root. The invariants: no read
 * returns the secret; a canonical path starts with '/' and has no "." or
 * ".." component; a listing is sorted and has no dot names; a read has
 * the size stat gave; every failure carries a message. Build with
 * `make fuzz`; seeds in tests/fuzz/corpus/imgread/. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/imgread.h"
#include "common/proc.h"
#include "common/syscalls.h"
#include "common/util.h"

#include "fuzz_check.h"

#define SECRET "the secret outside the root"
#define MAX_LINES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Create what one d/f/l line says, in its parent resolved in the root. */
static void make_entry(int root, char kind, char *path, const char *arg)
{
	char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int dfd, fd;

	if (slash)
		*slash = '\0';
	dfd = slash ? sys_openat_in_root(root, path[0] ? path : "/",
					 O_PATH | O_DIRECTORY | O_CLOEXEC)
		    : dup(root);
	if (dfd < 0)
		return;
	if (kind == 'd' && mkdirat(dfd, base, 0755) < 0) {
		/* exists, or a bad name: the script goes on */
	} else if (kind == 'l' && symlinkat(arg, dfd, base) < 0) {
		/* as above */
	} else if (kind == 'f' && !strstr(arg, SECRET)) {
		/* (the secret is what a read must never see) */
		fd = openat(dfd, base,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0644);
		if (fd >= 0) {
			if (write_full(fd, arg, strlen(arg)) < 0)
				abort();
			close(fd);
		}
	}
	close(dfd);
}

static void query(struct image_reader *r, const char *path)
{
	mpictr_err *err = NULL;
	char **names = NULL, *canon = NULL, *buf = NULL;
	mode_t mode;
	uint64_t size;
	size_t len;

	if (image_reader_list(r, path, &names, &err) < 0) {
		check_failed(&err);
	} else {
		for (size_t i = 0; names && names[i]; i++)
			if (names[i][0] == '.' ||
			    (i && strcmp(names[i - 1], names[i]) >= 0))
				abort();
		strv_free(names);
	}
	if (image_reader_stat(r, path, &mode, &size, &canon, &err) < 0) {
		check_failed(&err);
		return;
	}
	check_canon(canon);
	free(canon);
	if (image_reader_read(r, path, 4096, &buf, &len, &err) < 0) {
		check_failed(&err);
		return;
	}
	if (strstr(buf, SECRET) || (S_ISREG(mode) && len != size))
		abort();
	free(buf);
}

static void run_script(const char *dir, int root, char *script)
{
	struct image_reader *r = NULL;
	mpictr_err *err = NULL;
	char *save = NULL, *line;
	int n = 0;

	for (line = strtok_r(script, "\n", &save); line && n < MAX_LINES;
	     line = strtok_r(NULL, "\n", &save), n++) {
		char *path, *arg;

		if (strlen(line) < 3 || line[1] != ' ')
			continue;
		path = line + 2;
		arg = strchr(path, ' ');
		if (arg)
			*arg++ = '\0';
		if (line[0] == '?') {
			if (!r && image_reader_open_dir(dir, &r, &err) < 0)
				abort();
			query(r, path);
		} else if (strchr("dfl", line[0]) && !r) {
			make_entry(root, line[0], path, arg ? arg : "");
		}
	}
	image_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char tmpl[] = "/tmp/fuzz-imgread.XXXXXX";
	char *script, *dir, *secret;
	int fd, root;

	if (size > 8192 || !mkdtemp(tmpl))
		return 0;
	dir = xasprintf("%s/root", tmpl);
	secret = xasprintf("%s/secret", tmpl);
	fd = open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write_full(fd, SECRET, strlen(SECRET)) < 0 ||
	    mkdir(dir, 0755) < 0)
		abort();
	close(fd);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		abort();
	script = xmalloc(size + 1);
	memcpy(script, data, size);
	script[size] = '\0';
	run_script(dir, root, script);
	free(script);
	close(root);
	if (rm_rf(tmpl) < 0)
		abort();
	free(dir);
	free(secret);
	return 0;
}
