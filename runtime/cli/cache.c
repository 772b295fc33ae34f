/* cache.c - `mpictr cache list|clean [--tmp] [--cache-dir DIR]`: the
 * image cache of pull and of registry images (docs/pull.md).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char cache_help[] =
    "usage: mpictr cache list [--cache-dir DIR]\n"
    "       mpictr cache clean [--tmp] [--cache-dir DIR]\n"
    "\n"
    "list: one line per cached image (DIGEST SIZE TAG...); clean: remove "
    "them.\n"
    "\n"
    "options:\n"
    "      --tmp               clean only what killed pulls left\n"
    "      --cache-dir DIR     the image cache (default: MPICTR_CACHEDIR, "
    "the site's\n"
    "                          cache_dir, ~/.cache/mpictr)\n"
    "  -h, --help              this text\n";

int cmd_cache(int argc, char **argv)
{
	static const char usage[] =
	    "usage: cache list|clean [--tmp] [--cache-dir DIR]";
	const char *dir = NULL, *sub = argc > 1 ? argv[1] : "";
	mpictr_err *err = NULL;
	bool tmp_only = false;
	char *text = NULL;
	uint64_t freed = 0;

	if (cli_wants_help(argc, argv))
		return cli_print_help(cache_help);
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--tmp") == 0)
			tmp_only = true;
		else
			return cli_usage_error("%s", usage);
	}
	if (strcmp(sub, "list") == 0 && !tmp_only) {
		if (mpictr_cache_list(dir, &text, &err) < 0)
			return cli_fail(err);
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (strcmp(sub, "clean") == 0) {
		if (mpictr_cache_clean(dir, !tmp_only, &freed, &err) < 0)
			return cli_fail(err);
		printf("freed %llu bytes\n", (unsigned long long)freed);
		return 0;
	}
	return cli_usage_error("%s", usage);
}
