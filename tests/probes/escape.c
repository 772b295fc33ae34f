/* escape.c - isolation probe: run inside an mpictr container as an
 * unprivileged user, it tries each way out it knows and prints one line per
 * attempt:
 *
 *   BLOCKED name: how it was stopped
 *   ESCAPED name: what succeeded
 *   SKIPPED name: why the attempt does not apply here (no victim given...)
 *
 * and exits 0 only when no attempt escaped (1 otherwise, 2 on bad usage).
 * Built static (build/tests/escape-probe) so it runs in the busybox-only
 * tiny test image. Options name what only the calling test knows:
 *
 *   --host-path P    a host path that was not bound: must be invisible
 *   --victim PID     a process of another user: ptrace and kill must fail
 *   --socket PATH    another user's keeper socket: must not hand out fds
 *   --nested-mark P  a path (in a shared bind such as /tmp) the nested
 *                    user-namespace attempt mounts over; the caller checks
 *                    the host afterwards
 *   --inst-stop SOCK only this (issue 23): ask the instance keeper at SOCK
 *                    to stop (a program in a container against another
 *                    instance of the user, whose socket it sees through
 *                    the /tmp bind): BLOCKED when refused, ESCAPED when
 *                    the keeper agreed
 *   --swap-race DIR TARGET SECONDS
 *                    only this (issue 23): detach as a daemon of the job
 *                    (double fork, setsid), then for SECONDS keep DIR/d a
 *                    directory of files and DIR/l a symlink to TARGET (a
 *                    host path the container does not see), exchanged
 *                    without pause; a cleanup that removes DIR by path
 *                    between a listing and an unlink deletes TARGET's
 *                    files. Prints "DETACHED PID"; the caller checks TARGET
 *                    and that the daemon did not outlive the job.
 *
 * Nothing here harms the host when an attempt does succeed: signals are 0
 * (a permission check), ptrace uses PTRACE_SEIZE (the victim is never
 * stopped) and detaches at once, writes go to new files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int escaped;

static int prctl_nnp(void)
{
	return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
}

static void report(int blocked, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", blocked ? "BLOCKED" : "ESCAPED", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!blocked)
		escaped = 1;
}

static void skipped(const char *name, const char *why)
{
	printf("SKIPPED %s: %s\n", name, why);
	fflush(stdout);
}

/* Create a new file at path: blocked when the kernel refuses. */
static void try_create(const char *name, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0) {
		report(1, name, "open(%s, O_CREAT): %s", path, strerror(errno));
		return;
	}
	close(fd);
	unlink(path);
	report(0, name, "created %s", path);
}

/* Read a path that must stay out of reach. */
static void try_read(const char *name, const char *path)
{
	char c;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		report(1, name, "open(%s): %s", path, strerror(errno));
		return;
	}
	ssize_t n = read(fd, &c, 1);
	int e = errno;
	close(fd);
	if (n < 0)
		report(1, name, "read(%s): %s", path, strerror(e));
	else
		report(0, name, "read %s", path);
}

static void try_invisible(const char *name, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		report(1, name, "lstat(%s): %s", path, strerror(errno));
	else
		report(0, name, "%s is visible", path);
}

/* Did mknod(path) make a device node? --fakeroot's system call filter
 * makes mknod of a device report success without making anything. */
static int made_device(const char *path)
{
	struct stat st;
	int made = lstat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));

	unlink(path);
	return made;
}

static void try_mknod(void)
{
	static const char *const dirs[] = {"/dev/shm", "/tmp", "."};
	char path[4096];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/.escape-probe-null.%d", dirs[i], (int)getpid());
		if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0) {
			if (made_device(path))
				report(0, "mknod", "made char device 1:3 at %s", path);
			else
				report(1, "mknod", "mknod(%s) reported success, made nothing (a filter)", path);
			return;
		}
		if (errno != EPERM && errno != EACCES && errno != EROFS)
			continue; /* a directory that is not there: try the next */
		report(1, "mknod", "mknod(%s, c 1 3): %s", path, strerror(errno));
		return;
	}
	report(1, "mknod", "no directory accepted a device node");
}

static void try_image_device(void)
{
	struct stat st;

	if (stat("/probe/null", &st) < 0 || !S_ISCHR(st.st_mode)) {
		skipped("image-device", "no character device /probe/null in this image");
		return;
	}
	int fd = open("/probe/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		report(1, "image-device", "open(/probe/null, c %u:%u, O_WRONLY): %s",
		       major(st.st_rdev), minor(st.st_rdev), strerror(errno));
		return;
	}
	ssize_t n = write(fd, "x", 1);
	close(fd);
	report(n != 1, "image-device", "opened the image's device node /probe/null: write %s",
	       n == 1 ? "succeeded" : "failed");
}

