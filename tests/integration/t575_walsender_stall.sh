#!/usr/bin/env bash
# t575_walsender_stall -- F6 of docs/reliability.md: a stalled walsender
# under load. The relay's walsender
# (pg_replication_slots.active_pid) gets SIGSTOP while a background writer
# commits (checker scheme, 50 aggregates); pg.receive.timeout.ms is 6000,
# wal_sender_timeout 60 s, so no stop here reaches the server's timeout.
# t305 covers the health side; this test covers delivery.
#  (a) stopped for 2.5 s, less than half the receive timeout: the relay
#      keeps the session (no reconnect) and the stream goes on after
#      SIGCONT;
#  (b) twice: stopped for 15 s: the relay notices within 6 s + 2 s
#      (printed), reconnects and waits in standby while the stopped
#      walsender holds the slot; after SIGCONT the old walsender reads the
#      relay's goodbye and exits, and the relay streams again within 15 s
#      (printed);
#  - every committed event is in Kafka, in order, none rolled back,
#    re-deliveries only suffixes, one per reconnect at most (checker
#    --faults; duplicates printed); the relay exits 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init

it_scenario t575_walsender_stall
timeout_ms=6000
bound_ms=2000
detected='no message from PostgreSQL for'
streaming='streaming from slot'
load_init "$db" "$type" 50
it_write_config "$conf" "$db" pg.receive.timeout.ms=$timeout_ms \
	reconnect.backoff.ms=200 reconnect.backoff.max.ms=2000 standby.retry.ms=500 \
	stats.interval.ms=2000

stopped=
resume() {
	[[ -z $stopped ]] || kill -CONT "$stopped" 2>/dev/null || true
	stopped=
}
env_on_cleanup resume

walsender() {
	it_sql "$db" "SELECT active_pid FROM pg_replication_slots
		WHERE slot_name = '$db' AND active"
}

it_start_relay "$conf" "$log"
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
load_start 100 3
it_check "events flow before the fault" load_wait_acked "$log" 200 30

# ------------------------------------------------------------------ (a)
pid=$(walsender)
n_det=$(load_count_log "$log" "$detected")
acked=$(load_acked "$log")
stopped=$pid
kill -STOP "$pid"
sleep 2.5
resume
sleep 3
if (($(load_count_log "$log" "$detected") == n_det)) && [[ $(walsender) == "$pid" ]]; then
	ok "(a) walsender $pid stopped for 2.5 s: same session, no reconnect"
else
	not_ok "(a) walsender $pid stopped for 2.5 s: same session, no reconnect" \
		"walsender now $(walsender); $(it_show_log "$log" 10)"
fi
if load_wait_acked "$log" $((acked + 100)) 20; then
	ok "(a) the stream goes on after SIGCONT"
else
	not_ok "(a) the stream goes on after SIGCONT" "$(it_show_log "$log" 10)"
fi

# ------------------------------------------------------------------ (b)
for round in 1 2; do
	pid=$(walsender)
	if [[ -z $pid ]]; then
		not_ok "(b$round) a walsender to stop" "$(it_show_log "$log" 10)"
		continue
	fi
	n_det=$(load_count_log "$log" "$detected")
	n_str=$(load_count_log "$log" "$streaming")
	n_sb=$(load_count_log "$log" 'standby: ')
	t0=$(load_ms)
	stopped=$pid
	kill -STOP "$pid"
	if load_wait_log "$log" "$detected" $((n_det + 1)) $(((timeout_ms + bound_ms) / 1000 + 5)) >/dev/null; then
		took=$(($(load_ms) - t0))
		if ((took <= timeout_ms + bound_ms)); then
			ok "(b$round) walsender $pid stopped: the relay noticed after $took ms (pg.receive.timeout.ms $timeout_ms + $bound_ms)"
		else
			not_ok "(b$round) the relay noticed within $((timeout_ms + bound_ms)) ms" "took $took ms"
		fi
	else
		not_ok "(b$round) the relay noticed the stopped walsender" "$(it_show_log "$log" 10)"
	fi
	if load_wait_log "$log" 'standby: ' $((n_sb + 1)) 8 >/dev/null; then
		ok "(b$round) standby while the stopped walsender holds the slot"
	else
		not_ok "(b$round) standby while the stopped walsender holds the slot" "$(it_show_log "$log" 10)"
	fi
	while (($(load_ms) - t0 < 15000)); do sleep 0.2; done
	t_cont=$(load_ms)
	resume
	if load_wait_log "$log" "$streaming" $((n_str + 1)) 15 >/dev/null; then
		ok "(b$round) streaming again $(($(load_ms) - t_cont)) ms after SIGCONT ($(($(load_ms) - t0)) ms after SIGSTOP)"
	else
		not_ok "(b$round) streaming again within 15 s of SIGCONT" "$(it_show_log "$log" 10)"
	fi
	it_check "(b$round) the relay is alive" it_relay_alive
	sleep 3
done

# ------------------------------------------------------------------ end
load_stop_checked
load_check_sessions "$topic" "$log" F6 "3"
it_diag "committed $LOAD_COMMITTED, consumed $(load_stat records) records, missing $(load_stat missing), duplicates $(load_stat duplicates); sessions $(load_count_log "$log" "$streaming"), silent-connection reconnects $(load_count_log "$log" "$detected")"
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
