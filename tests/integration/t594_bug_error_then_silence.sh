#!/usr/bin/env bash
# t594_bug_error_then_silence -- regression test (failed on 62e9a4f): an
# ErrorResponse on the replication stream followed by silence must not
# hang the relay. Fixed: stream_error() takes only the results that have
# already arrived (PQisBusy() before PQgetResult()).
#
# Before: when the stream ended, repl_read() calls stream_error() (src/repl.c),
# which loops on PQgetResult() to fetch the error and whatever follows
# it. PQgetResult() blocks; after the ErrorResponse libpq waits for the
# server's ReadyForQuery. A walsender sends one (or closes the socket on
# FATAL), but if the peer goes silent right after the error (a hung
# backend, or a proxy or middlebox that keeps the TCP connection up: its
# TCP stack acknowledges, so neither keepalives nor tcp_user_timeout
# fire), the call never returns, inside the relay's only loop: the error
# is not even logged, there is no reconnect, no delivery reports, no
# status updates, and SIGTERM is never read. The same class as t590 (a
# blocking libpq call without a deadline in the loop thread).
#
# Made here with build/tcp-proxy: "inject_error stall TEXT" sends the
# ErrorResponse (SQLSTATE XX000) between two messages of the live stream,
# closes the server side and keeps the relay's side open and silent. What
# a correct relay does, and what this test asserts:
#  - it logs the server's error and streams again within 30 s;
#  - an event written meanwhile arrives;
#  - /livez stays 200 (the loop keeps turning);
#  - SIGTERM stops it with exit 0.
# On failure the relay's stacks are printed when gdb is installed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=proxy.sh
source "$(dirname "$0")/proxy.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init

db=t594_bug_error_then_silence
type=t594_$(date +%s)
topic=outbox.event.$type
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
streaming='streaming from slot'
it_setup_db "$db"
if ! proxy_start "127.0.0.1:$PGPORT"; then
	not_ok "tcp-proxy starts"
	it_summary
fi
it_write_config "$conf" "$db" "pg.conninfo=$(proxy_conninfo "$db")" \
	pg.receive.timeout.ms=6000 reconnect.backoff.ms=200 \
	reconnect.backoff.max.ms=2000 stats.interval.ms=1000

event() { it_sql "$db" "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES (gen_random_uuid(), '$type', '$1', 'E', '{}')" >/dev/null; }
livez() {
	local port
	port=$(it_health_port "$log" 0) || port=1
	curl -s -m 3 -o "$IT_TEST_DIR/livez.body" -w '%{http_code}' "http://127.0.0.1:$port/livez" || true
}
stacks() {
	if command -v gdb >/dev/null && it_relay_alive; then
		# Our frames and libpq's entry points, all threads.
		gdb -p "$IT_RELAY_PID" -batch -ex 'thread apply all bt' 2>/dev/null |
			grep -E ' at src/| in PQ[A-Za-z]+ ' | sed 's/ (.*) at / at /' | head -n 20
	fi
}

it_start_relay "$conf" "$log"
it_check "relay streams through the proxy" it_wait_slot_active "$db" "$db" 30
event before
it_check "an event arrives before the fault" it_consume_wait "$topic" "$IT_TEST_DIR/out.json" 1 30

n=$(load_count_log "$log" "$streaming")
text="t594: could not decode the change, injected"
armed=
for ((k = 0; k < 50; k++)); do
	proxy_cmd "inject_error stall $text" 2>/dev/null && { armed=1; break; }
	sleep 0.2
done
it_check "the proxy injects an ErrorResponse and keeps the relay's side silent" test -n "$armed"
event during
if load_wait_log "$log" "ERROR: +$text" 1 30 >/dev/null; then
	ok "the relay logs the server's error"
else
	not_ok "KNOWN BUG: the relay logs the server's error within 30 s" \
		"the relay's last lines:
$(tail -n 3 "$log" | cut -c1-200)
$(stacks)"
fi
if load_wait_log "$log" "$streaming" $((n + 1)) 30 >/dev/null; then
	ok "the relay reconnects and streams again"
else
	not_ok "KNOWN BUG: the relay reconnects and streams again within 30 s" \
		"proxy: $(grep -E 'ErrorResponse|accepted' "$PROXY_LOG" | tail -n 3)"
fi
if it_consume_wait "$topic" "$IT_TEST_DIR/out.json" 2 20; then
	ok "the event written meanwhile arrives"
else
	not_ok "KNOWN BUG: the event written meanwhile arrives" "$(it_count "$IT_TEST_DIR/out.json") records"
fi
code=$(livez)
if [[ $code == 200 ]]; then
	ok "/livez 200: the loop kept turning"
else
	not_ok "KNOWN BUG: /livez 200: the loop kept turning" "/livez $code: $(cat "$IT_TEST_DIR/livez.body")"
fi
rc=0
IT_RELAY_STOP_TIMEOUT=15 it_stop_relay || rc=$?
if ((rc == 0)); then
	ok "SIGTERM: exit 0"
else
	not_ok "KNOWN BUG: SIGTERM: exit 0" "exit $rc (124: still running 15 s after SIGTERM, killed)"
fi

it_summary
