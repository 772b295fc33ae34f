/* check_sigobj.c - the signature-object parsers (sif/sigobj.c) without
 * cryptography: the forms of Apptainer's signature objects, the DSSE
 * envelope and its payload, the metadata round trip (our writer gives
 * Apptainer's bytes), the digested header and descriptor bytes against
 * the digests Apptainer signed, base64, and malformed input. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sif/sif.h"
#include "sif/sigobj.h"
#include "testutil.h"

static uint8_t *conf(const char *name, size_t *len)
{
	char *p = xasprintf("%s/../shared/conformance/sif/%s", test_root(), name);
	char *buf = read_file(p, 1 << 22, len);

	ck_assert_msg(buf != NULL, "cannot read %s", p);
	free(p);
	return (uint8_t *)buf;
}

/* The data of the first signature object of a conformance image. */
static const uint8_t *sig_data(const uint8_t *f, size_t *len)
{
	for (int i = 0; i < 48; i++) {
		const uint8_t *d = f + 4096 + i * SIF_DESC_SIZE;
		int64_t off, size;
		if (d[4] != 1 || d[0] != 0x05 || d[1] != 0x40)
			continue;
		memcpy(&off, d + 17, 8);
		memcpy(&size, d + 25, 8);
		*len = (size_t)size;
		return f + off;
	}
	ck_abort_msg("no signature object");
	return NULL;
}

START_TEST(test_forms)
{
	static const struct {
		const char *file;
		enum sigobj_form f;
	} cases[] = {
	    {"one-group-signed-dsse.sif", SIGOBJ_DSSE},
	    {"one-group-signed-pgp.sif", SIGOBJ_PGP},
	    {"one-group-signed-legacy.sif", SIGOBJ_LEGACY},
	    {"one-group-signed-legacy-group.sif", SIGOBJ_LEGACY},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len, sl;
		uint8_t *f = conf(cases[i].file, &len);
		const uint8_t *s = sig_data(f, &sl);
		ck_assert_int_eq(sigobj_form(s, sl), cases[i].f);
		free(f);
	}
	ck_assert_int_eq(sigobj_form((const uint8_t *)"xyz", 3), SIGOBJ_UNKNOWN);
	ck_assert_int_eq(sigobj_form((const uint8_t *)"", 0), SIGOBJ_UNKNOWN);
}
END_TEST

/* The DSSE envelope parses; its payload is metadata that our writer
 * reproduces byte for byte; its digests are those of the header and
 * descriptor bytes we compute (checked through the writer's input). */
START_TEST(test_dsse_and_metadata)
{
	size_t len, sl;
	uint8_t *f = conf("one-group-signed-dsse.sif", &len);
	const uint8_t *s = sig_data(f, &sl);
	struct dsse_envelope e;
	struct sig_metadata m;
	mpictr_err *err = NULL;
	char *again;

	ck_assert_int_eq(dsse_parse(s, sl, &e, &err), 0);
	ck_assert_str_eq(e.payload_type, SIGOBJ_DSSE_TYPE);
	ck_assert_uint_eq(e.nsigs, 2);
	ck_assert_str_eq(e.sigs[0].keyid,
			 "SHA256:x6l8ZblpSSXGaPMCzySedWg88BwIFcz8jlPb6el0mFs");
	ck_assert_uint_eq(e.sigs[0].siglen, 64); /* Ed25519 */
	ck_assert_int_eq(sigmeta_parse(e.payload, e.payload_len, &m, &err), 0);
	ck_assert_uint_eq(m.nobjects, 2);
	ck_assert_uint_eq(m.objects[1].relative_id, 1);
	ck_assert_str_eq(m.header.alg, "sha256");
	again = sigmeta_format(&m);
	ck_assert_uint_eq(strlen(again), e.payload_len);
	ck_assert(memcmp(again, e.payload, e.payload_len) == 0);
	free(again);
	sigmeta_free(&m);
	dsse_envelope_free(&e);
	free(f);
}
END_TEST

START_TEST(test_digested_bytes)
{
	size_t len;
	uint8_t *f = conf("one-group.sif", &len);
	uint8_t hb[SIGOBJ_HEADER_BYTES], db[SIGOBJ_DESC_BYTES];

	sigobj_header_bytes(f, hb);
	ck_assert(memcmp(hb, f, 45) == 0);	     /* launch, magic, version */
	ck_assert(memcmp(hb + 45, f + 48, 16) == 0); /* the ID, not the arch */
	sigobj_descriptor_bytes(f + 4096 + SIF_DESC_SIZE, 1, db);
	ck_assert_uint_eq(db[0], 0x04);		 /* partition */
	ck_assert_uint_eq(db[4], 1);		 /* used */
	ck_assert_uint_eq(db[5], 1);		 /* relative ID, not 2 */
	ck_assert(memcmp(db + 13, f + 4096 + SIF_DESC_SIZE + 25, 8) == 0);
	free(f);
}
END_TEST

