/* imageref.c - parse image references (imageref.h). The grammar of the
 * registry forms is Docker's distribution/reference (lower-case path
 * components, tags of at most 128 word characters, sha256 digests), with
 * Enroot's USER@ and REGISTRY# additions. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "config/imageref.h"

static const struct {
	const char *prefix;
	enum image_transport t;
} local_forms[] = {
    {"docker-archive:", IMAGE_REF_DOCKER_ARCHIVE},
    {"oci-archive:", IMAGE_REF_OCI_ARCHIVE},
    {"oci:", IMAGE_REF_OCI_DIR},
};

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool valid_path_component(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	while (i < n) {
		if (is_lower_alnum(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.' || (s[i] == '_' && s[i + 1] != '_')) {
			i++;
		} else if (s[i] == '_') {
			i += 2;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
	}
	return true;
}

static bool valid_repository(const char *s)
{
	const char *p = s;

	if (!*s)
		return false;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!valid_path_component(p, n))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* host[:port], host = labels of [A-Za-z0-9-] separated by dots, or [v6] */
static bool valid_registry(const char *s)
{
	const char *colon, *p = s;
	size_t n;

	if (*s == '[') {
		const char *end = strchr(s, ']');
		if (!end || end == s + 1)
			return false;
		for (p = s + 1; p < end; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':')
				return false;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] && !colon)
			return false;
	} else {
		colon = strchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
		if (n == 0)
			return false;
		for (size_t i = 0; i < n; i++) {
			char c = s[i];
			bool edge = i == 0 || i + 1 == n || s[i - 1] == '.' ||
				    s[i + 1] == '.';
			if (isalnum((unsigned char)c))
				continue;
			if ((c == '-' && !edge) ||
			    (c == '.' && i > 0 && i + 1 < n && s[i - 1] != '.'))
				continue;
			return false;
		}
	}
	if (colon) {
		size_t digits = strspn(colon + 1, "0123456789");
		if (digits == 0 || digits > 5 || colon[1 + digits])
			return false;
	}
	return true;
}

/* [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
static bool valid_tag(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static bool valid_digest(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
		return false;
	for (s += 7; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* "docker.io" and "index.docker.io" are Docker Hub's names; its API is
 * on registry-1.docker.io. */
static bool is_docker_hub(const char *reg)
{
	return strcmp(reg, "docker.io") == 0 ||
	       strcmp(reg, "index.docker.io") == 0 ||
	       strcmp(reg, IMAGE_REF_DOCKER_HUB) == 0;
}

static int bad(mpictr_err **err, const char *s, const char *what)
{
	err_set(err, EINVAL, "image reference '%s': %s", s, what);
	return err_hint(err, "expected docker://[USER@]HOST[:PORT]/REPO[:TAG]"
			     "[@DIGEST], [USER@]REGISTRY#IMAGE[:TAG], "
			     "REPO[:TAG], docker-archive:FILE[:REF], "
			     "oci-archive:FILE[:REF] or oci:DIR[:REF]");
}

/* rest = "[USER@]...": take USER off unless the '@' starts the digest. */
static int take_user(const char *s, char **rest, struct image_ref *ref,
		     mpictr_err **err)
{
	char *at = strchr(*rest, '@');
	size_t n;

	if (!at || strncmp(at + 1, "sha256:", 7) == 0)
		return 0;
	n = (size_t)(at - *rest);
	if (n == 0 || strcspn(*rest, "/#:") < n)
		return bad(err, s,
			   "user name before '@' is empty or holds "
			   "'/', '#' or ':'");
	ref->user = xstrndup(*rest, n);
	*rest = at + 1;
	return 0;
}

/* name = "[REGISTRY/]REPO" (Docker's rule: the first component is a host
 * when it holds '.' or ':' or is "localhost"). */
static void split_registry(char *name, struct image_ref *ref)
{
	char *slash = strchr(name, '/');

	if (slash && (memchr(name, '.', (size_t)(slash - name)) ||
		      memchr(name, ':', (size_t)(slash - name)) ||
		      strncmp(name, "localhost/", 10) == 0 || name[0] == '[')) {
		ref->registry = xstrndup(name, (size_t)(slash - name));
		ref->repository = xstrdup(slash + 1);
	} else {
		ref->repository = xstrdup(name);
	}
}

static int parse_registry_form(const char *s, const char *body,
			       struct image_ref *ref, mpictr_err **err)
{
	cleanup_free char *copy = xstrdup(body);
	char *rest = copy, *hash, *at, *colon, *slash;

	if (take_user(s, &rest, ref, err) < 0)
		return -1;
	if ((at = strchr(rest, '@'))) {
		*at = '\0';
		if (!valid_digest(at + 1))
			return bad(err, s,
				   "digest is not sha256:<64 lower-case "
				   "hex digits>");
		ref->digest = xstrdup(at + 1);
	}
	slash = strrchr(rest, '/');
	colon = strrchr(slash ? slash : rest, ':');
	hash = strchr(rest, '#');
	if (colon && (!hash || colon > hash)) {
		*colon = '\0';
		if (!valid_tag(colon + 1))
			return bad(err, s,
				   "tag is not 1-128 letters, digits, "
				   "'_', '.' or '-'");
		ref->tag = xstrdup(colon + 1);
	}
	if (hash) {
		*hash = '\0';
		if (!valid_registry(rest))
			return bad(err, s,
				   "registry before '#' is not "
				   "HOST[:PORT]");
		ref->registry = xstrdup(rest);
		ref->repository = xstrdup(hash + 1);
	} else {
		split_registry(rest, ref);
		if (ref->registry && !valid_registry(ref->registry))
			return bad(err, s, "registry is not HOST[:PORT]");
	}
	if (!valid_repository(ref->repository))
		return bad(err, s,
			   "repository is not lower-case components "
			   "of letters, digits and '.', '_', '-' "
			   "separated by '/'");
	if (!ref->registry || is_docker_hub(ref->registry)) {
		free(ref->registry);
		ref->registry = xstrdup(IMAGE_REF_DOCKER_HUB);
		if (!strchr(ref->repository, '/')) {
			char *r = xasprintf("library/%s", ref->repository);
			free(ref->repository);
			ref->repository = r;
		}
	}
	if (strlen(ref->repository) > 255)
		return bad(err, s, "repository longer than 255 characters");
	if (!ref->tag && !ref->digest)
		ref->tag = xstrdup("latest");
	return 0;
}

