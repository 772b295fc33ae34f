/* error.c - mpictr_err construction, accessors and the log sink.
 *
 * Library code reports through these and never prints; the CLI installs a
 * sink that writes to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/plugin_host.h"
#include "common/util.h"

static mpictr_log_fn log_sink;
static void *log_sink_data;
static enum mpictr_log_level log_max = MPICTR_LOG_NOTICE;

int err_setv(mpictr_err **err, int errnum, const char *fmt, va_list ap)
{
	char *msg;

	if (!err)
		return -1;
	msg = xvasprintf(fmt, ap);
	if (errnum) {
		char *full = xasprintf("%s: %s", msg, strerror(errnum));
		free(msg);
		msg = full;
	}
	if (*err) /* never leak an earlier error: keep the newest */
		mpictr_err_free(*err);
	*err = xcalloc(1, sizeof(**err));
	(*err)->errnum = errnum;
	(*err)->exit_code = MPICTR_EXIT_FAILURE;
	(*err)->msg = msg;
	return -1;
}

int err_set(mpictr_err **err, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_setv(err, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int err_set_exit(mpictr_err **err, int exit_code, int errnum, const char *fmt,
		 ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_setv(err, errnum, fmt, ap);
	va_end(ap);
	if (err && *err)
		(*err)->exit_code = exit_code;
	return -1;
}

/* Rewrite (*err)'s message as the formatted text put before it, "TEXT: MSG"
 * (prepend), or after it, "MSG (hint: TEXT)". Returns -1. */
static int err_edit(mpictr_err **err, bool prepend, const char *fmt, va_list ap)
{
	char *text, *msg;

	if (!err || !*err)
		return -1;
	text = xvasprintf(fmt, ap);
	if (prepend)
		msg = xasprintf("%s: %s", text, (*err)->msg);
	else
		msg = xasprintf("%s (hint: %s)", (*err)->msg, text);
	free(text);
	free((*err)->msg);
	(*err)->msg = msg;
	return -1;
}

int err_wrap(mpictr_err **err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_edit(err, true, fmt, ap);
	va_end(ap);
	return -1;
}

int err_hint(mpictr_err **err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_edit(err, false, fmt, ap);
	va_end(ap);
	return -1;
}

int err_from_relay(mpictr_err **err, int errnum, int exit_code, const char *msg)
{
	if (!err)
		return -1;
	if (*err)
		mpictr_err_free(*err);
	*err = xcalloc(1, sizeof(**err));
	(*err)->errnum = errnum;
	(*err)->exit_code = exit_code ? exit_code : MPICTR_EXIT_FAILURE;
	(*err)->msg = xstrdup(msg);
	return -1;
}

MPICTR_PUBLIC int mpictr_err_errno(const mpictr_err *err)
{
	return err ? err->errnum : 0;
}

MPICTR_PUBLIC const char *mpictr_err_message(const mpictr_err *err)
{
	return err ? err->msg : "";
}

MPICTR_PUBLIC int mpictr_err_exit_code(const mpictr_err *err)
{
	return err ? err->exit_code : 0;
}

MPICTR_PUBLIC void mpictr_err_free(mpictr_err *err)
{
	if (!err)
		return;
	free(err->msg);
	free(err);
}

MPICTR_PUBLIC void mpictr_set_log_sink(mpictr_log_fn fn, void *data,
				       enum mpictr_log_level max_level)
{
	log_sink = fn;
	log_sink_data = data;
	log_max = max_level;
}

#ifdef MPICTR_PLUGIN_BUILD
/* In a plugin: every message goes to the host's sink, whatever the host
 * sets after the plugin was loaded (a keeper silences its output). */
static const struct plugin_host *plugin_host;

void plugin_attach_host(const struct plugin_host *h)
{
	plugin_host = h;
}

int log_enabled(enum mpictr_log_level level)
{
	return plugin_host && plugin_host->log_enabled(level);
}
#else
int log_enabled(enum mpictr_log_level level)
{
	return log_sink && level <= log_max;
}
#endif

void log_msg(enum mpictr_log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int saved = errno;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
#ifdef MPICTR_PLUGIN_BUILD
	plugin_host->log_line(level, line);
#else
	log_sink(level, line, log_sink_data);
#endif
	errno = saved;
}

MPICTR_PUBLIC const char *mpictr_version(void)
{
	return MPICTR_VERSION_STRING;
}