/* The host uid the container user is mapped to (from uid_map), or -1. */
static long host_uid(void)
{
	unsigned long in, out, cnt;
	long r = -1;
	FILE *f = fopen("/proc/self/uid_map", "re");

	while (f && fscanf(f, "%lu %lu %lu", &in, &out, &cnt) == 3)
		if (getuid() >= in && getuid() - in < cnt)
			r = (long)(out + (getuid() - in));
	if (f)
		fclose(f);
	return r;
}

static void try_ids(void)
{
	uid_t u = getuid();
	int rc, e;

	if (u == 0) {
		skipped("setuid", "already uid 0 in the container (--fakeroot or root)");
	} else if (setuid(0) == 0 && geteuid() == 0) {
		report(0, "setuid", "setuid(0) succeeded");
	} else {
		report(1, "setuid", "setuid(0): %s", strerror(errno));
	}
	if (getgid() == 0)
		skipped("setgid", "already gid 0 in the container");
	else if (setgid(0) == 0 && getegid() == 0)
		report(0, "setgid", "setgid(0) succeeded");
	else
		report(1, "setgid", "setgid(0): %s", strerror(errno));
	rc = setgroups(0, NULL);
	e = errno;
	if (rc == 0 && getgroups(0, NULL) == 0)
		report(0, "setgroups", "setgroups(0) succeeded");
	else if (rc == 0)
		report(1, "setgroups", "setgroups(0) reported success, changed nothing (a filter)");
	else
		report(1, "setgroups", "setgroups: %s", strerror(e));
}

static void try_suid_binary(void)
{
	int p[2];
	char buf[256] = "";

	if (access("/usr/bin/suidprobe", X_OK) < 0) {
		skipped("setuid-binary", "no /usr/bin/suidprobe in this image");
		return;
	}
	if (pipe(p) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/usr/bin/suidprobe", "suidprobe", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	waitpid(pid, NULL, 0);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	const char *e = strstr(buf, "euid=");
	if (!e) {
		report(1, "setuid-binary", "suidprobe printed no ids (%s)", buf);
		return;
	}
	int euid = atoi(e + 5);
	report(euid == (int)getuid(), "setuid-binary", "/usr/bin/suidprobe (6755 root) ran with %s", buf);
}

static void try_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0) {
		report(1, "capabilities", "capget: %s", strerror(errno));
		return;
	}
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted)
		report(0, "capabilities", "holds capabilities: eff %08x%08x prm %08x%08x",
		       d[1].effective, d[0].effective, d[1].permitted, d[0].permitted);
	else
		report(1, "capabilities", "effective and permitted sets are empty");
	d[0].effective = d[0].permitted = ~0u;
	d[1].effective = d[1].permitted = ~0u;
	if (syscall(SYS_capset, &h, d) == 0)
		report(0, "capset", "raised every capability");
	else
		report(1, "capset", "capset(all): %s", strerror(errno));
	errno = 0;
	int nnp = prctl_nnp();
	report(nnp == 1, "no-new-privs", "PR_GET_NO_NEW_PRIVS is %d", nnp);
}

static void try_chroot_pivot(void)
{
	if (chroot("/tmp") == 0)
		report(0, "chroot", "chroot(/tmp) succeeded");
	else
		report(1, "chroot", "chroot(/tmp): %s", strerror(errno));
	if (syscall(SYS_pivot_root, "/tmp", "/tmp") == 0)
		report(0, "pivot_root", "pivot_root(/tmp) succeeded");
	else
		report(1, "pivot_root", "pivot_root(/tmp, /tmp): %s", strerror(errno));
	if (mount("none", "/tmp", "tmpfs", 0, NULL) == 0)
		report(0, "mount", "mounted a tmpfs on /tmp");
	else
		report(1, "mount", "mount(tmpfs, /tmp): %s", strerror(errno));
	if (umount2("/", MNT_DETACH) == 0)
		report(0, "umount-root", "detached /");
	else
		report(1, "umount-root", "umount2(/, MNT_DETACH): %s", strerror(errno));
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) == 0)
		report(0, "remount-rw", "remounted / read-write");
	else
		report(1, "remount-rw", "mount(/, MS_REMOUNT|MS_BIND): %s", strerror(errno));
}

