/* slurm.c - parsers for Slurm's step variables. Every input is untrusted
 * text: counts and sizes are bounded and errors name the variable. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "sched/slurm.h"
#include "common/util.h"

/* Parse an unsigned decimal at *p (advancing it); max bounds the value. */
static int parse_u32(const char **p, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -1;
		s++;
	}
	*p = s;
	*out = (uint32_t)v;
	return 0;
}

int slurm_parse_tasks_per_node(const char *spec, uint32_t **counts,
			       uint32_t *nnodes, mpictr_err **err)
{
	const char *p = spec;
	uint32_t *out = NULL, n = 0;
	uint64_t total = 0;

	if (!spec || !*spec)
		return err_set(err, 0, "SLURM_STEP_TASKS_PER_NODE is empty");
	for (;;) {
		uint32_t c, rep = 1;

		if (parse_u32(&p, SLURM_MAX_TASKS, &c) < 0 || c == 0)
			goto bad;
		if (*p == '(') {
			p++;
			if (*p++ != 'x' ||
			    parse_u32(&p, SLURM_MAX_NODES, &rep) < 0 ||
			    rep == 0 || *p++ != ')')
				goto bad;
		}
		if ((uint64_t)n + rep > SLURM_MAX_NODES)
			goto too_many;
		total += (uint64_t)c * rep;
		if (total > SLURM_MAX_TASKS)
			goto too_many;
		out = xrealloc(out, (n + rep) * sizeof(*out));
		for (uint32_t i = 0; i < rep; i++)
			out[n++] = c;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			goto bad;
	}
	*counts = out;
	*nnodes = n;
	return 0;
bad:
	free(out);
	return err_set(err, 0,
		       "SLURM_STEP_TASKS_PER_NODE '%.64s' is malformed at "
		       "offset %zu (expected e.g. '4(x2),3')",
		       spec, (size_t)(p - spec));
too_many:
	free(out);
	return err_set(err, 0,
		       "SLURM_STEP_TASKS_PER_NODE '%.64s' is too large (at "
		       "most %u nodes and %u tasks)",
		       spec, SLURM_MAX_NODES, SLURM_MAX_TASKS);
}

/* A host vector that grows geometrically: host lists reach 65536 names,
 * and growing one slot at a time would be quadratic. */
struct hostvec {
	char **v;
	size_t n, cap;
};

static void hostvec_push(struct hostvec *h, char *s)
{
	if (h->n + 2 > h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->v = xrealloc(h->v, h->cap * sizeof(char *));
	}
	h->v[h->n++] = s;
	h->v[h->n] = NULL;
}

/* Expand one hostlist element "pre[1-3,5]post" (one bracket at most). */
static int expand_one(const char *elem, struct hostvec *hosts, size_t *n,
		      mpictr_err **err)
{
	const char *lb = strchr(elem, '['), *rb;
	const char *p;

	if (!lb) {
		if (strchr(elem, ']'))
			goto bad;
		if (++*n > SLURM_MAX_NODES)
			goto too_many;
		hostvec_push(hosts, xstrdup(elem));
		return 0;
	}
	rb = strchr(lb, ']');
	if (!rb || strchr(rb + 1, '[') || strchr(rb + 1, ']') || lb == elem)
		goto bad;
	p = lb + 1;
	while (p < rb) {
		const char *start = p;
		uint32_t a, b;
		int width;

		if (parse_u32(&p, 999999999, &a) < 0)
			goto bad;
		width = (int)(p - start);
		b = a;
		if (*p == '-') {
			p++;
			if (parse_u32(&p, 999999999, &b) < 0 || b < a)
				goto bad;
		}
		if (p < rb && *p++ != ',')
			goto bad;
		if ((uint64_t)*n + (b - a) + 1 > SLURM_MAX_NODES)
			goto too_many;
		for (uint64_t v = a; v <= b; v++) {
			hostvec_push(
			    hosts, xasprintf("%.*s%0*u%s", (int)(lb - elem),
					     elem, width, (unsigned)v, rb + 1));
			(*n)++;
		}
		if (p == rb && p[-1] == ',')
			goto bad;
	}
	if (p != rb || rb == lb + 1)
		goto bad;
	return 0;
bad:
	return err_set(err, 0,
		       "SLURM_STEP_NODELIST element '%.64s' is "
		       "malformed",
		       elem);
too_many:
	return err_set(err, 0, "SLURM_STEP_NODELIST has more than %u hosts",
		       SLURM_MAX_NODES);
}

