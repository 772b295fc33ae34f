/* main.c - the mpictr command line. Parses options with one getopt_long
 * table, fills a config through the public API only, prints errors from the
 * library and maps them to the documented exit codes (R1, R3, R7).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "mpictr.h"

static const char *progname = "mpictr";
static int verbosity = MPICTR_LOG_NOTICE;

static void stderr_sink(enum mpictr_log_level level, const char *line,
			void *data)
{
	static const char *const prefix[] = {
	    [MPICTR_LOG_ERROR] = "error: ", [MPICTR_LOG_WARNING] = "warning: ",
	    [MPICTR_LOG_NOTICE] = "",	    [MPICTR_LOG_INFO] = "",
	    [MPICTR_LOG_DEBUG] = "debug: ",
	};
	char buf[2300];
	int n;

	/* One write() per line, so lines of concurrent ranks never mix. */
	n = snprintf(buf, sizeof(buf), "%s: %s%s\n", progname, prefix[level],
		     line);
	if (n > (int)sizeof(buf))
		n = (int)sizeof(buf);
	if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to report */
	}
}

static int fail(mpictr_err *err)
{
	int code = mpictr_err_exit_code(err);

	fprintf(stderr, "%s: %s\n", progname, mpictr_err_message(err));
	mpictr_err_free(err);
	return code ? code : MPICTR_EXIT_FAILURE;
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
							     ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", progname);
	return MPICTR_EXIT_FAILURE;
}

static void print_help(void)
{
	printf("usage: %s [exec] [OPTIONS] IMAGE COMMAND [ARGS...]\n"
	       "       %s run [OPTIONS] IMAGE [ARGS...]\n"
	       "       %s -n N [OPTIONS] IMAGE COMMAND [ARGS...]\n"
	       "       %s sif list FILE\n"
	       "       %s sif info FILE ID\n"
	       "       %s sif header FILE\n"
	       "       %s sif create [--force] -o OUT.sif SOURCE [--deffile F] "
	       "[--env-script F] [--labels F]\n"
	       "       %s pull [--force] [-q] [--arch ARCH] [--tls-ca FILE] "
	       "[--insecure HOST]\n"
	       "            [--no-expansion-limit] SOURCE [OUT.sif]\n"
	       "       %s cache list|clean [--tmp] [--cache-dir DIR]\n"
	       "       %s check\n"
	       "       %s instance start [OPTIONS] [--linger SECONDS] IMAGE "
	       "NAME\n"
	       "       %s instance list [--json]\n"
	       "       %s instance stop NAME|--all\n"
	       "\n"
	       "IMAGE is a SIF file, a squashfs file, a directory, "
	       "instance://NAME, or a registry\n"
	       "image (docker://..., REGISTRY#IMAGE), pulled into the cache "
	       "first (MPICTR_CACHEDIR;\n"
	       "MPICTR_PULL_INSECURE, MPICTR_PULL_TLS_CA, MPICTR_PULL_ARCH)\n"
	       "(instance://NAME: a running instance, joined: -e and --pwd "
	       "apply per command).\n"
	       "SOURCE is docker://[USER@]HOST[:PORT]/REPO[:TAG][@DIGEST], "
	       "REPO[:TAG],\n"
	       "[USER@]REGISTRY#IMAGE[:TAG], docker-archive:FILE[:REF], "
	       "oci-archive:FILE[:REF]\n"
	       "or oci:DIR[:REF] (see docs/pull.md).\n"
	       "\n"
	       "options:\n"
	       "  -n, --nranks N          launch N ranks on this node, one "
	       "namespace set\n"
	       "      --universe-size N   MPI_UNIVERSE_SIZE: ranks plus "
	       "spawned processes\n"
	       "      --no-oversubscribe  MPI_Comm_spawn may not go past "
	       "the universe size\n"
	       "  -B, --bind SRC[:DST[:ro|rw]]  bind a host path "
	       "(repeatable, comma lists)\n"
	       "  -e, --env NAME=VALUE    set a variable in the container\n"
	       "      --pwd DIR           start directory in the container\n"
	       "  -c, --contain           do not bind $HOME, the working "
	       "directory or /tmp\n"
	       "      --fakeroot          appear as uid 0 (single process, "
	       "no PMI)\n"
	       "      --no-share          debug: one namespace set per rank\n"
	       "      --tag-output        prefix rank output with [rank]\n"
	       "      --transport-env=on|off  set MPI transport variables "
	       "(default on)\n"
	       "      --devices=none|all|LIST  override device discovery\n"
	       "      --gpu               expose GPUs and driver libraries\n"
	       "      --inject-verbs      bind the host's verbs providers "
	       "in\n"
	       "      --bind-to=core|none CPU binding of ranks (default "
	       "none)\n"
	       "      --profile NAME      apply a site profile (repeatable)\n"
	       "      --list-profiles     list the known profiles and exit\n"
	       "      --config FILE       add a user configuration file "
	       "(repeatable)\n"
	       "      --dry-run           print the plan as JSON and run "
	       "nothing\n"
	       "  -v, --verbose           more messages (repeatable)\n"
	       "  -q, --quiet             only errors\n"
	       "  -h, --help              this text\n"
	       "  -V, --version           print the version\n"
	       "\n"
	       "environment: MPICTR_CONF (user configuration file), "
	       "MPICTR_ENV_NAME=VALUE,\n"
	       "MPICTR_JOIN, MPICTR_SYSROOT and MPICTR_TEST_SITE_CONF "
	       "(testing only).\n"
	       "site configuration: %s\n"
	       "\n"
	       "exit status: the command's, 128+signal if it was killed, 126 "
	       "not executable,\n"
	       "127 not found, 255 when mpictr itself fails. See mpictr(1).\n",
	       progname, progname, progname, progname, progname, progname,
	       progname, progname, progname, progname, progname, progname,
	       progname, mpictr_site_config_path());
}

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
};

