/* seccomp_stub.c - seccomp.h for the host: the "seccomp" plugin
 * (runtime/common/plugin.h) builds the --fakeroot filter, libmpictr
 * installs it with prctl (no libseccomp in libmpictr). */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "common/plugin.h"
#include "container/seccomp.h"

int seccomp_fakeroot_build(struct sock_fprog *prog, mpictr_err **err)
{
	const struct seccomp_plugin *t = plugin_load("seccomp", err);

	prog->filter = NULL;
	prog->len = 0;
	if (!t)
		return err_wrap(err, "--fakeroot's system call filter");
	return t->fakeroot_bpf(&prog->filter, &prog->len, err);
}

int seccomp_fakeroot_install(struct sock_fprog *prog, mpictr_err **err)
{
	int rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0);
	int e = errno;

	free(prog->filter);
	prog->filter = NULL;
	if (rc < 0)
		return err_set(err, e,
			       "install --fakeroot's system call filter");
	return 0;
}
