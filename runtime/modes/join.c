/* join.c - join mode: `srun mpictr IMAGE CMD`, `mpirun -np N mpictr IMAGE
 * CMD`, `mpiexec -n N mpictr ...`: one mpictr per rank, started by the
 * launcher, all local ranks of a job in one container.
 *
 * Who the local peers are comes from the mode decision (mode.c, with
 * launcher.c): the launcher's job key, this task's local rank and the
 * local size, or no size (counting mode).
 *
 * The first task of a node to arrive starts the *keeper* for the node and
 * job: a detached process that starts the namespace holder (holder.c)
 * and serves its namespace fds over a Unix socket in a private directory.
 * Every task, the first included, connects, says which local rank of
 * which local size it is, receives the fds (SCM_RIGHTS), joins and execs
 * in place, so the launcher's daemon (slurmstepd, orted or mpirun,
 * hydra_pmi_proxy) stays the rank's parent and PMI_FD, PMI_PORT, the PMIx
 * variables, signals, exit codes and accounting are the launcher's.
 *
 * The keeper checks the claims: a local rank claimed twice, a size that
 * differs from the first task's, a rank not below the size, more tasks
 * than the size. Each is refused with an error that names the launcher
 * and the variables read (the task exits 255 and the launcher ends the
 * job): never a wrong grouping or a wait.
 *
 * Rendezvous: DIR = /tmp/mpictr-join-UID (0700, owner and mode checked on
 * every use; the tasks never follow a symlink there), or a private name
 * nobody else can predict when another user took that one (keeper_dir). The
 * key is a hash of the uid, the boot id, the host name, the launcher's
 * job key and node, the image and the inputs that decide the container
 * (after a readable prefix, the launcher's job id): two steps, two jobs,
 * two mpiruns, two simulated nodes or two tasks asking for different
 * containers never meet by mistake. Peers are checked with SO_PEERCRED both
 * ways: another user can never join, nor serve. A lock file (flock) elects the
 * task that starts the keeper; a stale socket of a killed keeper is replaced
 * under the same lock.
 *
 * Lifetime: the keeper counts tasks in (accept) and out (pidfd of the
 * peer); it exits when the node's exact count (the launcher's local size)
 * has come and gone, or when every task that came is gone and none
 * arrived for JOIN_IDLE_S (a task that never starts), or when the
 * launcher's daemon that started the tasks is gone. A launcher that gives
 * no local size runs in counting mode: the keeper lives while it has
 * members, plus RUN_JOIN_LINGER_MS after the last one left for late arrivals
 * (the ranks of an MPI job cannot finish MPI_Init without each other, so
 * they overlap). Its holder then unmounts the image and the namespaces
 * disappear.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "container/exec.h"
#include "container/holder.h"
#include "modes/join.h"
#include "host/launcher.h"
#include "common/proc.h"
#include "common/syscalls.h"

#define JOIN_MAGIC 0x6d706a34u /* "mpj4" */
#define JOIN_CLAIM_MS 2000     /* keeper: wait this long for a claim */
#define JOIN_WAIT_S 120	       /* a task waits this long for its keeper */
#define JOIN_IDLE_S 60	       /* keeper: no task left, none arriving */
#define JOIN_ALT_DIRS 64       /* private names tried when squatted */

/* The exchange on a connection: the keeper sends a join_msg with the
 * namespace fds and reads the task's claim (join_hello, which the task
 * sends right after connecting); it answers with its verdict
 * (join_verdict), and the task uses the fds only when it is JOIN_OK. A peer
 * that never claims (an older mpictr, a probe) counts as a member of unknown
 * rank, as before claims existed. */
struct join_hello {
	uint32_t magic;
	uint32_t local_rank, local_size; /* LAUNCHER_UNKNOWN: not given */
};

struct join_msg {
	uint32_t magic;
	int32_t status;	 /* 0: two fds come with it */
	uint64_t digest; /* join_plan_digest() of the keeper's plan */
	/* The keeper's UCX answer (host_given), so that the node's tasks do
	 * not each run the UCX query helper: JOIN_UCX_NONE (no devices),
	 * JOIN_UCX_ASK (not sent: ask yourself), or the length of the string
	 * that follows the message (at most JOIN_UCX_MAX bytes). */
	int32_t ucx_len;
	uint32_t pad;
};

#define JOIN_UCX_NONE (-1)
#define JOIN_UCX_ASK (-2)
#define JOIN_UCX_MAX 4096

/* What the keeper answers besides the fds. */
struct join_answer {
	uint64_t digest;
	bool ucx_known;
	char *ucx; /* its UCX answer when ucx_known, or NULL */
};

struct join_verdict {
	uint32_t magic;
	int32_t status; /* a join_refusal */
	uint32_t a, b;	/* its values */
};

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h * 0x100000001b3ULL;
}

/* FNV-1a of a string or NULL, told apart from "" (the digests below). */
static uint64_t fnv_str(uint64_t h, const char *s)
{
	return s ? fnv1a(h ^ 1, s) : fnv1a(h ^ 2, "");
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                               \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = ROTL(v1, 13);                                             \
		v1 ^= v0;                                                      \
		v0 = ROTL(v0, 32);                                             \
		v2 += v3;                                                      \
		v3 = ROTL(v3, 16);                                             \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = ROTL(v3, 21);                                             \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = ROTL(v1, 17);                                             \
		v1 ^= v2;                                                      \
		v2 = ROTL(v2, 32);                                             \
	} while (0)

