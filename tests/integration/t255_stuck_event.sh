#!/usr/bin/env bash
# t255_stuck_event -- one event stuck in Kafka (its partition has no
# leader; message.timeout.ms=0 retries it forever) must pause reading, not
# let later, acked transactions pile up in memory behind it. On librdkafka's
# mock cluster (build/kafka-mock): a real broker cannot make a partition
# leaderless.
#  - inflight.max.events=200; one event to the leaderless topic, then 5000
#    one-event transactions to a healthy topic;
#  - after 10 s the relay has read at most 200 + 1 events (stats line
#    "received=") and holds at most 200 in its window ("held="); its peak
#    RSS is printed (under exactly-once the bound is the Kafka
#    transaction's, delivery.transaction.max.events 1000 here);
#  - the partition gets a leader: every event arrives (5000 + 1 records),
#    the slot is confirmed past the last commit.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=mock.sh
source "$(dirname "$0")/mock.sh"
it_init

db=t255_stuck
run=$(date +%s)
stuck=outbox.event.t255s_$run
healthy=outbox.event.t255h_$run
N=${T255_EVENTS:-5000}
WINDOW=${T255_WINDOW:-200}
it_setup_db "$db"
if ! mock_start --brokers 1; then
	not_ok "mock cluster starts" "$(cat "$MOCK_LOG" 2>/dev/null)"
	it_summary
fi
it_check "topic $stuck, 1 partition" mock_cmd "topic $stuck 1"
it_check "topic $healthy, 1 partition" mock_cmd "topic $healthy 1"
it_check "$stuck partition 0 without a leader" mock_cmd "leader $stuck 0 -1"

conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
# Under exactly-once the acked records of the healthy topic leave the
# window but their acks wait for the Kafka commit, which the stuck event
# holds back: reading pauses at the PostgreSQL commit where the
# transaction is due (delivery.transaction.interval.ms, or max.events),
# so that bounds what is read and held, not the window.
bound=$WINDOW
txn=()
if it_eos; then
	bound=${T255_TXN_MAX:-1000}
	txn=(delivery.transaction.max.events="$bound")
fi
it_write_config "$conf" "$db" inflight.max.events=$WINDOW stats.interval.ms=500 "${txn[@]}"
sed -i "s|^kafka.bootstrap.servers = .*|kafka.bootstrap.servers = $MOCK_BOOTSTRAP|" "$conf"
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
it_event "$db" "t255s_$run" stuck
# N one-event transactions over 50 aggregates behind it.
it_events "$db" "t255h_$run" "$N" E 50
last=$(it_current_lsn "$db")
sleep 10
line=$(grep 'stats: state=' "$log" | tail -n1) || line=
received=$(sed -n 's/.* received=\([0-9]*\) .*/\1/p' <<<"$line")
held=$(sed -n 's/.* held=\([0-9]*\) .*/\1/p' <<<"$line")
rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo '?')
it_diag "10 s after the writes: received=${received:-?} held=${held:-?} peak RSS ${rss} kB (window $WINDOW, $N events behind the stuck one)"
it_check "reading paused: received ${received:-?} <= $((bound + 1))" \
	test "${received:-999999}" -le $((bound + 1))
it_check "held ${held:-?} <= $bound ($([[ $bound == "$WINDOW" ]] && echo "the window" || echo "a Kafka transaction's max.events"))" \
	test "${held:-999999}" -le "$bound"
c=$(it_slot_confirmed "$db" "$db")
if lsn_ge "$c" "$last"; then
	not_ok "slot ($c) behind the writes ($last) while the event is stuck"
else
	ok "slot ($c) behind the writes ($last) while the event is stuck"
fi

it_check "$stuck partition 0 gets leader 1" mock_cmd "leader $stuck 0 1"
count() { kcat -b "$MOCK_BOOTSTRAP" -C -t "$1" -o beginning -e -q 2>/dev/null | grep -c . || true; }
got=0
for ((i = 0; i < 120; i++)); do
	got=$(count "$healthy")
	((got >= N)) && break
	sleep 0.5
done
it_check "all $N events of the healthy topic arrive (got $got)" test "$got" -ge "$N"
it_check "the stuck event arrives" test "$(count "$stuck")" -ge 1
it_check "the slot is confirmed past the last commit" it_wait_confirmed "$db" "$db" "$last" 30
it_stop_checked "relay exits 0 on SIGTERM"
rc=0
mock_stop || rc=$?
it_check "mock cluster exits 0" test "$rc" -eq 0

it_summary
