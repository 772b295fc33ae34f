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
	int nranks;	   /* 0: single process, no PMI */
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

/* The site's signature policy (docs/signing.md). */
struct site_trust {
	bool require; /* require_signature = yes */
	char *origin; /* FILE:LINE of that setting */
	char **keys;  /* trusted_keys, in order */
};

/* The signature policy of the site: from cfg's site configuration when it
 * was loaded, else read from the site file itself (so that an embedder
 * that never loads it still gets it; users cannot lift it either way).
 * Returns 0, or -1 with *err when the site file cannot be read. */
int config_site_trust(const struct mpictr_config *cfg, struct site_trust *t,
		      mpictr_err **err);
void site_trust_copy(struct site_trust *dst, const struct site_trust *src);
void site_trust_free(struct site_trust *t);

#endif
