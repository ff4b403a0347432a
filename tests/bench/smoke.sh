#!/usr/bin/env bash
# tests/bench/smoke.sh -- `make bench-smoke`: 100,000 events of about 700
# bytes through a real PostgreSQL 15 + wal2json and a real Kafka broker.
#
# Prints figures, asserts nothing about speed (shared, noisy machines):
#   1. backlog drain: events/s of the relay (slot -> Kafka acked), next to
#      pg_recvlogical draining a copy of the same slot with the same
#      wal2json options into a file (the decoding ceiling, same run), and
#      the ratio of the two; relay CPU seconds and events per CPU second.
#   2. live: pgbench writes the events while the relay runs; commit -> ack
#      latency p50/p99 from the relay's histogram (commit timestamp from
#      wal2json to Kafka's delivery report).
#   3. the relay's peak RSS in both phases.
#   4. exactly-once, briefly: the same relay with delivery.guarantee =
#      exactly-once on the same slot while pgbench writes
#      BENCH_EOS_EVENTS (10,000) events into a topic of their own; a
#      read_committed consumer (kcat) must see each exactly once, and the
#      topic must hold transaction markers (offsets the records do not
#      use). Its time is printed, not asserted (BENCH_EOS_EVENTS=0: no
#      phase 4).
#
# Environment: BENCH_EVENTS, BENCH_ROWS_PER_TXN, BENCH_PGPORT,
# BENCH_KAFKA_PORT, BENCH_LIVE_TPS, BENCH_EOS_EVENTS, and
# BENCH_RELAY_SET="KEY=VALUE ..."
# (relay settings appended to the relay's configuration in both phases,
# e.g. BENCH_RELAY_SET="inflight.max.events=20000 inflight.max.bytes=33554432").
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/env/lib.sh

EVENTS=${BENCH_EVENTS:-100000}
ROWS_PER_TXN=${BENCH_ROWS_PER_TXN:-10}
PGPORT_B=${BENCH_PGPORT:-25460}
KPORT_B=${BENCH_KAFKA_PORT:-19160}
RELAY=build/outbox-relay
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

env_trap_cleanup
DIR=$(env_mktemp bench)
env_register_tmpdir "$DIR"
chmod 755 "$DIR"
mkdir -m 777 "$DIR/out"

pg_start "$DIR" "$PGPORT_B" bench >/dev/null
kafka_start "$DIR" "$KPORT_B" >/dev/null
BROKERS=127.0.0.1:$KPORT_B
psql_f "$PGPORT_B" bench sql/outbox.sql >/dev/null
psql_q "$PGPORT_B" bench "SELECT pg_create_logical_replication_slot('bench_relay', 'wal2json')" >/dev/null

# The topic exists before timing starts (auto-created by a first record).
echo warmup | kcat -b "$BROKERS" -P -t outbox.event.bench -k warmup 2>/dev/null
kcat -b "$BROKERS" -L -t outbox.event.bench >/dev/null 2>&1

# One event: ~700 bytes of jsonb payload, 1000 aggregates.
cat >"$DIR/insert.sql" <<SQL
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
SELECT 'bench', 'agg-' || (random() * 999)::int, 'BenchEvent',
       jsonb_build_object('seq', g, 'at', clock_timestamp(),
                          'pad', repeat('x', 600))
FROM generate_series(1, $ROWS_PER_TXN) g;
SQL
chmod 644 "$DIR/insert.sql"
TXNS=$((EVENTS / ROWS_PER_TXN))

write_conf() {
	cat >"$1" <<CONF
pg.conninfo = host=127.0.0.1 port=$PGPORT_B dbname=bench user=postgres
kafka.bootstrap.servers = $BROKERS
slot.name = bench_relay
http.listen = 127.0.0.1:0
status.interval.ms = 1000
stats.interval.ms = 250
CONF
	local kv
	# shellcheck disable=SC2086 # BENCH_RELAY_SET: KEY=VALUE words
	for kv in ${BENCH_RELAY_SET:-}; do
		printf '%s = %s\n' "${kv%%=*}" "${kv#*=}" >>"$1"
	done
}

# Waits until the relay's stats line reports N acked events.
wait_acked() {
	local log=$1 n=$2 secs=$3 deadline last
	deadline=$((SECONDS + secs))
	while ((SECONDS < deadline)); do
		last=$(grep -o 'acked=[0-9]*' "$log" | tail -1 | cut -d= -f2 || true)
		[[ -n $last && $last -ge $n ]] && return 0
		sleep 0.05
	done
	echo "bench: timed out waiting for $n acked events (last: ${last:-0})" >&2
	tail -5 "$log" >&2
	return 1
}

cpu_seconds() { # utime + stime of PID, in seconds
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}

pgbench_load() { # extra pgbench args
	runuser -u postgres -- "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PGPORT_B" -n \
		-f "$DIR/insert.sql" -c 4 -j 2 -t $((TXNS / 4)) "$@" bench >/dev/null
}

