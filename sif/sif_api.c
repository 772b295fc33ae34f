/* sif_api.c - the public mpictr_sif_* entry points: thin wrappers that load
 * an image with the strict reader and format it, and the create options. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sif/image.h"
#include "sif/sif.h"
#include "sif/sif_write.h"
#include "sif/verify.h"
#include "common/util.h"

/* The image at path loaded, in *out as fmt writes it. */
static int load_format(const char *path, char **out,
		       char *(*fmt)(const struct sif_image *), mpictr_err **err)
{
	struct sif_image img;

	*out = NULL;
	if (sif_load(path, &img, err) < 0)
		return -1;
	*out = fmt(&img);
	sif_image_free(&img);
	return 0;
}

MPICTR_PUBLIC int mpictr_sif_list(const char *path, char **out,
				  mpictr_err **err)
{
	return load_format(path, out, sif_format_list, err);
}

MPICTR_PUBLIC int mpictr_sif_info(const char *path, uint32_t id, char **out,
				  mpictr_err **err)
{
	struct sif_image img;

	*out = NULL;
	if (sif_load(path, &img, err) < 0)
		return -1;
	*out = sif_format_info(&img, id, err);
	sif_image_free(&img);
	return *out ? 0 : -1;
}

MPICTR_PUBLIC int mpictr_sif_header(const char *path, char **out,
				    mpictr_err **err)
{
	return load_format(path, out, sif_format_header, err);
}

/* ---- create ---- */

struct mpictr_sif_create_opts {
	char *deffile; /* file contents, read when the option is set */
	size_t deffile_len;
	char *env_script;
	size_t env_script_len;
	char *labels;
	size_t labels_len;
	bool force; /* replace an existing OUT */
	mpictr_sif_progress_fn progress;
	void *progress_data;
};

MPICTR_PUBLIC mpictr_sif_create_opts *mpictr_sif_create_opts_new(void)
{
	return xcalloc(1, sizeof(mpictr_sif_create_opts));
}

MPICTR_PUBLIC void mpictr_sif_create_opts_free(mpictr_sif_create_opts *o)
{
	if (!o)
		return;
	free(o->deffile);
	free(o->env_script);
	free(o->labels);
	free(o);
}

/* Objects other than the partition are small text files: cap them so a
 * mistaken path (a device, a huge file) fails early. */
#define SIF_OBJECT_MAX (64u << 20)

