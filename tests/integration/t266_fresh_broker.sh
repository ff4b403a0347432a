#!/usr/bin/env bash
# t266_fresh_broker -- a backlog drained into a broker that has just
# started, into topics it creates on first use, T266_ROUNDS (3) times:
# every event the relay confirmed is in its topic.
#
# This is make bench's case of the loss at topic creation
# (docs/benchmarks.md, "A loss at topic creation"): on a new broker the
# producer id comes late, so the first batches of every partition leave
# together once it does, several per partition when several requests may
# be in flight, while the broker is still creating the partitions' logs.
# A partition that refuses its first batch (NOT_LEADER_OR_FOLLOWER) and
# takes the second let librdkafka 2.0.2 report the first delivered. t265
# is the same on the run's long-lived broker.
#
# Each round: a broker of its own (IT_KAFKA_PORT + 12, started for the
# round and removed after it), T266_TYPES (2) new topics of 3
# partitions, 100 transactions of 100 events of about 600 B committed
# before the relay starts, the relay started the moment the broker
# answers. A partition's first requests must hold several batches: the
# bench's had 1 MB batches and more than 1 MB a partition in the window;
# here kafka.batch.size is 64 kB. Checked once the slot is confirmed past
# them: every event id exactly once.
#
# T266_SET="KEY=VALUE ..." adds relay settings, e.g. several requests in
# flight on any librdkafka:
#   T266_SET=kafka.max.in.flight.requests.per.connection=5 \
#       tests/integration/run.sh t266
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

rounds=${T266_ROUNDS:-3}
types=${T266_TYPES:-2}
txns=100
rows=100
want=$((txns * rows))
port=$((IT_KAFKA_PORT + 12))
db=t266_fresh_broker

it_setup_db "$db"
for ((x = 0; x < txns; x++)); do
	echo "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 't266_' || (n % $types + 1), 'k' || (n % 7), 'New',
		       jsonb_build_object('x', $x, 'n', n, 'pad', repeat('p', 400))
		FROM generate_series(1, $rows) n;"
done >"$IT_TEST_DIR/load.sql"

lost_rounds=0
for ((r = 1; r <= rounds; r++)); do
	kdir=$IT_TEST_DIR/broker$r
	mkdir -p "$kdir"
	# The slot is made new each round: the relay drains the same kind of
	# backlog into a broker that has none of the topics.
	it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null
	it_create_slot "$db" "$db"
	it_sql_file "$db" "$IT_TEST_DIR/load.sql" >/dev/null
	end=$(it_current_lsn "$db")
	if ! kafka_start "$kdir" "$port" >"$kdir/start.log" 2>&1; then
		not_ok "round $r: a new broker on port $port" "$(tail -n 20 "$kdir/start.log")"
		continue
	fi
	conf=$kdir/relay.conf
	log=$kdir/relay.log
	# shellcheck disable=SC2086 # word splitting intended: KEY=VALUE ...
	it_write_config "$conf" "$db" kafka.batch.size=65536 ${T266_SET:-}
	sed -i "s/^kafka.bootstrap.servers = .*/kafka.bootstrap.servers = 127.0.0.1:$port/" "$conf"
	it_start_relay "$conf" "$log"
	if ! it_wait_confirmed "$db" "$db" "$end" 90; then
		not_ok "round $r: slot confirmed past the backlog ($end)" \
			"confirmed_flush_lsn $(it_slot_confirmed "$db" "$db")
$(it_show_log "$log" 20)"
		it_stop_relay || true
		kafka_stop_hard "$kdir" || true
		continue
	fi
	it_stop_relay || true
	total=0 short=()
	all=$kdir/all.ids
	: >"$all"
	for ((t = 1; t <= types; t++)); do
		out=$kdir/topic$t.json
		KAFKA_BROKERS=127.0.0.1:$port it_consume "outbox.event.t266_$t" "$out"
		n=$(it_count "$out")
		total=$((total + n))
		it_fields "$out" h:id >>"$all"
		((n >= want / types)) || short+=("t266_$t: $n of $((want / types))")
	done
	uniq_ids=$(sort -u "$all" | grep -c . || true)
	if ((uniq_ids == want)); then
		ok "round $r: all $want confirmed events in $types new topics ($total records, $((total - uniq_ids)) duplicates)"
	else
		lost_rounds=$((lost_rounds + 1))
		not_ok "round $r: all $want confirmed events in $types new topics" \
			"$((want - uniq_ids)) missing; short topics: ${short[*]:-none}"
	fi
	kafka_stop_hard "$kdir" || true
done
echo "# t266: $lost_rounds of $rounds rounds lost events"
it_summary
