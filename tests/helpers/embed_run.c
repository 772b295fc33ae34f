/* embed_run.c - an embedder of libmpictr, for tests/integration/36-embed.sh:
 * runs a job through mpictr_run() (never the CLI's exec-in-place flag) and
 * reports that it got control back, with the status, and whether the
 * library left its environ as it was.
 *
 *   embed_run [-n N] IMAGE COMMAND [ARGS...]
 *
 * Prints "returned status=S" and then "environ unchanged" or
 * "environ changed: NAME=VALUE..." lines; exits 0 when mpictr_run()
 * returned 0, else the error's exit code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpictr.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A sorted copy of environ (the library may reorder, not change it). */
static char **snapshot(size_t *n)
{
	char **v;

	for (*n = 0; environ[*n]; (*n)++)
		;
	v = calloc(*n + 1, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < *n; i++)
		if (!(v[i] = strdup(environ[i])))
			abort();
	qsort(v, *n, sizeof(*v), cmp);
	return v;
}

static int compare(char **a, size_t na, char **b, size_t nb)
{
	int diff = 0;

	for (size_t i = 0, j = 0; i < na || j < nb;) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);

		if (c == 0) {
			i++, j++;
			continue;
		}
		printf("environ changed: %s%s\n", c < 0 ? "-" : "+",
		       c < 0 ? a[i] : b[j]);
		diff = 1;
		if (c < 0)
			i++;
		else
			j++;
	}
	return diff;
}

int main(int argc, char **argv)
{
	mpictr_config *cfg = mpictr_config_new();
	mpictr_err *err = NULL;
	int i = 1, status = -1, rc;
	size_t nbefore, nafter;
	char **before, **after;

	if (i + 1 < argc && strcmp(argv[i], "-n") == 0) {
		if (mpictr_config_set_nranks(cfg, atoi(argv[i + 1]), &err) < 0)
			goto fail;
		i += 2;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: embed_run [-n N] IMAGE COMMAND...\n");
		return 2;
	}
	if (mpictr_config_set_image(cfg, argv[i], &err) < 0 ||
	    mpictr_config_set_command(cfg, argc - i - 1, argv + i + 1, &err) <
		0)
		goto fail;
	before = snapshot(&nbefore);
	rc = mpictr_run(cfg, &status, &err);
	after = snapshot(&nafter);
	if (rc < 0)
		goto fail;
	printf("returned status=%d\n", status);
	if (!compare(before, nbefore, after, nafter))
		printf("environ unchanged\n");
	fflush(stdout);
	mpictr_config_free(cfg);
	return 0;
fail:
	fprintf(stderr, "embed_run: %s\n", mpictr_err_message(err));
	rc = mpictr_err_exit_code(err);
	mpictr_err_free(err);
	mpictr_config_free(cfg);
	return rc;
}
