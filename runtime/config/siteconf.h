/* siteconf.h - the site configuration file (mpictr.conf) and user config
 * files: a pure parser into plain data, and the path checks planning
 * applies (binds against allow/deny rules; bindpol.h repeats them on the
 * opened source). Format: docs/admin.md.
 *
 * Trust: the site file is loaded first and may restrict users (deny and
 * allow rules, locked device and transport settings, no user binds). User
 * files (--config, MPICTR_CONF) add binds, environment and profiles; a key
 * that would lift a restriction is an error in a user file, and everything
 * a user file binds is checked like a -B bind.
 */
#ifndef MPICTR_SITECONF_H
#define MPICTR_SITECONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpictr.h"

/* Largest config file accepted, and longest line. */
#define SITECONF_MAX_SIZE (1024 * 1024)
#define SITECONF_MAX_LINE 4096

/* One value and where it was set. */
struct site_item {
	char *value;
	char *origin; /* "FILE:LINE" */
	bool site;    /* from the site file: trusted, not policy-checked */
};

struct site_items {
	struct site_item *v;
	size_t n;
};

struct site_profile {
	char *name;
	char *origin; /* FILE:LINE of the [profile NAME] line */
	bool site;
	char *description;
	struct site_items binds;       /* SRC[:DST[:ro|rw]] */
	struct site_items env;	       /* NAME=VALUE, set */
	struct site_items env_prepend; /* NAME=VALUE, prepended with ':' */
	struct site_item mpi;	       /* host MPI library (value NULL: none) */
	struct site_items mpi_deps;    /* its dependencies, host paths */
	bool mpi_warn;		       /* mpi_abi = warn: mismatch only warns */
};

struct siteconf {
	struct site_items binds;  /* default binds */
	struct site_items env;	  /* environment defaults NAME=VALUE */
	struct site_item devices; /* default --devices (value NULL: unset) */
	struct site_item
	    lock_devices; /* value "yes" when users may not change */
	struct site_item transport_env;	     /* "on"/"off" or NULL */
	struct site_item lock_transport_env; /* "yes" or NULL */
	struct site_item user_binds;	     /* "no" forbids user binds */
	struct site_items
	    allow_binds; /* when any: user sources must be below */
	struct site_items
	    deny_binds; /* sources below or containing one are refused */
	/* size of the upper layer of --writable-tmpfs, or NULL */
	struct site_item writable_tmpfs_size;
	struct site_item shm_size;  /* size of a job's /dev/shm, or NULL */
	struct site_item cache_dir; /* shared image cache (pull), or NULL */
	/* "no": a registry image by tag is not started from the cache's
	 * last resolution when the registry cannot be reached */
	struct site_item offline_cache;
	/* size of each of the private /tmp and $HOME (--contain), or NULL */
	struct site_item tmp_size;
	/* "yes": run only images signed by one of trusted_keys
	 * (docs/signing.md); site file only */
	struct site_item require_signature;
	struct site_items trusted_keys; /* absolute paths of key files */
	/* under require_signature, "yes"/"no" (site file only): may
	 * --overlay DIR (default no), --writable-tmpfs (default yes), an
	 * instance save (default yes) change or repack a signed image */
	struct site_item signed_overlay;
	struct site_item signed_writable_tmpfs;
	struct site_item signed_save;
	/* "no": MPI_Comm_spawn may not pass the universe size (as
	 * --no-oversubscribe); "yes" or NULL: the universe is advice */
	struct site_item oversubscribe;
	struct site_profile *profiles;
	size_t nprofiles;
	bool site_loaded; /* a site file was parsed (or found absent) */
	bool user_loaded; /* a user file was parsed */
};

/* Parse text (len bytes, need not be NUL-terminated) read from fname and
 * add what it says to sc. site: the site file (restrictions allowed) or a
 * user file (restrictions are errors, locked settings are errors, profile
 * names must be new). On error returns -1 with *err naming "FILE:LINE" and
 * leaves sc unchanged. */
int siteconf_parse(struct siteconf *sc, const char *text, size_t len,
		   const char *fname, bool site, mpictr_err **err);
/* Read path and parse it as above. */
int siteconf_load(struct siteconf *sc, const char *path, bool site,
		  mpictr_err **err);
