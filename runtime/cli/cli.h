/* cli.h - what the verbs of the mpictr command line share (runtime/cli/):
 * the program name and log level, the log sink, how an error is printed
 * and mapped to an exit code, the did-you-mean distance, and each verb's
 * entry point, which runtime/main.c's commands[] table names.
 * The command line uses the public API (mpictr.h) only.
 */
#ifndef MPICTR_CLI_H
#define MPICTR_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "mpictr.h"

extern const char *cli_progname;
extern int cli_verbosity; /* enum mpictr_log_level: -v, -q */

/* One verb: `mpictr NAME ARGS...` runs handler(argc, argv) with argv[0]
 * the verb, and exits with what it returns. */
struct cli_command {
	const char *name;
	int (*handler)(int argc, char **argv);
	const char *summary; /* one line, for `mpictr help` */
};

/* main.c's table, set before a verb runs: the run verbs name the verbs in
 * their errors that teach (a mistyped verb, a verb after options). */
extern const struct cli_command *cli_commands;
extern size_t cli_ncommands;

/* The library's log lines on stderr, one write() each. */
void cli_stderr_sink(enum mpictr_log_level level, const char *line, void *data);
/* Print err, free it: the exit code it maps to (255 by default). */
int cli_fail(mpictr_err *err);
/* "mpictr: MESSAGE (see 'mpictr --help')" on stderr: 255. */
__attribute__((format(printf, 1, 2))) int cli_usage_error(const char *fmt, ...);
/* rc < 0: cli_fail(err); else print text (if any), free it: 0. Call the
 * library first and pass its result: C leaves the order in which
 * arguments are evaluated open, so text must already be set. */
int cli_print_and_free(int rc, char *text, mpictr_err *err);
/* Is argv[1..argc-1] a request for help (-h or --help, before any "--")? */
bool cli_wants_help(int argc, char **argv);
/* Print a verb's help text (stdout): 0. */
int cli_print_help(const char *text);
/* The nearest of names (n of them, or up to a NULL) to word: within an
 * edit distance of 2 (1 for short words), or NULL. */
const char *cli_nearest(const char *word, const char *const *names, size_t n);

/* help.c: `mpictr --help`, the overview of every verb and the run
 * options. */
void cli_help(void);

/* The verbs (one file each, or one per family). */
int cmd_exec(int argc, char **argv);	 /* exec.c: exec, and no verb */
int cmd_run(int argc, char **argv);	 /* exec.c */
int cmd_shell(int argc, char **argv);	 /* exec.c */
int cmd_instance(int argc, char **argv); /* instance.c */
int cmd_inspect(int argc, char **argv);	 /* inspect.c */
int cmd_sif(int argc, char **argv);	 /* sif.c */
int cmd_verify(int argc, char **argv);	 /* verify.c */
int cmd_pull(int argc, char **argv);	 /* pull.c */
int cmd_cache(int argc, char **argv);	 /* cache.c */
int cmd_check(int argc, char **argv);	 /* check.c */

#endif
