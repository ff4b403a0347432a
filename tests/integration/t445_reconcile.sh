#!/usr/bin/env bash
# t445_reconcile -- outbox-relay --reconcile finds a write made around the
# outbox (docs/reconcile.md).
#
# An orders table and a writer that inserts each order and its
# OrderCreated outbox row in one transaction (8 orders, o-1..o-8, and an
# OrderShipped event of o-1 in the same topic, which the type filter must
# leave out); ONE planted bypass, order o-bypass inserted without its
# outbox row. The relay is started only after the writes, so every record
# is produced after --until: the records count because of
# reconcile.grace.ms. kcat then produces a second copy of o-3's event (the
# same id header): it must count once. Two types read the same topic:
# "orders" (keys: SELECT id) and "order_count" (SELECT count(*)).
#  (a) exit 1; orders names o-bypass: database 9 keys, kafka 8 events,
#      1 duplicate record, missing 1, surplus 0; order_count missing 1;
#      --metrics-file has missing_events 1 and last_run_success 1 (and
#      passes promtool check metrics when promtool is at hand); --json
#      says the same;
#  (b) a window that ends before the bypass: exit 0;
#  (c) the bypass deleted: exit 0, missing 0 and surplus 0 for both
#      types, the duplicate still counted once;
#  (d) a --since PostgreSQL cannot read is exit 64 with its message; a
#      window that ends before it starts, 64; no reconcile type, 78;
#  (e) the password of pg.password.file is in no output;
#  (f) Kafka unreachable: exit 69 within --timeout-ms, and the metrics
#      file says so (last_run_success 0, no per-type gauge).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t445_reconcile
pw=Zq7-reconcile-secret
it_pgpass "$IT_TEST_DIR/pgpass" "$pw"

now() { it_sql "$db" "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC',
	'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"; }

it_sql "$db" "CREATE TABLE orders (id text PRIMARY KEY,
	created_at timestamptz NOT NULL DEFAULT clock_timestamp(), total int)" >/dev/null
since=$(now)
sleep 0.2
# The writer: each order and its event in one transaction.
for i in 1 2 3 4 5 6 7 8; do
	it_txn "$db" "INSERT INTO orders (id, total) VALUES ('o-$i', $i)" \
		"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		 VALUES ('$type', 'o-$i', 'OrderCreated', '{\"total\": $i}')" >/dev/null
done
it_txn "$db" "UPDATE orders SET total = 10 WHERE id = 'o-1'" \
	"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	 VALUES ('$type', 'o-1', 'OrderShipped', '{}')" >/dev/null
sleep 0.2
before_bypass=$(now)
sleep 0.2
# The planted bypass: an order without its event.
it_sql "$db" "INSERT INTO orders (id, total) VALUES ('o-bypass', 99)" >/dev/null
sleep 0.2
until=$(now)

it_write_config "$conf" "$db" "pg.password.file=$IT_TEST_DIR/pgpass"
end=$(it_current_lsn "$db")
it_start_relay "$conf" "$log"
it_check "the relay confirms past the 9 events" it_wait_confirmed "$db" "$db" "$end" 60
it_stop_checked "the relay exits 0 on SIGTERM"

# A second copy of o-3's event, as a replay would produce it.
it_consume "$topic" "$IT_TEST_DIR/topic.json"
id3=$(it_fields "$IT_TEST_DIR/topic.json" key h:id h:event_type |
	awk -F'\t' '$1 == "o-3" && $3 == "OrderCreated" {print $2; exit}')
if [[ -n $id3 ]] && echo '{"total": 3}' | kcat -b "$KAFKA_BROKERS" -P -t "$topic" \
	-k o-3 -H "id=$id3" -H event_type=OrderCreated 2>"$IT_TEST_DIR/kcat.err"; then
	ok "kcat produced a duplicate of o-3's event ($id3)"
else
	not_ok "kcat produced a duplicate of o-3's event" "id '$id3'; $(cat "$IT_TEST_DIR/kcat.err" 2>/dev/null)"
fi
it_consume_wait "$topic" "$IT_TEST_DIR/topic.json" 10 || true
it_check "the topic holds 10 records (9 events and the copy)" \
	test "$(it_count "$IT_TEST_DIR/topic.json")" -eq 10

sel="FROM orders WHERE created_at >= \$1 AND created_at < \$2"
cat >>"$conf" <<-EOF
	reconcile.orders.sql = SELECT id $sel ORDER BY created_at
	reconcile.orders.topic = $topic
	reconcile.orders.type = OrderCreated
	reconcile.order_count.sql = SELECT count(*) $sel
	reconcile.order_count.topic = $topic
	reconcile.order_count.type = OrderCreated
EOF

# ------------------------------------------------------------ (a)
metrics=$IT_TEST_DIR/reconcile.prom
it_run_relay a --config "$conf" --reconcile --since "$since" --until "$until" \
	--metrics-file "$metrics"
it_expect_exit a 1 "(a) the bypass is found"
it_expect_in a out "(a) orders: o-bypass named, 8 events of 9 keys, the copy counted once" \
	"orders: database 9 keys, kafka 8 events in $topic of type OrderCreated (1 duplicate record), missing 1 (keys o-bypass), surplus 0"
