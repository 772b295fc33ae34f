/* inspect.c - `mpictr inspect`: what an image says about itself, read
 * without mounting it (imgread.h for the files, sif.h for a SIF's
 * objects): Apptainer's labels, environment scripts and runscript, the
 * image configuration (a pulled SIF's oci-config.json, field by field as
 * the run uses it: Entrypoint, Cmd, Env, WorkingDir, User, and what
 * describes the image: Labels, ExposedPorts, Volumes, StopSignal; another
 * SIF JSON object as it is; Enroot's /etc/environment and /etc/rc), a
 * SIF's definition file and object list. The image is
 * untrusted: sizes are bounded, JSON embedded in --json output only when
 * it is valid JSON (else as a string).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/util.h"
#include "config/ociconfig.h"
#include "host/imgread.h"
#include "sif/image.h"
#include "sif/sif.h"

/* Most bytes of one file or object shown. */
#define INSPECT_MAX (1u << 20)

struct inspect_item {
	char *name; /* path in the image or SIF object name */
	char *text;
	size_t len;
};

struct inspect {
	const struct image_info *img;
	char *labels;
	struct inspect_item *env;
	size_t nenv;
	char *runscript, *deffile, *oci_config, *enroot_env, *enroot_rc;
	char *sif_list;
	struct sif_image sif;
	bool have_sif;
	/* oci-config.json parsed (oci_known), or why it is not (oci_bad) */
	struct oci_config oci;
	bool oci_known;
	char *oci_bad;
};

/* ---- gathering ---------------------------------------------------- */

/* The regular file path of the image, or NULL when there is none. */
static char *read_opt(struct image_reader *r, const char *path)
{
	char *buf = NULL;
	size_t len;
	mpictr_err *e = NULL;

	if (!image_reader_exists(r, path))
		return NULL;
	if (image_reader_read(r, path, INSPECT_MAX, &buf, &len, &e) < 0) {
		log_debug("inspect: %s", mpictr_err_message(e));
		mpictr_err_free(e);
		return NULL;
	}
	return buf;
}

static void gather_files(struct inspect *in, struct image_reader *r)
{
	char **names = NULL;
	mpictr_err *e = NULL;

	in->labels = read_opt(r, "/.singularity.d/labels.json");
	in->runscript = read_opt(r, "/.singularity.d/runscript");
	if (!image_reader_exists(r, "/.singularity.d")) {
		in->enroot_env = read_opt(r, "/etc/environment");
		in->enroot_rc = read_opt(r, "/etc/rc");
	}
	if (image_reader_list(r, "/.singularity.d/env", &names, &e) < 0) {
		mpictr_err_free(e);
		return;
	}
	for (size_t i = 0; names && names[i]; i++) {
		cleanup_free char *path =
		    xasprintf("/.singularity.d/env/%s", names[i]);
		char *text;

		size_t nl = strlen(names[i]);

		if (nl <= 3 || strcmp(names[i] + nl - 3, ".sh") != 0 ||
		    !(text = read_opt(r, path)))
			continue;
		in->env = xrealloc(in->env, (in->nenv + 1) * sizeof(*in->env));
		in->env[in->nenv++] = (struct inspect_item){
		    .name = xstrdup(path), .text = text, .len = strlen(text)};
	}
	strv_free(names);
}

/* An object of the SIF, NUL-terminated, or NULL. */
static char *sif_object(const struct inspect *in, int fd, int32_t type)
{
	for (size_t i = 0; i < in->sif.ndescs; i++) {
		const struct sif_descriptor *d = &in->sif.descs[i];
		char *buf;

		if (d->datatype != type || d->size < 0 ||
		    (uint64_t)d->size > INSPECT_MAX)
			continue;
		buf = xmalloc((size_t)d->size + 1);
		if (pread_full(fd, buf, (size_t)d->size, d->offset) < 0) {
			free(buf);
			return NULL;
		}
		buf[d->size] = '\0';
		return buf;
	}
	return NULL;
}

/* The SIF's oci-config.json (image_probe found it): its text and its
 * fields, or why they cannot be read (shown, not fatal: the rest of the
 * image is still worth seeing). */
static void gather_oci(struct inspect *in, int fd)
{
	uint64_t size = in->img->oci_config_size;
	mpictr_err *e = NULL;
	char *buf;

	if (size == 0)
		return;
	if (size > OCI_CONFIG_MAX) {
		in->oci_bad =
		    xasprintf("oci-config.json: %llu bytes, at "
			      "most %u",
			      (unsigned long long)size, OCI_CONFIG_MAX);
		return;
	}
	buf = xmalloc((size_t)size + 1);
	if (pread_full(fd, buf, (size_t)size,
		       (off_t)in->img->oci_config_offset) < 0) {
		in->oci_bad = xasprintf("oci-config.json: read: %s",
					strerror(errno ? errno : EIO));
		free(buf);
		return;
	}
	buf[size] = '\0';
	in->oci_config = buf;
	if (oci_config_parse(buf, (size_t)size, "oci-config.json", &in->oci,
			     &e) == 0) {
		in->oci_known = true;
	} else {
		in->oci_bad = xstrdup(mpictr_err_message(e));
		mpictr_err_free(e);
	}
}

