#!/usr/bin/env bash
# t140_sigterm_load -- a clean stop in the middle of a load. A background
# writer (pgbench bursts, bounded by a stop file and 60 s) runs; the relay
# gets SIGTERM while events stream. Asserts:
#  - exit code 0, with the "signal received" and summary lines;
#  - the final status update reached PostgreSQL: the slot's
#    confirmed_flush_lsn is at least the relay's last confirmed_lsn;
#  - everything at or below that confirmed position was in Kafka when the
#    relay had exited (snapshot, checked once the events' LSNs are known);
#  - a second relay started on the running load drains it: every committed
#    event arrives in per-aggregate order, none rolled back (checker);
#  - duplicates are reported; since a drained stop confirms every complete
#    transaction, at most the events of the one transaction cut by the
#    stop (the writer puts at most 2 in a transaction) can come again.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
# The writer stops by itself after 60 s, should the test not stop it.
LOAD_MAX_SECS=60

it_scenario t140_sigterm_load
aggs=50
max_events_per_txn=2

load_init "$db" "$type" "$aggs"
# linger.ms: the producer holds events for 300 ms, so that SIGTERM finds
# events in flight and the drain has something to wait for.
it_write_config "$conf" "$db" status.interval.ms=500 stats.interval.ms=1000 \
	standby.retry.ms=200 kafka.linger.ms=300

# -- first relay, stopped mid-load
log1=$IT_TEST_DIR/relay.1.log
it_start_relay "$conf" "$log1"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30
# pgbench bursts of 2 s (3 clients, 150 transactions/s) until load_stop.
load_start 150 3
# Until the relay has acked a good part of the load, then 1 s more.
for ((i = 0; i < 40; i++)); do
	acked=$(grep -o 'stats: .* acked=[0-9]*' "$log1" | tail -n1 | sed 's/.*acked=//' || true)
	((${acked:-0} >= 300)) && break
	sleep 0.5
done
sleep 1
it_check "relay streaming under load before SIGTERM (acked=${acked:-0})" \
	test "${acked:-0}" -gt 0
it_stop_checked "relay exits 0 on SIGTERM under load"
# Nothing moves the slot now; the load goes on.
c_stop=$(it_slot_confirmed "$db" "$db")
snap=$IT_TEST_DIR/snapshot.json
snap_ok=
for ((i = 0; i < 5; i++)); do
	it_consume "$topic" "$snap" 2>"$snap.err" && { snap_ok=1; break; }
	sleep 1
done
it_check "Kafka snapshot after the stop" test -n "$snap_ok"
sig=$(grep -o 'signal received: .*' "$log1" | head -n1 || true)
it_diag "${sig:-no signal line}"
inflight=$(sed -n 's/.*waiting up to [0-9]* ms for \([0-9]*\) in-flight.*/\1/p' <<<"$sig")
# Exactly-once pauses reading while it commits a Kafka transaction, and
# a stop read right after a commit finds nothing in flight: there is then
# nothing to drain (CI's check-eos once: "waiting ... for 0 in-flight
# events", everything else here passed). Said, not failed, in that mode.
if it_eos && [[ $inflight == 0 ]]; then
	skip "SIGTERM found events in flight to drain (0)" \
		"exactly-once: the stop came between two Kafka transactions"
else
	it_check "SIGTERM found events in flight to drain (${inflight:-?})" \
		test "${inflight:-0}" -gt 0
fi
it_check "log: signal received, then summary with exit=0" \
	grep -Eq 'summary: peak_rss_kb=[0-9]+ unacked_at_exit=[0-9]+ exit=0' "$log1"
last=$(sed -n 's/.*summary: .* confirmed_lsn=\([0-9A-F]*\/[0-9A-F]*\) .*/\1/p' "$log1" | tail -n1)
if [[ -n $last && -n $c_stop ]] && lsn_ge "$c_stop" "$last"; then
	ok "final status update reached the slot (relay confirmed $last, slot $c_stop)"
else
	not_ok "final status update reached the slot" \
		"relay's last confirmed_lsn '${last}', slot confirmed_flush_lsn '$c_stop'"
fi

# -- second relay on the running load, then drain
sleep 1
log2=$IT_TEST_DIR/relay.2.log
it_start_relay "$conf" "$log2"
sleep 3
load_stop
it_check "writer ran without errors ($LOAD_BURSTS bursts, $LOAD_FAILED failed)" \
	test "$LOAD_FAILED" = 0

load_expected
load_ids
covered=()
[[ -z $snap_ok ]] || covered=(--covered "$c_stop=$snap")
load_checked "$topic" 90 --ids "$IT_TEST_DIR/ids" --topic "$topic" "${covered[@]}"
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
if ((rc == 0)); then
	ok "checker: all $committed events, in order, none rolled back, confirmed ones in Kafka at the stop"
else
	not_ok "checker: all $committed events, in order, none rolled back, confirmed ones in Kafka at the stop" \
		"exit $rc: $(head -n 40 "$out.check")
$(it_show_log "$log2" 20)"
fi
it_diag "$summary"
load_row F21 1
dups=$(load_stat duplicates)
it_diag "duplicates after SIGTERM + restart: ${dups:-?}"
it_check "duplicates (${dups:-?}) at most one cut transaction's events ($max_events_per_txn)" \
	test "${dups:-999}" -le "$max_events_per_txn"

it_check_confirmed_past "$db" "$summary" "second relay confirmed past the last outbox commit"
it_stop_checked "second relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log2" 20)"

it_summary
