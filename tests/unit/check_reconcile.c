/* SPDX-License-Identifier: Apache-2.0 */
/* check_reconcile.c -- the pure parts of --reconcile (cli/reconcile.h):
 * the reconcile.<name>.* keys, the window's tally (duplicates once, the
 * grace, the type filter), the comparison and the metrics text. The
 * database and Kafka are in the integration test t445. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cli/reconcile.h"

static struct kw_record rec(const char *key, const char *id,
                            const char *type, int64_t ts)
{
	struct kw_record r = { 0 };

	r.key = key;
	r.key_len = key ? strlen(key) : 0;
	r.id = id;
	r.id_len = id ? strlen(id) : 0;
	r.type = type;
	r.type_len = type ? strlen(type) : 0;
	r.ts_ms = ts;
	return r;
}

static void load(struct relay_config *cfg, const char *text)
{
	char err[512];

	cfg_init(cfg);
	ck_assert_msg(cfg_load_text(cfg, text, strlen(text), "t.conf", err,
	                            sizeof(err)) == 0, "%s", err);
}

START_TEST(test_types)
{
	struct relay_config cfg;
	struct rc_type *t = NULL;
	char err[512];

	load(&cfg, "reconcile.orders.sql = SELECT id FROM orders\n"
	           "reconcile.orders.topic = outbox.event.order\n"
	           "reconcile.orders.type = OrderCreated\n"
	           "reconcile.pay-1.sql = SELECT count(*) FROM p\n"
	           "reconcile.pay-1.topic = pay\n"
	           "reconcile.pay-1.type.header = eventType\n"
	           "reconcile.grace.ms = 5000\n");
	ck_assert_int_eq(cfg.reconcile_grace_ms, 5000);
	ck_assert_int_eq(rc_types(&cfg, &t, err, sizeof(err)), 2);
	ck_assert_str_eq(t[0].name, "orders");
	ck_assert_str_eq(t[0].topic, "outbox.event.order");
	ck_assert_str_eq(t[0].type, "OrderCreated");
	ck_assert_str_eq(t[0].type_header, "event_type");
	ck_assert_str_eq(t[1].name, "pay-1");
	ck_assert_ptr_null(t[1].type);
	ck_assert_str_eq(t[1].type_header, "eventType");
	free(t);
	cfg_free(&cfg);

	/* A type without its topic, and none at all. */
	load(&cfg, "reconcile.orders.sql = SELECT 1\n");
	ck_assert_int_eq(rc_types(&cfg, &t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "reconcile.orders.topic is not set"));
	cfg_free(&cfg);
	load(&cfg, "");
	ck_assert_int_eq(rc_types(&cfg, &t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no event type configured"));
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_bad_keys)
{
	static const char *const bad[] = {
		"reconcile.orders.query", "reconcile..sql", "reconcile.orders",
		"reconcile.a b.sql", "reconcile.x.sql.more",
	};
	struct relay_config cfg;
	char err[512];

	cfg_init(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(cfg_set(&cfg, bad[i], "v", CFG_SRC_FLAG, "--set", err,
		                      sizeof(err)) == -1, "%s accepted", bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "not a reconcile key"));
	}
	ck_assert_int_eq(cfg_set(&cfg, "reconcile.grace.ms", "-1", CFG_SRC_FLAG,
	                         "--set", err, sizeof(err)), -1);
	cfg_free(&cfg);
}
END_TEST

START_TEST(test_set)
{
	struct rc_set *s = rc_set_new();
	char k[16];

	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		ck_assert(rc_set_add(s, k, strlen(k)));
	}
	ck_assert(!rc_set_add(s, "k7", 2));
	ck_assert_uint_eq(rc_set_size(s), 1000);
	ck_assert_uint_eq(rc_set_get(s, "k7", 2), 2);
	ck_assert_uint_eq(rc_set_get(s, "k1000", 5), 0);
	/* Bytes, not C strings. */
	ck_assert(rc_set_add(s, "a\0b", 3));
	ck_assert(rc_set_add(s, "a\0c", 3));
	rc_set_free(s);
}
END_TEST

/* Duplicates count once; the window is [since, end); other types and
 * records without the type header are left out. */
START_TEST(test_tally)
{
	struct rc_tally t;
	struct kw_record r;

	rc_tally_init(&t, 1000, 2000, "OrderCreated", "string");
	r = rec("o-1", "id-1", "OrderCreated", 1000);
	rc_tally_offer(&t, &r);
	r = rec("o-1", "id-1", "OrderCreated", 1500); /* a replay */
	rc_tally_offer(&t, &r);
	r = rec("o-2", "id-2", "OrderCreated", 1999);
	rc_tally_offer(&t, &r);
	r = rec("o-3", "id-3", "OrderCreated", 2000); /* past the end */
	rc_tally_offer(&t, &r);
	r = rec("o-0", "id-0", "OrderCreated", 999); /* before since */
	rc_tally_offer(&t, &r);
	r = rec("o-1", "id-9", "OrderShipped", 1200);
	rc_tally_offer(&t, &r);
	r = rec("o-1", "id-8", NULL, 1200);
	rc_tally_offer(&t, &r);
	ck_assert_uint_eq(rc_tally_events(&t), 2);
	ck_assert_uint_eq(t.records, 3);
	ck_assert_uint_eq(t.duplicates, 1);
	ck_assert_uint_eq(t.outside, 2);
	ck_assert_uint_eq(t.other_type, 2);
	ck_assert_uint_eq(rc_set_get(t.keys, "o-1", 3), 1);
	rc_tally_free(&t);

	/* No type wanted: every record; no id: each an event. */
	rc_tally_init(&t, 0, 10, NULL, "string");
	r = rec("a", NULL, NULL, 1);
	rc_tally_offer(&t, &r);
	rc_tally_offer(&t, &r);
	r = rec("b", "x", "T", 2);
	rc_tally_offer(&t, &r);
	ck_assert_uint_eq(rc_tally_events(&t), 3);
	ck_assert_uint_eq(t.without_id, 2);
	ck_assert_uint_eq(t.duplicates, 0);
	rc_tally_free(&t);
}
END_TEST

