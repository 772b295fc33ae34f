/* client.c - the registry client (client.h): HTTP API v2 requests with
 * libcurl, Basic and Bearer authentication (distribution's token.md),
 * bounded retries of 429/503, manifests and indexes resolved to this
 * platform, blobs streamed into the cache with their sha256 and size
 * checked, several at once.
 *
 * Prefix legend: curl_* is libcurl, json_* jansson, EVP_* libcrypto.
 * Secrets: the Authorization header lives in struct client only; curl
 * drops it on a redirect to another host or port (CURLOPT_UNRESTRICTED_AUTH
 * stays off), so a blob's CDN never sees it; nothing logs it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "config/imageref.h"
#include "pull/cache.h"
#include "pull/auth.h"
#include "pull/client.h"
#include "pull/oci.h"
#include "pull/pull.h"

#define ACCEPT_ALL                                                             \
	"Accept: " OCI_MT_INDEX ", " OCI_MT_MANIFEST ", " OCI_MT_DOCKER_LIST   \
	", " OCI_MT_DOCKER_MANIFEST
#define TOKEN_MAX (1u << 20)
#define ERRBODY_MAX (64u << 10)
#define INDEX_DEPTH 4

struct client {
	const struct image_ref *ref;
	const struct reg_opts *o;
	struct cache *cache;
	const char *what; /* the image, for messages */
	char *base;	  /* "https://host[:port]" */
	bool plain;	  /* --insecure: http:// */
	pthread_mutex_t mu;
	char *authz;	   /* "Authorization: ..." or NULL (secret) */
	unsigned auth_gen; /* bumped with each new authz */
	int cred_state;	   /* 0: not looked up, 1: have, 2: none */
	long last_status;  /* of the last request (with retries) */
	struct reg_cred cred;
	/* progress of the blob downloads */
	uint64_t all_done, all_total;
};

/* Where a response body goes: memory up to max, or fd with its sha256
 * and a limit (stop at limit + 1 bytes). Error bodies go to memory. */
struct sink {
	struct strbuf mem;
	size_t max;
	int fd;
	EVP_MD_CTX *md;
	uint64_t limit;
	uint64_t got;
	bool over;
	int werrno;
	long *status;
	struct client *cl;
	const struct reg_progress *prog; /* template for byte events */
	uint64_t last_report;
};

struct resp {
	long status;
	char *ctype;
	char *digest;
	char *www_auth;
	long retry_after;
};

static void resp_clear(struct resp *r)
{
	free(r->ctype);
	free(r->digest);
	free(r->www_auth);
	memset(r, 0, sizeof(*r));
	r->retry_after = -1;
}

static void progress(struct client *cl, struct reg_progress *p)
{
	if (!cl->o->progress)
		return;
	pthread_mutex_lock(&cl->mu);
	p->all_done = cl->all_done;
	p->all_total = cl->all_total;
	cl->o->progress(p, cl->o->progress_data);
	pthread_mutex_unlock(&cl->mu);
}

static void step(struct client *cl, const char *text)
{
	struct reg_progress p = {.ev = REG_EV_STEP, .text = text};
	progress(cl, &p);
}

/* ---- libcurl callbacks ------------------------------------------------------
 */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;

	if (*s->status < 200 || *s->status > 299 || s->fd < 0) {
		size_t max = s->fd < 0 ? s->max : ERRBODY_MAX;
		if (s->mem.len + n > max) {
			s->over = true;
			return 0;
		}
		sb_add(&s->mem, data, n);
		return n;
	}
	if (s->got + n > s->limit) { /* longer than its descriptor says */
		s->got += n;
		s->over = true;
		return 0;
	}
	if (write_full(s->fd, data, n) < 0) {
		s->werrno = errno;
		return 0;
	}
	EVP_DigestUpdate(s->md, data, n);
	s->got += n;
	if (s->prog && s->got - s->last_report >= (1u << 20)) {
		struct reg_progress p = *s->prog;
		pthread_mutex_lock(&s->cl->mu);
		s->cl->all_done += s->got - s->last_report;
		pthread_mutex_unlock(&s->cl->mu);
		s->last_report = s->got;
		p.ev = REG_EV_BLOB_BYTES;
		p.done = s->got;
		progress(s->cl, &p);
	}
	return n;
}

static char *header_value(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);
	const char *v;

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return NULL;
	v = line + k + 1;
	while (v < line + n && (*v == ' ' || *v == '\t'))
		v++;
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	return v <= line + n ? xstrndup(v, (size_t)(line + n - v)) : NULL;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
	struct resp *r = ud;
	size_t n = size * nmemb;
	char *v;
	long code;

	if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a redirect or 100): forget the last */
		const char *sp = memchr(line, ' ', n);
		resp_clear(r);
		if (sp && sscanf(sp, "%ld", &code) == 1)
			r->status = code;
		return n;
	}
	if ((v = header_value(line, n, "content-type"))) {
		free(r->ctype);
		r->ctype = v;
		v = strchr(r->ctype, ';');
		if (v) /* "application/json; charset=utf-8" */
			*v = '\0';
	} else if ((v = header_value(line, n, "docker-content-digest"))) {
		free(r->digest);
		r->digest = v;
	} else if ((v = header_value(line, n, "www-authenticate"))) {
		free(r->www_auth);
		r->www_auth = v;
	} else if ((v = header_value(line, n, "retry-after"))) {
		r->retry_after = 1; /* an HTTP-date: wait a second */
		if (parse_long(v, 0, 86400, &code) == 0)
			r->retry_after = code;
		free(v);
	}
	return n;
}

