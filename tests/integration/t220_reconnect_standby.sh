#!/usr/bin/env bash
# t220_reconnect_standby -- the relay survives losing PostgreSQL, and a
# second relay on the same slot is a hot standby.
#
#   (a) under a small insert load, the slot's walsender is terminated
#       (pg_terminate_backend): the relay logs the loss, reconnects after a
#       backoff, and every committed outbox id (before, during, after)
#       arrives in Kafka as an "id" header: zero missing, none invented;
#   (b) the same while the whole PostgreSQL server restarts (pg_restart on
#       the run's shared server: it comes back on the same port);
#   (c) relay A streams, relay B on the same slot logs "standby" once (not
#       once per retry, standby.retry.ms=500, counted after ~10 s) and stays
#       up; A is killed with SIGKILL; B takes over within a bound and the
#       events written after the kill arrive; SIGTERM stops B with exit 0.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t220_reconnect
slot=$db
tag=$$
TAKEOVER_SECS=${TAKEOVER_SECS:-30}
ARRIVE_SECS=${ARRIVE_SECS:-60}

# load TYPE N DELAY: N transactions of 1-3 outbox rows each, DELAY seconds
# apart, one psql per transaction so that a server restart only fails the
# transactions it hits (those are not committed, so not expected either).
load() {
	local type=$1 n=$2 delay=$3 i k
	set +e
	for ((i = 1; i <= n; i++)); do
		k=$((i % 3 + 1))
		PGCONNECT_TIMEOUT=3 psql_q "$PGPORT" "$db" "
			INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT '$type', 'agg-' || ($i % 7), 'Load',
			       jsonb_build_object('i', $i, 'k', g)
			FROM generate_series(1, $k) g" >/dev/null 2>&1
		sleep "$delay"
	done
}

# start_load TYPE N DELAY: in the background, LOAD_PID.
start_load() {
	load "$@" </dev/null &
	LOAD_PID=$!
}

# wait_load SECS: bounded wait for the loader; killed if still running.
wait_load() {
	local secs=$1 i
	for ((i = 0; i < secs * 10; i++)); do
		_env_pid_alive "$LOAD_PID" || break
		sleep 0.1
	done
	if _env_pid_alive "$LOAD_PID"; then
		it_diag "loader $LOAD_PID still running after ${secs}s: killed"
		kill "$LOAD_PID" 2>/dev/null || true
	fi
	wait "$LOAD_PID" 2>/dev/null || true
}

# committed_ids TYPE > file: sorted ids of the committed rows of TYPE.
committed_ids() {
	it_sql "$db" "SELECT id FROM outbox WHERE aggregate_type = '$1' ORDER BY 1" |
		LC_ALL=C sort -u
}

# compare TYPE NAME: waits (bounded) until every committed id of TYPE is
# in Kafka; sets MISSING and EXTRA (counts) and writes the lists next to
# the test's files as NAME.missing / NAME.extra.
compare() {
	local type=$1 name=$2 topic=outbox.event.$1 deadline
	local want=$IT_TEST_DIR/$name.committed got=$IT_TEST_DIR/$name.kafka
	committed_ids "$type" >"$want"
	deadline=$((SECONDS + ARRIVE_SECS))
	while :; do
		it_consume "$topic" "$IT_TEST_DIR/$name.json" 2>/dev/null || true
		it_fields "$IT_TEST_DIR/$name.json" h:id | LC_ALL=C sort -u >"$got"
		MISSING=$(LC_ALL=C comm -23 "$want" "$got" | tee "$IT_TEST_DIR/$name.missing" | wc -l)
		((MISSING > 0 && SECONDS < deadline)) || break
		sleep 1
	done
	EXTRA=$(LC_ALL=C comm -13 "$want" "$got" | tee "$IT_TEST_DIR/$name.extra" | wc -l)
	it_diag "$name: $(wc -l <"$want") committed ids, $(wc -l <"$got") distinct ids" \
		"in Kafka ($(it_count "$IT_TEST_DIR/$name.json") records)," \
		"$MISSING missing, $EXTRA not committed"
}

if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi
cfg=$IT_TEST_DIR/relay.conf
it_write_config "$cfg" "$db" status.interval.ms=500 reconnect.backoff.ms=200 \
	reconnect.backoff.max.ms=2000 standby.retry.ms=500

# ---------------------------------------------------------------- (a)
log=$IT_TEST_DIR/relay.log
it_start_relay "$cfg" "$log"
relay=$IT_RELAY_PID
if it_wait_log "$log" 'streaming from slot' 30 1; then
	ok "(a) relay streams"
else
	not_ok "(a) relay streams" "$(it_show_log "$log")"
fi
type_a=t220a_$tag
start_load "$type_a" 150 0.05
sleep 3
pid1=$(it_slot_pid "$db" "$slot")
it_sql "$db" "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
	WHERE slot_name = '$slot'" >/dev/null
it_diag "(a) walsender $pid1 terminated at $(date -u +%T.%3N)"
if it_wait_log "$log" 'streaming from slot' 30 2; then
	ok "(a) relay reconnected"