START_TEST(test_key_text)
{
	char out[64];

	rc_key_text("string", "\"o-1\"", 5, out, sizeof(out));
	ck_assert_str_eq(out, "\"o-1\"");
	rc_key_text("json", "\"o-1\"", 5, out, sizeof(out));
	ck_assert_str_eq(out, "o-1");
	rc_key_text("json", "42", 2, out, sizeof(out));
	ck_assert_str_eq(out, "42");
	{
		const char *k = "{\"schema\":{\"type\":\"string\"},\"payload\":\"o-2\"}";
		rc_key_text("json-schema", k, strlen(k), out, sizeof(out));
	}
	ck_assert_str_eq(out, "o-2");
	rc_key_text("json", "not json", 8, out, sizeof(out));
	ck_assert_str_eq(out, "not json");
}
END_TEST

START_TEST(test_compare_keys)
{
	struct rc_tally t;
	struct rc_result res;
	struct rc_db d;
	struct kw_record r;

	rc_db_init(&d, true);
	rc_db_add_key(&d, "o-1", 3);
	rc_db_add_key(&d, "o-bypass", 8);
	rc_db_add_key(&d, "o-2", 3);
	rc_db_add_key(&d, "o-2", 3); /* two rows, one key */
	rc_tally_init(&t, 0, 100, NULL, "string");
	r = rec("o-1", "i1", NULL, 1);
	rc_tally_offer(&t, &r);
	rc_tally_offer(&t, &r);
	r = rec("o-2", "i2", NULL, 1);
	rc_tally_offer(&t, &r);
	r = rec("o-9", "i9", NULL, 1); /* the window's edge: not the db's */
	rc_tally_offer(&t, &r);
	rc_compare(&d, &t, &res);
	ck_assert_uint_eq(res.database, 3);
	ck_assert_uint_eq(res.kafka_events, 3);
	ck_assert_uint_eq(res.duplicates, 1);
	ck_assert_uint_eq(res.missing, 1);
	ck_assert_uint_eq(res.nnamed, 1);
	ck_assert_str_eq(res.named[0], "o-bypass");
	ck_assert_uint_eq(res.surplus, 1);
	rc_tally_free(&t);
	rc_db_free(&d);
}
END_TEST

START_TEST(test_compare_count)
{
	struct rc_tally t;
	struct rc_result res;
	struct rc_db d;
	struct kw_record r;

	rc_db_init(&d, false);
	d.count = 3;
	rc_tally_init(&t, 0, 100, NULL, "string");
	r = rec("a", "1", NULL, 1);
	rc_tally_offer(&t, &r);
	rc_tally_offer(&t, &r);
	r = rec("a", "2", NULL, 1);
	rc_tally_offer(&t, &r);
	rc_compare(&d, &t, &res);
	ck_assert_uint_eq(res.missing, 1);
	ck_assert_uint_eq(res.surplus, 0);
	ck_assert_uint_eq(res.nnamed, 0);
	d.count = 1;
	rc_compare(&d, &t, &res);
	ck_assert_uint_eq(res.missing, 0);
	ck_assert_uint_eq(res.surplus, 1);
	rc_tally_free(&t);
	rc_db_free(&d);
}
END_TEST

START_TEST(test_metrics)
{
	const char *names[2] = { "orders", "pay" };
	struct rc_result res[2];
	char *s;

	memset(res, 0, sizeof(res));
	res[0].missing = 1;
	res[0].database = 9;
	res[0].kafka_events = 8;
	s = rc_metrics_text(names, res, 2, 1700000000.5, true);
	ck_assert_ptr_nonnull(strstr(s, "# TYPE outbox_relay_reconcile_missing_"
	                                "events gauge\n"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_missing_events"
	                                "{type=\"orders\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_database_events"
	                                "{type=\"orders\"} 9\n"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_kafka_events"
	                                "{type=\"pay\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_last_run_"
	                                "timestamp_seconds 1700000000.500\n"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_last_run_"
	                                "success 1\n"));
	free(s);
	/* A failed run: no per-type gauge, success 0. */
	s = rc_metrics_text(names, res, 0, 1.0, false);
	ck_assert_ptr_null(strstr(s, "missing_events"));
	ck_assert_ptr_nonnull(strstr(s, "outbox_relay_reconcile_last_run_"
	                                "success 0\n"));
	free(s);
}
END_TEST

Suite *reconcile_suite(void)
{
	Suite *s = suite_create("reconcile");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_types);
	tcase_add_test(tc, test_bad_keys);
	tcase_add_test(tc, test_set);
	tcase_add_test(tc, test_tally);
	tcase_add_test(tc, test_key_text);
	tcase_add_test(tc, test_compare_keys);
	tcase_add_test(tc, test_compare_count);
	tcase_add_test(tc, test_metrics);
	suite_add_tcase(s, tc);
	return s;
}
