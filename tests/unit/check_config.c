/* SPDX-License-Identifier: Apache-2.0 */
/* check_config.c -- configuration parsing, precedence and safety rules. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "lib/config.h"
#include "kafka/kafka_conf.h"

static char tmp_path[64];

/* Writes text to a fresh temp file; its path is in tmp_path. */
static const char *write_tmp(const char *text)
{
	int fd;
	FILE *f;

	strcpy(tmp_path, "/tmp/relay-cfg-XXXXXX");
	fd = mkstemp(tmp_path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return tmp_path;
}

static void base_cfg(struct relay_config *cfg)
{
	char err[256];
	cfg_init(cfg);
	ck_assert_int_eq(cfg_set(cfg, "pg.conninfo", "dbname=x", CFG_SRC_FLAG,
	                         "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(cfg, "kafka.bootstrap.servers", "127.0.0.1:1",
	                         CFG_SRC_FLAG, "t", err, sizeof(err)), 0);
}

START_TEST(test_defaults)
{
	struct relay_config cfg;
	cfg_init(&cfg);
	ck_assert_str_eq(cfg.slot_name, "outbox_relay");
	ck_assert_str_eq(cfg.slot_plugin, "wal2json");
	ck_assert_str_eq(cfg.slot_publication, "outbox_pub");
	ck_assert_str_eq(cfg.outbox_schema, "public");
	ck_assert_str_eq(cfg.outbox_table, "outbox");
	ck_assert_str_eq(cfg.field_id, "id");
	ck_assert_str_eq(cfg.field_key, "aggregate_id");
	ck_assert_str_eq(cfg.field_type, "event_type");
	ck_assert_str_eq(cfg.field_payload, "payload");
	ck_assert_str_eq(cfg.route_by_field, "aggregate_type");
	ck_assert_str_eq(cfg.route_topic_replacement, "outbox.event.${routedByValue}");
	ck_assert_int_eq(cfg.status_interval_ms, 10000);
	/* The health endpoint is loopback-only unless told otherwise. */
	ck_assert_str_eq(cfg.http_listen, "127.0.0.1:8080");
	ck_assert(!cfg.producer_allow_unsafe);
	ck_assert_uint_eq(cfg.kafka_len, 0);
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_slot_plugin)
{
	static const char *const bad[][2] = {
		{ "slot.plugin", "test_decoding" },
		{ "slot.plugin", "PGOUTPUT" },
		{ "slot.plugin", "" },
		{ "slot.publication", "" },
		{ "slot.publication", "Outbox" },
		{ "slot.publication", "1pub" },
		{ "slot.publication", "a\"b" },
		{ "slot.failover", "true" },
		{ "slot.failover", "ON" },
		{ "slot.failover", "" },
	};
	struct relay_config cfg;
	char err[512];

	cfg_init(&cfg);
	ck_assert_int_eq(cfg_set(&cfg, "slot.plugin", "pgoutput", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_plugin, "pgoutput");
	ck_assert_int_eq(cfg_set(&cfg, "slot.publication", "orders_pub2",
	                         CFG_SRC_FLAG, "--set", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_publication, "orders_pub2");
	ck_assert_str_eq(cfg.slot_failover, "auto"); /* the default */
	ck_assert_int_eq(cfg_set(&cfg, "slot.failover", "off", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_failover, "off");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(cfg_set(&cfg, bad[i][0], bad[i][1], CFG_SRC_FLAG,
		                         "--set", err, sizeof(err)), -1);
		ck_assert_ptr_nonnull(strstr(err, bad[i][0]));
	}
	/* A refused value leaves the one before it. */
	ck_assert_str_eq(cfg.slot_plugin, "pgoutput");
	ck_assert_str_eq(cfg.slot_publication, "orders_pub2");
	ck_assert_str_eq(cfg.slot_failover, "off");
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_file)
{
	struct relay_config cfg;
	char err[512];
	const char *p = write_tmp(
		"# a comment\n"
		"\n"
		"  slot.name = my_slot  \n"
		"pg.conninfo = \"host=127.0.0.1 dbname=app password=s3cret\"\n"
		"outbox.table = public.\"Outbox\"\n"
		"table.field.event.key=aggregateId\n"
		"kafka.bootstrap.servers = 127.0.0.1:9092\n"
		"kafka.linger.ms = 20\n"
		"status.interval.ms = 500\n");
	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_file(&cfg, p, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_name, "my_slot");
	ck_assert_str_eq(cfg.pg_conninfo, "host=127.0.0.1 dbname=app password=s3cret");
	ck_assert_str_eq(cfg.outbox_schema, "public");
	ck_assert_str_eq(cfg.outbox_table, "Outbox");
	ck_assert_str_eq(cfg.field_key, "aggregateId");
	ck_assert_int_eq(cfg.status_interval_ms, 500);
	ck_assert_str_eq(cfg_kafka_get(&cfg, "bootstrap.servers"), "127.0.0.1:9092");
	ck_assert_str_eq(cfg_kafka_get(&cfg, "linger.ms"), "20");
	ck_assert_ptr_null(cfg_kafka_get(&cfg, "acks"));
	cfg_free(&cfg);
	unlink(p);
}
END_TEST

START_TEST(test_file_errors_name_line)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "slot.name = a\nno.such.key = 1\n", ":2: unknown key \"no.such.key\"" },
		{ "\n\nstatus.interval.ms = ten\n", ":3: status.interval.ms: \"ten\" is not an integer" },
		{ "status.interval.ms = 60000\n", ":1: status.interval.ms: 60000 is out of range" },
		{ "just words\n", ":1: expected \"key = value\"" },
		{ "producer.allow.unsafe = maybe\n", ":1: producer.allow.unsafe" },
		{ "slot.name = Bad-Name\n", ":1: slot.name" },
		{ "outbox.table = a.\"b\"c\n", ":1: outbox.table" },
		{ "log.level = loud\n", ":1: log.level" },
		{ "kafka. = x\n", ":1: empty kafka property" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct relay_config cfg;
		char err[512], want[600];
		const char *p = write_tmp(cases[i].text);
		cfg_init(&cfg);
		ck_assert_int_eq(cfg_load_file(&cfg, p, err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "%s%s", p, cases[i].want);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
		              "case %zu: got \"%s\", want prefix \"%s\"", i, err, want);
		cfg_free(&cfg);
		unlink(p);
	}
}
END_TEST

START_TEST(test_missing_file)
{
	struct relay_config cfg;
	char err[512];
	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_file(&cfg, "/nonexistent/relay.conf", err,
	                               sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/relay.conf: cannot open"));
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_precedence)
{
	struct relay_config cfg;
	char err[512];
	char *env[] = { "OUTBOX_RELAY_SLOT_NAME=from_env",
		            "OUTBOX_RELAY_ROUTE_BY_FIELD=env_route",
		            "OUTBOX_RELAY_KAFKA_LINGER_MS=7",
		            "PATH=/usr/bin", NULL };
	const char *p = write_tmp("slot.name = from_file\n"
	                          "route.by.field = file_route\n"
	                          "table.field.event.id = file_id\n"
	                          "kafka.linger.ms = 3\n");
	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_file(&cfg, p, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_load_env(&cfg, env, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "slot.name=from_flag", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_name, "from_flag");      /* flag > env > file */
	ck_assert_str_eq(cfg.route_by_field, "env_route"); /* env > file */
	ck_assert_str_eq(cfg.field_id, "file_id");         /* file > default */
	ck_assert_str_eq(cfg.field_key, "aggregate_id");   /* default */
	ck_assert_str_eq(cfg_kafka_get(&cfg, "linger.ms"), "7");
	cfg_free(&cfg);
	unlink(p);
}
END_TEST

START_TEST(test_env_errors)
{
	struct relay_config cfg;
	char err[512];
	char *env1[] = { "OUTBOX_RELAY_SLOT_NAM=x", NULL };
	char *env2[] = { "OUTBOX_RELAY_STATUS_INTERVAL_MS=abc", NULL };
	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_env(&cfg, env1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "OUTBOX_RELAY_SLOT_NAM: unknown configuration "
	                      "variable; did you mean OUTBOX_RELAY_SLOT_NAME "
	                      "(slot.name)?");
	ck_assert_int_eq(cfg_load_env(&cfg, env2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "OUTBOX_RELAY_STATUS_INTERVAL_MS: status.interval.ms"));
	ck_assert_int_eq(cfg_set_flag(&cfg, "novalue", err, sizeof(err)), -1);
	ck_assert_int_eq(cfg_set_flag(&cfg, "bogus=1", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--set: unknown key \"bogus\"");
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_validate_safety)
{
	struct relay_config cfg;
	char err[512];

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "kafka.enable.idempotence=false", err,
	                              sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "producer.allow.unsafe"));
	ck_assert_int_eq(cfg_set_flag(&cfg, "producer.allow.unsafe=true", err,
	                              sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	cfg_free(&cfg);

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "kafka.acks=1", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "kafka.acks=1"));
	cfg_free(&cfg);

	/* librdkafka itself judges names and values. */
	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "kafka.no.such.property=1", err,
	                              sizeof(err)), 0);
	ck_assert_int_eq(kc_validate_config(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "kafka.no.such.property (from flag): ", 36) == 0,
	              "%s", err);
	cfg_free(&cfg);

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "kafka.linger.ms=-5", err, sizeof(err)), 0);
	ck_assert_int_eq(kc_validate_config(&cfg, err, sizeof(err)), -1);
	cfg_free(&cfg);

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "http.listen=localhost", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "http.listen"));
	ck_assert_int_eq(cfg_set_flag(&cfg, "http.listen=[::1]:0", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "http.listen=", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "alert.webhook.url=ftp://x", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "alert.webhook.url"));
	cfg_free(&cfg);

	cfg_init(&cfg);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "pg.conninfo is required");
	ck_assert_int_eq(cfg_set_flag(&cfg, "pg.conninfo=dbname=x", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "kafka.bootstrap.servers is required");
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_print_redacts)
{
	struct relay_config cfg;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "pg.conninfo=host=h password=hunter2",
	                              err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "kafka.sasl.password=hunter3", err,
	                              sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "alert.webhook.url=https://hooks/T0k3n",
	                              err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "slot.standby.conninfo=host=s "
	                              "password=hunter4", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	cfg_print(&cfg, f);
	fclose(f);
	ck_assert_ptr_null(strstr(buf, "hunter4"));
	ck_assert_ptr_nonnull(strstr(buf, "slot.standby.conninfo = <redacted> # flag"));
	ck_assert_ptr_null(strstr(buf, "hunter2"));
	ck_assert_ptr_null(strstr(buf, "hunter3"));
	ck_assert_ptr_null(strstr(buf, "T0k3n"));
	ck_assert_ptr_nonnull(strstr(buf, "pg.conninfo = <redacted> # flag"));
	ck_assert_ptr_nonnull(strstr(buf, "kafka.sasl.password = <redacted> # flag"));
	ck_assert_ptr_nonnull(strstr(buf, "slot.name = outbox_relay # default"));
	ck_assert_ptr_nonnull(strstr(buf, "kafka.bootstrap.servers = 127.0.0.1:1 # flag"));
	free(buf);
	cfg_free(&cfg);
}
END_TEST

