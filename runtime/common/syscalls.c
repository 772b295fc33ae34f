/* syscalls.c - wrappers for raw system calls (sets errno on error). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/syscalls.h"

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

int sys_pidfd_send_signal(int pidfd, int sig)
{
#ifdef __NR_pidfd_send_signal
	return (int)syscall(__NR_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_openat2(int dirfd, const char *path, int flags, mode_t mode,
		uint64_t resolve)
{
#ifdef __NR_openat2
	/* struct open_how of linux/openat2.h, spelled out so the header is
	 * not needed. */
	struct {
		uint64_t flags, mode, resolve;
	} how = {(uint64_t)flags, (uint64_t)mode, resolve};
	return (int)syscall(__NR_openat2, dirfd, path, &how, sizeof(how));
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_openat_in_root(int dirfd, const char *path, int flags)
{
	return sys_openat2(dirfd, path, flags, 0,
			   MPICTR_RESOLVE_IN_ROOT |
			       MPICTR_RESOLVE_NO_MAGICLINKS);
}

int sys_open_tree(int dfd, const char *path, unsigned int flags)
{
#ifdef __NR_open_tree
	return (int)syscall(__NR_open_tree, dfd, path, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_move_mount(int from_dfd, const char *from_path, int to_dfd,
		   const char *to_path, unsigned int flags)
{
#ifdef __NR_move_mount
	return (int)syscall(__NR_move_mount, from_dfd, from_path, to_dfd,
			    to_path, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_fsopen(const char *fsname, unsigned int flags)
{
#ifdef __NR_fsopen
	return (int)syscall(__NR_fsopen, fsname, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_fsconfig(int fd, unsigned int cmd, const char *key, const void *value,
		 int aux)
{
#ifdef __NR_fsconfig
	return (int)syscall(__NR_fsconfig, fd, cmd, key, value, aux);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int sys_fsmount(int fd, unsigned int flags, unsigned int attr_flags)
{
#ifdef __NR_fsmount
	return (int)syscall(__NR_fsmount, fd, flags, attr_flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}