/* Option identifiers are permanent: scripts depend on them. */
static const struct option run_options[] = {
    {"nranks", required_argument, NULL, 'n'},
    {"bind", required_argument, NULL, 'B'},
    {"env", required_argument, NULL, 'e'},
    {"pwd", required_argument, NULL, OPT_PWD},
    {"contain", no_argument, NULL, 'c'},
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
    {"linger", required_argument, NULL, OPT_LINGER},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int print_and_free(int rc, char *text, mpictr_err *err);

/* The options that only switch a flag on. */
static const struct {
	int opt;
	enum mpictr_flag flag;
} flag_options[] = {
    {'c', MPICTR_FLAG_CONTAIN},
    {OPT_FAKEROOT, MPICTR_FLAG_FAKEROOT},
    {OPT_NO_SHARE, MPICTR_FLAG_NO_SHARE},
    {OPT_NO_OVERSUBSCRIBE, MPICTR_FLAG_NO_OVERSUBSCRIBE},
    {OPT_TAG_OUTPUT, MPICTR_FLAG_TAG_OUTPUT},
    {OPT_GPU, MPICTR_FLAG_GPU},
    {OPT_INJECT_VERBS, MPICTR_FLAG_INJECT_VERBS},
};

struct run_opts {
	int dry_run;
	int list_profiles;
	int instance_start; /* `instance start`: --linger is allowed */
	long linger;
};

/* Option results: go on, or stop and exit with *code. */
enum { OPT_GO_ON = 0, OPT_STOP = 1 };

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
		*code = usage_error("invalid rank count '%s' for -n (expected "
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
		*code = usage_error("invalid --universe-size '%s' (expected "
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
	char *name;
	int rc;

	if (!eq || eq == arg) {
		*code = usage_error("invalid --env '%s' (expected NAME=VALUE)",
				    arg);
		return OPT_STOP;
	}
	name = strndup(arg, (size_t)(eq - arg));
	if (!name)
		abort();
	rc = mpictr_config_set_env(cfg, name, eq + 1, err);
	free(name);
	return rc;
}

static int set_transport_env(mpictr_config *cfg, const char *arg, int *code,
			     mpictr_err **err)
{
	if (strcmp(arg, "on") && strcmp(arg, "off")) {
		*code = usage_error("invalid --transport-env '%s' (expected "
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
		*code = usage_error("%s", "--linger is an option of 'instance "
					  "start'");
		return OPT_STOP;
	}
	errno = 0;
	o->linger = strtol(arg, &end, 10);
	if (errno || *end || end == arg || o->linger < 0 ||
	    o->linger > 100000000L) {
		*code = usage_error("invalid --linger '%s' (expected seconds, "
				    ">= 0)",
				    arg);
		return OPT_STOP;
	}
	return OPT_GO_ON;
}

static int bad_option(char **argv)
{
	if (optopt)
		fprintf(stderr,
			"%s: unknown option or missing argument for '-%c' "
			"(see '%s --help')\n",
			progname, optopt, progname);
	else
		fprintf(stderr,
			"%s: unknown option or missing argument '%s' (see '%s "
			"--help')\n",
			progname, argv[optind - 1], progname);
	return MPICTR_EXIT_FAILURE;
}

/* One option of cmd_run: OPT_GO_ON, OPT_STOP with *code, or -1 with *err
 * from the library. */
static int run_option(mpictr_config *cfg, int c, char **argv,
		      struct run_opts *o, int *code, mpictr_err **err)
{
	for (size_t i = 0; i < sizeof(flag_options) / sizeof(flag_options[0]);
	     i++)
		if (flag_options[i].opt == c)
			return mpictr_config_set_flag(cfg, flag_options[i].flag,
						      1, err);
	switch (c) {
	case 'n':
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
	case 'v':
		if (verbosity < MPICTR_LOG_DEBUG)
			verbosity++;
		return OPT_GO_ON;
	case 'q':
		verbosity = MPICTR_LOG_ERROR;
		return OPT_GO_ON;
	case 'h':
		print_help();
		*code = 0;
		return OPT_STOP;
	case 'V':
		printf("mpictr %s\n", mpictr_version());
		*code = 0;
		return OPT_STOP;
	case '?':
	default:
		*code = bad_option(argv);
		return OPT_STOP;
	}
}

/* The getopt loop of cmd_run: OPT_GO_ON, or OPT_STOP with *code. */
static int parse_run_options(mpictr_config *cfg, int argc, char **argv,
			     struct run_opts *o, int *code)
{
	mpictr_err *err = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+n:B:e:cvqhV", run_options,
				NULL)) != -1) {
		rc = run_option(cfg, c, argv, o, code, &err);
		if (rc < 0) {
			*code = fail(err);
			return OPT_STOP;
		}
		if (rc == OPT_STOP)
			return OPT_STOP;
	}
	return OPT_GO_ON;
}

