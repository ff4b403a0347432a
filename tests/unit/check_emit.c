/* SPDX-License-Identifier: Apache-2.0 */
/* check_emit.c -- outbox_emit() messages and the "schema.*" outbox.
 *
 * emit_decode() against the content sql/emit.sql writes (copied from
 * wal2json 2.5 on PostgreSQL 15.20) and against everything it must
 * refuse; the payload must come out as the exact text PostgreSQL printed.
 * Then outbox.table = schema.* (the partitioned outbox of sql/cleanup.sql):
 * both decode paths take an insert into any table of the schema, and
 * START_REPLICATION gets wal2json's unescaped wildcard in add-tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "lib/config.h"
#include "pg/repl.h"
#include "decode/emit.h"
#include "decode/stream_spec.h"
#include "decode/w2j.h"
#include "fixtures.h"

/* Test hooks of the wal2json decoder (see check_w2j.c). */
int w2j_decode_fast(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec);
int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
                    char *err, size_t errlen);

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

/* What outbox_emit() wrote, as wal2json 2.5 printed it (jsonb orders the
 * keys by length; numbers keep their digits). */
static const char emit_line[] =
	"{\"action\":\"M\",\"xid\":764,\"timestamp\":\"2026-11-29 21:35:50.117+00\","
	"\"lsn\":\"0/1DC3228\",\"transactional\":true,\"prefix\":\"outbox\","
	"\"content\":\"{\\\"id\\\": \\\"a507c379-75ec-4340-9a3c-94328cd70007\\\", "
	"\\\"payload\\\": {\\\"n\\\": 19.90, \\\"s\\\": \\\"\xc3\xbc \\\\\\\"q\\\\\\\"\\\", "
	"\\\"big\\\": 123456789012345678901234567890.000}, \\\"event_type\\\": "
	"\\\"Placed\\\", \\\"aggregate_id\\\": \\\"o-1\\\", \\\"aggregate_type\\\": "
	"\\\"Order\\\"}\"}";

static const char emit_payload[] =
	"{\"n\": 19.90, \"s\": \"\xc3\xbc \\\"q\\\"\", "
	"\"big\": 123456789012345678901234567890.000}";

/* Decodes content alone into a zeroed record. */
static int emit(const char *content, struct record *rec, char *err,
                size_t errlen)
{
	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
	rec->kind = REC_MESSAGE;
	err[0] = '\0';
	return emit_decode(content, strlen(content), rec, err, errlen);
}

#define ck_str(s, want)                                                      \
	do {                                                                     \
		ck_assert_ptr_nonnull((s).ptr);                                      \
		ck_assert_uint_eq((s).len, strlen(want));                            \
		ck_assert_mem_eq((s).ptr, want, strlen(want));                       \
		ck_assert_int_eq((s).ptr[(s).len], '\0');                            \
	} while (0)

/* --------------------------------------------------------------- good */

START_TEST(test_emit_from_wal2json_line)
{
	struct record rec;
	char err[512];

	/* The way relay.c does it: content borrowed from the M record. */
	ck_assert_int_eq(w2j_decode(emit_line, strlen(emit_line), &outbox_spec,
	                            &rec, err, sizeof(err)), 0);
	ck_assert_int_eq(rec.kind, REC_MESSAGE);
	ck_assert(rec.transactional);
	ck_assert_str_eq(rec.msg_prefix.ptr, "outbox");
	ck_assert_int_eq(emit_decode(rec.msg_content.ptr, rec.msg_content.len,
	                             &rec, err, sizeof(err)), 0);
	ck_assert_int_eq(rec.kind, REC_EVENT);
	ck_str(rec.id, "a507c379-75ec-4340-9a3c-94328cd70007");
	ck_str(rec.key, "o-1");
	ck_str(rec.type, "Placed");
	ck_str(rec.route, "Order");
	ck_str(rec.payload, emit_payload);
	/* Position and transaction of the message are kept. */
	ck_assert_uint_eq(rec.lsn, 0x1DC3228);
	ck_assert_int_eq(rec.xid, 764);
	ck_assert_ptr_null(rec.msg_content.ptr);
	ck_assert_ptr_null(rec.msg_prefix.ptr);
	record_clear(&rec);
	ck_assert_ptr_null(rec.root_);
}
END_TEST

