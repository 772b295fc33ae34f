/* seccomp.c - the "seccomp" plugin (mpictr-seccomp.so, libseccomp): the
 * --fakeroot filter of seccomp.h as classic BPF. */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/plugin.h"
#include "common/util.h"
#include "container/seccomp.h"

/* Report success, change nothing. */
static const char *const faked[] = {
    "setgroups",  "setuid",	"setgid",     "setreuid",    "setregid",
    "setresuid",  "setresgid",	"setfsuid",   "setfsgid",    "chown",
    "fchown",	  "lchown",	"fchownat",   "setgroups32", "setuid32",
    "setgid32",	  "setreuid32", "setregid32", "setresuid32", "setresgid32",
    "setfsuid32", "setfsgid32", "chown32",    "fchown32",    "lchown32"};

/* mknod (mode: argument 1) and mknodat (argument 2) of a device. */
static int fake_devices(scmp_filter_ctx ctx)
{
	static const struct {
		const char *name;
		unsigned arg;
	} calls[] = {{"mknod", 1}, {"mknodat", 2}};
	static const mode_t types[] = {S_IFCHR, S_IFBLK};

	for (size_t i = 0; i < sizeof(calls) / sizeof(*calls); i++) {
		int nr = seccomp_syscall_resolve_name(calls[i].name);

		if (nr == __NR_SCMP_ERROR)
			continue;
		for (size_t t = 0; t < 2; t++) {
			int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), nr, 1,
						  SCMP_CMP(calls[i].arg,
							   SCMP_CMP_MASKED_EQ,
							   S_IFMT, types[t]));
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int seccomp_fakeroot_bpf(struct sock_filter **prog, unsigned short *len,
			 mpictr_err **err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cleanup_close int fd = -1;
	off_t size;
	int rc = 0;

	*prog = NULL;
	*len = 0;
	if (!ctx)
		return err_set(err, ENOMEM, "seccomp: create the filter");
	/* 32-bit programs of the image get the same (best effort: the
	 * kernel may lack the ABI). */
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		(void)seccomp_arch_add(ctx, SCMP_ARCH_X86);
		(void)seccomp_arch_add(ctx, SCMP_ARCH_X32);
	}
	for (size_t i = 0; rc == 0 && i < sizeof(faked) / sizeof(*faked); i++) {
		int nr = seccomp_syscall_resolve_name(faked[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not a call of any of the ABIs */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), nr, 0);
		if (rc == -EDOM || rc == -EINVAL)
			rc = 0; /* not a call of the native ABI */
	}
	if (rc == 0)
		rc = fake_devices(ctx);
	fd = rc == 0 ? memfd_create("mpictr-seccomp", MFD_CLOEXEC) : -1;
	if (rc == 0 && fd < 0)
		rc = -errno;
	if (rc == 0)
		rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (rc < 0)
		return err_set(err, -rc,
			       "seccomp: build the --fakeroot filter");
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(**prog) ||
	    size / sizeof(**prog) > BPF_MAXINSNS)
		return err_set(err, EINVAL,
			       "seccomp: the --fakeroot filter has %lld bytes",
			       (long long)size);
	*prog = xmalloc((size_t)size);
	if (pread(fd, *prog, (size_t)size, 0) != size) {
		free(*prog);
		*prog = NULL;
		return err_set(err, errno, "seccomp: read the filter");
	}
	*len = (unsigned short)(size / sizeof(**prog));
	return 0;
}

static const struct seccomp_plugin seccomp_table = {
    .fakeroot_bpf = seccomp_fakeroot_bpf,
};

MPICTR_PLUGIN_DEFINE(seccomp_table)