/* ---- one request
 * ------------------------------------------------------------- */

static bool host_insecure(const struct reg_opts *o, const char *host)
{
	for (size_t i = 0; o->insecure && o->insecure[i]; i++)
		if (strcmp(o->insecure[i], host) == 0)
			return true;
	return false;
}

/* The host[:port] of an http(s) URL. */
static char *url_host(const char *url)
{
	const char *s = strstr(url, "://"), *e;

	if (!s)
		return NULL;
	s += 3;
	e = s + strcspn(s, "/?#");
	return xstrndup(s, (size_t)(e - s));
}

static long stall_timeout(const struct client *cl)
{
	return cl->o->stall_timeout ? (long)cl->o->stall_timeout
				    : PULL_STALL_TIMEOUT;
}

static void curl_setup(CURL *h, struct client *cl, const char *url, bool head,
		       bool plain_ok, struct curl_slist *hdr, struct sink *s,
		       struct resp *r)
{
	const char *proto = plain_ok ? "http,https" : "https";

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, proto);
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, proto);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)PULL_LOW_SPEED);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_timeout(cl));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "mpictr/" MPICTR_VERSION_STRING);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	if (head)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (cl->o->tls_ca) {
		/* the system's CAs stay (CAPATH) beside the one named */
		curl_easy_setopt(h, CURLOPT_CAINFO, cl->o->tls_ca);
		curl_easy_setopt(h, CURLOPT_CAPATH, "/etc/ssl/certs");
	}
}

/* Whether the last transfer on h got as far as sending its request (on
 * a new connection or a reused one, whose connect time is 0): a timeout
 * after that is the low-speed limit's. */
static bool connected(CURL *h)
{
	double t = 0;

	return curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME, &t) ==
		   CURLE_OK &&
	       t > 0;
}

/* Perform url once: 0 with r filled (any status), -1 on a transport
 * error. authz: an Authorization line, or NULL. */
static int perform(struct client *cl, CURL *h, const char *url, bool head,
		   const char *accept, const char *authz, struct sink *s,
		   struct resp *r, mpictr_err **err)
{
	struct curl_slist *hdr = NULL;
	cleanup_free char *host = url_host(url);
	bool plain_ok = host && (cl->plain || host_insecure(cl->o, host));
	CURLcode rc;

	resp_clear(r);
	s->status = &r->status;
	if (accept)
		hdr = curl_slist_append(hdr, accept);
	if (authz)
		hdr = curl_slist_append(hdr, authz);
	curl_setup(h, cl, url, head, plain_ok, hdr, s, r);
	log_debug("%s %s", head ? "HEAD" : "GET", url);
	rc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	if (rc == CURLE_OK)
		return 0;
	if (rc == CURLE_WRITE_ERROR && s->over)
		return 0; /* the caller reports the size */
	if (rc == CURLE_WRITE_ERROR && s->werrno)
		return err_set(err, s->werrno, "write the download of '%s'",
			       url);
	if (rc == CURLE_UNSUPPORTED_PROTOCOL && !plain_ok)
		return err_set(err, 0,
			       "%s: plain HTTP is used only for hosts given "
			       "with %s ('%s')",
			       url,
			       cl->o->run_time ? "MPICTR_PULL_INSECURE"
					       : "--insecure",
			       host ? host : "?");
	if (rc == CURLE_OPERATION_TIMEDOUT && connected(h)) {
		err_set(err, ETIMEDOUT,
			"%s: stalled: less than %d bytes a second for %ld s",
			url, PULL_LOW_SPEED, stall_timeout(cl));
		return err_hint(err, "a slow link: a longer --stall-timeout "
				     "SECONDS");
	}
	/* The registry cannot be reached: an errno the caller can tell
	 * (a run falls back to the cached resolution of the tag). */
	err_set(err,
		rc == CURLE_COULDNT_CONNECT	    ? ECONNREFUSED
		: rc == CURLE_COULDNT_RESOLVE_HOST  ? EHOSTUNREACH
		: rc == CURLE_COULDNT_RESOLVE_PROXY ? EHOSTUNREACH
		: rc == CURLE_OPERATION_TIMEDOUT    ? ETIMEDOUT
						    : 0,
		"%s: %s", url, curl_easy_strerror(rc));
	if (rc == CURLE_SSL_CONNECT_ERROR && !plain_ok)
		err_hint(err,
			 cl->o->run_time
			     ? "a registry that speaks plain HTTP must be "
			       "named in MPICTR_PULL_INSECURE=HOST[:PORT] "
			       "(run verbs take no --insecure; or mpictr pull "
			       "--insecure HOST[:PORT] first)"
			     : "a registry that speaks plain HTTP must be "
			       "named with --insecure HOST[:PORT]");
	return -1;
}

/* ---- authentication
 * ---------------------------------------------------------- */