/* slot.standby.conninfo must parse, and the refusal quotes none of it. */
START_TEST(test_standby_conninfo_checked)
{
	struct relay_config cfg;
	char err[512];

	base_cfg(&cfg);
	ck_assert_str_eq(cfg.slot_standby_conninfo, "");
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set_flag(&cfg, "slot.standby.conninfo=host=s "
	                              "password='hunter5", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "slot.standby.conninfo is not a valid connection "
	                 "string or URI");
	cfg_free(&cfg);
}
END_TEST

/* A URI password with an unencoded '@' or '/' is refused, and the
 * message quotes no part of it; encoded ones, '@' in the query, and
 * keyword/value strings pass. */
START_TEST(test_conninfo_uri_split)
{
	static const char *const bad[] = {
		"postgresql://relay:Lh7@Qz9tail@127.0.0.1:5432/app",
		"postgres://relay:Lh7@Qz9tail@db.internal/app",
		"postgresql://relay:Lh7/Qz9tail@127.0.0.1:5432/app",
		"postgresql://relay:Lh7?Qz9@tail@127.0.0.1/app",
		"postgresql://relay:Lh7@Qz9tail@h1:5432,h2:5432/app",
		"postgresql://relay:Lh7@Qz9/tail@127.0.0.1/app",
	};
	static const char *const good[] = {
		"postgresql://relay:Lh7%40Qz9tail@127.0.0.1:5432/app",
		"postgresql://relay:Lh7%2FQz9tail@127.0.0.1:5432/app",
		"postgresql://relay:p:w?x#y@127.0.0.1:5432/app",
		"postgresql://relay@127.0.0.1/app?sslrootcert=/etc/a@b/ca.crt",
		"postgresql:///app?host=/var/run/postgresql",
		"postgresql://127.0.0.1:5432/app",
		"host=127.0.0.1 dbname=app password=Lh7@Qz9tail",
		"host=127.0.0.1 dbname=app password=Lh7/Qz9@tail",
	};
	struct relay_config cfg;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		base_cfg(&cfg);
		ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", bad[i], CFG_SRC_ENV,
		                         "OUTBOX_RELAY_PG_CONNINFO", err, sizeof(err)), 0);
		ck_assert_msg(cfg_check_conninfo(&cfg, err, sizeof(err)) == -1,
		              "accepted: %s", bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "pg.conninfo (from env)"));
		ck_assert_ptr_nonnull(strstr(err, "%40"));
		ck_assert_ptr_null(strstr(err, "Lh7"));
		ck_assert_ptr_null(strstr(err, "Qz9"));
		ck_assert_ptr_null(strstr(err, "tail"));
		ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
		ck_assert_ptr_null(strstr(err, "Qz9"));
		cfg_free(&cfg);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		base_cfg(&cfg);
		ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", good[i], CFG_SRC_FLAG,
		                         "t", err, sizeof(err)), 0);
		ck_assert_msg(cfg_check_conninfo(&cfg, err, sizeof(err)) == 0,
		              "refused: %s: %s", good[i], err);
		cfg_free(&cfg);
	}
	/* Not parseable: said so, not quoted. */
	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", "host=x password=Lh7 =Qz9",
	                         CFG_SRC_FLAG, "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_check_conninfo(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "is not a valid connection string"));
	ck_assert_ptr_null(strstr(err, "Qz9"));
	cfg_free(&cfg);
}
END_TEST

