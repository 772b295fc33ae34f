/* stubs.c - TEMPORARY placeholders for the container runtime entry points
 * until they land. Every function fails with "not implemented". */
#include <errno.h>

#include "error.h"
#include "util.h"

MPICTR_PUBLIC int mpictr_check(char **report, int *blocking, mpictr_err **err)
{
	return err_set(err, ENOSYS, "check");
}
