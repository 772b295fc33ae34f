/* assemble.c - an image (config + layers) into a SIF: the layers merged
 * into one squashfs written in place as the primary partition, the files
 * Apptainer adds to an image from an OCI source (/.singularity.d: the
 * environment file, the runscript, labels and action scripts), a missing
 * WorkingDir, and the image config as a JSON.Generic object named
 * oci-config.json. Written under a temporary name beside the target and
 * renamed over it; on any failure the temporary is removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "pull/image.h"
#include "pull/oci.h"
#include "pull/sqfs.h"
#include "sif/sif.h"
#include "sif/sif_write.h"

/* Apptainer's action scripts: source the environment, then the action. */
#define ACTION_ENV                                                             \
	"#!/bin/sh\n"                                                          \
	"for script in /.singularity.d/env/*.sh; do\n"                         \
	"    if [ -f \"$script\" ]; then\n"                                    \
	"        . \"$script\"\n"                                              \
	"    fi\n"                                                             \
	"done\n"

static const char action_exec[] = ACTION_ENV "exec \"$@\"\n";
static const char action_run[] =
    ACTION_ENV "if test -x /.singularity.d/runscript; then\n"
	       "    exec /.singularity.d/runscript \"$@\"\n"
	       "fi\n"
	       "echo \"There is no runscript in the container\" >&2\n"
	       "exit 1\n";
static const char action_shell[] = ACTION_ENV "exec /bin/sh \"$@\"\n";

/* ---- shell text ---- */

static void sh_single(struct strbuf *sb, const char *s)
{
	sb_putc(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			sb_puts(sb, "'\\''");
		else
			sb_putc(sb, *s);
	}
	sb_putc(sb, '\'');
}

static void sh_double(struct strbuf *sb, const char *s)
{
	sb_putc(sb, '"');
	for (; *s; s++) {
		if (strchr("\"\\$`", *s))
			sb_putc(sb, '\\');
		sb_putc(sb, *s);
	}
	sb_putc(sb, '"');
}

static bool shell_name(const char *s, size_t n)
{
	if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') ||
			(s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* /.singularity.d/env/10-docker2singularity.sh as Apptainer writes it:
 * PATH set, every other variable only where the host has none. */
static char *env_script(json_t *cfg)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *v;
	size_t i;

	sb_puts(&sb, "#!/bin/sh\n");
	json_array_foreach(json_object_get(cfg, "Env"), i, v)
	{
		const char *e = json_string_value(v), *eq;
		cleanup_free char *name = NULL;
		if (!e || !(eq = strchr(e, '=')) ||
		    !shell_name(e, (size_t)(eq - e)))
			continue;
		name = xstrndup(e, (size_t)(eq - e));
		if (strcmp(name, "PATH") == 0) {
			sb_puts(&sb, "export PATH=");
			sh_double(&sb, eq + 1);
		} else {
			sb_printf(&sb, "export %s=\"${%s:-", name, name);
			sh_double(&sb, eq + 1);
			sb_puts(&sb, "}\"");
		}
		sb_putc(&sb, '\n');
	}
	return sb_steal(&sb);
}

static void sh_words(struct strbuf *sb, json_t *list)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
	{
		if (!json_is_string(v))
			continue;
		sb_putc(sb, ' ');
		sh_single(sb, json_string_value(v));
	}
}

/* /.singularity.d/runscript: Entrypoint + (the arguments, or Cmd), exec'd
 * without evaluating anything. */
static char *runscript(json_t *cfg)
{
	json_t *ep = json_object_get(cfg, "Entrypoint");
	json_t *cmd = json_object_get(cfg, "Cmd");
	struct strbuf sb = STRBUF_INIT;
	bool have_ep = json_array_size(ep) > 0, have_cmd = json_array_size(cmd);

	sb_puts(&sb, "#!/bin/sh\n"
		     "# from the image config: Entrypoint + (arguments or "
		     "Cmd)\n"
		     "if [ $# -gt 0 ]; then\n"
		     "    exec");
	sh_words(&sb, ep);
	sb_puts(&sb, " \"$@\"\nfi\n");
	if (have_ep || have_cmd) {
		sb_puts(&sb, "exec");
		sh_words(&sb, ep);
		sh_words(&sb, cmd);
		sb_puts(&sb, "\n");
	} else {
		sb_puts(&sb, "echo \"the image has no Entrypoint or Cmd: give "
			     "a command\" >&2\nexit 1\n");
	}
	return sb_steal(&sb);
}

