/* ucx.c - the UCX device query through the short-lived mpictr-ucx-query
 * helper, so libucs never enters this process: where the helper is, running
 * it, and reading its lines. No policy (that is transport.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/proc.h"
#include "host/ucx.h"
#include "common/util.h"

/* Path of the UCX query helper: installed, or beside an uninstalled CLI
 * (build/mpictr -> build/libexec/). */
char *ucx_helper_path(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			char *cand;
			*slash = '\0';
			cand = xasprintf("%s/libexec/mpictr-ucx-query", self);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
	}
	return xstrdup(MPICTR_LIBEXECDIR "/mpictr-ucx-query");
}

#define UCX_QUERY_TIMEOUT_MS 10000
#define UCX_QUERY_MAX_OUTPUT (1 << 20)

int ucx_query(const char *helper_path, char ***lines, mpictr_err **err)
{
	int fd;
	pid_t pid;
	struct strbuf sb = STRBUF_INIT;
	long t0;
	bool timed_out = false, too_big = false;
	int status;
	char *const argv[] = {(char *)helper_path, NULL};

	*lines = NULL;
	if (access(helper_path, X_OK) < 0)
		return err_set(err, errno, "run UCX query helper '%s'",
			       helper_path);
	pid = proc_spawn_output(helper_path, argv, false, false, &fd, err);
	if (pid < 0)
		return -1;
	t0 = mono_ms();
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long left = UCX_QUERY_TIMEOUT_MS - (mono_ms() - t0);
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
		r = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf)));
		if (r <= 0)
			break;
		if (sb.len + (size_t)r > UCX_QUERY_MAX_OUTPUT) {
			too_big = true;
			break;
		}
		sb_add(&sb, buf, (size_t)r);
	}
	close(fd);
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

void ucx_fields(const char *line, char **tl, char **dev, char **type)
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

char *ucx_net_devices(char *const *lines)
{
	struct strbuf sb = STRBUF_INIT;
	cleanup_strv char **seen = NULL;

	for (size_t i = 0; lines && lines[i]; i++) {
		cleanup_free char *tl = NULL, *dev = NULL, *type = NULL;

		ucx_fields(lines[i], &tl, &dev, &type);
		if (!tl || !dev || !streq0(type, "net") ||
		    strcmp(tl, "tcp") == 0)
			continue;
		if (strv_contains(seen, dev))
			continue;
		strv_push(&seen, dev);
		if (sb.len)
			sb_putc(&sb, ',');
		sb_puts(&sb, dev);
	}
	return sb_steal(&sb);
}
