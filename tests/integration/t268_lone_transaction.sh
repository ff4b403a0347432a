#!/usr/bin/env bash
# t268_lone_transaction -- a transaction committed after a quiet period
# goes to Kafka as soon as the relay has read it, all of it, instead of
# waiting for the producer's linger.
#
# One relay with kafka.linger.ms=10000, so anything left to the linger
# arrives ten seconds late; the checks wait 5 s. Its topic exists and the
# producer has its id and the topic's metadata (a warm-up event first):
# the nudge cannot speed up what librdkafka is still looking up. Before
# each case the relay is left idle for longer than the linger (a quiet
# start):
#  (a) one transaction of one event: it arrives;
#  (b) one transaction of T268_ROWS (40) events of 20 KB (800 KB, under
#      librdkafka's batch.size, so no batch fills up and leaves early):
#      all of them arrive. The walsender writes such a transaction frame
#      by frame, so the relay's input may run dry in the middle of it;
#      a nudge there sent the first events alone and left the rest to
#      the linger (the producer was no longer quiet). The nudge waits
#      for the transaction's end.
# The relay confirms past both and exits 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s)_$$
db=t268_lone_txn
rows=${T268_ROWS:-40}
it_setup_db "$db"

topic=t268_$run
it_check "topic outbox.event.$topic" it_kafka_topic "outbox.event.$topic"
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
it_write_config "$conf" "$db" kafka.linger.ms=10000 slot.ledger.topic=
it_start_relay "$conf" "$log"
it_wait_slot_active "$db" "$db" 30 || true
out=$IT_TEST_DIR/topic.json
seen=0

# txn ROWS PAD: one transaction of ROWS events of PAD bytes each.
txn() {
	it_sql "$db" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT '$topic', 'k' || (g % 3), 'E', jsonb_build_object('g', g, 'pad', repeat('x', $2))
		FROM generate_series(1, $1) g" >/dev/null
}

txn 1 10
if it_consume_wait "outbox.event.$topic" "$out" 1 30; then
	ok "warm-up: the first event arrives"
else
	not_ok "warm-up: the first event arrives" "$(it_show_log "$log" 10)"
fi
seen=1

# lone CASE ROWS PAD: quiet for longer than the linger, then the
# transaction, then its events within 5 s.
lone() {
	local c=$1 n=$2
	sleep 11
	txn "$n" "$3"
	if it_consume_wait "outbox.event.$topic" "$out" $((seen + n)) 5; then
		ok "($c) all $n events of the lone transaction arrive within 5 s (linger 10 s)"
	else
		not_ok "($c) all $n events of the lone transaction arrive within 5 s (linger 10 s)" \
			"$(($(it_count "$out") - seen)) of $n; $(it_show_log "$log" 10)"
	fi
	seen=$((seen + n))
}

lone a 1 100
lone b "$rows" 20000
last=$(it_current_lsn "$db")
it_check "the relay confirms past both" it_wait_confirmed "$db" "$db" "$last" 30
it_stop_checked "relay exits 0 on SIGTERM"
it_summary
