/* main.c - the mpictr command line: the table of verbs, each in its own
 * file of runtime/cli/ with its options and its --help, and what runs
 * before any of them (the setuid refusal, the log sink). The command line
 * uses the public API only (mpictr.h) and maps the library's errors to the
 * documented exit codes (runtime/cli/cli.c; docs/user.md, exit status).
 */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cli/cli.h"

static int cmd_help(int argc, char **argv)
{
	cli_help();
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	printf("mpictr %s\n", mpictr_version());
	return 0;
}

/* The verbs, crun's way: `mpictr NAME ...` runs handler with argv[0]
 * NAME; anything else is `mpictr [OPTIONS] IMAGE COMMAND` (exec). */
static const struct cli_command commands[] = {
    {"exec", cmd_exec, "run COMMAND in IMAGE (the default verb)"},
    {"run", cmd_run, "run IMAGE's runscript"},
    {"shell", cmd_shell, "an interactive shell in IMAGE"},
    {"inspect", cmd_inspect,
     "what IMAGE declares: labels, environment, "
     "runscript"},
    {"sif", cmd_sif, "list, create and sign SIF files"},
    {"check", cmd_check, "check this host for what mpictr needs"},
    {"instance", cmd_instance,
     "start, list, stop and save named "
     "containers"},
    {"help", cmd_help, "this text"},
    {"version", cmd_version, "print the version"},
    {"verify", cmd_verify, "verify the signatures of a SIF"},
    {"pull", cmd_pull, "pull an OCI or Docker image into a SIF"},
    {"cache", cmd_cache, "list or clean the image cache"},
};

/* Refuse to run with elevated privileges (charliecloud's
 * privs_verify_invoking): mpictr is designed to need none, and a setuid
 * install would turn every bind option into a privilege escalation. */
static int refuse_setuid(void)
{
	if (getauxval(AT_SECURE) || getuid() != geteuid() ||
	    getgid() != getegid()) {
		fprintf(stderr,
			"%s: refusing to run setuid or setgid (real uid %u, "
			"effective uid %u; real gid %u, effective gid %u): "
			"mpictr needs no privileges, remove the setuid/setgid "
			"bit\n",
			cli_progname, (unsigned)getuid(), (unsigned)geteuid(),
			(unsigned)getgid(), (unsigned)getegid());
		return -1;
	}
	return 0;
}

/* Apptainer's global flags go before the verb (`mpictr -q exec ...`):
 * -q/--quiet, -v/--verbose and -d/--debug (as -v) in front of a verb are
 * moved after it, where the verb's own options take them. */
static void global_flags_after_verb(int argc, char **argv)
{
	int k = 1;

	while (k < argc &&
	       (strcmp(argv[k], "-q") == 0 || strcmp(argv[k], "--quiet") == 0 ||
		strcmp(argv[k], "-v") == 0 ||
		strcmp(argv[k], "--verbose") == 0 ||
		strcmp(argv[k], "-d") == 0 || strcmp(argv[k], "--debug") == 0))
		k++;
	if (k == 1 || k >= argc)
		return;
	for (size_t i = 0; i < cli_ncommands; i++) {
		char *verb = argv[k];

		if (strcmp(verb, cli_commands[i].name) != 0)
			continue;
		memmove(argv + 2, argv + 1, (size_t)(k - 1) * sizeof(*argv));
		argv[1] = verb;
		for (int j = 2; j <= k; j++)
			if (strcmp(argv[j], "-d") == 0 ||
			    strcmp(argv[j], "--debug") == 0)
				argv[j] = "-v";
		return;
	}
}

int main(int argc, char **argv)
{
	const char *verb;

	if (refuse_setuid() < 0)
		return MPICTR_EXIT_FAILURE;
	mpictr_set_log_sink(cli_stderr_sink, NULL, MPICTR_LOG_NOTICE);
	cli_commands = commands;
	cli_ncommands = sizeof(commands) / sizeof(*commands);

	global_flags_after_verb(argc, argv);
	verb = argc > 1 ? argv[1] : NULL;
	if (!verb) {
		cli_help();
		return MPICTR_EXIT_FAILURE;
	}
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(verb, commands[i].name) == 0)
			return commands[i].handler(argc - 1, argv + 1);
	return cmd_exec(argc, argv);
}
