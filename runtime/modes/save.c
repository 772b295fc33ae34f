/* save.c - `mpictr instance save NAME PATH`: the instance's container as
 * it is now (the image with what a --writable-tmpfs or --overlay layer
 * changed) packed by mksquashfs into a new squashfs image at PATH.
 *
 * What is packed is the merged view of the image, never what is mounted
 * on it: a child joins the instance's namespaces, takes a private copy of
 * its mount namespace (unshare) and there lays out a stage on a new tmpfs
 * (over /dev, in the copy only): each top-level entry of the container
 * root that shows the image (an overlay or squashfuse mount, or a bind of
 * a directory image) is cloned without the mounts below it (open_tree
 * without AT_RECURSIVE: no $HOME, working directory, /etc/passwd or device
 * binds), top-level symlinks are copied, everything else (/proc, /sys,
 * /dev, /tmp) becomes an empty directory. The mount points the runtime
 * made where the image lacked them (the list in the root, rootfs.h) are
 * left out: the directories above them are staged entry by entry. The child
 * hands the stage's directory over (SCM_RIGHTS) and mksquashfs (sif_mksquashfs,
 * as `sif create` runs it) reads it from the host as /proc/self/fd/N. Owners
 * are what the host sees: the image's root-owned files show as the overflow id
 * unless the instance maps the user to root
 * (--fakeroot). Files the user cannot read in the container cannot be
 * packed (mksquashfs fails and says which).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "common/util.h"
#include "common/syscalls.h"
#include "config/config.h"
#include "container/imgtrust.h"
#include "container/ns.h"
#include "container/rootfs.h"
#include "modes/instance.h"
#include "modes/save.h"
#include "modes/wire.h"
#include "sif/sif_write.h"

#define SAVE_STAGE "/dev/.mpictr-save"
#define OVERLAYFS_MAGIC 0x794c7630
#define FUSE_MAGIC 0x65735546

/* Does the mount at dfd/name show the image (or its writable layer)? */
static bool shows_image(int dfd, const char *name)
{
	cleanup_close int fd =
	    openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct statfs sf;

	if (fd < 0 || fstatfs(fd, &sf) < 0)
		return false;
	return (unsigned long)sf.f_type == OVERLAYFS_MAGIC ||
	       (unsigned long)sf.f_type == FUSE_MAGIC;
}

/* Is path one of the mount points in skip ("made"), or a directory on
 * the way to one ("above")? */
static int skip_kind(char **skip, const char *path)
{
	size_t n = strlen(path);
	int k = 0;

	for (size_t i = 0; skip && skip[i]; i++) {
		if (strcmp(skip[i], path) == 0)
			return 2;
		if (strncmp(skip[i], path, n) == 0 && skip[i][n] == '/')
			k = 1;
	}
	return k;
}

static int stage_dir(int dir, int stage, const char *path, char **skip,
		     mpictr_err **err);

/* One entry name of the container's directory dir (at path, "" for the
 * root) into the stage's directory stage. skip: the mount points the
 * runtime made where the image lacked them (rootfs.h), left out; the
 * directories above them are staged entry by entry. */
