#!/usr/bin/env bash
# t510_crash_loop -- reliability matrix: a crash loop. For LOOP_SECS (60)
# under load the relay is killed with SIGKILL every 1-3 s and started
# again at once (what a supervisor with no restart delay does); then a
# last relay drains. The relay must still make progress during the loop
# (the slot's confirmed_flush_lsn moves in every third of it: each short
# life confirms what it published), and in the end the checker finds
# nothing missing and re-deliveries only as suffixes, one per kill at
# most; consumed / committed is printed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

LOOP_SECS=${LOOP_SECS:-60}
CHECKER=$IT_ROOT/tests/integration/checker.py
db=t510_crash_loop
type=t510_$(date +%s)
topic=outbox.event.$type
aggs=30
stopfile=$IT_TEST_DIR/writer.stop
it_setup_db "$db"
python3 "$CHECKER" setup-sql --type "$type" --aggs "$aggs" | it_sql_file "$db" -
python3 "$CHECKER" pgbench-script --aggs "$aggs" --rollback-pct 10 --multi-pct 25 \
	>"$IT_TEST_DIR/writer.pgbench"
conf=$IT_TEST_DIR/relay.conf
it_write_config "$conf" "$db" reconnect.backoff.ms=100 standby.retry.ms=200

writer() {
	local deadline=$((SECONDS + LOOP_SECS + 60))
	while [[ ! -e $stopfile ]] && ((SECONDS < deadline)); do
		"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
			-f "$IT_TEST_DIR/writer.pgbench" -c 2 -j 1 -T 2 -R 120 "$db" \
			>>"$IT_TEST_DIR/pgbench.log" 2>&1 || echo failed >>"$IT_TEST_DIR/writer.err"
	done
}
stop_writer() {
	touch "$stopfile"
	[[ -z ${writer_pid:-} ]] || wait "$writer_pid" 2>/dev/null || true
	writer_pid=
}
env_on_cleanup stop_writer

t0=$SECONDS
writer &
writer_pid=$!
kills=0
marks=("$(it_slot_confirmed "$db" "$db")")
third=$((LOOP_SECS / 3))
next_mark=$((t0 + third))
while ((SECONDS - t0 < LOOP_SECS)); do
	it_start_relay "$conf" "$IT_TEST_DIR/relay.$kills.log"
	nap=$(awk -v x="$RANDOM" 'BEGIN { printf "%.1f", 1 + (x % 21) / 10 }')
	sleep "$nap"
	kill -9 "$IT_RELAY_PID" 2>/dev/null || true
	wait "$IT_RELAY_PID" 2>/dev/null || true
	IT_RELAY_PID=
	kills=$((kills + 1))
	if ((SECONDS >= next_mark)); then
		marks+=("$(it_slot_confirmed "$db" "$db")")
		next_mark=$((next_mark + third))
	fi
done
((${#marks[@]} >= 4)) || marks+=("$(it_slot_confirmed "$db" "$db")")
moved=1
for ((i = 1; i < ${#marks[@]}; i++)); do
	lsn_ge "${marks[i - 1]}" "${marks[i]}" && [[ ${marks[i - 1]} == "${marks[i]}" ]] && moved=
done
it_check "progress in every third of the loop ($kills kills; confirmed ${marks[*]})" test -n "$moved"
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
sleep 1
stop_writer
it_check "writer ran without errors" test ! -e "$IT_TEST_DIR/writer.err"
it_sql "$db" "SELECT agg, n FROM agg_seq ORDER BY id" >"$IT_TEST_DIR/expected"
committed=$(it_sql "$db" "SELECT coalesce(sum(n), 0) FROM agg_seq")
out=$IT_TEST_DIR/records.json
rc=0
it_wait_checked "$topic" "$out" 120 --expected "$IT_TEST_DIR/expected" --topic "$topic" \
	--faults "$kills" || rc=$?
summary=$(grep '^checker:' "$out.check" | head -n1 || true)
it_diag "$summary"
if ((rc == 0)); then
	ok "crash loop: $committed events after $kills kills in ${LOOP_SECS} s: none missing, re-deliveries only suffixes"
else
	not_ok "crash loop: $committed events after $kills kills" "exit $rc: $(head -n 30 "$out.check")"
fi
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.2f", c / n }')
it_diag "row: scenario=crash-loop rounds=$kills committed=$committed consumed=$consumed ratio=$ratio $(sed 's/^checker: [A-Z]* //' <<<"$summary") wall=$((SECONDS - t0))s"
rc=0
it_stop_relay || rc=$?
it_check "the draining relay exits 0" test "$rc" -eq 0

it_summary
