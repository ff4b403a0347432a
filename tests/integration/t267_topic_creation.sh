#!/usr/bin/env bash
# t267_topic_creation -- topic.creation.default.*: the relay creates a
# missing topic through the admin API before its first record, with the
# configured partitions and topic configs, and a refused creation is a
# poison event that names the topic.
#
# The test broker auto-creates topics (num.partitions 3), so the relay's
# producer is told not to (kafka.allow.auto.create.topics=false) and the
# partition count asked for (5) and a config (retention.ms 3600123) show
# that the relay made the topic, not the broker:
#  (a) 20 events of a new aggregate type: the topic has 5 partitions and
#      retention.ms 3600123, the relay logged "created topic", every event
#      is in it, the relay confirms past them and exits 0 on SIGTERM;
#  (b) a second new aggregate type with a topic config the broker refuses
#      (cleanup.policy=bogus): exit 65, the message names the topic and
#      "creating topic", and nothing was published to it.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s)_$$
db=t267_topic_creation
it_setup_db "$db"
topic=outbox.event.t267_$run
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
it_write_config "$conf" "$db" kafka.allow.auto.create.topics=false \
	topic.creation.default.partitions=5 \
	topic.creation.default.replication.factor=1 \
	topic.creation.default.retention.ms=3600123
it_sql "$db" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	SELECT 't267_$run', 'k' || (g % 4), 'E', jsonb_build_object('g', g)
	FROM generate_series(1, 20) g" >/dev/null
end=$(it_current_lsn "$db")
it_start_relay "$conf" "$log"
it_check "(a) the relay confirms past the events" \
	it_wait_confirmed "$db" "$db" "$end" 60
it_stop_checked "(a) relay exits 0 on SIGTERM"

parts=$(kcat -b "$KAFKA_BROKERS" -L -t "$topic" -m 5 2>/dev/null |
	grep -c '^    partition ' || true)
if [[ $parts == 5 ]]; then
	ok "(a) $topic has 5 partitions (the broker's default is 3)"
else
	not_ok "(a) $topic has 5 partitions" "$parts partitions; $(it_show_log "$log" 10)"
fi
desc=$(java -Xmx256m -Dlog4j.configuration=file:/dev/null -cp "$KAFKA_JARS/*" \
	"$(kafka_config_command)" --bootstrap-server "$KAFKA_BROKERS" \
	--entity-type topics --entity-name "$topic" --describe 2>&1 || true)
if grep -q 'retention.ms=3600123' <<<"$desc"; then
	ok "(a) $topic has retention.ms=3600123 (topic.creation.default.retention.ms)"
else
	not_ok "(a) $topic has retention.ms=3600123" "$desc"
fi
if grep -q "created topic $topic (topic.creation.default: 5 partitions" "$log"; then
	ok "(a) the relay logged the creation"
else
	not_ok "(a) the relay logged the creation" "$(it_show_log "$log" 10)"
fi
out=$IT_TEST_DIR/a.json
it_consume "$topic" "$out"
n=$(it_count "$out")
if [[ $n == 20 ]]; then
	ok "(a) all 20 events are in $topic"
else
	not_ok "(a) all 20 events are in $topic" "$n events"
fi

# ---------------------------------------------------------------- (b)
bad=outbox.event.t267b_$run
it_write_config "$conf" "$db" kafka.allow.auto.create.topics=false \
	topic.creation.default.partitions=2 \
	topic.creation.default.cleanup.policy=bogus
it_sql "$db" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('t267b_$run', 'k', 'E', '{}')" >/dev/null
it_run_relay b --config "$conf"
it_expect_err b 65 "(b) a refused creation is a poison event" \
	"creating topic $bad: " "event id"
if kcat -b "$KAFKA_BROKERS" -L -t "$bad" -m 5 2>&1 | grep '^    partition ' >/dev/null; then
	not_ok "(b) $bad was not created" "$(kcat -b "$KAFKA_BROKERS" -L -t "$bad" -m 5 2>&1 | head -5)"
else
	ok "(b) $bad was not created"
fi
it_summary
