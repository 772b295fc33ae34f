/* imgread.c - read an image without mounting it (imgread.h).
 *
 * A squashfs or SIF image is read by a child process (the reader, named
 * mpictr-imgread): libsquashfuse trusts the image's tables, and a crafted
 * image may still crash it (docs/fuzzing.md), so it runs there, never in
 * mpictr itself. The reader opens the image once and answers the
 * requests of image_reader_* over a socket, one at a time; a reader that
 * dies or stops answering, or a read that finds the image corrupt (EIO),
 * breaks the reader object: every call then fails with the error that
 * says so (image_reader_broken). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "host/imgread.h"
#include "common/proc.h"
#include "sif/squash.h"
#include "common/syscalls.h"
#include "common/util.h"

struct image_reader {
	char *name;	    /* the image, for messages */
	int root;	    /* directory images: the root, else -1 */
	int sock;	    /* squashfs and SIF images: the reader's socket */
	pid_t pid;	    /* ... and the reader, until reaped */
	mpictr_err *broken; /* why the reader is gone, or NULL */
};

/* The requests, and what the reader answers (a message of at most
 * IMGREAD_MSG_MAX bytes, then the data). */
#define IMGREAD_MSG_MAX 4096
enum { RQ_OPEN, RQ_LIST, RQ_STAT, RQ_PREAD, RQ_READ };
struct rq {
	uint32_t op, pathlen;
	uint64_t n, off; /* PREAD: bytes and offset; READ: the most bytes */
};
struct rp {
	int32_t rc, errnum, exit_code;
	uint32_t mode, msglen, datalen;
	uint64_t size;
};

int image_reader_open_dir(const char *root, struct image_reader **r,
			  mpictr_err **err)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	*r = NULL;
	if (fd < 0)
		return err_set(err, errno, "image '%s'", root);
	*r = xcalloc(1, sizeof(**r));
	(*r)->name = xstrdup(root);
	(*r)->root = fd;
	(*r)->sock = -1;
	return 0;
}

/* ---- the reader (child side) --------------------------------------------- */

/* Answer one request: rc, the error or the mode and size, data. */
static void reader_reply(int sock, int rc, const mpictr_err *e, mode_t mode,
			 uint64_t size, const void *data, size_t len)
{
	const char *msg = e ? mpictr_err_message(e) : "";
	struct rp h = {.rc = rc,
		       .errnum = e ? mpictr_err_errno(e) : 0,
		       .exit_code = e ? mpictr_err_exit_code(e) : 0,
		       .mode = (uint32_t)mode,
		       .msglen = (uint32_t)strnlen(msg, IMGREAD_MSG_MAX),
		       .datalen = rc == 0 ? (uint32_t)len : 0,
		       .size = size};
	size_t n = sizeof(h) + h.msglen + h.datalen;
	char *buf = xmalloc(n);

	/* one write: the caller's read of the header gets it all */
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), msg, h.msglen);
	if (h.datalen)
		memcpy(buf + sizeof(h) + h.msglen, data, h.datalen);
	if (write_full(sock, buf, n) < 0)
		_exit(0); /* the caller is gone */
	free(buf);
}

/* A listing as one buffer: the names, each with its NUL. */
static char *reader_join(char **names, size_t *len)
{
	size_t n = 0, at = 0;
	char *buf;

	for (size_t i = 0; names && names[i]; i++)
		n += strlen(names[i]) + 1;
	buf = xmalloc(n + 1);
	for (size_t i = 0; names && names[i]; i++) {
		size_t l = strlen(names[i]) + 1;

		memcpy(buf + at, names[i], l);
		at += l;
	}
	*len = n;
	return buf;
}

/* Serve one request of q for path on the open image sq. */
static void reader_answer(int sock, struct squash_image *sq, const struct rq *q,
			  const char *path)
{
	mpictr_err *e = NULL;
	char **names = NULL, *data = NULL;
	mode_t mode = 0;
	uint64_t size = 0;
	size_t len = 0;
	int rc = -1;

	if (q->op == RQ_LIST) {
		rc = squash_image_list(sq, path, IMGREAD_MAX_ENTRIES, &names,
				       &e);
		if (rc == 0)
			data = reader_join(names, &len);
		strv_free(names);
	} else if (q->op == RQ_STAT) {
		rc = squash_image_stat(sq, path, &mode, &size, &data, &e);
		len = data ? strlen(data) + 1 : 0;
	} else if (q->op == RQ_PREAD && q->n <= IMGREAD_MAX_DATA) {
		data = xmalloc(q->n ? (size_t)q->n : 1);
		len = (size_t)q->n;
		rc = squash_image_pread(sq, path, data, len, q->off, &e);
	} else if (q->op == RQ_READ && q->n <= IMGREAD_MAX_DATA) {
		rc = squash_image_read(sq, path, (size_t)q->n, &data, &len, &e);
	} else {
		err_set(&e, EINVAL, "image reader: bad request %u", q->op);
	}
	reader_reply(sock, rc, e, mode, size, data, len);
	free(data);
	mpictr_err_free(e);
}

