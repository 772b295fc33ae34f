/* exec.c - the run verbs: `mpictr [exec] [OPTIONS] IMAGE COMMAND`,
 * `mpictr run`, `mpictr shell` and `mpictr -n N ...`, and the run options
 * they share with `instance start` (one getopt_long table). Fills a
 * config through the public API and runs it, or prints its plan.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exec.h"
#include "cli/hints.h"

enum {
	OPT_PWD = 1000,
	OPT_FAKEROOT,
	OPT_NO_SHARE,
	OPT_NO_OVERSUBSCRIBE,
	OPT_TAG_OUTPUT,
	OPT_TRANSPORT_ENV,
	OPT_DEVICES,
	OPT_GPU,
	OPT_INJECT_VERBS,
	OPT_BIND_TO,
	OPT_DRY_RUN,
	OPT_PROFILE,
	OPT_CONFIG,
	OPT_LIST_PROFILES,
	OPT_UNIVERSE_SIZE,
	OPT_LINGER,
	OPT_WRITABLE_TMPFS,
	OPT_OVERLAY,
	OPT_CLEANENV,
	OPT_ENV_FILE,
	OPT_HOME,
	OPT_NO_HOME,
	OPT_NV,
	OPT_ROCM,
	OPT_SHELL,
	OPT_TIMEOUT,
};

/* Option identifiers are permanent: scripts depend on them. */
static const struct option run_options[] = {
    {"nranks", required_argument, NULL, 'n'},
    {"np", required_argument, NULL, 'n'}, /* mpirun's spelling */
    {"bind", required_argument, NULL, 'B'},
    {"env", required_argument, NULL, 'e'},
    {"pwd", required_argument, NULL, OPT_PWD},
    {"contain", no_argument, NULL, 'c'},
    {"containall", no_argument, NULL, 'C'},
    {"fakeroot", no_argument, NULL, OPT_FAKEROOT},
    {"no-share", no_argument, NULL, OPT_NO_SHARE},
    {"no-oversubscribe", no_argument, NULL, OPT_NO_OVERSUBSCRIBE},
    {"tag-output", no_argument, NULL, OPT_TAG_OUTPUT},
    {"transport-env", required_argument, NULL, OPT_TRANSPORT_ENV},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"gpu", no_argument, NULL, OPT_GPU},
    {"inject-verbs", no_argument, NULL, OPT_INJECT_VERBS},
    {"bind-to", required_argument, NULL, OPT_BIND_TO},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"list-profiles", no_argument, NULL, OPT_LIST_PROFILES},
    {"universe-size", required_argument, NULL, OPT_UNIVERSE_SIZE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"linger", required_argument, NULL, OPT_LINGER},
    {"writable-tmpfs", no_argument, NULL, OPT_WRITABLE_TMPFS},
    {"overlay", required_argument, NULL, OPT_OVERLAY},
    {"cleanenv", no_argument, NULL, OPT_CLEANENV},
    {"env-file", required_argument, NULL, OPT_ENV_FILE},
    {"home", required_argument, NULL, OPT_HOME},
    {"no-home", no_argument, NULL, OPT_NO_HOME},
    {"nv", no_argument, NULL, OPT_NV},
    {"rocm", no_argument, NULL, OPT_ROCM},
    {"shell", required_argument, NULL, OPT_SHELL},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* The options that only switch a flag on. */
static const struct {
	int opt;
	enum mpictr_flag flag;
} flag_options[] = {
    {'c', MPICTR_FLAG_CONTAIN},
    {OPT_FAKEROOT, MPICTR_FLAG_FAKEROOT},
    {'f', MPICTR_FLAG_FAKEROOT}, /* Apptainer's -f */
    {OPT_NO_SHARE, MPICTR_FLAG_NO_SHARE},
    {OPT_NO_OVERSUBSCRIBE, MPICTR_FLAG_NO_OVERSUBSCRIBE},
    {OPT_TAG_OUTPUT, MPICTR_FLAG_TAG_OUTPUT},
    {OPT_GPU, MPICTR_FLAG_GPU},
    {OPT_INJECT_VERBS, MPICTR_FLAG_INJECT_VERBS},
    {OPT_WRITABLE_TMPFS, MPICTR_FLAG_WRITABLE_TMPFS},
    {OPT_CLEANENV, MPICTR_FLAG_CLEANENV},
    {OPT_NO_HOME, MPICTR_FLAG_NO_HOME},
    {'C', MPICTR_FLAG_CONTAIN},
    {'C', MPICTR_FLAG_CLEANENV},
    {OPT_NV, MPICTR_FLAG_GPU},
    {OPT_ROCM, MPICTR_FLAG_GPU},
};

