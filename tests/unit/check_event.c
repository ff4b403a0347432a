/* SPDX-License-Identifier: Apache-2.0 */
/* check_event.c -- the per-record policy (event.h) and the wal2json
 * options (stream_spec.h) that the relay and the runbook share.
 *
 * The regression behind it: the runbook asked wal2json for the
 * heartbeat prefix only, and counted only table rows, so outbox_emit()
 * events were invisible to --dry-run, --advance-slot and
 * --skip-transaction. Here the options the relay streams with and the
 * options a peek sends are the same list, a transaction with a row and
 * an outbox_emit() message gives two events of the same shape, and the
 * fixtures decode to the events route.c and w2j.c make of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "config.h"
#include "event.h"
#include "route.h"
#include "stream_spec.h"
#include "w2j.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

static struct relay_config cfg;

static void cfg_with(const char *emit_prefix)
{
	char err[256];

	cfg_init(&cfg);
	ck_assert_int_eq(cfg_set(&cfg, "outbox.emit.prefix", emit_prefix,
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
}

/* "name" 'value' pairs of a START_REPLICATION command, as "name=value;". */
static void command_pairs(const char *cmd, char *out, size_t outlen)
{
	const char *p = strstr(cmd, " LOGICAL 0/0 (");
	size_t n = 0;

	ck_assert_ptr_nonnull(p);
	p += strlen(" LOGICAL 0/0 (");
	while (*p == '"') {
		const char *e = strchr(p + 1, '"');
		n += (size_t)snprintf(out + n, outlen - n, "%.*s=", (int)(e - p - 1),
		                      p + 1);
		p = e + 3; /* `" '` */
		for (; !(p[0] == '\'' && p[1] != '\''); p++) {
			if (p[0] == '\'')
				p++; /* '' is one quote */
			out[n++] = *p;
		}
		out[n++] = ';';
		p++;
		if (p[0] == ',')
			p += 2;
	}
	out[n] = '\0';
	ck_assert_int_eq(*p, ')');
}

/* The same of a text[] literal {"name","value",...}. */
static void array_pairs(const char *arr, char *out, size_t outlen)
{
	const char *p = arr + 1;
	size_t n = 0;
	int i = 0;

	ck_assert_int_eq(arr[0], '{');
	while (*p == '"') {
		for (p++; *p != '"'; p++) {
			if (*p == '\\')
				p++;
			ck_assert_uint_lt(n + 2, outlen);
			out[n++] = *p;
		}
		out[n++] = i++ % 2 == 0 ? '=' : ';';
		p++;
		if (*p == ',')
			p++;
	}
	out[n] = '\0';
	ck_assert_int_eq(*p, '}');
}

START_TEST(test_peek_options_are_the_stream_options)
{
	static const char *const emit[] = { "", "outbox" };
	struct stream_spec ss;
	char a[2048], b[2048];

	for (size_t i = 0; i < 2; i++) {
		char *cmd, *arr;
		cfg_with(emit[i]);
		ck_assert_int_eq(cfg_set(&cfg, "outbox.table", "public.O'ut box",
		                         CFG_SRC_FLAG, "test", a, sizeof(a)), 0);
		ss_init(&ss, &cfg);
		cmd = ss_start_command(&ss, "outbox_relay");
		arr = ss_peek_options(&ss);
		command_pairs(cmd, a, sizeof(a));
		array_pairs(arr, b, sizeof(b));
		ck_assert_str_eq(a, b);
		ck_assert_ptr_nonnull(strstr(a, "add-tables=public.O\\'ut\\ box;"));
		/* Both prefixes, or wal2json drops the emitted events. */
		ck_assert_ptr_nonnull(strstr(a, i == 0
		        ? "add-msg-prefixes=outbox-relay-heartbeat;"
		        : "add-msg-prefixes=outbox-relay-heartbeat,outbox;"));
		free(cmd);
		free(arr);
		ss_free(&ss);
		cfg_free(&cfg);
	}
}
END_TEST

/* slot.plugin = pgoutput: the same command shape and the same options
 * in both renderings, and none of wal2json's. */
