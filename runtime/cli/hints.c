/* hints.c - errors that teach: other runtimes' options and verbs
 * (Apptainer/Singularity, Enroot, Pyxis) and what mpictr does instead, a
 * mistyped option or verb (did you mean), a verb or an option in the wrong
 * place.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/hints.h"

/* Other runtimes' options (Apptainer/Singularity, Enroot, Pyxis) and what
 * mpictr does instead. */
static const struct {
	const char *name; /* without the leading dashes */
	const char *hint;
} peer_options[] = {
    {"writable", "mpictr never writes the image: use --writable-tmpfs or "
		 "--overlay DIR"},
    {"w", "mpictr never writes the image: use --writable-tmpfs or "
	  "--overlay DIR (Apptainer's -w is --writable)"},
    {"rw", "use --writable-tmpfs (Enroot's --rw)"},
    {"root", "use --fakeroot (Enroot's --root)"},
    {"mount", "use -B/--bind SRC[:DST[:ro]]"},
    {"m", "use -B/--bind SRC[:DST[:ro]]"},
    {"conf", "use --config FILE"},
    {"sharens", "not needed: all ranks of a node share one container by "
		"default"},
    {"userns", "not needed: mpictr always runs in a user namespace"},
    {"u", "not needed: mpictr always runs in a user namespace"},
    {"pid", "mpictr keeps the host's PID namespace (MPI ranks need it)"},
    {"ipc", "mpictr keeps the host's IPC namespace (MPI shared memory "
	    "needs it)"},
    {"net", "mpictr keeps the host network (MPI needs it)"},
    {"network", "mpictr keeps the host network (MPI needs it)"},
    {"nvccli", "use --gpu (or --nv)"},
    {"scratch", "use -B DIR:/scratch, or --contain for a private /tmp"},
    {"S", "use -B DIR:/scratch, or --contain for a private /tmp"},
    {"workdir", "use --contain (a private /tmp and home in memory)"},
    {"W", "use --contain (a private /tmp and home in memory)"},
    {"no-mount", "use --contain, --no-home"},
    {"compat", "use --containall --writable-tmpfs"},
    {"keep-privs", "mpictr never grants privileges"},
    {"allow-setuid", "mpictr never grants privileges"},
    {"no-privs", "not needed: all capabilities are always dropped"},
    {"container-image", "give IMAGE after the options: mpictr [OPTIONS] "
			"IMAGE COMMAND"},
    {"container-mounts", "use -B/--bind"},
    {"container-workdir", "use --pwd DIR"},
    {"container-name", "use 'mpictr instance start IMAGE NAME', then "
		       "instance://NAME as IMAGE"},
    {"container-writable", "use --writable-tmpfs"},
    {"container-remap-root", "use --fakeroot"},
    {"no-container-mount-home", "use --no-home"},
    {"container-mount-home", "not needed: $HOME is bound by default"},
    {"container-env", "use -e/--env NAME=VALUE"},
    {"container-save", "use 'mpictr instance save NAME PATH'"},
};

const char *hint_peer_option(const char *name)
{
	for (size_t i = 0; i < sizeof(peer_options) / sizeof(*peer_options);
	     i++)
		if (strcmp(peer_options[i].name, name) == 0)
			return peer_options[i].hint;
	return NULL;
}

bool hint_is_option(const char *arg, const struct option *opts)
{
	size_t l;

	if (arg[0] != '-' || !arg[1])
		return false;
	if (arg[1] != '-')
		return strchr("nBecCvqhVHf", arg[1]) != NULL;
	arg += 2;
	l = strcspn(arg, "=");
	for (const struct option *o = opts; o->name; o++)
		if (strlen(o->name) == l && strncmp(o->name, arg, l) == 0)
			return true;
	return false;
}