static void try_handle(void)
{
	struct {
		struct file_handle h;
		unsigned char b[128];
	} fh;
	int mnt;

	fh.h.handle_bytes = sizeof(fh.b);
	if (name_to_handle_at(AT_FDCWD, "/", &fh.h, &mnt, 0) < 0) {
		report(1, "open_by_handle", "name_to_handle_at(/): %s", strerror(errno));
		return;
	}
	int fd = open_by_handle_at(AT_FDCWD, &fh.h, O_RDONLY);
	if (fd >= 0) {
		close(fd);
		report(0, "open_by_handle", "open_by_handle_at succeeded (CAP_DAC_READ_SEARCH)");
	} else {
		report(1, "open_by_handle", "open_by_handle_at: %s", strerror(errno));
	}
}

/* A nested user namespace: the probe becomes root of its own namespace
 * with full capabilities there. Whatever it mounts stays in its nested
 * mount namespace; the locked mounts of the job (read-only, nosuid, nodev)
 * cannot be unlocked, and devices need CAP_MKNOD in the initial namespace.
 * Runs in a child; prints its own lines. */
static int nested_child(const char *mark)
{
	char map[64];
	int fd;

	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		report(1, "nested-userns", "unshare(NEWUSER|NEWNS): %s", strerror(errno));
		return 0;
	}
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, map, strlen(map));
		close(fd);
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, map, strlen(map));
		close(fd);
	}
	printf("INFO nested-userns: uid %d in a nested namespace\n", (int)geteuid());
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) == 0)
		report(0, "nested-remount-rw", "remounted the image root read-write");
	else
		report(1, "nested-remount-rw", "mount(/, MS_REMOUNT|MS_BIND): %s", strerror(errno));
	if (mount(NULL, "/probe", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL) == 0) {
		int d = open("/probe/null", O_WRONLY);
		report(d < 0, "nested-unlock-nodev", "remounted /probe without nodev; open /probe/null: %s",
		       d < 0 ? strerror(errno) : "ok");
		if (d >= 0)
			close(d);
	} else {
		report(1, "nested-unlock-nodev", "mount(/probe, remount without nodev): %s",
		       strerror(errno));
	}
	if (umount2("/usr", MNT_DETACH) == 0 || umount2("/etc", MNT_DETACH) == 0)
		report(0, "nested-umount", "unmounted a locked mount of the job (reveals what is under it)");
	else
		report(1, "nested-umount", "umount2(/usr, /etc): %s", strerror(errno));
	if (mknod("/tmp/.escape-probe-nested", S_IFCHR | 0666, makedev(1, 3)) < 0)
		report(1, "nested-mknod", "mknod: %s", strerror(errno));
	else if (made_device("/tmp/.escape-probe-nested"))
		report(0, "nested-mknod", "made a device node in a nested namespace");
	else
		report(1, "nested-mknod", "mknod reported success, made nothing (a filter)");
	if (kill(1, 0) == 0 && getppid() != 1)
		printf("INFO nested-kill: pid 1 is signalable (same owner)\n");
	/* Chroot escape: root of the nested namespace may chroot; walking up
	 * from a chroot ends at the container root (the host root was
	 * detached after pivot_root), never at the host's. */
	struct stat before, after;
	stat("/", &before);
	if (mkdir("/tmp/.escape-probe-jail", 0700) == 0 || errno == EEXIST) {
		int keep = open("/", O_PATH | O_DIRECTORY);
		if (chroot("/tmp/.escape-probe-jail") == 0) {
			if (fchdir(keep) == 0) {
				for (int i = 0; i < 64; i++)
					(void)!chdir("..");
				(void)!chroot(".");
			}
			stat("/", &after);
			struct stat hs;
			int host = stat("/.mpictr-oldroot", &hs) == 0;
			report(after.st_dev == before.st_dev && after.st_ino == before.st_ino && !host,
			       "nested-chroot-escape",
			       "chroot + fchdir + chdir(..)x64 + chroot(.) ends at %s",
			       after.st_ino == before.st_ino ? "the container root" : "another root");
		} else {
			report(1, "nested-chroot-escape", "chroot: %s", strerror(errno));
		}
		rmdir("/.escape-probe-jail"); /* relative to the (possibly new) root */
	}
	if (mark) {
		/* Mount over a shared bind: visible in this namespace only. */
		if (mount("none", mark, "tmpfs", 0, NULL) == 0) {
			char f[4200];
			snprintf(f, sizeof(f), "%s/nested-was-here", mark);
			int w = open(f, O_WRONLY | O_CREAT, 0600);
			if (w >= 0)
				close(w);
			printf("INFO nested-mount: mounted a tmpfs on %s (nested namespace only)\n", mark);
		} else {
			printf("INFO nested-mount: mount(tmpfs, %s): %s\n", mark, strerror(errno));
		}
	}
	fflush(stdout);
	return 0;
}