it_expect_in a out "(a) order_count: missing 1" \
	"order_count: database 9, kafka 8 events in $topic of type OrderCreated (1 duplicate record), missing 1, surplus 0"
it_check "(a) metrics: outbox_relay_reconcile_missing_events{type=\"orders\"} 1" \
	test "$(it_metric_in "$metrics" 'outbox_relay_reconcile_missing_events{type="orders"}')" = 1
it_check "(a) metrics: kafka_events 8, database_events 9, last_run_success 1" \
	test "$(it_metric_in "$metrics" 'outbox_relay_reconcile_kafka_events{type="orders"}') $(it_metric_in "$metrics" 'outbox_relay_reconcile_database_events{type="orders"}') $(it_metric_in "$metrics" outbox_relay_reconcile_last_run_success)" = "8 9 1"
promtool=${PROMTOOL:-$IT_ROOT/.tmp/tools/prometheus/usr/bin/promtool}
[[ -x $promtool ]] || promtool=$(command -v promtool || true)
if [[ -n $promtool && -x $promtool ]]; then
	it_check "(a) promtool check metrics accepts the file" \
		sh -c "'$promtool' check metrics <'$metrics'"
else
	skip "(a) promtool check metrics accepts the file" "promtool not installed (make deps)"
fi
it_check "(a) no temporary metrics file left" \
	sh -c "! ls '$metrics'.tmp.* 2>/dev/null"
it_run_relay aj --config "$conf" --reconcile --since "$since" --until "$until" --json
it_expect_exit aj 1 "(a) --json: the bypass is found"
it_py_check "(a) --json: orders missing_keys [o-bypass], kafka_events 8, duplicates 1" '
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["types"]}
o = t["orders"]
assert o["missing_keys"] == ["o-bypass"] and o["kafka_events"] == 8, o
assert o["duplicates"] == 1 and o["surplus"] == 0 and d["missing"] == 2, d
' "$IT_TEST_DIR/aj.out"

# ------------------------------------------------------------ (b)
it_run_relay b --config "$conf" --reconcile --since "$since" --until "$before_bypass"
it_expect_exit b 0 "(b) a window that ends before the bypass"
it_expect_in b out "(b) orders: 8 keys, 8 events, nothing missing" \
	"orders: database 8 keys, kafka 8 events in $topic of type OrderCreated (1 duplicate record), missing 0, surplus 0"

# ------------------------------------------------------------ (c)
it_sql "$db" "DELETE FROM orders WHERE id = 'o-bypass'" >/dev/null
it_run_relay c --config "$conf" --reconcile --since "$since" --until "$until" \
	--metrics-file "$metrics"
it_expect_exit c 0 "(c) the bypass deleted"
it_expect_in c out "(c) both types: nothing missing, no surplus, the copy counted once" \
	"orders: database 8 keys, kafka 8 events in $topic of type OrderCreated (1 duplicate record), missing 0, surplus 0" \
	"order_count: database 8, kafka 8 events in $topic of type OrderCreated (1 duplicate record), missing 0, surplus 0"
it_check "(c) metrics: missing_events 0" \
	test "$(it_metric_in "$metrics" 'outbox_relay_reconcile_missing_events{type="orders"}')" = 0

# ------------------------------------------------------------ (d)
it_run_relay d1 --config "$conf" --reconcile --since "not a time" --until "$until"
it_expect_err d1 64 "(d) --since that is no time" \
	'--since: .*invalid input syntax.*not a time.*nor an interval'
it_run_relay d2 --config "$conf" --reconcile --since "$until" --until "$since"
it_expect_err d2 64 "(d) a window that ends before it starts" "must be before --until"
it_write_config "$IT_TEST_DIR/none.conf" "$db"
it_run_relay d3 --config "$IT_TEST_DIR/none.conf" --reconcile --since "1 hour" --until "1 second"
it_expect_err d3 78 "(d) no reconcile type" "no event type configured"

# ------------------------------------------------------------ (f)
# Kafka unreachable: 69 within --timeout-ms, and the metrics file says the
# run failed (no per-type gauge, last_run_success 0).
it_run_relay f --config "$conf" --set kafka.bootstrap.servers=127.0.0.1:1 \
	--reconcile --since "$since" --until "$until" --timeout-ms 3000 --metrics-file "$metrics"
it_expect_exit f 69 "(f) Kafka unreachable"
it_check "(f) metrics: last_run_success 0, no missing_events gauge" \
	test "$(it_metric_in "$metrics" outbox_relay_reconcile_last_run_success)/$(grep -c missing_events "$metrics")" = 0/0

# ------------------------------------------------------------ (e)
if grep -l -- "$pw" "$IT_TEST_DIR"/*.out "$IT_TEST_DIR"/*.err "$log" 2>/dev/null; then
	not_ok "(e) the password is in no output" "$(grep -l -- "$pw" "$IT_TEST_DIR"/*.out "$IT_TEST_DIR"/*.err "$log")"
else
	ok "(e) the password is in no output"
fi
it_summary