uint64_t join_siphash(const uint8_t key[16], const void *data, size_t len)
{
	const uint8_t *in = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
	uint64_t v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)in[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- the rendezvous directory -------------------------------------------
 *
 * /tmp/mpictr-join-UID when it is absent (created 0700) or ours: a
 * directory, not a symlink, owned by the user, no group or other access,
 * checked with fstat on an O_NOFOLLOW descriptor. Another user can take
 * that name first (a directory, a symlink, a file): then the tasks fall
 * back to /tmp/mpictr-join-UID-HASH, HASH = SipHash of the node's boot id
 * and a counter under a random key that only the user can read
 * ($HOME/.mpictr-join-key, created on first need). Another user cannot
 * predict that name, and every task of the user on the node derives the
 * same one from the same state: the first of the names 0, 1, ... that is
 * absent or ours (a name is only seen by others once used; should one be
 * removed and then taken, the next is used). The directory is never
 * removed while in use: /tmp is sticky, nobody else can rename it.
 */

/* Make path a private directory of ours: 0 it is (created or found), 1
 * someone else holds the name (*why says what is there), -1 error. */
static int dir_try(const char *path, char **why, mpictr_err **err)
{
	struct stat st;
	struct passwd *pw;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_set(err, errno,
			       "create the rendezvous directory '%s'", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		int rc = fstat(fd, &st), e = errno;

		close(fd);
		if (rc < 0)
			return err_set(err, e, "rendezvous directory '%s'",
				       path);
		if (st.st_uid == getuid() && !(st.st_mode & 077))
			return 0;
	} else if (errno != ELOOP && errno != ENOTDIR && errno != EACCES) {
		return err_set(err, errno, "open the rendezvous directory '%s'",
			       path);
	} else if (lstat(path, &st) < 0) {
		return err_set(err, errno, "rendezvous directory '%s'", path);
	}
	pw = getpwuid(st.st_uid);
	*why = xasprintf("%s, owner %s%s(uid %u), mode %o",
			 S_ISLNK(st.st_mode)   ? "a symbolic link"
			 : S_ISDIR(st.st_mode) ? "a directory"
					       : "not a directory",
			 pw ? pw->pw_name : "", pw ? " " : "",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 1;
}

static char *home_dir(char *const *env)
{
	const char *home = env_get(env, "HOME");
	struct passwd *pw;

	if (home && home[0] == '/')
		return xstrdup(home);
	pw = getpwuid(getuid());
	return xstrdup(pw && pw->pw_dir ? pw->pw_dir : "/");
}

/* Read the key file: 0, 1 absent, -1 error (not a private file of ours
 * holding 32 hex digits). */
static int key_read(const char *path, uint8_t key[16], mpictr_err **err)
{
	char buf[34];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return err_set(err, errno, "open the join key '%s'", path);
	if (fstat(fd, &st) < 0) {
		err_set(err, errno, "join key '%s'", path);
		close(fd);
		return -1;
	}
	n = S_ISREG(st.st_mode) ? read(fd, buf, sizeof(buf)) : -1;
	close(fd);
	if (!S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) || n != 33 || buf[32] != '\n')
		goto bad;
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(buf + 2 * i, "%2x", &v) != 1 ||
		    !isxdigit((unsigned char)buf[2 * i]) ||
		    !isxdigit((unsigned char)buf[2 * i + 1]))
			goto bad;
		key[i] = (uint8_t)v;
	}
	return 0;
bad:
	err_set(err, 0,
		"join key '%s' is not a private file of uid %u holding 32 "
		"hex digits",
		path, (unsigned)getuid());
	return err_hint(err, "remove it: a new one is made");
}

/* The user's join key, made on first need. Tasks starting together all
 * end with the same: each writes a candidate to a file of its own and
 * link()s it to the name (atomic, also on NFS); the first link wins and
 * everybody reads what won. */
static int join_secret(char *const *env, uint8_t key[16], mpictr_err **err)
{
	cleanup_free char *home = home_dir(env);
	cleanup_free char *path =
	    xasprintf("%s%s.mpictr-join-key", home,
		      home[strlen(home) - 1] == '/' ? "" : "/");
	char host[128] = "";

	gethostname(host, sizeof(host) - 1);
	for (int tries = 0;; tries++) {
		cleanup_free char *tmp = NULL;
		uint8_t rnd[16];
		char hex[34];
		int rc = key_read(path, key, err), fd;

		if (rc <= 0)
			return rc;
		if (tries == 3)
			return err_set(err, ENOENT, "join key '%s'", path);
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return err_set(err, errno, "getrandom");
		for (int i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
		hex[32] = '\n';
		tmp = xasprintf("%s.%s.%d", path, host, (int)getpid());
		fd = open(tmp,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600);
		if (fd < 0 && errno == EEXIST) {
			/* left by a killed task with our pid and host */
			unlink(tmp);
			fd = open(tmp,
				  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				      O_CLOEXEC,
				  0600);
		}
		if (fd < 0)
			return err_set(err, errno, "create the join key '%s'",
				       tmp);
		if (write_full(fd, hex, 33) < 0 || fsync(fd) < 0) {
			err_set(err, errno, "write the join key '%s'", tmp);
			close(fd);
			unlink(tmp);
			return -1;
		}
		close(fd);
		if (link(tmp, path) < 0 && errno != EEXIST) {
			err_set(err, errno, "create the join key '%s'", path);
			unlink(tmp);
			return -1;
		}
		unlink(tmp);
	}
}

/* The rendezvous directory of this user on this node (see above). notice:
 * log the fallback (one task per node does). */
int keeper_dir(char *const *env, char **out, bool notice, mpictr_err **err)
{
	unsigned uid = (unsigned)getuid();
	cleanup_free char *dir = xasprintf("/tmp/mpictr-join-%u", uid);
	cleanup_free char *why = NULL;
	char boot[64] = "";
	uint8_t key[16];
	int rc = dir_try(dir, &why, err);
	int fd;

	if (rc == 0) {
		*out = dir;
		dir = NULL;
	}
	if (rc <= 0)
		return rc;
	if (join_secret(env, key, err) < 0) {
		err_wrap(err,
			 "rendezvous directory '%s' is taken (%s) and the "
			 "private one needs a key",
			 dir, why);
		return err_hint(err,
				"ask the administrator to remove '%s', "
				"or run with MPICTR_JOIN=0",
				dir);
	}
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, boot, sizeof(boot) - 1) < 0)
			boot[0] = '\0';
		close(fd);
	}
	for (unsigned i = 0; i < JOIN_ALT_DIRS; i++) {
		cleanup_free char *msg = xasprintf("%u %s %u", uid, boot, i);
		cleanup_free char *why2 = NULL;
		char *alt = xasprintf(
		    "/tmp/mpictr-join-%u-%016llx", uid,
		    (unsigned long long)join_siphash(key, msg, strlen(msg)));

		rc = dir_try(alt, &why2, err);
		if (rc == 0) {
			if (notice)
				log_notice("rendezvous directory '%s' is "
					   "taken (%s): using '%s' instead",
					   dir, why, alt);
			*out = alt;
			return 0;
		}
		free(alt);
		if (rc < 0)
			return -1;
	}
	err_set(err, 0,
		"rendezvous directory '%s' is taken (%s), and so are the %d "
		"private alternatives",
		dir, why, JOIN_ALT_DIRS);
	return err_hint(err, "ask the administrator to remove them, or run "
			     "with MPICTR_JOIN=0");
}

/* ---- what decides the container -----------------------------------------
 *
 * Tasks of one step may pass different options (srun --multi-prog). Those
 * whose containers would differ must not share one: the key covers a
 * digest of the task's inputs to plan_build() that decide the container
 * (options, config files, the working directory, HOME and the other
 * variables planning reads), cheap enough to compute before the keeper
 * answers; and a task checks that its own plan, once built, has the
 * keeper's join_plan_digest(), or fails with an error (in case something
 * not in the first digest differs). Per task are only the command, the
 * environment and the start directory inside: container_exec() takes them
 * from the task's own plan. */

static uint64_t fnv_items(uint64_t h, const struct site_items *it)
{
	h = fnv_u64(h, it->n);
	for (size_t i = 0; i < it->n; i++)
		h = fnv_str(h, it->v[i].value);
	return h;
}

