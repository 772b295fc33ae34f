/* bindpol.h - the site's deny_bind and allow_bind rules checked on the
 * descriptor of a bind source, the object that is then mounted. Planning
 * checks paths early (siteconf_check_bind, for the error and --dry-run);
 * this check is the one that holds: a path component swapped for a
 * symlink after planning, or another path to a denied directory (a
 * symlink, a bind mount of it), leads to a descriptor it refuses.
 */
#ifndef MPICTR_BINDPOL_H
#define MPICTR_BINDPOL_H

#include "config/siteconf.h"

/* The rules a plan carries to the namespace holder (copies). */
struct bind_policy {
	struct site_items deny;
	struct site_items allow;
};

void bind_policy_init(struct bind_policy *bp, const struct siteconf *sc);
void bind_policy_free(struct bind_policy *bp);

/* May the bind source open as fd (O_PATH is enough) be bound by who? src
 * names it in errors. Objects are compared by device and inode: refused
 * when fd is a deny_bind path or lies below one (its ancestors, walked
 * with "..", which crosses mounts as path lookup does), or is a directory
 * above one (an ancestor of the rule's path); for BIND_USER also when no
 * allow_bind path is among its ancestors. Rule paths are resolved now; one
 * that does not exist or that the user cannot reach protects nothing.
 * Fails closed: a source whose place cannot be established is refused.
 * Returns 0, or -1 with *err naming the rule, where it was set, and the
 * path the descriptor has. */
int bind_policy_check_fd(const struct bind_policy *bp, enum bind_who who,
			 int fd, const char *src, mpictr_err **err);

#endif
