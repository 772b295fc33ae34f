/* error.h - the error object and the internal log helpers
 * (docs/architecture.md "Conventions").
 *
 * err_set() is the constructor: `return err_set(err, errno, "open '%s'", p)`
 * stores "open 'p': <strerror>" and returns -1. err_wrap() prefixes context
 * on the way up. Messages are lower-case, with no trailing period.
 */
#ifndef MPICTR_ERROR_H
#define MPICTR_ERROR_H

#include <stdarg.h>

#include "mpictr.h"

struct mpictr_err {
	int errnum;    /* errno behind the failure, 0 if none */
	int exit_code; /* 255 unless the payload command is at fault */
	char *msg;
};

/* Store a new error in *err (if err != NULL) and return -1. errnum may be 0;
 * when non-zero its strerror text is appended after ": ". */
int err_set(mpictr_err **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int err_setv(mpictr_err **err, int errnum, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Like err_set() with an explicit exit code (126/127 for the payload). */
int err_set_exit(mpictr_err **err, int exit_code, int errnum, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
/* Prefix "<context>: " to an existing error; returns -1. No-op if err or
 * *err is NULL. */
int err_wrap(mpictr_err **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append " (hint: ...)" to an existing error; returns -1. */
int err_hint(mpictr_err **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Build an error from a relayed (errnum, exit_code, message) triple, as sent
 * by a forked child over its relay pipe (proc.h). Returns -1. */
int err_from_relay(mpictr_err **err, int errnum, int exit_code,
		   const char *msg);

/* Log through the process-global sink. */
void log_msg(enum mpictr_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(MPICTR_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(MPICTR_LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(MPICTR_LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(MPICTR_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(MPICTR_LOG_DEBUG, __VA_ARGS__)
/* True when messages of this level reach the sink. */
int log_enabled(enum mpictr_log_level level);

#endif
