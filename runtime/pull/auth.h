/* auth.h - registry credentials and challenges (auth.c): the credential
 * files users already have, WWW-Authenticate parsing, base64, and the
 * platform an index entry must have. Pure but for jansson (the JSON
 * credential files): plugin code, and the unit tests'. Secrets read from
 * credential files stay in memory: they never reach a log line, an error
 * message, argv or a file mpictr writes.
 */
#ifndef MPICTR_PULL_AUTH_H
#define MPICTR_PULL_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "mpictr.h"

/* The registry Docker Hub's names go to. */
#define REG_DOCKER_HUB "registry-1.docker.io"

struct reg_cred {
	char *user;
	char *secret; /* password or token: never logged */
	char *origin; /* the file it came from */
};
void reg_cred_free(struct reg_cred *c);

/* The credentials of host (as in struct reg_ref) for user (NULL: any),
 * from the first of these files that has some: $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json,
 * $DOCKER_CONFIG/config.json or ~/.docker/config.json, Enroot's
 * $ENROOT_CONFIG_PATH/.credentials (default ~/.config/enroot/.credentials).
 * Returns 1 with *c filled, 0 when none, -1 on a malformed file. The
 * JSON files need jansson: this is plugin code. */
int reg_cred_find(const char *host, const char *repo, const char *user,
		  struct reg_cred *c, mpictr_err **err);
/* The netrc-style parser (Enroot's .credentials): the entry for machine
 * host (and login user when not NULL). Returns 1, 0 or -1 as above; fname
 * names the file in errors. Pure. */
int reg_netrc_find(const char *text, size_t len, const char *fname,
		   const char *host, const char *user, struct reg_cred *c,
		   mpictr_err **err);
/* The names a credential file may file host under (Docker Hub's several,
 * "https://" forms): whether key names host. Pure. */
bool reg_cred_key_matches(const char *key, const char *host);

/* A parsed WWW-Authenticate challenge. */
struct reg_challenge {
	enum { REG_AUTH_NONE, REG_AUTH_BASIC, REG_AUTH_BEARER } scheme;
	char *realm;
	char *service;
	char *scope;
	char *error; /* e.g. "insufficient_scope" */
};
/* Parse a WWW-Authenticate header value. Returns 0, or -1 when it is not
 * one challenge of a scheme we know. Pure. */
int reg_challenge_parse(const char *value, struct reg_challenge *ch);
void reg_challenge_free(struct reg_challenge *ch);
/* base64 of n bytes (for Basic), and its inverse (NULL when invalid). */
char *reg_base64(const void *data, size_t n);
char *reg_unbase64(const char *s, size_t *n);

#endif