static int gather_sif(struct inspect *in, mpictr_err **err)
{
	cleanup_close int fd = open(in->img->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(err, errno, "image '%s'", in->img->path);
	if (sif_load_fd(fd, in->img->path, &in->sif, err) < 0)
		return -1;
	in->have_sif = true;
	in->deffile = sif_object(in, fd, SIF_DATA_DEFFILE);
	gather_oci(in, fd);
	if (!in->oci_config)
		in->oci_config = sif_object(in, fd, SIF_DATA_GENERIC_JSON);
	if (!in->labels)
		in->labels = sif_object(in, fd, SIF_DATA_LABELS);
	in->sif_list = sif_format_list(&in->sif);
	return 0;
}

static void inspect_free(struct inspect *in)
{
	free(in->labels);
	for (size_t i = 0; i < in->nenv; i++) {
		free(in->env[i].name);
		free(in->env[i].text);
	}
	free(in->env);
	free(in->runscript);
	free(in->deffile);
	free(in->oci_config);
	free(in->enroot_env);
	free(in->enroot_rc);
	free(in->sif_list);
	oci_config_free(&in->oci);
	free(in->oci_bad);
	if (in->have_sif)
		sif_image_free(&in->sif);
}

/* ---- output ------------------------------------------------------- */

static const char *const kind_names[] = {"dir", "squashfs", "sif"};

static void text_section(struct strbuf *sb, const char *title, const char *text)
{
	if (!text)
		return;
	sb_printf(sb, "== %s ==\n%s", title, text);
	if (*text && text[strlen(text) - 1] != '\n')
		sb_putc(sb, '\n');
}

/* One "Name: value" line: the image is untrusted, so a control character
 * in the value (a newline that would forge a line, a terminal escape) is
 * shown as '?'. */
static void line_clean(struct strbuf *sb, const char *name, const char *value,
		       const char *tail)
{
	sb_printf(sb, "%s: ", name);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		sb_putc(sb, *p < 0x20 || *p == 0x7f ? '?' : (char)*p);
	sb_printf(sb, "%s\n", tail);
}

/* One "Name: value" line per field the config has; lists one line per
 * entry (Entrypoint and Cmd as one JSON list each). */
static void oci_text(struct strbuf *sb, const struct oci_config *c)
{
	const char *const names[] = {"Entrypoint", "Cmd"};
	char **const lists[] = {c->entrypoint, c->cmd};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct strbuf l = STRBUF_INIT;
		cleanup_free char *t = NULL;

		/* as JSON: unambiguous with spaces and quotes, as `docker
		 * inspect` shows Entrypoint and Cmd */
		if (!lists[i])
			continue;
		sb_json_strv(&l, lists[i]);
		t = sb_steal(&l);
		line_clean(sb, names[i], t, "");
	}
	for (size_t i = 0; c->env && c->env[i]; i++)
		line_clean(sb, "Env", c->env[i], "");
	if (c->workdir)
		line_clean(sb, "WorkingDir", c->workdir, "");
	if (c->user)
		line_clean(sb, "User", c->user,
			   oci_config_user_nonroot(c)
			       ? " (ignored: you run as yourself)"
			       : "");
	for (size_t i = 0; c->exposed_ports && c->exposed_ports[i]; i++)
		line_clean(sb, "ExposedPorts", c->exposed_ports[i], "");
	for (size_t i = 0; c->volumes && c->volumes[i]; i++)
		line_clean(sb, "Volumes", c->volumes[i], "");
	if (c->stop_signal)
		line_clean(sb, "StopSignal", c->stop_signal, "");
	for (size_t i = 0; c->label_keys && c->label_keys[i]; i++) {
		cleanup_free char *kv =
		    xasprintf("%s=%s", c->label_keys[i], c->label_values[i]);
		line_clean(sb, "Labels", kv, "");
	}
}

static char *as_text(const struct inspect *in)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "image: %s (%s)\n", in->img->path,
		  kind_names[in->img->kind]);
	text_section(&sb, "labels", in->labels);
	for (size_t i = 0; i < in->nenv; i++) {
		cleanup_free char *t =
		    xasprintf("environment: %s", in->env[i].name);
		text_section(&sb, t, in->env[i].text);
	}
	text_section(&sb, "runscript", in->runscript);
	if (in->oci_known) {
		sb_puts(&sb, "== image config (oci-config.json) ==\n");
		oci_text(&sb, &in->oci);
	} else if (in->oci_bad) {
		cleanup_free char *t =
		    xasprintf("image config (oci-config.json, unreadable: %s)",
			      in->oci_bad);
		text_section(&sb, t, in->oci_config ? in->oci_config : "");
	} else {
		text_section(&sb, "image config (SIF JSON object)",
			     in->oci_config);
	}
	text_section(&sb, "environment: /etc/environment (Enroot)",
		     in->enroot_env);
	text_section(&sb, "entrypoint: /etc/rc (Enroot)", in->enroot_rc);
	text_section(&sb, "definition file", in->deffile);
	text_section(&sb, "SIF objects", in->sif_list);
	return sb_steal(&sb);
}

