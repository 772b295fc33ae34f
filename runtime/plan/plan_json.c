/* plan_json.c - the plan as `--dry-run` prints it (plan.h): one JSON
 * object whose keys are the interface contract's (docs/architecture.md),
 * written with the JSON writer of common/util.h.
 */
#include <stdlib.h>
#include <sys/mount.h>

#include "common/util.h"
#include "plan/plan.h"

char *mop_options(const struct mount_op *op)
{
	struct strbuf sb = STRBUF_INIT;

	switch (op->kind) {
	case MOP_IMAGE:
		if (op->flags & MS_RDONLY)
			sb_puts(&sb, "ro");
		break;
	case MOP_BIND:
		sb_puts(&sb, op->src_is_dir ? "rbind" : "bind");
		sb_puts(&sb, op->flags & MS_RDONLY ? ",ro" : ",rw");
		break;
	case MOP_DEV:
	case MOP_FILE:
		sb_puts(&sb, "bind");
		sb_puts(&sb, op->flags & MS_RDONLY ? ",ro" : ",rw");
		break;
	case MOP_TMPFS:
	case MOP_DEVPTS:
		sb_puts(&sb, "rw");
		break;
	case MOP_SYMLINK:
		sb_puts(&sb, "symlink");
		break;
	case MOP_OVERLAY:
		sb_puts(&sb, "overlay,rw");
		break;
	default:
		break;
	}
	if (op->flags & MS_NOSUID)
		sb_puts(&sb, ",nosuid");
	if (op->flags & MS_NODEV)
		sb_puts(&sb, ",nodev");
	if (op->flags & MS_NOEXEC)
		sb_puts(&sb, ",noexec");
	if (op->data) {
		sb_putc(&sb, ',');
		sb_puts(&sb, op->data);
	}
	return sb_steal(&sb);
}

/* "shell": `mpictr shell`'s, chosen in the container (--shell, else the
 * image's /bin/bash --norc, else /bin/sh; with -i), or null. */
static void json_shell(struct jw *w, const struct plan *p)
{
	if (!p->shell) {
		jw_null(w, "shell");
		return;
	}
	jw_obj(w, "shell", &jw_inline);
	jw_str(w, "path", p->shell_path);
	jw_bool(w, "interactive", true);
	jw_end(w);
}

static void json_image(struct jw *w, const struct plan *p)
{
	static const char *const kinds[] = {"dir", "squashfs", "sif"};

	jw_obj(w, "image", &jw_inline);
	jw_str(w, "path", p->image.path);
	jw_str(w, "kind", kinds[p->image.kind]);
	jw_uint(w, "offset", p->image.offset);
	jw_end(w);
}

/* "mounts": the image's source is its file, a generated file's the word
 * "generated". */
static void json_mounts(struct jw *w, const struct plan *p)
{
	bool packed = p->image.kind != IMAGE_DIR;

	jw_arr(w, "mounts", &jw_lines2);
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		cleanup_free char *opts = mop_options(op);
		cleanup_free char *img = NULL;

		if (op->kind == MOP_IMAGE && packed)
			img = xasprintf("%s,squashfs,offset=%llu", opts,
					(unsigned long long)p->image.offset);
		jw_obj(w, NULL, &jw_inline);
		jw_str(w, "source",
		       op->kind == MOP_FILE ? "generated"
		       : img		    ? p->image.path
					    : op->source);
		jw_str(w, "target", op->target);
		jw_str(w, "options", img ? img : opts);
		jw_end(w);
	}
	jw_end(w);
}

/* "image_config": what came from a pulled image's config, or null. */
static void json_image_config(struct jw *w, const struct plan *p)
{
	if (!p->oci_known) {
		jw_null(w, "image_config");
		return;
	}
	jw_obj(w, "image_config", &jw_inline);
	jw_strv(w, "entrypoint", p->oci.entrypoint);
	jw_strv(w, "cmd", p->oci.cmd);
	jw_strv(w, "env", p->image_env);
	jw_str(w, "working_dir", p->oci.workdir);
	jw_str(w, "user", p->oci.user);
	jw_bool(w, "user_ignored", oci_config_user_nonroot(&p->oci));
	jw_end(w);
}

static void json_devices(struct jw *w, const struct plan *p)
{
	jw_arr(w, "devices", &jw_lines2);
	for (size_t i = 0; i < p->ndevices; i++) {
		jw_obj(w, NULL, &jw_inline);
		jw_str(w, "path", p->devices[i].path);
		jw_str(w, "kind", p->devices[i].kind);
		jw_str(w, "reason", p->devices[i].reason);
		jw_end(w);
	}
	jw_end(w);
}

