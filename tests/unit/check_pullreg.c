/* check_pullreg.c - the registry side of `mpictr pull` that needs no
 * network: WWW-Authenticate challenges, base64, credential files (auth.json
 * / config.json, Enroot's netrc), and the image cache (paths, temporary
 * files, locks, tag references and index.json, clean). */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "pull/cache.h"
#include "pull/auth.h"
#include "pull/oci.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_challenge_bearer)
{
	struct reg_challenge ch;

	ck_assert_int_eq(
	    reg_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
				"service=\"registry.docker.io\",scope="
				"\"repository:library/debian:pull\"",
				&ch),
	    0);
	ck_assert_int_eq(ch.scheme, REG_AUTH_BEARER);
	ck_assert_str_eq(ch.realm, "https://auth.docker.io/token");
	ck_assert_str_eq(ch.service, "registry.docker.io");
	ck_assert_str_eq(ch.scope, "repository:library/debian:pull");
	ck_assert_ptr_null(ch.error);
	reg_challenge_free(&ch);
	ck_assert_int_eq(
	    reg_challenge_parse("bearer realm=\"r\",error=\"insufficient_scope"
				"\",scope=\"a:b\\\"c:pull\"",
				&ch),
	    0);
	ck_assert_str_eq(ch.error, "insufficient_scope");
	ck_assert_str_eq(ch.scope, "a:b\"c:pull");
	reg_challenge_free(&ch);
	ck_assert_int_eq(reg_challenge_parse("Basic realm=\"test\"", &ch), 0);
	ck_assert_int_eq(ch.scheme, REG_AUTH_BASIC);
	reg_challenge_free(&ch);
}
END_TEST

START_TEST(test_challenge_bad)
{
	struct reg_challenge ch;

	ck_assert_int_eq(reg_challenge_parse("Negotiate abc", &ch), -1);
	ck_assert_int_eq(reg_challenge_parse("Bearer service=\"x\"", &ch), -1);
	ck_assert_int_eq(
	    reg_challenge_parse("Bearer realm=\"unterminated", &ch), -1);
	ck_assert_int_eq(reg_challenge_parse("Bearer =x", &ch), -1);
}
END_TEST

START_TEST(test_base64)
{
	char *b = reg_base64("alice:s3cret", 12);
	size_t n = 0;
	char *d;

	ck_assert_str_eq(b, "YWxpY2U6czNjcmV0");
	d = reg_unbase64(b, &n);
	ck_assert_uint_eq(n, 12);
	ck_assert_str_eq(d, "alice:s3cret");
	free(b);
	free(d);
	b = reg_base64("a", 1);
	ck_assert_str_eq(b, "YQ==");
	d = reg_unbase64(b, &n);
	ck_assert_str_eq(d, "a");
	free(b);
	free(d);
	ck_assert_ptr_null(reg_unbase64("YQ=x", NULL));
	ck_assert_ptr_null(reg_unbase64("Y!==", NULL));
}
END_TEST

START_TEST(test_cred_keys)
{
	ck_assert(reg_cred_key_matches("https://index.docker.io/v1/",
				       REG_DOCKER_HUB));
	ck_assert(reg_cred_key_matches("docker.io", REG_DOCKER_HUB));
	ck_assert(reg_cred_key_matches("127.0.0.1:5000", "127.0.0.1:5000"));
	ck_assert(reg_cred_key_matches("https://nvcr.io", "nvcr.io"));
	ck_assert(reg_cred_key_matches("quay.io/team", "quay.io"));
	ck_assert(!reg_cred_key_matches("127.0.0.1:5001", "127.0.0.1:5000"));
	ck_assert(!reg_cred_key_matches("docker.io", "nvcr.io"));
	ck_assert(!reg_cred_key_matches("nvcr.io.evil.com", "nvcr.io"));
}
END_TEST

static const char netrc[] =
    "# enroot credentials\n"
    "machine nvcr.io login $oauthtoken password KEY1\n"
    "machine 127.0.0.1:5001\n  login alice\n  password s3cret\n"
    "machine 127.0.0.1:5001 login bob password b0b\n";

