#!/usr/bin/env bash
# t520_standby_takeover -- reliability matrix F19: two relays on one slot
# under load; the active one is killed with SIGKILL three times (each
# time a new relay joins as the standby). The standby takes over within
# standby.retry.ms (500) plus a bound (TAKEOVER_SECS, 10 s; printed), and
# the checker finds nothing missing and re-deliveries only as suffixes,
# at most one per kill.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

TAKEOVER_SECS=${TAKEOVER_SECS:-10}
KILLS=3
CHECKER=$IT_ROOT/tests/integration/checker.py
db=t520_standby
type=t520_$(date +%s)
topic=outbox.event.$type
aggs=20
stopfile=$IT_TEST_DIR/writer.stop
it_setup_db "$db"
python3 "$CHECKER" setup-sql --type "$type" --aggs "$aggs" | it_sql_file "$db" -
python3 "$CHECKER" pgbench-script --aggs "$aggs" --rollback-pct 5 --multi-pct 20 \
	>"$IT_TEST_DIR/writer.pgbench"
conf=$IT_TEST_DIR/relay.conf
it_write_config "$conf" "$db" standby.retry.ms=500 reconnect.backoff.ms=100

writer() {
	local deadline=$((SECONDS + 120))
	while [[ ! -e $stopfile ]] && ((SECONDS < deadline)); do
		"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
			-f "$IT_TEST_DIR/writer.pgbench" -c 2 -j 1 -T 2 -R 100 "$db" \
			>>"$IT_TEST_DIR/pgbench.log" 2>&1 || echo failed >>"$IT_TEST_DIR/writer.err"
	done
}
stop_writer() {
	touch "$stopfile"
	[[ -z ${writer_pid:-} ]] || wait "$writer_pid" 2>/dev/null || true
	writer_pid=
}
env_on_cleanup stop_writer
active_pid() { it_sql "$db" "SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = '$db'"; }

t0=$SECONDS
writer &
writer_pid=$!
it_start_relay "$conf" "$IT_TEST_DIR/relay.0.log"
a=$IT_RELAY_PID
it_wait_slot_active "$db" "$db" 30 || true
takes=()
for ((k = 1; k <= KILLS; k++)); do
	it_start_relay "$conf" "$IT_TEST_DIR/relay.$k.log"
	b=$IT_RELAY_PID
	for ((i = 0; i < 50; i++)); do
		grep -q 'standby' "$IT_TEST_DIR/relay.$k.log" && break
		sleep 0.1
	done
	sleep 1
	before=$(active_pid)
	kill -9 "$a" 2>/dev/null || true
	wait "$a" 2>/dev/null || true
	tk=$(date +%s%N)
	took=
	for ((i = 0; i < TAKEOVER_SECS * 10; i++)); do
		if grep -q 'streaming from slot' "$IT_TEST_DIR/relay.$k.log"; then
			took=$((($(date +%s%N) - tk) / 1000000))
			break
		fi
		sleep 0.1
	done
	if [[ -n $took ]]; then
		ok "kill $k: the standby took over in ${took} ms (walsender $before before)"
		takes+=("$took")
	else
		not_ok "kill $k: the standby took over within ${TAKEOVER_SECS} s" \
			"$(it_show_log "$IT_TEST_DIR/relay.$k.log" 10)"
	fi
	a=$b
done
sleep 2
stop_writer
it_check "writer ran without errors" test ! -e "$IT_TEST_DIR/writer.err"
it_sql "$db" "SELECT agg, n FROM agg_seq ORDER BY id" >"$IT_TEST_DIR/expected"
committed=$(it_sql "$db" "SELECT coalesce(sum(n), 0) FROM agg_seq")
out=$IT_TEST_DIR/records.json
rc=0
it_wait_checked "$topic" "$out" 90 --expected "$IT_TEST_DIR/expected" --topic "$topic" \
	--faults "$KILLS" || rc=$?
summary=$(grep '^checker:' "$out.check" | head -n1 || true)
it_diag "$summary"
if ((rc == 0)); then
	ok "F19: $committed events over $KILLS takeovers: none missing, re-deliveries only suffixes"
else
	not_ok "F19: $committed events over $KILLS takeovers" "exit $rc: $(head -n 30 "$out.check")"
fi
it_diag "row: scenario=F19 rounds=$KILLS takeover_ms=${takes[*]:-none} $(sed 's/^checker: [A-Z]* //' <<<"$summary") wall=$((SECONDS - t0))s"
rc=0
IT_RELAY_PID=$a
it_stop_relay || rc=$?
it_check "the last relay exits 0" test "$rc" -eq 0

it_summary
