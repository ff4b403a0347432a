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

ROUNDS=${F1_ROUNDS:-20}
CHECKER=$IT_ROOT/tests/integration/checker.py
db=t500_kill9
other=t500_other
type=t500_$(date +%s)
topic=outbox.event.$type
aggs=40
stopfile=$IT_TEST_DIR/writer.stop
it_setup_db "$db"
it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
python3 "$CHECKER" setup-sql --type "$type" --aggs "$aggs" --rich | it_sql_file "$db" -
python3 "$CHECKER" pgbench-script --aggs "$aggs" --rollback-pct 10 --multi-pct 25 \
	--rich >"$IT_TEST_DIR/writer.pgbench"
it_drop_db "$other" >/dev/null 2>&1 || true
it_sql postgres "CREATE DATABASE $other" >/dev/null
"$PG_BIN/pgbench" -i -q -s 1 -h 127.0.0.1 -p "$PGPORT" -U postgres "$other" >/dev/null 2>&1
conf=$IT_TEST_DIR/relay.conf
it_write_config "$conf" "$db" outbox.emit.prefix=outbox reconnect.backoff.ms=100 \
	standby.retry.ms=200

writer() { # bursts of 2 s until the stop file, 180 s at most
	local deadline=$((SECONDS + 180)) n=0
	while [[ ! -e $stopfile ]] && ((SECONDS < deadline)); do
		n=$((n + 1))
		"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
			-f "$IT_TEST_DIR/writer.pgbench" -c 2 -j 1 -T 2 -R 150 "$db" \
			>>"$IT_TEST_DIR/pgbench.log" 2>&1 ||
			echo "burst $n failed" >>"$IT_TEST_DIR/writer.err"
	done
}
noise() { # the other database's own traffic
	local deadline=$((SECONDS + 180))
	while [[ ! -e $stopfile ]] && ((SECONDS < deadline)); do
		"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres -c 1 -T 2 \
			-R 100 "$other" >/dev/null 2>&1 || true
	done
}
stop_writers() {
	touch "$stopfile"
	[[ -z ${writer_pid:-} ]] || wait "$writer_pid" 2>/dev/null || true
	[[ -z ${noise_pid:-} ]] || wait "$noise_pid" 2>/dev/null || true
	writer_pid= noise_pid=
}
env_on_cleanup stop_writers

t0=$SECONDS
writer &
writer_pid=$!
noise &
noise_pid=$!
for ((r = 1; r <= ROUNDS; r++)); do
	it_start_relay "$conf" "$IT_TEST_DIR/relay.$r.log"
	nap=$(awk -v x="$RANDOM" 'BEGIN { printf "%.1f", 0.2 + (x % 24) / 10 }')
	sleep "$nap"
	kill -9 "$IT_RELAY_PID" 2>/dev/null || true
	wait "$IT_RELAY_PID" 2>/dev/null || true
	IT_RELAY_PID=
done
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
sleep 1
stop_writers
it_check "writers ran without errors" test ! -e "$IT_TEST_DIR/writer.err"

it_sql "$db" "SELECT agg, n FROM agg_seq ORDER BY id" >"$IT_TEST_DIR/expected"
it_sql "$db" "SELECT agg, seq, id FROM agg_ledger" >"$IT_TEST_DIR/ledger"
committed=$(it_sql "$db" "SELECT count(*) FROM agg_ledger")
modes=$(it_sql "$db" "SELECT string_agg(mode || ':' || c, ' ' ORDER BY mode)
	FROM (SELECT mode, count(*) c FROM agg_ledger GROUP BY mode) m")
out=$IT_TEST_DIR/records.json
rc=0
it_wait_checked "$topic" "$out" 120 --expected "$IT_TEST_DIR/expected" \
	--ids "$IT_TEST_DIR/ledger" --topic "$topic" --faults "$ROUNDS" --notes || rc=$?
summary=$(grep '^checker:' "$out.check" | head -n1 || true)
it_diag "$summary"
it_diag "event kinds (0 row, 1 row deleted again, 2 outbox_emit): $modes"
if ((rc == 0)); then
	ok "F1: $committed events after $ROUNDS kills: none missing, none leaked, notes exact, re-deliveries only suffixes"
else
	not_ok "F1: $committed events after $ROUNDS kills" "exit $rc: $(head -n 30 "$out.check")"
fi
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.2f", c / n }')
it_diag "row: scenario=F1 rounds=$ROUNDS committed=$committed consumed=$consumed ratio=$ratio $(sed 's/^checker: [A-Z]* //' <<<"$summary") wall=$((SECONDS - t0))s"
rc=0
it_stop_relay || rc=$?
it_check "the draining relay exits 0" test "$rc" -eq 0
it_drop_db "$other" >/dev/null 2>&1 || true

it_summary