static int read_option_file(const char *opt, const char *path, char **buf,
			    size_t *len, mpictr_err **err)
{
	char *s = read_file(path, SIF_OBJECT_MAX, len);

	if (!s)
		return err_set(err, errno, "%s '%s'", opt, path);
	free(*buf);
	*buf = s;
	return 0;
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_deffile(mpictr_sif_create_opts *o,
						     const char *path,
						     mpictr_err **err)
{
	return read_option_file("--deffile", path, &o->deffile, &o->deffile_len,
				err);
}

MPICTR_PUBLIC int
mpictr_sif_create_opts_set_env_script(mpictr_sif_create_opts *o,
				      const char *path, mpictr_err **err)
{
	return read_option_file("--env-script", path, &o->env_script,
				&o->env_script_len, err);
}

MPICTR_PUBLIC int mpictr_sif_create_opts_set_labels(mpictr_sif_create_opts *o,
						    const char *path,
						    mpictr_err **err)
{
	return read_option_file("--labels", path, &o->labels, &o->labels_len,
				err);
}

MPICTR_PUBLIC void mpictr_sif_create_opts_set_force(mpictr_sif_create_opts *o,
						    int force)
{
	o->force = force != 0;
}

MPICTR_PUBLIC void
mpictr_sif_create_opts_set_progress(mpictr_sif_create_opts *o,
				    mpictr_sif_progress_fn fn, void *data)
{
	o->progress = fn;
	o->progress_data = data;
}

static void say(const mpictr_sif_create_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const mpictr_sif_create_opts *o, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (!o || !o->progress)
		return;
	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	o->progress(s, strlen(s), o->progress_data);
	free(s);
}

/* Put the finished temporary file tmp in place at out: replacing what is
 * there only with force (RENAME_NOREPLACE, else a hard link, so that an
 * OUT made meanwhile is not replaced either). */
static int place_output(const char *tmp, const char *out, bool force,
			mpictr_err **err)
{
	if (force) {
		if (rename(tmp, out) < 0)
			return err_set(err, errno,
				       "sif create: rename '%s' to '%s'", tmp,
				       out);
		return 0;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EINVAL || errno == ENOSYS) {
		if (link(tmp, out) == 0) {
			unlink(tmp);
			return 0;
		}
	}
	if (errno == EEXIST)
		return err_set(err, 0,
			       "sif create: '%s' exists (hint: --force "
			       "replaces it)",
			       out);
	return err_set(err, errno, "sif create: rename '%s' to '%s'", tmp, out);
}

/* Open source as a squashfs file, or pack a directory into a scratch
 * squashfs next to out (*scratch names it, for removal). Returns the fd. */
static int open_source(const char *out, const char *source, char **scratch,
		       const mpictr_sif_create_opts *o, mpictr_err **err)
{
	struct stat st;
	cleanup_close int fd = -1;
	char magic[4];
	int comp;

	if (stat(source, &st) < 0)
		return err_set(err, errno, "sif create: source '%s'", source);
	if (S_ISDIR(st.st_mode)) {
		fd = sif_open_temp(out, "sqfs", 0600, scratch, err);
		if (fd < 0)
			return err_wrap(err, "sif create '%s'", out);
		say(o, "packing '%s' with mksquashfs\n", source);
		if (sif_mksquashfs(source, *scratch, o ? o->progress : NULL,
				   o ? o->progress_data : NULL, err) < 0)
			return err_wrap(err, "sif create '%s'", out);
		/* mksquashfs replaced the file: open the new one */
		close(fd);
		fd = open(*scratch, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_set(err, errno, "sif create: open '%s'",
				       *scratch);
	} else if (S_ISREG(st.st_mode)) {
		fd = open(source, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_set(err, errno, "sif create: open '%s'",
				       source);
	} else {
		return err_set(err, 0,
			       "sif create: source '%s' is neither a squashfs "
			       "file nor a directory",
			       source);
	}
	if (fstat(fd, &st) < 0)
		return err_set(err, errno, "sif create: stat '%s'", source);
	if (st.st_size < 4 || pread_full(fd, magic, 4, 0) < 0 ||
	    memcmp(magic, "hsqs", 4) != 0)
		return err_set(err, 0,
			       "sif create: source '%s' is neither a squashfs "
			       "file (magic 'hsqs') nor a directory",
			       source);
	if (image_check_squashfs(fd, 0, (uint64_t)st.st_size, source,
				 "squashfs", &comp, err) < 0)
		return err_wrap(err, "sif create");
	return steal_fd(&fd);
}

MPICTR_PUBLIC int mpictr_sif_create(const char *out, const char *source,
				    const mpictr_sif_create_opts *opts,
				    mpictr_err **err)
{
	cleanup_free char *scratch = NULL, *tmp = NULL;
	cleanup_close int src = -1, fd = -1;
	struct sif_object_input objs[4];
	const char *arch = sif_arch_code(sif_host_arch());
	size_t n = 0;
	struct stat st;
	int rc = -1;

	if (!arch)
		return err_set(err, 0, "sif create: unknown host architecture");
	/* Before the work (packing may take minutes); checked again, without
	 * a race, when the file is put in place. */
	if (!(opts && opts->force) && access(out, F_OK) == 0)
		return err_set(err, 0,
			       "sif create: '%s' exists (hint: --force "
			       "replaces it)",
			       out);
	src = open_source(out, source, &scratch, opts, err);
	if (src < 0)
		goto out;
	if (fstat(src, &st) < 0) {
		err_set(err, errno, "sif create: stat '%s'", source);
		goto out;
	}
	memset(objs, 0, sizeof(objs));
	if (opts) {
		/* The optional objects, in the order they are written. */
		const struct {
			int32_t datatype;
			const void *data;
			size_t len;
		} opt[] = {
		    {SIF_DATA_DEFFILE, opts->deffile, opts->deffile_len},
		    {SIF_DATA_ENVVAR, opts->env_script, opts->env_script_len},
		    {SIF_DATA_LABELS, opts->labels, opts->labels_len},
		};

		for (size_t i = 0; i < ARRAY_SIZE(opt); i++)
			if (opt[i].data)
				objs[n++] = (struct sif_object_input){
				    .datatype = opt[i].datatype,
				    .data = opt[i].data,
				    .len = opt[i].len,
				    .fd = -1};
	}
	objs[n++] = (struct sif_object_input){
	    .datatype = SIF_DATA_PARTITION,
	    .len = (size_t)st.st_size,
	    .fd = src,
	    .fstype = SIF_FS_SQUASH,
	    .parttype = SIF_PART_PRIM_SYS,
	    .arch_code = arch,
	};
	fd = sif_open_temp(out, "tmp", 0777, &tmp, err);
	if (fd < 0) {
		err_wrap(err, "sif create '%s'", out);
		goto out;
	}
	say(opts, "writing '%s'\n", out);
	if (sif_write_fd(fd, out, objs, n, err) < 0)
		goto out;
	if (fsync(fd) < 0) {
		err_set(err, errno, "sif create '%s': sync", out);
		goto out;
	}
	if (place_output(tmp, out, opts && opts->force, err) < 0)
		goto out;
	free(tmp);
	tmp = NULL;
	rc = 0;
out:
	if (tmp)
		unlink(tmp);
	if (scratch)
		unlink(scratch);
	return rc;
}

/* ---- signatures ---- */

MPICTR_PUBLIC int mpictr_verify(const char *path, const char *const *keys,
				unsigned flags, char **out, int *verified,
				mpictr_err **err)
{
	cleanup_close int fd = -1;
	struct verify_report *r = NULL;

	if (!path || !out || !verified)
		return err_set(err, EINVAL, "mpictr_verify: missing argument");
	*out = NULL;
	*verified = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, errno, "verify: open '%s'", path);
	if (verify_image_fd(fd, path, (char *const *)keys,
			    flags & MPICTR_VERIFY_LEGACY ? VERIFY_LEGACY : 0,
			    NULL, &r, err) < 0)
		return -1;
	*out = flags & MPICTR_VERIFY_JSON ? verify_report_json(r)
					  : verify_report_text(r);
	*verified = verify_report_strict(r);
	verify_report_free(r);
	return 0;
}

MPICTR_PUBLIC int mpictr_sif_sign(const char *path, const char *keyfile,
				  char **summary, mpictr_err **err)
{
	if (!path || !keyfile || !summary)
		return err_set(err, EINVAL,
			       "mpictr_sif_sign: missing argument");
	return sign_image(path, keyfile, summary, err);
}