START_TEST(test_pgoutput_options)
{
	struct stream_spec ss;
	char a[2048], b[2048], err[256];
	char *cmd, *arr;

	cfg_with("outbox");
	ck_assert_int_eq(cfg_set(&cfg, "slot.plugin", "pgoutput", CFG_SRC_FLAG,
	                         "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "slot.publication", "orders_pub",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	ss_init(&ss, &cfg);
	ck_assert_int_eq(ss.plugin, SS_PLUGIN_PGOUTPUT);
	ck_assert_str_eq(ss_plugin_name(&ss), "pgoutput");
	ck_assert_str_eq(ss_peek_function(&ss), "pg_logical_slot_peek_binary_changes");
	cmd = ss_start_command(&ss, "outbox_relay");
	arr = ss_peek_options(&ss);
	command_pairs(cmd, a, sizeof(a));
	array_pairs(arr, b, sizeof(b));
	ck_assert_str_eq(a, b);
	ck_assert_str_eq(a, "proto_version=1;publication_names=\"orders_pub\";"
	                    "messages=true;");
	ck_assert_ptr_null(strstr(cmd, "binary"));
	ck_assert_ptr_null(strstr(cmd, "streaming"));
	/* The prefix rules do not depend on the plugin. */
	ck_assert_int_eq(ss_message_kind(&ss, true, "outbox"), SS_MSG_EMIT);
	ck_assert_int_eq(ss_message_kind(&ss, false, "outbox-relay-heartbeat"),
	                 SS_MSG_HEARTBEAT);
	free(cmd);
	free(arr);
	ss_free(&ss);
	cfg_free(&cfg);

	cfg_with("");
	ss_init(&ss, &cfg);
	ck_assert_int_eq(ss.plugin, SS_PLUGIN_WAL2JSON);
	ck_assert_str_eq(ss_peek_function(&ss), "pg_logical_slot_peek_changes");
	ss_free(&ss);
	cfg_free(&cfg);
}
END_TEST

/* A transaction with a row and an outbox_emit() message of the same
 * event fields, as wal2json 2.5 prints them. */
static const char *const emit_txn[] = {
	"{\"action\":\"B\",\"xid\":764,\"timestamp\":\"2026-11-29 21:35:50.117+00\","
	"\"lsn\":\"0/1DC3100\",\"nextlsn\":\"0/1DC3300\"}",
	"{\"action\":\"I\",\"xid\":764,\"timestamp\":\"2026-11-29 21:35:50.117+00\","
	"\"lsn\":\"0/1DC3150\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[{\"name\":\"id\",\"type\":\"uuid\",\"value\":"
	"\"a507c379-75ec-4340-9a3c-94328cd70006\"},{\"name\":\"aggregate_type\","
	"\"type\":\"text\",\"value\":\"Order\"},{\"name\":\"aggregate_id\",\"type\":"
	"\"text\",\"value\":\"o-1\"},{\"name\":\"event_type\",\"type\":\"text\","
	"\"value\":\"Placed\"},{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":"
	"\"{\\\"n\\\": 19.90}\"}]}",
	"{\"action\":\"M\",\"xid\":764,\"timestamp\":\"2026-11-29 21:35:50.117+00\","
	"\"lsn\":\"0/1DC3228\",\"transactional\":true,\"prefix\":\"outbox\","
	"\"content\":\"{\\\"id\\\": \\\"a507c379-75ec-4340-9a3c-94328cd70007\\\", "
	"\\\"payload\\\": {\\\"n\\\": 19.90}, \\\"event_type\\\": \\\"Placed\\\", "
	"\\\"aggregate_id\\\": \\\"o-1\\\", \\\"aggregate_type\\\": \\\"Order\\\"}\"}",
	"{\"action\":\"M\",\"lsn\":\"0/1DC3250\",\"transactional\":false,"
	"\"prefix\":\"outbox-relay-heartbeat\",\"content\":\"1796138042788000\"}",
	"{\"action\":\"C\",\"xid\":764,\"timestamp\":\"2026-11-29 21:35:50.117+00\","
	"\"lsn\":\"0/1DC3280\",\"nextlsn\":\"0/1DC3300\"}",
};

#define NTXN (sizeof(emit_txn) / sizeof(emit_txn[0]))

static void str_eq(const struct w2j_str *s, const char *want)
{
	ck_assert_ptr_nonnull(s->ptr);
	ck_assert_uint_eq(s->len, strlen(want));
	ck_assert_mem_eq(s->ptr, want, s->len);
}

START_TEST(test_emit_is_an_event_like_a_row)
{
	static const enum ev_kind want[2][NTXN] = {
		{ EV_BEGIN, EV_EVENT, EV_SKIP, EV_HEARTBEAT, EV_COMMIT },
		{ EV_BEGIN, EV_EVENT, EV_EVENT, EV_HEARTBEAT, EV_COMMIT },
	};
	static const char *const emit[] = { "", "outbox" };

	for (int e = 0; e < 2; e++) {
		struct stream_spec ss;
		struct ev_txn txn;
		struct ev_record er;

		cfg_with(emit[e]);
		ss_init(&ss, &cfg);
		ev_txn_reset(&txn);
		for (size_t i = 0; i < NTXN; i++) {
			ev_next(&ss, emit_txn[i], strlen(emit_txn[i]), &txn, &er);
			ck_assert_msg(er.kind == want[e][i], "emit %d line %zu: kind %d "
			              "(%s)", e, i, er.kind, er.reason);
			if (er.kind == EV_EVENT) {
				const struct route_headers *h = &er.ev.headers;
				ck_assert_str_eq(er.ev.topic, "outbox.event.Order");
				str_eq(&er.ev.key, "o-1");
				str_eq(&er.ev.value, "{\"n\": 19.90}");
				ck_assert_uint_eq(er.ev.bytes, strlen("{\"n\": 19.90}") + 3);
				ck_assert_str_eq(h->value[ROUTE_H_EVENT_TYPE], "Placed");
				ck_assert_str_eq(h->value[ROUTE_H_AGGREGATE_TYPE], "Order");
				/* The commit end of the transaction, and its xid. */
				ck_assert_str_eq(h->value[ROUTE_H_PG_LSN], "0/1DC3300");
				ck_assert_str_eq(h->value[ROUTE_H_PG_XID], "764");
				ck_assert_str_eq(h->value[ROUTE_H_ID], i == 1
				        ? "a507c379-75ec-4340-9a3c-94328cd70006"
				        : "a507c379-75ec-4340-9a3c-94328cd70007");
				ck_assert_str_eq(er.event_id, h->value[ROUTE_H_ID]);
			}
			if (er.kind == EV_HEARTBEAT) {
				ck_assert_int_eq(er.heartbeat_sent_us, 1796138042788000LL);
				ck_assert_uint_eq(er.rec.lsn, 0x1DC3250);
			}
			ck_assert(txn.open == (i < NTXN - 1));
			ev_record_clear(&er);
		}
		ck_assert_int_eq(txn.xid, 764);
		ss_free(&ss);
		cfg_free(&cfg);
	}
}
END_TEST

/* What the relay stops at, and what the runbook then lists. */
START_TEST(test_poison)
{
	static const struct {
		const char *line;
		bool open;              /* inside a transaction */
		bool is_event, decoded;
		const char *id;
		const char *reason;     /* substring */
	} cases[] = {
		/* A row outside a transaction (include-transaction off). */
		{ "{\"action\":\"I\",\"xid\":1,\"lsn\":\"0/10\",\"schema\":\"public\","
		  "\"table\":\"outbox\",\"columns\":[{\"name\":\"id\",\"type\":\"text\","
		  "\"value\":\"e1\"},{\"name\":\"aggregate_type\",\"type\":\"text\","
		  "\"value\":\"A\"},{\"name\":\"aggregate_id\",\"type\":\"text\","
		  "\"value\":\"k\"},{\"name\":\"event_type\",\"type\":\"text\",\"value\":"
		  "\"T\"},{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\"}]}",
		  false, true, true, "e1", "insert record outside a transaction" },
		/* A routing value that makes no topic name. */
		{ "{\"action\":\"I\",\"xid\":1,\"lsn\":\"0/10\",\"schema\":\"public\","
		  "\"table\":\"outbox\",\"columns\":[{\"name\":\"id\",\"type\":\"text\","
		  "\"value\":\"e2\"},{\"name\":\"aggregate_type\",\"type\":\"text\","
		  "\"value\":\"bad name!\"},{\"name\":\"aggregate_id\",\"type\":\"text\","
		  "\"value\":\"k\"},{\"name\":\"event_type\",\"type\":\"text\",\"value\":"
		  "\"T\"},{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\"}]}",
		  true, true, true, "e2", "event id e2: " },
		/* A NULL payload: the decoder refuses the row, which is still an
		 * event of the table for the lists. */
		{ "{\"action\":\"I\",\"xid\":1,\"lsn\":\"0/10\",\"schema\":\"public\","
		  "\"table\":\"outbox\",\"columns\":[{\"name\":\"id\",\"type\":\"text\","
		  "\"value\":\"e3\"},{\"name\":\"aggregate_type\",\"type\":\"text\","
		  "\"value\":\"A\"},{\"name\":\"aggregate_id\",\"type\":\"text\","
		  "\"value\":\"k\"},{\"name\":\"event_type\",\"type\":\"text\",\"value\":"
		  "\"T\"},{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":null}]}",
		  true, true, false, "e3", "payload" },
		/* An emitted event whose content lacks a member. */
		{ "{\"action\":\"M\",\"xid\":1,\"lsn\":\"0/10\",\"transactional\":true,"
		  "\"prefix\":\"outbox\",\"content\":\"{\\\"id\\\": \\\"e4\\\"}\"}",
		  true, true, false, "e4", "" },
		/* An emitted event outside a transaction. */
		{ "{\"action\":\"M\",\"xid\":1,\"lsn\":\"0/10\",\"transactional\":true,"
		  "\"prefix\":\"outbox\",\"content\":\"{\\\"id\\\": \\\"e5\\\"}\"}",
		  false, true, false, "e5", "outbox message outside a transaction" },
		/* Not JSON at all: poison, and no event. */
		{ "{\"action\":", true, false, false, "", "" },
	};

	cfg_with("outbox");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stream_spec ss;
		struct ev_txn txn = { .open = cases[i].open, .xid = 1,
			                  .commit_lsn = 0x20 };
		struct ev_record er;

		ss_init(&ss, &cfg);
		ev_next(&ss, cases[i].line, strlen(cases[i].line), &txn, &er);
		ck_assert_msg(er.kind == EV_POISON, "case %zu: kind %d", i, er.kind);
		ck_assert_msg(er.is_event == cases[i].is_event, "case %zu", i);
		ck_assert_msg(er.decoded == cases[i].decoded, "case %zu", i);
		if (cases[i].is_event)
			ck_assert_str_eq(er.event_id, cases[i].id);
		ck_assert_msg(strstr(er.reason, cases[i].reason) != NULL,
		              "case %zu: %s", i, er.reason);
		ck_assert(er.reason[0] != '\0');
		ev_record_clear(&er);
		ss_free(&ss);
	}
	cfg_free(&cfg);
}
END_TEST

