/* vkeys_pgp.c - OpenPGP keys and clear-signed messages for the verify
 * plugin (vkeys.h), with RNP: built into mpictr-verify-pgp.so only, so that
 * checking DSSE signatures with PEM keys (mpictr-verify.so) does not load
 * RNP and Botan (docs/signing.md, "Cost").
 *
 * Prefix legend: rnp_ is RNP; everything else is ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rnp/rnp.h>
#include <rnp/rnp_err.h>

#include "common/util.h"
#include "sif/sigobj.h"
#include "sif/vpgp.h"

/* ---- OpenPGP keys ------------------------------------------------------ */

/* RNP 0.16 prints some warnings (an armor without CRC line, a bit count
 * that is off by one) straight to stderr, whatever its log settings; the
 * verdicts are ours to report, so its calls run with stderr on /dev/null.
 * The callers (the CLI, the namespace holder) are single-threaded. */
static int quiet_begin(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int saved = null >= 0 ? fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;

	if (saved >= 0)
		dup2(null, 2);
	if (null >= 0)
		close(null);
	return saved;
}

static void quiet_end(int saved)
{
	if (saved < 0)
		return;
	dup2(saved, 2);
	close(saved);
}

static int hex20(const char *s, uint8_t out[20])
{
	size_t n;

	if (!s || strlen(s) != 40)
		return -1;
	for (n = 0; n < 20; n++) {
		unsigned v;
		if (sscanf(s + 2 * n, "%2x", &v) != 1)
			return -1;
		out[n] = (uint8_t)v;
	}
	return 0;
}

/* The first primary key of the file: its fingerprint. */
static int pgp_primary(struct vkey *k, mpictr_err **err)
{
	rnp_identifier_iterator_t it = NULL;
	const char *fp = NULL;
	int rc = -1;

	if (rnp_identifier_iterator_create(k->ffi, &it, "fingerprint") !=
	    RNP_SUCCESS)
		return err_set(err, 0, "key '%s': RNP failed", k->path);
	while (rnp_identifier_iterator_next(it, &fp) == RNP_SUCCESS && fp) {
		rnp_key_handle_t h = NULL;
		bool prim = false;
		if (rnp_locate_key(k->ffi, "fingerprint", fp, &h) ==
			RNP_SUCCESS &&
		    h && rnp_key_is_primary(h, &prim) == RNP_SUCCESS && prim) {
			if (hex20(fp, k->fpr) == 0) {
				k->id = xstrdup(fp);
				rc = 0;
			}
		}
		rnp_key_handle_destroy(h);
		if (rc == 0)
			break;
	}
	rnp_identifier_iterator_destroy(it);
	if (rc < 0)
		err_set(err, 0, "key '%s': no OpenPGP primary key in it",
			k->path);
	return rc;
}

int vpgp_load(struct vkey *k, const uint8_t *data, size_t len, bool secret,
	      mpictr_err **err)
{
	rnp_ffi_t ffi = NULL;
	rnp_input_t in = NULL;
	rnp_result_t r;
	int q;
	uint32_t flags = RNP_LOAD_SAVE_PUBLIC_KEYS |
			 (secret ? RNP_LOAD_SAVE_SECRET_KEYS : 0);

	if (rnp_ffi_create(&ffi, "GPG", "GPG") != RNP_SUCCESS)
		return err_set(err, 0, "key '%s': RNP failed", k->path);
	k->ffi = ffi;
	k->kind = VKEY_PGP;
	/* RNP writes warnings (an armor without CRC line) to stderr; the
	 * verdicts are ours to report. RNP closes the descriptor. */
	{
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0 && rnp_ffi_set_log_fd(ffi, null) != RNP_SUCCESS)
			close(null);
	}
	k->desc = xstrdup("openpgp");
	if (rnp_input_from_memory(&in, data, len, false) != RNP_SUCCESS)
		return err_set(err, 0, "key '%s': RNP failed", k->path);
	q = quiet_begin();
	r = rnp_import_keys(ffi, in, flags, NULL);
	quiet_end(q);
	rnp_input_destroy(in);
	if (r != RNP_SUCCESS)
		return err_set(err, 0, "key '%s': not an OpenPGP key (%s)",
			       k->path, rnp_result_to_string(r));
	if (pgp_primary(k, err) < 0)
		return -1;
	if (secret) {
		rnp_key_handle_t h = NULL;
		bool have = false;
		rnp_locate_key(ffi, "fingerprint", k->id, &h);
		if (h)
			rnp_key_have_secret(h, &have);
		rnp_key_handle_destroy(h);
		if (!have)
			return err_set(err, 0,
				       "key '%s': an OpenPGP public key, not "
				       "a secret key",
				       k->path);
		k->secret = true;
	}
	return 0;
}

void vpgp_free(struct vkey *k)
{
	if (k->ffi)
		rnp_ffi_destroy(k->ffi);
	k->ffi = NULL;
}