START_TEST(test_pae_and_base64)
{
	size_t n, dl;
	uint8_t *p = dsse_pae("t", (const uint8_t *)"ab", 2, &n);
	char *b;
	uint8_t *d;

	ck_assert_uint_eq(n, strlen("DSSEv1 1 t 2 ab"));
	ck_assert(memcmp(p, "DSSEv1 1 t 2 ab", n) == 0);
	free(p);
	b = b64_encode((const uint8_t *)"hello", 5, true);
	ck_assert_str_eq(b, "aGVsbG8=");
	free(b);
	b = b64_encode((const uint8_t *)"hello", 5, false);
	ck_assert_str_eq(b, "aGVsbG8");
	d = b64_decode(b, strlen(b), &dl);
	ck_assert_uint_eq(dl, 5);
	ck_assert(memcmp(d, "hello", 5) == 0);
	free(d);
	free(b);
	ck_assert_ptr_null(b64_decode("a$bc", 4, &dl));
	ck_assert_ptr_null(b64_decode("a", 1, &dl));
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad_env[] = {
	    "", "{", "[]", "{\"payloadType\":1}",
	    "{\"payloadType\":\"x\",\"payload\":\"!!\",\"signatures\":[]}",
	    "{\"payloadType\":\"x\",\"payload\":\"e30=\",\"signatures\":[]}",
	    "{\"payloadType\":\"x\",\"payload\":\"e30=\",\"signatures\":[{}]}",
	    "{\"payloadType\":\"x\",\"payload\":\"e30=\",\"signatures\":[{\"sig\":"
	    "\"\"}]}",
	    "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	};
	static const char *const bad_meta[] = {
	    "{}", "{\"version\":2}", "{\"version\":1}",
	    "{\"version\":1,\"header\":{\"digest\":\"sha256:00\"}}",
	    "{\"version\":1,\"header\":{\"digest\":\"md5:" /* unsupported */
	    "00000000000000000000000000000000\"},\"objects\":[]}",
	    "{\"version\":1,\"header\":{\"digest\":\"sha224:0000000000000000000"
	    "00000000000000000000000000000000000\"},\"objects\":[{\"relativeId\":"
	    "-1}]}",
	    "{\"version\":1.5}",
	};
	struct dsse_envelope e;
	struct sig_metadata m;

	for (size_t i = 0; i < ARRAY_SIZE(bad_env); i++) {
		mpictr_err *err = NULL;
		ck_assert_int_eq(dsse_parse((const uint8_t *)bad_env[i],
					    strlen(bad_env[i]), &e, &err),
				 -1);
		ck_assert(mpictr_err_message(err)[0]);
		mpictr_err_free(err);
		dsse_envelope_free(&e);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_meta); i++) {
		mpictr_err *err = NULL;
		ck_assert_msg(sigmeta_parse((const uint8_t *)bad_meta[i],
					    strlen(bad_meta[i]), &m, &err) == -1,
			      "accepted %s", bad_meta[i]);
		ck_assert(mpictr_err_message(err)[0]);
		mpictr_err_free(err);
	}
}
END_TEST

START_TEST(test_legacy_digest)
{
	static const char text[] =
	    "SIFHASH:\n0b7e0522460767c74abb4245bc0d3a27209a5aed111059faead54ffc"
	    "74a93759160ac9642d7a7df3038ece62f2fa9815\n";
	struct sig_digest d;
	mpictr_err *err = NULL;

	ck_assert_int_eq(sigobj_legacy_digest((const uint8_t *)text,
					      strlen(text), "sha384", &d, &err),
			 0);
	ck_assert_uint_eq(d.len, 48);
	ck_assert_uint_eq(d.value[0], 0x0b);
	ck_assert_int_eq(sigobj_legacy_digest((const uint8_t *)text,
					      strlen(text), "sha256", &d, &err),
			 -1);
	mpictr_err_free(err);
}
END_TEST

Suite *suite_sigobj(void);
Suite *suite_sigobj(void)
{
	Suite *s = suite_create("sigobj");
	TCase *tc = tcase_create("parse");

	if (test_have_conformance("check_sigobj", 3)) {
		tcase_add_test(tc, test_forms);
		tcase_add_test(tc, test_dsse_and_metadata);
		tcase_add_test(tc, test_digested_bytes);
	}
	tcase_add_test(tc, test_pae_and_base64);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_legacy_digest);
	suite_add_tcase(s, tc);
	return s;
}