/* FILE[:REF] as containers/image splits it: at the first ':'. */
static int parse_local_form(const char *s, const char *body,
			    struct image_ref *ref, mpictr_err **err)
{
	const char *colon = strchr(body, ':');
	size_t n = colon ? (size_t)(colon - body) : strlen(body);

	if (n == 0)
		return bad(err, s, "no file or directory after the transport");
	ref->path = xstrndup(body, n);
	if (colon) {
		if (!colon[1])
			return bad(err, s, "empty REF after ':'");
		ref->tag = xstrdup(colon + 1);
	}
	return 0;
}

int image_ref_parse(const char *s, struct image_ref *ref, mpictr_err **err)
{
	int rc = -1;

	memset(ref, 0, sizeof(*ref));
	if (!s || !*s)
		return bad(err, s ? s : "", "empty");
	if (strlen(s) > IMAGE_REF_MAX)
		return err_set(err, ENAMETOOLONG,
			       "image reference of %zu bytes: at most %d",
			       strlen(s), IMAGE_REF_MAX);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad(err, s, "control character");
	for (size_t i = 0; i < ARRAY_SIZE(local_forms); i++) {
		size_t n = strlen(local_forms[i].prefix);
		if (strncmp(s, local_forms[i].prefix, n) == 0) {
			ref->transport = local_forms[i].t;
			rc = parse_local_form(s, s + n, ref, err);
			goto out;
		}
	}
	ref->transport = IMAGE_REF_DOCKER;
	if (strncmp(s, "docker://", 9) == 0)
		rc = parse_registry_form(s, s + 9, ref, err);
	else if (strstr(s, "://"))
		rc = bad(err, s,
			 "unknown transport (docker://, "
			 "docker-archive:, oci-archive:, oci:)");
	else
		rc = parse_registry_form(s, s, ref, err);
out:
	if (rc < 0)
		image_ref_free(ref);
	return rc;
}

void image_ref_free(struct image_ref *ref)
{
	if (!ref)
		return;
	free(ref->user);
	free(ref->registry);
	free(ref->repository);
	free(ref->tag);
	free(ref->digest);
	free(ref->path);
	memset(ref, 0, sizeof(*ref));
}

char *image_ref_string(const struct image_ref *ref)
{
	const char *prefix = "", *sep;

	for (size_t i = 0; i < ARRAY_SIZE(local_forms); i++)
		if (local_forms[i].t == ref->transport)
			prefix = local_forms[i].prefix;
	if (ref->transport != IMAGE_REF_DOCKER)
		return xasprintf("%s%s%s%s", prefix, ref->path,
				 ref->tag ? ":" : "", ref->tag ? ref->tag : "");
	/* a registry that Docker's rule would not see as a host: Enroot's
	 * form */
	sep = strpbrk(ref->registry, ".:[") ||
		      strcmp(ref->registry, "localhost") == 0
		  ? "/"
		  : "#";
	return xasprintf("docker://%s%s%s%s%s%s%s", ref->registry, sep,
			 ref->repository, ref->tag ? ":" : "",
			 ref->tag ? ref->tag : "", ref->digest ? "@" : "",
			 ref->digest ? ref->digest : "");
}

bool image_ref_is_pull_source(const char *s)
{
	const char *hash;

	if (!s)
		return false;
	if (strncmp(s, "docker://", 9) == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(local_forms); i++)
		if (strncmp(s, local_forms[i].prefix,
			    strlen(local_forms[i].prefix)) == 0)
			return true;
	/* [USER@]REGISTRY#IMAGE: a host before the '#' (no '/': a path) */
	hash = strchr(s, '#');
	if (hash) {
		const char *at = memchr(s, '@', (size_t)(hash - s));
		const char *start = at ? at + 1 : s;
		cleanup_free char *reg =
		    xstrndup(start, (size_t)(hash - start));
		return valid_registry(reg);
	}
	return false;
}

/* Apptainer names the SIF NAME_TAG.sif: the last component of the
 * repository (or of the file), the tag or "latest". */
char *image_ref_default_out(const struct image_ref *ref)
{
	const char *base, *slash;
	size_t n;

	if (ref->transport == IMAGE_REF_DOCKER) {
		slash = strrchr(ref->repository, '/');
		base = slash ? slash + 1 : ref->repository;
		return xasprintf("%s_%s.sif", base,
				 ref->tag ? ref->tag : "latest");
	}
	slash = strrchr(ref->path, '/');
	while (slash && !slash[1] && slash > ref->path) {
		/* "dir/": the component before the trailing slash */
		const char *p = slash - 1;
		while (p > ref->path && *p != '/')
			p--;
		base = *p == '/' ? p + 1 : p;
		return xasprintf("%.*s.sif", (int)(slash - base), base);
	}
	base = slash ? slash + 1 : ref->path;
	n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".tar") == 0)
		n -= 4;
	return xasprintf("%.*s.sif", (int)n, base);
}
