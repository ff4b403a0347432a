/* SPDX-License-Identifier: Apache-2.0 */
/* check_from_debezium.c -- --from-debezium: realistic connector files
 * (tests/fixtures/debezium/) converted, the output loaded back through
 * the configuration file reader, what does not map listed with why, and
 * no password anywhere. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/from_debezium.h"
#include "lib/config.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

struct converted {
	int rc;
	char *out, *notes;
	size_t out_len, notes_len;
	char err[768];
};

static char *slurp(const char *file, size_t *len)
{
	char path[512], *text = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/debezium/%s", FIXTURE_DIR, file);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: run from the repository", path);
	*len = (size_t)getdelim(&text, &cap, '\0', f);
	fclose(f);
	return text;
}

static void convert(const char *file, struct converted *c)
{
	size_t len;
	char *text = slurp(file, &len);
	FILE *out, *notes;

	memset(c, 0, sizeof(*c));
	out = open_memstream(&c->out, &c->out_len);
	notes = open_memstream(&c->notes, &c->notes_len);
	c->rc = dbz_convert(text, len, file, out, notes, c->err, sizeof(c->err));
	fclose(out);
	fclose(notes);
	free(text);
}

static void converted_free(struct converted *c)
{
	free(c->out);
	free(c->notes);
}

/* The output is a relay configuration file: it loads with the file
 * reader (what --config uses), and with the broker the connector's file
 * cannot name it validates. */
static void load_back(const struct converted *c, struct relay_config *cfg)
{
	char err[512];

	cfg_init(cfg);
	ck_assert_msg(cfg_load_text(cfg, c->out, c->out_len, "out.conf", err,
	                            sizeof(err)) == 0, "%s\n%s", err, c->out);
	ck_assert_int_eq(cfg_set(cfg, "kafka.bootstrap.servers", "127.0.0.1:9092",
	                         CFG_SRC_FLAG, "--set", err, sizeof(err)), 0);
	ck_assert_msg(cfg_validate(cfg, err, sizeof(err)) == 0, "%s", err);
}

static void has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want) != NULL, "no \"%s\" in:\n%s", want, text);
}

START_TEST(test_connector_json)
{
	struct converted c;
	struct relay_config cfg;

	convert("connector.json", &c);
	ck_assert_msg(c.rc == 0, "%s", c.err);
	load_back(&c, &cfg);
	ck_assert_str_eq(cfg.pg_conninfo, "host=db.internal port=5432 "
	                                  "user=debezium dbname=orders "
	                                  "sslmode=require");
	ck_assert_str_eq(cfg.slot_name, "orders_outbox");
	ck_assert_str_eq(cfg.slot_plugin, "pgoutput");
	ck_assert_str_eq(cfg.slot_publication, "orders_outbox_pub");
	ck_assert_str_eq(cfg.outbox_schema, "public");
	ck_assert_str_eq(cfg.outbox_table, "outbox");
	ck_assert_int_eq(cfg.heartbeat_interval_ms, 10000);
	ck_assert_str_eq(cfg.heartbeat_action_query,
	                 "UPDATE heartbeat SET ts = now()");
	ck_assert_str_eq(cfg.poison_policy, "dlq");
	ck_assert_str_eq(cfg.poison_dlq_topic, "orders.dlq");
	ck_assert_str_eq(cfg_kafka_get(&cfg, "linger.ms"), "10");
	/* Debezium's column defaults, written because ours differ. */
	ck_assert_str_eq(cfg.field_key, "aggregateid");
	ck_assert_str_eq(cfg.field_type, "type");
	ck_assert_str_eq(cfg.route_by_field, "aggregatetype");
	ck_assert_str_eq(cfg.route_topic_replacement, "orders.${routedByValue}");
	/* Each line names the setting it came from. */
	has(c.out, "# transforms.outbox.table.field.event.key: Debezium's "
	           "default");
	has(c.out, "# errors.tolerance: all, with a dead-letter topic\n"
	           "poison.policy = dlq\n");
	/* What does not map, with why, on notes and at the end of out. */
	/* no_data is what the relay does anyway: not listed. */
	ck_assert_ptr_null(strstr(c.notes, "snapshot.mode"));
	has(c.notes, "topic.prefix: names Debezium's change-event topics");
	has(c.notes, "tasks.max: ");
	has(c.notes, "transforms.outbox.table.expand.json.payload: true: not "
	             "supported");
	has(c.notes, "publication.autocreate.mode: ");
	has(c.notes, "producer.override.sasl.jaas.config: Java's JAAS login");
	has(c.notes, "bootstrap.servers: the Connect worker's");
	has(c.out, "# Not carried over (also on stderr):\n#   database.password: "
	           "never printed");
	/* The password, the JAAS password: nowhere. */
	ck_assert_ptr_null(strstr(c.out, "Zq7"));
	ck_assert_ptr_null(strstr(c.notes, "Zq7"));
	cfg_free(&cfg);
	converted_free(&c);
}
END_TEST

