/* vreport.c - verdicts and text of a verify report (verify.h): pure code,
 * in libmpictr and in the verify plugin. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sif/verify.h"

void verify_report_free(struct verify_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsigs; i++) {
		struct vsig *s = &r->sigs[i];
		free(s->hash);
		free(s->key);
		free(s->key_id);
		free(s->signer_ids);
		free(s->msg);
		free(s->objects);
	}
	for (size_t i = 0; i < r->ngroups; i++)
		free(r->groups[i].objects);
	free(r->sigs);
	free(r->groups);
	free(r->image);
	free(r->problem);
	free(r);
}

/* Every non-legacy signature linked to group g verifies, and one does. */
static bool group_strict(const struct verify_report *r, const struct vgroup *g)
{
	size_t ok = 0;

	for (size_t i = 0; i < r->nsigs; i++) {
		const struct vsig *s = &r->sigs[i];
		if (s->group != g->id || s->status == VSIG_LEGACY ||
		    s->status == VSIG_NOT_GROUP)
			continue;
		if (s->status != VSIG_OK)
			return false;
		ok++;
	}
	return ok > 0;
}

bool verify_report_strict(const struct verify_report *r)
{
	if (r->problem || r->ngroups == 0)
		return false;
	for (size_t i = 0; i < r->ngroups; i++)
		if (!group_strict(r, &r->groups[i]))
			return false;
	return true;
}

/* A signature that counts for the site: verified, not legacy. */
static bool sig_trusted(const struct vsig *s)
{
	return s->status == VSIG_OK && strcmp(s->form, "legacy") != 0;
}

static bool group_trusted(const struct verify_report *r, const struct vgroup *g)
{
	for (size_t i = 0; i < r->nsigs; i++)
		if (r->sigs[i].group == g->id && sig_trusted(&r->sigs[i]))
			return true;
	return false;
}

bool verify_report_trusted(const struct verify_report *r)
{
	if (r->problem || r->ngroups == 0)
		return false;
	for (size_t i = 0; i < r->ngroups; i++)
		if (!group_trusted(r, &r->groups[i]))
			return false;
	return true;
}

static const char *status_word(enum vsig_status st)
{
	switch (st) {
	case VSIG_OK:
		return "verified";
	case VSIG_UNKNOWN_KEY:
		return "unknown key";
	case VSIG_MALFORMED:
		return "malformed";
	case VSIG_MISMATCH:
		return "does not match";
	case VSIG_LEGACY:
		return "legacy, not checked";
	case VSIG_NOT_GROUP:
		return "not considered";
	default:
		return "?";
	}
}

static void sb_ids(struct strbuf *sb, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_printf(sb, "%s%u", i ? ", " : "", v[i]);
	if (!n)
		sb_puts(sb, "none");
}

static void sig_target(struct strbuf *sb, const struct vsig *s)
{
	if (s->object)
		sb_printf(sb, "object %u", s->object);
	else if (s->group)
		sb_printf(sb, "group %u", s->group);
	else
		sb_puts(sb, "nothing");
}

/* The reason group g fails the policy, or NULL. */
static char *group_why(const struct verify_report *r, const struct vgroup *g)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0;

	if (group_trusted(r, g))
		return NULL;
	sb_printf(&sb, "group %u (objects ", g->id);
	sb_ids(&sb, g->objects, g->nobjects);
	sb_puts(&sb, ")");
	for (size_t i = 0; i < r->nsigs; i++) {
		const struct vsig *s = &r->sigs[i];
		if (s->group != g->id)
			continue;
		sb_printf(&sb, "%s signature object %u (%s): %s", n ? ";" : ":",
			  s->id, s->form,
			  s->msg ? s->msg : status_word(s->status));
		n++;
	}
	if (!n)
		sb_puts(&sb, " is not signed");
	return sb_steal(&sb);
}

char *verify_report_why(const struct verify_report *r)
{
	struct strbuf sb = STRBUF_INIT;

	if (r->problem)
		sb_puts(&sb, r->problem);
	else if (r->ngroups == 0)
		sb_puts(&sb, "the image has no object groups to sign");
	for (size_t i = 0; i < r->ngroups && !r->problem; i++) {
		char *w = group_why(r, &r->groups[i]);
		if (w)
			sb_printf(&sb, "%s%s", sb.len ? "; " : "", w);
		free(w);
	}
	if (!sb.len)
		sb_puts(&sb, "verified");
	return sb_steal(&sb);
}