START_TEST(test_netrc)
{
	struct reg_cred c;
	mpictr_err *e = NULL;

	ck_assert_int_eq(
	    reg_netrc_find(netrc, strlen(netrc), "F", "nvcr.io", NULL, &c, &e),
	    1);
	ck_assert_str_eq(c.user, "$oauthtoken");
	ck_assert_str_eq(c.secret, "KEY1");
	ck_assert_str_eq(c.origin, "F");
	reg_cred_free(&c);
	ck_assert_int_eq(reg_netrc_find(netrc, strlen(netrc), "F",
					"127.0.0.1:5001", "bob", &c, &e),
			 1);
	ck_assert_str_eq(c.secret, "b0b");
	reg_cred_free(&c);
	ck_assert_int_eq(reg_netrc_find(netrc, strlen(netrc), "F",
					"127.0.0.1:5001", NULL, &c, &e),
			 1);
	ck_assert_str_eq(c.user, "alice");
	reg_cred_free(&c);
	ck_assert_int_eq(
	    reg_netrc_find(netrc, strlen(netrc), "F", "x.io", NULL, &c, &e), 0);
}
END_TEST

START_TEST(test_netrc_command_refused)
{
	static const char t[] = "machine nvcr.io login u password "
				"$(cat ~/key)\n";
	struct reg_cred c;
	mpictr_err *e = NULL;

	ck_assert_int_eq(
	    reg_netrc_find(t, strlen(t), "F", "nvcr.io", NULL, &c, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "command"));
	/* the secret is not in the message */
	ck_assert_ptr_null(strstr(mpictr_err_message(e), "key"));
	mpictr_err_free(e);
}
END_TEST

/* A HOME with the given auth.json text; the other variables unset. */
static char *fake_home(const char *auth_json, const char *docker_json)
{
	char tmpl[] = "/tmp/check-pullreg.XXXXXX";
	char *home = xstrdup(mkdtemp(tmpl));
	cleanup_free char *d1 = xasprintf("%s/.config", home);
	cleanup_free char *d2 = xasprintf("%s/.config/containers", home);
	cleanup_free char *d3 = xasprintf("%s/.docker", home);
	cleanup_free char *f1 = xasprintf("%s/auth.json", d2);
	cleanup_free char *f2 = xasprintf("%s/config.json", d3);

	mkdir(d1, 0700);
	mkdir(d2, 0700);
	mkdir(d3, 0700);
	if (auth_json)
		write_file(f1, auth_json, O_CREAT | O_TRUNC);
	if (docker_json)
		write_file(f2, docker_json, O_CREAT | O_TRUNC);
	setenv("HOME", home, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("REGISTRY_AUTH_FILE");
	unsetenv("DOCKER_CONFIG");
	unsetenv("ENROOT_CONFIG_PATH");
	return home;
}

START_TEST(test_cred_files)
{
	/* YWxpY2U6czNjcmV0 = alice:s3cret, Ym9iOmIwYg== = bob:b0b */
	cleanup_free char *home = fake_home(
	    "{\"auths\":{\"127.0.0.1:5001\":{\"auth\":\"YWxpY2U6czNjcmV0\"}}}",
	    "{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":"
	    "\"Ym9iOmIwYg==\"}}}");
	struct reg_cred c;
	mpictr_err *e = NULL;

	ck_assert_int_eq(reg_cred_find("127.0.0.1:5001", "r", NULL, &c, &e), 1);
	ck_assert_str_eq(c.user, "alice");
	ck_assert_str_eq(c.secret, "s3cret");
	ck_assert_ptr_nonnull(strstr(c.origin, "containers/auth.json"));
	reg_cred_free(&c);
	ck_assert_int_eq(reg_cred_find(REG_DOCKER_HUB, "r", NULL, &c, &e), 1);
	ck_assert_str_eq(c.user, "bob");
	ck_assert_ptr_nonnull(strstr(c.origin, ".docker/config.json"));
	reg_cred_free(&c);
	ck_assert_int_eq(reg_cred_find("127.0.0.1:5001", "r", "carol", &c, &e),
			 0);
	ck_assert_int_eq(reg_cred_find("other.io", "r", NULL, &c, &e), 0);
}
END_TEST

START_TEST(test_cred_duplicate_keys)
{
	cleanup_free char *home =
	    fake_home("{\"auths\":{},\"auths\":{}}", NULL);
	struct reg_cred c;
	mpictr_err *e = NULL;

	ck_assert_int_eq(reg_cred_find("127.0.0.1:5001", "r", NULL, &c, &e),
			 -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "auth.json"));
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "duplicate"));
	mpictr_err_free(e);
}
END_TEST

