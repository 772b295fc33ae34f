/* pmix_guard.h - mpictr's accept(), in front of libpmix's listener from
 * the moment it exists (see pmix_guard.c). Part of libmpictr, not of the
 * pmix plugin: only the executable and the libraries loaded with it can
 * stand between libpmix and libc. */
#ifndef MPICTR_PMIX_GUARD_H
#define MPICTR_PMIX_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* Does the accept() that libpmix binds to (the first in the process's
 * global scope) lead to the guard? False when libmpictr was loaded with
 * dlopen, or another accept() comes first (LD_PRELOAD). An executable
 * that links libmpictr.a exports it (GNU ld exports a definition that a
 * linked shared library, libc, also has; the CLI and `pkg-config --static
 * mpictr` also say -Wl,--export-dynamic-symbol=accept). */
bool pmix_guard_in_effect(void);

/* From now on every accept() in this process (only libpmix calls it;
 * mpictr's own code uses accept4) hands over a connection only when it
 * comes from a process of this effective uid (TCP: the kernel's record)
 * and has sent, within PMIX_GUARD_HELLO_MS, a complete connect message
 * that pmix_hello_check() passes for uid/gid (the ids the job's
 * processes are registered with). Anything else is closed and the caller
 * gets ECONNABORTED, which libpmix 4.2's listener skips. */
#define PMIX_GUARD_HELLO_MS 1000
void pmix_guard_arm(uid_t uid, gid_t gid);
/* accept() calls the guard saw since it was armed: after the server
 * took the gate's test connection, 0 means libpmix's accept() bypassed it
 * (a definition of accept() in front of mpictr's, another version). */
unsigned long pmix_guard_seen(void);
/* Back to plain accept(); logs how many connections were refused. */
void pmix_guard_disarm(void);

#endif
