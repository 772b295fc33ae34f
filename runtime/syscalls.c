/* syscalls.c - wrappers for raw system calls (sets errno on error). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscalls.h"

int sys_pivot_root(const char *new_root, const char *put_old)
{
#ifdef __NR_pivot_root
	return (int)syscall(__NR_pivot_root, new_root, put_old);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
		      struct mount_attr *attr, size_t size)
{
#ifdef __NR_mount_setattr
	return (int)syscall(__NR_mount_setattr, dfd, path, flags, attr, size);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_pidfd_open(pid_t pid, unsigned int flags)
{
#ifdef __NR_pidfd_open
	return (int)syscall(__NR_pidfd_open, pid, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_openat_in_root(int dirfd, const char *path, int flags)
{
#ifdef __NR_openat2
	/* struct open_how of linux/openat2.h, spelled out so the header is
	 * not needed; RESOLVE_IN_ROOT is 0x10. */
	struct {
		uint64_t flags, mode, resolve;
	} how = {(uint64_t)flags, 0, 0x10};
	return (int)syscall(__NR_openat2, dirfd, path, &how, sizeof(how));
#else
	errno = ENOSYS;
	return -1;
#endif
}
