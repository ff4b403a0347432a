#!/usr/bin/env bash
# tests/sanitize/e2e.sh -- a short end-to-end run of a relay built with
# sanitizers (make check-asan sets RELAY_BIN to build/asan/outbox-relay
# and the *SAN_OPTIONS). Not one of tests/integration/t*.sh, so
# `make integration` does not run it; it uses that suite's helpers and,
# run alone, starts its own PostgreSQL and Kafka (IT_PGPORT,
# IT_KAFKA_PORT).
#
# The relay streams a few transactions, answers every health route,
# loses its walsender (pg_terminate_backend) and reconnects, streams
# more, and stops on SIGTERM. Checked: every event in Kafka, exit 0, and
# not one sanitizer report in its output (ASan, LeakSanitizer at exit,
# UBSan's "runtime error").
set -euo pipefail
# shellcheck source=../integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
it_init

db=san_e2e
run=$(date +%s)
type=san_$run
topic=outbox.event.$type
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
out=$IT_TEST_DIR/records.json

events() { # FIRST LAST: one transaction per five events
	local i
	for ((i = $1; i <= $2; i++)); do
		((i % 5 == 1)) && echo "BEGIN;"
		echo "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('$type', 'agg-$((i % 7))', 'created', '{\"seq\": $i, \"s\": \"\\u00e9\"}');"
		((i % 5 == 0)) && echo "COMMIT;"
	done
	return 0
}

it_diag "relay: $RELAY_BIN"
it_setup_db "$db"
it_write_config "$conf" "$db" status.interval.ms=500 stats.interval.ms=1000
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 60

events 1 50 | it_sql_file "$db" - >/dev/null
if it_consume_wait "$topic" "$out" 50 60; then
	ok "first 50 events in Kafka"
else
	not_ok "first 50 events in Kafka" "got $(it_count "$out"); $(it_show_log "$log")"
fi

if port=$(it_health_port "$log"); then
	for path in livez healthz readyz slot 'slot?pretty=1' metrics nope; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
			"http://127.0.0.1:$port/$path" || true)
		it_check "GET /$path answered (got $code)" test "$code" != 000
	done
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
		"http://127.0.0.1:$port/livez" || true)
	it_check "POST /livez refused with 405 (got $code)" test "$code" = 405
else
	not_ok "health endpoint port in the log" "$(it_show_log "$log")"
fi

# A lost walsender: the relay reconnects and resumes from the slot.
it_sql "$db" "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
	WHERE slot_name = '$db'" >/dev/null
sleep 1
it_check "relay holds the slot again" it_wait_slot_active "$db" "$db" 60
it_check "relay logged the lost stream" grep -qE 'replication (stream ended|connection lost)' "$log"
events 51 100 | it_sql_file "$db" - >/dev/null
if it_consume_wait "$topic" "$out" 100 60; then
	ok "all 100 events in Kafka after the reconnect"
else
	not_ok "all 100 events in Kafka after the reconnect" \
		"got $(it_count "$out"); $(it_show_log "$log")"
fi
lsn=$(it_current_lsn "$db")
it_check "slot confirmed up to $lsn" it_wait_confirmed "$db" "$db" "$lsn" 60

rc=0
it_stop_relay || rc=$?
it_check "relay exits 0 on SIGTERM (got $rc)" test "$rc" -eq 0
if grep -nE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|Leak|Undefined)' \
	"$log" >"$IT_TEST_DIR/reports"; then
	not_ok "no sanitizer report" "$(head -n 60 "$log")"
else
	ok "no sanitizer report in $(wc -l <"$log") lines of output"
fi
it_summary