static void try_nested(const char *mark)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(nested_child(mark) | escaped);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		escaped = 1;
	if (mark) {
		char f[4200];
		struct stat sb;
		snprintf(f, sizeof(f), "%s/nested-was-here", mark);
		report(stat(f, &sb) < 0, "nested-mount-leak",
		       "after the nested namespace, %s is %s in the job's namespace", f,
		       stat(f, &sb) < 0 ? "absent" : "present");
	}
}

static void try_victim(pid_t v)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)v);
	if (stat(path, &st) == 0 && st.st_uid == getuid() && getuid() != 0) {
		skipped("victim", "the victim runs as this user: not another user's process");
		return;
	}
	if (kill(v, 0) == 0)
		report(0, "kill-other-user", "kill(%d, 0) allowed: could signal it", (int)v);
	else
		report(1, "kill-other-user", "kill(%d, 0): %s", (int)v, strerror(errno));
	if (ptrace(PTRACE_SEIZE, v, NULL, NULL) == 0) {
		ptrace(PTRACE_DETACH, v, NULL, NULL);
		report(0, "ptrace-other-user", "PTRACE_SEIZE of %d succeeded", (int)v);
	} else {
		report(1, "ptrace-other-user", "ptrace(SEIZE, %d): %s", (int)v, strerror(errno));
	}
	snprintf(path, sizeof(path), "/proc/%d/root/etc/shadow", (int)v);
	try_read("proc-root-of-other-user", path);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)v);
	try_read("proc-mem-of-other-user", path);
}

static void try_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		report(1, "keeper-socket", "connect(%s): %s", path, strerror(errno));
		close(s);
		return;
	}
	/* The keepers' protocol (runtime/modes/wire.c): a JOIN request with
	 * a claim the step's keeper would accept from one of its tasks
	 * (local rank 1 of 2, the tests' steps: rank 0 joined), then the
	 * reply. */
	uint32_t req[6] = {0x6d707731u /* "mpw1" */, 1 /* JOIN */, 8, 0, 1, 2};
	struct timeval tv = {.tv_sec = 10};
	char buf[64];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} c;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(s, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		/* closed on us before the request: nothing handed out */
		report(1, "keeper-socket",
		       "connected to %s; request refused (%s): received 0 bytes and 0 fds", path,
		       strerror(errno));
		close(s);
		return;
	}
	struct iovec io = {buf, sizeof(buf)};
	struct msghdr mh = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = c.b,
			    .msg_controllen = sizeof(c.b)};
	ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	int nfd = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); n >= 0 && h; h = CMSG_NXTHDR(&mh, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			nfd += (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	close(s);
	report(nfd == 0, "keeper-socket", "connected to %s; received %d bytes and %d fds", path,
	       (int)(n < 0 ? 0 : n), nfd);
}

/* The keepers' protocol (runtime/modes/wire.c): a request {magic "mpw1",
 * op, payload length, 0}, a reply {magic, status, length, fds}. */
static int inst_stop(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint32_t req[4] = {0x6d707731u, 3 /* STOP */, 0, 0}, rep[4];
	struct timeval tv = {.tv_sec = 40};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		report(1, "inst-stop", "connect(%s): %s", path, strerror(errno));
		return 0;
	}
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(s, req, sizeof(req)) != (ssize_t)sizeof(req)) {
		report(1, "inst-stop", "write: %s", strerror(errno));
		return 0;
	}
	n = recv(s, rep, sizeof(rep), MSG_WAITALL);
	if (n != (ssize_t)sizeof(rep)) {
		report(1, "inst-stop", "the keeper closed the connection (%zd bytes)", n);
		return 0;
	}
	report(rep[1] != 0, "inst-stop", "the keeper answered status %d", (int)rep[1]);
	return rep[1] != 0 ? 0 : 1;
}

static void race_populate(const char *d)
{
	char f[4200];

	if (mkdir(d, 0700) < 0)
		return;
	for (int i = 0; i < 20; i++) {
		snprintf(f, sizeof(f), "%s/f%02d", d, i);
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	}
}