int slurm_expand_hostlist(const char *spec, char ***hosts, mpictr_err **err)
{
	struct hostvec out = {NULL, 0, 0};
	size_t n = 0, depth = 0;
	const char *s = spec, *start = spec;

	if (!spec || !*spec)
		return err_set(err, 0, "SLURM_STEP_NODELIST is empty");
	if (strlen(spec) > (1 << 20))
		return err_set(err, 0, "SLURM_STEP_NODELIST is too long");
	/* Split on commas outside brackets. */
	for (;; s++) {
		if (*s == '[')
			depth++;
		else if (*s == ']' && depth)
			depth--;
		if ((*s == ',' && depth == 0) || *s == '\0') {
			cleanup_free char *elem =
			    xstrndup(start, (size_t)(s - start));
			if (!*elem || expand_one(elem, &out, &n, err) < 0) {
				strv_free(out.v);
				if (!*elem)
					return err_set(err, 0,
						       "SLURM_STEP_NODELIST "
						       "'%.64s' has an empty "
						       "element",
						       spec);
				return -1;
			}
			if (*s == '\0')
				break;
			start = s + 1;
		}
	}
	*hosts = out.v;
	return 0;
}

bool slurm_in_step(char *const *env)
{
	return env_get(env, "SLURM_JOB_ID") && env_get(env, "SLURM_STEP_ID") &&
	       env_get(env, "SLURM_PROCID") &&
	       env_get(env, "SLURM_STEP_TASKS_PER_NODE");
}

static int get_u32(char *const *env, const char *name, uint32_t max,
		   uint32_t *out, mpictr_err **err)
{
	const char *v = env_get(env, name);
	const char *p = v;

	if (!v)
		return err_set(err, 0, "%s is not set", name);
	if (parse_u32(&p, max, out) < 0 || *p)
		return err_set(err, 0, "%s '%.32s' is not a number in 0..%u",
			       name, v, max);
	return 0;
}

static bool valid_id(const char *s)
{
	if (!*s || strlen(s) > 32)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == '.'))
			return false;
	return true;
}

int slurm_step_from_env(char *const *env, struct slurm_step *s,
			mpictr_err **err)
{
	const char *job = env_get(env, "SLURM_JOB_ID");
	const char *step = env_get(env, "SLURM_STEP_ID");

	memset(s, 0, sizeof(*s));
	if (!job || !valid_id(job))
		return err_set(err, 0,
			       "SLURM_JOB_ID '%.32s' is missing or "
			       "malformed",
			       job ? job : "");
	if (!step || !valid_id(step))
		return err_set(err, 0,
			       "SLURM_STEP_ID '%.32s' is missing or "
			       "malformed",
			       step ? step : "");
	if (get_u32(env, "SLURM_NODEID", SLURM_MAX_NODES - 1, &s->node_id,
		    err) < 0 ||
	    get_u32(env, "SLURM_PROCID", SLURM_MAX_TASKS - 1, &s->proc_id,
		    err) < 0 ||
	    get_u32(env, "SLURM_LOCALID", SLURM_MAX_TASKS - 1, &s->local_id,
		    err) < 0)
		return -1;
	if (slurm_parse_tasks_per_node(
		env_get(env, "SLURM_STEP_TASKS_PER_NODE"), &s->tasks_per_node,
		&s->nnodes, err) < 0)
		return -1;
	if (s->node_id >= s->nnodes) {
		err_set(err, 0,
			"SLURM_NODEID %u is outside SLURM_STEP_TASKS_PER_NODE "
			"(%u nodes)",
			s->node_id, s->nnodes);
		slurm_step_free(s);
		return -1;
	}
	s->local_tasks = s->tasks_per_node[s->node_id];
	for (uint32_t i = 0; i < s->nnodes; i++)
		s->ntasks += s->tasks_per_node[i];
	if (s->local_id >= s->local_tasks || s->proc_id >= s->ntasks) {
		err_set(err, 0,
			"SLURM_LOCALID %u / SLURM_PROCID %u do not fit "
			"SLURM_STEP_TASKS_PER_NODE",
			s->local_id, s->proc_id);
		slurm_step_free(s);
		return -1;
	}
	s->job_id = xstrdup(job);
	s->step_id = xstrdup(step);
	return 0;
}

void slurm_step_free(struct slurm_step *s)
{
	free(s->job_id);
	free(s->step_id);
	free(s->tasks_per_node);
	memset(s, 0, sizeof(*s));
}