# ---------------------------------------------------------------- 1. drain
# The backlog is written while nothing reads the slot, then a copy of the
# slot is taken so both readers start from the same position.
pgbench_load
END_LSN=$(psql_q "$PGPORT_B" bench "SELECT pg_current_wal_lsn()")
psql_q "$PGPORT_B" bench "SELECT pg_copy_logical_replication_slot('bench_relay', 'bench_peer')" >/dev/null

write_conf "$DIR/relay.conf"
t0=$(date +%s.%N)
"$RELAY" --config "$DIR/relay.conf" 2>"$DIR/drain.log" &
RPID=$!
env_on_cleanup "kill -9 $RPID 2>/dev/null || true"
wait_acked "$DIR/drain.log" "$EVENTS" 300
t1=$(date +%s.%N)
DRAIN_CPU=$(cpu_seconds "$RPID")
kill -TERM "$RPID"; wait "$RPID" || true
DRAIN_RSS=$(grep -o 'peak_rss_kb=[0-9]*' "$DIR/drain.log" | cut -d= -f2)

# Same options as the relay sends (stream_spec.c, rendered by ss_start_command()).
t2=$(date +%s.%N)
runuser -u postgres -- "$PG_BIN/pg_recvlogical" -h 127.0.0.1 -p "$PGPORT_B" \
	-d bench --slot bench_peer --start --no-loop -f "$DIR/out/peer.jsonl" \
	--endpos "$END_LSN" -o format-version=2 -o include-lsn=1 \
	-o include-xids=1 -o include-transaction=1 -o include-timestamp=1 \
	-o actions=insert -o add-tables=public.outbox
t3=$(date +%s.%N)
PEER_ROWS=$(grep -c '"action":"I"' "$DIR/out/peer.jsonl" || true)

# ---------------------------------------------------------------- 2. live
"$RELAY" --config "$DIR/relay.conf" 2>"$DIR/live.log" &
RPID=$!
env_on_cleanup "kill -9 $RPID 2>/dev/null || true"
# Warm-up: a new producer learns a topic's metadata on librdkafka's 1 s
# topic scan, so the first event of a fresh process waits up to a second.
# 100 events (0.1% of the histogram) take that hit before the measurement.
psql_q "$PGPORT_B" bench "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	SELECT 'bench', 'warm-' || g, 'Warmup', '{}'::jsonb FROM generate_series(1, 100) g" >/dev/null
wait_acked "$DIR/live.log" 100 60
l0=$(date +%s.%N)
pgbench_load -R "${BENCH_LIVE_TPS:-1000}"
wait_acked "$DIR/live.log" $((EVENTS + 100)) 300
l1=$(date +%s.%N)
LIVE_CPU=$(cpu_seconds "$RPID")
kill -TERM "$RPID"; wait "$RPID" || true
LIVE_RSS=$(grep -o 'peak_rss_kb=[0-9]*' "$DIR/live.log" | cut -d= -f2)
LAT=$(grep 'summary: state' "$DIR/live.log" | grep -o 'latency_p[0-9]*_ms=[0-9.]*\|latency_max_ms=[0-9.]*' | tr '\n' ' ')

# Every event must have reached Kafka (plus the warm-up record).
IN_KAFKA=$(kcat -b "$BROKERS" -C -t outbox.event.bench -o beginning -e -q -f '.\n' 2>/dev/null | wc -l)

# ---------------------------------------------------------------- 4. exactly-once
EOS_EVENTS=${BENCH_EOS_EVENTS:-10000}
EOS_LINE=
if ((EOS_EVENTS > 0)); then
	# Their own topic (aggregate type "eos"), every event numbered by a
	# sequence of its own: duplicates and gaps are countable.
	psql_q "$PGPORT_B" bench "CREATE SEQUENCE IF NOT EXISTS bench_eos_seq" >/dev/null
	cat >"$DIR/eos.sql" <<SQL
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
SELECT 'eos', 'agg-' || (random() * 999)::int, 'BenchEvent',
       jsonb_build_object('n', nextval('bench_eos_seq'), 'pad', repeat('x', 600))
