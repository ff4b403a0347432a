#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/decode_cost.sh -- what a decoded event costs with wal2json
# (format-version 2) and with pgoutput (proto_version 1), on both sides of
# the replication connection. Prints figures, asserts nothing about speed.
#
#   1. The walsender: pg_recvlogical drains a slot of each plugin into
#      /dev/null, RUNS times (a fresh slot each run, all created before the
#      load, so every run decodes the same WAL). The walsender's CPU is the
#      growth of the postmaster's cutime + cstime across the run: the
#      postmaster reaps the walsender when pg_recvlogical disconnects, and
#      nothing else exits meanwhile (autovacuum off, no psql in between).
#   2. The relay's decoders: the first DECODE_EVENTS events of the same WAL,
#      recorded by both plugins (peeked, not consumed), decoded by
#      build/decode-bench under callgrind, which counts the instructions of
#      bench_run() alone: pgo_decode(), w2j_decode() (its fast scanner, as
#      the relay runs it) and w2j_decode_slow() (jansson on every line).
#
# Events are ~700 bytes of jsonb in transactions of ROWS_PER_TXN rows, as in
# make bench-smoke. Knobs: BENCH_EVENTS (200000), BENCH_ROWS_PER_TXN (100),
# BENCH_RUNS (3), BENCH_DECODE_EVENTS (10000), BENCH_PGPORT (25900),
# BENCH_KEEP=DIR (copy the recorded inputs there).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/env/lib.sh

EVENTS=${BENCH_EVENTS:-200000}
ROWS_PER_TXN=${BENCH_ROWS_PER_TXN:-100}
RUNS=${BENCH_RUNS:-3}
DECODE_EVENTS=${BENCH_DECODE_EVENTS:-10000}
PORT=${BENCH_PGPORT:-25900}
DB=bench
BENCH=build/decode-bench

if ! command -v valgrind >/dev/null; then
	echo "decode_cost.sh: needs valgrind (callgrind) for the decoder figures" >&2
	exit 2
fi
make -s WERROR=1 "$BENCH"

env_trap_cleanup
DIR=$(env_mktemp decode-cost)
env_register_tmpdir "$DIR"
chmod 755 "$DIR"

pg_start "$DIR" "$PORT" "$DB" >/dev/null
q() { psql_q "$PORT" "$DB" "$1"; }
q "ALTER SYSTEM SET autovacuum = off" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
psql_f "$PORT" "$DB" sql/outbox.sql >/dev/null
# What the wiring plan has --create-slot create (docs/pgoutput.md).
q "CREATE PUBLICATION outbox_pub FOR TABLE public.outbox WITH (publish = 'insert')" >/dev/null

# Every slot before the load: each starts at the same position.
for ((i = 1; i <= RUNS; i++)); do
	q "SELECT 'c' FROM pg_create_logical_replication_slot('w2j_$i', 'wal2json')" >/dev/null
	q "SELECT 'c' FROM pg_create_logical_replication_slot('pgo_$i', 'pgoutput')" >/dev/null
done
q "SELECT 'c' FROM pg_create_logical_replication_slot('w2j_peek', 'wal2json')" >/dev/null
q "SELECT 'c' FROM pg_create_logical_replication_slot('pgo_peek', 'pgoutput')" >/dev/null

TXNS=$(((EVENTS + ROWS_PER_TXN - 1) / ROWS_PER_TXN))
q "DO \$\$
BEGIN
	FOR t IN 1..$TXNS LOOP
		INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'bench', 'agg-' || (random() * 999)::int, 'BenchEvent',
		       jsonb_build_object('seq', g, 'at', clock_timestamp(),
		                          'pad', repeat('x', 600))
		FROM generate_series(1, $ROWS_PER_TXN) AS g;
		COMMIT;
	END LOOP;