int hint_bad_option(char **argv, const struct option *opts)
{
	const char *arg = argv[optind - 1], *hint, *near;
	const char *names[64];
	char name[64];
	size_t n = 0;

	if (optopt && optopt < 128) {
		char s[2] = {(char)optopt, 0};
		hint = hint_peer_option(s);
		fprintf(stderr,
			"%s: unknown option or missing argument for '-%c'%s%s "
			"(see '%s --help')\n",
			cli_progname, optopt, hint ? ": " : "",
			hint ? hint : "", cli_progname);
		return MPICTR_EXIT_FAILURE;
	}
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="),
		 arg + 2);
	hint = strncmp(arg, "--", 2) == 0 ? hint_peer_option(name) : NULL;
	for (const struct option *o = opts; o->name && n < 64; o++)
		names[n++] = o->name;
	near = hint ? NULL : cli_nearest(name, names, n);
	if (hint)
		fprintf(stderr,
			"%s: unknown option '%s': %s (see '%s --help')\n",
			cli_progname, arg, hint, cli_progname);
	else if (near)
		fprintf(stderr,
			"%s: unknown option '%s' (did you mean '--%s'?)\n",
			cli_progname, arg, near);
	else
		fprintf(stderr,
			"%s: unknown option or missing argument '%s' (see '%s "
			"--help')\n",
			cli_progname, arg, cli_progname);
	return MPICTR_EXIT_FAILURE;
}

int hint_abbreviated_peer(const char *token, const char *matched, int *code)
{
	char name[64];
	const char *hint;

	if (strncmp(token, "--", 2) != 0)
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(token + 2, "="),
		 token + 2);
	if (strcmp(name, matched) == 0 || !(hint = hint_peer_option(name)))
		return 0;
	*code = cli_usage_error("unknown option '%s': %s", token, hint);
	return 1;
}

/* Other runtimes' verbs, and what mpictr does instead. */
static const struct {
	const char *verb, *hint;
} peer_verbs[] = {
    {"build", "mpictr builds no images: 'mpictr sif create -o OUT.sif DIR' "
	      "wraps a directory or squashfs"},
    {"start", "Enroot's 'start' is 'mpictr exec IMAGE COMMAND' (or 'mpictr "
	      "run IMAGE')"},
    {"import", "use 'mpictr pull' where installed, or 'mpictr sif create'"},
    {"create", "use 'mpictr sif create -o OUT.sif DIR'"},
    {"list", "use 'mpictr instance list'"},
    {"export", "use 'mpictr instance save NAME PATH'"},
    {"test", "run the image's own test with 'mpictr exec IMAGE COMMAND'"},
    {"oci", "mpictr runs SIF, squashfs and directory images"},
};

/* The verbs' names (main.c's table), up to max of them: how many. */
static size_t verb_names(const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < cli_ncommands && n < max; i++)
		names[n++] = cli_commands[i].name;
	return n;
}

int hint_unknown_verb(const char *word, int *code)
{
	const char *near, *names[32];

	if (strchr(word, '/') || strchr(word, '.') || access(word, F_OK) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(peer_verbs) / sizeof(*peer_verbs); i++)
		if (strcmp(word, peer_verbs[i].verb) == 0) {
			*code = cli_usage_error("unknown verb '%s': %s", word,
						peer_verbs[i].hint);
			return 1;
		}
	near = cli_nearest(word, names, verb_names(names, 32));
	if (!near)
		return 0;
	*code = cli_usage_error("unknown verb '%s' (did you mean '%s'?), and "
				"no image of that name",
				word, near);
	return 1;
}

int hint_verb_after_options(const char *word, int *code)
{
	const char *names[32];
	size_t n = verb_names(names, 32);

	if (access(word, F_OK) == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(word, names[i]) == 0) {
			*code = cli_usage_error("'%s' after options: the verb "
						"comes first ('mpictr %s "
						"[OPTIONS] ...'), and there "
						"is no image of that name",
						word, word);
			return 1;
		}
	return 0;
}
