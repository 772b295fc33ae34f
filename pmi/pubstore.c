/* pubstore.c - the publish/lookup name service (see pubstore.h). A plain
 * array: Open MPI publishes a handful of keys per connect/accept. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pmi/pubstore.h"
#include "common/util.h"

struct pub_wait {
	void *data;
	long deadline_ms; /* 0: none */
};

struct pubstore {
	struct pub_entry *e;
	size_t n, cap;
	void (*free_value)(void *);
	struct pub_wait *w; /* waiting lookups, in arrival order */
	size_t nw;
};

struct pubstore *pubstore_new(void (*free_value)(void *))
{
	struct pubstore *st = xcalloc(1, sizeof(*st));

	st->free_value = free_value;
	return st;
}

static void entry_clear(struct pubstore *st, struct pub_entry *e)
{
	free(e->key);
	free(e->nspace);
	if (st->free_value && e->value)
		st->free_value(e->value);
	memset(e, 0, sizeof(*e));
}

void pubstore_free(struct pubstore *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		entry_clear(st, &st->e[i]);
	free(st->e);
	free(st->w);
	free(st);
}

/* May (nspace, rank) see e? */
static bool visible(const struct pub_entry *e, const char *nspace,
		    uint32_t rank)
{
	switch (e->range) {
	case PUB_RANGE_ALL:
		return true;
	case PUB_RANGE_NSPACE:
		return strcmp(e->nspace, nspace) == 0;
	case PUB_RANGE_PROC:
		return strcmp(e->nspace, nspace) == 0 && e->rank == rank;
	default:
		return false;
	}
}

int pubstore_publish(struct pubstore *st, const char *nspace, uint32_t rank,
		     enum pub_range range, const char *key, void *value,
		     bool once)
{
	struct pub_entry *e;

	if (!key || !*key || strlen(key) > PUBSTORE_KEY_MAX) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < st->n; i++)
		if (st->e[i].range == range && strcmp(st->e[i].key, key) == 0 &&
		    visible(&st->e[i], nspace, rank)) {
			errno = EEXIST;
			return -1;
		}
	if (st->n >= PUBSTORE_MAX_ENTRIES) {
		errno = ENOSPC;
		return -1;
	}
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 16;
		st->e = xrealloc(st->e, st->cap * sizeof(*st->e));
	}
	e = &st->e[st->n++];
	memset(e, 0, sizeof(*e)); /* the slot may hold a moved entry's copy */
	e->key = xstrdup(key);
	e->nspace = xstrdup(nspace);
	e->rank = rank;
	e->range = range;
	e->once = once;
	e->value = value;
	return 0;
}

const struct pub_entry *pubstore_find(const struct pubstore *st,
				      const char *nspace, uint32_t rank,
				      const char *key)
{
	/* The narrowest range first: a key the caller published for itself
	 * hides a wider one of the same name. */
	const struct pub_entry *best = NULL;

	for (size_t i = 0; i < st->n; i++) {
		const struct pub_entry *e = &st->e[i];

		if (strcmp(e->key, key) == 0 && visible(e, nspace, rank) &&
		    (!best || e->range > best->range))
			best = e;
	}
	return best;
}

size_t pubstore_unpublish(struct pubstore *st, const char *nspace,
			  uint32_t rank, char *const *keys,
			  enum pub_range range, int range_any)
{
	size_t removed = 0, i = 0;

	while (i < st->n) {
		struct pub_entry *e = &st->e[i];

		if (strcmp(e->nspace, nspace) == 0 && e->rank == rank &&
		    (range_any || e->range == range) &&
		    (!keys || strv_contains(keys, e->key))) {
			entry_clear(st, e);
			st->e[i] = st->e[--st->n];
			removed++;
			continue;
		}
		i++;
	}
	return removed;
}

void pubstore_read(struct pubstore *st, const struct pub_entry *const *found,
		   size_t n)
{
	size_t i = 0;

	/* Mark first: removing moves the last entry into the hole. */
	for (size_t k = 0; k < n; k++) {
		size_t at = (size_t)(found[k] - st->e);

		if (at < st->n && st->e[at].once)
			st->e[at].read = true;
	}
	while (i < st->n) {
		if (st->e[i].read) {
			entry_clear(st, &st->e[i]);
			st->e[i] = st->e[--st->n];
			continue;
		}
		i++;
	}
}

size_t pubstore_count(const struct pubstore *st)
{
	return st ? st->n : 0;
}

void pubstore_wait(struct pubstore *st, void *data, long deadline_ms)
{
	st->w = xrealloc(st->w, (st->nw + 1) * sizeof(*st->w));
	st->w[st->nw].data = data;
	st->w[st->nw].deadline_ms = deadline_ms > 0 ? deadline_ms : 0;
	st->nw++;
}

/* Unlink the waits pick() selects, keeping the others in order. */
static void **take_waits(struct pubstore *st,
			 bool (*pick)(const struct pub_wait *w, void *arg),
			 void *arg)
{
	void **out = NULL;
	size_t kept = 0, n = 0;

	for (size_t i = 0; i < st->nw; i++) {
		if (pick(&st->w[i], arg)) {
			out = xrealloc(out, (n + 2) * sizeof(*out));
			out[n++] = st->w[i].data;
			out[n] = NULL;
		} else {
			st->w[kept++] = st->w[i];
		}
	}
	st->nw = kept;
	return out;
}

struct answered_arg {
	bool (*answered)(void *data, void *arg);
	void *arg;
};

static bool pick_answered(const struct pub_wait *w, void *arg)
{
	struct answered_arg *a = arg;

	return a->answered(w->data, a->arg);
}

void **pubstore_take_answerable(struct pubstore *st,
				bool (*answered)(void *data, void *arg),
				void *arg)
{
	struct answered_arg a = {answered, arg};

	return take_waits(st, pick_answered, &a);
}

static bool pick_expired(const struct pub_wait *w, void *arg)
{
	return w->deadline_ms && w->deadline_ms <= *(const long *)arg;
}

void **pubstore_take_expired(struct pubstore *st, long now_ms)
{
	return take_waits(st, pick_expired, &now_ms);
}

static bool pick_all(const struct pub_wait *w, void *arg)
{
	return true;
}

void **pubstore_take_all(struct pubstore *st)
{
	return take_waits(st, pick_all, NULL);
}

long pubstore_next_deadline(const struct pubstore *st)
{
	long next = 0;

	for (size_t i = 0; i < st->nw; i++)
		if (st->w[i].deadline_ms &&
		    (!next || st->w[i].deadline_ms < next))
			next = st->w[i].deadline_ms;
	return next;
}

size_t pubstore_waiting(const struct pubstore *st)
{
	return st->nw;
}
