/* SPDX-License-Identifier: Apache-2.0 */
/* check_route.c -- topic templates and the Kafka headers of an event. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "lib/common.h"
#include "decode/dlq.h"
#include "decode/route.h"
#include "decode/w2j.h"
#include "fixtures.h"

#define TMPL "outbox.event.${routedByValue}"

static char out[512];
static char err[512];

static int topic(const char *tmpl, const char *value, size_t outlen)
{
	out[0] = '\0';
	err[0] = '\0';
	return route_topic(tmpl, value, strlen(value), out, outlen, err,
	                   sizeof(err));
}

static void expect_bad(const char *tmpl, const char *value,
                       const char *needle)
{
	ck_assert_msg(topic(tmpl, value, sizeof(out)) == -1, "accepted %s",
	              out);
	ck_assert_msg(strstr(err, needle) != NULL, "'%s' lacks '%s'", err,
	              needle);
}

START_TEST(test_expand)
{
	ck_assert_int_eq(topic(TMPL, "Order", sizeof(out)), 18);
	ck_assert_str_eq(out, "outbox.event.Order");
	ck_assert_int_eq(topic("${routedByValue}", "a-b_c.D9", sizeof(out)), 8);
	ck_assert_str_eq(out, "a-b_c.D9");
	/* Every occurrence, and none at all. */
	ck_assert_int_eq(topic("${routedByValue}.x.${routedByValue}", "ab",
	                       sizeof(out)),
	                 7);
	ck_assert_str_eq(out, "ab.x.ab");
	ck_assert_int_eq(topic("fixed_topic", "ignored", sizeof(out)), 11);
	ck_assert_str_eq(out, "fixed_topic");
	/* The value is inserted once, never expanded again. */
	expect_bad(TMPL, "${routedByValue}", "byte 0x24");
}
END_TEST

START_TEST(test_value_by_length)
{
	/* The value need not be NUL-terminated: rows give pointer + length. */
	ck_assert_int_eq(route_topic(TMPL, "OrderXXXX", 5, out, sizeof(out), err,
	                             sizeof(err)),
	                 18);
	ck_assert_str_eq(out, "outbox.event.Order");
}
END_TEST

START_TEST(test_invalid_chars)
{
	expect_bad(TMPL, "Or der",
	           "value \"Or der\" makes topic \"outbox.event.Or der\" "
	           "invalid: byte 0x20 at offset 15 is not in [A-Za-z0-9._-]");
	expect_bad(TMPL, "a/b", "byte 0x2F");
	expect_bad(TMPL, "a:b", "byte 0x3A");
	/* Non-ASCII and control bytes are shown escaped, never raw. */
	expect_bad(TMPL, "K\xc3\xbcnde", "value \"K\\xC3\\xBCnde\"");
	expect_bad(TMPL, "a\nb", "value \"a\\x0Ab\"");
	expect_bad(TMPL, "q\"", "value \"q\\x22\"");
	/* A bad template is caught too (the value is then innocent). */
	expect_bad("outbox/${routedByValue}", "Order", "byte 0x2F at offset 6");
	expect_bad("${routedBy}", "Order", "byte 0x24 at offset 0");
	/* Kafka reserves "." and "..". */
	expect_bad("${routedByValue}", ".", "reserves");
	expect_bad("${routedByValue}", "..", "reserves");
	ck_assert_int_eq(topic("${routedByValue}", "...", sizeof(out)), 3);
	expect_bad("${routedByValue}", "", "is empty");
}
END_TEST

START_TEST(test_length_limits)
{
	char v[400];

	/* 13 + 236 = 249: the longest topic Kafka takes. */
	memset(v, 'x', 236);
	v[236] = '\0';
	ck_assert_int_eq(topic(TMPL, v, sizeof(out)), 249);
	ck_assert_uint_eq(strlen(out), 249);
	v[236] = 'y';
	v[237] = '\0';
	expect_bad(TMPL, v, "is 250 bytes long; Kafka allows at most 249");
	/* The value in the message is cut short. */
	ck_assert_msg(strstr(err, "xxx...\"") != NULL, "%s", err);
	ck_assert_uint_lt(strlen(err), 200);

	/* Long and invalid at once: the length is reported. */
	memset(v, ' ', 399);
	v[399] = '\0';
	expect_bad(TMPL, v, "Kafka allows at most 249");
}
END_TEST

