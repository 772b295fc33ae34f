/* site-wrapper.c - a minimal site container wrapper built on libmpictr.
 *
 * What a site's own `site-run` tool might look like: it applies the site
 * configuration, adds its own binds and environment as policy, and runs a
 * job through the library, exiting with the job's status.
 *
 *   cc -o site-run site-wrapper.c $(pkg-config --cflags --libs mpictr)
 *   site-run [-n N] [--profile NAME] IMAGE COMMAND [ARGS...]
 *
 * SITE_SCRATCH (a host directory) is bound at /scratch; with
 * SITE_WRAPPER_DRY_RUN=1 the plan is printed as JSON instead of running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpictr.h>

static void to_stderr(enum mpictr_log_level level, const char *line,
		      void *data)
{
	(void)data;
	fprintf(stderr, "site-run: %s%s\n",
		level == MPICTR_LOG_WARNING ? "warning: " : "", line);
}

static int die(mpictr_err *err)
{
	fprintf(stderr, "site-run: %s\n", mpictr_err_message(err));
	int code = mpictr_err_exit_code(err);
	mpictr_err_free(err);
	return code;
}

int main(int argc, char **argv)
{
	mpictr_config *cfg;
	mpictr_err *err = NULL;
	const char *scratch = getenv("SITE_SCRATCH");
	int i = 1, status = 0, rc;

	mpictr_set_log_sink(to_stderr, NULL, MPICTR_LOG_NOTICE);
	cfg = mpictr_config_new();
	/* The site file first, then the wrapper's own policy. */
	if (mpictr_config_load_site(cfg, NULL, &err) < 0)
		goto fail;
	if (scratch) {
		char *spec = malloc(strlen(scratch) + sizeof(":/scratch"));
		if (!spec)
			abort();
		strcpy(spec, scratch);
		strcat(spec, ":/scratch");
		rc = mpictr_config_add_bind(cfg, spec, &err);
		free(spec);
		if (rc < 0)
			goto fail;
	}
	if (mpictr_config_set_env(cfg, "SITE_WRAPPER", mpictr_version(),
				  &err) < 0)
		goto fail;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			rc = mpictr_config_set_nranks(cfg, atoi(argv[i + 1]),
						      &err);
		else if (strcmp(argv[i], "--profile") == 0)
			rc = mpictr_config_add_profile(cfg, argv[i + 1], &err);
		else {
			fprintf(stderr, "site-run: unknown option '%s'\n",
				argv[i]);
			mpictr_config_free(cfg);
			return 2;
		}
		if (rc < 0)
			goto fail;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: site-run [-n N] [--profile NAME] "
				"IMAGE COMMAND [ARGS...]\n");
		mpictr_config_free(cfg);
		return 2;
	}
	if (mpictr_config_set_image(cfg, argv[i], &err) < 0 ||
	    mpictr_config_set_command(cfg, argc - i - 1, argv + i + 1,
				      &err) < 0)
		goto fail;
	if (getenv("SITE_WRAPPER_DRY_RUN")) {
		char *json = NULL;
		if (mpictr_plan_json(cfg, &json, &err) < 0)
			goto fail;
		puts(json);
		free(json);
	} else if (mpictr_run(cfg, &status, &err) < 0) {
		goto fail;
	}
	mpictr_config_free(cfg);
	return status;
fail:
	mpictr_config_free(cfg);
	return die(err);
}
