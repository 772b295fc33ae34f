/* pubstore.h - the name service behind PMIx publish/lookup/unpublish
 * (MPI_Publish_name, MPI_Lookup_name, the port exchange of
 * MPI_Comm_connect/accept): key -> value, scoped to one launch, with the
 * publisher and a range. Pure: no PMIx, no locking (the caller holds one);
 * values are opaque and freed through the store's free function.
 */
#ifndef MPICTR_PUBSTORE_H
#define MPICTR_PUBSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many entries in one store (a client cannot grow the
 * launcher without bound), keys at most PUBSTORE_KEY_MAX bytes. */
#define PUBSTORE_MAX_ENTRIES 4096
#define PUBSTORE_KEY_MAX 511

enum pub_range {
	PUB_RANGE_ALL,	  /* every process of the launch (session, global) */
	PUB_RANGE_NSPACE, /* processes of the publisher's namespace */
	PUB_RANGE_PROC,	  /* the publisher alone */
};

struct pub_entry {
	char *key;
	char *nspace; /* the publisher */
	uint32_t rank;
	enum pub_range range;
	bool once; /* removed by the first lookup that reads it */
	bool read; /* (pubstore_read's mark) */
	void *value;
};

struct pubstore;

struct pubstore *pubstore_new(void (*free_value)(void *));
/* Frees every value (take the waits first: their data is not freed).
 * NULL ok. */
void pubstore_free(struct pubstore *st);
/* Store key -> value (the store takes value on success); once: the first
 * lookup that reads it removes it (PMIX_PERSIST_FIRST_READ, which Open
 * MPI's port exchange asks for). -1 with errno: EEXIST when an entry of
 * that key and range is already visible to the publisher, ENOSPC when the
 * store is full, EINVAL for an empty or over-long key. */
int pubstore_publish(struct pubstore *st, const char *nspace, uint32_t rank,
		     enum pub_range range, const char *key, void *value,
		     bool once);
/* The entry of key that (nspace, rank) may see, or NULL. */
const struct pub_entry *pubstore_find(const struct pubstore *st,
				      const char *nspace, uint32_t rank,
				      const char *key);
/* Remove what (nspace, rank) published under keys (NULL-terminated; NULL
 * means all of its keys) in range, or in any range when range_any. Returns
 * the number removed. */
size_t pubstore_unpublish(struct pubstore *st, const char *nspace,
			  uint32_t rank, char *const *keys,
			  enum pub_range range, int range_any);
size_t pubstore_count(const struct pubstore *st);
/* After a lookup has copied the n entries found (pubstore_find): remove
 * those that are read-once. */
void pubstore_read(struct pubstore *st, const struct pub_entry *const *found,
		   size_t n);

/* ---- lookups that wait (PMIX_WAIT) ----
 * Queued in the store with the caller's data (opaque) and a deadline: the
 * lookup's PMIX_TIMEOUT as a time of the caller's clock (mono_ms), 0 for
 * none (it waits until answered or the store ends). Taking unlinks: the
 * caller answers what it took, once. Returned arrays are malloc'ed and
 * NULL-terminated; NULL when nothing was taken. */
void pubstore_wait(struct pubstore *st, void *data, long deadline_ms);
/* The waits answered(data, arg) says are answerable, in queue order. */
void **pubstore_take_answerable(struct pubstore *st,
				bool (*answered)(void *data, void *arg),
				void *arg);
/* The waits whose deadline is at or before now_ms, in queue order. */
void **pubstore_take_expired(struct pubstore *st, long now_ms);
/* Every wait (the end of the launch). */
void **pubstore_take_all(struct pubstore *st);
/* The earliest deadline of a queued wait, 0 when none has one. */
long pubstore_next_deadline(const struct pubstore *st);
size_t pubstore_waiting(const struct pubstore *st);

#endif
