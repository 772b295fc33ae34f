/* fakeroot.c - the calls a package manager makes as root, in a static
 * program for the busybox test image (tests/integration/39-fakeroot.sh):
 * apt's _apt sandbox (setgroups, setresgid, setresuid, then back with
 * seteuid/setegid), dpkg's chown of what it unpacks (chown, fchown,
 * lchown, fchownat to other ids), setfsuid, and mknod of a character
 * device. Prints "fakeroot-ok" when every call reports success; else the
 * first that failed, with errno, and exits 1. DIR (argv[1]) is a writable
 * directory for the files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int failed(const char *what)
{
	printf("%s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	const gid_t nogroup = 65534;
	char f[4096], l[4096], d[4096];
	int fd;

	if (argc != 2)
		return 2;
	snprintf(f, sizeof(f), "%s/file", argv[1]);
	snprintf(l, sizeof(l), "%s/link", argv[1]);
	snprintf(d, sizeof(d), "%s/null", argv[1]);
	fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || symlink("file", l) < 0)
		return failed("create the files");
	if (chown(f, 100, 65534) < 0)
		return failed("chown");
	if (fchown(fd, 42, 42) < 0)
		return failed("fchown");
	if (lchown(l, 100, 100) < 0)
		return failed("lchown");
	if (fchownat(AT_FDCWD, f, 7, 7, 0) < 0)
		return failed("fchownat");
	if (mknod(d, S_IFCHR | 0666, makedev(1, 3)) < 0)
		return failed("mknod of a character device");
	if (setgroups(1, &nogroup) < 0)
		return failed("setgroups");
	if (setresgid(65534, 65534, 65534) < 0)
		return failed("setresgid");
	if (setresuid(100, 100, 100) < 0)
		return failed("setresuid");
	if (seteuid(42) < 0 || setegid(42) < 0)
		return failed("seteuid/setegid");
	if (setuid(1234) < 0 || setgid(1234) < 0)
		return failed("setuid/setgid");
	if (setreuid(5, 5) < 0 || setregid(5, 5) < 0)
		return failed("setreuid/setregid");
	setfsuid(100);
	setfsgid(100);
	printf("fakeroot-ok\n");
	return 0;
}