/* ---- files added to the tree ---- */

/* The directory at path, made (0755, root) where missing; NULL when a
 * component is not a directory. */
static struct node *mkdirs(struct tree *t, const char *path)
{
	cleanup_free char *q = xstrdup(path);
	struct node *parent = t->root;
	char *s = q;

	for (;;) {
		char *slash = strchr(s, '/');
		struct node *n;
		if (slash)
			*slash = '\0';
		n = tree_get(t, q);
		if (n && !node_visible(n)) {
			tree_retire_inode(t, n);
			node_clear(n);
			n->kind = NODE_DIR;
			n->ghost = false;
		} else if (!n) {
			n = tree_add(t, parent, q, NODE_DIR);
			n->mode = 0755;
		}
		if (n->kind != NODE_DIR)
			return NULL;
		n->ghost = false;
		parent = n;
		if (!slash)
			return parent;
		*slash = '/';
		s = slash + 1;
	}
}

static int put_file(struct tree *t, struct sqw *w, const char *path,
		    const char *text, mode_t mode, mpictr_err **err)
{
	cleanup_free char *dir = xstrdup(path);
	struct node *parent, *n;

	*strrchr(dir, '/') = '\0';
	if (!(parent = mkdirs(t, dir)))
		return err_set(err, ENOTDIR, "image: '/%s' is not a directory",
			       dir);
	n = tree_get(t, path);
	if (n && n->kind == NODE_DIR)
		return err_set(err, EISDIR, "image: '/%s' is a directory",
			       path);
	if (n) {
		tree_retire_inode(t, n);
		node_clear(n);
	} else {
		n = tree_add(t, parent, path, NODE_FILE);
	}
	n->kind = NODE_FILE;
	n->mode = mode;
	n->uid = n->gid = 0;
	if (sqw_file_begin(w, n, err) < 0 ||
	    sqw_file_append(w, text, strlen(text), err) < 0)
		return -1;
	return sqw_file_end(w, err);
}