START_TEST(test_platform)
{
	char *p = oci_platform_wanted("arm64");

	ck_assert_str_eq(p, "linux/arm64");
	free(p);
	p = oci_platform_wanted("linux/arm/v7");
	ck_assert_str_eq(p, "linux/arm/v7");
	free(p);
	p = oci_platform_wanted(NULL);
	ck_assert(str_has_prefix(p, "linux/"));
	free(p);
}
END_TEST

#define D(c) "sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c
#define ENT(dg, plat) "{\"digest\": \"" dg "\", \"platform\": " plat "}"

/* The index entry oci_index_pick chooses for want, or NULL (its error in
 * *msg). */
static const char *pick(const char *index, const char *want, char **msg)
{
	static char dg[72];
	json_error_t je;
	json_t *j = json_loads(index, 0, &je);
	mpictr_err *e = NULL;
	int rc;

	ck_assert_ptr_nonnull(j);
	rc = oci_index_pick(j, want, "image 'x'", dg, &e);
	json_decref(j);
	if (msg)
		*msg = rc < 0 ? xstrdup(mpictr_err_message(e)) : NULL;
	mpictr_err_free(e);
	return rc < 0 ? NULL : dg;
}

/* One rule for the registry and the local sources: variants with their
 * defaults (arm64 is v8, arm v7), any variant only when none was asked
 * for and none has the default, attestations never. */
START_TEST(test_index_pick)
{
	const char *idx =
	    "{\"manifests\": ["
	    ENT(D("0"), "{\"os\": \"unknown\", \"architecture\": \"unknown\"}") ", "
	    ENT(D("1"), "{\"os\": \"linux\", \"architecture\": \"amd64\", \"variant\": \"v3\"}") ", "
	    ENT(D("2"), "{\"os\": \"linux\", \"architecture\": \"amd64\"}") ", "
	    ENT(D("3"), "{\"os\": \"linux\", \"architecture\": \"arm\", \"variant\": \"v6\"}") ", "
	    ENT(D("4"), "{\"os\": \"linux\", \"architecture\": \"arm\", \"variant\": \"v7\"}") ", "
	    ENT(D("5"), "{\"os\": \"linux\", \"architecture\": \"arm64\"}") ", "
	    ENT(D("6"), "{\"os\": \"linux\", \"architecture\": \"riscv64\", \"variant\": \"rva23\"}") ", "
	    ENT(D("7"), "{\"os\": \"windows\", \"architecture\": \"s390x\"}") "]}";
	char *msg = NULL;

	ck_assert_str_eq(pick(idx, "linux/amd64", NULL), D("2"));
	ck_assert_str_eq(pick(idx, "linux/amd64/v3", NULL), D("1"));
	ck_assert_str_eq(pick(idx, "linux/arm64", NULL), D("5"));
	ck_assert_str_eq(pick(idx, "linux/arm64/v8", NULL), D("5"));
	ck_assert_str_eq(pick(idx, "linux/arm", NULL), D("4"));
	ck_assert_str_eq(pick(idx, "linux/arm/v6", NULL), D("3"));
	ck_assert_str_eq(pick(idx, "linux/riscv64", NULL), D("6"));
	ck_assert_ptr_null(pick(idx, "linux/arm64/v9", &msg));
	ck_assert_ptr_nonnull(strstr(
	    msg, "image 'x': no manifest for linux/arm64/v9 in its index (it "
		 "has: linux/amd64/v3, linux/amd64, linux/arm/v6, linux/arm/v7, "
		 "linux/arm64, linux/riscv64/rva23, windows/s390x)"));
	ck_assert_ptr_nonnull(strstr(msg, "--arch"));
	free(msg);
	ck_assert_ptr_null(pick(idx, "linux/s390x", &msg));
	free(msg);
	ck_assert_ptr_null(pick(idx, "linux/unknown", &msg));
	free(msg);
	/* the chosen entry's digest is checked */
	ck_assert_ptr_null(pick("{\"manifests\": [" ENT("sha256:12", "{\"os\": "
				"\"linux\", \"architecture\": \"amd64\"}") "]}",
				"linux/amd64", &msg));
	ck_assert_ptr_nonnull(strstr(msg, "bad digest"));
	free(msg);
	ck_assert_ptr_null(pick("{\"manifests\": 1}", "linux/amd64", &msg));
	ck_assert_ptr_nonnull(strstr(msg, "without 'manifests'"));
	free(msg);
	ck_assert_ptr_null(pick("{\"manifests\": []}", "amd64", &msg));
	ck_assert_ptr_nonnull(strstr(msg, "not OS/ARCH"));
	free(msg);
}
END_TEST

