/* check.c - `mpictr check`: can this host run containers and MPI jobs
 * (runtime/preflight.c): 0, or 1 when a problem blocks.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static const char check_help[] =
    "usage: mpictr check\n"
    "\n"
    "Check what mpictr needs of this host and print one line per item, "
    "\"ok:\" or\n"
    "\"problem:\" with the fix: exit 0, or 1 when a problem prevents "
    "running containers.\n"
    "\n"
    "options:\n"
    "  -h, --help              this text\n";

int cmd_check(int argc, char **argv)
{
	mpictr_err *err = NULL;
	char *report = NULL;
	int blocking = 0;

	if (cli_wants_help(argc, argv))
		return cli_print_help(check_help);
	if (mpictr_check(&report, &blocking, &err) < 0)
		return cli_fail(err);
	fputs(report, stdout);
	free(report);
	return blocking ? 1 : 0;
}
