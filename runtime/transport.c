/* transport.c - which MPI transport variables to set for the ranks (the
 * policy table is docs/transport.md), and the UCX device query through the
 * short-lived mpictr-ucx-query helper, so libucs never enters this process.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "error.h"
#include "transport.h"
#include "util.h"

/* The fallbacks for ranks that do not share a user namespace: CMA
 * (process_vm_readv) and UCX's /proc/PID/fd proc-link need ptrace access,
 * which the kernel denies across sibling user namespaces. */
static const struct {
	const char *name, *value;
} unshared_fallbacks[] = {
    {"UCX_POSIX_USE_PROC_LINK", "n"},
    {"UCX_TLS", "^cma"},
    {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
    {"FI_SHM_DISABLE_CMA", "1"},
    {"PSM2_KASSIST_MODE", "none"},
    {"I_MPI_SHM_CMA", "0"},
    {"MV2_SMP_USE_CMA", "0"},
};

/* Drivers UCX does not drive as a verbs net device worth selecting: their
 * fabric has its own library (PSM2, libfabric efa/cxi). */
static bool ucx_rdma_driver(const char *driver)
{
	static const char *const no[] = {"hfi1", "qib", "efa", "cxi"};

	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (strcmp(driver, no[i]) == 0)
			return false;
	return devices_verbs_provider(driver) != NULL;
}

static const char *fabric_of(const char *driver)
{
	if (strcmp(driver, "hfi1") == 0 || strcmp(driver, "qib") == 0)
		return "psm2";
	if (strcmp(driver, "cxi") == 0)
		return "cxi";
	if (strcmp(driver, "efa") == 0)
		return "efa";
	return devices_verbs_provider(driver) ? "verbs" : NULL;
}

struct netdev {
	char *name; /* mlx5_0:1 */
	int numa;
};

/* The sysfs port behind a UCX device name ("mlx5_0:1"), or NULL. */
static const struct hca *hca_of_netdev(const struct host_devices *d,
				       const char *dev)
{
	size_t n = strcspn(dev, ":");
	long port = 1;

	if (dev[n] == ':' && parse_long(dev + n + 1, 0, 255, &port) < 0)
		return NULL;
	for (size_t i = 0; d && i < d->nhcas; i++)
		if (strlen(d->hcas[i].name) == n &&
		    strncmp(d->hcas[i].name, dev, n) == 0 &&
		    d->hcas[i].port == port)
			return &d->hcas[i];
	return NULL;
}

/* The UCX_NET_DEVICES value for this rank, or NULL to leave it unset. */
static char *ucx_net_devices(const struct host_devices *d,
			     const struct transport_opts *o)
{
	struct netdev *nd = NULL;
	size_t n = 0;
	int numas[64], nnuma = 0, target = -1;
	struct strbuf sb = STRBUF_INIT;

	if (o->ucx_net_devices_from_ucx) {
		cleanup_free char *copy = xstrdup(o->ucx_net_devices_from_ucx);
		char *save = NULL;

		for (char *t = strtok_r(copy, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			const struct hca *h = hca_of_netdev(d, t);

			/* UCX's name, unless sysfs knows the port and it is
			 * DOWN or not exposed in the container. */
			if (h && (!h->exposed || !h->active))
				continue;
			nd = xrealloc(nd, (n + 1) * sizeof(*nd));
			nd[n++] =
			    (struct netdev){xstrdup(t), h ? h->numa_node : -1};
		}
	} else {
		for (size_t i = 0; d && i < d->nhcas; i++) {
			const struct hca *h = &d->hcas[i];
			if (!h->exposed || !h->active ||
			    !ucx_rdma_driver(h->driver))
				continue;
			nd = xrealloc(nd, (n + 1) * sizeof(*nd));
			nd[n++] = (struct netdev){
			    xasprintf("%s:%d", h->name, h->port), h->numa_node};
		}
	}
	if (n == 0)
		return NULL;

	/* Distinct NUMA nodes holding a device, in ascending order. */
	for (size_t i = 0; i < n; i++) {
		int k;
		if (nd[i].numa < 0)
			continue;
		for (k = 0; k < nnuma && numas[k] != nd[i].numa; k++)
			;
		if (k == nnuma && nnuma < (int)ARRAY_SIZE(numas))
			numas[nnuma++] = nd[i].numa;
	}
	for (int a = 1; a < nnuma; a++)
		for (int b = a; b > 0 && numas[b - 1] > numas[b]; b--) {
			int t = numas[b];
			numas[b] = numas[b - 1];
			numas[b - 1] = t;
		}
	if (nnuma >= 2) {
		if (o->numa_known) {
			target = o->numa_node;
		} else {
			int nl = o->nlocal > 0 ? o->nlocal : 1;
			int r = o->local_rank >= 0 && o->local_rank < nl
				    ? o->local_rank
				    : 0;
			target = numas[(long)r * nnuma / nl];
		}
	}
	for (int pass = 0; pass < 2 && sb.len == 0; pass++)
		for (size_t i = 0; i < n; i++) {
			/* pass 0: the rank's node only; pass 1 (no device on
			 * that node): every device. */
			if (pass == 0 && target >= 0 && nd[i].numa != target)
				continue;
			if (sb.len)
				sb_putc(&sb, ',');
			sb_puts(&sb, nd[i].name);
		}
	for (size_t i = 0; i < n; i++)
		free(nd[i].name);
	free(nd);
	return sb_steal(&sb);
}

/* FI_PROVIDER when exactly one fabric is present among the exposed active
 * devices, else NULL. */
static const char *fi_provider(const struct host_devices *d)
{
	const char *one = NULL;

	for (size_t i = 0; d && i < d->nhcas; i++) {
		const struct hca *h = &d->hcas[i];
		const char *f;

		if (!h->exposed || !h->active || !(f = fabric_of(h->driver)))
			continue;
		if (one && strcmp(one, f) != 0)
			return NULL;
		one = f;
	}
	return one;
}

static bool set_unset(char ***env, const char *name, const char *value)
{
	if (env_get(*env, name))
		return false;
	env_set(env, name, value);
	return true;
}

void transport_env(const struct host_devices *d, const struct transport_opts *o,
		   char ***env, char ***notices)
{
	cleanup_free char *netdevs = NULL;
	const char *fi;

	if (!o->enabled)
		return;
	netdevs = ucx_net_devices(d, o);
	if (netdevs && *netdevs)
		set_unset(env, "UCX_NET_DEVICES", netdevs);
	fi = fi_provider(d);
	if (fi)
		set_unset(env, "FI_PROVIDER", fi);
	if (!o->shared_ns) {
		struct strbuf set = STRBUF_INIT, kept = STRBUF_INIT;

		for (size_t i = 0; i < ARRAY_SIZE(unshared_fallbacks); i++) {
			const char *n = unshared_fallbacks[i].name;
			const char *v = unshared_fallbacks[i].value;

			/* Without CMA (and without posix, whose segments
			 * live in each rank's own /dev/shm) UCX finds no
			 * on-node zero-copy transport and adds tcp lanes;
			 * polling them made small messages ~8x slower. With
			 * every peer on this node tcp is never needed; across
			 * nodes it may be the only network, so keep it. */
			if (o->single_node && strcmp(n, "UCX_TLS") == 0)
				v = "^cma,tcp";
			struct strbuf *sb = set_unset(env, n, v) ? &set : &kept;
			sb_printf(sb, " %s", n);
			if (sb == &set)
				sb_printf(sb, "=%s", v);
		}
		strv_push_own(notices,
			      xasprintf("ranks do not share namespaces, so "
					"CMA and UCX proc-link are off (large "
					"messages are slower):%s%s%s",
					set.len ? set.buf : " nothing set",
					kept.len ? "; kept as set:" : "",
					kept.len ? kept.buf : ""));
		sb_free(&set);
		sb_free(&kept);
	}
}

/* ---- UCX query helper -----------------------------------------------------
 */

#define UCX_QUERY_TIMEOUT_MS 10000
#define UCX_QUERY_MAX_OUTPUT (1 << 20)

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int transport_ucx_query(const char *helper_path, char ***lines,
			mpictr_err **err)
{
	int pfd[2];
	pid_t pid;
	struct strbuf sb = STRBUF_INIT;
	struct timespec t0;
	bool timed_out = false, too_big = false;
	int status;
	char *const argv[] = {(char *)helper_path, NULL};

	*lines = NULL;
	if (access(helper_path, X_OK) < 0)
		return err_set(err, errno, "run UCX query helper '%s'",
			       helper_path);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_set(err, errno, "pipe for UCX query helper");
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return err_set(err, e, "fork UCX query helper");
	}
	if (pid == 0) {
		/* Child: only async-signal-safe calls until exec. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
		    dup2(null, STDERR_FILENO) < 0 ||
		    dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(helper_path, argv);
		_exit(127);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		long left = UCX_QUERY_TIMEOUT_MS - ms_since(&t0);
		char buf[4096];
		ssize_t r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p.revents == 0)
			continue;
		r = TEMP_FAILURE_RETRY(read(pfd[0], buf, sizeof(buf)));
		if (r <= 0)
			break;
		if (sb.len + (size_t)r > UCX_QUERY_MAX_OUTPUT) {
			too_big = true;
			break;
		}
		sb_add(&sb, buf, (size_t)r);
	}
	close(pfd[0]);
	if (timed_out || too_big)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out || too_big) {
		sb_free(&sb);
		return err_set(err, 0, "UCX query helper '%s' %s", helper_path,
			       timed_out ? "timed out after 10 s"
					 : "printed more than 1 MiB");
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		sb_free(&sb);
		if (WIFSIGNALED(status))
			return err_set(err, 0,
				       "UCX query helper '%s' killed by signal "
				       "%d",
				       helper_path, WTERMSIG(status));
		return err_set(err, 0,
			       "UCX query helper '%s' exited with "
			       "status %d",
			       helper_path, WEXITSTATUS(status));
	}
	for (char *s = sb.buf, *nl; s && *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (!nl)
			nl = s + strlen(s);
		if (nl > s)
			strv_push_own(lines, xstrndup(s, (size_t)(nl - s)));
		if (!*nl)
			break;
	}
	sb_free(&sb);
	return 0;
}

void transport_ucx_fields(const char *line, char **tl, char **dev, char **type)
{
	struct {
		const char *key;
		char **out;
	} f[] = {{"tl=", tl}, {"dev=", dev}, {"type=", type}};

	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		const char *p = line;
		if (!f[i].out)
			continue;
		*f[i].out = NULL;
		while (p && *p) {
			if (str_has_prefix(p, f[i].key)) {
				p += strlen(f[i].key);
				*f[i].out = xstrndup(p, strcspn(p, " \t"));
				break;
			}
			p = strchr(p, ' ');
			if (p)
				p++;
		}
	}
}

char *transport_ucx_net_devices(char *const *lines)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_strv char **seen = NULL;

	for (size_t i = 0; lines && lines[i]; i++) {
		cleanup_free char *tl = NULL, *dev = NULL, *type = NULL;
		bool dup = false;

		transport_ucx_fields(lines[i], &tl, &dev, &type);
		if (!tl || !dev || !streq0(type, "net") ||
		    strcmp(tl, "tcp") == 0)
			continue;
		for (size_t j = 0; seen && seen[j]; j++)
			if (strcmp(seen[j], dev) == 0)
				dup = true;
		if (dup)
			continue;
		strv_push(&seen, dev);
		if (sb.len)
			sb_putc(&sb, ',');
		sb_puts(&sb, dev);
	}
	return sb_steal(&sb);
}