START_TEST(test_oci_types)
{
	json_error_t je;
	json_t *j = json_loads("{\"manifests\": []}", 0, &je);
	json_t *l;
	enum layer_comp c = LAYER_TAR;
	mpictr_err *e = NULL;

	ck_assert(oci_is_index(oci_doc_type(j)));
	json_object_set_new(j, "config", json_object());
	ck_assert(oci_is_manifest(oci_doc_type(j)));
	json_object_set_new(j, "mediaType", json_integer(1));
	ck_assert_ptr_null(oci_doc_type(j));
	json_decref(j);
	ck_assert(oci_is_index(OCI_MT_DOCKER_LIST));
	ck_assert(!oci_is_index(OCI_MT_MANIFEST));
	ck_assert(oci_is_config("application/vnd.docker.container.image.v1+json"));
	ck_assert(!oci_is_config(NULL));

	l = json_loads("{\"mediaType\": \"application/vnd.oci.image.layer.v1.tar+zstd\"}", 0, &je);
	ck_assert_int_eq(oci_layer_check(l, 0, "x", &c, &e), 0);
	ck_assert_int_eq(c, LAYER_ZSTD);
	json_object_set_new(l, "urls", json_array());
	ck_assert_int_eq(oci_layer_check(l, 0, "x", &c, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "layer 1 is a foreign layer"));
	mpictr_err_free(e);
	e = NULL;
	json_decref(l);
	l = json_loads("{\"mediaType\": \"application/vnd.oci.image.layer.nondistributable.v1.tar\"}", 0, &je);
	ck_assert_int_eq(oci_layer_check(l, 1, "x", &c, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "layer 2 is a foreign layer"));
	mpictr_err_free(e);
	e = NULL;
	json_decref(l);
	l = json_loads("{\"mediaType\": \"text/plain\"}", 0, &je);
	ck_assert_int_eq(oci_layer_check(l, 0, "x", &c, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "unsupported media type 'text/plain'"));
	mpictr_err_free(e);
	json_decref(l);
}
END_TEST

static char *tmpcache(void)
{
	char tmpl[] = "/tmp/check-cache.XXXXXX";
	char *d = mkdtemp(tmpl);
	return xasprintf("%s/c", d);
}

START_TEST(test_cache_dir_choose)
{
	mpictr_err *e = NULL;
	char *d;

	unsetenv("MPICTR_CACHEDIR");
	setenv("XDG_CACHE_HOME", "/x", 1);
	d = cache_dir_choose(NULL, NULL, NULL, &e);
	ck_assert_str_eq(d, "/x/mpictr");
	free(d);
	d = cache_dir_choose(NULL, "/site", NULL, &e);
	ck_assert_str_eq(d, "/site");
	free(d);
	setenv("MPICTR_CACHEDIR", "/env", 1);
	d = cache_dir_choose(NULL, "/site", NULL, &e);
	ck_assert_str_eq(d, "/env");
	free(d);
	d = cache_dir_choose("/opt", "/site", NULL, &e);
	ck_assert_str_eq(d, "/opt");
	free(d);
	unsetenv("MPICTR_CACHEDIR");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/h", 1);
	d = cache_dir_choose(NULL, NULL, NULL, &e);
	ck_assert_str_eq(d, "/h/.cache/mpictr");
	free(d);
	/* another environment than the process's (a SPANK task's job) */
	{
		char *env[] = {"HOME=/job", NULL}, *none[] = {"X=1", NULL};
		struct passwd *pw = getpwuid(getuid());

		d = cache_dir_choose(NULL, NULL, env, &e);
		ck_assert_str_eq(d, "/job/.cache/mpictr");
		free(d);
		/* no HOME there: the user database, not this HOME */
		d = cache_dir_choose(NULL, NULL, none, &e);
		ck_assert_ptr_nonnull(pw);
		ck_assert_ptr_nonnull(d);
		ck_assert_int_eq(strncmp(d, pw->pw_dir, strlen(pw->pw_dir)), 0);
		ck_assert_str_eq(d + strlen(pw->pw_dir), "/.cache/mpictr");
		free(d);
	}
}
END_TEST

