#!/usr/bin/env bash
# t590_silent_peer -- regression tests (each failed on 62e9a4f): a peer that
# goes silent must not hang the relay. One row of the table below per
# case; each row runs against its own database, proxy and relay:
#
#   setup_stall (was t590_bug_setup_stall): silent while the relay sets a
#     session up. Fixed: every statement of a session's start runs through
#     pgu_exec() (src/pgutil.c) with a deadline (pg.receive.timeout.ms).
#     Before: repl_start() (src/repl.c) connected with a deadline
#     (connect_timeout), then ran IDENTIFY_SYSTEM, the slot and table
#     checks and START_REPLICATION with blocking PQexec() calls that had
#     none. If the server stops answering in between (a hung backend, or a
#     proxy or middlebox that keeps the TCP connection up: the peer's TCP
#     stack acknowledges, so neither the keepalives nor
#     tcp_user_timeout=30000 ever fire), PQexec() waits forever in poll()
#     inside the relay's only loop: no reconnect, no delivery reports, no
#     status updates, no stats, SIGTERM is never read (/livez does report
#     "loop stalled"). pg.receive.timeout.ms only covers a session that is
#     streaming. Made with build/tcp-proxy: "blackhole_after_ready 1 new"
#     lets a new connection through its start-up (the first ReadyForQuery)
#     and then drops everything, so IDENTIFY_SYSTEM is never answered;
#     "reset" ends the live session so that the relay reconnects into it;
#     3 s later the proxy passes again (the lost query stays lost: a peer
#     that went silent, not a partition that heals). Asserts: the relay
#     gives the silent connection up and streams again within 40 s; an
#     event written meanwhile arrives; /livez stays 200; SIGTERM: exit 0.
#
#   watchdog_stall (was t592_bug_watchdog_stall): silent on the watchdog's
#     connection; must not stop slot sampling for good nor keep SIGTERM
#     from completing. Fixed: the watchdog connects through pgu_connect()
#     (keepalives, tcp_user_timeout) and bounds every query on the client
#     side (pgu_exec(), 10 s). Before: the watchdog thread (src/watchdog.c)
#     sampled the slot with a blocking PQexecParams() on a connection with
#     neither the keepalive and tcp_user_timeout defaults nor a client-side
#     deadline (statement_timeout is enforced by the server, the side that
#     went silent): no fresh slot figures, so slot loss (wal_status = lost)
#     would go unseen; and on SIGTERM relay_run() -> mon_stop() ->
#     wd_stop() joined that thread and waited forever (in a real partition
#     the kernel gives up after tcp_retries2, about 15 minutes). Made with
#     "blackhole_after_ready 1 now": each open connection goes silent after
#     its next ReadyForQuery; the replication stream sends none while it
#     streams and is unaffected; the watchdog's sample after next is never
#     answered. Asserts (watchdog.interval.ms=1000): an event written
#     afterwards arrives; within 30 s a fresh slot sample again (/metrics
#     slot_sample_timestamp_seconds newer than 5 s); SIGTERM: exit 0
#     within 15 s.
#
#   error_silence (was t594_bug_error_then_silence): an ErrorResponse on
#     the replication stream followed by silence. Fixed: stream_error()
#     takes only the results that have already arrived (PQisBusy() before
#     PQgetResult()). Before: when the stream ended, repl_read() called
#     stream_error() (src/repl.c), which looped on the blocking
#     PQgetResult(); after the ErrorResponse libpq waits for the server's
#     ReadyForQuery, and a peer silent right after the error left the call
#     waiting forever in the relay's only loop (the error not even logged,
#     no reconnect, SIGTERM never read). Made with "inject_error stall
#     TEXT": the ErrorResponse (SQLSTATE XX000) between two messages of
#     the live stream, the server side closed, the relay's side kept open
#     and silent. Asserts: the relay logs the server's error and streams
#     again within 30 s; an event written meanwhile arrives; /livez stays
#     200; SIGTERM: exit 0.
#
# Every check names its row. On a failure the relay's stacks are printed
# when gdb is installed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=proxy.sh
source "$(dirname "$0")/proxy.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init

