/* vpgp.h - a key of the verify plugins (struct vkey) and their OpenPGP
 * half: vkeys_pgp.c with RNP (mpictr-verify-pgp.so), vkeys_nopgp.c without
 * (mpictr-verify.so). vkeys.h has the rest. */
#ifndef MPICTR_VPGP_H
#define MPICTR_VPGP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum vkey_kind { VKEY_PEM, VKEY_PGP };

struct vkey {
	char *path;
	enum vkey_kind kind;
	bool secret;	 /* a private key (signing) */
	char *desc;	 /* "ed25519", "ecdsa", "rsa", "openpgp" */
	char *id;	 /* PEM: "SHA256:<base64>" (DSSE key id); PGP: the
			    primary key's fingerprint (40 hex digits) */
	uint8_t fpr[20]; /* PGP: the primary fingerprint, binary */
	void *pkey;	 /* EVP_PKEY (PEM) */
	void *ffi;	 /* rnp_ffi_t (PGP), this file's keys only */
};

/* The OpenPGP half (vkeys_pgp.c with RNP, vkeys_nopgp.c without). */
int vpgp_load(struct vkey *k, const uint8_t *data, size_t len, bool secret,
	      mpictr_err **err);
void vpgp_free(struct vkey *k);

/* Verify the OpenPGP clear-signed message msg with k's keys. 1: verified,
 * *plain (caller frees) and *plainlen receive the signed text and
 * *fpr the primary fingerprint of the signing key; 0: no key of k made
 * it, *why says what RNP found (caller frees; the issuer when known); 2:
 * k's key made it, but it does not verify (the text or the signature was
 * changed; *why set); -1 malformed (*err). */
int vkey_pgp_verify(const struct vkey *k, const uint8_t *msg, size_t len,
		    uint8_t **plain, size_t *plainlen, uint8_t fpr[20],
		    char **why, mpictr_err **err);
/* Clear-sign text with k's primary key (SHA-256). Returns the armored
 * message (caller frees) or NULL with *err. */
char *vkey_pgp_sign(const struct vkey *k, const char *text, size_t *outlen,
		    mpictr_err **err);

#endif