/* The primary fingerprint of the key that made signature s. */
static int pgp_signer(rnp_op_verify_signature_t s, uint8_t fpr[20])
{
	rnp_key_handle_t key = NULL;
	char *fp = NULL;
	bool prim = false;
	int rc = -1;

	if (rnp_op_verify_signature_get_key(s, &key) != RNP_SUCCESS || !key)
		return -1;
	if (rnp_key_is_primary(key, &prim) == RNP_SUCCESS &&
	    (prim ? rnp_key_get_fprint(key, &fp)
		  : rnp_key_get_primary_fprint(key, &fp)) == RNP_SUCCESS)
		rc = hex20(fp, fpr);
	rnp_buffer_destroy(fp);
	rnp_key_handle_destroy(key);
	return rc;
}

/* What RNP says of a signature that did not verify: its issuer. */
static char *pgp_why(rnp_op_verify_t op, rnp_result_t r)
{
	rnp_op_verify_signature_t s = NULL;
	rnp_signature_handle_t h = NULL;
	char *kid = NULL, *why;

	if (rnp_op_verify_get_signature_at(op, 0, &s) == RNP_SUCCESS &&
	    rnp_op_verify_signature_get_handle(s, &h) == RNP_SUCCESS)
		rnp_signature_get_keyid(h, &kid);
	why = kid ? xasprintf("made by OpenPGP key id %s (%s)", kid,
			      rnp_result_to_string(r))
		  : xasprintf("%s", rnp_result_to_string(r));
	rnp_buffer_destroy(kid);
	rnp_signature_handle_destroy(h);
	return why;
}

int vkey_pgp_verify(const struct vkey *k, const uint8_t *msg, size_t len,
		    uint8_t **plain, size_t *plainlen, uint8_t fpr[20],
		    char **why, mpictr_err **err)
{
	rnp_input_t in = NULL;
	rnp_output_t out = NULL;
	rnp_op_verify_t op = NULL;
	rnp_op_verify_signature_t s = NULL;
	rnp_result_t r;
	size_t n = 0;
	int rc = 0, q;

	*plain = NULL;
	*why = NULL;
	if (k->kind != VKEY_PGP)
		return 0;
	if (rnp_input_from_memory(&in, msg, len, false) != RNP_SUCCESS ||
	    rnp_output_to_memory(&out, SIGOBJ_MAX_SIZE) != RNP_SUCCESS ||
	    rnp_op_verify_create(&op, k->ffi, in, out) != RNP_SUCCESS) {
		rc = err_set(err, 0, "RNP failed");
		goto out;
	}
	q = quiet_begin();
	r = rnp_op_verify_execute(op);
	quiet_end(q);
	if (rnp_op_verify_get_signature_count(op, &n) != RNP_SUCCESS ||
	    n == 0) {
		rc = err_set(err, 0,
			     "not a valid OpenPGP clear-signed message "
			     "(%s)",
			     rnp_result_to_string(r));
		goto out;
	}
	if (r == RNP_SUCCESS && n == 1 &&
	    rnp_op_verify_get_signature_at(op, 0, &s) == RNP_SUCCESS &&
	    rnp_op_verify_signature_get_status(s) == RNP_SUCCESS &&
	    pgp_signer(s, fpr) == 0) {
		uint8_t *buf = NULL;
		rnp_output_memory_get_buf(out, &buf, plainlen, false);
		*plain = xmalloc(*plainlen + 1);
		memcpy(*plain, buf, *plainlen);
		(*plain)[*plainlen] = 0;
		rc = 1;
	} else {
		*why = pgp_why(op, r);
		if (rnp_op_verify_get_signature_at(op, 0, &s) == RNP_SUCCESS &&
		    rnp_op_verify_signature_get_status(s) ==
			RNP_ERROR_SIGNATURE_INVALID)
			rc = 2;
	}
out:
	rnp_op_verify_destroy(op);
	rnp_input_destroy(in);
	rnp_output_destroy(out);
	return rc;
}

char *vkey_pgp_sign(const struct vkey *k, const char *text, size_t *outlen,
		    mpictr_err **err)
{
	rnp_input_t in = NULL;
	rnp_output_t out = NULL;
	rnp_op_sign_t op = NULL;
	rnp_key_handle_t key = NULL;
	rnp_result_t r = RNP_ERROR_GENERIC;
	char *res = NULL;

	if (rnp_locate_key(k->ffi, "fingerprint", k->id, &key) == RNP_SUCCESS &&
	    key &&
	    rnp_input_from_memory(&in, (const uint8_t *)text, strlen(text),
				  false) == RNP_SUCCESS &&
	    rnp_output_to_memory(&out, 0) == RNP_SUCCESS &&
	    rnp_op_sign_cleartext_create(&op, k->ffi, in, out) == RNP_SUCCESS &&
	    rnp_op_sign_set_hash(op, "SHA256") == RNP_SUCCESS &&
	    (r = rnp_op_sign_add_signature(op, key, NULL)) == RNP_SUCCESS &&
	    (r = rnp_op_sign_execute(op)) == RNP_SUCCESS) {
		uint8_t *buf = NULL;
		rnp_output_memory_get_buf(out, &buf, outlen, false);
		res = xstrndup((const char *)buf, *outlen);
	} else {
		err_set(
		    err, 0,
		    "sign with OpenPGP key '%s': %s (a passphrase-protected "
		    "key cannot be used)",
		    k->path, rnp_result_to_string(r));
	}
	rnp_op_sign_destroy(op);
	rnp_input_destroy(in);
	rnp_output_destroy(out);
	rnp_key_handle_destroy(key);
	return res;
}