END
\$\$" >/dev/null
END_LSN=$(q "SELECT pg_current_wal_lsn()")
# Logical decoding reads only WAL that is flushed: one more commit.
q "SELECT 'f' FROM pg_logical_emit_message(false, 'bench-end', '')" >/dev/null
WAL_MB=$(q "SELECT round(pg_wal_lsn_diff('$END_LSN', confirmed_flush_lsn) / 1048576.0)
            FROM pg_replication_slots WHERE slot_name = 'w2j_1'")
env_log "load: $((TXNS * ROWS_PER_TXN)) events in $TXNS transactions, $WAL_MB MB of WAL, up to $END_LSN"

PM_PID=$(head -n1 "$DIR/pg/data/postmaster.pid")
HZ=$(getconf CLK_TCK)
children_ticks() { awk '{ print $16 + $17 }' "/proc/$PM_PID/stat"; }

# The relay's wal2json options (repl_start_command() in src/pg/repl.c).
W2J_OPTS=(-o format-version=2 -o include-lsn=1 -o include-xids=1
	-o include-transaction=1 -o include-timestamp=1 -o actions=insert,update
	-o add-tables=public.outbox
	-o add-msg-prefixes=outbox-relay-heartbeat,outbox)
# The options the wiring plan gives START_REPLICATION for pgoutput.
PGO_OPTS=(-o proto_version=1 -o publication_names=outbox_pub
	-o messages=true)

# drain SLOT OPTS...: prints "wall_s cpu_s" for one pg_recvlogical run.
drain() {
	local slot=$1 t0 t1 c0 c1
	shift
	c0=$(children_ticks)
	t0=$(date +%s.%N)
	timeout 600 runuser -u postgres -- "$PG_BIN/pg_recvlogical" \
		-h 127.0.0.1 -p "$PORT" -U postgres -d "$DB" --slot "$slot" \
		--start --no-loop --endpos "$END_LSN" -f /dev/null "$@"
	t1=$(date +%s.%N)
	# The postmaster reaps the walsender a moment after it exits.
	for _ in $(seq 1 50); do
		c1=$(children_ticks)
		[[ $c1 != "$c0" ]] && break
		sleep 0.1
	done
	sleep 0.3
	c1=$(children_ticks)
	awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v hz="$HZ" \
		'BEGIN { printf "%.2f %.2f\n", b - a, (d - c) / hz }'
}

NEV=$((TXNS * ROWS_PER_TXN))
echo "## walsender, $NEV events ($ROWS_PER_TXN a transaction), $RUNS runs each"
echo "| plugin | run | wall s | walsender CPU s | CPU s / 1M events | events/s |"
echo "|---|---|---|---|---|---|"
for ((i = 1; i <= RUNS; i++)); do
	for plugin in w2j pgo; do
		if [[ $plugin == w2j ]]; then
			read -r wall cpu < <(drain "w2j_$i" "${W2J_OPTS[@]}")
			name="wal2json v2"
		else
			read -r wall cpu < <(drain "pgo_$i" "${PGO_OPTS[@]}")
			name="pgoutput proto 1"
		fi
		awk -v n="$name" -v r="$i" -v w="$wall" -v c="$cpu" -v e="$NEV" \
			'BEGIN { printf "| %s | %d | %.2f | %.2f | %.2f | %.0f |\n",
			         n, r, w, c, c * 1e6 / e, e / w }'
	done
done

# ------------------------------------------------------------ decoders
# upto_nchanges counts rows of output and ends on a transaction boundary:
# ROWS_PER_TXN + 2 rows (B, the inserts, C; pgoutput adds one Relation)
# per transaction on both sides.
NCH=$((DECODE_EVENTS / ROWS_PER_TXN * (ROWS_PER_TXN + 2)))
W2J_SQL_OPTS="'format-version', '2', 'include-lsn', '1', 'include-xids', '1',
	'include-transaction', '1', 'include-timestamp', '1', 'actions', 'insert,update',
	'add-tables', 'public.outbox',
	'add-msg-prefixes', 'outbox-relay-heartbeat,outbox'"
q "SELECT data FROM pg_logical_slot_peek_changes('w2j_peek', NULL, $NCH,
   $W2J_SQL_OPTS)" >"$DIR/w2j.jsonl"
q "SELECT lsn, xid, encode(data, 'hex') FROM pg_logical_slot_peek_binary_changes(
   'pgo_peek', NULL, $NCH, 'proto_version', '1', 'publication_names',
   'outbox_pub', 'messages', 'true')" | tr '|' ' ' >"$DIR/pgo.pgo"
if [[ -n ${BENCH_KEEP:-} ]]; then
	mkdir -p "$BENCH_KEEP"
	cp "$DIR/w2j.jsonl" "$DIR/pgo.pgo" "$BENCH_KEEP/"
fi

# cost MODE FILE: prints "records events instructions".
cost() {
	local out ir
	out=$(valgrind --tool=callgrind '--toggle-collect=bench_run*' \
		--callgrind-out-file="$DIR/cg.$1.out" "$BENCH" "$1" "$2" 2>"$DIR/cg.$1.log")
	ir=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$DIR/cg.$1.log")
	echo "$out" | sed -n "s/.*records=\([0-9]*\) events=\([0-9]*\).*/\1 \2 $ir/p"
}

echo
echo "## decoders (callgrind, instructions of bench_run() only)"
echo "| decoder | input bytes | records | events | instructions | per event |"
echo "|---|---|---|---|---|---|"
for mode in pgo w2j w2j-slow; do
	file=$DIR/w2j.jsonl
	[[ $mode == pgo ]] && file=$DIR/pgo.pgo
	bytes=$(wc -c <"$file")
	[[ $mode == pgo ]] && bytes=$(awk '{ n += length($3) / 2 } END { print n }' "$file")
	read -r recs evs ir < <(cost "$mode" "$file")
	awk -v m="$mode" -v b="$bytes" -v r="$recs" -v e="$evs" -v i="$ir" \
		'BEGIN { printf "| %s | %d | %d | %d | %d | %.0f |\n", m, b, r, e, i, i / e }'
done