streaming='streaming from slot'
# The session settings of the rows that wait for a reconnect: a stalled
# stream is given up after 6 s, reconnects are quick.
reconnecting="pg.receive.timeout.ms=6000 reconnect.backoff.ms=200 reconnect.backoff.max.ms=2000 stats.interval.ms=1000"

# row         | database (and slot)          | type prefix | relay settings
rows=(
	"setup_stall    t590_bug_setup_stall        t590 $reconnecting"
	"watchdog_stall t592_bug_watchdog_stall     t592 watchdog.interval.ms=1000 stats.interval.ms=1000"
	"error_silence  t594_bug_error_then_silence t594 $reconnecting"
)

# Set per row by peer_start: the row's name, database, topic, files.
row= db= type= topic= dir= log= out=

event() { it_event "$db" "$type" "$1"; }
livez() {
	local port
	port=$(it_health_port "$log" 0) || port=1
	curl -s -m 3 -o "$dir/livez.body" -w '%{http_code}' "http://127.0.0.1:$port/livez" || true
}
# Seconds since the watchdog's latest successful sample, from /metrics.
sample_age() {
	local port ts
	port=$(it_health_port "$log" 0) || port=1
	ts=$(curl -s -m 3 "http://127.0.0.1:$port/metrics" |
		it_metric_in - outbox_relay_slot_sample_timestamp_seconds)
	[[ -n $ts ]] || { echo 999999; return; }
	awk -v ts="$ts" -v now="$(date +%s.%N)" 'BEGIN { printf "%d", now - ts }'
}
stacks() {
	if command -v gdb >/dev/null && it_relay_alive; then
		# Our frames and libpq's entry points, all threads.
		gdb -p "$IT_RELAY_PID" -batch -ex 'thread apply all bt' 2>/dev/null |
			grep -E ' at src/| in PQ[A-Za-z]+ ' | sed 's/ (.*) at / at /' | head -n 20
	fi
}

# peer_start ROW DB TAG SETTINGS...: the row's database, a proxy in front
# of PostgreSQL, a relay through it that streams, one event delivered.
peer_start() {
	row=$1 db=$2 type=$3_$(date +%s)
	shift 3
	topic=outbox.event.$type
	dir=$IT_TEST_DIR/$row
	log=$dir/relay.log
	out=$dir/out.json
	mkdir -p "$dir"
	it_setup_db "$db"
	proxy_start_pg "$row: "
	it_write_config "$dir/relay.conf" "$db" "pg.conninfo=$(proxy_conninfo "$db")" "$@"
	it_start_relay "$dir/relay.conf" "$log"
	it_check "$row: relay streams through the proxy" it_wait_slot_active "$db" "$db" 30
	event before
}

# peer_stop [DETAIL_LINES]: SIGTERM must end the relay within 15 s;
# DETAIL_LINES of its log go with a failure.
peer_stop() {
	local rc=0 detail
	IT_RELAY_STOP_TIMEOUT=15 it_stop_relay || rc=$?
	if ((rc == 0)); then
		ok "$row: SIGTERM: exit 0"
	else
		detail="exit $rc (124: still running 15 s after SIGTERM, killed)"
		[[ -z ${1:-} ]] || detail+="
$(tail -n "$1" "$log" | cut -c1-160)"
		not_ok "KNOWN BUG: $row: SIGTERM: exit 0" "$detail"
	fi
	proxy_stop || true
}

# The checks every row that reconnects ends with.
meanwhile_arrives_and_livez() {
	local code
	if it_consume_wait "$topic" "$out" 2 20; then
		ok "$row: the event written meanwhile arrives"
	else
		not_ok "KNOWN BUG: $row: the event written meanwhile arrives" "$(it_count "$out") records"
	fi
	code=$(livez)
	if [[ $code == 200 ]]; then
		ok "$row: /livez 200: the loop kept turning"
	else
		not_ok "KNOWN BUG: $row: /livez 200: the loop kept turning" "/livez $code: $(cat "$dir/livez.body")"
	fi
}

