/* check_spawn.c - the pure parts of MPI dynamic processes: the
 * publish/lookup name service (pmi/pubstore.c: ranges, duplicates,
 * unpublish, bounds) and spawn requests (pmi/spawnreq.c: apps, the
 * environment filter, the universe check, ranks to apps), and the default
 * universe size (runtime/modes/spawn.c). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmi/pmi.h"
#include "pmi/pmi_internal.h"
#include "pmi/pubstore.h"
#include "modes/spawn.h"

static int freed;

static void count_free(void *v)
{
	freed++;
	free(v);
}

static struct pubstore *store(void)
{
	freed = 0;
	return pubstore_new(count_free);
}

START_TEST(test_publish_lookup_all)
{
	struct pubstore *st = store();
	const struct pub_entry *e;

	ck_assert_int_eq(pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL,
					  "port", strdup("p0"), false),
			 0);
	e = pubstore_find(st, "ns.b", 3, "port");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->value, "p0");
	ck_assert_str_eq(e->nspace, "ns.a");
	ck_assert_uint_eq(e->rank, 0);
	ck_assert_ptr_null(pubstore_find(st, "ns.b", 3, "other"));
	pubstore_free(st);
	ck_assert_int_eq(freed, 1);
}
END_TEST

START_TEST(test_ranges)
{
	struct pubstore *st = store();

	pubstore_publish(st, "ns.a", 1, PUB_RANGE_NSPACE, "k", strdup("n"), false);
	pubstore_publish(st, "ns.a", 1, PUB_RANGE_PROC, "mine", strdup("p"), false);
	/* the namespace sees it, another namespace does not */
	ck_assert_ptr_nonnull(pubstore_find(st, "ns.a", 0, "k"));
	ck_assert_ptr_null(pubstore_find(st, "ns.b", 1, "k"));
	/* only the publisher sees a process-local key */
	ck_assert_ptr_nonnull(pubstore_find(st, "ns.a", 1, "mine"));
	ck_assert_ptr_null(pubstore_find(st, "ns.a", 0, "mine"));
	/* the narrowest visible range wins */
	pubstore_publish(st, "ns.b", 0, PUB_RANGE_ALL, "k", strdup("all"), false);
	ck_assert_str_eq(pubstore_find(st, "ns.a", 0, "k")->value, "n");
	ck_assert_str_eq(pubstore_find(st, "ns.c", 0, "k")->value, "all");
	pubstore_free(st);
	ck_assert_int_eq(freed, 3);
}
END_TEST

START_TEST(test_duplicates_and_bounds)
{
	struct pubstore *st = store();
	char longkey[PUBSTORE_KEY_MAX + 2];
	void *v = strdup("x");

	pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "svc", strdup("1"), false);
	errno = 0;
	ck_assert_int_eq(
	    pubstore_publish(st, "ns.b", 0, PUB_RANGE_ALL, "svc", v, false), -1);
	ck_assert_int_eq(errno, EEXIST);
	/* another namespace's key of namespace range is no duplicate */
	pubstore_publish(st, "ns.a", 0, PUB_RANGE_NSPACE, "n", strdup("a"), false);
	ck_assert_int_eq(pubstore_publish(st, "ns.b", 0, PUB_RANGE_NSPACE,
					  "n", strdup("b"), false),
			 0);
	ck_assert_int_eq(pubstore_publish(st, "ns.a", 1, PUB_RANGE_NSPACE,
					  "n", v, false),
			 -1);
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	ck_assert_int_eq(
	    pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, longkey, v, false), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "", v, false),
			 -1);
	ck_assert_uint_eq(pubstore_count(st), 3);
	free(v); /* refused: still ours */
	pubstore_free(st);
	ck_assert_int_eq(freed, 3);
}
END_TEST

START_TEST(test_full_store)
{
	struct pubstore *st = pubstore_new(NULL);
	char key[32];

	for (int i = 0; i < PUBSTORE_MAX_ENTRIES; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(
		    pubstore_publish(st, "ns", 0, PUB_RANGE_ALL, key, NULL, false), 0);
	}
	ck_assert_int_eq(
	    pubstore_publish(st, "ns", 0, PUB_RANGE_ALL, "more", NULL, false), -1);
	ck_assert_int_eq(errno, ENOSPC);
	pubstore_free(st);
}
END_TEST

START_TEST(test_unpublish)
{
	struct pubstore *st = store();
	char *keys[] = {"a", NULL};

	pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "a", strdup("1"), false);
	pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "b", strdup("2"), false);
	pubstore_publish(st, "ns.a", 1, PUB_RANGE_ALL, "c", strdup("3"), false);
	/* only the publisher removes its keys */
	ck_assert_uint_eq(
	    pubstore_unpublish(st, "ns.a", 1, keys, PUB_RANGE_ALL, 1), 0);
	ck_assert_uint_eq(
	    pubstore_unpublish(st, "ns.a", 0, keys, PUB_RANGE_NSPACE, 0), 0);
	ck_assert_uint_eq(
	    pubstore_unpublish(st, "ns.a", 0, keys, PUB_RANGE_ALL, 0), 1);
	ck_assert_ptr_null(pubstore_find(st, "ns.x", 0, "a"));
	ck_assert_int_eq(freed, 1);
	/* NULL keys: all of the publisher's */
	ck_assert_uint_eq(pubstore_unpublish(st, "ns.a", 0, NULL, 0, 1), 1);
	ck_assert_ptr_nonnull(pubstore_find(st, "ns.x", 0, "c"));
	ck_assert_uint_eq(pubstore_count(st), 1);
	pubstore_free(st);
	ck_assert_int_eq(freed, 3);
}
END_TEST