static int add_runtime_files(struct tree *t, struct sqw *w, json_t *config,
			     mpictr_err **err)
{
	json_t *cfg = json_object_get(config, "config");
	json_t *labels = json_object_get(cfg, "Labels");
	const char *wd = json_string_value(json_object_get(cfg, "WorkingDir"));
	cleanup_free char *env = env_script(cfg), *run = runscript(cfg);
	cleanup_free char *lab = NULL;
	int rc;
	json_t *empty = json_object();

	if (wd && wd[0] == '/' && wd[1]) {
		cleanup_free char *norm = NULL;
		if (merge_norm_path(wd + strspn(wd, "/"), &norm) == 0 &&
		    norm[0])
			(void)mkdirs(t, norm); /* a file there: left alone */
	}
	lab = json_dumps(json_is_object(labels) ? labels : empty,
			 JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(empty);
	rc = put_file(t, w, ".singularity.d/env/10-docker2singularity.sh", env,
		      0755, err);
	if (rc == 0)
		rc = put_file(t, w, ".singularity.d/runscript", run, 0755, err);
	if (rc == 0)
		rc = put_file(t, w, ".singularity.d/labels.json",
			      lab ? lab : "{}", 0644, err);
	if (rc == 0)
		rc = put_file(t, w, ".singularity.d/actions/exec", action_exec,
			      0755, err);
	if (rc == 0)
		rc = put_file(t, w, ".singularity.d/actions/run", action_run,
			      0755, err);
	if (rc == 0)
		rc = put_file(t, w, ".singularity.d/actions/shell",
			      action_shell, 0755, err);
	return rc;
}

/* ---- the SIF ---- */

/* The image's creation time ("created", RFC 3339, UTC), else 0: the SIF
 * of one image is the same bytes whenever it is pulled. */
static int64_t image_time(json_t *config)
{
	const char *c = json_string_value(json_object_get(config, "created"));
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if (!c || !(end = strptime(c, "%Y-%m-%dT%H:%M:%S", &tm)))
		return 0;
	return (int64_t)timegm(&tm);
}

/* A SIF ID derived from the image (its config's digest): version 4
 * layout, as a random one would have. */
static void image_id(const struct image_input *in, uint8_t id[16])
{
	char d[72];

	sha256_digest(in->config_raw, in->config_len, d);
	for (int i = 0; i < 16; i++) {
		unsigned v = 0;
		sscanf(d + 7 + 2 * i, "%2x", &v);
		id[i] = (uint8_t)v;
	}
	id[6] = (uint8_t)((id[6] & 0x0f) | 0x40);
	id[8] = (uint8_t)((id[8] & 0x3f) | 0x80);
}

static int write_sif(int fd, const char *out, const struct image_input *in,
		     uint64_t sqsize, mpictr_err **err)
{
	uint8_t id[16];
	json_t *cfg = json_object_get(in->config, "config");
	const char *arch = sif_arch_code(
	    json_string_value(json_object_get(in->config, "architecture"))
		? json_string_value(json_object_get(in->config, "architecture"))
		: sif_host_arch());
	json_t *empty = json_object();
	cleanup_free char *json =
	    json_dumps(json_is_object(cfg) ? cfg : empty, JSON_COMPACT);
	struct sif_object_input objs[2] = {
	    {.datatype = SIF_DATA_PARTITION,
	     .len = (size_t)sqsize,
	     .fd = -1,
	     .in_place = true,
	     .fstype = SIF_FS_SQUASH,
	     .parttype = SIF_PART_PRIM_SYS,
	     .arch_code = arch ? arch : sif_arch_code(sif_host_arch())},
	    {.datatype = SIF_DATA_GENERIC_JSON,
	     .data = json ? json : "{}",
	     .len = json ? strlen(json) : 2,
	     .fd = -1,
	     .name = "oci-config.json"},
	};

	json_decref(empty);
	image_id(in, id);
	if (!objs[0].arch_code)
		objs[0].arch_code = "00";
	if (sif_write_fd_fixed(fd, out, objs, 2, id, image_time(in->config),
			       err) < 0)
		return -1;
	if (fsync(fd) < 0)
		return err_set(err, errno, "sif '%s': fsync", out);
	return 0;
}

static int build(int fd, const char *out, const struct image_input *in,
		 const char *what, const struct pull_opts *o,
		 struct pull_stats *st, mpictr_err **err)
{
	struct sqw *w = NULL;
	struct tree t;
	uint64_t sqsize = 0;
	int rc;

	if (sqw_open(fd, SIF_WRITE_DATA_START, o->comp_level, out, &w, err) < 0)
		return -1;
	tree_init(&t);
	rc = merge_layers(&t, w, in->layers, in->nlayers, what,
			  o->max_expansion, st, err);
	if (rc == 0)
		rc = add_runtime_files(&t, w, in->config, err);
	if (rc == 0)
		rc = sqw_finish(w, &t, 0, &sqsize, err);
	sqw_free(w);
	tree_free(&t);
	if (rc == 0)
		rc = write_sif(fd, out, in, sqsize, err);
	return rc;
}

int assemble_image(const struct image_input *in, const char *out,
		   const char *what, const struct pull_opts *o,
		   struct pull_stats *st, mpictr_err **err)
{
	cleanup_free char *tmp = NULL;
	struct stat sb;
	int fd, rc;

	if (!o->force && lstat(out, &sb) == 0) {
		err_set(err, EEXIST, "'%s' exists", out);
		return err_hint(err, "pass --force to replace it");
	}
	fd = sif_open_temp(out, "pull", 0777, &tmp, err);
	if (fd < 0)
		return err_wrap(err, "%s", what);
	rc = build(fd, out, in, what, o, st, err);
	if (rc == 0 && fstat(fd, &sb) == 0)
		st->sif_bytes = (uint64_t)sb.st_size;
	if (close(fd) < 0 && rc == 0)
		rc = err_set(err, errno, "sif '%s': close", out);
	if (rc == 0 && rename(tmp, out) < 0)
		rc = err_set(err, errno, "rename '%s' to '%s'", tmp, out);
	if (rc < 0)
		unlink(tmp);
	if (in->manifest_digest[0])
		snprintf(st->manifest_digest, sizeof(st->manifest_digest), "%s",
			 in->manifest_digest);
	return rc;
}

int pull_assemble(const char *layout_dir, const char *manifest_digest,
		  const char *out, const char *what, const struct pull_opts *o,
		  struct pull_stats *st, mpictr_err **err)
{
	struct store s;
	struct image_input in;
	int rc;

	if (store_open_dir(layout_dir, &s, err) < 0)
		return err_wrap(err, "%s", what);
	rc = image_from_manifest(&s, manifest_digest, o->arch, what, &in, err);
	if (rc == 0)
		rc = assemble_image(&in, out, what, o, st, err);
	image_input_free(&in);
	store_close(&s);
	return rc;
}