static uint64_t join_inputs_digest(const struct mpictr_config *cfg)
{
	static const char *const vars[] = {"HOME", "PMIX_SERVER_TMPDIR",
					   "MPICTR_SYSROOT"};
	static const char *const set[] = {"PMI_FD", "PMIX_SERVER_URI41",
					  "PMIX_SERVER_URI4"};
	const struct siteconf *sc = &cfg->site;
	cleanup_free char *cwd = getcwd(NULL, 0);
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv_u64(h, (uint64_t)cfg->contain | (uint64_t)cfg->fakeroot << 1 |
			   (uint64_t)cfg->gpu << 2 |
			   (uint64_t)cfg->inject_verbs << 3);
	h = fnv_str(h, cfg->devices);
	h = fnv_str(h, cwd);
	h = fnv_u64(h, cfg->nbinds);
	for (size_t i = 0; i < cfg->nbinds; i++) {
		h = fnv_str(h, cfg->binds[i].src);
		h = fnv_str(h, cfg->binds[i].dst);
		h = fnv_u64(h, cfg->binds[i].ro);
	}
	for (size_t i = 0; cfg->profiles && cfg->profiles[i]; i++)
		h = fnv_str(h, cfg->profiles[i]);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		h = fnv_str(h, env_get(cfg->host_env, vars[i]));
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		h = fnv_u64(h, env_get(cfg->host_env, set[i]) != NULL);
	/* The site file and user config files (--config, MPICTR_CONF). */
	h = fnv_items(h, &sc->binds);
	h = fnv_items(h, &sc->env);
	h = fnv_items(h, &sc->allow_binds);
	h = fnv_items(h, &sc->deny_binds);
	h = fnv_str(h, sc->devices.value);
	h = fnv_str(h, sc->lock_devices.value);
	h = fnv_str(h, sc->transport_env.value);
	h = fnv_str(h, sc->lock_transport_env.value);
	h = fnv_str(h, sc->user_binds.value);
	for (size_t i = 0; i < sc->nprofiles; i++) {
		const struct site_profile *pr = &sc->profiles[i];

		h = fnv_str(h, pr->name);
		h = fnv_items(h, &pr->binds);
		h = fnv_items(h, &pr->env);
		h = fnv_items(h, &pr->env_prepend);
		h = fnv_str(h, pr->mpi.value);
		h = fnv_items(h, &pr->mpi_deps);
		h = fnv_u64(h, pr->mpi_warn);
	}
	return h;
}

uint64_t join_plan_digest(const struct plan *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv_str(h, p->image.path);
	h = fnv_u64(h, (uint64_t)p->image.kind);
	h = fnv_u64(h, p->image.offset);
	h = fnv_u64(h, p->nops);
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];

		h = fnv_u64(h, (uint64_t)op->kind |
				   (uint64_t)op->optional << 8 |
				   (uint64_t)op->src_is_dir << 9);
		h = fnv_str(h, op->source);
		h = fnv_str(h, op->target);
		h = fnv_u64(h, op->flags);
		h = fnv_str(h, op->data);
	}
	h = fnv_u64(h, p->ndevices);
	for (size_t i = 0; i < p->ndevices; i++) {
		h = fnv_str(h, p->devices[i].path);
		h = fnv_str(h, p->devices[i].kind);
	}
	h = fnv_u64(h, p->nmpi);
	for (size_t i = 0; i < p->nmpi; i++) {
		h = fnv_str(h, p->mpi[i].profile);
		h = fnv_str(h, p->mpi[i].host.path);
		h = fnv_u64(h, p->mpi[i].warn_only);
	}
	h = fnv_u64(h, (uint64_t)p->uid << 32 | p->gid);
	h = fnv_u64(h, (uint64_t)p->uid_in << 32 | p->gid_in);
	h = fnv_str(h, p->sysroot);
	h = fnv_u64(h, (uint64_t)p->inject_verbs | (uint64_t)p->shared_ns << 1);
	return h;
}

static void read_boot_id(char *boot, size_t len)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;

	if (fd >= 0) {
		n = read(fd, boot, len - 1);
		close(fd);
	}
	boot[n > 0 ? n : 0] = '\0';
}

/* The rendezvous name of this task's job on this node: the launcher's
 * first two key parts and the node id (for people and `ls`: JOB.STEP.NODE
 * under Slurm), then a hash of everything that must be equal to share. */
static char *join_key(const struct launch_peers *pe, const char *image,
		      uint64_t inputs)
{
	char host[256] = "", boot[64], uid[32], prefix[64];
	const char *k = pe->key ? pe->key : "", *part = strchr(k, '|');
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t n = 0;

	gethostname(host, sizeof(host) - 1);
	read_boot_id(boot, sizeof(boot));
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	h = fnv_str(h, uid);
	h = fnv_str(h, boot);
	h = fnv_str(h, host);
	h = fnv_str(h, launcher_rule_name(pe->rule));
	h = fnv_str(h, k);
	h = fnv_u64(h, pe->node_id);
	h = fnv_str(h, pe->node_name);
	h = fnv_str(h, image);
	h = fnv_u64(h, inputs);
	for (int i = 0; part && i < 2; i++) {
		size_t len = 0;

		part++;
		if (n)
			prefix[n++] = '.';
		for (; part[len] && part[len] != '|' && len < 12; len++)
			prefix[n++] =
			    isalnum((unsigned char)part[len]) ? part[len] : '_';
		part = strchr(part, '|');
	}
	prefix[n] = '\0';
	if (pe->node_id != LAUNCHER_UNKNOWN)
		return xasprintf("%s%s%u.%016llx", prefix, n ? "." : "",
				 pe->node_id, (unsigned long long)h);
	return xasprintf("%s.%016llx", n ? prefix : "job",
			 (unsigned long long)h);
}

int keeper_send(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	return TEMP_FAILURE_RETRY(sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 ? -1
									: 0;
}

ssize_t keeper_recv(int sock, void *buf, size_t len, int *fds, int nfds)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c;
	ssize_t n = TEMP_FAILURE_RETRY(
	    recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL));

	for (int i = 0; i < nfds; i++)
		fds[i] = -1;
	c = CMSG_FIRSTHDR(&mh);
	if (n <= 0 || !c || c->cmsg_level != SOL_SOCKET ||
	    c->cmsg_type != SCM_RIGHTS)
		return n;
	for (int i = 0; i < 3; i++) {
		int fd;

		if (c->cmsg_len < CMSG_LEN((size_t)(i + 1) * sizeof(int)))
			break;
		memcpy(&fd, CMSG_DATA(c) + (size_t)i * sizeof(int),
		       sizeof(int));
		if (i < nfds)
			fds[i] = fd;
		else
			close(fd); /* more than asked for */
	}
	return n;
}