/* A whole number in 1..max? */
static bool parse_count(const char *arg, long max, long *n)
{
	char *end;

	errno = 0;
	*n = strtol(arg, &end, 10);
	return !errno && !*end && end != arg && *n >= 1 && *n <= max;
}

static int set_nranks(mpictr_config *cfg, const char *arg, int *code,
		      mpictr_err **err)
{
	long n;

	if (!parse_count(arg, 4096, &n)) {
		*code =
		    cli_usage_error("invalid rank count '%s' for -n (expected "
				    "1..4096)",
				    arg);
		return OPT_STOP;
	}
	return mpictr_config_set_nranks(cfg, (int)n, err);
}

static int set_universe_size(mpictr_config *cfg, const char *arg, int *code,
			     mpictr_err **err)
{
	long n;

	if (!parse_count(arg, 65536, &n)) {
		*code =
		    cli_usage_error("invalid --universe-size '%s' (expected "
				    "1..65536)",
				    arg);
		return OPT_STOP;
	}
	return mpictr_config_set_universe_size(cfg, (int)n, err);
}

static int set_env(mpictr_config *cfg, const char *arg, int *code,
		   mpictr_err **err)
{
	const char *eq = strchr(arg, '=');

	if (!eq || eq == arg) {
		*code = cli_usage_error("invalid --env '%s' (expected "
					"NAME=VALUE; mpictr's -e is --env, "
					"Apptainer's -e is --cleanenv)",
					arg);
		return OPT_STOP;
	}
	return mpictr_config_add_env_list(cfg, arg, err);
}

static int set_transport_env(mpictr_config *cfg, const char *arg, int *code,
			     mpictr_err **err)
{
	if (strcmp(arg, "on") && strcmp(arg, "off")) {
		*code =
		    cli_usage_error("invalid --transport-env '%s' (expected "
				    "on or off)",
				    arg);
		return OPT_STOP;
	}
	return mpictr_config_set_flag(cfg, MPICTR_FLAG_TRANSPORT_ENV,
				      strcmp(arg, "on") == 0, err);
}

static int set_linger(struct run_opts *o, const char *arg, int *code)
{
	char *end;

	if (!o->instance_start) {
		*code =
		    cli_usage_error("%s", "--linger is an option of 'instance "
					  "start'");
		return OPT_STOP;
	}
	errno = 0;
	o->linger = strtol(arg, &end, 10);
	if (errno || *end || end == arg || o->linger < 0 ||
	    o->linger > 100000000L) {
		*code =
		    cli_usage_error("invalid --linger '%s' (expected seconds, "
				    ">= 0)",
				    arg);
		return OPT_STOP;
	}
	return OPT_GO_ON;
}

/* One run option: OPT_GO_ON, OPT_STOP with *code, or -1 with *err
 * from the library. */
static int run_option(mpictr_config *cfg, int c, char **argv,
		      struct run_opts *o, int *code, mpictr_err **err)
{
	bool flag = false;

