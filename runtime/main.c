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
	       "       %s shell [OPTIONS] [--shell PATH] IMAGE\n"
	       "       %s inspect [--json] IMAGE\n"
	       "       %s -n N [OPTIONS] IMAGE COMMAND [ARGS...]\n"
	       "       %s sif list FILE\n"
	       "       %s sif info FILE ID\n"
	       "       %s sif header FILE\n"
	       "       %s sif create [--force] -o OUT.sif SOURCE [--deffile F] "
	       "[--env-script F] [--labels F]\n"
	       "       %s pull [--force] [-q] [--arch ARCH] [--tls-ca FILE] "
	       "[--insecure HOST]\n"
	       "            [--no-expansion-limit] [--stall-timeout SECONDS] "
	       "SOURCE [OUT.sif]\n"
	       "       %s cache list|clean [--tmp] [--cache-dir DIR]\n"
	       "       %s sif sign --key FILE IMAGE\n"
	       "       %s verify [--key FILE]... [--json] [--legacy-insecure] "
	       "IMAGE\n"
	       "       %s check\n"
	       "       %s instance start [OPTIONS] [--linger SECONDS] IMAGE "
	       "NAME\n"
	       "       %s instance list [--json]\n"
	       "       %s instance stop NAME|--all\n"
	       "       %s instance save NAME PATH\n"
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
	       "  -C, --containall        --contain and --cleanenv\n"
	       "      --cleanenv          start from an empty host "
	       "environment (PMI, Slurm kept)\n"
	       "      --env-file FILE     NAME=VALUE lines, as --env\n"
	       "      --home SRC[:DST]    bind SRC as the home directory "
	       "(at DST)\n"
	       "      --no-home           do not bind $HOME\n"
	       "      --writable-tmpfs    writable image: changes in memory, "
	       "gone at the end\n"
	       "      --overlay DIR       writable image: changes kept in "
	       "DIR (yours)\n"
	       "      --fakeroot          appear as uid 0 (single process, "
	       "no PMI)\n"
	       "      --no-share          debug: one namespace set per rank\n"
	       "      --tag-output        prefix rank output with [rank]\n"
	       "      --transport-env=on|off  set MPI transport variables "
	       "(default on)\n"
	       "      --devices=none|all|LIST  override device discovery\n"
	       "      --gpu, --nv, --rocm expose GPUs and driver libraries\n"
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
	       "APPTAINERENV_NAME=VALUE and SINGULARITYENV_NAME=VALUE (as "
	       "MPICTR_ENV_),\n"
	       "MPICTR_JOIN, MPICTR_VERIFY_CACHE=off, MPICTR_SYSROOT and "
	       "MPICTR_TEST_SITE_CONF (testing only).\n"
	       "site configuration: %s\n"
	       "\n"
	       "exit status: the command's, 128+signal if it was killed, 126 "
	       "not executable,\n"
	       "127 not found, 255 when mpictr itself fails. See mpictr(1).\n",
	       progname, progname, progname, progname, progname, progname,
	       progname, progname, progname, progname, progname, progname,
	       progname, progname, progname, progname, progname, progname,
	       mpictr_site_config_path());
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
	OPT_WRITABLE_TMPFS,
	OPT_OVERLAY,
	OPT_CLEANENV,
	OPT_ENV_FILE,
	OPT_HOME,
	OPT_NO_HOME,
	OPT_NV,
	OPT_ROCM,
	OPT_SHELL,
};

/* Option identifiers are permanent: scripts depend on them. */
static const struct option run_options[] = {
    {"nranks", required_argument, NULL, 'n'},
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

static int print_and_free(int rc, char *text, mpictr_err *err);
static int sif_sign(int argc, char **argv);

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
    {OPT_WRITABLE_TMPFS, MPICTR_FLAG_WRITABLE_TMPFS},
    {OPT_CLEANENV, MPICTR_FLAG_CLEANENV},
    {OPT_NO_HOME, MPICTR_FLAG_NO_HOME},
    {'C', MPICTR_FLAG_CONTAIN},
    {'C', MPICTR_FLAG_CLEANENV},
    {OPT_NV, MPICTR_FLAG_GPU},
    {OPT_ROCM, MPICTR_FLAG_GPU},
};

