/* check_error.c - the error object: construction, errno text, wrapping,
 * hints, exit codes. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/error.h"

START_TEST(test_set_appends_strerror)
{
	mpictr_err *err = NULL;

	ck_assert_int_eq(err_set(&err, ENOENT, "open '%s'", "/x"), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "open '/x': No such file or directory");
	ck_assert_int_eq(mpictr_err_errno(err), ENOENT);
	ck_assert_int_eq(mpictr_err_exit_code(err), 255);
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_set_without_errno)
{
	mpictr_err *err = NULL;

	err_set(&err, 0, "bad field '%s'", "Magic");
	ck_assert_str_eq(mpictr_err_message(err), "bad field 'Magic'");
	ck_assert_int_eq(mpictr_err_errno(err), 0);
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_wrap_and_hint)
{
	mpictr_err *err = NULL;

	err_set(&err, EPERM, "unshare");
	ck_assert_int_eq(err_wrap(&err, "create user namespace"), -1);
	ck_assert_int_eq(err_hint(&err, "check %s", "sysctl"), -1);
	ck_assert_str_eq(mpictr_err_message(err),
			 "create user namespace: unshare: Operation not "
			 "permitted (hint: check sysctl)");
	ck_assert_int_eq(mpictr_err_errno(err), EPERM);
	mpictr_err_free(err);
}
END_TEST

START_TEST(test_null_err_is_allowed)
{
	ck_assert_int_eq(err_set(NULL, EIO, "x"), -1);
	ck_assert_int_eq(err_wrap(NULL, "x"), -1);
	mpictr_err_free(NULL);
	ck_assert_str_eq(mpictr_err_message(NULL), "");
}
END_TEST

START_TEST(test_exit_code_and_relay)
{
	mpictr_err *err = NULL;

	err_set_exit(&err, 127, ENOENT, "command '%s' not found", "foo");
	ck_assert_int_eq(mpictr_err_exit_code(err), 127);
	mpictr_err_free(err);
	err = NULL;
	err_from_relay(&err, EACCES, 126, "exec 'x': Permission denied");
	ck_assert_int_eq(mpictr_err_exit_code(err), 126);
	ck_assert_int_eq(mpictr_err_errno(err), EACCES);
	ck_assert_str_eq(mpictr_err_message(err),
			 "exec 'x': Permission denied");
	mpictr_err_free(err);
}
END_TEST

static int sink_calls;
static char sink_last[256];
static void sink(enum mpictr_log_level level, const char *line, void *data)
{
	sink_calls++;
	strncpy(sink_last, line, sizeof(sink_last) - 1);
}

START_TEST(test_log_sink_levels)
{
	mpictr_set_log_sink(NULL, NULL, MPICTR_LOG_DEBUG);
	log_warn("dropped %d", 1); /* default sink discards */
	mpictr_set_log_sink(sink, NULL, MPICTR_LOG_NOTICE);
	log_debug("too verbose");
	ck_assert_int_eq(sink_calls, 0);
	log_warn("kept %d", 2);
	ck_assert_int_eq(sink_calls, 1);
	ck_assert_str_eq(sink_last, "kept 2");
	mpictr_set_log_sink(NULL, NULL, MPICTR_LOG_NOTICE);
}
END_TEST

Suite *suite_error(void);
Suite *suite_error(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_set_appends_strerror);
	tcase_add_test(tc, test_set_without_errno);
	tcase_add_test(tc, test_wrap_and_hint);
	tcase_add_test(tc, test_null_err_is_allowed);
	tcase_add_test(tc, test_exit_code_and_relay);
	tcase_add_test(tc, test_log_sink_levels);
	suite_add_tcase(s, tc);
	return s;
}