/* Every fixture line: an event exactly where w2j.c decodes one, with the
 * topic and headers route.c makes of it and its transaction. */
START_TEST(test_fixtures)
{
	static const char *const files[] = { "outbox.jsonl", "all_changes.jsonl",
		                                 "odd_tables.jsonl" };
	size_t events = 0;

	cfg_with("");
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct stream_spec ss;
		struct ev_txn txn;
		char path[512], *line = NULL;
		size_t cap = 0;
		ssize_t n;
		uint64_t commit = 0;
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, files[f]);
		fp = fopen(path, "r");
		ck_assert_ptr_nonnull(fp);
		ss_init(&ss, &cfg);
		ev_txn_reset(&txn);
		while ((n = getline(&line, &cap, fp)) > 0) {
			struct w2j_record rec;
			struct ev_record er;
			char err[512], topic[256];
			int rc;

			if (line[n - 1] == '\n')
				line[--n] = '\0';
			rc = w2j_decode(line, (size_t)n, &ss.w2j, &rec, err, sizeof(err));
			ev_next(&ss, line, (size_t)n, &txn, &er);
			if (rc == 0 && rec.kind == W2J_BEGIN)
				commit = rec.nextlsn;
			if (rc == 0 && rec.kind == W2J_EVENT &&
			    route_topic(ss.topic_template, rec.route.ptr, rec.route.len,
			                topic, sizeof(topic), err, sizeof(err)) >= 0) {
				struct route_headers h;
				ck_assert_int_eq(er.kind, EV_EVENT);
				route_headers(&h, &rec, commit);
				ck_assert_str_eq(er.ev.topic, topic);
				ck_assert_uint_eq(er.ev.value.len, rec.payload.len);
				ck_assert_mem_eq(er.ev.value.ptr, rec.payload.ptr,
				                 rec.payload.len);
				for (int k = 0; k < ROUTE_H_COUNT; k++)
					if (h.value[k] != NULL)
						ck_assert_mem_eq(er.ev.headers.value[k], h.value[k],
						                 h.len[k]);
				events++;
			} else if (rc == 0 && rec.kind != W2J_EVENT) {
				ck_assert_int_ne(er.kind, EV_EVENT);
			}
			if (rc == 0)
				w2j_record_clear(&rec);
			ev_record_clear(&er);
		}
		free(line);
		fclose(fp);
		ss_free(&ss);
	}
	ck_assert_uint_gt(events, 10);
	cfg_free(&cfg);
}
END_TEST

Suite *event_suite(void)
{
	Suite *s = suite_create("event");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_peek_options_are_the_stream_options);
	tcase_add_test(tc, test_pgoutput_options);
	tcase_add_test(tc, test_emit_is_an_event_like_a_row);
	tcase_add_test(tc, test_poison);
	tcase_add_test(tc, test_fixtures);
	suite_add_tcase(s, tc);
	return s;
}