/* The reader: open the image, answer requests until the socket closes. */
static _Noreturn void reader_main(int sock, const struct image_info *img)
{
	struct squash_image *sq = NULL;
	mpictr_err *e = NULL;
	char path[PATH_MAX];
	struct rq q;

	prctl(PR_SET_NAME, "mpictr-imgread");
	close_all_fds_except(&sock, 1);
	if (squash_image_open(img->path, img->offset, &sq, &e) < 0) {
		reader_reply(sock, -1, e, 0, 0, NULL, 0);
		_exit(0);
	}
	reader_reply(sock, 0, NULL, 0, 0, NULL, 0);
	while (TEMP_FAILURE_RETRY(read(sock, &q, sizeof(q))) ==
	       (ssize_t)sizeof(q)) {
		if (q.pathlen >= sizeof(path) ||
		    TEMP_FAILURE_RETRY(read(sock, path, q.pathlen)) !=
			(ssize_t)q.pathlen)
			break;
		path[q.pathlen] = '\0';
		reader_answer(sock, sq, &q, path);
	}
	_exit(0);
}

/* ---- the caller's side -----------------------------------------------------
 */

/* The reader is gone (why: "killed by SIGSEGV", "did not answer in 60
 * s"...): reap it, and break r with the error that names the image. */
static int reader_broke(struct image_reader *r, const char *why,
			mpictr_err **err)
{
	char what[96];
	int st = 0;

	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		TEMP_FAILURE_RETRY(waitpid(r->pid, &st, 0));
		r->pid = -1;
	}
	close(r->sock);
	r->sock = -1;
	if (!why && WIFSIGNALED(st)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(st));

		snprintf(what, sizeof(what), "the reader was killed by SIG%s",
			 abbrev ? abbrev : "?");
		why = what;
	} else if (!why) {
		snprintf(what, sizeof(what), "the reader exited with status %d",
			 exit_code_of(st));
		why = what;
	}
	err_set(&r->broken, 0,
		"image '%s': reading the squashfs image failed (%s): the "
		"image is corrupt",
		r->name, why);
	return err_from_relay(err, 0, MPICTR_EXIT_FAILURE, r->broken->msg);
}

/* Read n bytes of the reader's answer, within the reader's time (the
 * socket's SO_RCVTIMEO). */
static int reader_recv(struct image_reader *r, void *buf, size_t n,
		       mpictr_err **err)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = TEMP_FAILURE_RETRY(
		    read(r->sock, (char *)buf + got, n - got));

		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return reader_broke(r,
					    "the reader did not answer in "
					    "time",
					    err);
		if (k <= 0)
			return reader_broke(r, NULL, err);
		got += (size_t)k;
	}
	return 0;
}

/* Send the request q with its path, in one message (no SIGPIPE when the
 * reader is gone). */