/* Member key: text embedded when it is a valid object, else as a
 * string; null when absent. */
static void json_embed(struct jw *w, const char *key, const char *text)
{
	struct strbuf *sb = w->sb;

	jw_key(w, key);
	if (!text)
		sb_puts(sb, "null");
	else if (json_object_valid(text))
		sb_puts(sb, text + strspn(text, " \t\r\n"));
	else
		sb_json_str(sb, text);
	while (sb->len && strchr(" \t\r\n", sb->buf[sb->len - 1]))
		sb->buf[--sb->len] = '\0';
}

static void json_sif_objects(struct jw *w, const struct inspect *in)
{
	if (!in->have_sif) {
		jw_null(w, "sif_objects");
		return;
	}
	jw_arr(w, "sif_objects", &jw_lines2);
	for (size_t i = 0; i < in->sif.ndescs; i++) {
		const struct sif_descriptor *d = &in->sif.descs[i];

		jw_obj(w, NULL, &jw_inline);
		jw_uint(w, "id", d->id);
		jw_str(w, "type", sif_datatype_name(d->datatype));
		jw_str(w, "name", d->name);
		jw_int(w, "offset", d->offset);
		jw_int(w, "size", d->size);
		jw_end(w);
	}
	jw_end(w);
}

/* "oci": the fields of oci-config.json (the names of --dry-run's
 * image_config where they are the same), or null. */
static void oci_json(struct jw *w, const struct inspect *in)
{
	const struct oci_config *c = &in->oci;

	if (!in->oci_known) {
		jw_null(w, "oci");
		return;
	}
	jw_obj(w, "oci", &jw_inline);
	jw_strv_null(w, "entrypoint", c->entrypoint);
	jw_strv_null(w, "cmd", c->cmd);
	jw_strv_null(w, "env", c->env);
	jw_str(w, "working_dir", c->workdir);
	jw_str(w, "user", c->user);
	jw_bool(w, "user_ignored", oci_config_user_nonroot(c));
	jw_strv_null(w, "exposed_ports", c->exposed_ports);
	jw_strv_null(w, "volumes", c->volumes);
	jw_str(w, "stop_signal", c->stop_signal);
	if (!c->label_keys) {
		jw_null(w, "labels");
	} else {
		jw_obj(w, "labels", &jw_inline);
		for (size_t i = 0; c->label_keys[i]; i++)
			jw_str(w, c->label_keys[i], c->label_values[i]);
		jw_end(w);
	}
	jw_end(w);
}

static char *as_json(const struct inspect *in)
{
	struct strbuf sb = STRBUF_INIT;
	struct jw w = {.sb = &sb};

	jw_obj(&w, NULL, &jw_lines);
	jw_obj(&w, "image", &jw_inline);
	jw_str(&w, "path", in->img->path);
	jw_str(&w, "kind", kind_names[in->img->kind]);
	jw_end(&w);
	json_embed(&w, "labels", in->labels ? in->labels : "{}");
	jw_arr(&w, "environment", &jw_lines2);
	for (size_t i = 0; i < in->nenv; i++) {
		jw_obj(&w, NULL, &jw_inline);
		jw_str(&w, "path", in->env[i].name);
		jw_str(&w, "content", in->env[i].text);
		jw_end(&w);
	}
	jw_end(&w);
	jw_str(&w, "runscript", in->runscript);
	jw_obj(&w, "config", &jw_inline);
	json_embed(&w, "sif_json", in->oci_config);
	oci_json(&w, in);
	jw_str(&w, "oci_error", in->oci_bad);
	jw_str(&w, "enroot_environment", in->enroot_env);
	jw_str(&w, "enroot_entrypoint", in->enroot_rc);
	jw_end(&w);
	jw_str(&w, "deffile", in->deffile);
	json_sif_objects(&w, in);
	jw_end(&w);
	sb_putc(&sb, '\n');
	return sb_steal(&sb);
}

MPICTR_PUBLIC int mpictr_inspect(const char *image, int json, char **out,
				 mpictr_err **err)
{
	struct image_info img = {0};
	struct image_reader *r = NULL;
	struct inspect in = {.img = &img};
	int rc = -1;

	if (!image || !out)
		return err_set(err, EINVAL, "missing image or output");
	*out = NULL;
	if (image_probe(image, &img, err) < 0)
		return -1;
	if (image_reader_open(&img, &r, err) < 0)
		goto out;
	gather_files(&in, r);
	if (image_reader_broken(r, err))
		goto out;
	if (img.kind == IMAGE_SIF && gather_sif(&in, err) < 0)
		goto out;
	*out = json ? as_json(&in) : as_text(&in);
	rc = 0;
out:
	image_reader_close(r);
	inspect_free(&in);
	image_info_free(&img);
	return rc;
}