static int send_fds(int sock, uint64_t digest, const struct plan *p, int fd1,
		    int fd2)
{
	const char *ucx = p->ucx_net_devices;
	size_t len = ucx ? strlen(ucx) : 0;
	struct join_msg m = {.magic = JOIN_MAGIC, .digest = digest};

	if (!p->ucx_asked || len > JOIN_UCX_MAX)
		m.ucx_len = JOIN_UCX_ASK;
	else
		m.ucx_len = ucx ? (int32_t)len : JOIN_UCX_NONE;
	cleanup_free char *buf = xmalloc(sizeof(m) + len);

	memcpy(buf, &m, sizeof(m));
	if (m.ucx_len > 0)
		memcpy(buf + sizeof(m), ucx, len);
	return keeper_send(sock, buf, sizeof(m) + (m.ucx_len > 0 ? len : 0),
			   (int[]){fd1, fd2}, 2);
}

/* The error for a refused claim: what was claimed, what the keeper has,
 * and where the claim came from. */
static int refused(const struct join_verdict *m, const struct launch_peers *pe,
		   mpictr_err **err)
{
	cleanup_free char *rd = launcher_read_list(pe);

	switch (m->status) {
	case JOIN_DUP_RANK:
		err_set(err, 0,
			"local rank %u is claimed by two tasks of this job on "
			"this node",
			m->a);
		break;
	case JOIN_SIZE_DIFF:
		err_set(err, 0,
			"this task claims a local size of %s%u, the job's "
			"first task on this node claimed %s%u",
			m->b == LAUNCHER_UNKNOWN ? "(unknown) " : "",
			m->b == LAUNCHER_UNKNOWN ? 0 : m->b,
			m->a == LAUNCHER_UNKNOWN ? "(unknown) " : "",
			m->a == LAUNCHER_UNKNOWN ? 0 : m->a);
		break;
	case JOIN_RANK_RANGE:
		err_set(err, 0, "local rank %u is not below the local size %u",
			m->a, m->b);
		break;
	case JOIN_TOO_MANY:
		err_set(err, 0,
			"more tasks of this job arrived on this node than its "
			"local size %u",
			m->a);
		break;
	default:
		return err_set(err, 0,
			       "the node's keeper could not set up the "
			       "container (status %d)",
			       (int)m->status);
	}
	err_wrap(err, "%s launcher (%s)", pe->name, rd);
	return err_hint(
	    err, "a launcher inside another that sets no variables of its "
		 "own looks like the outer one: set MPICTR_JOB_KEY, "
		 "MPICTR_LOCAL_RANK and MPICTR_LOCAL_SIZE for it, or run with "
		 "MPICTR_JOIN=0 (docs/launchers.md)");
}

/* The UCX answer that follows the message m into *a (bounded). */
static int recv_ucx(int sock, const struct join_msg *m, struct join_answer *a,
		    mpictr_err **err)
{
	ssize_t n;

	a->ucx_known = m->ucx_len != JOIN_UCX_ASK;
	if (m->ucx_len < 0)
		return m->ucx_len == JOIN_UCX_NONE || m->ucx_len == JOIN_UCX_ASK
			   ? 0
			   : err_set(err, EPROTO,
				     "the node's keeper sent a bad UCX answer");
	if (m->ucx_len > JOIN_UCX_MAX)
		return err_set(err, EPROTO,
			       "the node's keeper sent a UCX answer of %d "
			       "bytes (at most %d)",
			       (int)m->ucx_len, JOIN_UCX_MAX);
	a->ucx = xmalloc((size_t)m->ucx_len + 1);
	n = m->ucx_len == 0
		? 0
		: TEMP_FAILURE_RETRY(
		      recv(sock, a->ucx, (size_t)m->ucx_len, MSG_WAITALL));
	if (n != m->ucx_len)
		return err_set(err, n < 0 ? errno : EPROTO,
			       "receive the UCX answer of the node's keeper");
	a->ucx[n] = '\0';
	if (strlen(a->ucx) != (size_t)n)
		return err_set(err, EPROTO,
			       "the node's keeper sent a bad UCX answer");
	return 0;
}

/* 0: *fd1, *fd2 and the keeper's answer *a received; 1: closed
 * unanswered; -1: error. */
static int recv_fds(int sock, int *fd1, int *fd2, struct join_answer *a,
		    mpictr_err **err)
{
	struct join_msg m;
	int fds[2];
	ssize_t n = keeper_recv(sock, &m, sizeof(m), fds, 2);

	*fd1 = fds[0];
	*fd2 = fds[1];
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 1; /* a keeper that was exiting closed it: retry */
	if (n != (ssize_t)sizeof(m) || m.magic != JOIN_MAGIC)
		return err_set(err, n < 0 ? errno : EPROTO,
			       "receive the namespaces from the node's keeper");
	if (m.status != 0)
		return err_set(err, 0,
			       "the node's keeper could not set up the "
			       "container (status %d)",
			       (int)m.status);
	if (fds[0] < 0 || fds[1] < 0)
		return err_set(err, EPROTO,
			       "the node's keeper sent no "
			       "namespace fds");
	a->digest = m.digest;
	return recv_ucx(sock, &m, a, err);
}

int keeper_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/* Only we can make sockets in our 0700 directory; check anyway that
	 * the keeper is ours before taking namespaces from it. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    cr.uid != getuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

struct keeper {
	const struct plan *plan; /* NULL until build_plan() made it */
	/* Only the task that starts the keeper needs the plan before it
	 * joins; the others build theirs after the keeper answered, so that
	 * they leave the CPUs to the keeper while it mounts the image. */
	const struct mpictr_config *cfg;
	const struct run_decision *d;
	struct plan *plan_store;
	int nworkers;
	uint64_t digest;   /* join_plan_digest(plan), sent to every task */
	uint32_t expected; /* local size; LAUNCHER_UNKNOWN: counting mode */
	char *sock_path, *lock_path;
	int listen_fd;
	sigset_t waitmask; /* the mask while the keeper waits */
	/* An instance's keeper (keeper_start): its lifetime, its directory,
	 * and whether its sweeper kills what is left in the namespaces. */
	const struct keeper_life *life;
	const char *dir;
	bool kill_members;
	pid_t sweeper; /* the sweeper; sweep_fd is its pipe's write end */
	int sweep_fd;
};

/* The launcher daemons that fork every local task of a job and outlive
 * them all (the parent of a task that was exec'd in place). */
static bool launcher_daemon(const char *comm)
{
	static const char *const names[] = {
	    "slurmstepd\n", "orted\n",	 "mpirun\n",	      "orterun\n",
	    "prted\n",	    "prterun\n", "hydra_pmi_proxy\n", "flux-shell\n",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(comm, names[i]) == 0)
			return true;
	return false;
}

/* A pidfd for the task's parent when it is a launcher's daemon
 * (slurmstepd, orted or mpirun, hydra_pmi_proxy, ...), else -1. Once it
 * is gone no task of the job can still arrive on this node, so the
 * keeper need not wait JOIN_IDLE_S for tasks that were killed (scancel)
 * or failed before they reached mpictr. */
