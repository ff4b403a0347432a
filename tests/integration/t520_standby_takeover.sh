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
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
# The writer stops by itself after 120 s, should the test not stop it.
LOAD_MAX_SECS=120

TAKEOVER_SECS=${TAKEOVER_SECS:-10}
KILLS=3
it_scenario t520_standby
aggs=20
load_init "$db" "$type" "$aggs" 5 20
it_write_config "$conf" "$db" standby.retry.ms=500 reconnect.backoff.ms=100

t0=$SECONDS
# pgbench bursts of 2 s (2 clients, 100 transactions/s) until load_stop.
load_start 100 2
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
	before=$(it_slot_pid "$db")
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
load_stop
it_check "writer ran without errors" test "$LOAD_FAILED" = 0
load_expected
load_checked "$topic" 90 --topic "$topic" --faults "$KILLS"
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
if ((rc == 0)); then
	ok "F19: $committed events over $KILLS takeovers: none missing, re-deliveries only suffixes"
else
	not_ok "F19: $committed events over $KILLS takeovers" "exit $rc: $(head -n 30 "$out.check")"
fi
it_diag "row: scenario=F19 rounds=$KILLS takeover_ms=${takes[*]:-none} $(sed 's/^checker: [A-Z]* //' <<<"$summary") $(load_row_extra) wall=$((SECONDS - t0))s"
rc=0
IT_RELAY_PID=$a
it_stop_relay || rc=$?
it_check "the last relay exits 0" test "$rc" -eq 0

it_summary