else
	not_ok "(a) relay reconnected" "$(it_show_log "$log")"
fi
loss=$(grep -m1 -E 'WARN .*(replication stream ended|connection lost|terminat)' "$log" || true)
if [[ -n $loss ]]; then
	ok "(a) relay logged the loss of the connection"
	it_diag "(a) $loss"
else
	not_ok "(a) relay logged the loss of the connection" "$(it_show_log "$log")"
fi
backoff=$(grep -m1 -oE 'replaying from slot "[a-z0-9_]+" in [0-9]+ ms' "$log" || true)
if [[ $backoff =~ in\ ([0-9]+)\ ms && ${BASH_REMATCH[1]} -gt 0 ]]; then
	ok "(a) reconnect after a backoff (${BASH_REMATCH[1]} ms)"
else
	not_ok "(a) reconnect after a backoff" "$(it_show_log "$log")"
fi
wait_load 60
pid2=$(it_slot_pid "$db" "$slot")
it_check "(a) a new walsender serves the slot ($pid1 -> $pid2)" \
	test "$pid2" != 0 -a "$pid2" != "$pid1"
compare "$type_a" a
it_check "(a) zero committed events missing in Kafka" test "$MISSING" -eq 0
it_check "(a) no event in Kafka that was not committed" test "$EXTRA" -eq 0
if [[ $MISSING -gt 0 ]]; then
	it_diag "$(head -n 5 "$IT_TEST_DIR/a.missing")"
fi
it_check "(a) relay still running" it_relay_alive "$relay"

# ---------------------------------------------------------------- (b)
type_b=t220b_$tag
start_load "$type_b" 150 0.05
sleep 2
n_stream=$(grep -c 'streaming from slot' "$log" || true)
t0=$SECONDS
if pg_restart "$IT_DIR" 2>"$IT_TEST_DIR/restart.err"; then
	ok "(b) PostgreSQL restarted on port $(cat "$IT_DIR/pg/port")"
else
	not_ok "(b) PostgreSQL restarted" "$(cat "$IT_TEST_DIR/restart.err")"
fi
it_diag "(b) restart took $((SECONDS - t0)) s"
if it_wait_log "$log" 'streaming from slot' 30 $((n_stream + 1)); then
	ok "(b) relay reconnected after the server restart"
else
	not_ok "(b) relay reconnected after the server restart" "$(it_show_log "$log")"
fi
wait_load 60
compare "$type_b" b
it_check "(b) zero committed events missing in Kafka" test "$MISSING" -eq 0
it_check "(b) no event in Kafka that was not committed" test "$EXTRA" -eq 0
if [[ $MISSING -gt 0 ]]; then
	it_diag "$(head -n 5 "$IT_TEST_DIR/b.missing")"
fi
it_check "(b) relay still running" it_relay_alive "$relay"
it_stop_checked "(b) relay exits 0 on SIGTERM" "$relay"

# ---------------------------------------------------------------- (c)
log_a=$IT_TEST_DIR/relay_a.log
log_b=$IT_TEST_DIR/relay_b.log
it_start_relay "$cfg" "$log_a"
relay_a=$IT_RELAY_PID
if it_wait_log "$log_a" 'streaming from slot' 30 1 && it_wait_slot_active "$db" "$slot" 10; then
	ok "(c) relay A streams"
else
	not_ok "(c) relay A streams" "$(it_show_log "$log_a")"
fi
it_start_relay "$cfg" "$log_b"
relay_b=$IT_RELAY_PID
sleep 10
n_standby=$(grep -ci 'standby' "$log_b" || true)
it_check "(c) relay B logged \"standby\" exactly once in 10 s (got $n_standby)" \
	test "$n_standby" -eq 1
it_check "(c) relay B never streamed while A held the slot" \
	test "$(grep -c 'streaming from slot' "$log_b" || true)" -eq 0
it_check "(c) relay B still running" it_relay_alive "$relay_b"
it_check "(c) relay A still running" it_relay_alive "$relay_a"

# (stderr: no "Killed" job notice in the test output)
{
	kill -9 "$relay_a"
	_env_wait_pid_gone "$relay_a" 10 || true
} 2>/dev/null
t0=$(date +%s.%N)
type_c=t220c_$tag
start_load "$type_c" 20 0.05
if it_wait_log "$log_b" 'streaming from slot' "$TAKEOVER_SECS" 1; then
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	ok "(c) relay B took over within ${TAKEOVER_SECS} s (${took} s)"
else
	not_ok "(c) relay B took over within ${TAKEOVER_SECS} s" \
		"slot active_pid $(it_slot_pid "$db" "$slot"); $(it_show_log "$log_b")"
fi
wait_load 30
compare "$type_c" c
it_check "(c) events written after the kill arrived" test "$MISSING" -eq 0
it_check "(c) and some were written" test -s "$IT_TEST_DIR/c.committed"
it_stop_checked "(c) relay B exits 0 on SIGTERM" "$relay_b"

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
