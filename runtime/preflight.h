/* preflight.h - `mpictr check` (mpictr_check in mpictr.h) and, for its unit
 * tests, its device section (not check.h: that name is the Check
 * library's, which the unit tests include).
 */
#ifndef MPICTR_PREFLIGHT_H
#define MPICTR_PREFLIGHT_H

#include "mpictr.h"
#include "common/util.h"

/* `mpictr check` lines for the interconnect, appended to out, one per
 * line: "ok: ..." or "problem: ... (fix: ...)": UCX's devices (through the
 * helper at ucx_helper; skipped when NULL), sysfs HCAs, RLIMIT_MEMLOCK,
 * Yama ptrace_scope, device node access. None of these blocks running
 * containers, so *blocking is left as it is (documented for callers that
 * sum it). Returns 0, or -1 with *err when sysroot is invalid. */
int check_devices_report(const char *sysroot, const char *ucx_helper,
			 struct strbuf *out, int *blocking, mpictr_err **err);

#endif