static int stepd_pidfd(pid_t task)
{
	char path[64], *comm;
	pid_t ppid = proc_ppid(task);
	int fd;

	if (ppid <= 1)
		return -1;
	fd = sys_pidfd_open(ppid, 0);
	if (fd < 0)
		return -1;
	/* Checked after the pidfd is open: it cannot be a recycled pid. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)ppid);
	comm = read_file(path, 64, NULL);
	if (!comm || !launcher_daemon(comm)) {
		free(comm);
		close(fd);
		return -1;
	}
	free(comm);
	return fd;
}

static volatile sig_atomic_t keeper_stop;

static void keeper_on_term(int sig)
{
	(void)sig;
	keeper_stop = 1;
}

bool keeper_stopping(void)
{
	return keeper_stop != 0;
}

/* The tasks that joined: a pidfd each while they live (they exec in
 * place: the pid is the rank's), and the local ranks claimed so far. */
struct members {
	int pidfd[JOIN_MAX_TASKS];
	uint32_t npid;
	uint32_t rank[JOIN_MAX_TASKS];
	uint32_t nrank;
	uint32_t joined, gone;
	struct pollfd pfd[JOIN_MAX_TASKS + 2];
};

int join_check_claim(uint32_t size, const uint32_t *ranks, uint32_t nranks,
		     uint32_t joined, uint32_t rank, uint32_t claimed_size,
		     uint32_t *a, uint32_t *b)
{
	*a = *b = 0;
	if (claimed_size != size) {
		*a = size;
		*b = claimed_size;
		return JOIN_SIZE_DIFF;
	}
	if (rank != LAUNCHER_UNKNOWN && size != LAUNCHER_UNKNOWN &&
	    rank >= size) {
		*a = rank;
		*b = size;
		return JOIN_RANK_RANGE;
	}
	for (uint32_t i = 0; rank != LAUNCHER_UNKNOWN && i < nranks; i++)
		if (ranks[i] == rank) {
			*a = rank;
			return JOIN_DUP_RANK;
		}
	if ((size != LAUNCHER_UNKNOWN && joined >= size) ||
	    joined >= JOIN_MAX_TASKS) {
		*a = size != LAUNCHER_UNKNOWN ? size : JOIN_MAX_TASKS;
		return JOIN_TOO_MANY;
	}
	return JOIN_OK;
}

/* One connecting task: hand it the fds, read its claim, check it, give
 * the verdict. True when it joined. A peer that sends no claim within
 * JOIN_CLAIM_MS (an older mpictr, a probe) joined with no rank to check:
 * it holds the fds. */
static bool keeper_serve(struct keeper *k, struct holder *h, struct members *m,
			 int c, pid_t *pid)
{
	struct join_hello hi;
	struct join_verdict v = {.magic = JOIN_MAGIC, .status = JOIN_OK};
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct timeval tv = {.tv_sec = JOIN_CLAIM_MS / 1000,
			     .tv_usec = JOIN_CLAIM_MS % 1000 * 1000};
	ssize_t n;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    cr.uid != getuid())
		return false;
	if (send_fds(c, k->digest, k->plan, h->userns, h->mntns) < 0)
		return false;
	*pid = cr.pid;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = TEMP_FAILURE_RETRY(recv(c, &hi, sizeof(hi), MSG_WAITALL));
	if (n != (ssize_t)sizeof(hi) || hi.magic != JOIN_MAGIC)
		return true;
	v.status = join_check_claim(k->expected, m->rank, m->nrank, m->joined,
				    hi.local_rank, hi.local_size, &v.a, &v.b);
	if (TEMP_FAILURE_RETRY(send(c, &v, sizeof(v), MSG_NOSIGNAL)) !=
	    (ssize_t)sizeof(v))
		return false; /* gone before the verdict: it did not join */
	if (v.status != JOIN_OK)
		return false;
	if (hi.local_rank != LAUNCHER_UNKNOWN)
		m->rank[m->nrank++] = hi.local_rank;
	return true;
}

/* Serve until the node's tasks have come and gone (counting mode: until
 * the members are gone and RUN_JOIN_LINGER_MS passed without a new one). */
static void keeper_loop(struct keeper *k, struct holder *h)
{
	struct members *m = xcalloc(1, sizeof(*m));
	struct pollfd *pfd = m->pfd;
	bool counting = k->expected == LAUNCHER_UNKNOWN;
	long until = mono_ms() + JOIN_IDLE_S * 1000L;
	int stepd = -1;
	bool stepd_gone = false;

	for (;;) {
		nfds_t np = 0, first_pid;
		long left;
		bool accepting = !stepd_gone;

		if (keeper_stop)
			break; /* SIGTERM: unmount and clean up */
		if (m->gone == m->joined &&
		    ((!counting && m->joined >= k->expected) || stepd_gone))
			break;
		left = until - mono_ms();
		if (m->gone == m->joined && left <= 0)
			break;
		pfd[np++] = (struct pollfd){.fd = accepting ? k->listen_fd : -1,
					    .events = POLLIN};
		pfd[np++] = (struct pollfd){.fd = stepd, .events = POLLIN};
		first_pid = np;
		for (uint32_t i = 0; i < m->npid; i++)
			pfd[np++] = (struct pollfd){.fd = m->pidfd[i],
						    .events = POLLIN};
		if (m->gone != m->joined || left > 1000)
			left = 1000;
		/* SIGTERM is blocked but here: it cannot slip in between the
		 * check of keeper_stop and the wait. */
		if (ppoll(pfd, np,
			  &(struct timespec){.tv_sec = left / 1000,
					     .tv_nsec = left % 1000 * 1000000L},
			  &k->waitmask) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			int c = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			pid_t pid = 0;

			if (c >= 0 && keeper_serve(k, h, m, c, &pid)) {
				int pf = sys_pidfd_open(pid, 0);

				m->joined++;
				if (pf >= 0)
					m->pidfd[m->npid++] = pf;
				else
					m->gone++; /* cannot follow it: count
						      it as gone at once */
				if (stepd < 0 && !stepd_gone)
					stepd = stepd_pidfd(pid);
				until = mono_ms() + JOIN_IDLE_S * 1000L;
			}
			if (c >= 0)
				close(c);
		}
		if (pfd[1].revents) {
			close(stepd);
			stepd = -1;
			stepd_gone = true;
		}
		for (nfds_t i = first_pid; i < np; i++) {
			if (!pfd[i].revents)
				continue;
			for (uint32_t q = 0; q < m->npid; q++)
				if (m->pidfd[q] == pfd[i].fd) {
					close(m->pidfd[q]);
					m->pidfd[q] = m->pidfd[--m->npid];
					m->gone++;
					until =
					    mono_ms() +
					    (counting ? RUN_JOIN_LINGER_MS
						      : JOIN_IDLE_S * 1000L);
					break;
				}
		}
		if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) == h->pid) {
			h->pid = 0; /* the holder died: nothing to serve */
			break;
		}
	}
	for (uint32_t i = 0; i < m->npid; i++)
		close(m->pidfd[i]);
	if (stepd >= 0)
		close(stepd);
	free(m);
}

