/* verify.h - check and make the signatures of a SIF image (docs/signing.md).
 *
 * The cryptography (OpenSSL for DSSE's PEM keys and the digests, RNP for
 * OpenPGP) lives in the "verify" plugin (sif/verify.c, sif/sign.c,
 * runtime/common/plugin.h), loaded only when a signature is checked or
 * made; sif/verify_stub.c forwards these calls to it, and formats the
 * report (pure code, in libmpictr).
 *
 * What is checked, as Apptainer's `verify` does (sylabs/sif
 * pkg/integrity): every signature object linked to an object group is
 * verified with the given keys; its signed metadata must name exactly the
 * group's objects, and the digests of the header (launch script, magic,
 * version, ID), of each descriptor and of each object's data must match.
 */
#ifndef MPICTR_VERIFY_H
#define MPICTR_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* What became of one signature object. */
enum vsig_status {
	VSIG_OK = 0,	  /* a given key verifies it, the digests match */
	VSIG_UNKNOWN_KEY, /* well-formed, but no given key verifies it */
	VSIG_MALFORMED,	  /* truncated, not parseable, bad metadata */
	VSIG_MISMATCH,	  /* signed, but the image is not what was signed */
	VSIG_LEGACY,	  /* a legacy SIFHASH signature, not considered */
	VSIG_NOT_GROUP,	  /* linked to no group (not considered) */
};

struct vsig {
	uint32_t id;	  /* the signature object's ID */
	uint32_t group;	  /* the group it is linked to, 0: none */
	uint32_t object;  /* the object it is linked to (legacy), 0: none */
	const char *form; /* "dsse", "pgp", "legacy", "unknown" */
	char *hash;	  /* descriptor hash type ("sha256"), may be NULL */
	enum vsig_status status;
	char *key;	   /* the key file that verified it, or NULL */
	char *key_id;	   /* its id: OpenPGP fingerprint or SHA256:... */
	char *signer_ids;  /* unknown key: the ids the object names */
	char *msg;	   /* what failed (NULL when VSIG_OK) */
	uint32_t *objects; /* the objects it covers, verified or not */
	size_t nobjects;
};

struct vgroup {
	uint32_t id;
	uint32_t *objects;
	size_t nobjects;
	size_t nsigs; /* signature objects linked to it (legacy included) */
	size_t nok;   /* of which verify */
	size_t nlegacy;
};

struct verify_report {
	char *image;
	char *problem; /* a fault of the whole image (an object in no group) */
	struct vsig *sigs;
	size_t nsigs;
	struct vgroup *groups;
	size_t ngroups;
	bool data_cached; /* the data digests were taken from the cache */
};

/* verify flags */
#define VERIFY_LEGACY 1u /* check legacy signatures too (--legacy-insecure) */

/* Where verified image identities are remembered (NULL dir: nowhere). */
struct verify_cache {
	const char *dir;
};

/* Check every signature of the SIF in fd against the key files (PEM
 * public or private keys, OpenPGP public keys armored or binary). name is
 * for messages. Returns 0 with *out (free with verify_report_free) when
 * the image could be examined (whatever the verdict), -1 with *err when
 * not (unreadable, not a SIF, a key that cannot be read). */
int verify_image_fd(int fd, const char *name, char *const *keys, unsigned flags,
		    const struct verify_cache *cache,
		    struct verify_report **out, mpictr_err **err);
void verify_report_free(struct verify_report *r);

/* Verdicts. strict (mpictr verify, as Apptainer): every group has at
 * least one signature, and every non-legacy signature linked to it
 * verifies. trusted (site policy): every group has at least one signature
 * that verifies; others are reported, not fatal. */
bool verify_report_strict(const struct verify_report *r);
bool verify_report_trusted(const struct verify_report *r);
/* Text (one line per signature and per group) and JSON. */
char *verify_report_text(const struct verify_report *r);
char *verify_report_json(const struct verify_report *r);
/* Why a report is not trusted, one line ("group 1: ..."). */
char *verify_report_why(const struct verify_report *r);

/* Sign every object group of the SIF at path (opened read-write) with
 * the private key in keyfile (PEM: Ed25519, ECDSA, RSA -> DSSE; OpenPGP
 * secret key -> clear-signed), adding one signature object per group.
 * *summary (caller frees) says what was added. */
int sign_image(const char *path, const char *keyfile, char **summary,
	       mpictr_err **err);

/* The plugin's table (runtime/common/plugin.h). */
struct verify_plugin {
	int (*verify_image_fd)(int fd, const char *name, char *const *keys,
			       unsigned flags, const struct verify_cache *cache,
			       struct verify_report **out, mpictr_err **err);
	int (*sign_image)(const char *path, const char *keyfile, char **summary,
			  mpictr_err **err);
};

/* plugin side */
int vplug_verify_image_fd(int fd, const char *name, char *const *keys,
			  unsigned flags, const struct verify_cache *cache,
			  struct verify_report **out, mpictr_err **err);
int vplug_sign_image(const char *path, const char *keyfile, char **summary,
		     mpictr_err **err);

#endif
