/* vkeys_nopgp.c - the OpenPGP part of vkeys.h in mpictr-verify.so, the
 * verify plugin without RNP: an OpenPGP key file is the host's cue to load
 * mpictr-verify-pgp.so instead (sif/verify_stub.c), so these are reached
 * only when no OpenPGP key was given: a signature they cannot check is
 * reported as made by a key not given. */
#include "sif/vpgp.h"

int vpgp_load(struct vkey *k, const uint8_t *data, size_t len, bool secret,
	      mpictr_err **err)
{
	(void)data;
	(void)len;
	(void)secret;
	return err_set(err, 0,
		       "key '%s': an OpenPGP key, which this plugin (without "
		       "RNP) cannot read",
		       k->path);
}

void vpgp_free(struct vkey *k)
{
	(void)k;
}

int vkey_pgp_verify(const struct vkey *k, const uint8_t *msg, size_t len,
		    uint8_t **plain, size_t *plainlen, uint8_t fpr[20],
		    char **why, mpictr_err **err)
{
	(void)k;
	(void)msg;
	(void)len;
	(void)plainlen;
	(void)fpr;
	(void)err;
	*plain = NULL;
	*why = NULL;
	return 0;
}

char *vkey_pgp_sign(const struct vkey *k, const char *text, size_t *outlen,
		    mpictr_err **err)
{
	(void)text;
	(void)outlen;
	err_set(err, 0, "sign with '%s': no OpenPGP support loaded", k->path);
	return NULL;
}
