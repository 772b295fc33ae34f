/* check_rmtree.c - the tree removal of runtime/common/proc.c (rm_rf,
 * rm_tree_at, rm_tree_empty): a tree whose directory is swapped for a
 * symlink to another directory while it is removed (renameat2
 * RENAME_EXCHANGE in a loop, as a program in the container can do in the
 * job's PMIx directory) never loses a file of that other directory (the
 * nftw walk of the old code deleted them within a few rounds); a symlink
 * is removed, never its target; a tree deeper than the descriptors held
 * is removed all the same. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"
#include "testutil.h"

#define CANARY_FILES 20

static char *make_dir(void)
{
	char *d = xstrdup("/tmp/mpictr-rmtree.XXXXXX");

	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void touch(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	ck_assert_msg(fd >= 0, "create %s: %s", p, strerror(errno));
	close(fd);
	free(p);
}

static int count_files(const char *dir)
{
	char **names = dir_names(dir);
	int n = 0;

	for (size_t i = 0; names && names[i]; i++)
		n++;
	strv_free(names);
	return n;
}

static void populate(const char *d)
{
	if (mkdir(d, 0700) < 0)
		return;
	for (int i = 0; i < CANARY_FILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%02d", i);
		touch(d, name);
	}
}

/* The swapper: in tree, "d" and "l", one a directory of files named as
 * the canary's, the other a symlink to canary, exchanged without pause;
 * whichever the removal took is made again. */
static _Noreturn void swapper(const char *tree, const char *canary)
{
	char *d = xasprintf("%s/d", tree), *l = xasprintf("%s/l", tree);

	for (;;) {
		struct stat sd, sl;
		bool hd = lstat(d, &sd) == 0, hl = lstat(l, &sl) == 0;

		if (!hd && !hl) {
			populate(d);
			if (symlink(canary, l) < 0)
				continue;
		} else if (!hd || !hl) {
			const char *miss = hd ? l : d;
			const struct stat *st = hd ? &sd : &sl;

			if (!S_ISDIR(st->st_mode))
				populate(miss);
			else if (symlink(canary, miss) < 0)
				continue;
		}
		syscall(SYS_renameat2, AT_FDCWD, d, AT_FDCWD, l,
			2 /* EXCHANGE */);
	}
}

START_TEST(test_swap_race_spares_the_target)
{
	char *base = make_dir();
	char *canary = xasprintf("%s/canary", base);
	char *tree = xasprintf("%s/tree", base);
	int lost = 0;

	ck_assert_int_eq(mkdir(canary, 0700), 0);
	for (int i = 0; i < CANARY_FILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%02d", i);
		touch(canary, name);
	}
	for (int round = 0; round < 300 && !lost; round++) {
		pid_t pid;

		ck_assert_int_eq(mkdir(tree, 0700), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			swapper(tree, canary);
		usleep(2000);
		/* The removal may fail while the swapper adds entries; it
		 * must never reach the canary. */
		rm_rf(tree);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		lost = CANARY_FILES - count_files(canary);
		ck_assert_int_eq(rm_rf(tree), 0);
	}
	ck_assert_msg(lost == 0, "%d files of the symlink's target deleted",
		      lost);
	ck_assert_int_eq(rm_rf(base), 0);
	free(canary);
	free(tree);
	free(base);
}
END_TEST

START_TEST(test_symlink_removed_not_followed)
{
	char *base = make_dir();
	char *target = xasprintf("%s/target", base);
	char *link = xasprintf("%s/link", base);
	char *tree = xasprintf("%s/tree", base);
	char *inner = xasprintf("%s/tree/in", base);

	ck_assert_int_eq(mkdir(target, 0700), 0);
	touch(target, "keep");
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(mkdir(tree, 0700), 0);
	ck_assert_int_eq(symlink(target, inner), 0);
	ck_assert_int_eq(rm_rf(link), 0);
	ck_assert_int_eq(rm_rf(tree), 0);
	ck_assert_int_eq(count_files(target), 1);
	ck_assert_int_eq(access(link, F_OK) < 0 && errno == ENOENT, 1);
	ck_assert_int_eq(access(tree, F_OK) < 0 && errno == ENOENT, 1);
	ck_assert_int_eq(rm_rf(tree), 0); /* nothing there: 0 */
	ck_assert_int_eq(rm_rf(base), 0);
	free(target);
	free(link);
	free(tree);
	free(inner);
	free(base);
}
END_TEST

START_TEST(test_deep_tree)
{
	char *base = make_dir();
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	/* 300 levels: deeper than the descriptors the removal holds. */
	for (int i = 0; i < 300; i++) {
		int next;

		ck_assert_int_eq(mkdirat(fd, "d", 0700), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
		close(openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	}
	close(fd);
	fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(rm_tree_empty(fd), 0);
	ck_assert_int_eq(count_files(base), 0);
	close(fd);
	ck_assert_int_eq(rm_rf(base), 0);
	ck_assert_int_eq(access(base, F_OK) < 0 && errno == ENOENT, 1);
	free(base);
}
END_TEST

Suite *suite_rmtree(void);
Suite *suite_rmtree(void)
{
	Suite *s = suite_create("rmtree");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_swap_race_spares_the_target);
	tcase_add_test(tc, test_symlink_removed_not_followed);
	tcase_add_test(tc, test_deep_tree);
	suite_add_tcase(s, tc);
	return s;
}
