/* SPDX-License-Identifier: Apache-2.0 */
/* check_repl.c -- the START_REPLICATION command the relay sends. */
#include <check.h>
#include <string.h>

#include "repl.h"

static const struct w2j_spec spec_default = {
	.schema = "public", .table = "outbox", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

START_TEST(test_command_default)
{
	char cmd[1024];
	int n = repl_start_command("outbox_relay", &spec_default, NULL, cmd, sizeof(cmd));

	ck_assert_int_eq(n, (int)strlen(cmd));
	/* Always from the slot's own position: 0/0 means "where the slot is". */
	ck_assert_str_eq(cmd,
	                 "START_REPLICATION SLOT \"outbox_relay\" LOGICAL 0/0 ("
	                 "\"format-version\" '2', \"include-lsn\" '1', "
	                 "\"include-xids\" '1', \"include-transaction\" '1', "
	                 "\"include-timestamp\" '1', \"actions\" 'insert', "
	                 "\"add-tables\" 'public.outbox')");
}
END_TEST

START_TEST(test_command_escapes_table)
{
	struct w2j_spec spec = spec_default;
	char cmd[1024];

	/* wal2json wants the name unquoted with backslash escapes; the SQL
	 * literal around it doubles single quotes. */
	spec.table = "O'ut box";
	ck_assert_int_gt(repl_start_command("s", &spec, NULL, cmd, sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.O\\''ut\\ box')"));
	spec.table = "Outbox";
	ck_assert_int_gt(repl_start_command("s", &spec, NULL, cmd, sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.Outbox')"));
}
END_TEST

START_TEST(test_command_msg_prefixes)
{
	char cmd[1024];

	/* Heartbeats on: only the relay's own messages are decoded. */
	ck_assert_int_gt(repl_start_command("s", &spec_default,
	                                    "outbox-relay-heartbeat", cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.outbox', "
	                                  "\"add-msg-prefixes\" "
	                                  "'outbox-relay-heartbeat')"));
	ck_assert_int_gt(repl_start_command("s", &spec_default, "", cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_ptr_null(strstr(cmd, "add-msg-prefixes"));
}
END_TEST

START_TEST(test_command_too_small)
{
	char cmd[64];
	ck_assert_int_eq(repl_start_command("outbox_relay", &spec_default, NULL,
	                                    cmd, sizeof(cmd)), -1);
}
END_TEST

Suite *repl_suite(void)
{
	Suite *s = suite_create("repl");
	TCase *tc = tcase_create("command");
	tcase_add_test(tc, test_command_default);
	tcase_add_test(tc, test_command_escapes_table);
	tcase_add_test(tc, test_command_msg_prefixes);
	tcase_add_test(tc, test_command_too_small);
	suite_add_tcase(s, tc);
	return s;
}