START_TEST(test_cache_layout)
{
	cleanup_free char *dir = tmpcache();
	cleanup_free char *tmp = NULL, *blob = NULL, *idx = NULL;
	cleanup_free char *man = NULL, *top = NULL, *text = NULL;
	struct cache c;
	mpictr_err *e = NULL;
	struct stat st;
	int fd;

	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	blob = cache_blob_path(&c, "sha256:" HEX64);
	ck_assert_ptr_nonnull(strstr(blob, "/c/blobs/sha256/" HEX64));
	ck_assert(!cache_has_blob(&c, "sha256:" HEX64, UINT64_MAX));
	fd = cache_tmpfile(&c, "blob", &tmp, &e);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "abc", 3), 3);
	close(fd);
	ck_assert_ptr_nonnull(strstr(tmp, "/tmp/blob."));
	ck_assert_int_eq(cache_commit_blob(&c, tmp, "sha256:" HEX64, &e), 0);
	ck_assert(cache_has_blob(&c, "sha256:" HEX64, 3));
	ck_assert(!cache_has_blob(&c, "sha256:" HEX64, 4));
	ck_assert_int_eq(cache_ref_set(&c, "h:1", "test/img", "v1",
				       "sha256:" HEX64, "sha256:" HEX64,
				       "linux/amd64",
				       "application/vnd.oci.image.manifest.v1+"
				       "json",
				       &e),
			 0);
	ck_assert_int_eq(cache_ref_get(&c, "h:1", "test/img", "v1", &man, &top),
			 1);
	ck_assert_str_eq(man, "sha256:" HEX64);
	ck_assert_int_eq(cache_ref_get(&c, "h:1", "test/img", "v2", &man, NULL),
			 0);
	idx = xasprintf("%s/index.json", dir);
	text = read_file(idx, 1 << 20, NULL);
	ck_assert_ptr_nonnull(strstr(text, "\"h:1/test/img:v1\""));
	ck_assert_ptr_nonnull(strstr(text, "\"size\":3"));
	free(text);
	text = cache_list_text(&c);
	ck_assert_ptr_nonnull(strstr(text, "0 images"));
	ck_assert_ptr_nonnull(strstr(text, "1 blobs 3 bytes"));
	cache_close(&c);
}
END_TEST

