/* plugin_host.h - what a plugin gets of its host (plugin.h): the ABI, the
 * version and the host's log sink. Apart from plugin.h so that error.c,
 * which a plugin links with MPICTR_PLUGIN_BUILD to route its messages to
 * the host, needs nothing else of the loader. */
#ifndef MPICTR_PLUGIN_HOST_H
#define MPICTR_PLUGIN_HOST_H

#include "mpictr.h"

/* Bumped whenever a table or struct plugin_host changes. */
#define MPICTR_PLUGIN_ABI 2

struct plugin_host {
	unsigned abi;
	const char *version; /* MPICTR_VERSION_STRING of the host */
	int (*log_enabled)(enum mpictr_log_level level);
	void (*log_line)(enum mpictr_log_level level, const char *line);
};

/* Plugin side (error.c built with MPICTR_PLUGIN_BUILD): route log messages
 * to the host. */
void plugin_attach_host(const struct plugin_host *host);

#endif
