/* check_join.c - join mode: the keyed hash behind the private rendezvous
 * names and the digest that keeps tasks with different containers apart. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "modes/keeper.h"
#include "modes/rendezvous.h"
#include "host/launcher.h"
#include "plan/plan.h"
#include "config/siteconf.h"
#include "common/util.h"

START_TEST(test_siphash_vectors)
{
	/* SipHash-2-4 reference vectors: key 00..0f, message 00..(n-1). */
	uint8_t key[16], msg[16];

	for (int i = 0; i < 16; i++)
		key[i] = msg[i] = (uint8_t)i;
	ck_assert_uint_eq(rendezvous_siphash(key, msg, 0),
			  0x726fdb47dd0e0e31ULL);
	ck_assert_uint_eq(rendezvous_siphash(key, msg, 8),
			  0x93f5f5799a932462ULL);
	ck_assert_uint_eq(rendezvous_siphash(key, msg, 15),
			  0xa129ca6149be45e5ULL);
	key[0] ^= 1;
	ck_assert_uint_ne(rendezvous_siphash(key, msg, 15),
			  0xa129ca6149be45e5ULL);
}
END_TEST

static void plan_two_binds(struct plan *p, unsigned long ro, bool contain)
{
	memset(p, 0, sizeof(*p));
	p->image.path = xstrdup("/images/a.sif");
	p->ops = xcalloc(2, sizeof(*p->ops));
	p->nops = 2;
	p->ops[0] = (struct mount_op){.kind = contain ? MOP_TMPFS : MOP_BIND,
				      .source = xstrdup("/home/u"),
				      .target = xstrdup("/home/u")};
	p->ops[1] = (struct mount_op){.kind = MOP_BIND,
				      .source = xstrdup("/data"),
				      .target = xstrdup("/y"),
				      .flags = ro};
	p->argv = strv_dup((char *[]){"a", NULL});
	p->cwd = xstrdup("/home/u");
}

