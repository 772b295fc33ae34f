/* config.h - the configuration object behind mpictr_config. Planning
 * (plan.c) reads it.
 */
#ifndef MPICTR_CONFIG_H
#define MPICTR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config/bindspec.h"
#include "mpictr.h"
#include "config/siteconf.h"

struct mpictr_config {
	char *image;
	char **argv;	/* command (or runscript arguments) */
	bool runscript; /* `mpictr run` */
	struct bind_spec *binds;
	size_t nbinds;
	char **user_env; /* NAME=VALUE from --env, in order */
	char *pwd;
	char **host_env;
	bool contain, fakeroot, no_share, tag_output, transport_env, gpu,
	    inject_verbs;
	bool no_oversubscribe; /* spawn may not pass universe_size */
	int nranks;	       /* 0: single process, no PMI */
	int universe_size; /* MPI_UNIVERSE_SIZE; 0: slots, at least nranks */
	char *devices;
	char *bind_to;
	bool transport_env_set; /* set through the API (not the default) */
	struct siteconf site;	/* site file, then user config files */
	char **profiles;	/* --profile names, resolved when planning */
	/* Set by instance_attach: read the image at this path (the file the
	 * instance holds open, /proc/self/fd/N); image still names it. Not
	 * owned (mpictr_config_free leaves it). */
	char *image_read;
};

#endif
