#!/usr/bin/env bash
# t500_kill9_rounds -- reliability matrix F1: the relay is killed with
# SIGKILL at random points under the rich workload (checker.py --rich:
# rows, rows deleted again in their transaction, outbox_emit() messages,
# rollbacks, two-aggregate transactions, a ledger row and another table's
# row in every transaction, unicode and control characters in the
# payload, and pgbench traffic in another database), ROUNDS times
# (F1_ROUNDS, default 20; `make soak` runs 100), each after a random
# 0.2-2.5 s; then a last relay drains.
# The independent checker compares Kafka with the ledger rows PostgreSQL
# committed: nothing missing, nothing rolled back published, every note
# byte-exact, and per aggregate the records read 1, 2, 3, ... with
# re-deliveries only repeating a suffix, at most once per kill
# (--faults ROUNDS). consumed / committed is printed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"

ROUNDS=${F1_ROUNDS:-20}
it_scenario t500_kill9
other=t500_other
aggs=40
stopfile=$IT_TEST_DIR/writer.stop
it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
load_init "$db" "$type" "$aggs" 10 25 --rich
it_drop_db "$other" >/dev/null 2>&1 || true
it_sql postgres "CREATE DATABASE $other" >/dev/null
"$PG_BIN/pgbench" -i -q -s 1 -h 127.0.0.1 -p "$PGPORT" -U postgres "$other" >/dev/null 2>&1
it_write_config "$conf" "$db" outbox.emit.prefix=outbox reconnect.backoff.ms=100 \
	standby.retry.ms=200

noise() { # the other database's own traffic
	local deadline=$((SECONDS + 180))
	while [[ ! -e $stopfile ]] && ((SECONDS < deadline)); do
		"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres -c 1 -T 2 \
			-R 100 "$other" >/dev/null 2>&1 || true
	done
}
# The noise watches load_stop's stop file.
stop_writers() {
	load_stop
	touch "$stopfile"
	[[ -z ${noise_pid:-} ]] || wait "$noise_pid" 2>/dev/null || true
	noise_pid=
}
env_on_cleanup stop_writers

t0=$SECONDS
# pgbench bursts of 2 s (2 clients, 150 transactions/s) until load_stop.
load_start 150 2
noise &
noise_pid=$!
for ((r = 1; r <= ROUNDS; r++)); do
	load_kill9 "$conf" "$IT_TEST_DIR/relay.$r.log" 0.2 24
done
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
sleep 1
stop_writers
it_check "writers ran without errors" test "$LOAD_FAILED" = 0

load_expected
it_sql "$db" "SELECT agg, seq, id FROM agg_ledger" >"$IT_TEST_DIR/ledger"
committed=$(it_sql "$db" "SELECT count(*) FROM agg_ledger")
modes=$(it_sql "$db" "SELECT string_agg(mode || ':' || c, ' ' ORDER BY mode)
	FROM (SELECT mode, count(*) c FROM agg_ledger GROUP BY mode) m")
load_checked "$topic" 120 --ids "$IT_TEST_DIR/ledger" --topic "$topic" \
	--faults "$ROUNDS" --notes
rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
it_diag "event kinds (0 row, 1 row deleted again, 2 outbox_emit): $modes"
if ((rc == 0)); then
	ok "F1: $committed events after $ROUNDS kills: none missing, none leaked, notes exact, re-deliveries only suffixes"
else
	not_ok "F1: $committed events after $ROUNDS kills" "exit $rc: $(head -n 30 "$out.check")"
fi
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.2f", c / n }')
it_diag "row: scenario=F1 rounds=$ROUNDS committed=$committed consumed=$consumed ratio=$ratio $(sed 's/^checker: [A-Z]* //' <<<"$summary") $(load_row_extra) wall=$((SECONDS - t0))s"
it_stop_checked "the draining relay exits 0"
it_drop_db "$other" >/dev/null 2>&1 || true

it_summary
