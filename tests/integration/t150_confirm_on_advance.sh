#!/usr/bin/env bash
# t150_confirm_on_advance -- the flush LSN goes out as soon as Kafka has
# acked, not only on the status.interval.ms keepalive timer (left at its
# default, 10 s, everywhere here):
#  (a) the first standby status update comes right after START_REPLICATION
#      (pg_stat_replication.reply_time is set within 3 s of the slot
#      turning active), and the first stats line shows the slot's
#      position as confirmed_lsn (not 0/0);
#  (b) three single events, a second apart: each one's commit is confirmed
#      (slot confirmed_flush_lsn) within 3 s of being written;
#  (c) 300 one-event transactions over ~3 s: the updates are coalesced,
#      at most one per status.min.interval.ms (100 ms) plus a few, which
#      the relay's summary line (status_updates=) tells;
#  (d) a relay killed with SIGKILL ten times, every 1-3 s, under a steady
#      write load, then a last one drains: every committed event is in
#      Kafka in per-aggregate order (checker), and the events consumed per
#      event committed stay below 1.5 (printed; the target is 1.1). A
#      relay that confirmed only every 10 s never confirmed in such a loop
#      and republished everything since the start on each restart (11x).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
db=t150_confirm
run=$(date +%s)
type=t150_$run
topic=outbox.event.$type
conf=$IT_TEST_DIR/relay.conf
it_setup_db "$db"
it_write_config "$conf" "$db" stats.interval.ms=1000 reconnect.backoff.ms=100 \
	standby.retry.ms=200

relay_pid_of_slot() {
	it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'"
}

# ------------------------------------------------------------------ (a)
log=$IT_TEST_DIR/relay.a.log
it_start_relay "$conf" "$log"
if it_wait_slot_active "$db" "$db" 30; then
	got=
	for ((i = 0; i < 30; i++)); do
		got=$(it_sql "$db" "SELECT reply_time IS NOT NULL FROM pg_stat_replication
			WHERE pid = (SELECT active_pid FROM pg_replication_slots
			             WHERE slot_name = '$db')")
		[[ $got == t ]] && break
		sleep 0.1
	done
	it_check "(a) a status update within 3 s of START_REPLICATION (reply_time set)" \
		test "$got" = t
	# The stats line names the slot's position from the start, not 0/0.
	line=
	for ((i = 0; i < 30; i++)); do
		line=$(grep 'stats: state=streaming' "$log" | head -n1 || true)
		[[ -n $line ]] && break
		sleep 0.1
	done
	it_check "(a) the first stats line shows the confirmed LSN, not 0/0" \
		bash -c '[[ $1 == *" confirmed_lsn="* && $1 != *" confirmed_lsn=0/0 "* ]]' _ "$line"
else
	not_ok "(a) relay streams" "$(it_show_log "$log")"
fi

# ------------------------------------------------------------------ (b)
late=0
for k in 1 2 3; do
	lsn=$(it_sql "$db" "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), '$type', 'b-$k', 'E', '{\"k\": $k}');
		SELECT pg_current_wal_lsn()")
	if ! it_wait_confirmed "$db" "$db" "$lsn" 3; then
		late=$((late + 1))
		it_diag "(b) event $k: commit $lsn not confirmed within 3 s (slot at $(it_slot_confirmed "$db" "$db"))"
	fi
	sleep 1
done
it_check "(b) each of 3 events confirmed within 3 s of its commit" test "$late" -eq 0

# ------------------------------------------------------------------ (c)
start_updates=$(grep -o 'status_updates=[0-9]*' "$log" | tail -n1 | cut -d= -f2 || true)
t0=$(date +%s%N)
for ((k = 0; k < 300; k++)); do
	echo "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), '$type', 'c-$((k % 7))', 'E', '{\"k\": $k}');"
	# psql runs each statement as its own transaction: ~10 ms apart.
	echo "SELECT pg_sleep(0.01);"
done | it_sql_file "$db" - >/dev/null
lsn=$(it_current_lsn "$db")
it_wait_confirmed "$db" "$db" "$lsn" 10 || true
t1=$(date +%s%N)
it_stop_checked "(c) relay exits 0 on SIGTERM"
updates=$(grep -o 'summary: .*status_updates=[0-9]*' "$log" | tail -n1 | sed 's/.*status_updates=//' || true)
elapsed_ms=$(((t1 - t0) / 1000000))
# At most one per 100 ms, plus the keepalive timer's, the final one and
# those sent while (a) and (b) ran before t0.
bound=$((elapsed_ms / 100 + 10 + ${start_updates:-0}))
it_diag "(c) 300 commits in ${elapsed_ms} ms: ${updates:-?} status updates in the whole run (bound $bound)"
if [[ -n $updates ]] && ((updates <= bound && updates >= 3)); then
	ok "(c) status updates coalesced: $updates for 303 commits (<= $bound)"
else
	not_ok "(c) status updates coalesced (<= $bound)" "$(it_show_log "$log" 5)"
fi

# ------------------------------------------------------------------ (d)
aggs=20
dtype=t150d_$run
dtopic=outbox.event.$dtype
load_init "$db" "$dtype" "$aggs" 5 10
# The writer stops by itself after 60 s, should the test not stop it.
LOAD_MAX_SECS=60
load_start 150 2
rounds=10
for ((r = 1; r <= rounds; r++)); do
	log=$IT_TEST_DIR/relay.d$r.log
	load_kill9 "$conf" "$log" 1 21
done
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
sleep 1
load_stop
it_check "writer ran without errors" test "$LOAD_FAILED" = 0
load_expected
load_checked "$dtopic" 90
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
if ((rc == 0)); then
	ok "(d) all $committed events after $rounds kills, in order"
else
	not_ok "(d) all $committed events after $rounds kills, in order" \
		"exit $rc: $(head -n 30 "$out.check")"
fi
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.2f", c / n }')
it_diag "(d) $rounds x SIGKILL every 1-3 s: $committed committed, $consumed consumed, ratio $ratio (target <= 1.1)"
if [[ -n $ratio ]] && awk -v r="$ratio" 'BEGIN { exit !(r + 0 <= 1.5) }'; then
	ok "(d) consumed / committed = $ratio <= 1.5 after $rounds kills"
else
	not_ok "(d) consumed / committed = $ratio <= 1.5 after $rounds kills"
fi
it_stop_checked "(d) final relay exits 0 on SIGTERM"

it_summary