static int cred_lookup(struct client *cl, mpictr_err **err)
{
	int rc;

	if (cl->cred_state)
		return cl->cred_state == 1;
	rc = reg_cred_find(cl->ref->registry, cl->ref->repository,
			   cl->ref->user, &cl->cred, err);
	if (rc < 0)
		return -1;
	cl->cred_state = rc ? 1 : 2;
	if (rc)
		log_debug("credentials for '%s' from '%s'", cl->ref->registry,
			  cl->cred.origin);
	return rc;
}

static char *basic_authz(const struct reg_cred *c)
{
	cleanup_free char *up = xasprintf("%s:%s", c->user, c->secret);
	cleanup_free char *b = reg_base64(up, strlen(up));
	char *line = xasprintf("Authorization: Basic %s", b);

	explicit_bzero(up, strlen(up));
	explicit_bzero(b, strlen(b));
	return line;
}

static void authz_set(struct client *cl, char *line)
{
	pthread_mutex_lock(&cl->mu);
	if (cl->authz)
		explicit_bzero(cl->authz, strlen(cl->authz));
	free(cl->authz);
	cl->authz = line;
	cl->auth_gen++;
	pthread_mutex_unlock(&cl->mu);
}

/* The registry's own words for an error: {"errors":[{"code","message"}]}. */
static char *error_words(const struct sink *s)
{
	json_t *root, *e;
	const char *code, *msg;
	char *out = NULL;

	if (!s->mem.buf || !s->mem.len)
		return NULL;
	root = json_loadb(s->mem.buf, s->mem.len, JSON_REJECT_DUPLICATES, NULL);
	e = json_array_get(json_object_get(root, "errors"), 0);
	code = json_string_value(json_object_get(e, "code"));
	msg = json_string_value(json_object_get(e, "message"));
	if (code || msg)
		out = xasprintf("%s%s%s", code ? code : "",
				code && msg ? ": " : "", msg ? msg : "");
	json_decref(root);
	return out;
}

/* Append "NAME=VALUE" (VALUE URL-escaped) and then sep to url. */
static void query_param(CURL *h, struct strbuf *url, const char *name,
			const char *value, const char *sep)
{
	char *esc = curl_easy_escape(h, value, 0);

	sb_printf(url, "%s=%s%s", name, esc, sep);
	curl_free(esc);
}

/* GET a token from the challenge's realm (with Basic credentials when we
 * have some) and make it our Authorization. */
static int bearer_token(struct client *cl, CURL *h,
			const struct reg_challenge *ch, mpictr_err **err)
{
	struct strbuf url = STRBUF_INIT;
	cleanup_free char *u = NULL, *basic = NULL, *words = NULL;
	cleanup_free char *scope = NULL;
	struct sink s = {.fd = -1, .max = TOKEN_MAX, .cl = cl};
	struct resp r = {0};
	const char *tok;
	json_t *root;
	int have, rc;

	have = cred_lookup(cl, err);
	if (have < 0)
		return -1;
	if (!ch->scope)
		scope = xasprintf("repository:%s:pull", cl->ref->repository);
	sb_puts(&url, ch->realm);
	sb_putc(&url, strchr(ch->realm, '?') ? '&' : '?');
	if (ch->service)
		query_param(h, &url, "service", ch->service, "&");
	query_param(h, &url, "scope", ch->scope ? ch->scope : scope, "");
	u = sb_steal(&url);
	if (have)
		basic = basic_authz(&cl->cred);
	rc = perform(cl, h, u, false, NULL, basic, &s, &r, err);
	if (basic)
		explicit_bzero(basic, strlen(basic));
	if (rc == 0 && r.status != 200) {
		words = error_words(&s);
		rc = err_set(err, 0, "token server '%s' answered %ld%s%s",
			     ch->realm, r.status, words ? ": " : "",
			     words ? words : "");
		if (r.status == 401)
			err_hint(err,
				 have ? "the credentials from '%s' were "
					"refused"
				      : "no credentials found%s",
				 have ? cl->cred.origin : "");
	}
	if (rc == 0) {
		root = s.over ? NULL
			      : json_loadb(s.mem.buf, s.mem.len,
					   JSON_REJECT_DUPLICATES, NULL);
		tok = json_string_value(json_object_get(root, "token"));
		if (!tok)
			tok = json_string_value(
			    json_object_get(root, "access_token"));
		if (tok && *tok && !strpbrk(tok, "\r\n"))
			authz_set(cl,
				  xasprintf("Authorization: Bearer %s", tok));
		else
			rc = err_set(err, 0, "token server '%s' sent no token",
				     ch->realm);
		json_decref(root);
	}
	if (s.mem.buf)
		explicit_bzero(s.mem.buf, s.mem.len);
	sb_free(&s.mem);
	resp_clear(&r);
	return rc;
}