char *verify_report_text(const struct verify_report *r)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < r->nsigs; i++) {
		const struct vsig *s = &r->sigs[i];
		sb_printf(&sb, "signature %u (%s, %s) over ", s->id, s->form,
			  s->hash ? s->hash : "unknown hash");
		sig_target(&sb, s);
		sb_printf(&sb, ": %s", status_word(s->status));
		if (s->key)
			sb_printf(&sb, " %s '%s' (%s)",
				  s->status == VSIG_OK ? "by" : "(signed by",
				  s->key, s->key_id);
		if (s->key && s->status != VSIG_OK)
			sb_putc(&sb, ')');
		if (s->status == VSIG_OK && s->nobjects) {
			sb_puts(&sb, ", objects ");
			sb_ids(&sb, s->objects, s->nobjects);
			sb_puts(&sb, r->data_cached ? " (data digests "
						      "cached)"
						    : ": digests match");
		}
		if (s->msg)
			sb_printf(&sb, ": %s", s->msg);
		sb_putc(&sb, '\n');
	}
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct vgroup *g = &r->groups[i];
		bool strict = group_strict(r, g);
		sb_printf(&sb, "group %u (objects ", g->id);
		sb_ids(&sb, g->objects, g->nobjects);
		sb_printf(&sb, "): %s", strict ? "verified" : "NOT verified");
		for (size_t j = 0, n = 0; j < r->nsigs; j++)
			if (r->sigs[j].group == g->id && r->sigs[j].key)
				sb_printf(&sb, "%s'%s'",
					  n++ ? ", " : ", signed by ",
					  r->sigs[j].key);
		if (!g->nsigs)
			sb_puts(&sb, ", not signed");
		else if (g->nlegacy == g->nsigs && !strict)
			sb_puts(&sb, ", legacy signatures only");
		sb_putc(&sb, '\n');
	}
	if (r->problem)
		sb_printf(&sb, "image: %s\n", r->problem);
	sb_printf(&sb, "%s: %s\n", r->image,
		  verify_report_strict(r) ? "verified" : "NOT verified");
	return sb_steal(&sb);
}

/* The report's JSON: the top object's first members on one line, then
 * "signatures" and "groups" a line each, their entries a line each. */
static const struct jw_layout vr_top = {"", ",\n ", ""};
static const struct jw_layout vr_list = {"\n  ", ",\n  ", ""};

static void json_ids(struct jw *w, const char *key, const uint32_t *v, size_t n)
{
	jw_arr(w, key, &jw_inline);
	for (size_t i = 0; i < n; i++)
		jw_uint(w, NULL, v[i]);
	jw_end(w);
}

static void json_sig(struct jw *w, const struct verify_report *r,
		     const struct vsig *s)
{
	static const char *const st[] = {
	    [VSIG_OK] = "verified",
	    [VSIG_UNKNOWN_KEY] = "unknown-key",
	    [VSIG_MALFORMED] = "malformed",
	    [VSIG_MISMATCH] = "mismatch",
	    [VSIG_LEGACY] = "legacy-ignored",
	    [VSIG_NOT_GROUP] = "ignored",
	};
	jw_obj(w, NULL, &jw_inline);
	jw_uint(w, "id", s->id);
	jw_str(w, "form", s->form);
	jw_str(w, "hash", s->hash);
	jw_uint(w, "group", s->group);
	jw_uint(w, "object", s->object);
	jw_str(w, "status", st[s->status]);
	jw_str(w, "key", s->key);
	jw_str(w, "key_id", s->key_id);
	jw_str(w, "signer_ids", s->signer_ids);
	json_ids(w, "objects", s->objects, s->nobjects);
	jw_bool(w, "data_cached", r->data_cached);
	jw_str(w, "error", s->msg);
	jw_end(w);
}

char *verify_report_json(const struct verify_report *r)
{
	struct strbuf sb = STRBUF_INIT;
	struct jw w = {.sb = &sb};

	jw_obj(&w, NULL, &jw_inline);
	jw_str(&w, "image", r->image);
	jw_bool(&w, "verified", verify_report_strict(r));
	jw_bool(&w, "trusted", verify_report_trusted(r));
	jw_str(&w, "problem", r->problem);
	jw_relayout(&w, &vr_top);
	jw_arr(&w, "signatures", &vr_list);
	for (size_t i = 0; i < r->nsigs; i++)
		json_sig(&w, r, &r->sigs[i]);
	jw_end(&w);
	jw_arr(&w, "groups", &vr_list);
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct vgroup *g = &r->groups[i];

		jw_obj(&w, NULL, &jw_inline);
		jw_uint(&w, "id", g->id);
		json_ids(&w, "objects", g->objects, g->nobjects);
		jw_uint(&w, "signatures", g->nsigs);
		jw_bool(&w, "verified", group_strict(r, g));
		jw_bool(&w, "trusted", group_trusted(r, g));
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	sb_putc(&sb, '\n');
	return sb_steal(&sb);
}
