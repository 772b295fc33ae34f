/* squash.h - mount a squashfs image (plain file or SIF partition) with
 * libsquashfuse in-process, served by forked worker processes.
 *
 * Design, caching and lifetime rules: docs/mount.md. Only squash.c includes
 * the squashfuse and libfuse headers (docs/architecture.md "Conventions");
 * this header is self-contained.
 */
#ifndef MPICTR_SQUASH_H
#define MPICTR_SQUASH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpictr.h"

/* Most worker processes one mount may have. */
#define SQUASH_MAX_WORKERS 64

struct squash_mount;

/* Mount the squashfs found at byte `offset` of `image` on `mountpoint` (an
 * existing directory), read-only, nosuid, nodev, in the caller's current
 * mount namespace.
 *
 * Preconditions: the caller has done unshare(CLONE_NEWUSER | CLONE_NEWNS) and
 * written its uid/gid maps; /dev/fuse is opened here, after that, because the
 * kernel only accepts a FUSE fd opened in the mount's own user namespace.
 * SIGCHLD must not be ignored (workers are reaped with waitpid).
 *
 * The image is checked (magic, version, compressor, size, root inode) before
 * anything is mounted. The FUSE INIT handshake is completed here, then
 * `nworkers` (1..SQUASH_MAX_WORKERS) processes are forked; each holds its own
 * copy of the libsquashfuse state and reads requests from the same /dev/fuse
 * connection. Workers get PR_SET_PDEATHSIG(SIGKILL): they die when the
 * calling *thread* exits, so call this from the thread that owns the mount
 * for its whole life (the namespace holder is single-threaded). The caller
 * keeps no /dev/fuse descriptor, so once every worker is gone the connection
 * is aborted: users of the mount get ENOTCONN, never a hang.
 *
 * Returns 0 once the mount is usable, with *out owned by the caller (release
 * with squash_umount). On error returns -1 with *err set; nothing is left
 * mounted or running. Not thread-safe against concurrent calls. */
int squash_mount(const char *image, uint64_t offset, const char *mountpoint,
		 int nworkers, struct squash_mount **out, mpictr_err **err);

/* Detach the mount (lazy unmount), stop and reap the workers, free m. The
 * workers get a short grace period to finish requests in flight, then
 * SIGKILL. A worker the caller already reaped is skipped. NULL is a no-op.
 * Returns 0, or -1 with *err set when the unmount failed (m is freed and the
 * workers are stopped all the same). */
int squash_umount(struct squash_mount *m, mpictr_err **err);

/* Stop the workers at once (SIGKILL, reaped) and free m; NULL is a no-op.
 * For an owner that knows no user of the mount is left (the namespace
 * holder after the last rank): the mount itself goes with the namespace,
 * and binds of it elsewhere in the namespace would keep the connection
 * alive through any grace period. */
void squash_abort(struct squash_mount *m);

/* Reap any worker that has ended, without blocking. A worker only ends on
 * its own while the mount is in use when it was killed or crashed, and the
 * request it had read is then never answered: its reader would wait forever.
 * So when one has ended, the caller should squash_abort(m), which ends the
 * connection and turns every pending and later request into ENOTCONN.
 * Returns the pid of an ended worker (its wait status in *status), or 0. */
pid_t squash_reap_workers(struct squash_mount *m, int *status);

/* The worker pids, so that a caller reaping children with waitpid(-1) can
 * recognise them. *pids stays valid until squash_umount(m). */
size_t squash_worker_pids(const struct squash_mount *m, const pid_t **pids);

/* Reading an image without mounting it (planning: the image's env scripts
 * and verbs providers). Paths are resolved inside the image as
 * openat2(RESOLVE_IN_ROOT) does: symlinks followed (at most 40) with the
 * image root as "/", ".." never above it. Errors name the image and the
 * path. */
struct squash_image;
/* Open and check the squashfs at offset of image (as squash_mount does). */
int squash_image_open(const char *image, uint64_t offset,
		      struct squash_image **out, mpictr_err **err);
/* The names in directory path (unsorted, no "." or ".."), at most max
 * (more: E2BIG). */
int squash_image_list(struct squash_image *h, const char *path, size_t max,
		      char ***names, mpictr_err **err);
/* The mode (type and permissions) and size of path, and (canon, when not
 * NULL) the path inside the image it resolves to, malloc'ed. */
int squash_image_stat(struct squash_image *h, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err);
/* n bytes at off of the regular file path (all of them, or an error). */
int squash_image_pread(struct squash_image *h, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err);
/* The regular file at path, NUL-terminated, at most max bytes (larger:
 * EFBIG). */
int squash_image_read(struct squash_image *h, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err);
void squash_image_close(struct squash_image *h);

/* The table of the "squash" plugin (runtime/common/plugin.h): the functions
 * above, implemented in sif/squash.c; sif/squash_stub.c forwards to it. */
struct squash_plugin {
	int (*mount)(const char *image, uint64_t offset, const char *mountpoint,
		     int nworkers, struct squash_mount **out, mpictr_err **err);
	int (*umount)(struct squash_mount *m, mpictr_err **err);
	void (*abort)(struct squash_mount *m);
	pid_t (*reap_workers)(struct squash_mount *m, int *status);
	size_t (*worker_pids)(const struct squash_mount *m, const pid_t **pids);
	int (*image_open)(const char *image, uint64_t offset,
			  struct squash_image **out, mpictr_err **err);
	int (*image_list)(struct squash_image *h, const char *path, size_t max,
			  char ***names, mpictr_err **err);
	int (*image_stat)(struct squash_image *h, const char *path,
			  mode_t *mode, uint64_t *size, char **canon,
			  mpictr_err **err);
	int (*image_pread)(struct squash_image *h, const char *path, void *buf,
			   size_t n, uint64_t off, mpictr_err **err);
	int (*image_read)(struct squash_image *h, const char *path, size_t max,
			  char **buf, size_t *len, mpictr_err **err);
	void (*image_close)(struct squash_image *h);
};

#endif