/* Answer a 401: Basic with our credentials, or a Bearer token. */
static int authenticate(struct client *cl, CURL *h, const char *url,
			const struct resp *r, mpictr_err **err)
{
	struct reg_challenge ch;
	int have, rc;

	if (!r->www_auth || reg_challenge_parse(r->www_auth, &ch) < 0)
		return err_set(err, 0,
			       "%s: 401 unauthorized, with no challenge mpictr "
			       "knows (WWW-Authenticate: %s)",
			       url, r->www_auth ? r->www_auth : "none");
	if (ch.scheme == REG_AUTH_BEARER) {
		cleanup_free char *rh = url_host(ch.realm);
		/* the realm gets the password: over TLS, or over plain HTTP
		 * only on a host the user named with --insecure; that the
		 * registry itself is one names no other host */
		if (!str_has_prefix(ch.realm, "https://") &&
		    !(str_has_prefix(ch.realm, "http://") && rh &&
		      host_insecure(cl->o, rh))) {
			rc = err_set(err, 0,
				     "token realm '%s' is not https and its "
				     "host is not named with --insecure: "
				     "no credentials are sent there",
				     ch.realm);
		} else {
			rc = bearer_token(cl, h, &ch, err);
		}
		reg_challenge_free(&ch);
		return rc;
	}
	reg_challenge_free(&ch);
	have = cred_lookup(cl, err);
	if (have < 0)
		return -1;
	if (!have) {
		err_set(err, 0,
			"%s: 401 unauthorized: the registry wants a "
			"user name and password",
			url);
		return err_hint(err, "put them in ~/.docker/config.json or "
				     "containers' auth.json (podman login, "
				     "skopeo login), or Enroot's .credentials");
	}
	authz_set(cl, basic_authz(&cl->cred));
	return 0;
}

/* The error of a request that did not succeed. */
static int status_error(struct client *cl, const char *what, long status,
			const struct resp *r, const struct sink *s,
			mpictr_err **err)
{
	cleanup_free char *words = error_words(s);
	cleanup_free char *ch = NULL;
	const char *why = status == 401	  ? "unauthorized"
			  : status == 403 ? "access denied"
			  : status == 404 ? "not found"
			  : status == 429 ? "too many requests"
					  : "unexpected answer";

	err_set(err, 0, "%s: HTTP %ld %s%s%s", what, status, why,
		words ? ": " : "", words ? words : "");
	if (status == 401 && r->www_auth &&
	    strstr(r->www_auth, "insufficient_scope"))
		return err_hint(err, "insufficient scope: %s",
				cl->cred_state == 1
				    ? "the credentials do not allow pulling "
				      "this repository"
				    : "anonymous pulls of this repository are "
				      "not allowed and no credentials were "
				      "found");
	if (status == 401)
		return err_hint(err, cl->cred_state == 1
					 ? "the credentials were refused"
					 : "no credentials were found");
	if (status == 404)
		return err_hint(err, "check the repository, tag and digest");
	return -1;
}

static void sink_reset(struct sink *s)
{
	sb_free(&s->mem);
	s->over = false;
	s->got = 0;
	s->last_report = 0;
	s->werrno = 0;
	if (s->fd >= 0) {
		if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0)
			s->werrno = errno;
		EVP_DigestInit_ex(s->md, EVP_sha256(), NULL);
	}
}