START_TEST(test_small_buffer)
{
	/* "outbox.event.Order" needs 19 bytes with its NUL. */
	ck_assert_int_eq(topic(TMPL, "Order", 19), 18);
	ck_assert_str_eq(out, "outbox.event.Order");
	ck_assert_int_eq(topic(TMPL, "Order", 18), -1);
	ck_assert_msg(strstr(err, "needs 19 bytes, buffer has 18") != NULL, "%s",
	              err);
	ck_assert_int_eq(topic(TMPL, "Order", 0), -1);
}
END_TEST

static struct record make_rec(void)
{
	struct record rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = REC_EVENT;
	rec.xid = 731;
	rec.id = (struct rec_str){ "00000000-0000-4000-8000-000000000001", 36 };
	rec.key = (struct rec_str){ "o-1", 3 };
	rec.type = (struct rec_str){ "OrderCreated", 12 };
	rec.route = (struct rec_str){ "Order", 5 };
	rec.payload = (struct rec_str){ "{}", 2 };
	return rec;
}

START_TEST(test_headers)
{
	static const char *const names[ROUTE_H_COUNT] = {
		"id", "event_type", "aggregate_type", "pg_lsn", "pg_xid"
	};
	struct record rec = make_rec();
	struct route_headers h;

	memset(&h, 0xA5, sizeof(h)); /* no field may be left unset */
	route_headers(&h, &rec, 0x1965310);
	for (int i = 0; i < ROUTE_H_COUNT; i++)
		ck_assert_str_eq(h.name[i], names[i]);
	ck_assert_ptr_eq(h.value[ROUTE_H_ID], rec.id.ptr);
	ck_assert_uint_eq(h.len[ROUTE_H_ID], 36);
	ck_assert_ptr_eq(h.value[ROUTE_H_EVENT_TYPE], rec.type.ptr);
	ck_assert_uint_eq(h.len[ROUTE_H_EVENT_TYPE], 12);
	ck_assert_ptr_eq(h.value[ROUTE_H_AGGREGATE_TYPE], rec.route.ptr);
	ck_assert_uint_eq(h.len[ROUTE_H_AGGREGATE_TYPE], 5);
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "0/1965310");
	ck_assert_uint_eq(h.len[ROUTE_H_PG_LSN], 9);
	ck_assert_ptr_eq(h.value[ROUTE_H_PG_LSN], h.lsn_buf);
	ck_assert_str_eq(h.value[ROUTE_H_PG_XID], "731");
	ck_assert_uint_eq(h.len[ROUTE_H_PG_XID], 3);
	ck_assert_ptr_eq(h.value[ROUTE_H_PG_XID], h.xid_buf);
}
END_TEST

START_TEST(test_headers_lsn_format)
{
	struct record rec = make_rec();
	struct route_headers h;

	/* Uppercase hex, no zero padding: as pg_replication_slots shows. */
	route_headers(&h, &rec, UINT64_C(0xABCDEF000A0B0C0D));
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "ABCDEF00/A0B0C0D");
	route_headers(&h, &rec, 0);
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "0/0");
	route_headers(&h, &rec, UINT64_MAX);
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "FFFFFFFF/FFFFFFFF");
	ck_assert_uint_eq(h.len[ROUTE_H_PG_LSN], 17);
	rec.xid = 4294967295LL;
	route_headers(&h, &rec, 1);
	ck_assert_str_eq(h.value[ROUTE_H_PG_XID], "4294967295");
	rec.xid = 0;
	route_headers(&h, &rec, 1);
	ck_assert_str_eq(h.value[ROUTE_H_PG_XID], "0");
}
END_TEST

