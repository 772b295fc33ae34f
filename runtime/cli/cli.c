/* cli.c - what the verbs of the command line share: the log sink, errors
 * printed and mapped to the documented exit codes (docs/architecture.md
 * "Conventions"), the
 * did-you-mean distance.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

const char *cli_progname = "mpictr";
int cli_verbosity = MPICTR_LOG_NOTICE;
const struct cli_command *cli_commands;
size_t cli_ncommands;

void cli_stderr_sink(enum mpictr_log_level level, const char *line, void *data)
{
	static const char *const prefix[] = {
	    [MPICTR_LOG_ERROR] = "error: ", [MPICTR_LOG_WARNING] = "warning: ",
	    [MPICTR_LOG_NOTICE] = "",	    [MPICTR_LOG_INFO] = "",
	    [MPICTR_LOG_DEBUG] = "debug: ",
	};
	char buf[2300];
	int n;

	/* One write() per line, so lines of concurrent ranks never mix. */
	n = snprintf(buf, sizeof(buf), "%s: %s%s\n", cli_progname,
		     prefix[level], line);
	if (n > (int)sizeof(buf))
		n = (int)sizeof(buf);
	if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to report */
	}
}

int cli_fail(mpictr_err *err)
{
	int code = mpictr_err_exit_code(err);

	fprintf(stderr, "%s: %s\n", cli_progname, mpictr_err_message(err));
	mpictr_err_free(err);
	return code ? code : MPICTR_EXIT_FAILURE;
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", cli_progname);
	return MPICTR_EXIT_FAILURE;
}

int cli_print_and_free(int rc, char *text, mpictr_err *err)
{
	if (rc < 0)
		return cli_fail(err);
	if (text)
		fputs(text, stdout);
	free(text);
	return 0;
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

int cli_print_help(const char *text)
{
	fputs(text, stdout);
	return 0;
}

/* Edit distance of a and b (both short), capped. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins)
					   : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(*prev));
	}
	return prev[lb];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
	size_t best = strlen(word) <= 3 ? 2 : 3;
	const char *hit = NULL;

	for (size_t i = 0; i < n && names[i]; i++) {
		size_t d = distance(word, names[i]);
		if (d < best) {
			best = d;
			hit = names[i];
		}
	}
	return hit;
}
