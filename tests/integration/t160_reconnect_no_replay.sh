#!/usr/bin/env bash
# t160_reconnect_no_replay -- a reconnect republishes nothing Kafka has
# already acked, even when the confirm for it never reached the server.
#
# status.min.interval.ms and status.interval.ms are 10 s here, so the
# acks of the first 100 events are not yet confirmed when the walsender is
# terminated (asserted as a precondition). The next session starts from
# the slot, which is behind; the relay replays from there without
# publishing again, once the newest acked commit shows up unchanged.
#  (a) walsender terminated: after the reconnect, 5 more events; the topic
#      holds exactly 105 records, each id once, and the relay's summary
#      says skipped=100;
#  (b) a relay with the default status timing; the whole server crashes
#      (pg_ctl stop -m immediate) right after 20 events were confirmed:
#      slots come back as of their last save, so the slot is behind again
#      (printed); the relay must neither stop (a crash is not a rewind)
#      nor republish: 20 events before the crash, 5 after, each id once.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t160_noreplay
out=$IT_TEST_DIR/out.json
it_write_config "$conf" "$db" status.interval.ms=10000 status.min.interval.ms=10000 \
	reconnect.backoff.ms=100 reconnect.backoff.max.ms=500 stats.interval.ms=1000

distinct_ids() {
	it_fields "$1" h:id | sort -u | grep -c . || true
}

it_start_relay "$conf" "$log"
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
it_events "$db" "$type" 100 first 5
if it_consume_wait "$topic" "$out" 100 30; then
	ok "100 events published"
else
	not_ok "100 events published" "$(it_count "$out") records; $(it_show_log "$log")"
fi
last=$(it_current_lsn "$db")
slot_before=$(it_slot_confirmed "$db" "$db")
if lsn_ge "$slot_before" "$last"; then
	not_ok "precondition: the slot is behind the acked events before the walsender goes" \
		"slot $slot_before, WAL $last"
else
	ok "precondition: the slot ($slot_before) is behind the acked events ($last)"
fi
it_end_walsender "$db"
it_check "(a) the relay reconnected" it_wait_log "$log" 'streaming from slot' 10 2
it_events "$db" "$type" 5 second 5
it_consume_wait "$topic" "$out" 105 30 || true
sleep 2
it_consume "$topic" "$out"
n=$(it_count "$out")
ids=$(distinct_ids "$out")
if ((n == 105 && ids == 105)); then
	ok "(a) 105 records, 105 distinct ids: nothing acked was published again"
else
	not_ok "(a) 105 records, 105 distinct ids" "records $n, distinct ids $ids
$(it_show_log "$log" 15)"
fi
if grep -q 'transactions already published are skipped' "$log"; then
	ok "(a) the relay says it skips what it already published"
else
	not_ok "(a) the relay says it skips what it already published" "$(it_show_log "$log" 15)"
fi

it_stop_checked "(a) relay exits 0 on SIGTERM"
skipped=$(grep -o 'summary: .*skipped=[0-9]*' "$log" | tail -n1 | sed 's/.*skipped=//' || true)
if [[ -n $skipped ]] && ((skipped == 100)); then
	ok "(a) summary: skipped=100"
else
	not_ok "(a) summary: skipped=100" "$(it_show_log "$log" 5)"
fi

# ------------------------------------------------------------------ (b)
# Default status timing now. A checkpoint saves the slot; a second later
# the relay is idle. Then the events: their confirms change the slot's
# confirmed_flush_lsn in memory only (PostgreSQL saves a slot when its
# restart_lsn or xmin moves, which needs a running-xacts record, logged
# every 15 s at most), so the crash brings it back to the checkpoint's.
conf=$IT_TEST_DIR/relay.b.conf
log=$IT_TEST_DIR/relay.b.log
it_write_config "$conf" "$db" reconnect.backoff.ms=100 reconnect.backoff.max.ms=500 \
	stats.interval.ms=1000
it_start_relay "$conf" "$log"
it_check "(b) relay streams" it_wait_slot_active "$db" "$db" 30
it_sql "$db" "CHECKPOINT" >/dev/null
sleep 1
it_events "$db" "$type" 20 third 5
it_consume_wait "$topic" "$out" 125 30 || true
last=$(it_current_lsn "$db")
it_wait_confirmed "$db" "$db" "$last" 5 || true
before=$(it_slot_confirmed "$db" "$db")
pg_stop_immediate "$IT_DIR"
pg_launch "$IT_DIR"
after=$(it_slot_confirmed "$db" "$db")
it_diag "(b) slot confirmed_flush_lsn $before before the crash, $after after it"
if lsn_ge "$after" "$before"; then
	it_diag "(b) the slot did not go back this time (a save happened in between)"
fi
it_events "$db" "$type" 5 fourth 5
sleep 3
it_consume_wait "$topic" "$out" 130 30 || true
sleep 1
it_consume "$topic" "$out"
n=$(it_count "$out")
ids=$(distinct_ids "$out")
if ((n == 130 && ids == 130)); then
	ok "(b) after the crash: 130 records, 130 distinct ids"
else
	not_ok "(b) after the crash: 130 records, 130 distinct ids" "records $n, distinct ids $ids
$(it_show_log "$log" 15)"
fi
it_check "(b) the relay is still running (a crash is not a rewind)" it_relay_alive
it_stop_checked "(b) relay exits 0 on SIGTERM"
skipped=$(grep -o 'summary: .*skipped=[0-9]*' "$log" | tail -n1 | sed 's/.*skipped=//' || true)
it_diag "(b) events skipped after the crash: ${skipped:-?}"

it_summary
