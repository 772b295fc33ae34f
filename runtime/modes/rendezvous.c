/* rendezvous.c - where the tasks of a job on a node meet: the user's
 * private directory, the keyed name of the job's socket and lock in it,
 * and the digests of what decides the container (join.c uses them; the
 * keeper (keeper.c) serves on the socket; instances (instance.c) use the
 * same directory).
 *
 * DIR = /tmp/mpictr-join-UID (0700, owner and mode checked on every use;
 * the tasks never follow a symlink there), or a private name nobody else
 * can predict when another user took that one (rendezvous_dir). The key is
 * a hash of the uid, the boot id, the host name, the launcher's job key
 * and node, the image and the inputs that decide the container (after a
 * readable prefix, the launcher's job id): two steps, two jobs, two
 * mpiruns, two simulated nodes or two tasks asking for different
 * containers never meet by mistake.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "modes/rendezvous.h"

#define RENDEZVOUS_ALT_DIRS 64 /* private names tried when squatted */

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

uint64_t rendezvous_siphash(const uint8_t key[16], const void *data, size_t len)
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
int rendezvous_dir(char *const *env, char **out, bool notice, mpictr_err **err)
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
	for (unsigned i = 0; i < RENDEZVOUS_ALT_DIRS; i++) {
		cleanup_free char *msg = xasprintf("%u %s %u", uid, boot, i);
		cleanup_free char *why2 = NULL;
		char *alt = xasprintf("/tmp/mpictr-join-%u-%016llx", uid,
				      (unsigned long long)rendezvous_siphash(
					  key, msg, strlen(msg)));

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
		dir, why, RENDEZVOUS_ALT_DIRS);
	return err_hint(err, "ask the administrator to remove them, or run "
			     "with MPICTR_JOIN=0");
}

/* ---- what decides the container -----------------------------------------
 *
 * Tasks of one step may pass different options (srun --multi-prog). Those
 * whose containers would differ must not share one: the key covers a
 * digest of the task's inputs to plan_build() that decide the container
 * (the options, as config.h's option table declares them; config files,
 * the keys of the config files that siteconf's key table declares so, the
 * working directory, HOME and the other variables planning reads),
 * cheap enough to compute before the keeper answers; and a task checks
 * that its own plan, once built, has the keeper's rendezvous_plan_digest()
 * (which covers the same options, through plan.options_digest, and what
 * the plan made of them), or fails with an error (in case something not in
 * the first digest differs). Per task are only the command, the
 * environment and the start directory inside: container_exec() takes them
 * from the task's own plan. */

uint64_t rendezvous_inputs_digest(const struct mpictr_config *cfg)
{
	static const char *const vars[] = {"HOME", "PMIX_SERVER_TMPDIR",
					   "MPICTR_SYSROOT"};
	static const char *const set[] = {"PMI_FD", "PMIX_SERVER_URI41",
					  "PMIX_SERVER_URI4"};
	cleanup_free char *cwd = getcwd(NULL, 0);
	uint64_t h = FNV1A_INIT;

	/* The options (the option table's rows that decide the container),
	 * the working directory, the variables planning reads. */
	h = fnv1a_u64(h, config_container_digest(cfg));
	h = fnv1a_str(h, cwd);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		h = fnv1a_str(h, env_get(cfg->host_env, vars[i]));
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		h = fnv1a_u64(h, env_get(cfg->host_env, set[i]) != NULL);
	/* The site file and user config files (--config, MPICTR_CONF): every
	 * key of siteconf's table that decides the container. */
	h = fnv1a_u64(h, siteconf_container_digest(&cfg->site));
	return h;
}

uint64_t rendezvous_plan_digest(const struct plan *p)
{
	uint64_t h = FNV1A_INIT;

	h = fnv1a_str(h, p->image.path);
	h = fnv1a_u64(h, (uint64_t)p->image.kind);
	h = fnv1a_u64(h, p->image.offset);
	h = fnv1a_u64(h, p->nops);
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];

		h = fnv1a_u64(h, (uint64_t)op->kind |
				     (uint64_t)op->optional << 8 |
				     (uint64_t)op->src_is_dir << 9);
		h = fnv1a_str(h, op->source);
		h = fnv1a_str(h, op->target);
		h = fnv1a_u64(h, op->flags);
		h = fnv1a_str(h, op->data);
	}
	h = fnv1a_u64(h, p->ndevices);
	for (size_t i = 0; i < p->ndevices; i++) {
		h = fnv1a_str(h, p->devices[i].path);
		h = fnv1a_str(h, p->devices[i].kind);
	}
	h = fnv1a_u64(h, p->nmpi);
	for (size_t i = 0; i < p->nmpi; i++) {
		h = fnv1a_str(h, p->mpi[i].profile);
		h = fnv1a_str(h, p->mpi[i].host.path);
		h = fnv1a_u64(h, p->mpi[i].warn_only);
	}
	h = fnv1a_u64(h, (uint64_t)p->uid << 32 | p->gid);
	h = fnv1a_u64(h, (uint64_t)p->uid_in << 32 | p->gid_in);
	h = fnv1a_str(h, p->sysroot);
	h = fnv1a_u64(h, p->options_digest);
	h = fnv1a_u64(h, (uint64_t)p->shared_ns);
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
char *rendezvous_key(const struct launch_peers *pe, const char *image,
		     uint64_t inputs)
{
	char host[256] = "", boot[64], uid[32], prefix[64];
	const char *k = pe->key ? pe->key : "", *part = strchr(k, '|');
	uint64_t h = FNV1A_INIT;
	size_t n = 0;

	gethostname(host, sizeof(host) - 1);
	read_boot_id(boot, sizeof(boot));
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	h = fnv1a_str(h, uid);
	h = fnv1a_str(h, boot);
	h = fnv1a_str(h, host);
	h = fnv1a_str(h, launcher_rule_name(pe->rule));
	h = fnv1a_str(h, k);
	h = fnv1a_u64(h, pe->node_id);
	h = fnv1a_str(h, pe->node_name);
	h = fnv1a_str(h, image);
	h = fnv1a_u64(h, inputs);
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
