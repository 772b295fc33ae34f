/* vkeys.h - the keys and signature primitives of the verify plugins: PEM
 * keys and digests with OpenSSL 3 (vkeys.c), OpenPGP keys and clear-signed
 * messages with RNP (vkeys_pgp.c). Only those files include their headers
 * (dependencies: docs/architecture.md "Conventions").
 */
#ifndef MPICTR_VKEYS_H
#define MPICTR_VKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sif/vpgp.h"

/* Load a key file; secret: want a private key. -1 with *err naming the
 * file. */
int vkey_load(const char *path, bool secret, struct vkey *k, mpictr_err **err);
void vkey_free(struct vkey *k);

/* Does the PEM key k verify sig over msg (hash: the descriptor's hash
 * name, for ECDSA and RSA; Ed25519 signs the message itself)? */
bool vkey_dsse_verify(const struct vkey *k, const char *hash,
		      const uint8_t *msg, size_t len, const uint8_t *sig,
		      size_t siglen);
/* Sign msg with the PEM private key k (SHA-256 for ECDSA, RSA PKCS#1
 * v1.5). Returns the signature (caller frees) or NULL with *err. */
uint8_t *vkey_dsse_sign(const struct vkey *k, const uint8_t *msg, size_t len,
			size_t *siglen, mpictr_err **err);

/* Digest of name alg ("sha256"...) over bytes, or over len bytes of fd at
 * off; out receives it, *outlen its size. -1 with *err. */
int vdigest_mem(const char *alg, const void *p, size_t n, uint8_t *out,
		size_t *outlen, mpictr_err **err);
/* The same over several ranges, one after the other. */
int vdigest_fd_multi(const char *alg, int fd, const uint64_t *offs,
		     const uint64_t *lens, size_t n, uint8_t *out,
		     size_t *outlen, mpictr_err **err);
int vdigest_fd(const char *alg, int fd, uint64_t off, uint64_t len,
	       uint8_t *out, size_t *outlen, mpictr_err **err);

#endif