START_TEST(test_emit_payload_text_kept)
{
	/* Whatever the payload, the record value is its text in content:
	 * no re-encoding, spacing and digits as written, white space
	 * around it dropped. */
	static const struct {
		const char *content, *payload;
	} cases[] = {
		{ "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
		  "\"event_type\":\"E\",\"payload\":{\"a\":1}}", "{\"a\":1}" },
		{ "{\"payload\" :\n  [1, 2.50, -0.0, 1E+2, 18446744073709551616] \n,"
		  "\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\"}",
		  "[1, 2.50, -0.0, 1E+2, 18446744073709551616]" },
		/* Brackets, commas and quotes inside strings; a nested
		 * "payload" before the top-level one. */
		{ "{\"x\": {\"payload\": \"no\"}, \"id\": \"1\", \"aggregate_id\": "
		  "\"k\", \"aggregate_type\": \"T\", \"payload\": [\"}\", \"]\", "
		  "\",\", \"\\\"\", \"\\\\\", {\"payload\": {}}], \"z\": 1}",
		  "[\"}\", \"]\", \",\", \"\\\"\", \"\\\\\", {\"payload\": {}}]" },
		{ "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
		  "\"payload\":\"just a string\"}", "\"just a string\"" },
		{ "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
		  "\"payload\":true}", "true" },
		{ "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
		  "\"payload\":{}}", "{}" },
		/* A key spelled with an escape is the same key. */
		{ "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
		  "\"pay\\u006coad\":[3]}", "[3]" },
	};
	struct record rec;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(emit(cases[i].content, &rec, err, sizeof(err)) == 0,
		              "case %zu: %s", i, err);
		ck_str(rec.payload, cases[i].payload);
		ck_str(rec.id, "1");
		record_clear(&rec);
	}
}
END_TEST

START_TEST(test_emit_null_payload)
{
	/* JSON null is a payload like any other, as for a jsonb 'null'
	 * outbox row: the value is "null". (SQL NULL never gets here:
	 * outbox_emit() refuses it.) */
	struct record rec;
	char err[512];

	ck_assert_int_eq(emit("{\"id\":\"1\",\"aggregate_id\":\"k\","
	                      "\"aggregate_type\":\"T\",\"event_type\":\"E\","
	                      "\"payload\":null}", &rec, err, sizeof(err)), 0);
	ck_str(rec.payload, "null");
	record_clear(&rec);
}
END_TEST

START_TEST(test_emit_event_type_optional)
{
	struct record rec;
	char err[512];

	ck_assert_int_eq(emit("{\"id\":\"1\",\"aggregate_id\":\"k\","
	                      "\"aggregate_type\":\"T\",\"event_type\":null,"
	                      "\"payload\":{}}", &rec, err, sizeof(err)), 0);
	ck_assert_ptr_null(rec.type.ptr);
	record_clear(&rec);
	ck_assert_int_eq(emit("{\"id\":\"1\",\"aggregate_id\":\"k\","
	                      "\"aggregate_type\":\"T\",\"payload\":{}}",
	                      &rec, err, sizeof(err)), 0);
	ck_assert_ptr_null(rec.type.ptr);
	ck_str(rec.key, "k");
	ck_str(rec.route, "T");
	record_clear(&rec);
}
END_TEST

/* ---------------------------------------------------------------- bad */

/* Refused with a message containing want; rec left as it was. */
static void refused(const char *content, const char *want)
{
	struct record rec;
	char err[512];

	ck_assert_msg(emit(content, &rec, err, sizeof(err)) == -1,
	              "accepted: %s", content);
	ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" lacks \"%s\"",
	              err, want);
	ck_assert_int_eq(rec.kind, REC_MESSAGE);
	ck_assert_ptr_null(rec.root_);
	ck_assert_ptr_null(rec.payload.ptr);
	ck_assert_ptr_null(rec.id.ptr);
}

START_TEST(test_emit_missing_members)
{
	refused("{\"aggregate_id\":\"k\",\"aggregate_type\":\"T\",\"payload\":{}}",
	        "member \"id\" is missing");
	refused("{\"id\":\"e-1\",\"aggregate_type\":\"T\",\"payload\":{}}",
	        "member \"aggregate_id\" is missing (event id e-1)");
	refused("{\"id\":\"e-1\",\"aggregate_id\":\"k\",\"payload\":{}}",
	        "member \"aggregate_type\" is missing");
	refused("{\"id\":\"e-1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\"}",
	        "member \"payload\" is missing (event id e-1)");
	refused("{}", "member \"id\" is missing");
}
END_TEST

START_TEST(test_emit_wrong_types)
{
	refused("{\"id\":null,\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":{}}", "member \"id\" is not a string");
	refused("{\"id\":\"1\",\"aggregate_id\":42,\"aggregate_type\":\"T\","
	        "\"payload\":{}}", "member \"aggregate_id\" is not a string");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":[],"
	        "\"payload\":{}}", "member \"aggregate_type\" is not a string");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"event_type\":7,\"payload\":{}}",
	        "member \"event_type\" is not a string");
}
END_TEST