void siteconf_free(struct siteconf *sc);

/* ---- the keys ----------------------------------------------------------
 *
 * Every key of the files, declared once: the parser, merging, freeing and
 * the digest of what decides the container are all driven by this table
 * (a key cannot be parsed yet forgotten by the digest). */
enum site_key_kind {
	SITE_KEY_ITEM,	/* struct site_item: the last value wins */
	SITE_KEY_LIST,	/* struct site_items: every value, in order */
	SITE_KEY_WORDS, /* struct site_items: each blank-separated word */
	SITE_KEY_TEXT,	/* char *: free text, may be empty (profiles) */
	SITE_KEY_FLAG,	/* bool: the checked value is "yes" (profiles) */
};

struct site_key {
	const char *name; /* as written in the file */
	enum site_key_kind kind;
	bool profile; /* of a [profile NAME] section, else of the global part */
	size_t offset;	/* of its field in struct siteconf or site_profile */
	bool site_only; /* an error in a user file */
	/* decides the container: tasks whose files differ in it never
	 * share one (siteconf_container_digest) */
	bool container;
	bool once;	  /* given twice in a section is an error */
	const char *lock; /* the key that locks it (set by an earlier file) */
	/* Check value v: 0 valid, *out the value to store (NULL: v itself;
	 * the caller frees); 1 valid and clears the key; -1 invalid, *why
	 * the message (the caller frees). NULL: any value. */
	int (*check)(const struct site_key *k, const char *v, char **out,
		     char **why);
	const char *example; /* a valid value (tests, docs) */
};

extern const struct site_key siteconf_keys[];
extern const size_t siteconf_nkeys;

/* The field of key k in sc (a global key) or in a struct site_profile
 * (k->profile). */
void *siteconf_key_field(const void *base, const struct site_key *k);
/* Digest of every key that decides the container (names and values, the
 * profiles' names and their keys). Origins do not count. */
uint64_t siteconf_container_digest(const struct siteconf *sc);

/* The profile called name, or NULL. */
const struct site_profile *siteconf_profile(const struct siteconf *sc,
					    const char *name);
/* "a, b, c" (or "none"), for error messages. Caller frees. */
char *siteconf_profile_names(const struct siteconf *sc);

/* Who asked for a bind, for the site's rules (docs/admin.md). */
enum bind_who {
	/* the site file or mpictr itself (/proc, /sys, devices, /etc/hosts,
	 * the job directory): not checked */
	BIND_TRUSTED = 0,
	/* automatic binds of paths the user chooses (the working directory,
	 * $HOME, /tmp, PMIX_SERVER_TMPDIR): deny_bind */
	BIND_AUTO,
	/* -B, user config files and their profiles: every rule */
	BIND_USER,
};

/* May resolved_src (an absolute, symlink-free host path) be bound by who?
 * Refused when it lies below a deny_bind path or contains one; for
 * BIND_USER also when user_binds = no or it lies outside every allow_bind
 * path. what names the request in the error ("bind '/x'"). Returns 0, or
 * -1 with *err quoting the rule that refused it and where it was set. This
 * is the early, path-based check (planning, --dry-run); bindpol.h checks
 * the descriptor that is mounted. */
int siteconf_check_bind(const struct siteconf *sc, const char *resolved_src,
			enum bind_who who, const char *what, mpictr_err **err);
/* siteconf_check_bind(sc, resolved_src, BIND_USER, what, err). */
int siteconf_check_user_bind(const struct siteconf *sc,
			     const char *resolved_src, const char *what,
			     mpictr_err **err);
/* True when the site restricts user binds in any way (then testing aids
 * that bind host paths, such as MPICTR_SYSROOT, are ignored). */
bool siteconf_restricts_binds(const struct siteconf *sc);
/* A size as shm_size takes it: N bytes, N followed by k, m or g (KiB, MiB,
 * GiB, either case), at most 1 PiB; or N% (1 to 100) of the memory the job
 * may use. Returns 0 with *bytes set (*percent 0) or *percent set (*bytes
 * 0); -1 when s is none of these. */
int siteconf_parse_size(const char *s, unsigned long long *bytes,
			unsigned *percent);
/* Is path equal to prefix or below it (whole components)? */
bool siteconf_path_below(const char *path, const char *prefix);

#endif