START_TEST(test_plan_digest)
{
	struct plan a, b;

	plan_two_binds(&a, 0, false);
	plan_two_binds(&b, 0, false);
	ck_assert_uint_eq(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	/* the command and the start directory are the task's own */
	strv_free(b.argv);
	b.argv = strv_dup((char *[]){"b", "c", NULL});
	free(b.cwd);
	b.cwd = xstrdup("/");
	ck_assert_uint_eq(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	plan_free(&b);
	plan_two_binds(&b, MS_RDONLY, false);
	ck_assert_uint_ne(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	plan_free(&b);
	plan_two_binds(&b, 0, true);
	ck_assert_uint_ne(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	plan_free(&b);
	plan_two_binds(&b, 0, false);
	b.uid_in = 0;
	a.uid_in = 1000;
	ck_assert_uint_ne(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	plan_free(&a);
	plan_free(&b);
}
END_TEST

/* The join key's digest of the inputs covers every option of the table
 * that decides the container, and the plan's digest the options it was
 * built from: neither is a list of its own. */
START_TEST(test_inputs_digest)
{
	mpictr_config *base = mpictr_config_new();
	uint64_t d0 = rendezvous_inputs_digest(base);
	struct plan a, b;

	for (size_t i = 0; i < config_nopts; i++) {
		const struct config_opt *o = &config_opts[i];
		mpictr_config *c = mpictr_config_new();

		if (o->kind == CONFIG_BINDS)
			mpictr_config_add_bind(c, "/a:/b", NULL);
		else
			config_opt_put(c, o,
				       o->kind == CONFIG_BOOL ? "1" : "x");
		if (o->container)
			ck_assert_msg(rendezvous_inputs_digest(c) != d0, "%s",
				      o->option);
		else
			ck_assert_msg(rendezvous_inputs_digest(c) == d0, "%s",
				      o->option);
		mpictr_config_free(c);
	}
	mpictr_config_free(base);
	/* and every key of the config files' table that decides it (a task
	 * with another --config does not share a container that differs) */
	for (size_t i = 0; i < siteconf_nkeys; i++) {
		const struct site_key *k = &siteconf_keys[i];
		mpictr_config *c0 = mpictr_config_new(),
			      *c = mpictr_config_new();
		const char *sect = k->profile ? "[profile p]\n" : "";
		cleanup_free char *text =
		    xasprintf("%s%s = %s\n", sect, k->name, k->example);
		mpictr_err *err = NULL;

		ck_assert_int_eq(siteconf_parse(&c0->site, sect, strlen(sect),
						"a.conf", true, &err),
				 0);
		ck_assert_int_eq(siteconf_parse(&c->site, text, strlen(text),
						"b.conf", true, &err),
				 0);
		if (k->container)
			ck_assert_msg(rendezvous_inputs_digest(c) !=
					  rendezvous_inputs_digest(c0),
				      "%s", k->name);
		else
			ck_assert_msg(rendezvous_inputs_digest(c) ==
					  rendezvous_inputs_digest(c0),
				      "%s", k->name);
		mpictr_config_free(c0);
		mpictr_config_free(c);
	}
	plan_two_binds(&a, 0, false);
	plan_two_binds(&b, 0, false);
	b.options_digest = 1;
	ck_assert_uint_ne(rendezvous_plan_digest(&a),
			  rendezvous_plan_digest(&b));
	plan_free(&a);
	plan_free(&b);
}
END_TEST

START_TEST(test_claims)
{
	const uint32_t U = LAUNCHER_UNKNOWN, ranks[] = {0, 2};
	uint32_t a, b;

	/* exact mode, size 4, ranks 0 and 2 in */
	ck_assert_int_eq(keeper_check_claim(4, ranks, 2, 2, 1, 4, &a, &b),
			 KEEPER_OK);
	ck_assert_int_eq(keeper_check_claim(4, ranks, 2, 2, 2, 4, &a, &b),
			 KEEPER_DUP_RANK);
	ck_assert_uint_eq(a, 2);
	ck_assert_int_eq(keeper_check_claim(4, ranks, 2, 2, 1, 3, &a, &b),
			 KEEPER_SIZE_DIFF);
	ck_assert(a == 4 && b == 3);
	ck_assert_int_eq(keeper_check_claim(4, ranks, 2, 2, 1, U, &a, &b),
			 KEEPER_SIZE_DIFF);
	ck_assert_int_eq(keeper_check_claim(4, ranks, 2, 2, 4, 4, &a, &b),
			 KEEPER_RANK_RANGE);
	ck_assert(a == 4 && b == 4);
	/* a size known but no rank (MPICTR_LOCAL_SIZE only): counted */
	ck_assert_int_eq(keeper_check_claim(2, NULL, 0, 1, U, 2, &a, &b),
			 KEEPER_OK);
	ck_assert_int_eq(keeper_check_claim(2, NULL, 0, 2, U, 2, &a, &b),
			 KEEPER_TOO_MANY);
	ck_assert_uint_eq(a, 2);
	/* counting mode: duplicates only, and the cap */
	ck_assert_int_eq(keeper_check_claim(U, ranks, 2, 2, 5, U, &a, &b),
			 KEEPER_OK);
	ck_assert_int_eq(keeper_check_claim(U, ranks, 2, 2, 0, U, &a, &b),
			 KEEPER_DUP_RANK);
	ck_assert_int_eq(keeper_check_claim(U, ranks, 2, 2, 0, 2, &a, &b),
			 KEEPER_SIZE_DIFF);
	ck_assert_int_eq(keeper_check_claim(U, NULL, 0, 3, U, U, &a, &b),
			 KEEPER_OK);
	ck_assert_int_eq(
	    keeper_check_claim(U, NULL, 0, KEEPER_MAX_TASKS, U, U, &a, &b),
	    KEEPER_TOO_MANY);
}
END_TEST

Suite *suite_join(void);
Suite *suite_join(void)
{
	Suite *s = suite_create("join");
	TCase *tc = tcase_create("digest");

	tcase_add_test(tc, test_siphash_vectors);
	tcase_add_test(tc, test_plan_digest);
	tcase_add_test(tc, test_claims);
	tcase_add_test(tc, test_inputs_digest);
	suite_add_tcase(s, tc);
	return s;
}
