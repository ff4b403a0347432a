#!/usr/bin/env bash
# t130_kill9_loop -- crash safety under load. A background writer (pgbench
# bursts over 50 aggregates, ~10% rollbacks, some two-aggregate
# transactions; bounded by a stop file and 60 s) runs while the relay is
# started and killed with SIGKILL five times, each after a random 0.5-3 s;
# then a last relay drains. Asserts:
#  - after each kill, every event whose commit end is at or below the
#    slot's confirmed_flush_lsn is already in Kafka (a Kafka snapshot taken
#    right after the kill; checked once the events' LSNs are known);
#  - confirmed_flush_lsn never goes backwards across the kills;
#  - in the end every committed event is in Kafka, in per-aggregate order,
#    none rolled back (checker; duplicates allowed and reported);
#  - the draining relay confirms past the last commit and exits 0.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
# The writer stops by itself after 60 s, should the test not stop it.
LOAD_MAX_SECS=60

it_scenario t130_kill9_loop
aggs=50
rounds=5

# it_consume, retried: right after the first start the topic may be
# between auto-creation and having a leader.
snapshot() {
	local topic=$1 out=$2 i
	for ((i = 0; i < 5; i++)); do
		it_consume "$topic" "$out" 2>"$out.err" && return 0
		sleep 1
	done
	return 1
}

load_init "$db" "$type" "$aggs"
it_write_config "$conf" "$db" status.interval.ms=500 stats.interval.ms=1000 \
	standby.retry.ms=200 reconnect.backoff.ms=100

# pgbench bursts of 2 s (3 clients, 120 transactions/s) until load_stop;
# a burst that fails is counted (the test then fails: the writer must not
# err).
load_start 120 3

covered=()
prev=
monotonic=1
for ((r = 1; r <= rounds; r++)); do
	log=$IT_TEST_DIR/relay.$r.log
	# 0.5 .. 3.0 s
	load_kill9 "$conf" "$log" 0.5 26
	# The relay is gone: nothing moves the slot until the next one starts.
	c=$(it_slot_confirmed "$db" "$db")
	snap=$IT_TEST_DIR/snapshot.$r.json
	if snapshot "$topic" "$snap"; then
		covered+=(--covered "$c=$snap")
	else
		not_ok "round $r: Kafka snapshot after the kill" "$(cat "$snap.err")"
	fi
	if [[ -n $prev ]] && ! lsn_ge "$c" "$prev"; then
		monotonic=
		it_diag "round $r: confirmed_flush_lsn went back from $prev to $c"
	fi
	prev=$c
	streamed=$(grep -c 'streaming from slot' "$log" || true)
	acked=$(grep -o 'stats: .* acked=[0-9]*' "$log" | tail -n1 | sed 's/.*acked=//' || true)
	it_diag "round $r: SIGKILL after ${LOAD_NAP}s (sessions $streamed, last stats acked=${acked:--}), confirmed $c, $(it_count "$snap") records in Kafka"
done
if [[ -n $monotonic ]]; then
	ok "confirmed_flush_lsn never went backwards over $rounds kills"
else
	not_ok "confirmed_flush_lsn never went backwards over $rounds kills"
fi

# -- the last relay drains; the writer stops while it streams
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
sleep 2
load_stop
it_check "writer ran without errors ($LOAD_BURSTS bursts, $LOAD_FAILED failed)" \
	test "$LOAD_FAILED" = 0
it_check "final relay alive" it_relay_alive

load_expected
load_ids
load_checked "$topic" 90 --ids "$IT_TEST_DIR/ids" --topic "$topic" "${covered[@]}"
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
if ((rc == 0)); then
	ok "checker: all $committed events after $rounds kills, in order, none rolled back, confirmed ones in Kafka at every kill"
else
	not_ok "checker: all $committed events after $rounds kills, in order, none rolled back, confirmed ones in Kafka at every kill" \
		"exit $rc: $(head -n 40 "$out.check")
$(it_show_log "$log" 20)"
fi
it_diag "$summary"
dups=$(load_stat duplicates)
it_diag "duplicates after $rounds x SIGKILL: ${dups:-?} (allowed: at-least-once)"

it_check_confirmed_past "$db" "$summary" "final relay confirmed past the last outbox commit"
it_stop_checked "final relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