	for (size_t i = 0; i < sizeof(flag_options) / sizeof(flag_options[0]);
	     i++) {
		if (flag_options[i].opt != c)
			continue;
		if (mpictr_config_set_flag(cfg, flag_options[i].flag, 1, err) <
		    0)
			return -1;
		flag = true;
	}
	if (flag)
		return OPT_GO_ON;
	switch (c) {
	case OPT_OVERLAY:
		return mpictr_config_set_overlay(cfg, optarg, err);
	case OPT_ENV_FILE:
		return mpictr_config_add_env_file(cfg, optarg, err);
	case OPT_HOME:
	case 'H': /* Apptainer's -H */
		return mpictr_config_set_home(cfg, optarg, err);
	case 'n':
		/* mpirun's -np N reaches getopt as -n with "p" (or "pN") */
		if (optarg[0] == 'p' && optarg[1])
			return set_nranks(cfg, optarg + 1, code, err);
		if (optarg[0] == 'p' && argv[optind])
			return set_nranks(cfg, argv[optind++], code, err);
		return set_nranks(cfg, optarg, code, err);
	case 'B':
		return mpictr_config_add_bind(cfg, optarg, err);
	case 'e':
		return set_env(cfg, optarg, code, err);
	case OPT_PWD:
		return mpictr_config_set_pwd(cfg, optarg, err);
	case OPT_TRANSPORT_ENV:
		return set_transport_env(cfg, optarg, code, err);
	case OPT_DEVICES:
		return mpictr_config_set_devices(cfg, optarg, err);
	case OPT_BIND_TO:
		return mpictr_config_set_bind_to(cfg, optarg, err);
	case OPT_UNIVERSE_SIZE:
		return set_universe_size(cfg, optarg, code, err);
	case OPT_TIMEOUT: {
		long n;

		if (!parse_count(optarg, 31 * 24 * 3600, &n)) {
			*code = cli_usage_error("invalid --timeout '%s' "
						"(expected SECONDS, "
						"1..2678400)",
						optarg);
			return OPT_STOP;
		}
		return mpictr_config_set_timeout(cfg, (int)n, err);
	}
	case OPT_DRY_RUN:
		o->dry_run = 1;
		return OPT_GO_ON;
	case OPT_PROFILE:
		return mpictr_config_add_profile(cfg, optarg, err);
	case OPT_CONFIG:
		return mpictr_config_add_config_file(cfg, optarg, err);
	case OPT_LIST_PROFILES:
		o->list_profiles = 1;
		return OPT_GO_ON;
	case OPT_LINGER:
		return set_linger(o, optarg, code);
	case OPT_SHELL:
		if (!o->shell) {
			*code = cli_usage_error("%s", "--shell is an option of "
						      "'mpictr shell'");
			return OPT_STOP;
		}
		o->shell_path = optarg;
		return OPT_GO_ON;
	case 'v':
		if (cli_verbosity < MPICTR_LOG_DEBUG)
			cli_verbosity++;
		return OPT_GO_ON;
	case 'q':
		cli_verbosity = MPICTR_LOG_ERROR;
		return OPT_GO_ON;
	case 'h':
		if (o->help)
			fputs(o->help, stdout);
		else
			cli_help();
		*code = 0;
		return OPT_STOP;
	case 'V':
		printf("mpictr %s\n", mpictr_version());
		*code = 0;
		return OPT_STOP;
	case '?':
	default:
		*code = hint_bad_option(argv, run_options);
		return OPT_STOP;
	}
}

/* The getopt loop of the run options: OPT_GO_ON, or OPT_STOP with *code. */
static int parse_run_options(mpictr_config *cfg, int argc, char **argv,
			     struct run_opts *o, int *code)
{
	mpictr_err *err = NULL;
	int c, rc, prev, li;

	optind = 1;
	opterr = 0;
	for (prev = optind, li = -1;
	     (c = getopt_long(argc, argv, "+n:B:e:cCvqhVH:f", run_options,
			      &li)) != -1;
	     prev = optind, li = -1) {
		if (li >= 0 && hint_abbreviated_peer(
				   argv[prev], run_options[li].name, code))
			return OPT_STOP;
		rc = run_option(cfg, c, argv, o, code, &err);
		if (rc < 0) {
			*code = cli_fail(err);
			return OPT_STOP;
		}
		if (rc == OPT_STOP)
			return OPT_STOP;
	}
	return OPT_GO_ON;
}

/* What a run verb runs: COMMAND, the runscript, or a shell. */
enum run_verb { VERB_EXEC, VERB_RUN, VERB_SHELL };

/* `mpictr shell [OPTIONS] IMAGE`: the image's interactive shell. */
static int set_shell(mpictr_config *cfg, int argc, char **argv,
		     const struct run_opts *o, int *code)
{
	char *sh[] = {"/bin/sh", NULL};
	mpictr_err *err = NULL;

	if (argc - optind > 1) {
		*code = cli_usage_error("'mpictr shell' takes no COMMAND after "
					"IMAGE (got '%s'; hint: mpictr exec "
					"IMAGE COMMAND)",
					argv[optind + 1]);
		return OPT_STOP;
	}
	if (mpictr_config_set_shell(cfg, o->shell_path, &err) < 0 ||
	    mpictr_config_set_command(cfg, 1, sh, &err) < 0) {
		*code = cli_fail(err);
		return OPT_STOP;
	}
	return OPT_GO_ON;
}

