/* instance.c - `mpictr instance start|list|stop|save`: a node container
 * kept running under a name, joined as instance://NAME (modes/instance.c).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exec.h"

static const char instance_help[] =
    "usage: mpictr instance start [OPTIONS] [--linger SECONDS] IMAGE NAME\n"
    "       mpictr instance list [--json]\n"
    "       mpictr instance stop NAME|-a|--all\n"
    "       mpictr instance save NAME PATH\n"
    "\n"
    "start: build the node container of IMAGE with OPTIONS (the run "
    "options of\n"
    "'mpictr --help': binds, --contain, devices, profiles, ...) and keep it "
    "running as\n"
    "NAME; instance://NAME is then an IMAGE wherever one is. list: the "
    "instances of\n"
    "this user. stop: end one, or all. save: the container as it is now, "
    "as a new\n"
    "squashfs image at PATH.\n"
    "\n"
    "options:\n"
    "      --linger SECONDS    start: end the instance after SECONDS "
    "without a process\n"
    "      --json              list: as a JSON array\n"
    "  -a, --all               stop: every instance of this user\n"
    "  -h, --help              this text\n";

/* `mpictr instance start [OPTIONS] IMAGE NAME`. */
static int cmd_instance_start(int argc, char **argv)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	struct run_opts o = {.instance_start = 1, .help = instance_help};
	int code = 0;

	if (exec_configure(cfg, argc, argv, &o, &code) == OPT_STOP)
		goto out;
	if (o.dry_run || o.list_profiles) {
		code = cli_usage_error("%s", "instance start takes neither "
					     "--dry-run nor --list-profiles");
		goto out;
	}
	if (argc - optind != 2) {
		code = cli_usage_error("%s", "usage: instance start [OPTIONS] "
					     "IMAGE NAME");
		goto out;
	}
	if (mpictr_config_set_image(cfg, argv[optind], &err) < 0 ||
	    mpictr_instance_start(cfg, argv[optind + 1], o.linger, 0, &err) < 0)
		code = cli_fail(err);
out:
	mpictr_config_free(cfg);
	return code;
}

static int cmd_instance_list(int argc, char **argv)
{
	bool json = argc == 3 && strcmp(argv[2], "--json") == 0;
	mpictr_err *err = NULL;
	char *text = NULL;
	int rc;

	if (cli_wants_help(argc - 1, argv + 1))
		return cli_print_help(instance_help);
	if (argc > 3 || (argc == 3 && !json))
		return cli_usage_error("%s", "usage: instance list [--json]");
	rc = mpictr_instance_list(NULL, json, &text, &err);
	return cli_print_and_free(rc, text, err);
}

static int cmd_instance_save(int argc, char **argv)
{
	mpictr_err *err = NULL;
	mpictr_config *cfg;
	int rc;

	if (cli_wants_help(argc - 1, argv + 1))
		return cli_print_help(instance_help);
	if (argc != 4 || argv[2][0] == '-')
		return cli_usage_error("%s", "usage: instance save NAME PATH");
	cfg = mpictr_config_new();
	rc = mpictr_instance_save(cfg, argv[2], argv[3], &err);
	mpictr_config_free(cfg);
	return rc < 0 ? cli_fail(err) : 0;
}

static int cmd_instance_stop(int argc, char **argv)
{
	mpictr_err *err = NULL;
	int rc;

	if (cli_wants_help(argc - 1, argv + 1))
		return cli_print_help(instance_help);
	/* -a: Apptainer's short form of --all */
	if (argc == 3 && strcmp(argv[2], "-a") == 0)
		argv[2] = "--all";
	if (argc != 3 || (argv[2][0] == '-' && strcmp(argv[2], "--all") != 0))
		return cli_usage_error("%s",
				       "usage: instance stop NAME|-a|--all");
	rc = mpictr_instance_stop(
	    NULL, strcmp(argv[2], "--all") == 0 ? NULL : argv[2], &err);
	return rc < 0 ? cli_fail(err) : 0;
}

/* `mpictr instance start|list|stop|save ...` (argv[0] "instance"). */
int cmd_instance(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return cli_usage_error("%s", "missing instance subcommand "
					     "(start, list or stop)");
	if (strcmp(sub, "start") == 0)
		return cmd_instance_start(argc - 1, argv + 1);
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0)
		return cli_print_help(instance_help);
	if (strcmp(sub, "list") == 0)
		return cmd_instance_list(argc, argv);
	if (strcmp(sub, "save") == 0)
		return cmd_instance_save(argc, argv);
	if (strcmp(sub, "stop") == 0)
		return cmd_instance_stop(argc, argv);
	return cli_usage_error("unknown instance subcommand '%s' (expected "
			       "start, list, stop or save)",
			       sub);
}
