#!/usr/bin/env bash
# t100_delivery_order -- no faults: concurrent writers (pgbench, 4 clients)
# commit a few thousand events over 200 aggregates while the relay
# streams; about 10% of the transactions roll back and a quarter of them
# carry events of two aggregates. Every committed event must reach Kafka
# exactly once (no fault, so no duplicate is excusable), in per-aggregate
# commit order, none from a rolled-back transaction, with the outbox row's
# id; the slot's confirmed_flush_lsn must reach the last outbox commit and
# SIGTERM must end the relay with exit 0. The checker's self-test runs
# first, so the checker is proven able to fail.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"

it_scenario t100_delivery_order
aggs=200
clients=4
txns_per_client=900   # ~3,240 committed transactions, ~4,000 events
rate=360              # transactions/s over all clients: ~10 s of load
out=$IT_TEST_DIR/records.json

# -- the checker can fail
if out_st=$(python3 "$LOAD_CHECKER" --self-test 2>&1); then
	ok "checker self-test: reordered, missing, rolled-back, duplicate input all detected"
else
	not_ok "checker self-test: reordered, missing, rolled-back, duplicate input all detected" \
		"$out_st"
	it_summary
fi

# -- database, writer scheme, relay
load_init "$db" "$type" "$aggs"
it_write_config "$conf" "$db" status.interval.ms=500 stats.interval.ms=2000
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30

# -- the load, with the relay streaming
t0=$SECONDS
rc=0
"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
	-f "$IT_TEST_DIR/writer.pgbench" -c "$clients" -j 2 -t "$txns_per_client" \
	-R "$rate" "$db" >"$IT_TEST_DIR/pgbench.log" 2>&1 || rc=$?
it_check "pgbench ran $((clients * txns_per_client)) transactions" test "$rc" -eq 0
((rc == 0)) || it_diag "$(tail -n 20 "$IT_TEST_DIR/pgbench.log")"
it_diag "load took $((SECONDS - t0)) s"
it_check "relay alive after the load" it_relay_alive

load_expected
load_ids
committed=$LOAD_COMMITTED
rows=$(grep -c . "$IT_TEST_DIR/ids" || true)
it_diag "committed events: $committed (outbox rows: $rows)"
it_check "writer committed several thousand events" test "$committed" -ge 3000

# -- every event, once, in order
load_checked "$topic" 60 --ids "$IT_TEST_DIR/ids" --topic "$topic" --no-dups
rc=$LOAD_RC summary=$LOAD_SUMMARY
if ((rc == 0)); then
	ok "checker: all $committed events exactly once, in order, no rollback"
else
	not_ok "checker: all $committed events exactly once, in order, no rollback" \
		"exit $rc: $(head -n 40 "$out.check")
$(it_show_log "$log" 20)"
fi
it_diag "$summary"

# -- confirmed_flush_lsn reaches the last outbox commit: the newest pg_lsn
# header of the complete set is that commit's end LSN.
it_check_confirmed_past "$db" "$summary" "slot confirmed_flush_lsn reached the last outbox commit end"

# -- clean stop, and the relay's own count agrees
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
acked=$(sed -n 's/.*summary: .* acked=\([0-9]*\) .*/\1/p' "$log" | tail -n1)
it_check "relay summary: acked=$acked equals the $committed committed events" \
	test "${acked:-x}" = "$committed"
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
