/* SPDX-License-Identifier: Apache-2.0 */
/* check_repl.c -- the START_REPLICATION command the relay sends, and the
 * CopyData frames it reads. */
#include <check.h>
#include <string.h>

#include <stdlib.h>

#include "pg/pgutil.h"
#include "pg/repl.h"
#include "decode/stream_spec.h"
#include "fixtures.h"

/* The START_REPLICATION command for spec and the add-msg-prefixes value
 * prefixes (NULL: none), as the relay builds it (stream_spec.h), into
 * cmd. Returns its length, or -1 when cmd is too small. */
static int start_command(const char *slot, const struct record_spec *spec,
                         const char *prefixes, char *cmd, size_t len)
{
	struct stream_spec ss;
	char *c;
	int n;

	ss_init_parts(&ss, spec, prefixes ? prefixes : "", "",
	              "outbox.event.${routedByValue}");
	c = ss_start_command(&ss, slot);
	n = strlen(c) < len ? (int)strlen(c) : -1;
	if (n >= 0)
		memcpy(cmd, c, strlen(c) + 1);
	free(c);
	ss_free(&ss);
	return n;
}

START_TEST(test_command_default)
{
	char cmd[1024];
	int n = start_command("outbox_relay", &outbox_spec, NULL, cmd, sizeof(cmd));

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
	struct record_spec spec = outbox_spec;
	char cmd[1024];

	/* wal2json wants the name unquoted with backslash escapes; the SQL
	 * literal around it doubles single quotes. */
	spec.table = "O'ut box";
	ck_assert_int_gt(start_command("s", &spec, NULL, cmd, sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.O\\''ut\\ box')"));
	spec.table = "Outbox";
	ck_assert_int_gt(start_command("s", &spec, NULL, cmd, sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.Outbox')"));
}
END_TEST

START_TEST(test_command_msg_prefixes)
{
	char cmd[1024];

	/* Heartbeats on: only the relay's own messages are decoded. */
	ck_assert_int_gt(start_command("s", &outbox_spec,
	                                    "outbox-relay-heartbeat", cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_ptr_nonnull(strstr(cmd, "\"add-tables\" 'public.outbox', "
	                                  "\"add-msg-prefixes\" "
	                                  "'outbox-relay-heartbeat')"));
	ck_assert_int_gt(start_command("s", &outbox_spec, "", cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_ptr_null(strstr(cmd, "add-msg-prefixes"));
}
END_TEST

START_TEST(test_command_too_small)
{
	char cmd[64];
	ck_assert_int_eq(start_command("outbox_relay", &outbox_spec, NULL,
	                                    cmd, sizeof(cmd)), -1);
}
END_TEST

/* Connect-time errors: what stops the relay, what is retried. The
 * messages are libpq's and the server's own (PostgreSQL 15). */
START_TEST(test_classify_connect)
{
	static const struct {
		const char *state, *msg;
		enum pgu_class want;
	} cases[] = {
		{ "28P01", "connection to server at \"127.0.0.1\", port 5432 failed: "
		  "FATAL:  28P01: password authentication failed for user \"r\"",
		  PGU_AUTH },
		{ "28000", "FATAL:  28000: no pg_hba.conf entry for replication "
		  "connection from host \"127.0.0.1\", user \"r\", no encryption",
		  PGU_AUTH },
		{ "42501", "FATAL:  42501: must be superuser or replication role to "
		  "start walsender", PGU_AUTH },
		{ "3D000", "FATAL:  3D000: database \"nope\" does not exist",
		  PGU_CONFIG },
		{ "", "invalid integer value \"abc\" for connection option \"port\"",
		  PGU_CONFIG },
		{ "", "invalid sslmode value: \"sometimes\"", PGU_CONFIG },
		{ "", "could not match 2 port numbers to 3 hosts", PGU_CONFIG },
		{ "", "connection to server at \"db\" (10.0.0.1), port 5432 failed: "
		  "SSL error: certificate verify failed", PGU_CONFIG },
		/* transient */
		{ "", "connection to server at \"127.0.0.1\", port 5432 failed: "
		  "Connection refused", PGU_TRANSIENT },
		{ "", "could not translate host name \"db\" to address: Temporary "
		  "failure in name resolution", PGU_TRANSIENT },
		{ "57P03", "FATAL:  57P03: the database system is starting up",
		  PGU_TRANSIENT },
		{ "53300", "FATAL:  53300: sorry, too many clients already",
		  PGU_TRANSIENT },
		/* a server message that happens to say "invalid" is not libpq's */
		{ "XX000", "FATAL:  XX000: invalid something", PGU_TRANSIENT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *hint = NULL;
		enum pgu_class got = pgu_classify_connect(cases[i].state, cases[i].msg,
		                                          &hint);
		ck_assert_msg(got == cases[i].want, "case %zu (%s): got %d want %d",
		              i, cases[i].msg, got, cases[i].want);
		ck_assert_ptr_nonnull(hint);
		if (got != PGU_TRANSIENT)
			ck_assert_msg(hint[0] != '\0', "case %zu: no hint", i);
	}
}
END_TEST

/* XLogData and keepalive headers, field by field; what is too short or
 * of another type is refused with the reason repl_read() reports. */
START_TEST(test_parse_frame)
{
	static const char w[] = "w\0\0\0\0\1\2\3\4" "\0\0\0\0\1\2\3\5"
	                        "\0\0\0\0\0\0\0\0" "{\"action\":\"B\"}";
	static const char k[] = "k\0\0\0\1\0\0\0\0" "\0\0\0\0\0\0\0\0" "\1";
	struct repl_msg m;
	char err[128];

	ck_assert_int_eq(repl_parse_frame(w, sizeof(w) - 1, &m, err, sizeof(err)), 1);
	ck_assert_int_eq(m.type, 'w');
	ck_assert_uint_eq(m.wal_start, 0x01020304);
	ck_assert_uint_eq(m.wal_end, 0x01020305);
	ck_assert_ptr_eq(m.data, w + 25);
	ck_assert_uint_eq(m.len, sizeof(w) - 1 - 25);
	ck_assert(!m.reply_requested);
	/* A header and no record is a frame too. */
	ck_assert_int_eq(repl_parse_frame(w, 25, &m, err, sizeof(err)), 1);
	ck_assert_uint_eq(m.len, 0);
	ck_assert_int_eq(repl_parse_frame(w, 24, &m, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "XLogData header too small: 24 bytes");

	ck_assert_int_eq(repl_parse_frame(k, sizeof(k) - 1, &m, err, sizeof(err)), 1);
	ck_assert_int_eq(m.type, 'k');
	ck_assert_uint_eq(m.wal_end, UINT64_C(0x100000000));
	ck_assert(m.reply_requested);
	ck_assert_ptr_null(m.data);
	ck_assert_int_eq(repl_parse_frame(k, 17, &m, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "keepalive too small: 17 bytes");

	ck_assert_int_eq(repl_parse_frame("r123", 4, &m, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "unexpected CopyData message type 0x72");
	ck_assert_int_eq(repl_parse_frame(NULL, 0, &m, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "unexpected CopyData message type 0x00");
}
END_TEST

/* The timeline history file as TIMELINE_HISTORY returns it (pgutil.c):
 * what the relay judges a promotion by. */
START_TEST(test_timeline_history)
{
	struct tli_switch h[3];
	char err[128];
	int n = -1;
	static const char two[] = "1\t0/14D8B30\tno recovery target specified\n";
	static const char four[] =
		"1\t0/3000000\tno recovery target specified\n"
		"\n"
		"2\t0/5000108\tat restore point \"x\"\n"
		"3\t1/A0\tno recovery target specified\n";

	ck_assert_int_eq(pgu_parse_timeline_history(two, sizeof(two) - 1, h, 3,
	                                            &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h[0].tli, 1);
	ck_assert_uint_eq(h[0].switch_lsn, 0x14D8B30);
	ck_assert_int_eq(pgu_parse_timeline_history(four, sizeof(four) - 1, h, 3,
	                                            &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(h[2].switch_lsn, UINT64_C(0x1000000A0));
	/* More lines than room: the newest are kept, oldest first. */
	ck_assert_int_eq(pgu_parse_timeline_history(four, sizeof(four) - 1, h, 2,
	                                            &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(h[0].tli, 2);
	ck_assert_int_eq(h[1].tli, 3);
	ck_assert_int_eq(pgu_parse_timeline_history(four, sizeof(four) - 1, h, 1,
	                                            &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h[0].tli, 3);
	/* No newline at the end, an empty file. */
	ck_assert_int_eq(pgu_parse_timeline_history("1\t0/10\tx", 8, h, 3, &n,
	                                            err, sizeof(err)), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(pgu_parse_timeline_history("", 0, h, 3, &n, err,
	                                            sizeof(err)), 0);
	ck_assert_int_eq(n, 0);
	/* Refused: not a number, no LSN, timelines not ascending, LSNs going
	 * back, a bytea in text form. */
	ck_assert_int_eq(pgu_parse_timeline_history("x\t0/10\n", 7, h, 3, &n,
	                                            err, sizeof(err)), -1);
	ck_assert_str_eq(err, "timeline history: line 1 is not "
	                      "\"timeline<TAB>X/X<TAB>reason\"");
	ck_assert_int_eq(pgu_parse_timeline_history("1\n", 2, h, 3, &n, err,
	                                            sizeof(err)), -1);
	ck_assert_int_eq(pgu_parse_timeline_history("2\t0/10\n1\t0/20\n", 14, h,
	                                            3, &n, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "timeline history: line 2 is not "
	                      "\"timeline<TAB>X/X<TAB>reason\"");
	ck_assert_int_eq(pgu_parse_timeline_history("1\t0/20\n2\t0/10\n", 14, h,
	                                            3, &n, err, sizeof(err)), -1);
	ck_assert_int_eq(pgu_parse_timeline_history("\\x3109", 6, h, 3, &n, err,
	                                            sizeof(err)), -1);
	ck_assert_int_eq(n, 0);
	/* The text need not end in a NUL: nothing is read past len (a
	 * digit at the very end made strtol read on; valgrind and ASan see
	 * it in this exact-size block, found by fuzz_repl). */
	{
		char *one = malloc(1);
		ck_assert_ptr_nonnull(one);
		one[0] = '1';
		ck_assert_int_eq(pgu_parse_timeline_history(one, 1, h, 3, &n, err,
		                                            sizeof(err)), -1);
		free(one);
	}
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
	tcase_add_test(tc, test_classify_connect);
	tcase_add_test(tc, test_parse_frame);
	tcase_add_test(tc, test_timeline_history);
	suite_add_tcase(s, tc);
	return s;
}