/* The keeper process: detached from the task that started it. */
/* Does path still name the file (dev, ino) we made? */
static bool same_file(const char *path, const struct stat *was)
{
	struct stat st;

	return lstat(path, &st) == 0 && st.st_dev == was->st_dev &&
	       st.st_ino == was->st_ino;
}

/* A keeper killed with SIGKILL cannot remove its socket and lock. A small
 * sweeper waits on a pipe whose only writer is the keeper; when the keeper
 * is gone, however it ended, the sweeper removes the two files, unless a
 * new keeper of the same step has replaced them in the meantime. An
 * instance's sweeper also removes its directory and, told the holder's
 * user namespace over the pipe (sweep_tell), kills every process left in
 * it: an instance never outlives its keeper. */
struct sweep_ns {
	uint64_t dev, ino;
};

static _Noreturn void sweeper_main(const struct keeper *k, int life_fd,
				   const struct stat *sock_st,
				   const struct stat *lock_st)
{
	struct sweep_ns ns = {0, 0};
	size_t got = proc_watch_lifeline(life_fd, &ns, sizeof(ns));

	if (same_file(k->sock_path, sock_st))
		unlink(k->sock_path);
	if (same_file(k->lock_path, lock_st))
		unlink(k->lock_path);
	/* Processes may fork while we look: until none is found. */
	for (int i = 0; k->kill_members && got == sizeof(ns) && i < 100; i++) {
		if (proc_ns_signal((dev_t)ns.dev, (ino_t)ns.ino, 0, SIGKILL) ==
		    0)
			break;
		usleep(20000);
	}
	if (k->dir)
		rm_rf(k->dir);
	_exit(0);
}

/* A watcher (proc_fork_watcher) in the keeper's session. */
static void start_sweeper(struct keeper *k)
{
	struct stat sock_st, lock_st;
	mpictr_err *err = NULL;
	int life_fd;
	pid_t pid;

	if (lstat(k->sock_path, &sock_st) < 0 ||
	    lstat(k->lock_path, &lock_st) < 0)
		return;
	pid =
	    proc_fork_watcher(false, &life_fd, NULL, NULL, "the sweeper", &err);
	if (pid == 0)
		sweeper_main(k, life_fd, &sock_st, &lock_st);
	if (pid < 0) {
		mpictr_err_free(err);
		return;
	}
	/* life_fd stays open in the keeper until it ends. */
	k->sweeper = pid;
	k->sweep_fd = life_fd;
}

/* Tell the sweeper the holder's user namespace. */
static void sweep_tell(const struct keeper *k, const struct holder *h)
{
	struct stat st;
	struct sweep_ns ns;

	if (k->sweep_fd < 0 || fstat(h->userns, &st) < 0)
		return;
	ns.dev = (uint64_t)st.st_dev;
	ns.ino = (uint64_t)st.st_ino;
	if (write_full(k->sweep_fd, &ns, sizeof(ns)) < 0)
		log_debug("tell the sweeper the namespace: %s",
			  strerror(errno));
}

/* The end of a keeper: socket and lock gone first (a new one may start),
 * then the holder, the sweeper and the directory. */
static void keeper_end(struct keeper *k, struct holder *h)
{
	unlink(k->sock_path);
	unlink(k->lock_path);
	holder_stop(h);
	if (k->sweep_fd >= 0)
		close(k->sweep_fd);
	if (k->sweeper > 0)
		TEMP_FAILURE_RETRY(waitpid(k->sweeper, NULL, 0));
	k->sweep_fd = -1;
	k->sweeper = 0;
	if (k->dir)
		rm_rf(k->dir);
}

/* The keeper's first steps: detach from the task that started it, listen,
 * start the sweeper. */
static int keeper_setup(struct keeper *k, int lock_fd, int ready_fd,
			mpictr_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	sigset_t none;
	int nul;

	/* Hold nothing of the task: not its PMI_FD, not srun's pipes. */
	close_all_fds_except((int[]){lock_fd, ready_fd}, 2);
	setsid();
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Never hold the step's output pipes open: srun waits for them. */
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		close(nul);
	}
	mpictr_set_log_sink(NULL, NULL, MPICTR_LOG_ERROR);
	k->sweeper = 0;
	k->sweep_fd = -1;
	unlink(k->sock_path); /* a stale socket of a killed keeper */
	k->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", k->sock_path);
	if (k->listen_fd < 0 ||
	    bind(k->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(k->listen_fd, 128) < 0)
		return err_set(err, errno, "listen on '%s'", k->sock_path);
	start_sweeper(k);
	if (k->life && k->life->setup && k->life->setup(k->life->data, err) < 0)
		return -1;
	return 0;
}

