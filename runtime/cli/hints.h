/* hints.h - errors that teach (hints.c): other runtimes' options and
 * verbs, did-you-mean, options and verbs out of place. Each prints its
 * error and returns (or sets *code to) the exit code, 255.
 */
#ifndef MPICTR_CLI_HINTS_H
#define MPICTR_CLI_HINTS_H

#include <getopt.h>
#include <stdbool.h>

/* A peer's option name (without dashes and any "=VALUE"): its hint. */
const char *hint_peer_option(const char *name);
/* Is arg (e.g. "--pwd=/x", "-B") one of opts, or a short run option? */
bool hint_is_option(const char *arg, const struct option *opts);
/* The option getopt_long refused (argv[optind - 1], optopt): say what
 * is wrong, with a peer's hint or the nearest of opts: 255. */
int hint_bad_option(char **argv, const struct option *opts);
/* getopt_long takes an unambiguous abbreviation: "--writable" would be
 * --writable-tmpfs. A peer's option of that exact name is refused with
 * its hint instead (1 with *code), else 0. */
int hint_abbreviated_peer(const char *token, const char *matched, int *code);
/* A first argument that is neither a verb nor an image: a mistyped verb
 * or a peer's? Then say so (1 with *code), else 0. */
int hint_unknown_verb(const char *word, int *code);
/* `mpictr -n 4 shell IMAGE`: a verb after options, where IMAGE is, and
 * no file of that name? Then say where verbs go (1 with *code), else 0. */
int hint_verb_after_options(const char *word, int *code);

#endif
