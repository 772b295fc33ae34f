/* verify.c - `mpictr verify [--key FILE]... [--json] [--legacy-insecure]
 * IMAGE`: the signatures of a SIF, as `apptainer verify` checks them
 * (docs/signing.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static const char verify_usage[] =
    "usage: verify [--key FILE]... [--json] [--legacy-insecure] IMAGE";

static const char verify_help[] =
    "usage: mpictr verify [--key FILE]... [--json] [--legacy-insecure] "
    "IMAGE\n"
    "\n"
    "Check every signature object of the SIF IMAGE: exit 0 verified, 1 not "
    "verified\n"
    "(the report says why), 255 when the image could not be examined.\n"
    "\n"
    "options:\n"
    "  -k, --key FILE          a public (or private) key to verify with, "
    "PEM or\n"
    "                          OpenPGP (repeatable)\n"
    "      --json              the report as JSON\n"
    "      --legacy-insecure   also check legacy (SIFHASH) signatures\n"
    "  -h, --help              this text\n";

/* The options: 0 and the keys and flags, or the exit code (help, a bad
 * option) with *stop set. */
static int verify_options(int argc, char **argv, const char **keys,
			  unsigned *flags, int *stop)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {"json", no_argument, NULL, 'j'},
	    {"legacy-insecure", no_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	size_t nkeys = 0;
	int c;

	optind = 1;
	opterr = 0;
	*stop = 1;
	while ((c = getopt_long(argc, argv, "k:h", opts, NULL)) != -1) {
		if (c == 'k')
			keys[nkeys++] = optarg;
		else if (c == 'j')
			*flags |= MPICTR_VERIFY_JSON;
		else if (c == 'l')
			*flags |= MPICTR_VERIFY_LEGACY;
		else if (c == 'h')
			return cli_print_help(verify_help);
		else
			return cli_usage_error("%s", verify_usage);
	}
	if (optind + 1 != argc)
		return cli_usage_error("%s", verify_usage);
	*stop = 0;
	return 0;
}

/* 0 verified, 1 not verified (the report says why), 255 when the image
 * could not be examined. */
int cmd_verify(int argc, char **argv)
{
	const char **keys = calloc((size_t)argc + 1, sizeof(*keys));
	mpictr_err *err = NULL;
	unsigned flags = 0;
	char *text = NULL;
	int ok = 0, stop, code;

	if (!keys)
		abort();
	code = verify_options(argc, argv, keys, &flags, &stop);
	if (stop) {
		free(keys);
		return code;
	}
	if (!keys[0])
		fprintf(
		    stderr,
		    "%s: warning: no --key given: signatures can be listed, "
		    "not verified\n",
		    cli_progname);
	if (mpictr_verify(argv[optind], keys, flags, &text, &ok, &err) < 0) {
		free(keys);
		return cli_fail(err);
	}
	fputs(text, stdout);
	free(text);
	free(keys);
	return ok ? 0 : 1;
}
