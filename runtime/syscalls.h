/* syscalls.h - raw system calls glibc lacks, in one place (R6). Each
 * returns -1 with errno set on failure, ENOSYS where the kernel headers
 * do not know the call. */
#ifndef MPICTR_SYSCALLS_H
#define MPICTR_SYSCALLS_H

#include <stdint.h>
#include <sys/types.h>

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
struct mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

int sys_pidfd_open(pid_t pid, unsigned int flags);
int sys_pivot_root(const char *new_root, const char *put_old);
int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
		      struct mount_attr *attr, size_t size);
/* openat2(dirfd, path, {flags, RESOLVE_IN_ROOT}): path and every symlink
 * met are resolved with dirfd as the root, so an image's absolute links
 * stay inside the image (Linux 5.6+; ENOSYS before). */
int sys_openat_in_root(int dirfd, const char *path, int flags);

#endif
