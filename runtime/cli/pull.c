/* pull.c - `mpictr pull [OPTIONS] SOURCE [OUT.sif]`: an OCI or Docker
 * image into the cache, and OUT.sif (docs/pull.md).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

static const char pull_usage[] =
    "usage: pull [--force] [-q] [--dir DIR] [--arch ARCH] [--tls-ca FILE] "
    "[--insecure HOST] [--no-expansion-limit] [--stall-timeout SECONDS] "
    "SOURCE [OUT.sif]";

static const char pull_help[] =
    "usage: mpictr pull [--force] [-q] [--arch ARCH] [--tls-ca FILE] "
    "[--insecure HOST[:PORT]]...\n"
    "                   [--cache-dir DIR] [--dir DIR] [--no-expansion-limit] "
    "[--stall-timeout SECONDS]\n"
    "                   SOURCE [OUT.sif]\n"
    "\n"
    "Pull SOURCE into the image cache as a SIF and copy it to OUT.sif "
    "(without OUT,\n"
    "NAME_TAG.sif in the current directory or --dir, as Apptainer). "
    "SOURCE is\n"
    "docker://[USER@]HOST[:PORT]/REPO[:TAG][@DIGEST], REPO[:TAG],\n"
    "[USER@]REGISTRY#IMAGE[:TAG], docker-archive:FILE[:REF], "
    "oci-archive:FILE[:REF]\n"
    "or oci:DIR[:REF] (see docs/pull.md).\n"
    "\n"
    "options:\n"
    "  -F, --force             replace an existing OUT.sif\n"
    "      --dir DIR           write NAME_TAG.sif in DIR (without OUT)\n"
    "  -q, --quiet             no progress and no summary\n"
    "      --arch ARCH         the platform to choose from a multi-platform "
    "image\n"
    "                          (arm64, arm/v7, ...; default: this host's)\n"
    "      --tls-ca FILE       trust the CA certificates of FILE too\n"
    "      --insecure HOST[:PORT]  plain HTTP to that registry "
    "(repeatable)\n"
    "      --cache-dir DIR     the image cache (default: MPICTR_CACHEDIR, "
    "the site's\n"
    "                          cache_dir, ~/.cache/mpictr)\n"
    "      --no-expansion-limit  accept layers that expand more than "
    "100 times or whose\n"
    "                          file tree needs more than 48 MiB\n"
    "      --stall-timeout SECONDS  end a transfer slower than 1 KiB/s for "
    "that long\n"
    "                          (default 60)\n"
    "  -h, --help              this text\n";

/* Pull progress on stderr: on a terminal the byte counts update one line
 * in place; elsewhere only the step lines, one each. */
static void pull_progress(const char *line, int transient, void *data)
{
	bool tty = data != NULL;

	if (transient && !tty)
		return;
	if (tty)
		fprintf(stderr, "\r\033[K%s%s", line, transient ? "" : "\n");
	else
		fprintf(stderr, "%s\n", line);
}

int cmd_pull(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"force", no_argument, NULL, 'F'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"arch", required_argument, NULL, 'a'},
	    {"tls-ca", required_argument, NULL, 'C'},
	    {"insecure", required_argument, NULL, 'I'},
	    {"no-expansion-limit", no_argument, NULL, 'X'},
	    {"stall-timeout", required_argument, NULL, 'S'},
	    {"cache-dir", required_argument, NULL, 'D'},
	    {"dir", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	mpictr_pull_opts *o = mpictr_pull_opts_new();
	mpictr_err *err = NULL;
	char *summary = NULL;
	bool quiet = false;
	int c, rc = 0;

	optind = 1;
	opterr = 0;
	while (rc == 0 &&
	       (c = getopt_long(argc, argv, "+Fqh", opts, NULL)) != -1) {
		const struct option *opt = NULL;
		for (size_t i = 0; opts[i].name; i++)
			if (opts[i].val == c)
				opt = &opts[i];
		if (!opt || c == 'h') {
			mpictr_pull_opts_free(o);
			return opt ? cli_print_help(pull_help)
				   : cli_usage_error("%s", pull_usage);
		}
		quiet |= c == 'q';
		rc = mpictr_pull_opts_set(o, opt->name, optarg, &err);
	}
	if (rc == 0 && (optind >= argc || argc - optind > 2)) {
		mpictr_pull_opts_free(o);
		return cli_usage_error("%s", pull_usage);
	}
	if (rc == 0 && !quiet)
		mpictr_pull_opts_progress(
		    o, pull_progress, isatty(STDERR_FILENO) ? (void *)1 : NULL);
	if (rc == 0)
		rc = mpictr_pull(argv[optind],
				 optind + 1 < argc ? argv[optind + 1] : NULL, o,
				 &summary, &err);
	mpictr_pull_opts_free(o);
	if (rc < 0)
		return cli_fail(err);
	if (!quiet && summary)
		fputs(summary, stderr);
	free(summary);
	return 0;
}
