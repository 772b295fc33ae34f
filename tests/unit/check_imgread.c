/* check_imgread.c - the image reader of squashfs images (runtime/host/imgread.c):
 * its answers through the reader child, and what a reader that dies (as a
 * crash in libsquashfuse would kill it) leaves: a broken reader whose every
 * call fails with a message naming the image and the signal, and no
 * process. The image is packed here with mksquashfs. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "host/imgread.h"
#include "common/proc.h"
#include "testutil.h"
#include "common/util.h"

static char tmpl[] = "/tmp/mpictr-imgread.XXXXXX";
static char *dir;

/* A squashfs image of a tree with /etc/f ("hello\n") and an env script. */
static char *make_image(void)
{
	char *src, *img, *cmd;
	int rc;

	dir = mkdtemp(tmpl);
	ck_assert_ptr_nonnull(dir);
	src = xasprintf("%s/src", dir);
	img = xasprintf("%s/t.sqfs", dir);
	cmd = xasprintf("mkdir -p %s/etc %s/.singularity.d/env && "
			"printf 'hello\\n' >%s/etc/f && "
			"touch %s/.singularity.d/env/90-a.sh && "
			"mksquashfs %s %s -quiet -no-progress -noappend "
			"-all-root >/dev/null",
			src, src, src, src, src, img);
	rc = system(cmd);
	free(cmd);
	free(src);
	ck_assert_msg(rc == 0, "mksquashfs failed (is squashfs-tools installed?)");
	return img;
}

static void remove_image(char *img)
{
	ck_assert_int_eq(rm_rf(dir), 0);
	free(img);
}

/* The reader child of this process (comm mpictr-imgread), or -1. */
static pid_t reader_pid(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		long v;
		char *p, *comm;

		if (parse_long(de->d_name, 1, 1 << 30, &v) < 0 ||
		    proc_ppid((pid_t)v) != getpid())
			continue;
		p = xasprintf("/proc/%ld/comm", v);
		comm = read_file(p, 64, NULL);
		if (comm && strcmp(comm, "mpictr-imgread\n") == 0)
			found = (pid_t)v;
		free(comm);
		free(p);
	}
	closedir(d);
	return found;
}

static struct image_reader *open_image(const char *img)
{
	struct image_info info = {.kind = IMAGE_SQUASHFS, .path = (char *)img};
	struct image_reader *r = NULL;
	mpictr_err *e = NULL;

	ck_assert_msg(image_reader_open(&info, &r, &e) == 0, "%s",
		      e ? mpictr_err_message(e) : "?");
	return r;
}

START_TEST(test_reader_answers)
{
	char *img = make_image();
	struct image_reader *r = open_image(img);
	char **names = NULL, *buf = NULL, *canon = NULL;
	mpictr_err *e = NULL;
	uint64_t size;
	mode_t mode;
	size_t len;
	char b[3];

	ck_assert_int_gt(reader_pid(), 0);
	ck_assert_int_eq(image_reader_list(r, "/.singularity.d/env", &names, &e),
			 0);
	ck_assert_str_eq(names[0], "90-a.sh");
	ck_assert_ptr_null(names[1]);
	strv_free(names);
	ck_assert_int_eq(image_reader_stat(r, "/etc/../etc/f", &mode, &size,
					   &canon, &e),
			 0);
	ck_assert(S_ISREG(mode));
	ck_assert_int_eq(size, 6);
	ck_assert_str_eq(canon, "/etc/f");
	free(canon);
	ck_assert_int_eq(image_reader_read(r, "/etc/f", 100, &buf, &len, &e), 0);
	ck_assert_str_eq(buf, "hello\n");
	ck_assert_int_eq(len, 6);
	free(buf);
	ck_assert_int_eq(image_reader_pread(r, "/etc/f", b, 3, 2, &e), 0);
	ck_assert(memcmp(b, "llo", 3) == 0);
	/* an error of the image comes back as it was, the reader lives on */
	ck_assert_int_eq(image_reader_list(r, "/nope", &names, &e), -1);
	ck_assert_int_eq(mpictr_err_errno(e), ENOENT);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "nope"));
	mpictr_err_free(e);
	e = NULL;
	ck_assert(!image_reader_broken(r, NULL));
	ck_assert(image_reader_exists(r, "/etc/f"));
	image_reader_close(r);
	ck_assert_int_eq(reader_pid(), -1); /* reaped */
	remove_image(img);
}
END_TEST

START_TEST(test_reader_killed)
{
	char *img = make_image();
	struct image_reader *r = open_image(img);
	char **names = NULL;
	mpictr_err *e = NULL, *b = NULL;
	pid_t pid = reader_pid();

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, SIGSEGV), 0); /* as a crash would */
	ck_assert_int_eq(image_reader_list(r, "/etc", &names, &e), -1);
	ck_assert_ptr_nonnull(e);
	ck_assert_msg(strstr(mpictr_err_message(e), img) &&
			  strstr(mpictr_err_message(e),
				 "reading the squashfs image failed (the "
				 "reader was killed by SIGSEGV): the image is "
				 "corrupt"),
		      "%s", mpictr_err_message(e));
	ck_assert_int_eq(mpictr_err_exit_code(e), MPICTR_EXIT_FAILURE);
	ck_assert(image_reader_broken(r, &b));
	ck_assert_str_eq(mpictr_err_message(b), mpictr_err_message(e));
	mpictr_err_free(b);
	mpictr_err_free(e);
	e = NULL;
	/* every later call fails the same way, at once */
	ck_assert(!image_reader_exists(r, "/etc/f"));
	ck_assert_int_eq(image_reader_stat(r, "/etc/f", &(mode_t){0},
					   &(uint64_t){0}, NULL, &e),
			 -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "SIGSEGV"));
	mpictr_err_free(e);
	ck_assert_int_eq(reader_pid(), -1); /* already reaped */
	image_reader_close(r);
	remove_image(img);
}
END_TEST

Suite *suite_imgread(void);
Suite *suite_imgread(void)
{
	Suite *s = suite_create("imgread");
	TCase *tc = tcase_create("reader");

	tcase_add_test(tc, test_reader_answers);
	tcase_add_test(tc, test_reader_killed);
	suite_add_tcase(s, tc);
	return s;
}