/* Open MPI's port exchange publishes read-once keys: a second accept on
 * the same port publishes the same key again. */
START_TEST(test_read_once)
{
	struct pubstore *st = store();
	const struct pub_entry *found[3];

	pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "p:accept", strdup("1"),
			 true);
	pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL, "keep", strdup("2"),
			 false);
	pubstore_publish(st, "ns.b", 0, PUB_RANGE_ALL, "p:connect",
			 strdup("3"), true);
	found[0] = pubstore_find(st, "ns.c", 0, "p:accept");
	found[1] = pubstore_find(st, "ns.c", 0, "keep");
	found[2] = pubstore_find(st, "ns.c", 0, "p:connect");
	pubstore_read(st, found, 3);
	ck_assert_uint_eq(pubstore_count(st), 1);
	ck_assert_ptr_null(pubstore_find(st, "ns.c", 0, "p:accept"));
	ck_assert_ptr_null(pubstore_find(st, "ns.c", 0, "p:connect"));
	ck_assert_str_eq(pubstore_find(st, "ns.c", 0, "keep")->value, "2");
	ck_assert_int_eq(freed, 2);
	/* published again: no duplicate any more; and a new entry in a slot
	 * a read one was moved out of is not taken for read */
	ck_assert_int_eq(pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL,
					  "p:accept", strdup("4"), true),
			 0);
	ck_assert_int_eq(pubstore_publish(st, "ns.a", 0, PUB_RANGE_ALL,
					  "p:connect", strdup("5"), true),
			 0);
	found[0] = pubstore_find(st, "ns.c", 0, "keep");
	pubstore_read(st, found, 1);
	ck_assert_uint_eq(pubstore_count(st), 3);
	pubstore_free(st);
}
END_TEST

/* Waiting lookups (PMIX_WAIT) with and without a PMIX_TIMEOUT deadline:
 * the earliest deadline, expiry in order, answered ones taken out, the
 * rest at the end. */
static bool is_b(void *data, void *arg)
{
	return strcmp(data, arg) == 0;
}

START_TEST(test_wait_timeouts)
{
	struct pubstore *st = store();
	char a[] = "a", b[] = "b", c[] = "c", e[] = "e";
	void **got;

	ck_assert_int_eq(pubstore_next_deadline(st), 0);
	ck_assert_ptr_null(pubstore_take_expired(st, 1000));
	pubstore_wait(st, a, 100);
	pubstore_wait(st, b, 0); /* no timeout: waits until answered */
	pubstore_wait(st, c, 50);
	pubstore_wait(st, e, -5); /* a bad deadline is none */
	ck_assert_uint_eq(pubstore_waiting(st), 4);
	ck_assert_int_eq(pubstore_next_deadline(st), 50);
	ck_assert_ptr_null(pubstore_take_expired(st, 49));
	got = pubstore_take_expired(st, 50);
	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_eq(got[0], c);
	ck_assert_ptr_null(got[1]);
	free(got);
	ck_assert_int_eq(pubstore_next_deadline(st), 100);
	got = pubstore_take_answerable(st, is_b, "b");
	ck_assert_ptr_eq(got[0], b);
	ck_assert_ptr_null(got[1]);
	free(got);
	got = pubstore_take_expired(st, 1L << 40);
	ck_assert_ptr_eq(got[0], a);
	ck_assert_ptr_null(got[1]);
	free(got);
	ck_assert_int_eq(pubstore_next_deadline(st), 0);
	ck_assert_uint_eq(pubstore_waiting(st), 1);
	pubstore_wait(st, a, 7);
	got = pubstore_take_all(st); /* the end: in arrival order */
	ck_assert_ptr_eq(got[0], e);
	ck_assert_ptr_eq(got[1], a);
	ck_assert_ptr_null(got[2]);
	free(got);
	ck_assert_uint_eq(pubstore_waiting(st), 0);
	ck_assert_ptr_null(pubstore_take_all(st));
	pubstore_wait(st, a, 0); /* freed with the store, data untouched */
	pubstore_free(st);
}
END_TEST

/* ---- spawn requests ---- */