/* IMAGE and COMMAND (or the runscript's arguments) after the options. */
static int set_image_and_command(mpictr_config *cfg, int argc, char **argv,
				 int runscript, int *code)
{
	mpictr_err *err = NULL;
	int rc;

	if (optind >= argc) {
		*code = usage_error("%s", "missing IMAGE");
		return OPT_STOP;
	}
	if (mpictr_config_set_image(cfg, argv[optind], &err) < 0) {
		*code = fail(err);
		return OPT_STOP;
	}
	optind++;
	if (runscript) {
		rc = mpictr_config_set_runscript(cfg, argc - optind,
						 argv + optind, &err);
	} else {
		if (optind >= argc) {
			*code =
			    usage_error("%s", "missing COMMAND after IMAGE");
			return OPT_STOP;
		}
		rc = mpictr_config_set_command(cfg, argc - optind,
					       argv + optind, &err);
	}
	if (rc < 0) {
		*code = fail(err);
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
			return fail(err);
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
		return fail(err);
	return status;
}

/* The site's file, MPICTR_CONF, then the options: OPT_GO_ON, or OPT_STOP
 * with *code. The site's file first: user files may add to it, never lift
 * its restrictions. */
static int configure(mpictr_config *cfg, int argc, char **argv,
		     struct run_opts *o, int *code)
{
	const char *user_conf = getenv("MPICTR_CONF");
	mpictr_err *err = NULL;

	if (mpictr_config_load_site(cfg, NULL, &err) < 0 ||
	    (user_conf && *user_conf &&
	     mpictr_config_add_config_file(cfg, user_conf, &err) < 0)) {
		*code = fail(err);
		return OPT_STOP;
	}
	if (parse_run_options(cfg, argc, argv, o, code) == OPT_STOP)
		return OPT_STOP;
	mpictr_set_log_sink(stderr_sink, NULL, verbosity);
	return OPT_GO_ON;
}

/* `mpictr [exec|run] ...` and `mpictr -n N ...`. */
static int cmd_run(int argc, char **argv, int runscript)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	struct run_opts o = {0, 0, 0, 0};
	int code = 0;

	if (configure(cfg, argc, argv, &o, &code) == OPT_STOP)
		goto out;
	if (o.list_profiles) {
		char *text = NULL;
		int rc = mpictr_config_list_profiles(cfg, &text, &err);

		code = print_and_free(rc, text, err);
		goto out;
	}
	if (set_image_and_command(cfg, argc, argv, runscript, &code) ==
	    OPT_STOP)
		goto out;
	code = run_or_dry_run(cfg, o.dry_run);
out:
	mpictr_config_free(cfg);
	return code;
}

