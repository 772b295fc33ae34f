/* fuzz_launcher.c - libFuzzer target for the launcher detection: the input
 * is an environment, one NAME=VALUE a line, plus "@proc PID PPID START COMM"
 * lines that make the process table (cycles included); the whole input is
 * also parsed as a /proc/<pid>/stat text. Checks the invariants callers
 * rely on: a key on success, ranks below sizes, a message on failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "host/launcher.h"
#include "common/util.h"

struct table {
	pid_t pid[8];
	struct launcher_proc_info info[8];
	size_t n;
};

static int lookup(void *ctx, pid_t pid, struct launcher_proc_info *out,
		  mpictr_err **err)
{
	struct table *t = ctx;

	if (t->n && pid == 0) {
		*out = t->info[0];
		return 0;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->pid[i] == pid) {
			*out = t->info[i];
			return 0;
		}
	return err_set(err, 2, "read '/proc/%d/stat'", (int)pid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct launcher_proc_info pi;
	struct table t = {.n = 0};
	struct launcher_proc proc = {lookup, &t};
	struct launch_peers p;
	mpictr_err *err = NULL;
	char *buf = malloc(size + 1), *save = NULL;
	char **env = NULL;

	launcher_parse_stat((const char *)data, size, &pi);
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (char *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		int pid, ppid;
		unsigned long long start;
		char comm[16];

		if (strncmp(l, "@proc ", 6) == 0) {
			if (t.n < 8 && sscanf(l, "@proc %d %d %llu %15s", &pid,
					      &ppid, &start, comm) == 4) {
				t.pid[t.n] = pid;
				t.info[t.n].ppid = ppid;
				t.info[t.n].start_time = start;
				memcpy(t.info[t.n].comm, comm, sizeof(comm));
				t.n++;
			}
		} else if (strchr(l, '=')) {
			strv_push(&env, l);
		}
	}
	if (!env)
		strv_push(&env, "X=");
	if (launcher_detect(env, &proc, &p, &err) == 0) {
		char *line = launcher_describe(&p);

		if (!p.key || !*p.key || !line ||
		    (p.local_rank != LAUNCHER_UNKNOWN &&
		     p.local_size != LAUNCHER_UNKNOWN &&
		     p.local_rank >= p.local_size) ||
		    (p.rank != LAUNCHER_UNKNOWN && p.size != LAUNCHER_UNKNOWN &&
		     p.rank >= p.size))
			abort();
		free(line);
	} else if (!mpictr_err_message(err) || !*mpictr_err_message(err)) {
		abort();
	}
	launch_peers_free(&p);
	mpictr_err_free(err);
	strv_free(env);
	free(buf);
	return 0;
}