START_TEST(test_emit_not_an_object)
{
	refused("[1, 2]", "is a JSON array, not an object");
	refused("\"outbox\"", "is a JSON scalar, not an object");
	refused("42", "is a JSON scalar, not an object");
	refused("null", "is a JSON scalar, not an object");
	refused("", "content is not JSON");
	refused("beat-2", "content is not JSON");
	refused("{\"id\":\"1\",", "content is not JSON");
	/* Duplicates would make "which payload" ambiguous. */
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":{},\"payload\":[]}", "content is not JSON");
}
END_TEST

/* Numbers beyond a double (jsonb holds any numeric) are valid JSON: the
 * event goes out, its payload the exact text. */
START_TEST(test_emit_huge_numbers)
{
	static const char *const payloads[] = {
		"{\"x\": 1e400}", "1e400", "-1E+400", "[1, -1E+400, 2e308, 0]",
		"{\"a\": {\"b\": [9e99999]}, \"n\": 19.90, \"s\": \"1e400\"}",
	};
	char content[1024], digits[401];
	struct record rec;
	char err[512];

	for (size_t i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		snprintf(content, sizeof(content),
		         "{\"id\": \"1\", \"payload\": %s, \"event_type\": \"E\", "
		         "\"aggregate_id\": \"k\", \"aggregate_type\": \"T\"}",
		         payloads[i]);
		ck_assert_msg(emit(content, &rec, err, sizeof(err)) == 0, "%s: %s",
		              content, err);
		ck_str(rec.payload, payloads[i]);
		ck_str(rec.id, "1");
		ck_str(rec.type, "E");
		record_clear(&rec);
	}
	/* A 400-digit integer, as a payload and beside it. */
	for (size_t k = 0; k < 400; k++)
		digits[k] = (char)('1' + k % 9);
	digits[400] = '\0';
	snprintf(content, sizeof(content),
	         "{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	         "\"extra\":%s,\"payload\":%s}", digits, digits);
	ck_assert_msg(emit(content, &rec, err, sizeof(err)) == 0, "%s", err);
	ck_str(rec.payload, digits);
	record_clear(&rec);

	/* Still no id, and still not JSON when something else is wrong. */
	refused("{\"id\":1e400,\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":{}}", "member \"id\" is not a string");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"event_type\":-1E+400,\"payload\":{}}",
	        "member \"event_type\" is not a string");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":[1e400,]}", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":1e400} x", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":[1e400, NaN]}", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":[1e400, \"\\ud800\"]}", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":[1e400, \"\x01\"]}", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":[1e400, \"\xff\"]}", "content is not JSON: ");
	refused("{\"id\":\"1\",\"aggregate_id\":\"k\",\"aggregate_type\":\"T\","
	        "\"payload\":1e400,\"payload\":{}}", "content is not JSON: ");
	refused("[1e400]", "is a JSON array, not an object");
	refused("1e400", "is a JSON scalar, not an object");
}
END_TEST