/* `mpictr instance start [OPTIONS] IMAGE NAME`. */
static int instance_start(int argc, char **argv)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	struct run_opts o = {0, 0, 1, 0};
	int code = 0;

	if (configure(cfg, argc, argv, &o, &code) == OPT_STOP)
		goto out;
	if (o.dry_run || o.list_profiles) {
		code = usage_error("%s", "instance start takes neither "
					 "--dry-run nor --list-profiles");
		goto out;
	}
	if (argc - optind != 2) {
		code = usage_error("%s", "usage: instance start [OPTIONS] "
					 "IMAGE NAME");
		goto out;
	}
	if (mpictr_config_set_image(cfg, argv[optind], &err) < 0 ||
	    mpictr_instance_start(cfg, argv[optind + 1], o.linger, 0, &err) < 0)
		code = fail(err);
out:
	mpictr_config_free(cfg);
	return code;
}

/* `mpictr instance start|list|stop ...`. */
static int cmd_instance(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	mpictr_err *err = NULL;
	char *text = NULL;
	int rc;

	if (!sub)
		return usage_error("%s", "missing instance subcommand (start, "
					 "list or stop)");
	if (strcmp(sub, "start") == 0)
		return instance_start(argc - 1, argv + 1);
	if (strcmp(sub, "list") == 0) {
		bool json = argc == 3 && strcmp(argv[2], "--json") == 0;

		if (argc > 3 || (argc == 3 && !json))
			return usage_error("%s", "usage: instance list "
						 "[--json]");
		rc = mpictr_instance_list(NULL, json, &text, &err);
		return print_and_free(rc, text, err);
	}
	if (strcmp(sub, "stop") == 0) {
		if (argc != 3 ||
		    (argv[2][0] == '-' && strcmp(argv[2], "--all") != 0))
			return usage_error("%s", "usage: instance stop "
						 "NAME|--all");
		rc = mpictr_instance_stop(
		    NULL, strcmp(argv[2], "--all") == 0 ? NULL : argv[2], &err);
		return rc < 0 ? fail(err) : 0;
	}
	return usage_error("unknown instance subcommand '%s' (expected "
			   "start, list or stop)",
			   sub);
}

static int print_and_free(int rc, char *text, mpictr_err *err)
{
	if (rc < 0)
		return fail(err);
	if (text)
		fputs(text, stdout);
	free(text);
	return 0;
}

