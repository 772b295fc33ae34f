/* exec.h - the run options (exec.c), shared by the run verbs and
 * `instance start` (instance.c).
 */
#ifndef MPICTR_CLI_EXEC_H
#define MPICTR_CLI_EXEC_H

#include "mpictr.h"

struct run_opts {
	int dry_run;
	int list_profiles;
	int instance_start; /* `instance start`: --linger is allowed */
	long linger;
	int shell;		/* `mpictr shell`: --shell is allowed */
	const char *shell_path; /* --shell */
	const char *help;	/* -h: this text (NULL: cli_help's) */
};

/* Option results: go on, or stop and exit with *code. */
enum { OPT_GO_ON = 0, OPT_STOP = 1 };

/* The site's file, MPICTR_CONF, then the run options of argv (argv[0]
 * the verb): OPT_GO_ON with optind at the first operand, or OPT_STOP
 * with *code (an error printed, or --help / --version done). */
int exec_configure(mpictr_config *cfg, int argc, char **argv,
		   struct run_opts *o, int *code);

#endif
