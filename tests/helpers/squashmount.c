/* squashmount.c - test driver for sif/squash.c: mount a squashfs image with
 * mpictr's in-process FUSE server inside a fresh user + mount namespace and
 * run a command with it mounted.
 *
 *   squashmount [-v] [-w N] [-o OFFSET] IMAGE MOUNTPOINT -- CMD [ARGS...]
 *
 * Identity uid/gid map of the caller, setgroups denied, / made rprivate.
 * The command sees MPICTR_SQUASH_WORKERS="PID PID ..." (the worker pids).
 * -v sends the library's debug log (worker request counts at exit) to
 * stderr. Exit status: the command's (128+signal if killed), 255 when the
 * driver or the mount fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "sif/squash.h"
#include "common/util.h"

static void die(const char *what, mpictr_err *err)
{
	fprintf(stderr, "squashmount: %s%s%s\n", what, err ? ": " : "",
		err ? mpictr_err_message(err) : "");
	exit(255);
}

static void sink(enum mpictr_log_level level, const char *line, void *data)
{
	cleanup_free char *s =
	    xasprintf("squashmount[%d]: %s\n", getpid(), line);
	write_full(2, s, strlen(s));
}

static void write_map(const char *file, const char *text)
{
	mpictr_err *err = NULL;

	if (write_file(file, text, O_WRONLY)) {
		err_set(&err, errno, "write '%s'", file);
		die("user namespace", err);
	}
}

int main(int argc, char **argv)
{
	mpictr_err *err = NULL;
	struct squash_mount *m = NULL;
	struct strbuf sb = STRBUF_INIT;
	const pid_t *pids;
	unsigned long long offset = 0;
	uid_t uid = getuid();
	gid_t gid = getgid();
	long workers = 1;
	size_t n;
	char *map;
	pid_t child;
	int opt, status;

	while ((opt = getopt(argc, argv, "+vw:o:")) != -1) {
		switch (opt) {
		case 'v':
			mpictr_set_log_sink(sink, NULL, MPICTR_LOG_DEBUG);
			break;
		case 'w':
			if (parse_long(optarg, 1, 1000, &workers))
				die("bad -w", NULL);
			break;
		case 'o':
			offset = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: squashmount [-v] [-w N] "
					"[-o OFFSET] IMAGE MNT -- CMD...\n");
			return 255;
		}
	}
	if (argc - optind < 3 || strcmp(argv[optind + 2], "--") ||
	    argc - optind < 4) {
		fprintf(stderr, "usage: squashmount [-v] [-w N] [-o OFFSET] "
				"IMAGE MNT -- CMD...\n");
		return 255;
	}

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		err_set(&err, errno, "unshare(CLONE_NEWUSER|CLONE_NEWNS)");
		die("namespace", err);
	}
	write_map("/proc/self/setgroups", "deny");
	map = xasprintf("%u %u 1", (unsigned)uid, (unsigned)uid);
	write_map("/proc/self/uid_map", map);
	free(map);
	map = xasprintf("%u %u 1", (unsigned)gid, (unsigned)gid);
	write_map("/proc/self/gid_map", map);
	free(map);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		err_set(&err, errno, "make / rprivate");
		die("namespace", err);
	}

	if (squash_mount(argv[optind], offset, argv[optind + 1], (int)workers,
			 &m, &err))
		die("mount", err);
	n = squash_worker_pids(m, &pids);
	for (size_t i = 0; i < n; i++)
		sb_printf(&sb, "%s%d", i ? " " : "", (int)pids[i]);
	setenv("MPICTR_SQUASH_WORKERS", sb.buf ? sb.buf : "", 1);
	sb_free(&sb);

	child = fork();
	if (child < 0) {
		err_set(&err, errno, "fork");
		die("run", err);
	}
	if (child == 0) {
		execvp(argv[optind + 3], argv + optind + 3);
		fprintf(stderr, "squashmount: exec '%s': %s\n",
			argv[optind + 3], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	if (TEMP_FAILURE_RETRY(waitpid(child, &status, 0)) < 0) {
		err_set(&err, errno, "wait for '%s'", argv[optind + 3]);
		die("run", err);
	}
	if (squash_umount(m, &err))
		die("unmount", err);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