static int reader_send(struct image_reader *r, const struct rq *q,
		       const char *path)
{
	struct iovec iov[2] = {
	    {.iov_base = (void *)q, .iov_len = sizeof(*q)},
	    {.iov_base = (void *)path, .iov_len = q->pathlen}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	size_t want = sizeof(*q) + q->pathlen;
	ssize_t n = TEMP_FAILURE_RETRY(sendmsg(r->sock, &m, MSG_NOSIGNAL));

	/* (a request is a few KiB at most: the socket takes it whole) */
	return n == (ssize_t)want ? 0 : -1;
}

/* Ask the reader (q, path) and take its answer: 0 with *h and the data
 * (malloc'ed and NUL-terminated, when data is not NULL), or -1 with *err:
 * the reader's error, or r broken. */
static int reader_call(struct image_reader *r, struct rq *q, const char *path,
		       struct rp *h, char **data, mpictr_err **err)
{
	cleanup_free char *msg = NULL;
	char *buf = NULL;

	if (data)
		*data = NULL;
	if (r->broken)
		return err_from_relay(err, 0, MPICTR_EXIT_FAILURE,
				      r->broken->msg);
	q->pathlen = path ? (uint32_t)strlen(path) : 0;
	if (q->pathlen >= PATH_MAX)
		return err_set(err, ENAMETOOLONG, "image '%s': '%s'", r->name,
			       path);
	if ((q->op != RQ_OPEN && reader_send(r, q, path) < 0) ||
	    reader_recv(r, h, sizeof(*h), err) < 0)
		return r->broken ? -1 : reader_broke(r, NULL, err);
	if (h->msglen > IMGREAD_MSG_MAX || h->datalen > IMGREAD_MAX_DATA + 1)
		return reader_broke(r, "a malformed answer", err);
	msg = xmalloc(h->msglen + 1);
	buf = xmalloc((size_t)h->datalen + 1);
	if (reader_recv(r, msg, h->msglen, err) < 0 ||
	    reader_recv(r, buf, h->datalen, err) < 0) {
		free(buf);
		return -1;
	}
	msg[h->msglen] = buf[h->datalen] = '\0';
	if (h->rc < 0) {
		free(buf);
		/* a block that did not read back: no later answer counts */
		if (h->errnum == EIO)
			err_set(&r->broken, 0, "%s (the image is corrupt)",
				msg);
		return err_from_relay(err, h->errnum, h->exit_code, msg);
	}
	if (data)
		*data = buf;
	else
		free(buf);
	return 0;
}

int image_reader_open(const struct image_info *img, struct image_reader **r,
		      mpictr_err **err)
{
	struct rq q = {.op = RQ_OPEN};
	sigset_t none;
	struct rp h;
	int sv[2];
	pid_t pid;

	if (img->kind == IMAGE_DIR)
		return image_reader_open_dir(img->path, r, err);
	*r = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(err, errno, "image '%s': socketpair", img->path);
	sigemptyset(&none);
	pid = proc_fork_child(&none, "the image reader", err);
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		reader_main(sv[1], img);
	}
	close(sv[1]);
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO,
		   &(struct timeval){.tv_sec = IMGREAD_TIMEOUT_MS / 1000},
		   sizeof(struct timeval));
	*r = xcalloc(1, sizeof(**r));
	(*r)->name = xstrdup(img->path);
	(*r)->root = -1;
	(*r)->sock = sv[0];
	(*r)->pid = pid;
	if (reader_call(*r, &q, NULL, &h, NULL, err) < 0 && !(*r)->broken) {
		image_reader_close(*r);
		*r = NULL;
		return -1;
	}
	return 0;
}

bool image_reader_broken(const struct image_reader *r, mpictr_err **err)
{
	if (!r || !r->broken)
		return false;
	if (err)
		err_from_relay(err, 0, MPICTR_EXIT_FAILURE, r->broken->msg);
	return true;
}

/* The names below fd (a directory), at most IMGREAD_MAX_ENTRIES. */
static int dir_list(struct image_reader *r, const char *path, int fd,
		    char ***names, mpictr_err **err)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		close(fd);
		return err_set(err, errno, "image '%s': directory '%s'",
			       r->name, path);
	}
	while ((e = readdir(d))) {
		if (++n > IMGREAD_MAX_ENTRIES) {
			closedir(d);
			return err_set(err, E2BIG,
				       "image '%s': directory '%s' has more "
				       "than %d entries",
				       r->name, path, IMGREAD_MAX_ENTRIES);
		}
		strv_push(names, e->d_name);
	}
	closedir(d);
	return 0;
}