static int stage_entry(int dir, int stage, const char *path, const char *name,
		       char **skip, mpictr_err **err)
{
	cleanup_free char *full = xasprintf("%s/%s", path, name);
	struct stat st;
	cleanup_close int clone = -1, tfd = -1;
	int kind = skip_kind(skip, full);

	if (kind == 2 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);

		if (n < 0)
			return 0;
		target[n] = '\0';
		if (symlinkat(target, stage, name) < 0)
			return err_set(err, errno, "stage symlink '%s'", full);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	if (S_ISDIR(st.st_mode) ? mkdirat(stage, name, st.st_mode & 07777)
				: mknodat(stage, name, S_IFREG | 0644, 0))
		return err_set(err, errno, "stage '%s'", full);
	if (!shows_image(dir, name))
		return 0; /* a mount of the host or a tmpfs: left empty */
	if (kind == 1 && S_ISDIR(st.st_mode)) {
		cleanup_close int sub = openat(
		    dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		cleanup_close int ssub =
		    openat(stage, name,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || ssub < 0)
			return err_set(err, errno, "stage '%s'", full);
		return stage_dir(sub, ssub, full, skip, err);
	}
	clone = sys_open_tree(dir, name,
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
				  AT_SYMLINK_NOFOLLOW);
	tfd = openat(stage, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (clone < 0 || tfd < 0 ||
	    sys_move_mount(clone, "", tfd, "",
			   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
		0)
		return err_set(err, errno, "stage '%s'", full);
	return 0;
}

/* Every entry of the container's directory dir (at path) into stage; at
 * the root, the runtime's own entries (.mpictr*) are left out. */
static int stage_dir(int dir, int stage, const char *path, char **skip,
		     mpictr_err **err)
{
	DIR *d = fdopendir(dup(dir));
	struct dirent *de;
	int rc = 0;

	if (!d)
		return err_set(err, errno, "read '%s/'", path);
	while (rc == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (*path || strncmp(de->d_name, ".mpictr", 7)))
			rc = stage_entry(dir, stage, path, de->d_name, skip,
					 err);
	}
	closedir(d);
	return rc;
}

/* The mount points rootfs.c made where the image lacked them. */
static char **made_mount_points(void)
{
	cleanup_free char *text = read_file("/" ROOTFS_MP_LIST, 1 << 20, NULL);
	char **v = NULL, *save = NULL;

	if (!text)
		return NULL;
	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		if (l[0] == '/')
			strv_push(&v, l);
	return v;
}

/* In the child, inside the instance: the stage at SAVE_STAGE. */
static int stage_build(int userns, int mntns, mpictr_err **err)
{
	cleanup_close int root = -1, stage = -1;
	char **skip;
	int rc;

	if (ns_join(userns, mntns, err) < 0)
		return -1;
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_set(err, errno, "a private copy of the mounts");
	root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return err_set(err, errno, "open the container root");
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") <
		0 ||
	    mkdir(SAVE_STAGE, 0755) < 0 ||
	    (stage = open(SAVE_STAGE, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_set(err, errno, "mount the stage");
	skip = made_mount_points();
	rc = stage_dir(root, stage, "", skip, err);
	strv_free(skip);
	return rc;
}

/* In the child: the stage built, its directory sent over sock. */
static void saver(const struct instance_attach *a, int sock, int wfd)
{
	mpictr_err *e = NULL;
	int stage;

	if (stage_build(a->userns, a->mntns, &e) < 0 ||
	    (stage = open(SAVE_STAGE, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) <
		0 ||
	    wire_send_reply(sock, 0, NULL, 0, &stage, 1, &e) < 0) {
		if (!e)
			err_set(&e, errno, "hand the stage over");
		relay_send(wfd, e);
		_exit(MPICTR_EXIT_FAILURE);
	}
	relay_send_ready(wfd);
	close(wfd);
	pause();
	_exit(0);
}

/* Pack the stage (a directory fd the saver sent over sock) into path.
 * mksquashfs reads it as /proc/self/fd/N, inherited: no other process is
 * looked into (the saver need not be dumpable: in slurmstepd's child it
 * must not be). */
static int pack(int sock, const char *name, const char *path, mpictr_err **err)
{
	cleanup_free char *src = NULL;
	cleanup_close int fd = -1;
	struct wire_reply r;
	int rc = wire_recv_reply(sock, 1, &r, err);

	if (rc == 1)
		err_set(err, EPROTO, "the saver closed the connection");
	if (rc == 0 && r.nfds != 1) {
		wire_reply_free(&r);
		rc = err_set(err, EPROTO, "the saver sent no directory");
	}
	if (rc != 0)
		return err_wrap(err, "instance '%s': receive the stage", name);
	fd = r.fds[0];
	r.fds[0] = -1;
	wire_reply_free(&r);
	if (fcntl(fd, F_SETFD, 0) < 0)
		return err_set(err, errno, "instance '%s': receive the stage",
			       name);
	src = xasprintf("/proc/self/fd/%d/.", fd);
	if (sif_mksquashfs_keep(src, path, fd, NULL, NULL, err) < 0)
		return err_wrap(err, "instance '%s': save to '%s'", name, path);
	return 0;
}

int instance_save(const struct mpictr_config *cfg, const char *path,
		  mpictr_err **err)
{
	struct instance_attach a;
	int rfd = -1, wfd = -1, rc = -1, status, sv[2];
	pid_t pid;

	if (!path || !*path)
		return err_set(err, EINVAL, "instance save: missing PATH");
	if (instance_attach(cfg, &a, err) < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		instance_attach_free(&a);
		return err_set(err, errno, "socketpair");
	}
	pid = proc_fork_relay(&rfd, &wfd, "the instance saver", err);
	if (pid == 0) {
		close(sv[0]);
		saver(&a, sv[1], wfd);
	}
	close(sv[1]);
	if (pid > 0) {
		if (relay_recv_ready(rfd, "the instance saver", err) == 0)
			rc = pack(sv[0], a.name, path, err);
		close(rfd);
		kill(pid, SIGKILL);
		TEMP_FAILURE_RETRY(waitpid(pid, &status, 0));
	}
	close(sv[0]);
	instance_attach_free(&a);
	return rc;
}

MPICTR_PUBLIC int mpictr_instance_save(mpictr_config *cfg, const char *name,
				       const char *path, mpictr_err **err)
{
	cleanup_free char *ref = NULL, *what = NULL;
	struct site_trust t;
	char *image;
	int rc;

	if (!cfg || !name)
		return err_set(err, EINVAL, "missing config or instance name");
	if (instance_name_check(name, err) < 0)
		return -1;
	/* the site's signature policy: may a signed image be repacked? */
	if (config_site_trust(cfg, &t, err) < 0)
		return -1;
	what = xasprintf("saving instance '%s'", name);
	rc = imgtrust_allows(&t, IMGTRUST_SAVE, what, err);
	site_trust_free(&t);
	if (rc < 0)
		return -1;
	ref = xasprintf("instance://%s", name);
	image = cfg->image;
	cfg->image = ref;
	rc = instance_save(cfg, path, err);
	cfg->image = image;
	return rc;
}
