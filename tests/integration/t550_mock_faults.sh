#!/usr/bin/env bash
# t550_mock_faults -- reliability matrix F7/F8: Kafka faults a single
# real broker cannot produce, on librdkafka's mock cluster (3 brokers,
# build/kafka-mock), while a writer commits. In turn: the leader of a
# partition changes; a broker goes down (no leader change: its partitions
# wait) and comes back; Produce answered NOT_LEADER_FOR_PARTITION,
# REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS (retried by librdkafka);
# Produce answered OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH
# (fatal for the idempotent producer: the relay rebuilds it and replays
# from the slot); 500 ms of added round trip on every broker. Then the
# checker, consuming the mock cluster's topic: nothing missing, nothing
# leaked, re-deliveries only suffixes (one per fault at most).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=mock.sh
source "$(dirname "$0")/mock.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init
# The writer stops by itself after 120 s, should the test not stop it.
LOAD_MAX_SECS=120

it_scenario t550_mock
aggs=20
load_init "$db" "$type" "$aggs" 5 20
if ! mock_start --brokers 3; then
	not_ok "mock cluster starts" "$(cat "$MOCK_LOG" 2>/dev/null)"
	it_summary
fi
it_check "topic $topic, 4 partitions" mock_cmd "topic $topic 4 3"
for p in 0 1 2 3; do mock_cmd "leader $topic $p $((p % 3 + 1))" >/dev/null || true; done
# One Produce request in flight per connection, on the mock only: its
# brokers (librdkafka 2.0.2, rdkafka_mock.c) check idempotent sequence
# numbers only for transactional producers. With several requests in
# flight, a pushed retriable error on R1 lets R2 append ahead of it, and
# librdkafka then takes R1 as persisted (it reasons that a real broker
# would have refused R2 with OUT_OF_ORDER_SEQUENCE_NUMBER) and acks
# records the mock never stored: a loss the real broker cannot produce.
it_write_config "$conf" "$db" reconnect.backoff.ms=100 reconnect.backoff.max.ms=500 \
	kafka.failure.max.replays=50 kafka.max.in.flight.requests.per.connection=1
sed -i "s|^kafka.bootstrap.servers = .*|kafka.bootstrap.servers = $MOCK_BOOTSTRAP|" "$conf"

t0=$SECONDS
it_start_relay "$conf" "$log"
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
# pgbench bursts of 2 s (2 clients, 80 transactions/s) until load_stop.
load_start 80 2
faults=0
fault() { # DESC COMMAND...: one fault, then 3 s of load
	local desc=$1 c
	shift
	for c in "$@"; do
		mock_cmd "$c" >/dev/null || it_diag "mock: $c: $MOCK_ANSWER"
	done
	faults=$((faults + 1))
	sleep 3
	it_check "relay alive after: $desc" it_relay_alive
}
sleep 2
fault "leader change" "leader $topic 0 2" "leader $topic 1 3"
fault "broker 1 down, then up" "broker_down 1" "sleep 3000" "broker_up 1"
fault "NOT_LEADER_FOR_PARTITION x5" "push_errors Produce NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION"
fault "REQUEST_TIMED_OUT x3" "push_errors Produce REQUEST_TIMED_OUT,REQUEST_TIMED_OUT,REQUEST_TIMED_OUT"
fault "NOT_ENOUGH_REPLICAS x3" "push_errors Produce NOT_ENOUGH_REPLICAS,NOT_ENOUGH_REPLICAS,NOT_ENOUGH_REPLICAS"
fault "OUT_OF_ORDER_SEQUENCE_NUMBER" "push_errors Produce OUT_OF_ORDER_SEQUENCE_NUMBER"
fault "INVALID_PRODUCER_EPOCH" "push_errors Produce INVALID_PRODUCER_EPOCH"
fault "500 ms RTT on every broker" "rtt -1 500"
mock_cmd "rtt -1 0" >/dev/null || true
sleep 2
load_stop
it_check "writer ran without errors" test "$LOAD_FAILED" = 0
rebuilds=$(grep -c 'producer is rebuilt\|fatal producer error' "$log" || true)
it_diag "producer rebuilds / fatal errors logged: $rebuilds"
load_expected
# Exactly-once: the mock cluster has no read_committed view (its Fetch
# answers LastStableOffset = the log end and no aborted transactions:
# librdkafka's rdkafka_mock_handlers.c), so its read_committed consumer
# sees aborted copies as a read_uncommitted one would; duplicates are
# counted, not refused, and the real brokers' tests (t195, t800) hold
# exactly-once to --no-dups.
if it_eos; then
	export IT_ALLOW_DUPS=1
	it_diag "exactly-once on the mock cluster: no read_committed view there, duplicates allowed and counted"
fi
# it_consume reads KAFKA_BROKERS: point it at the mock cluster.
KAFKA_BROKERS=$MOCK_BOOTSTRAP load_checked "$topic" 90 --topic "$topic" --faults "$faults"
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
if ((rc == 0)); then
	ok "F7/F8: $committed events through $faults mock-cluster faults: none missing, re-deliveries only suffixes"
else
	not_ok "F7/F8: $committed events through $faults mock-cluster faults" "exit $rc: $(head -n 30 "$out.check")
$(it_show_log "$log" 20)"
fi
it_diag "row: scenario=F7/F8 rounds=$faults $(sed 's/^checker: [A-Z]* //' <<<"$summary") $(load_row_extra) wall=$((SECONDS - t0))s"
it_stop_checked "relay exits 0 on SIGTERM"
rc=0
mock_stop || rc=$?
it_check "mock cluster exits 0" test "$rc" -eq 0

it_summary