# ---------------------------------------------------------------- the rows

row_setup_stall() {
	local n
	it_check "$row: an event arrives before the fault" it_consume_wait "$topic" "$out" 1 30
	n=$(load_count_log "$log" "$streaming")
	proxy_cmd "blackhole_after_ready 1 new"
	proxy_cmd reset
	sleep 3
	proxy_cmd pass
	event during
	if it_wait_log "$log" "$streaming" 40 $((n + 1)); then
		ok "$row: the relay gave the silent connection up and streams again"
	else
		not_ok "KNOWN BUG: $row: the relay gave the silent connection up and streams again within 40 s" \
			"the relay's last lines:
$(tail -n 4 "$log" | cut -c1-200)
proxy: $(grep -E 'blackholed|accepted' "$PROXY_LOG" | tail -n 3)
$(stacks)"
	fi
	meanwhile_arrives_and_livez
	peer_stop
}

row_watchdog_stall() {
	local age fresh= i
	it_check "$row: an event arrives" it_consume_wait "$topic" "$out" 1 30
	age=$(sample_age)
	it_check "$row: slot samples are fresh before the fault (${age} s old)" test "$age" -le 5
	proxy_cmd "blackhole_after_ready 1 now"
	sleep 3
	it_diag "proxy: $(grep -E 'blackholed' "$PROXY_LOG" | tail -n 2 | tr '\n' ' ')"
	event after
	if it_consume_wait "$topic" "$out" 2 20; then
		ok "$row: the stream goes on: the event written afterwards arrives"
	else
		not_ok "$row: the stream goes on: the event written afterwards arrives" "$(it_show_log "$log" 10)"
	fi
	for ((i = 0; i < 30; i++)); do
		age=$(sample_age)
		if ((age <= 5 && i >= 5)); then
			fresh=1
			break
		fi
		sleep 1
	done
	if [[ -n $fresh ]]; then
		ok "$row: the watchdog gave the silent connection up: a fresh slot sample (${age} s old)"
	else
		not_ok "KNOWN BUG: $row: the watchdog gave the silent connection up: a fresh slot sample within 30 s" \
			"latest sample ${age} s old
$(stacks)"
	fi
	peer_stop 2
}

row_error_silence() {
	local n text="t594: could not decode the change, injected" armed= k
	it_check "$row: an event arrives before the fault" it_consume_wait "$topic" "$out" 1 30
	n=$(load_count_log "$log" "$streaming")
	for ((k = 0; k < 50; k++)); do
		proxy_cmd "inject_error stall $text" 2>/dev/null && { armed=1; break; }
		sleep 0.2
	done
	it_check "$row: the proxy injects an ErrorResponse and keeps the relay's side silent" test -n "$armed"
	event during
	if it_wait_log "$log" "ERROR: +$text" 30; then
		ok "$row: the relay logs the server's error"
	else
		not_ok "KNOWN BUG: $row: the relay logs the server's error within 30 s" \
			"the relay's last lines:
$(tail -n 3 "$log" | cut -c1-200)
$(stacks)"
	fi
	if it_wait_log "$log" "$streaming" 30 $((n + 1)); then
		ok "$row: the relay reconnects and streams again"
	else
		not_ok "KNOWN BUG: $row: the relay reconnects and streams again within 30 s" \
			"proxy: $(grep -E 'ErrorResponse|accepted' "$PROXY_LOG" | tail -n 3)"
	fi
	meanwhile_arrives_and_livez
	peer_stop
}

for r in "${rows[@]}"; do
	# shellcheck disable=SC2086 # the row's words, settings included
	set -- $r
	peer_start "$@"
	"row_$1"
done

it_summary
