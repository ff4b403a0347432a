#!/usr/bin/env bash
# t305_stalls -- a peer that keeps its TCP connection but stops answering
# (SIGSTOP) must not leave the relay "ready" for long.
#  (a) the walsender stopped: with pg.receive.timeout.ms=8000 the relay
#      asks for a reply at 2 s; /readyz turns 503 "no message from
#      PostgreSQL" and /metrics pg_up 0 within 4 s + 3 s; at 8 s the relay
#      gives the connection up and reconnects (standby while the stopped
#      walsender still holds the slot); once it continues, the relay
#      streams again and an event written meanwhile arrives;
#  (b) the Kafka broker stopped for 15 s: with kafka.contact.timeout.ms=
#      5000, /readyz turns 503 "no answer from a Kafka broker" within 5 s
#      + 4 s, /metrics kafka_up 0; after SIGCONT /readyz is 200 again and
#      the event written during the stop arrives;
#  (c) SIGHUP: logged, the relay keeps running and publishing; SIGTERM
#      still stops it with exit 0 after a final status update.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t305_stalls
it_write_config "$conf" "$db" pg.receive.timeout.ms=8000 kafka.contact.timeout.ms=5000 \
	reconnect.backoff.ms=100 reconnect.backoff.max.ms=500 standby.retry.ms=500
kpid=$(cat "$IT_DIR/kafka/kafka.pid")
wsender=
resume_all() {
	[[ -z $wsender ]] || kill -CONT "$wsender" 2>/dev/null || true
	kill -CONT "$kpid" 2>/dev/null || true
}
env_on_cleanup resume_all

it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
port=$(it_health_port "$log") || { not_ok "health port"; it_summary; }
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
it_until_ready "$port" 200 "" 15 || true
t=$T
it_check "/readyz 200 while streaming" test -n "$t"

# ------------------------------------------------------------------ (a)
wsender=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'")
kill -STOP "$wsender"
if it_until_ready "$port" 503 "" 7; then
	t=$T
	ok "(a) walsender stopped: /readyz 503 after ${t}s ($(head -c 80 "$IT_TEST_DIR/http.body"))"
else
	not_ok "(a) walsender stopped: /readyz 503 within 7 s" "$(cat "$IT_TEST_DIR/http.body")"
fi
it_check "(a) /readyz names PostgreSQL" grep -qE 'no message from PostgreSQL|not streaming' "$IT_TEST_DIR/http.body"
it_check "(a) /metrics pg_up 0" test "$(it_metric "$port" outbox_relay_pg_up)" = 0
gaveup=
for ((i = 0; i < 60; i++)); do
	grep -q 'no message from PostgreSQL for .*reconnecting' "$log" && gaveup=1 && break
	sleep 0.25
done
it_check "(a) the relay gave the silent connection up and reconnects" test -n "$gaveup"
it_event "$db" "$type" a1
kill -CONT "$wsender"
out=$IT_TEST_DIR/a.json
if it_consume_wait "$topic" "$out" 1 40; then
	ok "(a) after the walsender continued, the event arrives"
else
	not_ok "(a) after the walsender continued, the event arrives" "$(it_show_log "$log" 10)"
fi
it_until_ready "$port" 200 "" 30 || true
t=$T
it_check "(a) /readyz 200 again" test -n "$t"

# ------------------------------------------------------------------ (b)
kill -STOP "$kpid"
it_event "$db" "$type" b1
if it_until_ready "$port" 503 "" 9; then
	t=$T
	ok "(b) broker stopped: /readyz 503 after ${t}s ($(head -c 80 "$IT_TEST_DIR/http.body"))"
else
	not_ok "(b) broker stopped: /readyz 503 within 9 s" "$(cat "$IT_TEST_DIR/http.body")"
fi
it_check "(b) /readyz names Kafka" grep -qiE 'kafka' "$IT_TEST_DIR/http.body"
it_check "(b) /metrics kafka_up 0" test "$(it_metric "$port" outbox_relay_kafka_up)" = 0
sleep 6
kill -CONT "$kpid"
if it_consume_wait "$topic" "$out" 2 60; then
	ok "(b) the event written during the stop arrives"
else
	not_ok "(b) the event written during the stop arrives" "$(it_show_log "$log" 10)"
fi
it_until_ready "$port" 200 "" 30 || true
t=$T
it_check "(b) /readyz 200 again after SIGCONT" test -n "$t"

# ------------------------------------------------------------------ (c)
kill -HUP "$pid"
sleep 1
it_check "(c) SIGHUP: the relay keeps running" it_relay_alive "$pid"
it_check "(c) SIGHUP is logged" grep -q 'SIGHUP' "$log"
it_event "$db" "$type" c1
it_check "(c) and still publishes" it_consume_wait "$topic" "$out" 3 30
last=$(it_current_lsn "$db")
it_stop_checked "(c) SIGTERM: exit 0"
it_check "(c) the final status update confirmed the last event" \
	it_wait_confirmed "$db" "$db" "$last" 5

it_summary