static void json_mpi(struct jw *w, const struct plan *p)
{
	jw_arr(w, "mpi", &jw_lines2);
	for (size_t i = 0; i < p->nmpi; i++) {
		const struct mpi_inject *m = &p->mpi[i];

		jw_obj(w, NULL, &jw_inline);
		jw_str(w, "profile", m->profile);
		jw_str(w, "host", m->host.path);
		jw_str(w, "soname", m->host.soname);
		jw_str(w, "family", mpiabi_family_name(m->host.family));
		jw_str(w, "abi_check", m->warn_only ? "warn" : "enforce");
		jw_end(w);
	}
	jw_end(w);
}

/* "checks": what the holder checks besides mounting (--dry-run shows
 * every step): the verbs providers of the exposed HCAs (decided by the
 * plan, whose binds are then among the mounts, or by the holder) and the
 * ABI of each injected host MPI against the image's (in the holder, with
 * the image mounted). */
static void json_checks(struct jw *w, const struct plan *p)
{
	jw_arr(w, "checks", &jw_lines2);
	if (p->hostdev.nhcas > 0) {
		jw_obj(w, NULL, &jw_inline);
		jw_str(w, "check", "verbs_providers");
		jw_bool(w, "inject", p->inject_verbs);
		jw_str(w, "decided", p->verbs_in_holder ? "holder" : "plan");
		jw_strv(w, "warnings", p->verbs_warnings);
		jw_end(w);
	}
	for (size_t i = 0; i < p->nmpi; i++) {
		jw_obj(w, NULL, &jw_inline);
		jw_str(w, "check", "mpi_abi");
		jw_str(w, "profile", p->mpi[i].profile);
		jw_str(w, "host", p->mpi[i].host.path);
		jw_str(w, "action", p->mpi[i].warn_only ? "warn" : "enforce");
		jw_str(w, "decided", p->mpi_checked ? "plan" : "holder");
		if (p->mpi_checked) {
			jw_strv(w, "warnings", p->mpi_warnings);
			jw_str(w, "refused",
			       p->mpi_refusal ? p->mpi_refusal->msg : NULL);
		}
		jw_end(w);
	}
	jw_end(w);
}

/* The job's PMI shape: "universe" is null where it is not ours to
 * decide (no PMI server of ours; node daemon mode without
 * --universe-size, where it is the job's size). */
static void json_pmi_shape(struct jw *w, const struct plan *p)
{
	jw_int(w, "ranks", p->nranks);
	jw_bool(w, "serves_pmi", p->serves_pmi);
	jw_uint(w, "holders", p->nholders);
	if (p->universe)
		jw_uint(w, "universe", p->universe);
	else
		jw_null(w, "universe");
	jw_bool(w, "universe_hard", p->universe_hard);
}

char *plan_to_json(const struct plan *p)
{
	struct strbuf sb = STRBUF_INIT;
	struct jw w = {.sb = &sb};
	char **env = plan_rank_env(p, p->local_rank);

	jw_obj(&w, NULL, &jw_lines);
	jw_strv(&w, "command", p->argv);
	json_shell(&w, p);
	jw_str(&w, "mode", run_mode_name(p->mode));
	jw_str(&w, "launch", p->launch);
	json_image(&w, p);
	json_mounts(&w, p);
	jw_strv(&w, "env", env);
	jw_strv(&w, "env_scripts", p->env_scripts);
	jw_str(&w, "cwd", p->cwd);
	json_image_config(&w, p);
	jw_uint(&w, "uid", p->uid_in);
	jw_uint(&w, "gid", p->gid_in);
	json_devices(&w, p);
	jw_strv(&w, "profiles", p->profiles);
	json_mpi(&w, p);
	jw_int(&w, "fuse_workers", p->fuse_workers);
	json_pmi_shape(&w, p);
	/* the site's signature policy (the holder applies it:
	 * docs/signing.md) */
	jw_obj(&w, "signature_policy", &jw_inline);
	jw_bool(&w, "require_signature", p->trust.require);
	jw_strv(&w, "trusted_keys", p->trust.keys);
	jw_bool(&w, "signed_overlay", p->trust.overlay.allow);
	jw_bool(&w, "signed_writable_tmpfs", p->trust.writable_tmpfs.allow);
	jw_bool(&w, "signed_save", p->trust.save.allow);
	jw_end(&w);
	json_checks(&w, p);
	jw_end(&w);
	strv_free(env);
	return sb_steal(&sb);
}
