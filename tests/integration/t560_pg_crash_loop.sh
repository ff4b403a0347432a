#!/usr/bin/env bash
# t560_pg_crash_loop -- PostgreSQL crashes under load (F3): three rounds of
# pg_ctl stop -m immediate on the run's shared cluster (no shutdown
# checkpoint: slots come back as last saved, so the slot may be behind
# what the relay had confirmed) and a start on the same port, while a
# background writer commits (checker scheme, 50 aggregates; its bursts
# fail while the server is down, which is expected). Asserts:
#  - after each crash the relay is still running (a crash is not a
#    rewind: no exit 69) and streams again within 30 s of the start
#    (printed, with the slot's confirmed_flush_lsn before and after);
#  - every committed event is in Kafka, in order, none rolled back,
#    re-deliveries only suffixes, one per reconnect at most (checker
#    --faults; duplicates printed); committed and consumed are printed;
#  - the relay exits 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init

it_scenario t560_pg_crash_loop
streaming='streaming from slot'
rounds=3
load_init "$db" "$type" 50
it_write_config "$conf" "$db" reconnect.backoff.ms=200 \
	reconnect.backoff.max.ms=2000 stats.interval.ms=1000

# Whatever happens, the shared cluster must be up for the next test.
ensure_pg() {
	port_in_use 127.0.0.1 "$PGPORT" || pg_launch "$IT_DIR" >/dev/null 2>&1 || true
}
env_on_cleanup ensure_pg

it_start_relay "$conf" "$log"
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
load_start 100 3
it_check "events flow before the first crash" load_wait_acked "$log" 200 30

for ((r = 1; r <= rounds; r++)); do
	# 1.5 .. 4.0 s more load, so that the crash lands at no fixed point.
	sleep "$(awk -v x="$RANDOM" 'BEGIN { printf "%.1f", 1.5 + (x % 26) / 10 }')"
	n=$(load_count_log "$log" "$streaming")
	before=$(it_slot_confirmed "$db" "$db")
	acked=$(load_acked "$log")
	pg_stop_immediate "$IT_DIR"
	sleep 1
	if ! pg_launch "$IT_DIR"; then
		not_ok "round $r: PostgreSQL starts again"
		break
	fi
	t0=$(load_ms)
	after=$(it_slot_confirmed "$db" "$db")
	if load_wait_log "$log" "$streaming" $((n + 1)) 30 >/dev/null; then
		ok "round $r: streaming again $(($(load_ms) - t0)) ms after the start (slot confirmed_flush_lsn $before before the crash, $after after recovery)"
	else
		not_ok "round $r: streaming again within 30 s of the start" "$(it_show_log "$log" 15)"
	fi
	if it_relay_alive; then
		ok "round $r: the relay is still running (a crash is not a rewind)"
	else
		rc=0
		wait "$IT_RELAY_PID" 2>/dev/null || rc=$?
		not_ok "round $r: the relay is still running (a crash is not a rewind)" \
			"exit $rc; $(it_show_log "$log" 15)"
		break
	fi
	if load_wait_acked "$log" $((acked + 100)) 30; then
		ok "round $r: events flow again ($(($(load_acked "$log") - acked)) more acked)"
	else
		not_ok "round $r: events flow again" "$(it_show_log "$log" 15)"
	fi
done

load_stop
it_diag "writer: $LOAD_BURSTS bursts, $LOAD_FAILED failed (bursts cut by the crashes)"
load_check_sessions "$topic" "$log" F3 "$rounds" "after $rounds crashes"
it_diag "committed $LOAD_COMMITTED, consumed $(load_stat records) records ($(load_stat events) distinct), missing $(load_stat missing), duplicates $(load_stat duplicates); sessions $(load_count_log "$log" "$streaming"), skipped as already published: $(grep -o 'skipped=[0-9]*' "$log" | tail -n1)"
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