/* sif create on a terminal: what it is doing, and mksquashfs's bar. */
static void show_progress(const char *text, size_t len, void *data)
{
	(void)data;
	if (write(STDERR_FILENO, text, len) < 0) {
		/* nowhere to show it */
	}
}

static int cmd_sif(int argc, char **argv)
{
	mpictr_err *err = NULL;
	char *text = NULL;
	const char *sub = argc > 1 ? argv[1] : NULL;
	int rc;

	if (!sub)
		return usage_error("%s", "missing sif subcommand (list, "
					 "info, header or create)");
	if (strcmp(sub, "list") == 0) {
		if (argc != 3)
			return usage_error("%s", "usage: sif list FILE");
		rc = mpictr_sif_list(argv[2], &text, &err);
		return print_and_free(rc, text, err);
	}
	if (strcmp(sub, "header") == 0) {
		if (argc != 3)
			return usage_error("%s", "usage: sif header FILE");
		rc = mpictr_sif_header(argv[2], &text, &err);
		return print_and_free(rc, text, err);
	}
	if (strcmp(sub, "info") == 0) {
		long id;
		char *end;
		if (argc != 4)
			return usage_error("%s", "usage: sif info FILE ID");
		errno = 0;
		id = strtol(argv[3], &end, 10);
		if (errno || *end || end == argv[3] || id < 1 ||
		    id > 0xffffffffL)
			return usage_error("invalid object ID '%s' (expected "
					   "a positive number)",
					   argv[3]);
		rc = mpictr_sif_info(argv[2], (uint32_t)id, &text, &err);
		return print_and_free(rc, text, err);
	}
	if (strcmp(sub, "create") == 0) {
		static const struct option opts[] = {
		    {"output", required_argument, NULL, 'o'},
		    {"deffile", required_argument, NULL, 'd'},
		    {"env-script", required_argument, NULL, 'E'},
		    {"labels", required_argument, NULL, 'l'},
		    {"force", no_argument, NULL, 'f'},
		    {NULL, 0, NULL, 0},
		};
		mpictr_sif_create_opts *o = mpictr_sif_create_opts_new();
		const char *out = NULL;
		int c;

		rc = 0;

		optind = 1;
		opterr = 0;
		if (isatty(STDERR_FILENO))
			mpictr_sif_create_opts_set_progress(o, show_progress,
							    NULL);
		while ((c = getopt_long(argc - 1, argv + 1, "o:f", opts,
					NULL)) != -1) {
			switch (c) {
			case 'o':
				out = optarg;
				break;
			case 'f':
				mpictr_sif_create_opts_set_force(o, 1);
				break;
			case 'd':
				rc = mpictr_sif_create_opts_set_deffile(
				    o, optarg, &err);
				break;
			case 'E':
				rc = mpictr_sif_create_opts_set_env_script(
				    o, optarg, &err);
				break;
			case 'l':
				rc = mpictr_sif_create_opts_set_labels(
				    o, optarg, &err);
				break;
			default:
				mpictr_sif_create_opts_free(o);
				return usage_error(
				    "%s", "usage: sif create -o OUT.sif "
					  "SOURCE [--deffile F] "
					  "[--env-script F] [--labels F] "
					  "[--force]");
			}
			if (rc < 0) {
				mpictr_sif_create_opts_free(o);
				return fail(err);
			}
		}
		if (!out || optind + 1 != argc - 1) {
			mpictr_sif_create_opts_free(o);
			return usage_error("%s", "usage: sif create -o OUT.sif "
						 "SOURCE");
		}
		rc = mpictr_sif_create(out, argv[1 + optind], o, &err);
		mpictr_sif_create_opts_free(o);
		return rc < 0 ? fail(err) : 0;
	}
	return usage_error("unknown sif subcommand '%s' (expected list, "
			   "info, header or create)",
			   sub);
}

static const char pull_usage[] =
    "usage: pull [--force] [-q] [--arch ARCH] [--tls-ca FILE] "
    "[--insecure HOST] [--no-expansion-limit] SOURCE [OUT.sif]";

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

