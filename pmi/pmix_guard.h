/* pmix_guard.h - mpictr's accept(), in front of libpmix's listener from
 * the moment it exists (see pmix_guard.c). Part of libmpictr, not of the
 * pmix plugin; it stands only between libpmix and libc, never in front of
 * another object's accept(). */
#ifndef MPICTR_PMIX_GUARD_H
#define MPICTR_PMIX_GUARD_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Point libpmix's relocation slots for accept() (every loaded libpmix.so*:
 * the pmix plugin loads it) at pmix_guard_accept. 0 when every such slot
 * leads to the guard; -1 when libpmix is not loaded, has no accept()
 * slot, or a slot could not be written (this architecture: x86-64 and
 * arm64 only). */
int pmix_guard_install(void);
/* Does every accept() slot of the loaded libpmix lead to the guard? */
bool pmix_guard_in_effect(void);
/* The guard itself: accept4(fd, addr, len, 0), filtered while armed. */
int pmix_guard_accept(int fd, struct sockaddr *addr, socklen_t *len);

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
