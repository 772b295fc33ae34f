/* sif_stub.c - TEMPORARY placeholders until the SIF reader/writer lands.
 * Every function fails with "not implemented"; nothing here is done. */
#include <errno.h>
#include <stdlib.h>

#include "error.h"
#include "util.h"

struct mpictr_sif_create_opts {
	int unused;
};

MPICTR_PUBLIC int mpictr_sif_list(const char *path, char **out,
				  mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif list '%s'", path);
}

MPICTR_PUBLIC int mpictr_sif_info(const char *path, uint32_t id, char **out,
				  mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif info '%s'", path);
}

MPICTR_PUBLIC mpictr_sif_create_opts *mpictr_sif_create_opts_new(void)
{
	return xcalloc(1, sizeof(mpictr_sif_create_opts));
}

MPICTR_PUBLIC void mpictr_sif_create_opts_free(mpictr_sif_create_opts *o)
{
	free(o);
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_deffile(mpictr_sif_create_opts *o,
						     const char *path,
						     mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif deffile");
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_env_script(
	mpictr_sif_create_opts *o, const char *path, mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif env script");
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_labels(mpictr_sif_create_opts *o,
						    const char *path,
						    mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif labels");
}

MPICTR_PUBLIC int mpictr_sif_create(const char *out, const char *source,
				    const mpictr_sif_create_opts *opts,
				    mpictr_err **err)
{
	return err_set(err, ENOSYS, "sif create '%s'", out);
}