START_TEST(test_emit_error_names_position)
{
	struct record rec;
	char err[512];

	memset(&rec, 0, sizeof(rec));
	rec.kind = REC_MESSAGE;
	rec.lsn = 0x1DC3228;
	rec.xid = 764;
	ck_assert_int_eq(emit_decode("[]", 2, &rec, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "outbox message content is a JSON array, not an "
	                      "object (LSN 0/1DC3228, xid 764)");
	ck_assert_uint_eq(rec.lsn, 0x1DC3228);
	ck_assert_int_eq(rec.xid, 764);
}
END_TEST

/* ---------------------------------------------------- outbox.table s.* */

static const char part_line[] =
	"{\"action\":\"I\",\"xid\":731,\"timestamp\":\"2026-11-29 21:33:29.902562+00\","
	"\"lsn\":\"0/1954A90\",\"schema\":\"outbox_part\",\"table\":\"outbox_p20261130\","
	"\"columns\":[{\"name\":\"id\",\"type\":\"uuid\",\"value\":"
	"\"48cc54b1-742b-42d5-9d3e-0c4b4f1f7c2a\"},{\"name\":\"aggregate_type\","
	"\"type\":\"text\",\"value\":\"A\"},{\"name\":\"aggregate_id\",\"type\":"
	"\"text\",\"value\":\"a2\"},{\"name\":\"event_type\",\"type\":\"text\","
	"\"value\":\"E\"},{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\"},"
	"{\"name\":\"created_at\",\"type\":\"timestamp with time zone\",\"value\":"
	"\"2026-11-30 10:00:00+00\"}]}";

START_TEST(test_schema_wildcard_both_paths)
{
	struct record fast, slow;
	char err[512];

	ck_assert_int_eq(w2j_decode_fast(part_line, strlen(part_line), &part_spec,
	                                 &fast), 0);
	ck_assert_int_eq(w2j_decode_slow(part_line, strlen(part_line), &part_spec,
	                                 &slow, err, sizeof(err)), 0);
	ck_assert_int_eq(fast.kind, REC_EVENT);
	ck_assert_int_eq(slow.kind, REC_EVENT);
	ck_str(fast.key, "a2");
	ck_str(slow.key, "a2");
	ck_str(fast.payload, "{}");
	ck_str(slow.route, "A");
	record_clear(&fast);
	record_clear(&slow);

	/* Another schema: skipped both ways. The plain spec does not take
	 * the partition either: that is why "schema.*" exists. */
	ck_assert_int_eq(w2j_decode_fast(part_line, strlen(part_line),
	                                 &outbox_spec, &fast), 0);
	ck_assert_int_eq(fast.kind, REC_SKIP);
	ck_assert_int_eq(w2j_decode_slow(part_line, strlen(part_line),
	                                 &outbox_spec, &slow, err, sizeof(err)), 0);
	ck_assert_int_eq(slow.kind, REC_SKIP);
}
END_TEST

START_TEST(test_schema_wildcard_command)
{
	char cmd[1024];
	ck_assert_int_gt(start_command("s", &part_spec,
	                                    "outbox-relay-heartbeat,outbox", cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_msg(strstr(cmd, "\"add-tables\" 'outbox_part.*'") != NULL,
	              "%s", cmd);
	ck_assert_msg(strstr(cmd, "\"add-msg-prefixes\" "
	                          "'outbox-relay-heartbeat,outbox'") != NULL,
	              "%s", cmd);
	/* Only "*" alone is the wildcard; inside a name it stays escaped. */
	ck_assert_int_gt(start_command("s", &star_table_spec, NULL, cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_msg(strstr(cmd, "'public.a\\*'") != NULL, "%s", cmd);
	ck_assert_int_gt(start_command("s", &odd_schema_spec, NULL, cmd,
	                                    sizeof(cmd)), 0);
	ck_assert_msg(strstr(cmd, "'my\\ schema.*'") != NULL, "%s", cmd);
}
END_TEST

/* ------------------------------------------------ outbox.emit.prefix */

START_TEST(test_emit_prefix_config)
{
	struct relay_config cfg;
	char err[512];

	cfg_init(&cfg);
	/* Off by default: any role that can connect may emit messages. */
	ck_assert_str_eq(cfg.outbox_emit_prefix, "");
	ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", "dbname=app", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "kafka.bootstrap.servers", "127.0.0.1:9092",
	                         CFG_SRC_FLAG, "--set", err, sizeof(err)), 0);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	/* wal2json's add-msg-prefixes could never match these. */
	ck_assert_int_eq(cfg_set(&cfg, "outbox.emit.prefix", "a,b", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "outbox.emit.prefix: \"a,b\" contains a comma")
	              != NULL, "%s", err);
	ck_assert_int_eq(cfg_set(&cfg, "outbox.emit.prefix", "", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg_set(&cfg, "heartbeat.prefix", "hb beat", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "heartbeat.prefix") != NULL, "%s", err);
	cfg_free(&cfg);
}
END_TEST

Suite *emit_suite(void)
{
	Suite *s = suite_create("emit");
	TCase *tc = tcase_create("emit");

	tcase_add_test(tc, test_emit_from_wal2json_line);
	tcase_add_test(tc, test_emit_payload_text_kept);
	tcase_add_test(tc, test_emit_null_payload);
	tcase_add_test(tc, test_emit_event_type_optional);
	tcase_add_test(tc, test_emit_missing_members);
	tcase_add_test(tc, test_emit_wrong_types);
	tcase_add_test(tc, test_emit_not_an_object);
	tcase_add_test(tc, test_emit_huge_numbers);
	tcase_add_test(tc, test_emit_error_names_position);
	tcase_add_test(tc, test_schema_wildcard_both_paths);
	tcase_add_test(tc, test_schema_wildcard_command);
	tcase_add_test(tc, test_emit_prefix_config);
	suite_add_tcase(s, tc);
	return s;
}
