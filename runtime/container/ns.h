/* ns.h - user and mount namespaces: create (holder) and join (ranks). */
#ifndef MPICTR_NS_H
#define MPICTR_NS_H

#include <sys/types.h>

#include "mpictr.h"

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
