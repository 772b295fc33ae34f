/* sif.c - `mpictr sif list|info|header|create|sign`: read, write and sign
 * SIF files (sif/), one function per subverb.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char sif_help[] =
    "usage: mpictr sif list FILE\n"
    "       mpictr sif info FILE ID\n"
    "       mpictr sif header FILE\n"
    "       mpictr sif create [--force] -o OUT.sif SOURCE [--deffile F] "
    "[--env-script F]\n"
    "                         [--labels F]\n"
    "       mpictr sif sign --key FILE IMAGE\n"
    "\n"
    "list: the objects of a SIF; info: one object's descriptor; header: the "
    "global\n"
    "header; create: OUT.sif from SOURCE, a directory or a squashfs file; "
    "sign: add\n"
    "a signature object per object group.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT.sif    create: the SIF file to write\n"
    "  -f, --force             create: replace an existing OUT.sif\n"
    "      --deffile F         create: add F as the definition file object\n"
    "      --env-script F      create: add F as the environment script "
    "object\n"
    "      --labels F          create: add F (JSON) as the labels object\n"
    "  -k, --key FILE          sign: the private key (PEM or OpenPGP)\n"
    "  -h, --help              this text\n";

/* sif list FILE, sif header FILE: one text from the library. */
static int sif_text(int argc, char **argv, const char *usage,
		    int (*get)(const char *, char **, mpictr_err **))
{
	mpictr_err *err = NULL;
	char *text = NULL;
	int rc;

	if (cli_wants_help(argc - 1, argv + 1))
		return cli_print_help(sif_help);
	if (argc != 3)
		return cli_usage_error("%s", usage);
	rc = get(argv[2], &text, &err);
	return cli_print_and_free(rc, text, err);
}

static int sif_list(int argc, char **argv)
{
	return sif_text(argc, argv, "usage: sif list FILE", mpictr_sif_list);
}

static int sif_header(int argc, char **argv)
{
	return sif_text(argc, argv, "usage: sif header FILE",
			mpictr_sif_header);
}

static int sif_info(int argc, char **argv)
{
	mpictr_err *err = NULL;
	char *text = NULL, *end;
	long id;
	int rc;

	if (cli_wants_help(argc - 1, argv + 1))
		return cli_print_help(sif_help);
	if (argc != 4)
		return cli_usage_error("%s", "usage: sif info FILE ID");
	errno = 0;
	id = strtol(argv[3], &end, 10);
	if (errno || *end || end == argv[3] || id < 1 || id > 0xffffffffL)
		return cli_usage_error("invalid object ID '%s' (expected a "
				       "positive number)",
				       argv[3]);
	rc = mpictr_sif_info(argv[2], (uint32_t)id, &text, &err);
	return cli_print_and_free(rc, text, err);
}

/* sif create on a terminal: what it is doing, and mksquashfs's bar. */
static void show_progress(const char *text, size_t len, void *data)
{
	(void)data;
	if (write(STDERR_FILENO, text, len) < 0) {
		/* nowhere to show it */
	}
}

/* `mpictr sif create [--force] -o OUT.sif SOURCE ...` (argv[0] "sif"). */
static int sif_create(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"deffile", required_argument, NULL, 'd'},
	    {"env-script", required_argument, NULL, 'E'},
	    {"labels", required_argument, NULL, 'l'},
	    {"force", no_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	mpictr_sif_create_opts *o = mpictr_sif_create_opts_new();
	mpictr_err *err = NULL;
	const char *out = NULL;
	int c, rc = 0;

	optind = 1;
	opterr = 0;
	if (isatty(STDERR_FILENO))
		mpictr_sif_create_opts_set_progress(o, show_progress, NULL);
	while ((c = getopt_long(argc - 1, argv + 1, "o:fh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			mpictr_sif_create_opts_set_force(o, 1);
			break;
		case 'd':
			rc =
			    mpictr_sif_create_opts_set_deffile(o, optarg, &err);
			break;
		case 'E':
			rc = mpictr_sif_create_opts_set_env_script(o, optarg,
								   &err);
			break;
		case 'l':
			rc = mpictr_sif_create_opts_set_labels(o, optarg, &err);
			break;
		case 'h':
			mpictr_sif_create_opts_free(o);
			return cli_print_help(sif_help);
		default:
			mpictr_sif_create_opts_free(o);
			return cli_usage_error(
			    "%s", "usage: sif create -o OUT.sif SOURCE "
				  "[--deffile F] [--env-script F] "
				  "[--labels F] [--force]");
		}
		if (rc < 0) {
			mpictr_sif_create_opts_free(o);
			return cli_fail(err);
		}
	}
	if (!out || optind + 1 != argc - 1) {
		mpictr_sif_create_opts_free(o);
		return cli_usage_error("%s", "usage: sif create -o OUT.sif "
					     "SOURCE");
	}
	rc = mpictr_sif_create(out, argv[1 + optind], o, &err);
	mpictr_sif_create_opts_free(o);
	return rc < 0 ? cli_fail(err) : 0;
}

/* `mpictr sif sign --key FILE IMAGE` (argv[0] "sif"). */
static int sif_sign(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *key = NULL;
	mpictr_err *err = NULL;
	char *text = NULL;
	int c, rc;

	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_print_help(sif_help);
		if (c != 'k')
			return cli_usage_error(
			    "%s", "usage: sif sign --key FILE IMAGE");
		key = optarg;
	}
	if (!key || optind + 1 != argc)
		return cli_usage_error("%s",
				       "usage: sif sign --key FILE IMAGE");
	rc = mpictr_sif_sign(argv[optind], key, &text, &err);
	return cli_print_and_free(rc, text, err);
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] "sif", argv[1] name */
} subverbs[] = {
    {"list", sif_list}, {"header", sif_header}, {"info", sif_info},
    {"sign", sif_sign}, {"create", sif_create},
};

/* `mpictr sif SUBVERB ...` (argv[0] "sif"). */
int cmd_sif(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return cli_usage_error("%s", "missing sif subcommand (list, "
					     "info, header or create)");
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0)
		return cli_print_help(sif_help);
	for (size_t i = 0; i < sizeof(subverbs) / sizeof(*subverbs); i++)
		if (strcmp(sub, subverbs[i].name) == 0)
			return subverbs[i].run(argc, argv);
	return cli_usage_error("unknown sif subcommand '%s' (expected list, "
			       "info, header or create)",
			       sub);
}
