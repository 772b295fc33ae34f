/* help.c - `mpictr --help` and `mpictr help`: the usage of every verb, the
 * run options (exec, run, shell, -n, instance start), the environment and
 * the exit status. Each verb prints its own usage with --help as well.
 */
#include <stdio.h>

#include "cli/cli.h"

/* The verbs of main.c's table, each with its line. */
static void verbs(void)
{
	printf("\nverbs (each prints its own usage and options with "
	       "--help):\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		printf("  %-10s %s\n", cli_commands[i].name,
		       cli_commands[i].summary);
}

void cli_help(void)
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
	       "       %s instance save NAME PATH\n",
	       cli_progname, cli_progname, cli_progname, cli_progname,
	       cli_progname, cli_progname, cli_progname, cli_progname,
	       cli_progname, cli_progname, cli_progname, cli_progname,
	       cli_progname, cli_progname, cli_progname, cli_progname,
	       cli_progname, cli_progname);
	verbs();
	printf("\n"
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
	       "      --timeout SECONDS   end the job after SECONDS, naming "
	       "the ranks "
	       "still running (exit 124)\n"
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
	       mpictr_site_config_path());
}
