/* SPDX-License-Identifier: Apache-2.0 */
/* check_ledger.c -- the slot ledger's record codec and its refusal rule
 * (ledger.h); the Kafka side is in the integration test t180. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "kafka/ledger.h"

START_TEST(test_key)
{
	char k[64];

	ck_assert_int_eq(ledger_key("7311", "app", "outbox_relay", k, sizeof(k)),
	                 (int)strlen("7311/app/outbox_relay"));
	ck_assert_str_eq(k, "7311/app/outbox_relay");
	ck_assert_int_eq(ledger_key("7311", "app", "outbox_relay", k, 8), -1);
}
END_TEST

START_TEST(test_value_round_trip)
{
	struct ledger_entry e;
	char *v = ledger_value("7311", "app", "s", 0x16B374D0ull, "relay", NULL);

	ck_assert_ptr_nonnull(strstr(v, "\"lsn\":\"0/16B374D0\""));
	ck_assert_ptr_nonnull(strstr(v, "\"system_id\":\"7311\""));
	ck_assert_int_eq(ledger_parse(v, strlen(v), &e), 0);
	ck_assert(e.found);
	ck_assert_uint_eq(e.lsn, 0x16B374D0ull);
	ck_assert_str_eq(e.by, "relay");
	ck_assert_int_eq(strlen(e.at), 20); /* 2026-12-01T12:00:00Z */
	ck_assert_uint_eq(e.commit.end_lsn, 0); /* none: nothing to verify */
	free(v);

	/* An exactly-once record names the commit it covers. */
	v = ledger_value("7311", "app", "s", 0x16B374D0ull, "relay",
	                 &(struct ledger_commit){ 0x16B37400ull, 4242,
	                                          INT64_C(1764000000123456) });
	ck_assert_int_eq(ledger_parse(v, strlen(v), &e), 0);
	ck_assert_uint_eq(e.lsn, 0x16B374D0ull);
	ck_assert_uint_eq(e.commit.end_lsn, 0x16B37400ull);
	ck_assert_int_eq(e.commit.xid, 4242);
	ck_assert_int_eq(e.commit.commit_ts_us, INT64_C(1764000000123456));
	free(v);
	/* A commit that does not parse is none. */
	ck_assert_int_eq(ledger_parse("{\"lsn\":\"0/5\",\"commit\":{\"end\":"
	                              "\"0/4\",\"xid\":\"x\"}}", 46, &e), 0);
	ck_assert_uint_eq(e.commit.end_lsn, 0);
}
END_TEST

START_TEST(test_parse_refuses)
{
	static const char *const bad[] = {
		"", "null", "[]", "{}", "{\"lsn\": 5}", "{\"lsn\": \"nope\"}",
		"{\"lsn\": \"0/1\"", "not json",
	};
	struct ledger_entry e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(ledger_parse(bad[i], strlen(bad[i]), &e) == -1, "%s",
		              bad[i]);
		ck_assert(!e.found);
	}
}
END_TEST

/* The rule: a slot may be behind what was recorded (the relay records
 * before it confirms; a crash may lose the confirm), never past it. */
START_TEST(test_check)
{
	struct ledger_entry none = { 0 };
	struct ledger_entry rec = { .found = true, .lsn = 0x500 };
	char err[1024];

	snprintf(rec.by, sizeof(rec.by), "relay");
	snprintf(rec.at, sizeof(rec.at), "2026-12-01T12:00:00Z");
	ck_assert_int_eq(ledger_check(&none, "s", 0x900, err, sizeof(err)), 0);
	ck_assert_int_eq(ledger_check(&rec, "s", 0x400, err, sizeof(err)), 0);
	ck_assert_int_eq(ledger_check(&rec, "s", 0x500, err, sizeof(err)), 0);
	ck_assert_int_eq(ledger_check(&rec, "s", 0x501, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "0/501"));
	ck_assert_ptr_nonnull(strstr(err, "0/500"));
	ck_assert_ptr_nonnull(strstr(err, "dropped and created again"));
	ck_assert_ptr_nonnull(strstr(err, "--accept-slot"));
}
END_TEST

Suite *ledger_suite(void)
{
	Suite *s = suite_create("ledger");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_key);
	tcase_add_test(tc, test_value_round_trip);
	tcase_add_test(tc, test_parse_refuses);
	tcase_add_test(tc, test_check);
	suite_add_tcase(s, tc);
	return s;
}
