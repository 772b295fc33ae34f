/* caps.h - drop every capability before exec (docs/architecture.md
 * "Conventions"). */
#ifndef MPICTR_CAPS_H
#define MPICTR_CAPS_H

#include "mpictr.h"

/* Set PR_SET_NO_NEW_PRIVS, clear the bounding set and the ambient set, and
 * empty the effective, permitted and inheritable sets. */
int caps_drop_all(mpictr_err **err);

#endif