/* The file parser from memory: same lines, same messages, named after
 * the name given; a last line without a newline counts, a NUL does not
 * pass. */
START_TEST(test_load_text)
{
	static const char text[] = "# c\n\n slot.name = \"s1\" \r\n"
	                           "status.interval.ms=500";
	static const char nul[] = "slot.name = a\nlog.level = de\0bug\n";
	struct relay_config cfg;
	char err[256];

	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_text(&cfg, text, sizeof(text) - 1, "mem", err,
	                               sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_name, "s1");
	ck_assert_int_eq(cfg.status_interval_ms, 500);
	ck_assert_int_eq(cfg_load_text(&cfg, NULL, 0, "mem", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_load_text(&cfg, nul, sizeof(nul) - 1, "mem", err,
	                               sizeof(err)), -1);
	ck_assert_str_eq(err, "mem:2: NUL byte in line");
	ck_assert_str_eq(cfg.slot_name, "a");
	ck_assert_int_eq(cfg_load_text(&cfg, "x\nbad", 5, "m", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "m:1: expected \"key = value\"");
	cfg_free(&cfg);
}
END_TEST

/* The file's edges: a " #" after a value starts a comment unless inside
 * double quotes, a '#' with no blank before it is part of the value, and
 * a UTF-8 byte order mark at the start of the file is skipped. */
START_TEST(test_file_comments_and_bom)
{
	static const char text[] =
		"\xEF\xBB\xBF" "slot.name = my_slot  # the slot of app A\n"
		"heartbeat.action.query = \"SELECT 1 # kept\"  # a comment\n"
		"kafka.sasl.password = abc#def\n"
		"heartbeat.prefix = hb\t# after a tab\n"
		"outbox.emit.prefix = # nothing but a comment\n"
		"route.topic.replacement = \"t.${routedByValue}\" # say \"hi\"\n"
		"table.field.event.id=#id\n";
	struct relay_config cfg;
	char err[256];

	cfg_init(&cfg);
	ck_assert_msg(cfg_load_text(&cfg, text, sizeof(text) - 1, "relay.conf",
	                            err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(cfg.slot_name, "my_slot");
	ck_assert_str_eq(cfg.heartbeat_action_query, "SELECT 1 # kept");
	ck_assert_str_eq(cfg_kafka_get(&cfg, "sasl.password"), "abc#def");
	ck_assert_str_eq(cfg.heartbeat_prefix, "hb");
	ck_assert_str_eq(cfg.outbox_emit_prefix, "");
	ck_assert_str_eq(cfg.route_topic_replacement, "t.${routedByValue}");
	ck_assert_str_eq(cfg.field_id, "#id");
	cfg_free(&cfg);
}
END_TEST

/* A non-breaking space and its kin in a key or around a value are named,
 * never shown raw; a value's own text is never quoted (it may be a
 * secret). */
START_TEST(test_file_odd_characters_named)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "# c\n\nslot.name\xC2\xA0= x\n",
		  "relay.conf:3: a non-breaking space (U+00A0) after \"slot.name\"" },
		{ "\xC2\xA0slot.name = x\n",
		  "relay.conf:1: a non-breaking space (U+00A0) before \"slot.name\"" },
		{ "slot.name = x\xC2\xA0\n",
		  "relay.conf:1: slot.name: a non-breaking space (U+00A0) at the end "
		  "of the value" },
		{ "kafka.sasl.password = \xE2\x80\x8Bs3cret\n",
		  "relay.conf:1: kafka.sasl.password: a zero-width space (U+200B) at "
		  "the start of the value" },
		{ "slot\xE2\x80\xAFname = x\n",
		  "relay.conf:1: a narrow no-break space (U+202F) after \"slot\"" },
		{ "slot.name = a\x1b[0mb\n",
		  "relay.conf:1: slot.name: a control character (U+001B) in the "
		  "value" },
		{ "slot.name = x\xA0\n",
		  "relay.conf:1: slot.name: a byte 0xA0 that is not UTF-8 at the end "
		  "of the value" },
		{ "sl\xC3\xB8t.name = x\n",
		  "relay.conf:1: a non-ASCII character (U+00F8) after \"sl\"" },
		{ "\xEF\xBB\xBFslot.name = a\n\xEF\xBB\xBFlog.level = info\n",
		  "relay.conf:2: a byte order mark (U+FEFF) before \"log.level\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct relay_config cfg;
		char err[512];

		cfg_init(&cfg);
		ck_assert_int_eq(cfg_load_text(&cfg, cases[i].text,
		                               strlen(cases[i].text), "relay.conf",
		                               err, sizeof(err)), -1);
		ck_assert_msg(strcmp(err, cases[i].want) == 0,
		              "case %zu: got \"%s\", want \"%s\"", i, err,
		              cases[i].want);
		ck_assert_ptr_null(strstr(err, "s3cret"));
		cfg_free(&cfg);
	}
}
END_TEST

/* An unknown key close to a known one gets a suggestion, from every
 * source; one far from all gets none. */
START_TEST(test_unknown_key_suggests)
{
	struct relay_config cfg;
	char err[512];
	char *env[] = { "OUTBOX_RELAY_SLOT_NAEM=x", NULL };

	cfg_init(&cfg);
	ck_assert_int_eq(cfg_load_text(&cfg, "slot.nmae = x\n", 14, "relay.conf",
	                               err, sizeof(err)), -1);
	ck_assert_str_eq(err, "relay.conf:1: unknown key \"slot.nmae\"; did you "
	                      "mean \"slot.name\"?");
	ck_assert_int_eq(cfg_set_flag(&cfg, "Status.Interval.ms=5", err,
	                              sizeof(err)), -1);
	ck_assert_str_eq(err, "--set: unknown key \"Status.Interval.ms\"; did "
	                      "you mean \"status.interval.ms\"?");
	ck_assert_int_eq(cfg_set_flag(&cfg, "heartbeat.intervall.ms=5", err,
	                              sizeof(err)), -1);
	ck_assert_str_eq(err, "--set: unknown key \"heartbeat.intervall.ms\"; "
	                      "did you mean \"heartbeat.interval.ms\"?");
	ck_assert_int_eq(cfg_load_env(&cfg, env, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "OUTBOX_RELAY_SLOT_NAEM: unknown configuration "
	                      "variable; did you mean OUTBOX_RELAY_SLOT_NAME "
	                      "(slot.name)?");
	ck_assert_int_eq(cfg_set_flag(&cfg, "kakfa.bootstrap.servers=h:1", err,
	                              sizeof(err)), -1);
	ck_assert_str_eq(err, "--set: unknown key \"kakfa.bootstrap.servers\"; "
	                      "did you mean \"kafka.bootstrap.servers\"?");
	ck_assert_int_eq(cfg_set_flag(&cfg, "bogus=1", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--set: unknown key \"bogus\"");
	cfg_free(&cfg);
}
END_TEST

/* Debezium's and Kafka Connect's names for our keys, from the file, the
 * environment and --set: the value lands in our key (mapped where the
 * values differ), --print-config names the key and the alias, and both
 * names in one source is refused. */
START_TEST(test_aliases)
{
	static const char text[] =
		"publication.name = orders_pub\n"
		"plugin.name = pgoutput\n"
		"errors.tolerance = none\n"
		"status.update.interval.ms = 500\n"
		"table.include.list = public\\.outbox_v2\n";
	struct relay_config cfg;
	char err[512], *out = NULL;
	size_t outlen = 0;
	char *env[] = { "OUTBOX_RELAY_ERRORS_DEADLETTERQUEUE_TOPIC_NAME=dlq1",
		            NULL };
	FILE *f;

	base_cfg(&cfg);
	ck_assert_msg(cfg_load_text(&cfg, text, sizeof(text) - 1, "relay.conf",
	                            err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(cfg.slot_publication, "orders_pub");
	ck_assert_str_eq(cfg.slot_plugin, "pgoutput");
	ck_assert_str_eq(cfg.poison_policy, "fail");
	ck_assert_int_eq(cfg.status_interval_ms, 500);
	ck_assert_str_eq(cfg.outbox_schema, "public");
	ck_assert_str_eq(cfg.outbox_table, "outbox_v2");
	ck_assert_int_eq(cfg_load_env(&cfg, env, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.poison_dlq_topic, "dlq1");
	ck_assert_int_eq(cfg_set_flag(&cfg, "errors.tolerance=all", err,
	                              sizeof(err)), 0);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	/* all: to the dead-letter topic when there is one. */
	ck_assert_str_eq(cfg.poison_policy, "dlq");
	f = open_memstream(&out, &outlen);
	cfg_print(&cfg, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\nslot.publication = orders_pub # "
	                                  "file (as publication.name)\n"));
	ck_assert_ptr_nonnull(strstr(out, "\npoison.dlq.topic = dlq1 # env (as "
	                                  "errors.deadletterqueue.topic.name)\n"));
	free(out);
	/* A later source still wins, under either name. */
	ck_assert_int_eq(cfg_set_flag(&cfg, "slot.publication=other", err,
	                              sizeof(err)), 0);
	ck_assert_str_eq(cfg.slot_publication, "other");
	cfg_free(&cfg);

	/* all without a dead-letter topic: log and go on. */
	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "errors.tolerance=all", err,
	                              sizeof(err)), 0);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(cfg.poison_policy, "skip");
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_alias_errors)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "slot.publication = a\npublication.name = b\n",
		  "relay.conf:2: publication.name and slot.publication both set "
		  "slot.publication in the file: keep one" },
		{ "errors.deadletterqueue.topic.name = d\npoison.dlq.topic = e\n",
		  "relay.conf:2: poison.dlq.topic and "
		  "errors.deadletterqueue.topic.name both set poison.dlq.topic in "
		  "the file: keep one" },
		{ "plugin.name = decoderbufs\n",
		  "relay.conf:1: plugin.name: decoderbufs" },
		{ "errors.tolerance = some\n",
		  "relay.conf:1: errors.tolerance: \"some\" is not one of none, all" },
		{ "table.include.list = public.a,public.b\n",
		  "relay.conf:1: table.include.list: " },
		{ "table.include.list = public.outbox.*\n",
		  "relay.conf:1: table.include.list: " },
		{ "poison.policy = park\n", "relay.conf:1: poison.policy: " },
		{ "publication.nam = x\n",
		  "relay.conf:1: unknown key \"publication.nam\"; did you mean "
		  "\"publication.name\"?" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct relay_config cfg;
		char err[512];

		cfg_init(&cfg);
		ck_assert_int_eq(cfg_load_text(&cfg, cases[i].text,
		                               strlen(cases[i].text), "relay.conf",
		                               err, sizeof(err)), -1);
		ck_assert_msg(strncmp(err, cases[i].want, strlen(cases[i].want)) == 0,
		              "case %zu: got \"%s\", want \"%s\"", i, err,
		              cases[i].want);
		cfg_free(&cfg);
	}
}
END_TEST

/* poison.policy = dlq needs a dead-letter topic. */
START_TEST(test_poison_policy_needs_topic)
{
	struct relay_config cfg;
	char err[512];

	base_cfg(&cfg);
	ck_assert_int_eq(cfg_set_flag(&cfg, "poison.policy=dlq", err,
	                              sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "poison.policy = dlq needs poison.dlq.topic "
	                         "(errors.deadletterqueue.topic.name)") == err,
	              "%s", err);
	ck_assert_int_eq(cfg_set_flag(&cfg, "poison.dlq.topic=outbox.dlq", err,
	                              sizeof(err)), 0);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	cfg_free(&cfg);
}
END_TEST

/* topic.creation.default.*: the partitions and replication factor are
 * keys, any other name a topic config; configs without partitions, a
 * replication factor of 0 and Connect's group settings are refused. */
START_TEST(test_topic_creation_keys)
{
	static const char text[] =
		"topic.creation.default.partitions = 6\n"
		"topic.creation.default.replication.factor = 3\n"
		"topic.creation.default.cleanup.policy = compact\n"
		"topic.creation.default.retention.ms = 604800000\n";
	struct relay_config cfg;
	char err[512], *out = NULL;
	size_t len = 0;
	FILE *f;

	base_cfg(&cfg);
	ck_assert_int_eq(cfg.topic_creation_partitions, 0);
	ck_assert_int_eq(cfg.topic_creation_replication_factor, -1);
	ck_assert_msg(cfg_load_text(&cfg, text, sizeof(text) - 1, "relay.conf",
	                            err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(cfg_validate(&cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg.topic_creation_partitions, 6);
	ck_assert_int_eq(cfg.topic_creation_replication_factor, 3);
	ck_assert_uint_eq(cfg.topic_configs_len, 2);
	ck_assert_str_eq(cfg.topic_configs[0].name, "cleanup.policy");
	ck_assert_str_eq(cfg.topic_configs[1].value, "604800000");
	f = open_memstream(&out, &len);
	cfg_print(&cfg, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\ntopic.creation.default.retention.ms "
	                                  "= 604800000 # file\n"));
	free(out);
	ck_assert_int_eq(cfg_set_flag(&cfg, "topic.creation.default.include=a.*",
	                              err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "topic creation groups are not "
	                                  "supported"));
	ck_assert_int_eq(cfg_set_flag(&cfg, "topic.creation.default.partitions=0",
	                              err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "topic.creation.default.cleanup.policy is set but "
	                      "topic.creation.default.partitions is 0 (off): set "
	                      "it (-1: the broker's num.partitions) to have topics "
	                      "created");
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_listen_parse)
{
	char host[64];
	int port = -1;

	ck_assert_int_eq(cfg_listen_parse("127.0.0.1:8080", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 8080);
	ck_assert_int_eq(cfg_listen_parse("[::1]:0", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 0);
	ck_assert_int_eq(cfg_listen_parse("::1:80", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse("127.0.0.1", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse("127.0.0.1:", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse(":80", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse("h:65536", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse("h:8x", NULL, 0, NULL), -1);
	ck_assert_int_eq(cfg_listen_parse("[::1]80", NULL, 0, NULL), -1);
}
END_TEST

/* pg.password.file: the first line becomes password= of pg.conninfo,
 * which libpq then parses back to the same settings, quotes and all. */
START_TEST(test_password_file)
{
	static const struct {
		const char *conninfo, *file, *password;
	} cases[] = {
		{ "host=db port=5432 dbname=app user=relay", "s3cret\n", "s3cret" },
		{ "postgresql://relay@db:5432/app?sslmode=require", "a b'c\\d\r\n",
		  "a b'c\\d" },
		{ "dbname='my db' user=relay", "pw\nsecond line ignored\n", "pw" },
	};
	struct relay_config cfg;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		PQconninfoOption *o, *before;
		char *perr = NULL;

		cfg_init(&cfg);
		ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", cases[i].conninfo,
		                         CFG_SRC_FILE, "t", err, sizeof(err)), 0);
		before = PQconninfoParse(cases[i].conninfo, &perr);
		ck_assert_ptr_nonnull(before);
		ck_assert_int_eq(cfg_set(&cfg, "pg.password.file",
		                         write_tmp(cases[i].file), CFG_SRC_FILE, "t",
		                         err, sizeof(err)), 0);
		ck_assert_msg(cfg_apply_password_file(&cfg, err, sizeof(err)) == 0,
		              "%s", err);
		unlink(tmp_path);
		o = PQconninfoParse(cfg.pg_conninfo, &perr);
		ck_assert_msg(o != NULL, "case %zu does not parse", i);
		for (size_t k = 0; o[k].keyword != NULL; k++) {
			const char *want = strcmp(o[k].keyword, "password") == 0
			                       ? cases[i].password : before[k].val;
			ck_assert_str_eq(o[k].keyword, before[k].keyword);
			if (want == NULL)
				ck_assert_ptr_null(o[k].val);
			else
				ck_assert_str_eq(o[k].val, want);
		}
		PQconninfoFree(o);
		PQconninfoFree(before);
		cfg_free(&cfg);
	}
}
END_TEST

START_TEST(test_password_file_errors)
{
	struct relay_config cfg;
	char err[256];

	/* Off: nothing changes. */
	base_cfg(&cfg);
	ck_assert_int_eq(cfg_apply_password_file(&cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.pg_conninfo, "dbname=x");
	/* Missing file, empty first line. */
	ck_assert_int_eq(cfg_set(&cfg, "pg.password.file", "/nonexistent/pw",
	                         CFG_SRC_FILE, "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_apply_password_file(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read /nonexistent/pw"));
	ck_assert_int_eq(cfg_set(&cfg, "pg.password.file", write_tmp("\nx\n"),
	                         CFG_SRC_FILE, "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_apply_password_file(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no password"));
	unlink(tmp_path);
	/* Two passwords: which one wins would be a surprise. */
	ck_assert_int_eq(cfg_set(&cfg, "pg.conninfo", "dbname=x password=InConn1",
	                         CFG_SRC_FILE, "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "pg.password.file", write_tmp("InFile2\n"),
	                         CFG_SRC_FILE, "t", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_apply_password_file(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "keep one"));
	ck_assert_ptr_null(strstr(err, "InConn1"));
	ck_assert_ptr_null(strstr(err, "InFile2"));
	unlink(tmp_path);
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_log_format)
{
	struct relay_config cfg;
	char err[256];

	cfg_init(&cfg);
	ck_assert_str_eq(cfg.log_format, "text");
	ck_assert_int_eq(cfg_set(&cfg, "log.format", "json", CFG_SRC_ENV,
	                         "OUTBOX_RELAY_LOG_FORMAT", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.log_format, "json");
	ck_assert_int_eq(cfg_set(&cfg, "log.format", "logfmt", CFG_SRC_FILE,
	                         "relay.conf:3", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "relay.conf:3: log.format: \"logfmt\" is not one "
	                 "of text, json");
	cfg_free(&cfg);
}
END_TEST

/* Every key of the table has a row in docs/configuration.md: --help
 * prints the table's help column, the page says more, and neither may
 * forget a key. */
START_TEST(test_keys_documented)
{
	FILE *f = fopen("docs/configuration.md", "r");
	char *doc = NULL, row[160];
	size_t cap = 0;
	ssize_t n;

	ck_assert_msg(f != NULL, "docs/configuration.md: run from the repository");
	n = getdelim(&doc, &cap, '\0', f);
	fclose(f);
	ck_assert(n > 0);
	ck_assert(cfg_key_count() > 0);
	for (size_t i = 0; i < cfg_key_count(); i++) {
		snprintf(row, sizeof(row), "| `%s` |", cfg_key_name(i));
		ck_assert_msg(strstr(doc, row) != NULL,
		              "%s: no row in docs/configuration.md", cfg_key_name(i));
	}
	ck_assert(cfg_key_name(cfg_key_count()) == NULL);
	free(doc);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_file);
	tcase_add_test(tc, test_slot_plugin);
	tcase_add_test(tc, test_file_errors_name_line);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_precedence);
	tcase_add_test(tc, test_env_errors);
	tcase_add_test(tc, test_validate_safety);
	tcase_add_test(tc, test_print_redacts);
	tcase_add_test(tc, test_standby_conninfo_checked);
	tcase_add_test(tc, test_listen_parse);
	tcase_add_test(tc, test_conninfo_uri_split);
	tcase_add_test(tc, test_load_text);
	tcase_add_test(tc, test_password_file);
	tcase_add_test(tc, test_password_file_errors);
	tcase_add_test(tc, test_log_format);
	tcase_add_test(tc, test_keys_documented);
	tcase_add_test(tc, test_file_comments_and_bom);
	tcase_add_test(tc, test_file_odd_characters_named);
	tcase_add_test(tc, test_unknown_key_suggests);
	tcase_add_test(tc, test_aliases);
	tcase_add_test(tc, test_alias_errors);
	tcase_add_test(tc, test_poison_policy_needs_topic);
	tcase_add_test(tc, test_topic_creation_keys);
	suite_add_tcase(s, tc);
	return s;
}
