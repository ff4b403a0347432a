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

# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"

LOOP_SECS=${LOOP_SECS:-60}
# The writer stops by itself a minute after the loop, should the test not.
LOAD_MAX_SECS=$((LOOP_SECS + 60))
it_scenario t510_crash_loop
aggs=30
load_init "$db" "$type" "$aggs"
it_write_config "$conf" "$db" reconnect.backoff.ms=100 standby.retry.ms=200

t0=$SECONDS
# pgbench bursts of 2 s (2 clients, 120 transactions/s) until load_stop.
load_start 120 2
kills=0
marks=("$(it_slot_confirmed "$db" "$db")")
third=$((LOOP_SECS / 3))
next_mark=$((t0 + third))
while ((SECONDS - t0 < LOOP_SECS)); do
	load_kill9 "$conf" "$IT_TEST_DIR/relay.$kills.log" 1 21
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
load_stop
it_check "writer ran without errors" test "$LOAD_FAILED" = 0
load_expected
load_checked "$topic" 120 --topic "$topic" --faults "$kills"
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
if ((rc == 0)); then
	ok "crash loop: $committed events after $kills kills in ${LOOP_SECS} s: none missing, re-deliveries only suffixes"
else
	not_ok "crash loop: $committed events after $kills kills" "exit $rc: $(head -n 30 "$out.check")"
fi
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.2f", c / n }')
it_diag "row: scenario=crash-loop rounds=$kills committed=$committed consumed=$consumed ratio=$ratio $(sed 's/^checker: [A-Z]* //' <<<"$summary") $(load_row_extra) wall=$((SECONDS - t0))s"
it_stop_checked "the draining relay exits 0"

it_summary
