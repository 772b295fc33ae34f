/* embed_instance.c - an embedder of libmpictr's instance API, for
 * tests/integration/89-instance.sh (what the SPANK plugin uses):
 *
 *   embed_instance start IMAGE NAME WATCH_PID
 *   embed_instance list
 *   embed_instance stop NAME|-
 *
 * start: mpictr_instance_start() with WATCH_PID (the instance ends when
 * that process ends); list: mpictr_instance_list() as JSON on stdout;
 * stop: mpictr_instance_stop() (- for all). Exit 0, or the error's exit
 * code with its message on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpictr.h>

static int fail(mpictr_err *err)
{
	int code = mpictr_err_exit_code(err);

	fprintf(stderr, "embed_instance: %s\n", mpictr_err_message(err));
	mpictr_err_free(err);
	return code;
}

int main(int argc, char **argv)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	char *out = NULL;
	int rc = 0;

	if (argc == 5 && strcmp(argv[1], "start") == 0) {
		if (mpictr_config_set_image(cfg, argv[2], &err) < 0 ||
		    mpictr_instance_start(cfg, argv[3], 0, atoi(argv[4]),
					  &err) < 0)
			rc = fail(err);
	} else if (argc == 2 && strcmp(argv[1], "list") == 0) {
		if (mpictr_instance_list(cfg, 1, &out, &err) < 0)
			rc = fail(err);
		else
			fputs(out, stdout);
		free(out);
	} else if (argc == 3 && strcmp(argv[1], "stop") == 0) {
		if (mpictr_instance_stop(
			cfg, strcmp(argv[2], "-") ? argv[2] : NULL, &err) < 0)
			rc = fail(err);
	} else {
		fprintf(stderr, "usage: embed_instance start IMAGE NAME "
				"WATCH_PID | list | stop NAME|-\n");
		rc = 2;
	}
	mpictr_config_free(cfg);
	return rc;
}
