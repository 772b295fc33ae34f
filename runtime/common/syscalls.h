/* syscalls.h - raw system calls glibc lacks, in one place
 * (docs/architecture.md "Conventions"). Each
 * returns -1 with errno set on failure, ENOSYS where the kernel headers
 * do not know the call. */
#ifndef MPICTR_SYSCALLS_H
#define MPICTR_SYSCALLS_H

#include <stdint.h>
#include <sys/mount.h>
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
/* The mount API of Linux 5.2 (glibc 2.36 has these in sys/mount.h). */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#define OPEN_TREE_CLOEXEC 02000000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_FLAG
#define FSCONFIG_SET_FLAG 0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5: a pidfd of a socket's peer */
#endif
/* openat2 resolve flags (linux/openat2.h) */
#define MPICTR_RESOLVE_NO_MAGICLINKS 0x02
#define MPICTR_RESOLVE_NO_SYMLINKS 0x04
#define MPICTR_RESOLVE_IN_ROOT 0x10

int sys_pidfd_open(pid_t pid, unsigned int flags);
/* pidfd_send_signal(pidfd, sig, NULL, 0) (Linux 5.1+). */
int sys_pidfd_send_signal(int pidfd, int sig);
int sys_pivot_root(const char *new_root, const char *put_old);
int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
		      struct mount_attr *attr, size_t size);
/* openat2(dirfd, path, {flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS}):
 * path and every symlink met are resolved with dirfd as the root, so an
 * image's absolute links stay inside the image, and /proc magic links are
 * refused (Linux 5.6+; ENOSYS before). */
int sys_openat_in_root(int dirfd, const char *path, int flags);
/* openat2(dirfd, path, {flags, mode, resolve}) (Linux 5.6+). */
int sys_openat2(int dirfd, const char *path, int flags, mode_t mode,
		uint64_t resolve);
int sys_open_tree(int dfd, const char *path, unsigned int flags);
int sys_move_mount(int from_dfd, const char *from_path, int to_dfd,
		   const char *to_path, unsigned int flags);
int sys_fsopen(const char *fsname, unsigned int flags);
int sys_fsconfig(int fd, unsigned int cmd, const char *key, const void *value,
		 int aux);
int sys_fsmount(int fd, unsigned int flags, unsigned int attr_flags);

#endif