START_TEST(test_connector_properties)
{
	struct converted c;
	struct relay_config cfg;

	convert("connector.properties", &c);
	ck_assert_msg(c.rc == 0, "%s", c.err);
	load_back(&c, &cfg);
	ck_assert_str_eq(cfg.pg_conninfo, "host=127.0.0.1 port=5432 "
	                                  "user=postgres dbname=billing");
	ck_assert_str_eq(cfg.slot_name, "billing_slot");
	ck_assert_str_eq(cfg.slot_publication, "billing_pub");
	ck_assert_str_eq(cfg.slot_failover, "on");
	ck_assert_int_eq(cfg.status_interval_ms, 5000);
	ck_assert_str_eq(cfg.outbox_schema, "billing");
	ck_assert_str_eq(cfg.field_id, "event_id");
	ck_assert_str_eq(cfg.field_key, "aggregate_id");       /* "k = v" */
	ck_assert_str_eq(cfg.route_by_field, "aggregate_type"); /* "k: v" */
	/* A continued line, its next line's indent dropped. */
	ck_assert_str_eq(cfg.route_topic_replacement, "billing.${routedByValue}");
	has(c.notes, "snapshot.mode: initial: the relay never snapshots");
	has(c.notes, "transforms.unwrapNot: org.apache.kafka.connect.transforms."
	             "InsertField$Value has no equivalent");
	ck_assert_ptr_null(strstr(c.notes, "static.field"));
	ck_assert_ptr_null(strstr(c.out, "Zq7"));
	ck_assert_ptr_null(strstr(c.notes, "Zq7"));
	cfg_free(&cfg);
	converted_free(&c);
}
END_TEST

/* A connector without the outbox router, or not PostgreSQL's: exit 78
 * and nothing printed. */
START_TEST(test_not_an_outbox_connector)
{
	static const char mysql[] = "{\"connector.class\": \"io.debezium."
	                            "connector.mysql.MySqlConnector\", "
	                            "\"transforms\": \"o\", \"transforms.o.type\":"
	                            " \"io.debezium.transforms.outbox."
	                            "EventRouter\"}";
	struct converted c;
	char err[512], *out = NULL;
	size_t len = 0;
	FILE *f;

	convert("not_outbox.json", &c);
	ck_assert_int_eq(c.rc, 78);
	has(c.err, "not_outbox.json: not an outbox connector: no transform of "
	           "type io.debezium.transforms.outbox.EventRouter");
	ck_assert_uint_eq(c.out_len, 0);
	ck_assert_uint_eq(c.notes_len, 0);
	converted_free(&c);

	f = open_memstream(&out, &len);
	ck_assert_int_eq(dbz_convert(mysql, sizeof(mysql) - 1, "m.json", f, f,
	                             err, sizeof(err)), 78);
	fclose(f);
	has(err, "connector.class is io.debezium.connector.mysql.MySqlConnector");
	ck_assert_uint_eq(len, 0);
	free(out);
	f = open_memstream(&out, &len);
	ck_assert_int_eq(dbz_convert("{\"a\": ", 6, "bad.json", f, f, err,
	                             sizeof(err)), 78);
	fclose(f);
	has(err, "bad.json:1: not a JSON object");
	free(out);
}
END_TEST

Suite *from_debezium_suite(void)
{
	Suite *s = suite_create("from_debezium");
	TCase *tc = tcase_create("convert");

	tcase_add_test(tc, test_connector_json);
	tcase_add_test(tc, test_connector_properties);
	tcase_add_test(tc, test_not_an_outbox_connector);
	suite_add_tcase(s, tc);
	return s;
}
