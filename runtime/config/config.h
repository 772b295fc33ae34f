/* config.h - the configuration object behind mpictr_config. Planning
 * (plan.c) reads it.
 */
#ifndef MPICTR_CONFIG_H
#define MPICTR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	char *pwd_default; /* without pwd and an image WorkingDir, not cwd */
	char **host_env;
	bool contain, fakeroot, no_share, tag_output, transport_env, gpu,
	    inject_verbs;
	bool no_oversubscribe; /* spawn may not pass universe_size */
	int nranks;	       /* 0: single process, no PMI */
	int universe_size; /* MPI_UNIVERSE_SIZE; 0: slots, at least nranks */
	int timeout_s;	   /* --timeout: end the job after it; 0: none */
	char *devices;
	char *bind_to;
	bool transport_env_set; /* set through the API (not the default) */
	struct siteconf site;	/* site file, then user config files */
	char **profiles;	/* --profile names, resolved when planning */
	/* Set by instance_attach: read the image at this path (the file the
	 * instance holds open, /proc/self/fd/N); image still names it. Not
	 * owned (mpictr_config_free leaves it). */
	char *image_read;
	/* mpictr_config_set_instance_origin: the starter an instance records
	 * (and a joiner requires), and the directories a joined instance's
	 * image must lie in (NULL: anywhere). */
	char *inst_origin;
	char **inst_image_dirs;
	/* Writable containers: an overlay on the image, its upper layer a
	 * tmpfs (writable_tmpfs) or overlay_dir/upper. */
	bool writable_tmpfs;
	char *overlay_dir;
	bool cleanenv, no_home;
	char *home_src, *home_dst; /* --home SRC[:DST]; dst NULL: $HOME */
	char **file_env;	   /* NAME=VALUE from --env-file, in order */
	bool shell;		   /* `mpictr shell` */
	char *shell_path;	   /* its shell, or NULL: chosen at exec */
};

/* ---- the option table ----------------------------------------------------
 *
 * The options of a config, one row each. Those that decide the container
 * (its mounts, devices and identity: container) are declared here and
 * nowhere else: the join key and the plan's digest hash them
 * (config_container_digest), an instance refuses them from a joiner (naming
 * the option) and hands those with an inst_key to its joiners. A new option
 * that decides the container is one new row. */
enum config_opt_kind {
	CONFIG_BOOL,  /* bool */
	CONFIG_STR,   /* char *, or NULL */
	CONFIG_STRV,  /* char **, NULL-terminated, or NULL */
	CONFIG_BINDS, /* binds and nbinds */
};

struct config_opt {
	const char *option; /* as on the command line, for messages */
	enum config_opt_kind kind;
	size_t offset; /* of the field in struct mpictr_config */
	int flag;      /* its enum mpictr_flag (CONFIG_BOOL), or 0 */
	bool container;
	const char *inst_key; /* its name in an instance's spec, or NULL */
};

extern const struct config_opt config_opts[];
extern const size_t config_nopts;

/* Is option o given (not its default: true, a string, a non-empty list)? */
bool config_opt_given(const struct mpictr_config *cfg,
		      const struct config_opt *o);
/* Call fn with each value of o in cfg as a string: a bool's "1" or "0", a
 * string when set, each string of a list, each bind's source, target and
 * "ro" or "rw". */
void config_opt_values(const struct mpictr_config *cfg,
		       const struct config_opt *o,
		       void (*fn)(void *data, const char *value), void *data);
/* Set o in cfg from one value as config_opt_values gives it (a bool's
 * "0" is false; a list's value is appended); not for CONFIG_BINDS. */
void config_opt_put(struct mpictr_config *cfg, const struct config_opt *o,
		    const char *value);
/* Free o's value in cfg and reset it to its default. */
void config_opt_clear(struct mpictr_config *cfg, const struct config_opt *o);
/* The first option that decides the container given in cfg, or NULL. */
const struct config_opt *
config_container_given(const struct mpictr_config *cfg);
/* Digest of the options that decide the container (every row with
 * container), names and values. */
uint64_t config_container_digest(const struct mpictr_config *cfg);

/* The site's signature policy (docs/signing.md). */
struct site_trust {
	bool require; /* require_signature = yes */
	char *origin; /* FILE:LINE of that setting */
	char **keys;  /* trusted_keys, in order */
	/* What may change or repack a signed image (signed_overlay,
	 * signed_writable_tmpfs, signed_save): each allowed or not, and the
	 * FILE:LINE that said so (NULL: the default). */
	struct site_trust_allow {
		bool allow;
		char *origin;
	} overlay, writable_tmpfs, save;
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