static int swap_race(const char *dir, const char *target, int secs)
{
	char d[4096], l[4096];
	pid_t pid = fork();
	time_t end;

	if (pid < 0)
		return 2;
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		return 0;
	}
	setsid();
	pid = fork();
	if (pid != 0) {
		if (pid > 0)
			printf("DETACHED %d\n", (int)pid);
		fflush(stdout);
		_exit(pid < 0 ? 2 : 0);
	}
	for (int fd = 0; fd < 3; fd++)
		close(fd);
	snprintf(d, sizeof(d), "%s/d", dir);
	snprintf(l, sizeof(l), "%s/l", dir);
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		struct stat sd, sl;
		int hd = lstat(d, &sd) == 0, hl = lstat(l, &sl) == 0;

		if (!hd && !hl) {
			race_populate(d);
			if (symlink(target, l) < 0 && errno == ENOENT)
				_exit(0); /* DIR is gone */
		} else if (!hd || !hl) {
			const char *miss = hd ? l : d;

			if (S_ISDIR(hd ? sd.st_mode : sl.st_mode)) {
				if (symlink(target, miss) < 0 && errno == ENOENT)
					_exit(0);
			} else {
				race_populate(miss);
			}
		}
		syscall(SYS_renameat2, AT_FDCWD, d, AT_FDCWD, l, 2 /* RENAME_EXCHANGE */);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mark = NULL, *sock = NULL;
	pid_t victim = 0;
	const char *host[32];
	int nhost = 0;

	if (argc == 3 && strcmp(argv[1], "--inst-stop") == 0)
		return inst_stop(argv[2]);
	if (argc == 5 && strcmp(argv[1], "--swap-race") == 0)
		return swap_race(argv[2], argv[3], atoi(argv[4]));
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--host-path") == 0 && nhost < 32)
			host[nhost++] = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--victim") == 0)
			victim = (pid_t)atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--socket") == 0)
			sock = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--nested-mark") == 0)
			mark = argv[++i];
		else {
			fprintf(stderr, "usage: escape-probe [--host-path P]... [--victim PID] "
					"[--socket PATH] [--nested-mark DIR]\n");
			return 2;
		}
	}
	printf("INFO uid=%d gid=%d euid=%d\n", (int)getuid(), (int)getgid(), (int)geteuid());

	try_create("write-image-root", "/.escape-probe");
	try_create("write-usr", "/usr/.escape-probe");
	try_create("write-usr-bin", "/usr/bin/.escape-probe");
	try_create("write-etc", "/etc/.escape-probe");
	try_mknod();
	try_image_device();
	try_read("host-shadow", "/etc/shadow");
	try_invisible("host-libc", "/usr/lib/x86_64-linux-gnu/libc.so.6");
	try_invisible("host-oldroot", "/.mpictr-oldroot");
	for (int i = 0; i < nhost; i++)
		try_invisible("host-path", host[i]);
	try_read("follow-escape-link", "/escape/shadow");
	try_invisible("follow-escape-link-dir", "/escape/passwd");
	try_read("follow-shadow-link", "/probe/shadow-link");
	try_read("follow-etc-link", "/etc-link/shadow");
	try_read("proc-1-root", "/proc/1/root/etc/shadow");
	try_read("dev-mem", "/dev/mem");
	try_read("dev-kmsg", "/dev/kmsg");
	if (host_uid() == 0) {
		/* root ran mpictr: the container user is host uid 0 and owns
		 * /proc/sys as root does outside; that is root's own privilege,
		 * not one gained through the container. */
		skipped("write-proc-sys", "the container user is host uid 0 (mpictr run by root)");
	} else {
		int fd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
		report(fd < 0, "write-proc-sys", "open(/proc/sys/kernel/hostname, O_WRONLY): %s",
		       fd < 0 ? strerror(errno) : "ok");
		if (fd >= 0)
			close(fd);
	}
	try_ids();
	try_suid_binary();
	try_caps();
	try_chroot_pivot();
	try_handle();
	try_nested(mark);
	if (victim > 0)
		try_victim(victim);
	else
		skipped("victim", "no --victim PID given");
	if (sock)
		try_socket(sock);
	else
		skipped("keeper-socket", "no --socket PATH given");
	printf("RESULT %s\n", escaped ? "ESCAPED" : "ALL BLOCKED");
	return escaped ? 1 : 0;
}