struct run_opts {
	int dry_run;
	int list_profiles;
	int instance_start; /* `instance start`: --linger is allowed */
	long linger;
	int shell;		/* `mpictr shell`: --shell is allowed */
	const char *shell_path; /* --shell */
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

/* ---- errors that teach ---------------------------------------------- */

/* Other runtimes' options (Apptainer/Singularity, Enroot, Pyxis) and what
 * mpictr does instead. */
static const struct {
	const char *name; /* without the leading dashes */
	const char *hint;
} peer_options[] = {
    {"writable", "mpictr never writes the image: use --writable-tmpfs or "
		 "--overlay DIR"},
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

/* Edit distance of a and b (both short), capped. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins)
					   : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(*prev));
	}
	return prev[lb];
}

/* The nearest of names (NULL-terminated or n of them) to word: within an
 * edit distance of 2 (1 for short words), or NULL. */
static const char *nearest(const char *word, const char *const *names, size_t n)
{
	size_t best = strlen(word) <= 3 ? 2 : 3;
	const char *hit = NULL;

	for (size_t i = 0; i < n && names[i]; i++) {
		size_t d = distance(word, names[i]);
		if (d < best) {
			best = d;
			hit = names[i];
		}
	}
	return hit;
}

/* A peer's option name (without dashes and any "=VALUE"): its hint. */
static const char *peer_hint(const char *name)
{
	for (size_t i = 0; i < sizeof(peer_options) / sizeof(*peer_options);
	     i++)
		if (strcmp(peer_options[i].name, name) == 0)
			return peer_options[i].hint;
	return NULL;
}

/* Is arg (e.g. "--pwd=/x", "-B") one of mpictr's run options? */
static bool is_run_option(const char *arg)
{
	size_t l;

	if (arg[0] != '-' || !arg[1])
		return false;
	if (arg[1] != '-')
		return strchr("nBecCvqhV", arg[1]) != NULL;
	arg += 2;
	l = strcspn(arg, "=");
	for (const struct option *o = run_options; o->name; o++)
		if (strlen(o->name) == l && strncmp(o->name, arg, l) == 0)
			return true;
	return false;
}

static int bad_option(char **argv)
{
	const char *arg = argv[optind - 1], *hint, *near;
	const char *names[sizeof(run_options) / sizeof(*run_options)];
	char name[64];
	size_t n = 0;

	if (optopt && optopt < 128) {
		char s[2] = {(char)optopt, 0};
		hint = peer_hint(s);
		fprintf(stderr,
			"%s: unknown option or missing argument for '-%c'%s%s "
			"(see '%s --help')\n",
			progname, optopt, hint ? ": " : "", hint ? hint : "",
			progname);
		return MPICTR_EXIT_FAILURE;
	}
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="),
		 arg + 2);
	hint = strncmp(arg, "--", 2) == 0 ? peer_hint(name) : NULL;
	for (const struct option *o = run_options; o->name; o++)
		names[n++] = o->name;
	near = hint ? NULL : nearest(name, names, n);
	if (hint)
		fprintf(stderr,
			"%s: unknown option '%s': %s (see '%s --help')\n",
			progname, arg, hint, progname);
	else if (near)
		fprintf(stderr,
			"%s: unknown option '%s' (did you mean '--%s'?)\n",
			progname, arg, near);
	else
		fprintf(stderr,
			"%s: unknown option or missing argument '%s' (see '%s "
			"--help')\n",
			progname, arg, progname);
	return MPICTR_EXIT_FAILURE;
}

/* getopt_long takes an unambiguous abbreviation: "--writable" would be
 * --writable-tmpfs. A peer's option of that exact name is refused with
 * its hint instead (1 with *code). */
static int abbreviated_peer(const char *token, const char *matched, int *code)
{
	char name[64];
	const char *hint;

	if (strncmp(token, "--", 2) != 0)
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(token + 2, "="),
		 token + 2);
	if (strcmp(name, matched) == 0 || !(hint = peer_hint(name)))
		return 0;
	*code = usage_error("unknown option '%s': %s", token, hint);
	return 1;
}

/* One option of cmd_run: OPT_GO_ON, OPT_STOP with *code, or -1 with *err
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
		return mpictr_config_set_home(cfg, optarg, err);
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
	case OPT_SHELL:
		if (!o->shell) {
			*code = usage_error("%s", "--shell is an option of "
						  "'mpictr shell'");
			return OPT_STOP;
		}
		o->shell_path = optarg;
		return OPT_GO_ON;
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
	int c, rc, prev, li;

	optind = 1;
	opterr = 0;
	for (prev = optind, li = -1;
	     (c = getopt_long(argc, argv, "+n:B:e:cCvqhV", run_options, &li)) !=
	     -1;
	     prev = optind, li = -1) {
		if (li >= 0 &&
		    abbreviated_peer(argv[prev], run_options[li].name, code))
			return OPT_STOP;
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

/* What a run verb runs: COMMAND, the runscript, or a shell. */
enum run_verb { VERB_EXEC, VERB_RUN, VERB_SHELL };

