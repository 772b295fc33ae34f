/* check_json.c - the JSON writer of common/util.h: commas, layouts,
 * empty containers, null for absent values, escaped keys. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

START_TEST(test_inline_nested)
{
	struct strbuf sb = STRBUF_INIT;
	struct jw w = {.sb = &sb};
	char *v[] = {"a", "b\"c", NULL};
	cleanup_free char *s = NULL;

	jw_obj(&w, NULL, &jw_inline);
	jw_str(&w, "s", "x");
	jw_str(&w, "absent", NULL);
	jw_strv(&w, "v", v);
	jw_strv(&w, "none", NULL);
	jw_strv_null(&w, "unset", NULL);
	jw_arr(&w, "empty", &jw_lines2);
	jw_end(&w);
	jw_obj(&w, "o", &jw_inline);
	jw_bool(&w, "t", true);
	jw_int(&w, "i", -3);
	jw_uint(&w, "u", 18446744073709551615ULL);
	jw_end(&w);
	jw_str(&w, "k\"\n", "v");
	jw_end(&w);
	s = sb_steal(&sb);
	ck_assert_str_eq(s, "{\"s\": \"x\", \"absent\": null, "
			    "\"v\": [\"a\", \"b\\\"c\"], \"none\": [], "
			    "\"unset\": null, \"empty\": [], "
			    "\"o\": {\"t\": true, \"i\": -3, "
			    "\"u\": 18446744073709551615}, "
			    "\"k\\\"\\n\": \"v\"}");
	ck_assert_int_eq(w.depth, 0);
}
END_TEST

/* The --dry-run shape: members a line each, lists inside four spaces
 * in and closed on their own line; then a layout changed midway. */
START_TEST(test_lines_and_relayout)
{
	static const struct jw_layout tail = {"", ",\n ", ""};
	struct strbuf sb = STRBUF_INIT;
	struct jw w = {.sb = &sb};
	cleanup_free char *s = NULL;
	cleanup_free char *t = NULL;

	jw_obj(&w, NULL, &jw_lines);
	jw_arr(&w, "l", &jw_lines2);
	jw_int(&w, NULL, 1);
	jw_obj(&w, NULL, &jw_inline);
	jw_null(&w, "n");
	jw_end(&w);
	jw_end(&w);
	jw_key(&w, "raw");
	sb_puts(&sb, "{}");
	jw_end(&w);
	s = sb_steal(&sb);
	ck_assert_str_eq(s, "{\n  \"l\": [\n    1,\n    {\"n\": null}\n  ],"
			    "\n  \"raw\": {}\n}");

	jw_obj(&w, NULL, &jw_inline);
	jw_int(&w, "a", 1);
	jw_int(&w, "b", 2);
	jw_relayout(&w, &tail);
	jw_int(&w, "c", 3);
	jw_end(&w);
	t = sb_steal(&sb);
	ck_assert_str_eq(t, "{\"a\": 1, \"b\": 2,\n \"c\": 3}");
}
END_TEST

Suite *suite_json(void);
Suite *suite_json(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_inline_nested);
	tcase_add_test(tc, test_lines_and_relayout);
	suite_add_tcase(s, tc);
	return s;
}
