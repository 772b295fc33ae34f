/* caps.c - capability dropping before exec. Only this file uses libcap.
 *
 * A rank that joined the job's user namespace holds every capability in
 * it until exec. With a non-zero uid inside, execve() would clear them,
 * but --fakeroot maps the user to uid 0, where execve() would grant the
 * full set again. So every rank, whatever its uid: no_new_privs (setuid
 * binaries in the image do not elevate), an empty bounding set (nothing
 * can be regained), an empty ambient set, then empty sets.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "container/caps.h"
#include "common/error.h"

int caps_drop_all(mpictr_err **err)
{
	cap_t empty;
	int last;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_set(err, errno, "set no_new_privs");
	last = (int)cap_max_bits() - 1;
	if (last < CAP_LAST_CAP)
		last = CAP_LAST_CAP;
	for (int c = 0; c <= last + 8; c++) {
		/* Capabilities the kernel does not know give EINVAL. */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return err_set(err, errno,
				       "drop capability %d from the bounding "
				       "set",
				       c);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return err_set(err, errno, "clear ambient capabilities");
	empty = cap_init();
	if (!empty)
		return err_set(err, errno, "allocate capability set");
	if (cap_set_proc(empty) < 0) {
		int e = errno;
		cap_free(empty);
		return err_set(err, e, "clear capabilities");
	}
	cap_free(empty);
	return 0;
}
