/* SPDX-License-Identifier: Apache-2.0 */
/* check_log.c -- log.format=json lines (log_render_json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "lib/log.h"

/* 2026-11-29T20:09:17.537Z */
#define WALL_US (INT64_C(1795982957) * 1000000 + 537000)

/* Renders msg, checks the line is one JSON object ending in a newline,
 * returns it parsed (caller decrefs). */
static json_t *render(enum log_level lvl, const char *msg, size_t buflen)
{
	char *buf = malloc(buflen);
	size_t n = log_render_json(lvl, WALL_US, msg, buf, buflen);
	json_error_t jerr;
	json_t *j;

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, buflen);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_ptr_null(memchr(buf, '\n', n - 1));
	j = json_loadb(buf, n, 0, &jerr);
	ck_assert_msg(j != NULL, "not JSON (%s): %.*s", jerr.text, (int)n, buf);
	free(buf);
	return j;
}

static const char *str(json_t *j, const char *k)
{
	json_t *v = json_object_get(j, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

START_TEST(test_json_basic)
{
	json_t *j = render(LOG_LVL_WARN, "plain words", 4096);

	ck_assert_str_eq(str(j, "ts"), "2026-11-29T20:09:17.537Z");
	ck_assert_str_eq(str(j, "level"), "warn");
	ck_assert_str_eq(str(j, "msg"), "plain words");
	ck_assert_uint_eq(json_object_size(j), 3);
	json_decref(j);
}
END_TEST

/* The fields come from the relay's own wording of its lines. */
START_TEST(test_json_fields)
{
	json_t *j = render(LOG_LVL_ERROR,
	                   "fail-stop at LSN 0/16B3F00 (xid 7781): Kafka refuses "
	                   "event id 3f1c9a2e-77b0-4c55-9a51-0c2f1f0f7e11 (topic "
	                   "outbox.event.order, 120 bytes) on slot \"outbox_relay\"",
	                   4096);

	ck_assert_str_eq(str(j, "lsn"), "0/16B3F00");
	ck_assert(json_is_integer(json_object_get(j, "xid")));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "xid")), 7781);
	ck_assert_str_eq(str(j, "event_id"), "3f1c9a2e-77b0-4c55-9a51-0c2f1f0f7e11");
	ck_assert_str_eq(str(j, "topic"), "outbox.event.order");
	ck_assert_str_eq(str(j, "slot"), "outbox_relay");
	json_decref(j);

	/* Lookalikes are not fields: no LSN after "LSN", a word that only
	 * ends in xid, an LSN that is not one. */
	j = render(LOG_LVL_INFO, "confirmed_flush_lsn 0/1 and LSNs, myxid 12, "
	           "LSN 0/XYZ, LSN 123456789/1", 4096);
	ck_assert_ptr_null(json_object_get(j, "lsn"));
	ck_assert_ptr_null(json_object_get(j, "xid"));
	json_decref(j);
}
END_TEST

/* Whatever bytes a server message carries, the line is valid JSON and
 * one line; the message reads as the text format shows it. */
START_TEST(test_json_escaping)
{
	json_t *j = render(LOG_LVL_INFO, "a \"q\" \\ b\nc\rd\te\x01 \xff\xc3(",
	                   4096);

	ck_assert_str_eq(str(j, "msg"), "a \"q\" \\ b c d\te\x01 \xef\xbf\xbd\xef"
	                 "\xbf\xbd(");
	json_decref(j);
	j = render(LOG_LVL_DEBUG, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
	           "\xed\xa0\x80 \xc0\xaf", 4096);
	/* Overlong and surrogate forms are not UTF-8: replaced. */
	ck_assert_str_eq(str(j, "msg"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
	                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_str_eq(str(j, "level"), "debug");
	json_decref(j);
}
END_TEST

/* A message longer than the buffer: cut at a character, still JSON,
 * the fields kept. */
START_TEST(test_json_truncated)
{
	char msg[3000];
	json_t *j;

	memset(msg, '"', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	memcpy(msg, "xid 42 ", 7);
	for (size_t len = LOG_JSON_MIN; len < 400; len += 37) {
		j = render(LOG_LVL_INFO, msg, len);
		ck_assert_ptr_nonnull(str(j, "level"));
		json_decref(j);
	}
	j = render(LOG_LVL_INFO, msg, 512);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "xid")), 42);
	ck_assert_uint_lt(strlen(str(j, "msg")), 512);
	json_decref(j);
	ck_assert_uint_eq(log_render_json(LOG_LVL_INFO, WALL_US, "x", msg,
	                                  LOG_JSON_MIN - 1), 0);
}
END_TEST

START_TEST(test_format_parse)
{
	enum log_format f;

	ck_assert_int_eq(log_format_parse("json", &f), 0);
	ck_assert_int_eq(f, LOG_FMT_JSON);
	ck_assert_int_eq(log_format_parse("text", &f), 0);
	ck_assert_int_eq(f, LOG_FMT_TEXT);
	ck_assert_int_eq(log_format_parse("JSON", &f), -1);
	ck_assert_int_eq(log_format_parse("", &f), -1);
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, test_json_basic);
	tcase_add_test(tc, test_json_fields);
	tcase_add_test(tc, test_json_escaping);
	tcase_add_test(tc, test_json_truncated);
	tcase_add_test(tc, test_format_parse);
	suite_add_tcase(s, tc);
	return s;
}