static void wait_seconds(long s)
{
	struct timespec ts = {.tv_sec = s};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* GET (or HEAD) path below /v2/ of the registry, authenticating and
 * retrying as needed. 0 with r->status 2xx, or -1 with *err (what names
 * the object in messages). */
static int call(struct client *cl, CURL *h, const char *path, bool head,
		const char *accept, struct sink *s, struct resp *r,
		const char *what, mpictr_err **err)
{
	cleanup_free char *url = xasprintf("%s/v2/%s", cl->base, path);
	unsigned tries = 0, retries = cl->o->retries ? cl->o->retries : 4;
	unsigned maxwait = cl->o->retry_max_wait ? cl->o->retry_max_wait : 60;
	bool fresh = false;

	for (;;) {
		cleanup_free char *authz = NULL;
		unsigned gen;
		pthread_mutex_lock(&cl->mu);
		authz = cl->authz ? xstrdup(cl->authz) : NULL;
		gen = cl->auth_gen;
		pthread_mutex_unlock(&cl->mu);
		sink_reset(s);
		if (perform(cl, h, url, head, accept, authz, s, r, err) < 0)
			return err_wrap(err, "%s", what);
		if (authz)
			explicit_bzero(authz, strlen(authz));
		if (r->status == 401 && !fresh) {
			fresh = true;
			if (gen != cl->auth_gen) /* another thread renewed it */
				continue;
			if (authenticate(cl, h, url, r, err) < 0)
				return err_wrap(err, "%s", what);
			continue;
		}
		if ((r->status == 429 || r->status == 503) &&
		    tries++ < retries) {
			long w =
			    r->retry_after >= 0 ? r->retry_after : 1L << tries;
			if (w > (long)maxwait)
				w = (long)maxwait;
			log_info("%s: HTTP %ld, trying again in %ld s (%u of "
				 "%u)",
				 what, r->status, w, tries, retries);
			wait_seconds(w);
			continue;
		}
		cl->last_status = r->status;
		if (r->status >= 200 && r->status <= 299)
			return 0;
		return status_error(cl, what, r->status, r, s, err);
	}
}

/* ---- manifests
 * ----------------------------------------------------------------- */

struct manifest {
	char *digest;
	char *media_type;
	json_t *json;
	char *body;
	size_t len;
};

static void manifest_free(struct manifest *m)
{
	free(m->digest);
	free(m->media_type);
	json_decref(m->json);
	free(m->body);
	memset(m, 0, sizeof(*m));
}

/* Check a manifest body: JSON without duplicate keys, not schema 1, a
 * media type we know that agrees with the Content-Type. */
static int manifest_parse(struct client *cl, struct manifest *m,
			  const char *ctype, const char *what, mpictr_err **err)
{
	json_error_t je;
	const char *mt;
	json_int_t sv;

	if ((ctype && strstr(ctype, "distribution.manifest.v1+")) ||
	    (ctype && strstr(ctype, "prettyjws")))
		goto schema1;
	m->json = json_loadb(m->body, m->len, JSON_REJECT_DUPLICATES, &je);
	if (!m->json || !json_is_object(m->json))
		return err_set(err, 0, "%s: manifest is not valid JSON: %s",
			       what, m->json ? "not an object" : je.text);
	sv = json_integer_value(json_object_get(m->json, "schemaVersion"));
	if (sv == 1)
		goto schema1;
	if (sv != 2)
		return err_set(err, 0,
			       "%s: manifest schemaVersion %lld is not 2", what,
			       (long long)sv);
	mt = json_string_value(json_object_get(m->json, "mediaType"));
	if (mt && ctype && strcmp(ctype, "application/json") != 0 &&
	    strcmp(mt, ctype) != 0)
		return err_set(err, 0,
			       "%s: manifest mediaType '%s' differs from its "
			       "Content-Type '%s'",
			       what, mt, ctype);
	if (!mt && ctype && (oci_is_index(ctype) || oci_is_manifest(ctype)))
		mt = ctype;
	if (!mt) /* OCI allows none: tell by the content */
		mt = oci_doc_type(m->json);
	if (!oci_is_index(mt) && !oci_is_manifest(mt))
		return err_set(err, 0, "%s: unsupported manifest type '%s'",
			       what, mt ? mt : "(not a string)");
	m->media_type = xstrdup(mt);
	return 0;
schema1:
	err_set(err, 0,
		"%s: a schema 1 manifest (deprecated since 2017) is "
		"not supported",
		what);
	return err_hint(err, "push the image again with a current tool, e.g. "
			     "'skopeo copy --format v2s2'");
}

/* Put a verified small blob (a manifest) into the cache. */
static int cache_put(struct client *cl, const char *digest, const void *data,
		     size_t n, mpictr_err **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_close int fd = -1;

	if (cache_blob(cl->cache, digest, n, NULL) == CACHE_TRUSTED)
		return 0;
	fd = cache_tmpfile(cl->cache, "manifest", &tmp, err);
	if (fd < 0)
		return -1;
	if (write_full(fd, data, n) < 0) {
		err_set(err, errno, "write '%s'", tmp);
		unlink(tmp);
		return -1;
	}
	if (cache_commit_blob(cl->cache, tmp, digest, err) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* A manifest by digest from the cache: 1, or 0 when not there. */
static int manifest_local(struct client *cl, const char *digest,
			  struct manifest *m, mpictr_err **err)
{
	cleanup_free char *p = cache_blob_path(cl->cache, digest);
	cleanup_free char *what = xasprintf("%s (cached)", cl->what);
	char got[72];

	m->body = read_file(p, REG_MANIFEST_MAX + 1, &m->len);
	if (!m->body)
		return 0;
	sha256_digest(m->body, m->len, got);
	if (strcmp(got, digest) != 0) {
		/* damaged: forget it and ask the registry */
		log_warn("cached manifest '%s' is damaged, removing it", p);
		unlink(p);
		manifest_free(m);
		return 0;
	}
	m->digest = xstrdup(digest);
	return manifest_parse(cl, m, NULL, what, err) < 0 ? -1 : 1;
}

/* GET (head: HEAD) manifests/reference. For a HEAD only m->digest is set
 * (NULL when the registry sends no Docker-Content-Digest). */
static int manifest_get(struct client *cl, CURL *h, const char *reference,
			bool head, struct manifest *m, mpictr_err **err)
{
	cleanup_free char *path =
	    xasprintf("%s/manifests/%s", cl->ref->repository, reference);
	cleanup_free char *what =
	    xasprintf("image '%s': manifest '%s'", cl->what, reference);
	struct sink s = {.fd = -1, .max = REG_MANIFEST_MAX, .cl = cl};
	struct resp r = {0};
	int rc;

	memset(m, 0, sizeof(*m));
	rc = call(cl, h, path, head, ACCEPT_ALL, &s, &r, what, err);
	if (rc == 0 && head) {
		if (r.digest && cache_digest_valid(r.digest))
			m->digest = xstrdup(r.digest);
		goto out;
	}
	if (rc == 0 && s.over)
		rc = err_set(err, EFBIG, "%s: larger than %u MiB", what,
			     REG_MANIFEST_MAX >> 20);
	if (rc < 0)
		goto out;
	m->len = s.mem.len;
	m->body = sb_steal(&s.mem);
	if (!m->body)
		m->body = xstrdup("");
	m->digest = xmalloc(72);
	sha256_digest(m->body, m->len, m->digest);
	if (cache_digest_valid(reference) && strcmp(reference, m->digest)) {
		rc = err_set(err, 0,
			     "%s: digest mismatch: the registry sent "
			     "content with digest %s",
			     what, m->digest);
	} else if (r.digest && str_has_prefix(r.digest, "sha256:") &&
		   strcmp(r.digest, m->digest)) {
		rc = err_set(err, 0,
			     "%s: digest mismatch: Docker-Content-Digest says "
			     "%s, the content is %s",
			     what, r.digest, m->digest);
	}
	if (rc == 0)
		rc = manifest_parse(cl, m, r.ctype, what, err);
	if (rc == 0)
		rc = cache_put(cl, m->digest, m->body, m->len, err);
out:
	sb_free(&s.mem);
	resp_clear(&r);
	if (rc < 0)
		manifest_free(m);
	return rc;
}

/* ---- resolving a reference
 * ---------------------------------------------------- */

/* The manifest by digest: from the cache, else from the registry. */
static int manifest_by_digest(struct client *cl, CURL *h, const char *digest,
			      struct manifest *m, mpictr_err **err)
{
	int rc = manifest_local(cl, digest, m, err);

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	return manifest_get(cl, h, digest, false, m, err);
}

/* ref -> the image manifest of platform want; *top: what ref names. */
static int resolve(struct client *cl, CURL *h, const char *want,
		   struct manifest *m, char **top, mpictr_err **err)
{
	const struct image_ref *ref = cl->ref;
	int rc;

	memset(m, 0, sizeof(*m));
	if (ref->digest) {
		rc = manifest_by_digest(cl, h, ref->digest, m, err);
	} else {
		struct manifest hm;
		cleanup_free char *s = xasprintf("resolve %s", cl->what);
		step(cl, s);
		/* one HEAD: a tag whose content is cached costs no GET */
		mpictr_err *he = NULL;
		rc = manifest_get(cl, h, ref->tag, true, &hm, &he);
		if (rc < 0 &&
		    (cl->last_status == 429 || cl->last_status == 503)) {
			if (err) /* retried enough already */
				*err = steal_ptr(&he);
		} else if (rc == 0 && hm.digest) {
			rc = manifest_local(cl, hm.digest, m, err);
		} else {
			rc = 0; /* the GET tells why (HEAD has no body) */
		}
		mpictr_err_free(he);
		manifest_free(&hm);
		if (rc == 0)
			rc = manifest_get(cl, h, ref->tag, false, m, err);
		else if (rc > 0)
			rc = 0;
	}
	if (rc < 0)
		return -1;
	*top = xstrdup(m->digest);
	for (int depth = 0; oci_is_index(m->media_type); depth++) {
		cleanup_free char *what = xasprintf("image '%s'", cl->what);
		char d[72];
		if (depth >= INDEX_DEPTH ||
		    oci_index_pick(m->json, want, what, d, err) < 0) {
			if (depth >= INDEX_DEPTH)
				err_set(err, 0,
					"image '%s': indexes nested "
					"more than %d deep",
					cl->what, INDEX_DEPTH);
			manifest_free(m);
			return -1;
		}
		manifest_free(m);
		if (manifest_by_digest(cl, h, d, m, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- blobs
 * ------------------------------------------------------------------------ */

struct blob {
	char *digest;
	uint64_t size;
};

static int blob_add(struct client *cl, json_t *desc, const char *kind,
		    struct blob **v, size_t *n, mpictr_err **err)
{
	const char *d = json_string_value(json_object_get(desc, "digest"));
	json_t *sz = json_object_get(desc, "size");

	if (!cache_digest_valid(d) || !json_is_integer(sz) ||
	    json_integer_value(sz) < 0)
		return err_set(err, 0,
			       "image '%s': %s descriptor without a sha256 "
			       "digest and a size",
			       cl->what, kind);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].digest, d) == 0)
			return 0; /* the same layer twice: fetched once */
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].digest = xstrdup(d);
	(*v)[*n].size = (uint64_t)json_integer_value(sz);
	(*n)++;
	return 0;
}

/* The config and layers of an image manifest, checked. */
static int manifest_blobs(struct client *cl, const struct manifest *m,
			  struct blob **v, size_t *n, mpictr_err **err)
{
	json_t *cfg = json_object_get(m->json, "config");
	json_t *layers = json_object_get(m->json, "layers"), *l;
	const char *mt = json_string_value(json_object_get(cfg, "mediaType"));
	size_t i;

	*v = NULL;
	*n = 0;
	if (!oci_is_config(mt))
		return err_set(err, 0,
			       "image '%s': config media type '%s' is not an "
			       "image config",
			       cl->what, mt ? mt : "none");
	if (json_integer_value(json_object_get(cfg, "size")) > REG_CONFIG_MAX)
		return err_set(err, EFBIG,
			       "image '%s': config larger than %u MiB",
			       cl->what, REG_CONFIG_MAX >> 20);
	if (blob_add(cl, cfg, "config", v, n, err) < 0)
		return -1;
	if (!json_is_array(layers))
		return err_set(err, 0, "image '%s': manifest has no layers",
			       cl->what);
	json_array_foreach(layers, i, l)
	{
		cleanup_free char *what = xasprintf("image '%s'", cl->what);
		enum layer_comp comp;
		if (oci_layer_check(l, i, what, &comp, err) < 0)
			return -1;
		if (blob_add(cl, l, "layer", v, n, err) < 0)
			return -1;
	}
	return 0;
}

static int blob_check(struct client *cl, const struct blob *b, struct sink *s,
		      mpictr_err **err)
{
	unsigned char md[32];
	unsigned mdlen = 0;
	char hex[65];

	if (s->over)
		return err_set(err, 0,
			       "image '%s': blob %s is longer than the %llu "
			       "bytes its descriptor says",
			       cl->what, b->digest,
			       (unsigned long long)b->size);
	if (s->got != b->size)
		return err_set(err, 0,
			       "image '%s': blob %s is truncated: %llu of %llu "
			       "bytes",
			       cl->what, b->digest, (unsigned long long)s->got,
			       (unsigned long long)b->size);
	EVP_DigestFinal_ex(s->md, md, &mdlen);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if (strcmp(hex, b->digest + 7) != 0)
		return err_set(err, 0,
			       "image '%s': blob %s: digest mismatch (the "
			       "content is sha256:%s)",
			       cl->what, b->digest, hex);
	return 0;
}

/* Whether the cache's copy of b can be used: ours (or root's, or the
 * cache owner's) as it is; another member's only when its content hashes
 * to its digest (a shared cache: a member may have planted anything under
 * the name; read through the descriptor that was checked). */
static bool blob_usable(struct client *cl, const struct blob *b)
{
	int fd = -1;
	enum cache_entry st = cache_blob(cl->cache, b->digest, b->size, &fd);
	EVP_MD_CTX *md;
	unsigned char buf[1 << 16], d[32];
	unsigned dlen = 0;
	char hex[65];
	ssize_t n = 0;

	if (st != CACHE_OTHERS)
		return st == CACHE_TRUSTED;
	md = EVP_MD_CTX_new();
	if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1)
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			EVP_DigestUpdate(md, buf, (size_t)n);
	close(fd);
	if (!md || n < 0 || EVP_DigestFinal_ex(md, d, &dlen) != 1) {
		EVP_MD_CTX_free(md);
		return false;
	}
	EVP_MD_CTX_free(md);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	if (strcmp(hex, b->digest + 7) == 0)
		return true;
	log_warn("image cache '%s': blob %s is another user's and its "
		 "content is sha256:%s: not used, fetching it again",
		 cl->cache->dir, b->digest, hex);
	return false;
}

/* Download one blob into the cache unless it is there (and usable); a
 * lock per blob makes concurrent pulls download it once. 1 when
 * downloaded. */
static int blob_fetch(struct client *cl, CURL *h, const struct blob *b,
		      unsigned idx, unsigned count, mpictr_err **err)
{
	struct reg_progress p = {
	    .text = b->digest, .index = idx, .count = count, .total = b->size};
	cleanup_free char *hex = xasprintf("blob-%s", b->digest + 7);
	cleanup_free char *tmp = NULL, *path = NULL;
	cleanup_free char *what = NULL;
	struct sink s = {.fd = -1, .cl = cl, .prog = &p, .limit = b->size};
	struct resp r = {0};
	int lock, rc = 0;

	if (cache_blob(cl->cache, b->digest, b->size, NULL) == CACHE_TRUSTED)
		goto cached;
	lock = cache_lock(cl->cache, hex, err);
	if (lock < 0)
		return -1;
	if (blob_usable(cl, b)) {
		cache_unlock(lock);
		goto cached;
	}
	p.ev = REG_EV_BLOB_START;
	progress(cl, &p);
	s.fd = cache_tmpfile(cl->cache, hex, &tmp, err);
	s.md = EVP_MD_CTX_new();
	path = xasprintf("%s/blobs/%s", cl->ref->repository, b->digest);
	what = xasprintf("image '%s': blob %s", cl->what, b->digest);
	if (s.fd < 0 || !s.md)
		rc = -1;
	if (rc == 0)
		rc = call(cl, h, path, false, NULL, &s, &r, what, err);
	if (rc == 0)
		rc = blob_check(cl, b, &s, err);
	if (rc == 0)
		rc = cache_commit_blob(cl->cache, tmp, b->digest, err);
	if (rc < 0 && tmp)
		unlink(tmp);
	if (s.fd >= 0)
		close(s.fd);
	EVP_MD_CTX_free(s.md);
	sb_free(&s.mem);
	resp_clear(&r);
	cache_unlock(lock);
	if (rc < 0)
		return -1;
	pthread_mutex_lock(&cl->mu);
	cl->all_done += s.got - s.last_report;
	pthread_mutex_unlock(&cl->mu);
	p.ev = REG_EV_BLOB_DONE;
	p.done = s.got;
	progress(cl, &p);
	return 1;
cached:
	p.ev = REG_EV_BLOB_CACHED;
	p.done = b->size;
	progress(cl, &p);
	return 0;
}

struct pool {
	struct client *cl;
	const struct blob *v;
	size_t n, next;
	unsigned got;
	uint64_t bytes;
	pthread_mutex_t mu;
	mpictr_err *err;
};

static void *pool_worker(void *arg)
{
	struct pool *pl = arg;
	CURL *h = curl_easy_init();

	for (;;) {
		mpictr_err *e = NULL;
		size_t i;
		int rc;
		pthread_mutex_lock(&pl->mu);
		i = pl->err ? pl->n : pl->next++;
		pthread_mutex_unlock(&pl->mu);
		if (i >= pl->n)
			break;
		rc = h ? blob_fetch(pl->cl, h, &pl->v[i], (unsigned)i + 1,
				    (unsigned)pl->n, &e)
		       : err_set(&e, ENOMEM, "curl_easy_init");
		pthread_mutex_lock(&pl->mu);
		if (rc < 0 && !pl->err)
			pl->err = steal_ptr(&e);
		if (rc > 0) {
			pl->got++;
			pl->bytes += pl->v[i].size;
		}
		pthread_mutex_unlock(&pl->mu);
		mpictr_err_free(e);
	}
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

/* Every blob, up to o->parallel at once. */
static int blobs_fetch(struct client *cl, const struct blob *v, size_t n,
		       struct reg_image *im, mpictr_err **err)
{
	struct pool pl = {.cl = cl, .v = v, .n = n};
	unsigned want = cl->o->parallel ? cl->o->parallel : 4, k = 0;
	pthread_t th[16];

	pthread_mutex_init(&pl.mu, NULL);
	for (size_t i = 0; i < n; i++)
		if (!cache_has_blob(cl->cache, v[i].digest, v[i].size))
			cl->all_total += v[i].size;
	if (want > ARRAY_SIZE(th))
		want = ARRAY_SIZE(th);
	if (want > n)
		want = (unsigned)n;
	for (; k < want; k++)
		if (pthread_create(&th[k], NULL, pool_worker, &pl) != 0)
			break;
	if (k == 0) /* no thread: do it here */
		pool_worker(&pl);
	for (unsigned i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&pl.mu);
	im->blobs_got = pl.got;
	im->bytes = pl.bytes;
	if (pl.err) {
		*err = pl.err;
		return -1;
	}
	return 0;
}

/* ---- the client
 * ------------------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void client_init(struct client *cl, struct cache *c,
			const struct image_ref *ref, const struct reg_opts *o)
{
	pthread_once(&curl_once, curl_init_once);
	memset(cl, 0, sizeof(*cl));
	cl->ref = ref;
	cl->o = o;
	cl->cache = c;
	cl->what = ref->digest ? ref->digest : ref->tag;
	cl->plain = host_insecure(o, ref->registry);
	cl->base =
	    xasprintf("%s://%s", cl->plain ? "http" : "https", ref->registry);
	pthread_mutex_init(&cl->mu, NULL);
}

static void client_free(struct client *cl)
{
	if (cl->authz)
		explicit_bzero(cl->authz, strlen(cl->authz));
	free(cl->authz);
	free(cl->base);
	reg_cred_free(&cl->cred);
	pthread_mutex_destroy(&cl->mu);
}

void reg_image_free(struct reg_image *im)
{
	free(im->manifest_digest);
	free(im->top_digest);
	free(im->config_digest);
	memset(im, 0, sizeof(*im));
}

/* The image's name in messages: "host/repo:tag[@digest]". */
static char *ref_name(const struct image_ref *ref)
{
	if (ref->digest && ref->tag && strcmp(ref->tag, "latest"))
		return xasprintf("%s/%s:%s@%s", ref->registry, ref->repository,
				 ref->tag, ref->digest);
	if (ref->digest)
		return xasprintf("%s/%s@%s", ref->registry, ref->repository,
				 ref->digest);
	return xasprintf("%s/%s:%s", ref->registry, ref->repository, ref->tag);
}

/* Resolve (and with blobs, fetch) ref; the manifest's blobs in *v. */
static int fetch(struct cache *c, const struct image_ref *ref,
		 const struct reg_opts *o, struct reg_image *im, bool blobs,
		 mpictr_err **err)
{
	struct client cl;
	struct manifest m = {0};
	cleanup_free char *name = ref_name(ref);
	cleanup_free char *want = oci_platform_wanted(o->arch);
	struct blob *v = NULL;
	size_t n = 0;
	CURL *h;
	int rc;

	memset(im, 0, sizeof(*im));
	client_init(&cl, c, ref, o);
	cl.what = name;
	h = curl_easy_init();
	if (!h) {
		client_free(&cl);
		return err_set(err, ENOMEM, "image '%s': curl_easy_init", name);
	}
	rc = resolve(&cl, h, want, &m, &im->top_digest, err);
	if (rc == 0) {
		im->manifest_digest = xstrdup(m.digest);
		rc = manifest_blobs(&cl, &m, &v, &n, err);
	}
	if (rc == 0)
		im->config_digest = xstrdup(v[0].digest);
	if (rc == 0 && blobs) {
		cleanup_free char *s =
		    xasprintf("manifest %s (%s), %zu blobs", m.digest, want, n);
		step(&cl, s);
		rc = blobs_fetch(&cl, v, n, im, err);
	}
	if (rc == 0 && ref->tag && !ref->digest)
		rc = cache_ref_set(c, ref->registry, ref->repository, ref->tag,
				   m.digest, im->top_digest, want, m.media_type,
				   err);
	for (size_t i = 0; i < n; i++)
		free(v[i].digest);
	free(v);
	manifest_free(&m);
	curl_easy_cleanup(h);
	client_free(&cl);
	if (rc < 0)
		reg_image_free(im);
	return rc;
}

int registry_fetch(struct cache *c, const struct image_ref *ref,
		   const struct reg_opts *o, struct reg_image *im,
		   mpictr_err **err)
{
	return fetch(c, ref, o, im, true, err);
}

int registry_resolve(struct cache *c, const struct image_ref *ref,
		     const struct reg_opts *o, char **manifest_digest,
		     mpictr_err **err)
{
	struct reg_image im;

	if (fetch(c, ref, o, &im, false, err) < 0)
		return -1;
	*manifest_digest = steal_ptr(&im.manifest_digest);
	reg_image_free(&im);
	return 0;
}