/* `mpictr shell [OPTIONS] IMAGE`: the image's interactive shell. */
static int set_shell(mpictr_config *cfg, int argc, char **argv,
		     const struct run_opts *o, int *code)
{
	char *sh[] = {"/bin/sh", NULL};
	mpictr_err *err = NULL;

	if (argc - optind > 1) {
		*code = usage_error("'mpictr shell' takes no COMMAND after "
				    "IMAGE (got '%s'; hint: mpictr exec "
				    "IMAGE COMMAND)",
				    argv[optind + 1]);
		return OPT_STOP;
	}
	if (mpictr_config_set_shell(cfg, o->shell_path, &err) < 0 ||
	    mpictr_config_set_command(cfg, 1, sh, &err) < 0) {
		*code = fail(err);
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
		*code = usage_error("%s", "missing IMAGE");
		return OPT_STOP;
	}
	if (mpictr_config_set_image(cfg, argv[optind], &err) < 0) {
		*code = fail(err);
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
			*code =
			    usage_error("%s", "missing COMMAND after IMAGE");
			return OPT_STOP;
		}
		if (is_run_option(argv[optind]) ||
		    (strncmp(argv[optind], "--", 2) == 0 &&
		     peer_hint(argv[optind] + 2))) {
			*code = usage_error(
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

/* The verbs, and other runtimes' verbs with what mpictr does instead. */
static const char *const verbs[] = {"exec",	"run",	"shell",
				    "inspect",	"sif",	"check",
				    "instance", "help", "version"};
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

/* A first argument that is neither a verb nor an image: a mistyped verb
 * or a peer's? Then say so (1 with *code), else 0. */
static int unknown_verb(const char *word, int *code)
{
	const char *near;

	if (strchr(word, '/') || strchr(word, '.') || access(word, F_OK) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(peer_verbs) / sizeof(*peer_verbs); i++)
		if (strcmp(word, peer_verbs[i].verb) == 0) {
			*code = usage_error("unknown verb '%s': %s", word,
					    peer_verbs[i].hint);
			return 1;
		}
	near = nearest(word, verbs, sizeof(verbs) / sizeof(*verbs));
	if (!near)
		return 0;
	*code = usage_error("unknown verb '%s' (did you mean '%s'?), and no "
			    "image of that name",
			    word, near);
	return 1;
}

/* `mpictr -n 4 shell IMAGE`: a verb after options, where IMAGE is, and
 * no file of that name? Then say where verbs go (1 with *code), else 0. */
static int verb_after_options(const char *word, int *code)
{
	if (access(word, F_OK) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(*verbs); i++)
		if (strcmp(word, verbs[i]) == 0) {
			*code = usage_error("'%s' after options: the verb "
					    "comes first ('mpictr %s "
					    "[OPTIONS] ...'), and there is "
					    "no image of that name",
					    word, word);
			return 1;
		}
	return 0;
}

/* `mpictr [exec|run|shell] ...` and `mpictr -n N ...`. */
static int cmd_run(int argc, char **argv, enum run_verb verb)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	struct run_opts o = {.shell = verb == VERB_SHELL};
	int code = 0;

	if (configure(cfg, argc, argv, &o, &code) == OPT_STOP)
		goto out;
	if (o.list_profiles) {
		char *text = NULL;
		int rc = mpictr_config_list_profiles(cfg, &text, &err);

		code = print_and_free(rc, text, err);
		goto out;
	}
	if (optind < argc && verb == VERB_EXEC && optind == 1 &&
	    unknown_verb(argv[optind], &code))
		goto out;
	if (optind < argc && verb == VERB_EXEC && optind > 1 &&
	    verb_after_options(argv[optind], &code))
		goto out;
	if (set_image_and_command(cfg, argc, argv, verb, &o, &code) == OPT_STOP)
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
	struct run_opts o = {.instance_start = 1};
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
	if (strcmp(sub, "save") == 0) {
		mpictr_config *cfg;

		if (argc != 4 || argv[2][0] == '-')
			return usage_error("%s", "usage: instance save NAME "
						 "PATH");
		cfg = mpictr_config_new();
		rc = mpictr_instance_save(cfg, argv[2], argv[3], &err);
		mpictr_config_free(cfg);
		return rc < 0 ? fail(err) : 0;
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
			   "start, list, stop or save)",
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
	if (strcmp(sub, "sign") == 0)
		return sif_sign(argc - 1, argv + 1);
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

/* `mpictr inspect [--json] IMAGE`. */
static int cmd_inspect(int argc, char **argv)
{
	mpictr_err *err = NULL;
	char *text = NULL;
	bool json = argc == 3 && strcmp(argv[1], "--json") == 0;
	int rc;

	if (!(argc == 2 && argv[1][0] != '-') && !json)
		return usage_error("%s", "usage: inspect [--json] IMAGE");
	rc = mpictr_inspect(argv[argc - 1], json, &text, &err);
	return print_and_free(rc, text, err);
}

static const char pull_usage[] =
    "usage: pull [--force] [-q] [--arch ARCH] [--tls-ca FILE] "
    "[--insecure HOST] [--no-expansion-limit] [--stall-timeout SECONDS] "
    "SOURCE [OUT.sif]";

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
	    {"stall-timeout", required_argument, NULL, 'S'},
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

/* `mpictr verify [--key FILE]... [--json] [--legacy-insecure] IMAGE`:
 * 0 verified, 1 not verified (the report says why), 255 when the image
 * could not be examined. */
static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {"json", no_argument, NULL, 'j'},
	    {"legacy-insecure", no_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char **keys = calloc((size_t)argc + 1, sizeof(*keys));
	mpictr_err *err = NULL;
	unsigned flags = 0;
	size_t nkeys = 0;
	char *text = NULL;
	int c, ok = 0, code;

	if (!keys)
		abort();
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:h", opts, NULL)) != -1) {
		if (c == 'k') {
			keys[nkeys++] = optarg;
		} else if (c == 'j') {
			flags |= MPICTR_VERIFY_JSON;
		} else if (c == 'l') {
			flags |= MPICTR_VERIFY_LEGACY;
		} else {
			free(keys);
			if (c == 'h') {
				printf("usage: %s verify [--key FILE]... "
				       "[--json] [--legacy-insecure] IMAGE\n",
				       progname);
				return 0;
			}
			return usage_error("%s",
					   "usage: verify [--key FILE]... "
					   "[--json] [--legacy-insecure] "
					   "IMAGE");
		}
	}
	if (optind + 1 != argc) {
		free(keys);
		return usage_error("%s",
				   "usage: verify [--key FILE]... [--json] "
				   "[--legacy-insecure] IMAGE");
	}
	if (nkeys == 0)
		fprintf(
		    stderr,
		    "%s: warning: no --key given: signatures can be listed, "
		    "not verified\n",
		    progname);
	if (mpictr_verify(argv[optind], keys, flags, &text, &ok, &err) < 0) {
		free(keys);
		return fail(err);
	}
	fputs(text, stdout);
	free(text);
	free(keys);
	code = ok ? 0 : 1;
	return code;
}

/* `mpictr sif sign --key FILE IMAGE`. */
static int sif_sign(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	const char *key = NULL;
	mpictr_err *err = NULL;
	char *text = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:", opts, NULL)) != -1) {
		if (c != 'k')
			return usage_error("%s",
					   "usage: sif sign --key FILE IMAGE");
		key = optarg;
	}
	if (!key || optind + 1 != argc)
		return usage_error("%s", "usage: sif sign --key FILE IMAGE");
	rc = mpictr_sif_sign(argv[optind], key, &text, &err);
	return print_and_free(rc, text, err);
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
		return cmd_run(argc - 1, argv + 1, VERB_EXEC);
	if (strcmp(verb, "run") == 0)
		return cmd_run(argc - 1, argv + 1, VERB_RUN);
	if (strcmp(verb, "shell") == 0)
		return cmd_run(argc - 1, argv + 1, VERB_SHELL);
	if (strcmp(verb, "inspect") == 0)
		return cmd_inspect(argc - 1, argv + 1);
	if (strcmp(verb, "sif") == 0)
		return cmd_sif(argc - 1, argv + 1);
	if (strcmp(verb, "instance") == 0)
		return cmd_instance(argc - 1, argv + 1);
	if (strcmp(verb, "verify") == 0)
		return cmd_verify(argc - 1, argv + 1);
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
	return cmd_run(argc, argv, VERB_EXEC);
}
