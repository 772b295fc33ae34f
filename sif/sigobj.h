/* sigobj.h - the contents of SIF signature objects (data type 0x4005), as
 * Apptainer's sif library (pkg/integrity) writes them, parsed without any
 * cryptography: the form (DSSE envelope, OpenPGP clear-signed message,
 * legacy "SIFHASH:" text), the DSSE envelope's fields, the signed image
 * metadata (the digests of the header, of each descriptor and of each
 * object's data) and the bytes those digests are computed over. The
 * verify plugin (sif/verify.c) checks the signatures; this file is pure,
 * so that its parsers of untrusted bytes are fuzzed (tests/fuzz/
 * fuzz_sigobj.c) and unit-tested. Format: docs/signing.md.
 */
#ifndef MPICTR_SIGOBJ_H
#define MPICTR_SIGOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sif/sif.h"

/* The DSSE payload type of signed SIF metadata. */
#define SIGOBJ_DSSE_TYPE "application/vnd.sylabs.sif-metadata+json"
/* Largest signature object read (Apptainer's are 1-3 KiB). */
#define SIGOBJ_MAX_SIZE (1u << 20)
/* Most signatures in one DSSE envelope, objects in one metadata. */
#define SIGOBJ_MAX_SIGS 64
#define SIGOBJ_MAX_OBJECTS 65536
/* Bytes of the header and of a descriptor that the digests cover. */
#define SIGOBJ_HEADER_BYTES 61
#define SIGOBJ_DESC_BYTES 557
/* Largest digest (SHA-512). */
#define SIGOBJ_DIGEST_MAX 64

enum sigobj_form {
	SIGOBJ_UNKNOWN = 0,
	SIGOBJ_DSSE,   /* JSON envelope, PEM keys */
	SIGOBJ_PGP,    /* OpenPGP clear-signed metadata JSON */
	SIGOBJ_LEGACY, /* OpenPGP clear-signed "SIFHASH:\n<hex>" */
};

/* A digest as the metadata writes it: "sha256:<hex>". alg is the name
 * (sha224, sha256, sha384, sha512, sha512_224, sha512_256). */
struct sig_digest {
	char alg[16];
	uint8_t value[SIGOBJ_DIGEST_MAX];
	size_t len;
};

struct sig_object_meta {
	uint32_t relative_id; /* object ID minus the group's smallest */
	struct sig_digest descriptor;
	struct sig_digest object;
};

/* The signed metadata (version 1). */
struct sig_metadata {
	struct sig_digest header;
	struct sig_object_meta *objects;
	size_t nobjects;
};

struct dsse_sig {
	char *keyid; /* may be empty */
	uint8_t *sig;
	size_t siglen;
};

struct dsse_envelope {
	char *payload_type;
	uint8_t *payload;
	size_t payload_len;
	struct dsse_sig *sigs;
	size_t nsigs;
};

/* Which form a signature object's bytes have (no validation beyond that:
 * the parsers below and the signature check say what is wrong). */
enum sigobj_form sigobj_form(const uint8_t *data, size_t len);
const char *sigobj_form_name(enum sigobj_form f);

/* Parse a DSSE envelope. On error -1 with *err saying what is malformed;
 * release with dsse_envelope_free() either way. */
int dsse_parse(const uint8_t *data, size_t len, struct dsse_envelope *e,
	       mpictr_err **err);
void dsse_envelope_free(struct dsse_envelope *e);
/* DSSE's pre-authentication encoding of (type, payload): the bytes a DSSE
 * signature signs. Caller frees; *outlen receives the length. */
uint8_t *dsse_pae(const char *type, const uint8_t *payload, size_t len,
		  size_t *outlen);

/* Parse signed metadata JSON (trailing white space allowed). */
int sigmeta_parse(const uint8_t *json, size_t len, struct sig_metadata *m,
		  mpictr_err **err);
void sigmeta_free(struct sig_metadata *m);
/* The JSON that Go's encoding/json writes for m (what is signed). */
char *sigmeta_format(const struct sig_metadata *m);

/* The digest of a legacy "SIFHASH:\n<hex>\n" plaintext; alg is the name
 * of the descriptor's hash type. */
int sigobj_legacy_digest(const uint8_t *text, size_t len, const char *alg,
			 struct sig_digest *d, mpictr_err **err);
/* Size in bytes of a digest algorithm's output, 0 when unknown. */
size_t sig_digest_size(const char *alg);
/* The metadata name of a descriptor hash type (1 SHA-256 ...), or NULL. */
const char *sig_hashtype_alg(int32_t hashtype);

/* The bytes of the header that the header digest covers (launch script,
 * magic, version, ID), read from the raw 128-byte header. */
void sigobj_header_bytes(const uint8_t raw[SIF_HEADER_SIZE],
			 uint8_t out[SIGOBJ_HEADER_BYTES]);
/* The bytes of a descriptor that its digest covers, with relative_id in
 * place of the ID (type, used, relative ID, link, size, creation time,
 * uid, gid, name, extra), from the raw 585-byte descriptor. */
void sigobj_descriptor_bytes(const uint8_t raw[SIF_DESC_SIZE],
			     uint32_t relative_id,
			     uint8_t out[SIGOBJ_DESC_BYTES]);

/* Does a key file's content look like OpenPGP (binary packets or armor)
 * rather than PEM? Decides which verify plugin is loaded (verify.h). */
bool sigobj_key_is_pgp(const uint8_t *data, size_t len);

/* Base64 (standard or URL alphabet, padding optional). Returns the
 * decoded bytes (caller frees) or NULL when s is not base64. */
uint8_t *b64_decode(const char *s, size_t n, size_t *outlen);
/* Standard alphabet with padding, or without (raw) when pad is false. */
char *b64_encode(const uint8_t *p, size_t n, bool pad);

#endif