START_TEST(test_headers_omitted)
{
	struct record rec = make_rec();
	struct route_headers h;

	rec.type = (struct rec_str){ NULL, 0 };
	rec.xid = -1;
	memset(&h, 0xA5, sizeof(h));
	route_headers(&h, &rec, 0x10);
	ck_assert_ptr_null(h.value[ROUTE_H_EVENT_TYPE]);
	ck_assert_uint_eq(h.len[ROUTE_H_EVENT_TYPE], 0);
	ck_assert_ptr_null(h.value[ROUTE_H_PG_XID]);
	ck_assert_uint_eq(h.len[ROUTE_H_PG_XID], 0);
	/* Names stay, so a producer can iterate and skip NULL values. */
	ck_assert_str_eq(h.name[ROUTE_H_EVENT_TYPE], "event_type");
	ck_assert_ptr_nonnull(h.value[ROUTE_H_ID]);
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "0/10");
}
END_TEST

/* From a decoded record: numeric ids arrive as text in the headers. */
START_TEST(test_headers_from_decoded)
{
	static const char line[] =
		"{\"action\":\"I\",\"xid\":746,\"lsn\":\"0/1967DF0\",\"schema\":"
		"\"public\",\"table\":\"outbox_bigint\",\"columns\":[{\"name\":\"id\","
		"\"type\":\"bigint\",\"value\":1},{\"name\":\"aggregate_type\",\"type\":"
		"\"text\",\"value\":\"Account\"},{\"name\":\"aggregate_id\",\"type\":"
		"\"bigint\",\"value\":9007199254740993},{\"name\":\"event_type\","
		"\"type\":\"text\",\"value\":null},{\"name\":\"payload\",\"type\":"
		"\"jsonb\",\"value\":\"{}\"}]}";
	struct record rec;
	struct route_headers h;

	ck_assert_int_eq(w2j_decode(line, sizeof(line) - 1, &bigint_spec, &rec,
	                            err, sizeof(err)),
	                 0);
	route_headers(&h, &rec, 0x1967E88);
	ck_assert_str_eq(h.value[ROUTE_H_ID], "1");
	ck_assert_uint_eq(h.len[ROUTE_H_ID], 1);
	ck_assert_ptr_null(h.value[ROUTE_H_EVENT_TYPE]);
	ck_assert_str_eq(h.value[ROUTE_H_AGGREGATE_TYPE], "Account");
	ck_assert_str_eq(h.value[ROUTE_H_PG_LSN], "0/1967E88");
	ck_assert_str_eq(h.value[ROUTE_H_PG_XID], "746");
	ck_assert_int_eq(route_topic(TMPL, rec.route.ptr, rec.route.len, out,
	                             sizeof(out), err, sizeof(err)),
	                 20);
	ck_assert_str_eq(out, "outbox.event.Account");
	record_clear(&rec);
}
END_TEST

/* The headers' own formatters print what snprintf() would. */
START_TEST(test_formatters_match_snprintf)
{
	static const uint64_t lsns[] = {
		0, 1, 0xF, 0x10, 0x16B374D28ull, 0xFFFFFFFFull, 0x100000000ull,
		0xFFFFFFFFFFFFFFFFull, 0xA00000000ull,
	};
	static const int64_t ints[] = {
		0, 1, -1, 9, 10, -10, 7311, INT64_MAX, INT64_MIN, INT64_MIN + 1,
	};
	char got[64], want[64];
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (size_t i = 0; i < sizeof(lsns) / sizeof(lsns[0]); i++) {
		size_t n = lsn_format(got, lsns[i]);
		snprintf(want, sizeof(want), LSN_FMT, LSN_ARGS(lsns[i]));
		ck_assert_str_eq(got, want);
		ck_assert_uint_eq(n, strlen(want));
		ck_assert_uint_lt(n, LSN_STR_MAX);
	}
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		size_t n = i64_format(got, ints[i]);
		snprintf(want, sizeof(want), "%" PRId64, ints[i]);
		ck_assert_str_eq(got, want);
		ck_assert_uint_eq(n, strlen(want));
		ck_assert_uint_lt(n, I64_STR_MAX);
	}
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		(void)lsn_format(got, x >> (i % 64));
		snprintf(want, sizeof(want), LSN_FMT, LSN_ARGS(x >> (i % 64)));
		ck_assert_str_eq(got, want);
		(void)i64_format(got, (int64_t)x >> (i % 64));
		snprintf(want, sizeof(want), "%" PRId64, (int64_t)x >> (i % 64));
		ck_assert_str_eq(got, want);
	}
}
END_TEST

