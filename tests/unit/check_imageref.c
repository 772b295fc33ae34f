/* check_imageref.c - image references (config/imageref.c) and the image
 * config reader (config/ociconfig.c): every SOURCE form, Docker Hub's
 * normalization, and what each refuses. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "config/imageref.h"
#include "config/ociconfig.h"

static void expect(const char *s, enum image_transport t, const char *user,
		   const char *reg, const char *repo, const char *tag,
		   const char *digest, const char *path)
{
	struct image_ref r;
	mpictr_err *err = NULL;

	ck_assert_msg(image_ref_parse(s, &r, &err) == 0, "%s: %s", s,
		      err ? mpictr_err_message(err) : "");
	ck_assert_int_eq(r.transport, t);
	ck_assert_pstr_eq(r.user, user);
	ck_assert_pstr_eq(r.registry, reg);
	ck_assert_pstr_eq(r.repository, repo);
	ck_assert_pstr_eq(r.tag, tag);
	ck_assert_pstr_eq(r.digest, digest);
	ck_assert_pstr_eq(r.path, path);
	image_ref_free(&r);
}

#define HUB IMAGE_REF_DOCKER_HUB
#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_registry_forms)
{
	expect("docker://ubuntu:22.04", IMAGE_REF_DOCKER, NULL, HUB,
	       "library/ubuntu", "22.04", NULL, NULL);
	expect("debian", IMAGE_REF_DOCKER, NULL, HUB, "library/debian",
	       "latest", NULL, NULL);
	expect("docker.io/nvidia/cuda:12.2", IMAGE_REF_DOCKER, NULL, HUB,
	       "nvidia/cuda", "12.2", NULL, NULL);
	expect("docker://alice@127.0.0.1:5000/test/busybox:1",
	       IMAGE_REF_DOCKER, "alice", "127.0.0.1:5000", "test/busybox",
	       "1", NULL, NULL);
	expect("nvcr.io#nvidia/pytorch:24.04-py3", IMAGE_REF_DOCKER, NULL,
	       "nvcr.io", "nvidia/pytorch", "24.04-py3", NULL, NULL);
	expect("bob@localhost:5000#x/y", IMAGE_REF_DOCKER, "bob",
	       "localhost:5000", "x/y", "latest", NULL, NULL);
	expect("docker://localhost/a@" D64, IMAGE_REF_DOCKER, NULL,
	       "localhost", "a", NULL, D64, NULL);
	expect("quay.io/a/b:t@" D64, IMAGE_REF_DOCKER, NULL, "quay.io", "a/b",
	       "t", D64, NULL);
}
END_TEST

START_TEST(test_local_forms)
{
	expect("oci:dir", IMAGE_REF_OCI_DIR, NULL, NULL, NULL, NULL, NULL,
	       "dir");
	expect("oci:/a/b:latest", IMAGE_REF_OCI_DIR, NULL, NULL, NULL,
	       "latest", NULL, "/a/b");
	expect("oci-archive:x.tar", IMAGE_REF_OCI_ARCHIVE, NULL, NULL, NULL,
	       NULL, NULL, "x.tar");
	expect("docker-archive:x.tar:test/busybox:1", IMAGE_REF_DOCKER_ARCHIVE,
	       NULL, NULL, NULL, "test/busybox:1", NULL, "x.tar");
}
END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {
	    "",	       "docker://",	   "Upper/Case",   "ftp://x/y",
	    "a:b:c",   "x@sha256:12",	   "oci:",	   "oci::tag",
	    "x:",      "docker://a/b:t/x", "@host#repo",   "a#",
	    "r#a:-bad", "a//b",		   "a\tb",	   "-a",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct image_ref r;
		mpictr_err *err = NULL;
		ck_assert_msg(image_ref_parse(bad[i], &r, &err) == -1,
			      "'%s' was accepted", bad[i]);
		ck_assert_ptr_nonnull(strstr(mpictr_err_message(err),
					     "image reference"));
		mpictr_err_free(err);
	}
}
END_TEST

START_TEST(test_pull_source_and_names)
{
	struct image_ref r;
	mpictr_err *err = NULL;
	char *s;

	ck_assert(image_ref_is_pull_source("docker://x"));
	ck_assert(image_ref_is_pull_source("nvcr.io#nvidia/x"));
	ck_assert(image_ref_is_pull_source("oci-archive:x.tar"));
	ck_assert(!image_ref_is_pull_source("img.sif"));
	ck_assert(!image_ref_is_pull_source("./dir#1/img.sif"));
	ck_assert_int_eq(image_ref_parse("docker://ubuntu:22.04", &r, &err), 0);
	s = image_ref_default_out(&r);
	ck_assert_str_eq(s, "ubuntu_22.04.sif");
	free(s);
	s = image_ref_string(&r);
	ck_assert_str_eq(s, "docker://" HUB "/library/ubuntu:22.04");
	free(s);
	image_ref_free(&r);
	ck_assert_int_eq(image_ref_parse("oci-archive:/x/img.tar", &r, &err),
			 0);
	s = image_ref_default_out(&r);
	ck_assert_str_eq(s, "img.sif");
	free(s);
	image_ref_free(&r);
}
END_TEST

START_TEST(test_oci_config)
{
	static const char ok[] =
	    " {\"Env\": [\"PATH=/bin\", \"X=a\\u00e9\\ud83d\\ude00\"], "
	    "\"Entrypoint\": null, \"Cmd\": [\"sh\", \"-c\", \"x\\\"y\"], "
	    "\"Labels\": {\"a\": [1, 2.5e3, true, {}]}, "
	    "\"WorkingDir\": \"/w\", \"User\": \"0:0\"} ";
	static const char described[] =
	    "{\"ExposedPorts\": {\"80/tcp\": {}, \"53/udp\": {}}, "
	    "\"Volumes\": {\"/data\": {}}, \"StopSignal\": \"SIGINT\", "
	    "\"Labels\": {\"a\": \"1\", \"b\": \"x y\"}, \"User\": \"1000\"}";
	static const char odd[] = "{\"StopSignal\": 9, \"Volumes\": [\"/v\"], "
				  "\"Entrypoint\": [\"e\"]}";
	static const char *const bad[] = {
	    "", "[]", "{", "{\"Cmd\": [1]}", "{\"Env\": \"x\"}",
	    "{\"Cmd\": [], \"Cmd\": []}", "{\"a\": 1,}", "{\"a\": 01}",
	    "{\"a\": \"\\ud800\"}", "{\"a\": \"x\ty\"}", "{} x",
	    "{\"a\": \"\\u0000\"}",
	    "{\"Labels\": {\"a\" \"b\"}}", "{\"Labels\": {\"a\": }}",
	    "{\"ExposedPorts\": {\"80/tcp\": {}, }}",
	};
	struct oci_config c;
	mpictr_err *err = NULL;

	ck_assert_int_eq(oci_config_parse(ok, strlen(ok), "t", &c, &err), 0);
	ck_assert_ptr_null(c.entrypoint);
	ck_assert_str_eq(c.cmd[2], "x\"y");
	ck_assert_str_eq(c.env[1], "X=a\xc3\xa9\xf0\x9f\x98\x80");
	ck_assert_str_eq(c.workdir, "/w");
	ck_assert(!oci_config_user_nonroot(&c));
	/* a label value that is not a string comes as its JSON text */
	ck_assert_str_eq(c.label_keys[0], "a");
	ck_assert_str_eq(c.label_values[0], "[1, 2.5e3, true, {}]");
	ck_assert_ptr_null(c.label_keys[1]);
	ck_assert_ptr_null(c.exposed_ports);
	oci_config_free(&c);
	/* what only describes the image, of another type: skipped */
	ck_assert_int_eq(oci_config_parse(odd, strlen(odd), "t", &c, &err), 0);
	ck_assert_ptr_null(c.stop_signal);
	ck_assert_ptr_null(c.volumes);
	ck_assert_str_eq(c.entrypoint[0], "e");
	oci_config_free(&c);
	ck_assert_int_eq(oci_config_parse(described, strlen(described), "t",
					  &c, &err),
			 0);
	ck_assert_str_eq(c.exposed_ports[0], "80/tcp");
	ck_assert_str_eq(c.exposed_ports[1], "53/udp");
	ck_assert_ptr_null(c.exposed_ports[2]);
	ck_assert_str_eq(c.volumes[0], "/data");
	ck_assert_str_eq(c.stop_signal, "SIGINT");
	ck_assert_str_eq(c.label_keys[1], "b");
	ck_assert_str_eq(c.label_values[1], "x y");
	ck_assert_ptr_null(c.label_keys[2]);
	ck_assert(oci_config_user_nonroot(&c));
	oci_config_free(&c);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		ck_assert_msg(oci_config_parse(bad[i], strlen(bad[i]), "t", &c,
					       &err) == -1,
			      "'%s' was accepted", bad[i]);
		ck_assert_ptr_nonnull(err);
		mpictr_err_free(err);
		err = NULL;
	}
}
END_TEST

Suite *suite_imageref(void);
Suite *suite_imageref(void)
{
	Suite *s = suite_create("imageref");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_registry_forms);
	tcase_add_test(tc, test_local_forms);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_pull_source_and_names);
	tcase_add_test(tc, test_oci_config);
	suite_add_tcase(s, tc);
	return s;
}