static __attribute__((noreturn)) void keeper_main(struct keeper *k, int lock_fd,
						  int ready_fd)
{
	struct holder h = {.pid = 0, .ctl = -1, .userns = -1, .mntns = -1};
	mpictr_err *err = NULL;
	sigset_t none, term;

	if (keeper_setup(k, lock_fd, ready_fd, &err) < 0)
		goto fail;
	sigemptyset(&none);
	k->digest = join_plan_digest(k->plan);
	if (holder_start(k->plan, k->nworkers, &none, &h, &err) < 0)
		goto fail;
	if (k->kill_members)
		sweep_tell(k, &h);
	relay_send_ready(ready_fd); /* the task may be gone: serve anyway */
	close(ready_fd);
	/* Its command line is the first task's: `pkill -f` aimed at the tasks
	 * hits it too. End cleanly then, socket and lock removed. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	k->waitmask = none;
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = keeper_on_term},
		  NULL);
	if (k->life && k->life->serve)
		k->life->serve(k->life->data, &(struct keeper_serve){
						  .listen_fd = k->listen_fd,
						  .h = &h,
						  .waitmask = &k->waitmask});
	else
		keeper_loop(k, &h);
	if (k->listen_fd >= 0)
		close(k->listen_fd);
	keeper_end(k, &h);
	close(lock_fd);
	if (k->life && k->life->done)
		k->life->done(k->life->data);
	_exit(0);
fail:
	relay_send(ready_fd, err);
	keeper_end(k, &h);
	_exit(1);
}

/* Start the keeper, detached (double fork); wait until it serves. */
static int start_keeper(struct keeper *k, int lock_fd, mpictr_err **err)
{
	const char *who = k->life ? "instance's keeper" : "node's keeper";
	int rfd, wfd, rc;
	pid_t pid = proc_fork_relay(
	    &rfd, &wfd, k->life ? "the instance's keeper" : "the node's keeper",
	    err);

	if (pid < 0)
		return -1;
	if (pid == 0) {
		proc_detach(wfd, who);
		keeper_main(k, lock_fd, wfd);
	}
	TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
	rc = relay_recv_ready(rfd, who, err);
	close(rfd);
	return rc;
}

int keeper_start(const struct keeper_spec *ks, int lock_fd, mpictr_err **err)
{
	struct keeper k = {
	    .plan = ks->plan,
	    .nworkers = ks->nworkers,
	    .expected = LAUNCHER_UNKNOWN,
	    .sock_path = (char *)ks->sock_path,
	    .lock_path = (char *)ks->lock_path,
	    .listen_fd = -1,
	    .life = ks->life,
	    .dir = ks->dir,
	    .kill_members = ks->kill_members,
	    .sweep_fd = -1,
	};

	return start_keeper(&k, lock_fd, err);
}

/* True when lock_fd is still the file at path: the keeper unlinks its lock
 * when it exits, and a lock taken on the unlinked file would let a second
 * keeper start beside the one started on the new file. */
bool keeper_lock_current(int lock_fd, const char *path)
{
	struct stat a, b;

	return fstat(lock_fd, &a) == 0 && lstat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* given: the keeper's facts (NULL: gather them all here). */
static int build_plan(struct keeper *k, const struct host_given *given,
		      mpictr_err **err)
{
	if (k->plan)
		return 0;
	if (host_plan_build_given(k->cfg, k->d, NULL, given, k->plan_store,
				  err) < 0)
		return -1;
	k->plan = k->plan_store;
	return 0;
}

/* Connect to the node's keeper, starting it if this task is the first. */
static int join_connect(struct keeper *k, long deadline, mpictr_err **err)
{
	useconds_t delay = 2000;

	for (;;) {
		int fd = keeper_connect(k->sock_path), lock_fd;

		if (fd >= 0)
			return fd;
		if (errno == EPERM)
			return err_set(err, 0,
				       "the keeper at '%s' does not run as "
				       "uid %u",
				       k->sock_path, (unsigned)getuid());
		if (errno != ENOENT && errno != ECONNREFUSED)
			return err_set(err, errno, "connect to '%s'",
				       k->sock_path);
		lock_fd = open(k->lock_path,
			       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lock_fd < 0)
			return err_set(err, errno, "open '%s'", k->lock_path);
		if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0) {
			if (!keeper_lock_current(lock_fd, k->lock_path)) {
				close(lock_fd); /* an exiting keeper's */
				continue;
			}
			/* We hold the lock: no keeper is starting. One may
			 * have finished starting just before: try again. */
			fd = keeper_connect(k->sock_path);
			if (fd < 0) {
				int rc;

				if (build_plan(k, NULL, err) < 0) {
					/* Nothing started: leave no lock file
					 * (a waiter on it sees it unlinked
					 * and starts over). */
					unlink(k->lock_path);
					close(lock_fd);
					return -1;
				}
				rc = start_keeper(k, lock_fd, err);
				close(lock_fd);
				if (rc < 0)
					return -1;
				continue;
			}
			close(lock_fd);
			return fd;
		}
		close(lock_fd);
		if (mono_ms() > deadline)
			return err_set(err, ETIMEDOUT,
				       "wait for the node's keeper at '%s'",
				       k->sock_path);
		/* The keeper starts in ~0.1 s: poll often, it is cheap. */
		usleep(delay);
		if (delay < 10000)
			delay *= 2;
	}
}

/* Read the keeper's verdict on this task's claim: 0 joined, 1 closed
 * unanswered (an exiting keeper), -1 refused or error. */
static int join_verdict(int sock, const struct launch_peers *pe,
			mpictr_err **err)
{
	struct join_verdict v;
	ssize_t n;

	n = TEMP_FAILURE_RETRY(recv(sock, &v, sizeof(v), MSG_WAITALL));
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 1;
	if (n != (ssize_t)sizeof(v) || v.magic != JOIN_MAGIC)
		return err_set(err, n < 0 ? errno : EPROTO,
			       "receive the verdict of the node's keeper");
	if (v.status != JOIN_OK)
		return refused(&v, pe, err);
	return 0;
}

/* Receive the namespace fds from the node's keeper. A keeper that is
 * exiting may close a connection it accepted into its backlog unanswered:
 * then connect again (the next keeper starts under the lock). */
static int join_fetch(struct keeper *k, const struct launch_peers *pe,
		      int *userns, int *mntns, struct join_answer *a,
		      mpictr_err **err)
{
	long deadline = mono_ms() + JOIN_WAIT_S * 1000L;
	struct join_hello hi = {.magic = JOIN_MAGIC,
				.local_rank = pe->local_rank,
				.local_size = pe->local_size};

	for (;;) {
		int sock = join_connect(k, deadline, err), rc = 1;

		if (sock < 0)
			return -1;
		/* The claim goes first: the keeper reads it as soon as it
		 * has sent the fds. A keeper that is exiting may have closed
		 * the connection already. */
		if (TEMP_FAILURE_RETRY(send(sock, &hi, sizeof(hi),
					    MSG_NOSIGNAL)) == sizeof(hi))
			rc = recv_fds(sock, userns, mntns, a, err);
		if (rc == 0)
			rc = join_verdict(sock, pe, err);
		close(sock);
		if (rc == 0)
			return 0;
		if (*userns >= 0)
			close(*userns);
		if (*mntns >= 0)
			close(*mntns);
		*userns = *mntns = -1;
		free(a->ucx);
		a->ucx = NULL;
		if (rc < 0)
			return -1;
		if (mono_ms() > deadline)
			return err_set(err, ETIMEDOUT,
				       "the node's keeper at '%s' closed the "
				       "connection unanswered",
				       k->sock_path);
		usleep(10000);
	}
}

/* srun --mpi=pmi2 hands the task its PMI wire as an inherited fd named
 * by PMI_FD: it must survive the exec (container_exec marks every other
 * inherited fd close-on-exec). -1 when unset or not an open fd. */
static int pmi_fd(char *const *env)
{
	const char *v = env_get(env, "PMI_FD");
	long fd;

	if (!v || parse_long(v, 3, INT_MAX, &fd) < 0)
		return -1;
	if (fcntl((int)fd, F_GETFD) < 0) {
		log_warn("PMI_FD %ld is not an open descriptor: the program "
			 "will not reach Slurm's PMI server",
			 fd);
		return -1;
	}
	return (int)fd;
}

/* Fork the task's command into the joined container and wait for it (an
 * embedder that did not ask for exec in place gets control back). */
static int join_spawn(const struct plan *p, char **env, int userns, int mntns,
		      int keep_fd, int *status, mpictr_err **err)
{
	sigset_t mask;
	int rfd, wfd, st, rc;
	pid_t self = getpid(), pid;

	sigprocmask(SIG_SETMASK, NULL, &mask);
	pid = proc_fork_relay(&rfd, &wfd, "the task's command", err);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		mpictr_err *e = NULL;

		proc_child_setup(&mask, self);
		container_exec(p, env, userns, mntns, keep_fd, &e);
		relay_send(wfd, e);
		_exit(mpictr_err_exit_code(e));
	}
	rc = relay_recv(rfd, "task's command", err);
	close(rfd);
	if (TEMP_FAILURE_RETRY(waitpid(pid, &st, 0)) < 0)
		return err_set(err, errno, "wait for the task's command");
	if (rc < 0)
		return -1;
	*status = exit_code_of(st);
	return 0;
}

