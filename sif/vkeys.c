/* vkeys.c - keys, digests and signatures for the verify plugin (vkeys.h).
 *
 * Prefix legend: EVP_/PEM_/BIO_/OSSL_ are OpenSSL 3 (DSSE's PEM keys:
 * Ed25519, ECDSA, RSA PKCS#1 v1.5, as sigstore's LoadVerifier uses them;
 * the SHA-2 digests). OpenPGP is in vkeys_pgp.c (RNP), or vkeys_nopgp.c
 * in the plugin without it. Everything else is ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/util.h"
#include "sif/sigobj.h"
#include "sif/vkeys.h"

#define KEY_FILE_MAX (1u << 20)

/* ---- digests ----------------------------------------------------------- */

static const EVP_MD *md_of(const char *alg)
{
	static const struct {
		const char *name, *ossl;
	} map[] = {
	    {"sha224", "SHA224"},	  {"sha256", "SHA256"},
	    {"sha384", "SHA384"},	  {"sha512", "SHA512"},
	    {"sha512_224", "SHA512-224"}, {"sha512_256", "SHA512-256"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (strcmp(alg, map[i].name) == 0)
			return EVP_get_digestbyname(map[i].ossl);
	return NULL;
}

static int md_init(const char *alg, EVP_MD_CTX **ctx, mpictr_err **err)
{
	const EVP_MD *md = md_of(alg);

	*ctx = md ? EVP_MD_CTX_new() : NULL;
	if (!md)
		return err_set(err, 0, "hash algorithm '%s' is not supported",
			       alg);
	if (!*ctx || EVP_DigestInit_ex(*ctx, md, NULL) != 1) {
		EVP_MD_CTX_free(*ctx);
		return err_set(err, 0, "hash '%s': OpenSSL failed", alg);
	}
	return 0;
}

static int md_final(EVP_MD_CTX *ctx, uint8_t *out, size_t *outlen,
		    mpictr_err **err)
{
	unsigned n = 0;
	int ok = EVP_DigestFinal_ex(ctx, out, &n);

	EVP_MD_CTX_free(ctx);
	*outlen = n;
	return ok == 1 ? 0 : err_set(err, 0, "hash: OpenSSL failed");
}

int vdigest_mem(const char *alg, const void *p, size_t n, uint8_t *out,
		size_t *outlen, mpictr_err **err)
{
	EVP_MD_CTX *ctx;

	if (md_init(alg, &ctx, err) < 0)
		return -1;
	EVP_DigestUpdate(ctx, p, n);
	return md_final(ctx, out, outlen, err);
}

int vdigest_fd_multi(const char *alg, int fd, const uint64_t *offs,
		     const uint64_t *lens, size_t n, uint8_t *out,
		     size_t *outlen, mpictr_err **err)
{
	const size_t bufsize = 1u << 20;
	cleanup_free uint8_t *buf = xmalloc(bufsize);
	EVP_MD_CTX *ctx;

	if (md_init(alg, &ctx, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t off = offs[i], len = lens[i];

		posix_fadvise(fd, (off_t)off, (off_t)len,
			      POSIX_FADV_SEQUENTIAL);
		while (len > 0) {
			size_t want = len < bufsize ? (size_t)len : bufsize;
			if (pread_full(fd, buf, want, (off_t)off) < 0) {
				EVP_MD_CTX_free(ctx);
				return err_set(err, errno ? errno : EIO,
					       "read");
			}
			EVP_DigestUpdate(ctx, buf, want);
			off += want;
			len -= want;
		}
	}
	return md_final(ctx, out, outlen, err);
}

int vdigest_fd(const char *alg, int fd, uint64_t off, uint64_t len,
	       uint8_t *out, size_t *outlen, mpictr_err **err)
{
	return vdigest_fd_multi(alg, fd, &off, &len, 1, out, outlen, err);
}

/* ---- PEM keys ---------------------------------------------------------- */

/* DSSE's key id of a public key, as go-securesystemslib's SHA256KeyID
 * writes it: the SSH fingerprint ("SHA256:" and unpadded base64 of the
 * SHA-256 of the key's SSH wire form). NULL for a key SSH cannot name. */
static void ssh_str(struct strbuf *sb, const void *p, size_t n)
{
	uint8_t l[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16),
			(uint8_t)(n >> 8), (uint8_t)n};

	sb_add(sb, (const char *)l, 4);
	sb_add(sb, p, n);
}

static void ssh_mpint(struct strbuf *sb, const EVP_PKEY *pk, const char *name)
{
	BIGNUM *bn = NULL;
	uint8_t buf[1040];
	int n;

	if (!EVP_PKEY_get_bn_param(pk, name, &bn))
		return;
	n = BN_num_bytes(bn);
	if (n >= 0 && (size_t)n < sizeof(buf)) {
		buf[0] = 0;
		BN_bn2bin(bn, buf + 1);
		/* a leading zero byte when the top bit is set */
		if (n > 0 && (buf[1] & 0x80))
			ssh_str(sb, buf, (size_t)n + 1);
		else
			ssh_str(sb, buf + 1, (size_t)n);
	}
	BN_free(bn);
}

static char *dsse_key_id(EVP_PKEY *pk, const char **desc)
{
	struct strbuf sb = STRBUF_INIT;
	uint8_t pub[200], dg[32];
	size_t n = 0, dl;
	char *b64, *id = NULL;

	if (EVP_PKEY_is_a(pk, "ED25519")) {
		*desc = "ed25519";
		if (EVP_PKEY_get_raw_public_key(pk, pub, &(size_t){32}) == 1) {
			ssh_str(&sb, "ssh-ed25519", 11);
			ssh_str(&sb, pub, 32);
		}
	} else if (EVP_PKEY_is_a(pk, "EC")) {
		char curve[32] = "";
		*desc = "ecdsa";
		EVP_PKEY_get_utf8_string_param(pk, OSSL_PKEY_PARAM_GROUP_NAME,
					       curve, sizeof(curve), NULL);
		EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_PUB_KEY,
						pub, sizeof(pub), &n);
		if (strcmp(curve, "prime256v1") == 0 && n) {
			ssh_str(&sb, "ecdsa-sha2-nistp256", 19);
			ssh_str(&sb, "nistp256", 8);
			ssh_str(&sb, pub, n);
		} else if (strcmp(curve, "secp384r1") == 0 && n) {
			ssh_str(&sb, "ecdsa-sha2-nistp384", 19);
			ssh_str(&sb, "nistp384", 8);
			ssh_str(&sb, pub, n);
		}
	} else if (EVP_PKEY_is_a(pk, "RSA")) {
		*desc = "rsa";
		ssh_str(&sb, "ssh-rsa", 7);
		ssh_mpint(&sb, pk, OSSL_PKEY_PARAM_RSA_E);
		ssh_mpint(&sb, pk, OSSL_PKEY_PARAM_RSA_N);
	} else {
		*desc = "unknown";
	}
	if (sb.len &&
	    vdigest_mem("sha256", sb.buf, sb.len, dg, &dl, NULL) == 0) {
		b64 = b64_encode(dg, dl, false);
		id = xasprintf("SHA256:%s", b64);
		free(b64);
	}
	sb_free(&sb);
	return id ? id : xstrdup("");
}

static int pem_load(struct vkey *k, const char *text, size_t len, bool secret,
		    mpictr_err **err)
{
	BIO *bio = BIO_new_mem_buf(text, (int)len);
	EVP_PKEY *pk = NULL;
	const char *desc = "unknown";

	if (!bio)
		return err_set(err, ENOMEM, "key '%s'", k->path);
	pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
	if (pk) {
		k->secret = true;
	} else if (!secret) {
		BIO_reset(bio);
		pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	}
	BIO_free(bio);
	if (!pk)
		return err_set(err, 0,
			       "key '%s': not a PEM %s key (or an encrypted "
			       "one, which mpictr cannot use)",
			       k->path,
			       secret ? "private" : "public or private");
	k->pkey = pk;
	k->id = dsse_key_id(pk, &desc);
	k->desc = xstrdup(desc);
	if (strcmp(desc, "unknown") == 0)
		return err_set(err, 0,
			       "key '%s': an unsupported key type (Ed25519, "
			       "ECDSA and RSA are)",
			       k->path);
	return 0;
}

bool vkey_dsse_verify(const struct vkey *k, const char *hash,
		      const uint8_t *msg, size_t len, const uint8_t *sig,
		      size_t siglen)
{
	EVP_MD_CTX *ctx;
	const EVP_MD *md = NULL;
	bool ok;

	if (k->kind != VKEY_PEM || !k->pkey)
		return false;
	if (!EVP_PKEY_is_a(k->pkey, "ED25519")) {
		md = md_of(hash ? hash : "sha256");
		if (!md)
			return false;
	}
	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestVerifyInit(ctx, NULL, md, NULL, k->pkey) == 1 &&
	     EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

uint8_t *vkey_dsse_sign(const struct vkey *k, const uint8_t *msg, size_t len,
			size_t *siglen, mpictr_err **err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const EVP_MD *md =
	    EVP_PKEY_is_a(k->pkey, "ED25519") ? NULL : EVP_sha256();
	uint8_t *sig = NULL;
	size_t n = 0;

	if (ctx && EVP_DigestSignInit(ctx, NULL, md, NULL, k->pkey) == 1 &&
	    EVP_DigestSign(ctx, NULL, &n, msg, len) == 1) {
		sig = xmalloc(n ? n : 1);
		if (EVP_DigestSign(ctx, sig, &n, msg, len) != 1) {
			free(sig);
			sig = NULL;
		}
	}
	EVP_MD_CTX_free(ctx);
	if (!sig)
		err_set(err, 0, "sign with key '%s': OpenSSL failed", k->path);
	*siglen = n;
	return sig;
}

int vkey_load(const char *path, bool secret, struct vkey *k, mpictr_err **err)
{
	cleanup_free char *text = NULL;
	size_t len = 0;
	int rc;

	memset(k, 0, sizeof(*k));
	k->path = xstrdup(path);
	text = read_file(path, KEY_FILE_MAX, &len);
	if (!text) {
		err_set(err, errno, "key '%s'", path);
		vkey_free(k);
		return -1;
	}
	if (sigobj_key_is_pgp((const uint8_t *)text, len))
		rc = vpgp_load(k, (const uint8_t *)text, len, secret, err);
	else
		rc = pem_load(k, text, len, secret, err);
	if (rc < 0) {
		vkey_free(k);
		return -1;
	}
	return 0;
}

void vkey_free(struct vkey *k)
{
	if (k->pkey)
		EVP_PKEY_free(k->pkey);
	vpgp_free(k);
	free(k->path);
	free(k->desc);
	free(k->id);
	memset(k, 0, sizeof(*k));
}
