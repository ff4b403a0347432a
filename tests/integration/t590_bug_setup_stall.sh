#!/usr/bin/env bash
# t590_bug_setup_stall -- regression test (failed on 62e9a4f): a peer that
# goes silent while the relay sets a session up must not hang the relay.
# Fixed: every statement of a session's start now runs through
# pgu_exec() (src/pgutil.c) with a deadline (pg.receive.timeout.ms).
#
# Before: repl_start() (src/repl.c) connected with a deadline
# (connect_timeout), then ran IDENTIFY_SYSTEM, the slot and table checks
# and START_REPLICATION with blocking PQexec() calls that had none. If the
# server stops answering in between (a hung backend, or a proxy or
# middlebox that keeps the TCP connection up: the peer's TCP stack
# acknowledges, so neither the keepalives nor tcp_user_timeout=30000 ever
# fire), PQexec() waits forever in poll() with no timeout, inside the
# relay's only loop: no reconnect, no delivery reports, no status updates,
# no stats, SIGTERM is never read (/livez does report "loop stalled").
# pg.receive.timeout.ms only covers a session that is streaming.
#
# Made here with build/tcp-proxy: "blackhole_after_ready 1 new" lets a new
# connection through its start-up (the first ReadyForQuery) and then drops
# everything, so the relay's IDENTIFY_SYSTEM is never answered; "reset"
# ends the live session so that the relay reconnects into it; 3 s later
# the proxy passes again (the lost query stays lost: this is a peer that
# went silent, not a partition that heals). What a correct relay does,
# and what this test asserts:
#  - it gives the silent connection up and streams again within 40 s;
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

db=t590_bug_setup_stall
type=t590_$(date +%s)
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
proxy_cmd "blackhole_after_ready 1 new"
proxy_cmd reset
sleep 3
proxy_cmd pass
event during
if load_wait_log "$log" "$streaming" $((n + 1)) 40 >/dev/null; then
	ok "the relay gave the silent connection up and streams again"
else
	not_ok "KNOWN BUG: the relay gave the silent connection up and streams again within 40 s" \
		"the relay's last lines:
$(tail -n 4 "$log" | cut -c1-200)
proxy: $(grep -E 'blackholed|accepted' "$PROXY_LOG" | tail -n 3)
$(stacks)"
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
