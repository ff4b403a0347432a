#!/usr/bin/env bash
# t585_pg_reset_cut -- the connection to PostgreSQL reset, cut mid-stream
# and slowed down, under load: the relay reaches the server through
# build/tcp-proxy while a background writer commits (checker scheme, 50
# aggregates).
#  (a) delay 200 ms both ways for 8 s: the session survives (no reconnect
#      needed) and events keep arriving;
#  (b) three times: reset (RST to both sides): the relay streams again
#      within 10 s (printed);
#  (c) three times: close_after 30000 on the open connections: the
#      stream is cut after 30000 more bytes, mid-message as a rule; the
#      relay streams again within 10 s (printed);
#  (d) close_after 65536 on every connection, new ones too, for 15 s: a
#      session ends every 64 KiB; the relay keeps publishing in between
#      (acked grows), then streams on once the proxy passes again;
#  - every committed event is in Kafka, in order, none rolled back,
#    re-deliveries only suffixes, one per reconnect at most (checker
#    --faults; duplicates printed); the relay exits 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=proxy.sh
source "$(dirname "$0")/proxy.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init

it_scenario t585_pg_reset_cut
streaming='streaming from slot'
load_init "$db" "$type" 50
proxy_start_pg
it_write_config "$conf" "$db" "pg.conninfo=$(proxy_conninfo "$db")" \
	pg.receive.timeout.ms=6000 reconnect.backoff.ms=100 \
	reconnect.backoff.max.ms=1000 standby.retry.ms=300 stats.interval.ms=1000

it_start_relay "$conf" "$log"
it_check "relay streams through the proxy" it_wait_slot_active "$db" "$db" 30
load_start 100 3
it_check "events flow before the faults" load_wait_acked "$log" 200 30

# fault_then_stream LABEL COMMAND: runs the proxy command, then waits for
# the next session; ok with the time it took.
fault_then_stream() {
	local label=$1 command=$2 n t0
	n=$(load_count_log "$log" "$streaming")
	t0=$(load_ms)
	if ! proxy_cmd "$command"; then
		not_ok "$label: proxy command '$command'"
		return
	fi
	if load_wait_log "$log" "$streaming" $((n + 1)) 10 >/dev/null; then
		ok "$label: streaming again $(($(load_ms) - t0)) ms after '$command'"
	else
		not_ok "$label: streaming again within 10 s of '$command'" "$(it_show_log "$log" 10)"
	fi
}

# ------------------------------------------------------------------ (a)
n=$(load_count_log "$log" "$streaming")
acked=$(load_acked "$log")
proxy_cmd "delay 200"
sleep 8
proxy_cmd pass
if (($(load_count_log "$log" "$streaming") == n)); then
	ok "(a) delay 200 ms for 8 s: the session survived"
else
	not_ok "(a) delay 200 ms for 8 s: the session survived" "$(it_show_log "$log" 10)"
fi
if load_wait_acked "$log" $((acked + 400)) 20; then
	ok "(a) events kept arriving ($(($(load_acked "$log") - acked)) acked since the delay began)"
else
	not_ok "(a) events kept arriving" "$(it_show_log "$log" 10)"
fi

# ------------------------------------------------------------------ (b)
for i in 1 2 3; do
	fault_then_stream "(b$i) reset" reset
	sleep 3
done
it_diag "(b) $(grep -E 'replication connection lost|could not send status' "$log" | tail -n1 | cut -c1-160)"

# ------------------------------------------------------------------ (c)
for i in 1 2 3; do
	fault_then_stream "(c$i) cut" "close_after 30000 now"
	proxy_cmd pass
	sleep 3
done
it_diag "(c) $(grep -E 'replication connection lost|stream ended|could not' "$log" | tail -n1 | cut -c1-160)"

# ------------------------------------------------------------------ (d)
n=$(load_count_log "$log" "$streaming")
acked=$(load_acked "$log")
proxy_cmd "close_after 65536"
sleep 15
during=$(($(load_count_log "$log" "$streaming") - n))
acked_during=$(($(load_acked "$log") - acked))
proxy_cmd pass
cuts=$(proxy_stat cuts)
if ((during >= 3 && acked_during > 0)); then
	ok "(d) 15 s of 64 KiB sessions: $during sessions, $acked_during events acked meanwhile (proxy cuts so far: $cuts)"
else
	not_ok "(d) 15 s of 64 KiB sessions: the relay kept publishing" \
		"$during sessions, $acked_during acked; $(it_show_log "$log" 15)"
fi
acked=$(load_acked "$log")
if load_wait_acked "$log" $((acked + 300)) 30; then
	ok "(d) after the proxy passes again the relay streams on"
else
	not_ok "(d) after the proxy passes again the relay streams on" "$(it_show_log "$log" 15)"
fi
it_diag "proxy: $(proxy_cmd stats && echo "$PROXY_ANSWER")"

# ------------------------------------------------------------------ end
load_stop_checked
it_check "relay alive after every fault" it_relay_alive
load_check_sessions "$topic" "$log" reset/cut "8"
it_diag "committed $LOAD_COMMITTED, consumed $(load_stat records) records, missing $(load_stat missing), duplicates $(load_stat duplicates); sessions $(load_count_log "$log" "$streaming")"
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
