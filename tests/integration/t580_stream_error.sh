#!/usr/bin/env bash
# t580_stream_error -- a server-side error on the replication stream
# under load (F22: a decoding error the walsender reports), made by
# build/tcp-proxy: between two messages of the live COPY BOTH stream it
# sends the relay a PostgreSQL ErrorResponse (severity ERROR, SQLSTATE
# XX000, our text) and closes the connection, while a background writer
# commits (checker scheme, 50 aggregates). Three times:
#  - the relay logs the server's error with its text, ends the session,
#    reconnects and streams again within 10 s (printed), replaying from
#    the slot;
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

it_scenario t580_stream_error
streaming='streaming from slot'
load_init "$db" "$type" 50
proxy_start_pg
it_write_config "$conf" "$db" "pg.conninfo=$(proxy_conninfo "$db")" \
	pg.receive.timeout.ms=6000 reconnect.backoff.ms=100 \
	reconnect.backoff.max.ms=1000 stats.interval.ms=1000

it_start_relay "$conf" "$log"
it_check "relay streams through the proxy" it_wait_slot_active "$db" "$db" 30
load_start 100 3
it_check "events flow before the faults" load_wait_acked "$log" 200 30

for i in 1 2 3; do
	text="t580 round $i: could not decode the change, injected"
	n=$(load_count_log "$log" "$streaming")
	# The stream must be in COPY BOTH through the proxy; right after a
	# reconnect it may not be yet.
	armed=
	for ((k = 0; k < 50; k++)); do
		if proxy_cmd "inject_error $text" 2>/dev/null; then
			armed=1
			break
		fi
		sleep 0.2
	done
	t0=$(load_ms)
	if [[ -z $armed ]]; then
		not_ok "($i) the proxy injects an ErrorResponse" "$PROXY_ANSWER"
		continue
	fi
	if load_wait_log "$log" "ERROR: +$text" 1 10 >/dev/null; then
		ok "($i) the relay logs the server's error: $(grep -E "ERROR: +$text" "$log" | tail -n1 | sed 's/^[^ ]* //' | cut -c1-140)"
	else
		not_ok "($i) the relay logs the server's error" "$(it_show_log "$log" 10)"
	fi
	if load_wait_log "$log" "$streaming" $((n + 1)) 10 >/dev/null; then
		ok "($i) streaming again $(($(load_ms) - t0)) ms after the error: $(grep "$streaming" "$log" | tail -n1 | sed 's/.*confirmed_flush_lsn/confirmed_flush_lsn/' | cut -c1-150)"
	else
		not_ok "($i) streaming again within 10 s of the error" "$(it_show_log "$log" 10)"
	fi
	sleep 4
done
it_diag "proxy: $(proxy_cmd stats && echo "$PROXY_ANSWER")"
it_check "the proxy injected 3 errors" test "$(proxy_stat injected)" = 3

load_stop_checked
it_check "relay alive after the errors" it_relay_alive
load_check_sessions "$topic" "$log" F22 "3"
it_diag "committed $LOAD_COMMITTED, consumed $(load_stat records) records, missing $(load_stat missing), duplicates $(load_stat duplicates); sessions $(load_count_log "$log" "$streaming")"
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
