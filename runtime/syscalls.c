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
