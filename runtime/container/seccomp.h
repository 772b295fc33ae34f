/* seccomp.h - the --fakeroot filter: in a user namespace that maps one
 * uid (the user's, to 0), the calls that would need another id or a
 * device node fail with EPERM or EINVAL; package managers make them
 * (apt's _apt sandbox: setgroups, setresgid, setresuid; dpkg: chown of
 * every file it unpacks; mknod of a device) and stop. The filter makes
 * them report success without doing anything, as Enroot's and
 * Apptainer's fakeroot do: setgroups, the setuid/setgid families, the
 * chown family, mknod/mknodat of a character or block device.
 *
 * The filter is built by the "seccomp" plugin (libseccomp,
 * mpictr-seccomp.so: never in libmpictr) into classic BPF, before the
 * rank enters the container (the plugin is a host file), and installed by
 * libmpictr after no_new_privs, right before the exec. */
#ifndef MPICTR_SECCOMP_H
#define MPICTR_SECCOMP_H

#include <linux/filter.h>

#include "common/error.h"

/* The plugin's table (runtime/common/plugin.h). */
struct seccomp_plugin {
	/* The fakeroot filter as BPF (*prog, free() it; *len instructions). */
	int (*fakeroot_bpf)(struct sock_filter **prog, unsigned short *len,
			    mpictr_err **err);
};

/* Plugin side (seccomp.c) and host side (seccomp_stub.c, which loads the
 * plugin): the filter into prog (free prog->filter). */
int seccomp_fakeroot_bpf(struct sock_filter **prog, unsigned short *len,
			 mpictr_err **err);
int seccomp_fakeroot_build(struct sock_fprog *prog, mpictr_err **err);
/* Host side: install prog (no_new_privs must be set); frees it. */
int seccomp_fakeroot_install(struct sock_fprog *prog, mpictr_err **err);

#endif