FROM generate_series(1, $ROWS_PER_TXN) g;
SQL
	chmod 644 "$DIR/eos.sql"
	write_conf "$DIR/relay-eos.conf"
	echo "delivery.guarantee = exactly-once" >>"$DIR/relay-eos.conf"
	"$RELAY" --config "$DIR/relay-eos.conf" 2>"$DIR/eos.log" &
	RPID=$!
	env_on_cleanup "kill -9 $RPID 2>/dev/null || true"
	e0=$(date +%s.%N)
	runuser -u postgres -- "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PGPORT_B" -n \
		-f "$DIR/eos.sql" -c 2 -j 2 -t $((EOS_EVENTS / ROWS_PER_TXN / 2)) \
		-R "${BENCH_LIVE_TPS:-1000}" bench >/dev/null
	eos_count() { # events a read_committed consumer sees: "records distinct"
		kcat -b "$BROKERS" -C -t outbox.event.eos -o beginning -e -q \
			-X isolation.level=read_committed -f '%s\n' 2>/dev/null |
			{ grep -o '"n": *[0-9]*' || true; } |
			awk '{ n++; if (!seen[$NF]++) d++ } END { printf "%d %d", n, d }' ||
			true # kcat fails while the topic does not exist
	}
	deadline=$((SECONDS + 120))
	EOS_SEEN="0 0"
	while ((SECONDS < deadline)); do
		EOS_SEEN=$(eos_count)
		((${EOS_SEEN% *} >= EOS_EVENTS)) && break
		if ! kill -0 "$RPID" 2>/dev/null; then
			echo "bench: the exactly-once relay exited" >&2
			tail -20 "$DIR/eos.log" >&2
			exit 1
		fi
		sleep 0.5
	done
	e1=$(date +%s.%N)
	sleep 2 # duplicates would come after the last first copy
	EOS_SEEN=$(eos_count)
	EOS_CPU=$(cpu_seconds "$RPID")
	kill -TERM "$RPID"; wait "$RPID" || true
	# Transaction markers: offsets in the topic that no record uses.
	EOS_SLOTS=$(kcat -b "$BROKERS" -C -t outbox.event.eos -o beginning -e -q \
		-X isolation.level=read_committed -f '%p %o\n' 2>/dev/null |
		awk '{ if ($2 + 1 > hi[$1]) hi[$1] = $2 + 1; n++ } END { for (p in hi) s += hi[p]; printf "%d", s - n }' ||
		true)
	EOS_LINE=$(printf 'exactly-once: %d events written, a read_committed consumer saw %s records, %s distinct; %s offsets held by transaction markers; %.2f s from the first write to the last visible; relay CPU %.2f s' \
		"$EOS_EVENTS" "${EOS_SEEN% *}" "${EOS_SEEN#* }" "$EOS_SLOTS" "$(awk -v a="$e0" -v b="$e1" 'BEGIN { print b - a }')" "$EOS_CPU")
	if [[ $EOS_SEEN != "$EOS_EVENTS $EOS_EVENTS" || $EOS_SLOTS -lt 1 ]]; then
		echo "bench-smoke: $EOS_LINE" >&2
		echo "bench-smoke: exactly-once: want $EOS_EVENTS records, each once, and markers" >&2
		tail -20 "$DIR/eos.log" >&2
		exit 1
	fi
fi

python3 - "$EVENTS" "$t0" "$t1" "$t2" "$t3" "$PEER_ROWS" "$DRAIN_CPU" \
	"$DRAIN_RSS" "$l0" "$l1" "$LIVE_CPU" "$LIVE_RSS" "$IN_KAFKA" "$LAT" \
	"${BENCH_LIVE_TPS:-1000}" "$ROWS_PER_TXN" <<'PY'
import sys
a = sys.argv[1:]
n = int(a[0]); t0, t1, t2, t3 = map(float, a[1:5]); peer = int(a[5])
dcpu = float(a[6]); drss = int(a[7]); l0, l1 = float(a[8]), float(a[9])
lcpu = float(a[10]); lrss = int(a[11]); inkafka = int(a[12]); lat = a[13]
tps = int(a[14]); rows = int(a[15])
relay_rate = n / (t1 - t0)
peer_rate = peer / (t3 - t2)
print(f"bench-smoke: {n} events of ~700 B, {rows} per transaction, 1000 aggregates")
print(f"drain  relay:          {relay_rate:9.0f} events/s  ({t1 - t0:.2f} s, slot -> Kafka acked, acks=all)")
print(f"drain  pg_recvlogical: {peer_rate:9.0f} rows/s    ({t3 - t2:.2f} s, same slot data -> file)")
print(f"drain  ratio relay / pg_recvlogical: {relay_rate / peer_rate:.2f}")
print(f"drain  relay CPU: {dcpu:.2f} s = {n / dcpu if dcpu else float('inf'):.0f} events per relay CPU-second")
print(f"live   offered {tps * rows} events/s by pgbench; all acked after {l1 - l0:.2f} s; relay CPU {lcpu:.2f} s")
print(f"live   commit->ack latency (incl. 100 warm-up events): {lat.strip()}")
print(f"peak RSS: drain {drss / 1024:.1f} MiB, live {lrss / 1024:.1f} MiB")
print(f"records in Kafka: {inkafka} (expected >= {2 * n + 101}: both phases + warm-ups)")
if inkafka < 2 * n + 101:
    sys.exit("bench-smoke: events missing in Kafka")
PY
[[ -z $EOS_LINE ]] || echo "$EOS_LINE"