int image_reader_list(struct image_reader *r, const char *path, char ***names,
		      mpictr_err **err)
{
	char **all = NULL;
	int rc;

	*names = NULL;
	if (r->root < 0) {
		struct rq q = {.op = RQ_LIST};
		struct rp h;
		char *buf = NULL;

		rc = reader_call(r, &q, path, &h, &buf, err);
		for (size_t at = 0; rc == 0 && at < h.datalen;
		     at += strlen(buf + at) + 1)
			strv_push(&all, buf + at);
		free(buf);
	} else {
		int fd = sys_openat_in_root(r->root, path,
					    O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		rc = fd < 0 ? err_set(err, errno, "image '%s': directory '%s'",
				      r->name, path)
			    : dir_list(r, path, fd, &all, err);
	}
	if (rc < 0) {
		strv_free(all);
		return -1;
	}
	for (size_t i = 0; all && all[i]; i++)
		if (all[i][0] != '.')
			strv_push(names, all[i]);
	strv_free(all);
	strv_sort(*names, false);
	return 0;
}

/* A descriptor of path below a directory image's root. */
static int open_below(struct image_reader *r, const char *path, int flags,
		      mpictr_err **err)
{
	int fd = sys_openat_in_root(r->root, path, flags | O_CLOEXEC);

	if (fd < 0)
		err_set(err, errno, "image '%s': '%s'", r->name, path);
	return fd;
}

int image_reader_stat(struct image_reader *r, const char *path, mode_t *mode,
		      uint64_t *size, char **canon, mpictr_err **err)
{
	cleanup_close int fd = -1;
	cleanup_free char *real = NULL, *root = NULL;
	struct stat st;
	size_t rl;

	if (canon)
		*canon = NULL;
	if (r->root < 0) {
		struct rq q = {.op = RQ_STAT};
		struct rp h;

		if (reader_call(r, &q, path, &h, &real, err) < 0)
			return -1;
		*mode = (mode_t)h.mode;
		*size = h.size;
		if (canon)
			*canon = h.datalen ? xstrdup(real) : NULL;
		return 0;
	}
	fd = open_below(r, path, O_PATH, err);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "image '%s': '%s'", r->name, path);
	*mode = st.st_mode;
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	if (!canon)
		return 0;
	real = fd_path_dup(fd);
	root = fd_path_dup(r->root);
	rl = root ? strlen(root) : 0;
	if (!real || !root || strncmp(real, root, rl) != 0 ||
	    (real[rl] != '/' && real[rl] != '\0'))
		return err_set(err, EXDEV, "image '%s': '%s' is not below it",
			       r->name, path);
	*canon = xstrdup(real[rl] ? real + rl : "/");
	return 0;
}

int image_reader_pread(struct image_reader *r, const char *path, void *buf,
		       size_t n, uint64_t off, mpictr_err **err)
{
	cleanup_close int fd = -1;

	if (r->root < 0) {
		struct rq q = {.op = RQ_PREAD, .n = n, .off = off};
		cleanup_free char *data = NULL;
		struct rp h;

		if (n > IMGREAD_MAX_DATA)
			return err_set(err, EFBIG,
				       "image '%s': read of %zu bytes of '%s'",
				       r->name, n, path);
		if (reader_call(r, &q, path, &h, &data, err) < 0)
			return -1;
		if (h.datalen != n)
			return reader_broke(r, "a short answer", err);
		memcpy(buf, data, n);
		return 0;
	}
	fd = open_below(r, path, O_RDONLY, err);
	if (fd < 0)
		return -1;
	if (pread_full(fd, buf, n, (off_t)off) < 0)
		return err_set(err, errno ? errno : EIO,
			       "image '%s': read '%s'", r->name, path);
	return 0;
}

int image_reader_read(struct image_reader *r, const char *path, size_t max,
		      char **buf, size_t *len, mpictr_err **err)
{
	mode_t mode;
	uint64_t size;

	*buf = NULL;
	*len = 0;
	if (r->root < 0) {
		struct rq q = {.op = RQ_READ,
			       .n = max < IMGREAD_MAX_DATA ? max
							   : IMGREAD_MAX_DATA};
		struct rp h;

		if (reader_call(r, &q, path, &h, buf, err) < 0)
			return -1;
		*len = h.datalen;
		return 0;
	}
	if (image_reader_stat(r, path, &mode, &size, NULL, err) < 0)
		return -1;
	if (!S_ISREG(mode))
		return err_set(err, EINVAL, "image '%s': '%s' is not a file",
			       r->name, path);
	if (size > max)
		return err_set(err, EFBIG,
			       "image '%s': '%s' is larger than %zu bytes",
			       r->name, path, max);
	*buf = xmalloc((size_t)size + 1);
	if (image_reader_pread(r, path, *buf, (size_t)size, 0, err) < 0) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	(*buf)[size] = '\0';
	*len = (size_t)size;
	return 0;
}

bool image_reader_exists(struct image_reader *r, const char *path)
{
	mode_t mode;
	uint64_t size;

	return image_reader_stat(r, path, &mode, &size, NULL, NULL) == 0;
}

void image_reader_close(struct image_reader *r)
{
	if (!r)
		return;
	if (r->root >= 0)
		close(r->root);
	if (r->sock >= 0)
		close(r->sock); /* the reader reads EOF and exits */
	if (r->pid > 0)
		TEMP_FAILURE_RETRY(waitpid(r->pid, NULL, 0));
	mpictr_err_free(r->broken);
	free(r->name);
	free(r);
}