/* The node's container of this task's job: the fds of its namespaces
 * from the node's keeper (started if this task is the first), and the
 * task's plan, checked against the keeper's. */
static int join_node(struct keeper *k, const struct mpictr_config *cfg,
		     const struct run_decision *d, int *userns, int *mntns,
		     mpictr_err **err)
{
	const struct launch_peers *pe = &d->peers;
	cleanup_free char *dir = NULL, *key = NULL, *image = NULL;
	struct join_answer a = {0};
	int rc;

	/* The key names the image as plan_build will (its real path); an
	 * image that cannot be resolved fails there, with its message. */
	image = realpath(cfg->image, NULL);
	if (!image) {
		if (build_plan(k, NULL, err) < 0)
			return -1;
		image = xstrdup(k->plan_store->image.path);
	}
	if (keeper_dir(cfg->host_env, &dir,
		       pe->local_rank == 0 ||
			   pe->local_rank == LAUNCHER_UNKNOWN,
		       err) < 0)
		return -1;
	key = join_key(pe, image, join_inputs_digest(cfg));
	k->nworkers = holder_fuse_workers(cfg);
	k->expected = pe->local_size;
	k->sock_path = xasprintf("%s/%s.sock", dir, key);
	k->lock_path = xasprintf("%s/%s.lock", dir, key);
	if (strlen(k->sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return err_set(err, ENAMETOOLONG, "rendezvous socket '%s'",
			       k->sock_path);
	/* The first task planned before it started the keeper; the others
	 * plan with the keeper's UCX answer instead of asking UCX again. */
	if (join_fetch(k, pe, userns, mntns, &a, err) < 0)
		return -1;
	rc = build_plan(k,
			&(struct host_given){.ucx_known = a.ucx_known,
					     .ucx_net_devices = a.ucx},
			err);
	free(a.ucx);
	if (rc < 0)
		return -1;
	if (join_plan_digest(k->plan_store) != a.digest) {
		err_set(err, 0,
			"this task's container would differ from the one the "
			"node's keeper at '%s' set up for the job (mounts, "
			"devices or identity): refusing to join it",
			k->sock_path);
		return err_hint(err, "give every task of the job the same "
				     "options, or run with MPICTR_JOIN=0");
	}
	return 0;
}

/* This task's way into the container: the fds (of an instance, or of the
 * node's container of the job, fetched from the node's keeper) and the
 * task's plan, with its environment in env. */
struct join_task {
	struct plan plan;
	int userns, mntns;
	char **env;
};

static void join_task_free(struct join_task *t)
{
	if (t->userns >= 0)
		close(t->userns);
	if (t->mntns >= 0)
		close(t->mntns);
	strv_free(t->env);
	plan_free(&t->plan); /* zeroed, partly built (on failure) or built */
}

static int join_prepare(const struct mpictr_config *cfg,
			const struct run_decision *d,
			const struct instance_attach *inst, struct join_task *t,
			mpictr_err **err)
{
	const struct launch_peers *pe = &d->peers;
	struct keeper k = {
	    .listen_fd = -1, .cfg = cfg, .d = d, .plan_store = &t->plan};
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->userns = t->mntns = -1;
	if (d->launcher_err) {
		err_set(err, 0, "%s", mpictr_err_message(d->launcher_err));
		err_wrap(err, "join the node's container");
		return err_hint(err, "run with MPICTR_JOIN=0 for one container "
				     "per task (docs/launchers.md)");
	}
	if (pe->local_size != LAUNCHER_UNKNOWN &&
	    pe->local_size > JOIN_MAX_TASKS) {
		cleanup_free char *rd = launcher_read_list(pe);

		return err_set(err, 0,
			       "%s launcher (%s): %u local tasks: at most %d "
			       "are supported",
			       pe->name, rd, pe->local_size, JOIN_MAX_TASKS);
	}
	if (inst) {
		/* An instance's tasks enter it: no keeper of their own. */
		t->userns = fcntl(inst->userns, F_DUPFD_CLOEXEC, 0);
		t->mntns = fcntl(inst->mntns, F_DUPFD_CLOEXEC, 0);
		if (t->userns < 0 || t->mntns < 0) {
			err_set(err, errno, "instance '%s'", inst->name);
			goto out;
		}
		if (build_plan(
			&k,
			&(struct host_given){.ucx_known = inst->ucx_known,
					     .ucx_net_devices = inst->ucx},
			err) < 0)
			goto out;
	} else if (join_node(&k, cfg, d, &t->userns, &t->mntns, err) < 0) {
		goto out;
	}
	for (size_t i = 0; t->plan.notices && t->plan.notices[i]; i++)
		log_notice("%s", t->plan.notices[i]);
	t->plan.nlocal =
	    pe->local_size != LAUNCHER_UNKNOWN ? (int)pe->local_size : 1;
	t->env = plan_rank_env(&t->plan, pe->local_rank != LAUNCHER_UNKNOWN
					     ? (int)pe->local_rank
					     : 0);
	if (inst)
		instance_rank_env(inst, &t->env);
	rc = 0;
out:
	free(k.sock_path);
	free(k.lock_path);
	return rc;
}

int join_run(const struct mpictr_config *cfg, const struct run_decision *d,
	     const struct instance_attach *inst, bool exec_in_place,
	     int *status, mpictr_err **err)
{
	struct join_task t;
	int rc = -1;

	if (join_prepare(cfg, d, inst, &t, err) < 0)
		goto out;
	if (exec_in_place) {
		container_exec(&t.plan, t.env, t.userns, t.mntns,
			       pmi_fd(cfg->host_env), err);
		rc = -1; /* only returns on failure */
	} else {
		rc = join_spawn(&t.plan, t.env, t.userns, t.mntns,
				pmi_fd(cfg->host_env), status, err);
	}
out:
	join_task_free(&t);
	return rc;
}

int join_enter(const struct mpictr_config *cfg, const struct run_decision *d,
	       const struct instance_attach *inst, char ***env, char **program,
	       mpictr_err **err)
{
	struct join_task t;
	int rc = -1;

	if (join_prepare(cfg, d, inst, &t, err) == 0 &&
	    container_enter_task(&t.plan, &t.env, t.userns, t.mntns, program,
				 err) == 0) {
		*env = t.env;
		t.env = NULL;
		rc = 0;
	}
	join_task_free(&t);
	return rc;
}
