/* inspect.c - `mpictr inspect [--json] IMAGE`: what an image holds and
 * declares (labels, environment scripts, runscript, image config).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char inspect_help[] =
    "usage: mpictr inspect [--json] IMAGE\n"
    "\n"
    "Print IMAGE's labels, environment scripts, runscript, image "
    "configuration and,\n"
    "for a SIF, its objects; the image is read, never mounted.\n"
    "\n"
    "options:\n"
    "      --json              the same as one JSON object\n"
    "  -h, --help              this text\n";

int cmd_inspect(int argc, char **argv)
{
	mpictr_err *err = NULL;
	char *text = NULL;
	bool json = argc == 3 && strcmp(argv[1], "--json") == 0;
	int rc;

	if (cli_wants_help(argc, argv))
		return cli_print_help(inspect_help);
	/* Apptainer's per-section flags: every section is printed, each
	 * under its title; --json has them by name. */
	if (argc == 3 &&
	    (strcmp(argv[1], "--runscript") == 0 ||
	     strcmp(argv[1], "--labels") == 0 ||
	     strcmp(argv[1], "--environment") == 0 ||
	     strcmp(argv[1], "--deffile") == 0 || strcmp(argv[1], "-r") == 0 ||
	     strcmp(argv[1], "-l") == 0 || strcmp(argv[1], "-e") == 0 ||
	     strcmp(argv[1], "-d") == 0))
		return cli_usage_error(
		    "inspect prints every section at once (no '%s'): "
		    "'mpictr inspect %s' shows it under its title, "
		    "'mpictr inspect --json %s' has it by name (.runscript, "
		    ".labels, .environment, .deffile)",
		    argv[1], argv[2], argv[2]);
	if (!(argc == 2 && argv[1][0] != '-') && !json)
		return cli_usage_error("%s", "usage: inspect [--json] IMAGE");
	rc = mpictr_inspect(argv[argc - 1], json, &text, &err);
	return cli_print_and_free(rc, text, err);
}