START_TEST(test_spawn_apps)
{
	struct pmi_spawn *sp = calloc(1, sizeof(*sp));
	char *argv[] = {"ignored", "child", "x", NULL};
	char *env[] = {"A=1",	   "PMIX_RANK=3", "PMIX_MCA_ptl=tcp",
		       "PMI_FD=4", "NOEQUALS",	  "=bad",
		       NULL};
	mpictr_err *err = NULL;
	uint32_t r;

	ck_assert_int_eq(pmi_spawn_add_app(sp, "/bin/prog", argv, env,
					   "/work", 2, &err),
			 0);
	ck_assert_int_eq(pmi_spawn_add_app(sp, NULL, argv, NULL, "", 3, &err),
			 0);
	ck_assert_uint_eq(sp->napps, 2);
	ck_assert_uint_eq(sp->nprocs, 5);
	/* cmd replaces argv[0]; without cmd argv[0] is the command */
	ck_assert_str_eq(sp->apps[0].argv[0], "/bin/prog");
	ck_assert_str_eq(sp->apps[0].argv[1], "child");
	ck_assert_str_eq(sp->apps[1].argv[0], "ignored");
	/* PMIx and PMI-1 variables and malformed entries are dropped */
	ck_assert_uint_eq(strv_len(sp->apps[0].env), 2);
	ck_assert_str_eq(sp->apps[0].env[0], "A=1");
	ck_assert_str_eq(sp->apps[0].env[1], "PMIX_MCA_ptl=tcp");
	ck_assert_str_eq(sp->apps[0].cwd, "/work");
	ck_assert_ptr_null(sp->apps[1].cwd);
	/* ranks go app by app */
	ck_assert_uint_eq(pmi_spawn_app_of(sp, 0, &r), 0);
	ck_assert_uint_eq(r, 0);
	ck_assert_uint_eq(pmi_spawn_app_of(sp, 1, &r), 0);
	ck_assert_uint_eq(r, 1);
	ck_assert_uint_eq(pmi_spawn_app_of(sp, 2, &r), 1);
	ck_assert_uint_eq(r, 0);
	ck_assert_uint_eq(pmi_spawn_app_of(sp, 4, &r), 1);
	ck_assert_uint_eq(r, 2);
	ck_assert_uint_eq(pmi_spawn_app_of(sp, 5, &r), 2);
	pmi_spawn_free(sp);
}
END_TEST

START_TEST(test_spawn_bad_apps)
{
	struct pmi_spawn *sp = calloc(1, sizeof(*sp));
	mpictr_err *err = NULL;

	ck_assert_int_eq(pmi_spawn_add_app(sp, NULL, NULL, NULL, NULL, 1, &err),
			 -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "no command"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(pmi_spawn_add_app(sp, "p", NULL, NULL, NULL, 0, &err),
			 -1);
	ck_assert_ptr_nonnull(strstr(mpictr_err_message(err), "0 processes"));
	mpictr_err_free(err);
	err = NULL;
	ck_assert_int_eq(pmi_spawn_add_app(sp, "p", NULL, NULL, NULL,
					   PMI_JOB_MAX_RANKS + 1, &err),
			 -1);
	mpictr_err_free(err);
	ck_assert_uint_eq(sp->napps, 0);
	pmi_spawn_free(sp);
}
END_TEST

START_TEST(test_spawn_universe)
{
	struct pmi_spawn *sp = calloc(1, sizeof(*sp));
	mpictr_err *err = NULL;

	ck_assert_int_eq(pmi_spawn_check(sp, 1, 4, &err), -1);
	mpictr_err_free(err);
	err = NULL;
	pmi_spawn_add_app(sp, "p", NULL, NULL, NULL, 2, &err);
	ck_assert_int_eq(pmi_spawn_check(sp, 2, 4, &err), 0);
	ck_assert_int_eq(pmi_spawn_check(sp, 3, 4, &err), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "spawn of 2 processes: 3 of the universe's 4 slots "
			 "are in use (hint: raise it with --universe-size, "
			 "or drop --no-oversubscribe)");
	mpictr_err_free(err);
	pmi_spawn_free(sp);
}
END_TEST

START_TEST(test_reserved_vars)
{
	ck_assert(pmi_var_reserved("PMIX_NAMESPACE=x"));
	ck_assert(pmi_var_reserved("PMIX_SERVER_URI4"));
	ck_assert(!pmi_var_reserved("PMIX_MCA_gds=hash"));
	ck_assert(pmi_var_reserved("PMI_FD=3"));
	ck_assert(pmi_var_reserved("PMI_SPAWNED"));
	ck_assert(!pmi_var_reserved("PMI_FDX=3"));
	ck_assert(!pmi_var_reserved("OMPI_MCA_pml=ob1"));
}
END_TEST

Suite *suite_spawn(void);
Suite *suite_spawn(void)
{
	Suite *s = suite_create("spawn");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_publish_lookup_all);
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_duplicates_and_bounds);
	tcase_add_test(tc, test_full_store);
	tcase_add_test(tc, test_unpublish);
	tcase_add_test(tc, test_read_once);
	tcase_add_test(tc, test_wait_timeouts);
	tcase_add_test(tc, test_spawn_apps);
	tcase_add_test(tc, test_spawn_bad_apps);
	tcase_add_test(tc, test_spawn_universe);
	tcase_add_test(tc, test_reserved_vars);
	suite_add_tcase(s, tc);
	return s;
}