/* `mpictr pull [OPTIONS] SOURCE [OUT.sif]` (docs/pull.md). */
static int cmd_pull(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"force", no_argument, NULL, 'F'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"arch", required_argument, NULL, 'a'},
	    {"tls-ca", required_argument, NULL, 'C'},
	    {"insecure", required_argument, NULL, 'I'},
	    {"no-expansion-limit", no_argument, NULL, 'X'},
	    {"cache-dir", required_argument, NULL, 'D'},
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
	       (c = getopt_long(argc, argv, "+Fq", opts, NULL)) != -1) {
		const struct option *opt = NULL;
		for (size_t i = 0; opts[i].name; i++)
			if (opts[i].val == c)
				opt = &opts[i];
		if (!opt) {
			mpictr_pull_opts_free(o);
			return usage_error("%s", pull_usage);
		}
		quiet |= c == 'q';
		rc = mpictr_pull_opts_set(o, opt->name, optarg, &err);
	}
	if (rc == 0 && (optind >= argc || argc - optind > 2)) {
		mpictr_pull_opts_free(o);
		return usage_error("%s", pull_usage);
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
		return fail(err);
	if (!quiet && summary)
		fputs(summary, stderr);
	free(summary);
	return 0;
}

/* `mpictr cache list|clean [--cache-dir DIR]` (docs/pull.md). */
static int cmd_cache(int argc, char **argv)
{
	static const char usage[] =
	    "usage: cache list|clean [--tmp] [--cache-dir DIR]";
	const char *dir = NULL, *sub = argc > 1 ? argv[1] : "";
	mpictr_err *err = NULL;
	bool tmp_only = false;
	char *text = NULL;
	uint64_t freed = 0;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--tmp") == 0)
			tmp_only = true;
		else
			return usage_error("%s", usage);
	}
	if (strcmp(sub, "list") == 0 && !tmp_only) {
		if (mpictr_cache_list(dir, &text, &err) < 0)
			return fail(err);
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (strcmp(sub, "clean") == 0) {
		if (mpictr_cache_clean(dir, !tmp_only, &freed, &err) < 0)
			return fail(err);
		printf("freed %llu bytes\n", (unsigned long long)freed);
		return 0;
	}
	return usage_error("%s", usage);
}

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
			progname, (unsigned)getuid(), (unsigned)geteuid(),
			(unsigned)getgid(), (unsigned)getegid());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *verb;

	if (refuse_setuid() < 0)
		return MPICTR_EXIT_FAILURE;
	mpictr_set_log_sink(stderr_sink, NULL, MPICTR_LOG_NOTICE);

	verb = argc > 1 ? argv[1] : NULL;
	if (!verb) {
		print_help();
		return MPICTR_EXIT_FAILURE;
	}
	if (strcmp(verb, "exec") == 0)
		return cmd_run(argc - 1, argv + 1, 0);
	if (strcmp(verb, "run") == 0)
		return cmd_run(argc - 1, argv + 1, 1);
	if (strcmp(verb, "sif") == 0)
		return cmd_sif(argc - 1, argv + 1);
	if (strcmp(verb, "instance") == 0)
		return cmd_instance(argc - 1, argv + 1);
	if (strcmp(verb, "pull") == 0)
		return cmd_pull(argc - 1, argv + 1);
	if (strcmp(verb, "cache") == 0)
		return cmd_cache(argc - 1, argv + 1);
	if (strcmp(verb, "check") == 0) {
		mpictr_err *err = NULL;
		char *report = NULL;
		int blocking = 0;
		if (mpictr_check(&report, &blocking, &err) < 0)
			return fail(err);
		fputs(report, stdout);
		free(report);
		return blocking ? 1 : 0;
	}
	if (strcmp(verb, "help") == 0) {
		print_help();
		return 0;
	}
	if (strcmp(verb, "version") == 0) {
		printf("mpictr %s\n", mpictr_version());
		return 0;
	}
	return cmd_run(argc, argv, 0);
}
