/* ns.h - user and mount namespaces: create (holder) and join (ranks). */
#ifndef MPICTR_NS_H
#define MPICTR_NS_H

#include <stdbool.h>
#include <sys/types.h>

#include "mpictr.h"

/* Namespaces that another process holds (an instance's holder), which a
 * job enters instead of starting a holder of its own. The strings belong to
 * whoever filled it. */
struct ns_source {
	const char *name; /* for messages: "instance 'NAME'" */
	int userns, mntns;
	pid_t holder; /* the holder (its root: /proc/PID/root), or 0 */
	/* Where a launch-mode job puts its job directory: a directory
	 * bound at the same path inside. */
	const char *run_base;
	/* Its UCX answer (facts.h host_given), so that its joiners run no
	 * UCX query helper of their own. */
	bool ucx_known;
	const char *ucx;
};

/* unshare(CLONE_NEWUSER | CLONE_NEWNS) in the calling (single-threaded)
 * process and map the caller's uid/gid to uid_in/gid_in (a single-id map;
 * setgroups is denied, as unprivileged maps require). */
int ns_create(uid_t uid_in, gid_t gid_in, mpictr_err **err);
/* Join the user then the mount namespace given by open ns fds. */
int ns_join(int userns_fd, int mntns_fd, mpictr_err **err);
/* Quick probe for `mpictr check`: can this user create a user namespace?
 * Returns 0, or -1 with an error that carries the hint. */
int ns_probe(mpictr_err **err);
/* How many more user namespaces this user may create, or -1. */
long ns_userns_left(void);

#endif