/* The dead-letter record (dlq.h): the event's headers, pg_lsn and pg_xid
 * from the cause (the copy owns its buffers), then Connect's and ours;
 * an unknown topic is left out. */
START_TEST(test_dlq_headers)
{
	struct record rec = { .xid = -1 };
	struct dlq_record d;
	const struct route_kv *kv;

	rec.id = (struct rec_str){ "e-1", 3 };
	rec.route = (struct rec_str){ "Order", 5 };
	dlq_build_rec(&d, &rec, &(struct dlq_cause){
		.stage = DLQ_STAGE_PRODUCE, .reason = "too big",
		.error_name = "MSG_SIZE_TOO_LARGE", .topic = "outbox.event.Order",
		.slot = "s1", .commit_lsn = 0x1965310, .xid = 42, .tries = 4 });
	ck_assert_str_eq(d.h.value[ROUTE_H_ID], "e-1");
	ck_assert_ptr_null(d.h.value[ROUTE_H_EVENT_TYPE]);
	ck_assert_str_eq(d.h.value[ROUTE_H_PG_LSN], "0/1965310");
	ck_assert_str_eq(d.h.value[ROUTE_H_PG_XID], "42");
	ck_assert_ptr_eq(d.h.value[ROUTE_H_PG_LSN], d.h.lsn_buf);
	ck_assert_uint_eq(d.h.n_extra, DLQ_EXTRA);
	ck_assert_str_eq(dlq_header(&d, "__connect.errors.topic")->value,
	                 "outbox.event.Order");
	ck_assert_str_eq(dlq_header(&d, "__connect.errors.connector.name")->value,
	                 "outbox-relay/s1");
	ck_assert_str_eq(dlq_header(&d, "__connect.errors.stage")->value,
	                 "KAFKA_PRODUCE");
	ck_assert_str_eq(dlq_header(&d,
	                 "__connect.errors.exception.class.name")->value,
	                 "outbox_relay.kafka.MSG_SIZE_TOO_LARGE");
	kv = dlq_header(&d, "__connect.errors.exception.message");
	ck_assert_uint_eq(kv->len, 7);
	ck_assert_str_eq(dlq_header(&d, "outbox.dlq.tries")->value, "4");
	dlq_build_rec(&d, &rec, &(struct dlq_cause){
		.stage = DLQ_STAGE_DECODE, .reason = "x", .xid = -1, .tries = 1 });
	ck_assert_ptr_null(dlq_header(&d, "__connect.errors.topic"));
	ck_assert_ptr_null(d.h.value[ROUTE_H_PG_XID]);
	ck_assert_str_eq(dlq_header(&d,
	                 "__connect.errors.exception.class.name")->value,
	                 "outbox_relay.decode");
}
END_TEST

Suite *route_suite(void)
{
	Suite *s = suite_create("route");
	TCase *tc_topic = tcase_create("topic");
	TCase *tc_headers = tcase_create("headers");

	tcase_add_test(tc_topic, test_expand);
	tcase_add_test(tc_topic, test_value_by_length);
	tcase_add_test(tc_topic, test_invalid_chars);
	tcase_add_test(tc_topic, test_length_limits);
	tcase_add_test(tc_topic, test_small_buffer);
	suite_add_tcase(s, tc_topic);

	tcase_add_test(tc_headers, test_headers);
	tcase_add_test(tc_headers, test_headers_lsn_format);
	tcase_add_test(tc_headers, test_formatters_match_snprintf);
	tcase_add_test(tc_headers, test_headers_omitted);
	tcase_add_test(tc_headers, test_headers_from_decoded);
	tcase_add_test(tc_headers, test_dlq_headers);
	suite_add_tcase(s, tc_headers);
	return s;
}