/* IMAGE and COMMAND (or the runscript's arguments) after the options. */
static int set_image_and_command(mpictr_config *cfg, int argc, char **argv,
				 enum run_verb verb, const struct run_opts *o,
				 int *code)
{
	mpictr_err *err = NULL;
	int rc;

	if (optind >= argc) {
		*code = cli_usage_error("%s", "missing IMAGE");
		return OPT_STOP;
	}
	if (mpictr_config_set_image(cfg, argv[optind], &err) < 0) {
		*code = cli_fail(err);
		return OPT_STOP;
	}
	optind++;
	if (verb == VERB_SHELL) {
		optind--;
		return set_shell(cfg, argc, argv, o, code);
	}
	if (verb == VERB_RUN) {
		rc = mpictr_config_set_runscript(cfg, argc - optind,
						 argv + optind, &err);
	} else {
		if (optind >= argc) {
			*code = cli_usage_error("%s",
						"missing COMMAND after IMAGE");
			return OPT_STOP;
		}
		if (hint_is_option(argv[optind], run_options) ||
		    (strncmp(argv[optind], "--", 2) == 0 &&
		     hint_peer_option(argv[optind] + 2))) {
			*code = cli_usage_error(
			    "'%s' comes after IMAGE '%s': options go before "
			    "the image (mpictr [OPTIONS] IMAGE COMMAND "
			    "[ARGS...])",
			    argv[optind], argv[optind - 1]);
			return OPT_STOP;
		}
		rc = mpictr_config_set_command(cfg, argc - optind,
					       argv + optind, &err);
	}
	if (rc < 0) {
		*code = cli_fail(err);
		return OPT_STOP;
	}
	return OPT_GO_ON;
}

/* Print the plan (--dry-run) or run: the exit code. */
static int run_or_dry_run(mpictr_config *cfg, int dry_run)
{
	mpictr_err *err = NULL;
	char *json = NULL;
	int status = 0;

	if (dry_run) {
		if (mpictr_plan_json(cfg, &json, &err) < 0)
			return cli_fail(err);
		fputs(json, stdout);
		fputc('\n', stdout);
		free(json);
		return 0;
	}
	fflush(NULL);
	/* A join-mode rank under its launcher's daemon (slurmstepd, orted or
	 * mpirun, hydra_pmi_proxy) must be the command itself (its PMI_FD,
	 * signals, accounting): the CLI asks for exec in place. */
	if (mpictr_run_flags(cfg, MPICTR_RUN_EXEC_IN_PLACE, &status, &err) < 0)
		return cli_fail(err);
	return status;
}

/* The site's file, MPICTR_CONF, then the options: OPT_GO_ON, or OPT_STOP
 * with *code. The site's file first: user files may add to it, never lift
 * its restrictions. */
int exec_configure(mpictr_config *cfg, int argc, char **argv,
		   struct run_opts *o, int *code)
{
	const char *user_conf = getenv("MPICTR_CONF");
	mpictr_err *err = NULL;

	if (mpictr_config_load_site(cfg, NULL, &err) < 0 ||
	    (user_conf && *user_conf &&
	     mpictr_config_add_config_file(cfg, user_conf, &err) < 0) ||
	    mpictr_config_add_env_binds(cfg, &err) < 0) {
		*code = cli_fail(err);
		return OPT_STOP;
	}
	if (parse_run_options(cfg, argc, argv, o, code) == OPT_STOP)
		return OPT_STOP;
	mpictr_set_log_sink(cli_stderr_sink, NULL, cli_verbosity);
	return OPT_GO_ON;
}

/* `mpictr [exec|run|shell] ...` and `mpictr -n N ...`. */
static int run_verb(int argc, char **argv, enum run_verb verb)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	struct run_opts o = {.shell = verb == VERB_SHELL};
	int code = 0;

	if (exec_configure(cfg, argc, argv, &o, &code) == OPT_STOP)
		goto out;
	if (o.list_profiles) {
		char *text = NULL;
		int rc = mpictr_config_list_profiles(cfg, &text, &err);

		code = cli_print_and_free(rc, text, err);
		goto out;
	}
	if (optind < argc && verb == VERB_EXEC && optind == 1 &&
	    hint_unknown_verb(argv[optind], &code))
		goto out;
	if (optind < argc && verb == VERB_EXEC && optind > 1 &&
	    hint_verb_after_options(argv[optind], &code))
		goto out;
	if (set_image_and_command(cfg, argc, argv, verb, &o, &code) == OPT_STOP)
		goto out;
	code = run_or_dry_run(cfg, o.dry_run);
out:
	mpictr_config_free(cfg);
	return code;
}

int cmd_exec(int argc, char **argv)
{
	return run_verb(argc, argv, VERB_EXEC);
}

int cmd_run(int argc, char **argv)
{
	return run_verb(argc, argv, VERB_RUN);
}

int cmd_shell(int argc, char **argv)
{
	return run_verb(argc, argv, VERB_SHELL);
}
