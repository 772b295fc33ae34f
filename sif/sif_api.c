/* sif_api.c - the public mpictr_sif_* entry points: thin wrappers that load
 * an image with the strict reader and format it, and the create options. */
#include <stdlib.h>

#include "sif.h"
#include "util.h"

MPICTR_PUBLIC int mpictr_sif_list(const char *path, char **out,
				  mpictr_err **err)
{
	struct sif_image img;

	*out = NULL;
	if (sif_load(path, &img, err) < 0)
		return -1;
	*out = sif_format_list(&img);
	sif_image_free(&img);
	return 0;
}

MPICTR_PUBLIC int mpictr_sif_info(const char *path, uint32_t id, char **out,
				  mpictr_err **err)
{
	struct sif_image img;

	*out = NULL;
	if (sif_load(path, &img, err) < 0)
		return -1;
	*out = sif_format_info(&img, id, err);
	sif_image_free(&img);
	return *out ? 0 : -1;
}

MPICTR_PUBLIC int mpictr_sif_header(const char *path, char **out,
				    mpictr_err **err)
{
	struct sif_image img;

	*out = NULL;
	if (sif_load(path, &img, err) < 0)
		return -1;
	*out = sif_format_header(&img);
	sif_image_free(&img);
	return 0;
}

/* ---- create ---- */

struct mpictr_sif_create_opts {
	char *deffile; /* file contents, read when the option is set */
	size_t deffile_len;
	char *env_script;
	size_t env_script_len;
	char *labels;
	size_t labels_len;
};

MPICTR_PUBLIC mpictr_sif_create_opts *mpictr_sif_create_opts_new(void)
{
	return xcalloc(1, sizeof(mpictr_sif_create_opts));
}

MPICTR_PUBLIC void mpictr_sif_create_opts_free(mpictr_sif_create_opts *o)
{
	if (!o)
		return;
	free(o->deffile);
	free(o->env_script);
	free(o->labels);
	free(o);
}

/* Objects other than the partition are small text files: cap them so a
 * mistaken path (a device, a huge file) fails early. */
#define SIF_OBJECT_MAX (64u << 20)

static int read_option_file(const char *opt, const char *path, char **buf,
			    size_t *len, mpictr_err **err)
{
	char *s = read_file(path, SIF_OBJECT_MAX, len);

	if (!s)
		return err_set(err, errno, "%s '%s'", opt, path);
	free(*buf);
	*buf = s;
	return 0;
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_deffile(mpictr_sif_create_opts *o,
						     const char *path,
						     mpictr_err **err)
{
	return read_option_file("--deffile", path, &o->deffile,
				&o->deffile_len, err);
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_env_script(
	mpictr_sif_create_opts *o, const char *path, mpictr_err **err)
{
	return read_option_file("--env-script", path, &o->env_script,
				&o->env_script_len, err);
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_labels(mpictr_sif_create_opts *o,
						    const char *path,
						    mpictr_err **err)
{
	return read_option_file("--labels", path, &o->labels, &o->labels_len,
				err);
}

MPICTR_PUBLIC int mpictr_sif_create(const char *out, const char *source,
				    const mpictr_sif_create_opts *opts,
				    mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif create '%s'", out);
}