START_TEST(test_cache_clean_busy)
{
	cleanup_free char *dir = tmpcache();
	struct cache c;
	mpictr_err *e = NULL;
	uint64_t freed = 0;
	pid_t pid;
	int status;

	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	/* fcntl locks are per process: the clean runs in a child */
	pid = fork();
	if (pid == 0) {
		int rc = cache_clean(dir, true, &freed, &e);
		_exit(rc < 0 && mpictr_err_errno(e) == EBUSY ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	cache_close(&c);
	ck_assert_int_eq(cache_clean(dir, true, &freed, &e), 0);
}
END_TEST

START_TEST(test_cache_refuses_open_dir)
{
	cleanup_free char *dir = tmpcache();
	struct cache c;
	mpictr_err *e = NULL;

	ck_assert_int_eq(mkdir(dir, 0777), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	ck_assert_int_eq(cache_open(&c, dir, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "writable by"));
	mpictr_err_free(e);
	e = NULL;
	ck_assert_int_eq(chmod(dir, 01777), 0); /* sticky is no better */
	ck_assert_int_eq(cache_open(&c, dir, &e), -1);
	mpictr_err_free(e);
	e = NULL;
	ck_assert_int_eq(chmod(dir, 02775), 0); /* a group's shared cache */
	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	ck_assert(c.shared);
	{
		cleanup_free char *sub = xasprintf("%s/images", dir);
		cleanup_free char *lk = xasprintf("%s/locks/cache.lock", dir);
		struct stat st;
		/* ours: made sticky, the directories too */
		ck_assert_int_eq(stat(dir, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 03775);
		ck_assert_int_eq(stat(sub, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 03775);
		ck_assert_int_eq(stat(lk, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0664);
	}
	cache_close(&c);
}
END_TEST

/* A lock another process holds: waited for MPICTR_CACHE_LOCK_WAIT
 * seconds, then an error naming the holder. */
START_TEST(test_cache_lock_bounded)
{
	cleanup_free char *dir = tmpcache();
	cleanup_free char *pidtext = NULL;
	struct cache c;
	mpictr_err *e = NULL;
	int pipefd[2], lock;
	char b;
	pid_t pid;

	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		int fd = cache_lock(&c, "held", &e);
		ssize_t n = write(pipefd[1], fd >= 0 ? "y" : "n", 1);
		(void)n;
		pause(); /* holds it until killed */
		_exit(0);
	}
	ck_assert_int_eq(read(pipefd[0], &b, 1), 1);
	ck_assert_int_eq(b, 'y');
	c.lock_wait = 1;
	lock = cache_lock(&c, "held", &e);
	ck_assert_int_eq(lock, -1);
	ck_assert_int_eq(mpictr_err_errno(e), ETIMEDOUT);
	pidtext = xasprintf("pid %d (uid %u)", (int)pid, (unsigned)geteuid());
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), pidtext));
	mpictr_err_free(e);
	e = NULL;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	lock = cache_lock(&c, "held", &e);
	ck_assert_int_ge(lock, 0);
	cache_unlock(lock);
	close(pipefd[0]);
	close(pipefd[1]);
	cache_close(&c);
}
END_TEST

/* Nothing below the root is followed through a symlink: a lock, a tmp/
 * name, tmp/ itself. */
START_TEST(test_cache_no_symlinks)
{
	cleanup_free char *dir = tmpcache();
	cleanup_free char *victim = xasprintf("%s.victim", dir);
	cleanup_free char *lk = NULL, *tmpd = NULL;
	struct cache c;
	mpictr_err *e = NULL;
	uint64_t freed = 0;
	struct stat st;

	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	cache_close(&c);
	ck_assert_int_eq(write_file(victim, "x", O_WRONLY | O_CREAT | O_EXCL),
			 0);
	ck_assert_int_eq(chmod(victim, 0600), 0);
	lk = xasprintf("%s/locks/evil.lock", dir);
	ck_assert_int_eq(symlink(victim, lk), 0);
	ck_assert_int_eq(cache_open(&c, dir, &e), 0);
	ck_assert_int_eq(cache_lock(&c, "evil", &e), -1);
	mpictr_err_free(e);
	e = NULL;
	cache_close(&c);
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	/* tmp/ swapped for a symlink to a directory holding the victim */
	tmpd = xasprintf("%s/tmp", dir);
	ck_assert_int_eq(rmdir(tmpd), 0);
	{
		cleanup_free char *vdir = xstrdup(victim);
		*strrchr(vdir, '/') = '\0';
		ck_assert_int_eq(symlink(vdir, tmpd), 0);
	}
	ck_assert_int_eq(cache_clean(dir, false, &freed, &e), -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(e), "symlink"));
	mpictr_err_free(e);
	ck_assert_int_eq(stat(victim, &st), 0);
	unlink(victim);
}
END_TEST

START_TEST(test_digest_valid)
{
	ck_assert(cache_digest_valid("sha256:" HEX64));
	ck_assert(!cache_digest_valid("sha256:" HEX64 "0"));
	ck_assert(!cache_digest_valid("sha512:" HEX64));
	ck_assert(!cache_digest_valid("sha256:0123456789ABCDEF0123456789abcdef"
				      "0123456789abcdef0123456789abcdef"));
	ck_assert(!cache_digest_valid(NULL));
}
END_TEST

Suite *suite_pullreg(void);
Suite *suite_pullreg(void)
{
	Suite *s = suite_create("pullreg");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_challenge_bearer);
	tcase_add_test(tc, test_challenge_bad);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_cred_keys);
	tcase_add_test(tc, test_netrc);
	tcase_add_test(tc, test_netrc_command_refused);
	tcase_add_test(tc, test_cred_files);
	tcase_add_test(tc, test_cred_duplicate_keys);
	tcase_add_test(tc, test_platform);
	tcase_add_test(tc, test_index_pick);
	tcase_add_test(tc, test_oci_types);
	tcase_add_test(tc, test_cache_dir_choose);
	tcase_add_test(tc, test_cache_layout);
	tcase_add_test(tc, test_cache_clean_busy);
	tcase_add_test(tc, test_cache_refuses_open_dir);
	tcase_add_test(tc, test_cache_lock_bounded);
	tcase_add_test(tc, test_cache_no_symlinks);
	tcase_add_test(tc, test_digest_valid);
	suite_add_tcase(s, tc);
	return s;
}
