/* ns.c - user and mount namespace creation and joining.
 *
 * The sequence, in the holder (a child of the supervisor, single-threaded):
 *   1. unshare(CLONE_NEWUSER | CLONE_NEWNS). The holder now has every
 *      capability in the new user namespace, whatever its uid there.
 *   2. write "deny" to /proc/self/setgroups (required before an
 *      unprivileged process may write gid_map, user_namespaces(7)),
 *   3. write a one-line uid_map and gid_map mapping the user's own ids to
 *      themselves (or to 0 for --fakeroot). Keeping the real uid matters:
 *      PMIx's native security compares the uid a rank reports from inside
 *      its namespace with the one it was registered with, and Slurm's
 *      slurmstepd hangs when it rejects a rank (reference test-env.md §1).
 *   4. rootfs.c then makes / private and assembles the root.
 * Ranks join with setns(user) then setns(mnt): joining the user namespace
 * first gives the capabilities setns(mnt) needs; both are dropped again
 * before exec (caps.c). setns() of a user namespace requires a
 * single-threaded caller, which a freshly forked child is.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "container/ns.h"
#include "common/proc.h"
#include "common/util.h"

static int userns_hint(mpictr_err **err, int errnum)
{
	if (errnum != EPERM && errnum != ENOSPC && errnum != EUSERS &&
	    errnum != EINVAL)
		return -1;
	if (errnum == ENOSPC || errnum == EUSERS)
		return err_hint(err, "the per-user limit of user namespaces "
				     "is reached: raise "
				     "user.max_user_namespaces (sysctl)");
	return err_hint(err, "unprivileged user namespaces look disabled: "
			     "check sysctl user.max_user_namespaces (must be "
			     "> 0), kernel.unprivileged_userns_clone=1 on "
			     "Debian kernels, and "
			     "kernel.apparmor_restrict_unprivileged_userns=0 "
			     "on Ubuntu");
}

/* Write a one-line id map: `inside` in the namespace is `outside` here. */
static int write_map(const char *path, unsigned inside, unsigned outside,
		     mpictr_err **err)
{
	char map[64];

	snprintf(map, sizeof(map), "%u %u 1\n", inside, outside);
	if (write_file(path, map, 0) < 0)
		return err_set(err, errno, "write '%s' (%u -> %u)", path,
			       outside, inside);
	return 0;
}

int ns_create(uid_t uid_in, gid_t gid_in, mpictr_err **err)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	/* A process that a root daemon forked and then setuid to the user
	 * (a Slurm task, where the SPANK plugin runs) is not dumpable: its
	 * /proc/self files stay root's and the maps below cannot be written.
	 * The holder holds nothing but the user's own data (docs/security.md),
	 * so it may be dumpable as any process the user starts. */
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 &&
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return err_set(err, errno, "make the holder dumpable");
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		int e = errno;
		err_set(err, e, "create user and mount namespace");
		return userns_hint(err, e);
	}
	if (write_file("/proc/self/setgroups", "deny", 0) < 0 &&
	    errno != ENOENT)
		return err_set(err, errno, "write '/proc/self/setgroups'");
	if (write_map("/proc/self/uid_map", uid_in, uid, err) < 0 ||
	    write_map("/proc/self/gid_map", gid_in, gid, err) < 0)
		return -1;
	return 0;
}

int ns_join(int userns_fd, int mntns_fd, mpictr_err **err)
{
	if (setns(userns_fd, CLONE_NEWUSER) < 0)
		return err_set(err, errno, "join the job's user namespace");
	if (setns(mntns_fd, CLONE_NEWNS) < 0)
		return err_set(err, errno, "join the job's mount namespace");
	return 0;
}

int ns_probe(mpictr_err **err)
{
	sigset_t none;
	pid_t pid;
	int status;

	sigemptyset(&none);
	pid = proc_fork_child(&none, "the namespace probe", err);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(errno & 0xff);
		_exit(0);
	}
	if (TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)) < 0)
		return err_set(err, errno, "wait for namespace probe");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	err_set(err, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
		"create user and mount namespace");
	return userns_hint(err, WIFEXITED(status) ? WEXITSTATUS(status) : 0);
}

long ns_userns_left(void)
{
	cleanup_free char *s =
	    read_file("/proc/sys/user/max_user_namespaces", 64, NULL);
	return s ? strtol(s, NULL, 10) : -1;
}
