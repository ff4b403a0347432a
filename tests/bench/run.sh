#!/usr/bin/env bash
# tests/bench/run.sh -- `make bench` / `make bench-full`: the relay beside
# Debezium (PostgreSQL connector 3.6.1.Final, pgoutput, Outbox Event
# Router, on a Kafka Connect 4.3.0 standalone worker) on one PostgreSQL 15
# and one KRaft Kafka 3.9.1 broker, one system at a time, with the decode
# ceilings (pg_recvlogical, wal2json v2 and pgoutput proto 1, into
# /dev/null) and the producer ceiling (bench-tool produce) measured in the
# same run. Figures only: nothing here asserts a speed. Correctness is
# checked in the same run (every event once, per-key order).
#
#   BENCH_PROFILE=quick (default, ~15 min) | full (~1.5 h)   see docs/benchmarks.md
#   BENCH_ONLY="w1 w2 w5 w3 w6 knobs"   the workloads to run (profile's
#                                        list by default)
#   BENCH_OUT=DIR     results (default build/bench/STAMP): runs.jsonl, plots
#   BENCH_DOC=FILE    the report written from them (docs/benchmarks.md;
#                     empty: none)
#   BENCH_KEEP_RAW=1  keep the consumers' per-record files
#   BENCH_RELAY_SET="KEY=VALUE ..."  relay settings for every workload
#                     (knobs adds its own after them)
#   BENCH_RDKAFKA_LIB=DIR  the librdkafka of the -rdk systems (the relay's
#                     binary on that library; default build/deps/
#                     librdkafka-2.12.1/lib, which make bench-deps builds
#                     with tests/env/rdkafka.sh): without it they are
#                     skipped, with a line saying so
#   OUTBOXX_BIN=PATH  an Outboxx binary (tests/bench/outboxx.sh): the W1
#                     system "outboxx", only when asked for in
#                     BENCH_W1_SYSTEMS (skipped, with a line saying so,
#                     when this is not set); OUTBOXX_LIBDIR=DIR runs it
#                     on the librdkafka in DIR
#
# Workloads (tests/bench/README or docs/benchmarks.md):
#   w1  drain: BENCH_W1_EVENTS (1M) events of ~700 B in 100-row
#       transactions written while nothing reads the slots (created before
#       the load), then each system drains a copy of them
#   w2  steady load at BENCH_W2_RATES events/s (pgbench -R, 10 rows a
#       transaction), BENCH_W2_SECS each, a consumer timing every record
#   w3  one 1M-row transaction beside 1k events/s of background load
#   w5  BENCH_W5_COUNT times: BENCH_W5_IDLE s idle, one single-row commit,
#       from one session (BENCH_W5_CLIENT=session, pgbench) or from a new
#       psql each (BENCH_W5_CLIENT=psql: connection start and exit on the
#       machine's two cores beside the commit)
#   w6  the outbox as 5 % of a busy database's transactions
#   knobs  w2 at 5k events/s for the relay with producer settings varied
#       (the broker-CPU investigation), BENCH_KNOBS
#   eos  what delivery.guarantee = exactly-once costs beside at-least-once,
#       the two modes alternating in every round (BENCH_ROUNDS): a drain
#       of BENCH_EOS_EVENTS (300k) events, then steady load at
#       BENCH_EOS_RATES (1000 5000) for BENCH_EOS_SECS (10) each; every
#       figure from a read_committed consumer (commit -> visible),
#       relay / walsender / broker CPU per event, relay RSS, Kafka
#       transactions. The drain has BENCH_EOS_DRAIN_ROUNDS (5, or
#       BENCH_ROUNDS when more): short and the noisiest figure. Each
#       drain is followed by Kafka's own cost of its mode: bench-tool
#       produce of as many records, plain or transactional with
#       BENCH_EOS_CEIL_TXN (5000) records a transaction.
#       BENCH_EOS_PERF=1: perf record -g of the relay through every drain
#       and series (OUT/raw/TAG.perf). BENCH_EOS_LIBDIR=DIR: both
#       modes' relay on the librdkafka in DIR (build/deps/librdkafka-
#       2.12.1/lib: Debian's 2.0.2 spins its main thread through every
#       transaction). BENCH_EOS_SET: the exactly-once mode's settings
#       ("delivery.guarantee=exactly-once"), BENCH_EOS_ALO_SET the other's
#       (empty: the default, at-least-once)
#   eos-sweep  (BENCH_EOS_SWEEP=1 adds it to the quick profile) the
#       transaction knobs: every delivery.transaction.interval.ms of
#       BENCH_EOS_SWEEP_INTERVALS (10 50 100 250 1000) with every
#       delivery.transaction.max.events of BENCH_EOS_SWEEP_MAX (500 5000
#       50000), at-least-once first and last as the reference; each point
#       one steady window at BENCH_EOS_SWEEP_RATE (5000) for
#       BENCH_EOS_SWEEP_SECS (6) and one drain of BENCH_EOS_SWEEP_EVENTS
#       (100k), BENCH_EOS_SWEEP_ROUNDS (1) times;
#       BENCH_EOS_SWEEP_POINTS="NAME:KEY=VALUE,... ..." replaces the grid
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
source tests/env/lib.sh

PROFILE=${BENCH_PROFILE:-quick}
case $PROFILE in
quick)
	: "${BENCH_ROUNDS:=3}"
	: "${BENCH_W1_EVENTS:=1000000}"
	: "${BENCH_W1_SYSTEMS:=ceil-w2j ceil-pgo producer relay relay-rdk relay-pgo relay-pgo-rdk outboxx dbz-tuned dbz-defaults}"
	: "${BENCH_W1_ONCE:=dbz-defaults}"
	: "${BENCH_W2_RATES:=1000 5000 10000}"
	: "${BENCH_W2_SECS:=20}"
	: "${BENCH_W2_SYSTEMS:=relay relay-pgo relay-pgo-rdk dbz-tuned}"
	: "${BENCH_W5_COUNT:=20}"
	: "${BENCH_W5_IDLE:=1}"
	: "${BENCH_W5_SYSTEMS:=kafka-floor relay relay-pgo dbz-tuned}"
	if [[ -n ${BENCH_EOS_SWEEP:-} ]]; then
		: "${BENCH_ONLY:=w1 w2 w5 eos eos-sweep}"
	fi
	: "${BENCH_ONLY:=w1 w2 w5 eos}"
	;;
full)
	: "${BENCH_ONLY:=w1 w2 w3 w5 w6 knobs eos eos-sweep}"
	: "${BENCH_ROUNDS:=3}"
	: "${BENCH_W1_EVENTS:=2000000}"
	: "${BENCH_W1_SYSTEMS:=ceil-w2j ceil-pgo producer relay relay-rdk relay-pgo relay-pgo-rdk outboxx dbz-tuned dbz-defaults}"
	: "${BENCH_W1_ONCE:=}"
	: "${BENCH_W2_RATES:=1000 5000 10000 20000}"
	: "${BENCH_W2_SECS:=60}"
	: "${BENCH_W2_SYSTEMS:=relay relay-pgo relay-rdk relay-pgo-rdk dbz-tuned dbz-defaults}"
	: "${BENCH_W5_COUNT:=100}"
	: "${BENCH_W5_IDLE:=3}"
	: "${BENCH_W5_SYSTEMS:=kafka-floor relay relay-pgo dbz-tuned dbz-defaults}"
	;;
*)
	echo "bench: BENCH_PROFILE must be quick or full" >&2
	exit 2
	;;
esac
: "${BENCH_W5_CLIENT:=session}"
case $BENCH_W5_CLIENT in
session | psql) ;;
*)
	echo "bench: BENCH_W5_CLIENT must be session or psql" >&2
	exit 2
	;;
esac
: "${BENCH_W3_SYSTEMS:=relay relay-pgo dbz-tuned}"
: "${BENCH_W3_ROWS:=1000000}"
: "${BENCH_W6_SYSTEMS:=relay relay-pgo dbz-tuned}"
: "${BENCH_W6_TPS:=2000}"
: "${BENCH_W6_SECS:=30}"
: "${BENCH_KNOBS:=default linger20:kafka.linger.ms=20 linger50:kafka.linger.ms=50 lz4-linger20:kafka.linger.ms=20,kafka.compression.type=lz4 noledger:slot.ledger.topic=}"
: "${BENCH_KNOBS_RATE:=5000}"
: "${BENCH_KNOBS_SECS:=20}"
: "${BENCH_JMX_PORT:=18385}"
: "${BENCH_EOS_EVENTS:=300000}"
: "${BENCH_EOS_DRAIN_ROUNDS:=$((BENCH_ROUNDS > 5 ? BENCH_ROUNDS : 5))}"
: "${BENCH_EOS_PERF:=}"
: "${BENCH_EOS_CEIL_TXN:=5000}"
: "${BENCH_EOS_LIBDIR:=}"
: "${BENCH_EOS_RATES:=1000 5000}"
: "${BENCH_EOS_SECS:=10}"
: "${BENCH_EOS_SET=delivery.guarantee=exactly-once}"
: "${BENCH_EOS_ALO_SET=}"
: "${BENCH_EOS_SWEEP_INTERVALS:=10 50 100 250 1000}"
: "${BENCH_EOS_SWEEP_MAX:=500 5000 50000}"
: "${BENCH_EOS_SWEEP_RATE:=5000}"
: "${BENCH_EOS_SWEEP_SECS:=6}"
: "${BENCH_EOS_SWEEP_EVENTS:=100000}"
: "${BENCH_EOS_SWEEP_ROUNDS:=1}"
if [[ -z ${BENCH_EOS_SWEEP_POINTS:-} ]]; then
	BENCH_EOS_SWEEP_POINTS=
	for _i in $BENCH_EOS_SWEEP_INTERVALS; do
		for _m in $BENCH_EOS_SWEEP_MAX; do
			BENCH_EOS_SWEEP_POINTS+="i$_i-m$_m:delivery.transaction.interval.ms=$_i,delivery.transaction.max.events=$_m "
		done
	done
fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${BENCH_OUT:-$REPO/build/bench/$STAMP}
DOC=${BENCH_DOC-$REPO/docs/benchmarks.md}
PY=${BENCH_PYTHON:-/usr/bin/python3}
mkdir -p "$OUT/raw"
RUNS=$OUT/runs.jsonl
: >"$RUNS"

source tests/bench/lib.sh

: "${BENCH_RDKAFKA_LIB:=$REPO/build/deps/librdkafka-2.12.1/lib}"
if [[ ! -e $BENCH_RDKAFKA_LIB/librdkafka.so.1 ]]; then
	bench_log "no librdkafka in $BENCH_RDKAFKA_LIB (tests/env/rdkafka.sh builds it): the -rdk systems are skipped"
	for v in BENCH_W1_SYSTEMS BENCH_W2_SYSTEMS BENCH_W3_SYSTEMS BENCH_W5_SYSTEMS BENCH_W6_SYSTEMS; do
		keep=
		for s in ${!v}; do
			[[ $s == *-rdk ]] || keep+=" $s"
		done
		printf -v "$v" '%s' "${keep# }"
	done
fi

for b in "$RELAY_BIN" "$BENCH_TOOL"; do
	[[ -x $b ]] || {
		echo "bench: $b missing: make all build/bench-tool" >&2
		exit 2
	}
done

env_trap_cleanup
BENCH_DIR=$(env_mktemp outbox-relay-bench)
env_register_tmpdir "$BENCH_DIR"

# The broker's request counters come through JMX on loopback
# (tests/bench/jmx/JmxProbe.java, compiled here: needs a JDK's javac).
JMX_CP=$REPO/build/bench
if [[ ! -f $JMX_CP/JmxProbe.class || tests/bench/jmx/JmxProbe.java -nt $JMX_CP/JmxProbe.class ]]; then
	mkdir -p "$JMX_CP"
	javac -d "$JMX_CP" tests/bench/jmx/JmxProbe.java
fi
jmx() { java -cp "$JMX_CP" JmxProbe "$BENCH_JMX_PORT" 2>/dev/null || echo "jmx=unavailable"; }

bench_log "profile $PROFILE: ${BENCH_ONLY}; results in $OUT"
pg_start "$BENCH_DIR" "$BENCH_PGPORT" bench >/dev/null
KAFKA_HEAP=1g JAVA_TOOL_OPTIONS="-Dcom.sun.management.jmxremote.port=$BENCH_JMX_PORT -Dcom.sun.management.jmxremote.rmi.port=$BENCH_JMX_PORT -Dcom.sun.management.jmxremote.authenticate=false -Dcom.sun.management.jmxremote.ssl=false -Dcom.sun.management.jmxremote.host=127.0.0.1 -Djava.rmi.server.hostname=127.0.0.1" \
	kafka_start "$BENCH_DIR" "$BENCH_KPORT" >/dev/null
bench_pg_setup

machine() {
	printf '%s, %s cores, %s, %s; PostgreSQL %s, Kafka 3.9.1 (KRaft, 1 node, 3 partitions), librdkafka %s, %s' \
		"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" "$(nproc)" \
		"$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)" \
		"$(uname -r)" "$(q 'SHOW server_version')" \
		"$(dpkg-query -W -f='${Version}' librdkafka1 2>/dev/null || echo '?')" \
		"$(java -version 2>&1 | head -1)"
}
MACHINE=$(machine)

# One JSON object per measured run; tests/bench/report.py reads them.
emit() { # key=value... (values are strings unless they parse as JSON)
	"$PY" - "$@" >>"$RUNS" <<'PY'
import json, sys
o = {}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    try:
        o[k] = json.loads(v)
    except ValueError:
        o[k] = v
print(json.dumps(o))
PY
}

seqs() { # the writers' sequence positions, "c:last_value ..."
	local c out=
	for c in 0 1 2 3 4 5 6 7 50 99; do
		out+="$c:$(q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM bench_seq_$c") "
	done
	echo "$out"
}

# pgbench scripts: every event's payload carries its writer (c), the
# writer's sequence number (s: per writer in commit order, hence per key,
# since a key belongs to one writer) and its statement time (t, epoch
# microseconds: clock_timestamp(), under a millisecond before the commit
# for the small transactions). ~700 B per event: 600 B of padding.
ev_select() { # ROWS [CLIENT_EXPR]
	local c=${2:-:client_id}
	cat <<-SQL
	INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	SELECT 'bench', 'a' || ($c * 1000 + (random() * 999)::int), 'BenchEvent',
	       jsonb_build_object('c', $c, 's', nextval('bench_seq_' || $c),
	                          't', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
	                          'pad', repeat('x', 600))
	FROM generate_series(1, $1);
	SQL
}
ev_select 100 >"$BENCH_DIR/w1.sql"
ev_select 10 >"$BENCH_DIR/w2.sql"
ev_select 1 >"$BENCH_DIR/w5.sql"
{
	echo "\\sleep $("$PY" -c "print(int($BENCH_W5_IDLE * 1000))") ms"
	ev_select 1 7
} >"$BENCH_DIR/w5session.sql"
ev_select 1 50 >"$BENCH_DIR/w3bg.sql"
ev_select 1 >"$BENCH_DIR/w6_outbox.sql"
chmod 644 "$BENCH_DIR"/*.sql

pgbench() {
	runuser -u postgres -- "$PG_BIN/pgbench" -h 127.0.0.1 -p "$BENCH_PGPORT" -n "$@" bench
}

plugin_of() { [[ $1 == relay || $1 == relay-rdk || $1 == ceil-w2j ]] && echo wal2json || echo pgoutput; }

sys_start() { # SYSTEM SLOT TAG [relay KEY=VALUE...]
	local sys=$1 slot=$2 tag=$3
	shift 3
	case $sys in
	# shellcheck disable=SC2086 # BENCH_RELAY_SET: KEY=VALUE words
	relay) relay_start "$slot" "$tag" ${BENCH_RELAY_SET:-} "$@" ;;
	# The same relay on a pgoutput slot and the publication Debezium uses.
	# shellcheck disable=SC2086
	relay-pgo) relay_start "$slot" "$tag" slot.plugin=pgoutput \
		slot.publication=bench_pub ${BENCH_RELAY_SET:-} "$@" ;;
	# The same binary on librdkafka 2.12.1 (tests/env/rdkafka.sh), with
	# that release's defaults (kafka_conf.c): several requests in flight.
	# shellcheck disable=SC2086
	relay-rdk) RELAY_LIBDIR=$BENCH_RDKAFKA_LIB relay_start "$slot" "$tag" \
		${BENCH_RELAY_SET:-} "$@" ;;
	# shellcheck disable=SC2086
	relay-pgo-rdk) RELAY_LIBDIR=$BENCH_RDKAFKA_LIB relay_start "$slot" "$tag" \
		slot.plugin=pgoutput slot.publication=bench_pub ${BENCH_RELAY_SET:-} "$@" ;;
	dbz-tuned) dbz_start "$slot" "$tag" tuned ;;
	dbz-defaults) dbz_start "$slot" "$tag" defaults ;;
	outboxx) outboxx_start "$slot" "$tag" ;;
	esac
}

sys_stop() {
	case $1 in
	relay*) relay_stop ;;
	outboxx) outboxx_stop ;;
	*) dbz_stop ;;
	esac
}

consume() { # TOPIC COUNT FILE [SECS]: read a whole topic after a run
	"$BENCH_TOOL" consume -b "$BROKERS" -t "$1" -n "$2" -I 5000 -T "${4:-600}" \
		-o "$3" 2>/dev/null || true
}

# ------------------------------------------------------------------ W1

w1() {
	local n=$BENCH_W1_EVENTS r sys slot tag s0 s1 endlsn t0 t1 wpid samp cons
	bench_log "w1: loading $n events in 100-row transactions"
	slot_create w1_w2j wal2json
	slot_create w1_pgo pgoutput
	s0=$(seqs)
	t0=$(date +%s.%N)
	pgbench -f "$BENCH_DIR/w1.sql" -c 2 -j 2 -t $((n / 200)) >/dev/null
	t1=$(date +%s.%N)
	s1=$(seqs)
	endlsn=$(q "SELECT pg_current_wal_lsn()")
	q "CHECKPOINT" >/dev/null
	emit workload=w1-load events="$n" secs="$("$PY" -c "print($t1 - $t0)")" \
		wal_bytes="$(q "SELECT pg_wal_lsn_diff('$endlsn', confirmed_flush_lsn) FROM pg_replication_slots WHERE slot_name = 'w1_w2j'")"
	for ((r = 1; r <= BENCH_ROUNDS; r++)); do
		for sys in $BENCH_W1_SYSTEMS; do
			# BENCH_W1_ONCE: systems measured in the first round only.
			((r == 1)) || [[ " $BENCH_W1_ONCE " != *" $sys "* ]] || continue
			if [[ $sys == outboxx && ! -x $OUTBOXX_BIN ]]; then
				((r > 1)) || bench_log "w1: outboxx skipped: OUTBOXX_BIN ${OUTBOXX_BIN:+($OUTBOXX_BIN) is not an executable}${OUTBOXX_BIN:-is not set} (tests/bench/outboxx.sh builds it from a checkout)"
				continue
			fi
			tag=w1r$r-$sys
			samp=$OUT/raw/$tag.samples
			case $sys in
			ceil-*)
				slot=w1_${sys#ceil-}_$r
				slot_copy "w1_${sys#ceil-}" "$slot"
				bench_log "w1 round $r: $sys"
				t0=$(date +%s.%N)
				recvlogical "$(plugin_of "$sys")" "$slot" "$endlsn" /dev/null &
				local rpid=$!
				wpid=$(walsender_pid "$slot")
				"$BENCH_TOOL" sample -b "$BROKERS" -p "$wpid,$(broker_pid)" \
					-T 600 -o "$samp" &
				local spid=$!
				wait "$rpid"
				t1=$(date +%s.%N)
				kill -TERM "$spid" 2>/dev/null || true
				wait "$spid" || true
				emit workload=w1 system="$sys" round="$r" events="$n" \
					t0="$t0" t1="$t1" samples="$samp" pids='["walsender","broker"]'
				slot_drop "$slot"
				;;
			producer)
				bench_log "w1 round $r: producer ceiling"
				"$BENCH_TOOL" sample -b "$BROKERS" -t "$tag.bench" \
					-p "$(broker_pid)" -n $((n + 1)) -T 600 -o "$samp" &
				local spid=$!
				local res
				res=$("$BENCH_TOOL" produce -b "$BROKERS" -t "$tag.bench" -n "$n" -s 650 -k 2000)
				wait "$spid" || true
				emit workload=w1 system=producer round="$r" events="$n" \
					result="$res" samples="$samp" pids='["broker"]'
				;;
			*)
				local plug
				plug=$(plugin_of "$sys")
				slot=w1_${sys//-/_}_$r
				slot_copy "w1_$([[ $plug == wal2json ]] && echo w2j || echo pgo)" "$slot"
				bench_log "w1 round $r: $sys"
				local j0 j1
				j0=$(jmx)
				t0=$(date +%s.%N)
				sys_start "$sys" "$slot" "$tag"
				wpid=$(walsender_pid "$slot" 120)
				"$BENCH_TOOL" sample -b "$BROKERS" -t "$tag.bench" \
					-p "$SYS_PID,$wpid,$(broker_pid)" -n "$n" -T 900 -o "$samp" &
				local spid=$! early=
				# A system that exits before the end (Outboxx stops at
				# its producer's "Queue full": fail-fast, for a
				# supervisor to restart) ends the wait.
				while kill -0 "$spid" 2>/dev/null; do
					if ! kill -0 "$SYS_PID" 2>/dev/null; then
						sleep 2
						kill -TERM "$spid" 2>/dev/null || true
						early="exited at $(tail -1 "$samp" | cut -d' ' -f2) of $n events"
						bench_log "w1: $sys $early"
						break
					fi
					sleep 0.5
				done
				wait "$spid" || [[ -n $early ]] ||
					bench_log "w1: $sys did not deliver $n events in time"
				j1=$(jmx)
				sys_stop "$sys"
				cons=$OUT/raw/$tag.records
				# After an early exit: what is there, without waiting for
				# the rest (the idle stop needs a first record).
				consume "$tag.bench" "$n" "$cons" "$([[ -n $early ]] && echo 60 || echo 600)"
				emit workload=w1 system="$sys" round="$r" events="$n" t0="$t0" \
					samples="$samp" pids='["system","walsender","broker"]' \
					records="$cons" seq0="$s0" seq1="$s1" jmx0="$j0" jmx1="$j1" \
					${early:+"exit=$early"}
				"$PY" tests/bench/report.py check --last "$RUNS" || true
				[[ -n ${BENCH_KEEP_RAW:-} ]] || rm -f "$cons"
				slot_drop "$slot"
				;;
			esac
		done
	done
	slot_drop w1_w2j
	slot_drop w1_pgo
}

# ------------------------------------------------------------------ W2

# Starts SYSTEM on a new slot with a consumer timing its topic, sends 100
# warm-up events (metadata, JIT), and leaves them running: CONS_PID.
series_start() { # SYSTEM TAG [relay KEY=VALUE...]
	local sys=$1 tag=$2 slot
	shift 2
	slot=s_${tag//[-.]/_}
	SERIES_SLOT=$slot
	slot_create "$slot" "$(plugin_of "$sys")"
	SERIES_SEQ0=$(seqs)
	sys_start "$sys" "$slot" "$tag" "$@"
	SERIES_WPID=$(walsender_pid "$slot" 120)
	SERIES_CONS=$OUT/raw/$tag.records
	"$BENCH_TOOL" consume -b "$BROKERS" -t "$tag.bench" -T 7200 \
		-o "$SERIES_CONS" 2>/dev/null &
	CONS_PID=$!
	env_on_cleanup "kill -TERM $CONS_PID 2>/dev/null || true"
	q "$(ev_select 100 99)" >/dev/null
	wait_records 100 120 || bench_log "$tag: warm-up events not seen"
	sleep 2
}

wait_records() { # N SECS: the series consumer has N records
	local n=$1 secs=$2 i
	for ((i = 0; i < secs * 10; i++)); do
		(($(wc -l <"$SERIES_CONS") >= n)) && return 0
		sleep 0.1
	done
	return 1
}

series_stop() { # SYSTEM
	sys_stop "$1"
	kill -TERM "$CONS_PID" 2>/dev/null || true
	wait "$CONS_PID" 2>/dev/null || true
	slot_drop "$SERIES_SLOT"
}

# One steady-load window at RATE events/s for SECS: CPU of the system,
# its walsender and the broker sampled over it, broker request counters
# before and after.
w2_window() { # WORKLOAD SYSTEM TAG ROUND RATE SECS [VARIANT]
	local wl=$1 sys=$2 tag=$3 r=$4 rate=$5 secs=$6 variant=${7:-} samp t0 t1 j0 j1 before
	samp=$OUT/raw/$tag-r$r-$rate.samples
	before=$(wc -l <"$SERIES_CONS")
	j0=$(jmx)
	"$BENCH_TOOL" sample -b "$BROKERS" -p "$SYS_PID,$SERIES_WPID,$(broker_pid)" \
		-T $((secs + 600)) -o "$samp" &
	local spid=$! x0 x1
	x0=$(relay_txns)
	t0=$(date +%s.%N)
	pgbench -f "$BENCH_DIR/w2.sql" -c 2 -j 2 -R $((rate / 10)) -T "$secs" >/dev/null 2>&1 || true
	t1=$(date +%s.%N)
	# Lag: how long after the load the last event arrives (bounded).
	local expect
	expect=$(($(seq_total) - SERIES_BASE))
	wait_records "$expect" 30 || bench_log "$tag: rate $rate not kept up with (lag > 30 s)"
	local t2
	t2=$(date +%s.%N)
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" || true
	j1=$(jmx)
	x1=$(relay_txns)
	emit workload="$wl" system="$sys" variant="$variant" round="$r" rate="$rate" \
		t0="$t0" t1="$t1" t2="$t2" samples="$samp" \
		pids='["system","walsender","broker"]' records="$SERIES_CONS" \
		events="$(($(wc -l <"$SERIES_CONS") - before))" jmx0="$j0" jmx1="$j1" \
		txns0="$x0" txns1="$x1"
}

seq_of() { # C: events written so far by writer C
	q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM bench_seq_$1"
}

seq_total() { # events written so far by every writer
	local c s=0
	for c in 0 1 2 3 4 5 6 7 50 99; do
		s=$((s + $(q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM bench_seq_$c")))
	done
	echo "$s"
}

series_check() { # WORKLOAD SYSTEM TAG [VARIANT]
	emit workload="$1-check" system="$2" variant="${4:-}" records="$SERIES_CONS" \
		seq0="$SERIES_SEQ0" seq1="$(seqs)"
	"$PY" tests/bench/report.py check --last "$RUNS" || true
}

w2() {
	local sys r rate tag
	for sys in $BENCH_W2_SYSTEMS; do
		tag=w2-$sys
		bench_log "w2: $sys at ${BENCH_W2_RATES// /, } events/s, ${BENCH_W2_SECS}s each, $BENCH_ROUNDS rounds"
		series_start "$sys" "$tag"
		SERIES_BASE=$(($(seq_total) - $(wc -l <"$SERIES_CONS")))
		for ((r = 1; r <= BENCH_ROUNDS; r++)); do
			for rate in $BENCH_W2_RATES; do
				w2_window w2 "$sys" "$tag" "$r" "$rate" "$BENCH_W2_SECS"
			done
		done
		series_stop "$sys"
		series_check w2 "$sys" "$tag"
	done
}

# The broker-CPU investigation: the relay at BENCH_KNOBS_RATE with each
# producer variant NAME:KEY=VALUE[,KEY=VALUE] of BENCH_KNOBS.
knobs() {
	local v name kvs r tag
	for v in $BENCH_KNOBS; do
		name=${v%%:*}
		kvs=()
		[[ $v == *:* ]] && IFS=, read -r -a kvs <<<"${v#*:}"
		tag=kn-$name
		bench_log "knobs: relay $name (${kvs[*]:-defaults}) at $BENCH_KNOBS_RATE events/s"
		series_start relay "$tag" "${kvs[@]}"
		SERIES_BASE=$(($(seq_total) - $(wc -l <"$SERIES_CONS")))
		for ((r = 1; r <= BENCH_ROUNDS; r++)); do
			w2_window knobs relay "$tag" "$r" "$BENCH_KNOBS_RATE" "$BENCH_KNOBS_SECS" "$name"
		done
		series_stop relay
		series_check knobs relay "$tag" "$name"
	done
}

# ------------------------------------------------------------------ W5

w5() {
	local sys i tag t0
	for sys in $BENCH_W5_SYSTEMS; do
		tag=w5-$sys
		if [[ $sys == kafka-floor ]]; then
			w5_kafka_floor "$tag"
			continue
		fi
		bench_log "w5: $sys, $BENCH_W5_COUNT single-row commits after ${BENCH_W5_IDLE}s idle each"
		series_start "$sys" "$tag"
		t0=$(date +%s.%N)
		if [[ $BENCH_W5_CLIENT == psql ]]; then
			for ((i = 1; i <= BENCH_W5_COUNT; i++)); do
				sleep "$BENCH_W5_IDLE"
				q "$(ev_select 1 7)" >/dev/null
			done
		else
			# An application's pooled connection: one session sleeps,
			# then commits, BENCH_W5_COUNT times.
			pgbench -f "$BENCH_DIR/w5session.sql" -c 1 -t "$BENCH_W5_COUNT" >/dev/null 2>&1 ||
				bench_log "w5: $sys: pgbench failed"
		fi
		wait_records $((100 + BENCH_W5_COUNT)) 30 || true
		emit workload=w5 system="$sys" t0="$t0" t1="$(date +%s.%N)" records="$SERIES_CONS" \
			count="$BENCH_W5_COUNT" idle="$BENCH_W5_IDLE" client="$BENCH_W5_CLIENT"
		series_stop "$sys"
		series_check w5 "$sys" "$tag"
	done
}

# Kafka's own floor, the bound under every system of W5: the same idle
# periods, then one record from a librdkafka producer with the relay's
# delivery settings, flushed at once, timed by the same consumer (the
# payload's "t" is the produce time instead of the commit's).
w5_kafka_floor() { # TAG
	local tag=$1 t0 n=$BENCH_W5_COUNT
	bench_log "w5: kafka-floor, $n records after ${BENCH_W5_IDLE}s idle each"
	SERIES_CONS=$OUT/raw/$tag.records
	"$BENCH_TOOL" consume -b "$BROKERS" -t "$tag.bench" -n $((n + 1)) \
		-T $((n * (${BENCH_W5_IDLE%.*} + 1) + 120)) -o "$SERIES_CONS" 2>/dev/null &
	CONS_PID=$!
	t0=$(date +%s.%N)
	"$BENCH_TOOL" produce -b "$BROKERS" -t "$tag.bench" -n "$n" -c 7 \
		-P "$("$PY" -c "print(int($BENCH_W5_IDLE * 1000))")" >/dev/null ||
		bench_log "w5: kafka-floor producer failed"
	wait "$CONS_PID" 2>/dev/null || true
	emit workload=w5 system=kafka-floor t0="$t0" t1="$(date +%s.%N)" \
		records="$SERIES_CONS" count="$n" idle="$BENCH_W5_IDLE"
	SERIES_SEQ0="-1:-1 7:0"
	emit workload=w5-check system=kafka-floor variant="" records="$SERIES_CONS" \
		seq0="$SERIES_SEQ0" seq1="-1:0 7:$n"
	"$PY" tests/bench/report.py check --last "$RUNS" || true
}

# ------------------------------------------------------------------ W3

w3() {
	local sys tag bg t0 tc samp total0 bg0 expect
	for sys in $BENCH_W3_SYSTEMS; do
		tag=w3-$sys
		bench_log "w3: $sys, one $BENCH_W3_ROWS-row transaction beside 1k events/s"
		total0=$(seq_total)
		series_start "$sys" "$tag"
		samp=$OUT/raw/$tag.samples
		"$BENCH_TOOL" sample -b "$BROKERS" -p "$SYS_PID,$SERIES_WPID,$(broker_pid)" \
			-T 1200 -o "$samp" &
		local spid=$!
		bg0=$(seq_of 50)
		pgbench -f "$BENCH_DIR/w3bg.sql" -c 1 -R 1000 -T 900 >/dev/null 2>&1 &
		bg=$!
		sleep 5
		t0=$(date +%s.%N)
		q "$(ev_select "$BENCH_W3_ROWS" 6)" >/dev/null
		tc=$(date +%s.%N)
		# The background load goes on until the big transaction is out:
		# everything committed before it, the warm-up and it (the WAL's
		# commit order is the relay's publishing order).
		expect=$((100 + BENCH_W3_ROWS + $(seq_of 50) - bg0))
		wait_records "$expect" 600 || bench_log "w3: $sys did not deliver the big transaction in 600 s"
		sleep 5
		# pgbench runs under runuser in a subshell: the signal must reach
		# pgbench itself (the subshell would wait out its -T), and be
		# TERM: a job started with & ignores SIGINT.
		pkill -TERM -f -- "$BENCH_DIR/w3bg.sql" 2>/dev/null || true
		wait "$bg" 2>/dev/null || true
		expect=$(($(seq_total) - total0))
		wait_records "$expect" 120 || bench_log "w3: $sys: $expect events written, not all seen"
		sleep 3
		kill -TERM "$spid" 2>/dev/null || true
		wait "$spid" || true
		emit workload=w3 system="$sys" t0="$t0" tc="$tc" rows="$BENCH_W3_ROWS" \
			samples="$samp" pids='["system","walsender","broker"]' records="$SERIES_CONS" \
			spill="$(q "SELECT spill_bytes FROM pg_stat_replication_slots WHERE slot_name = '$SERIES_SLOT'")"
		series_stop "$sys"
		series_check w3 "$sys" "$tag"
	done
}

# ------------------------------------------------------------------ W6

# The outbox as 5 % of the transactions: pgbench's TPC-B-like script
# (pgbench_accounts/tellers/branches/history) 19 times for one outbox row.
w6() {
	local sys tag r
	for sys in $BENCH_W6_SYSTEMS; do
		tag=w6-$sys
		bench_log "w6: $sys, $BENCH_W6_TPS transactions/s, 5 % of them an outbox event"
		series_start "$sys" "$tag"
		SERIES_BASE=$(($(seq_total) - $(wc -l <"$SERIES_CONS")))
		for ((r = 1; r <= BENCH_ROUNDS; r++)); do
			local samp t0 t1
			samp=$OUT/raw/$tag-r$r.samples
			"$BENCH_TOOL" sample -b "$BROKERS" -p "$SYS_PID,$SERIES_WPID,$(broker_pid)" \
				-T $((BENCH_W6_SECS + 120)) -o "$samp" &
			local spid=$!
			t0=$(date +%s.%N)
			pgbench -b tpcb-like@19 -f "$BENCH_DIR/w6_outbox.sql@1" -c 2 -j 2 \
				-R "$BENCH_W6_TPS" -T "$BENCH_W6_SECS" >/dev/null 2>&1 || true
			t1=$(date +%s.%N)
			wait_records $(($(seq_total) - SERIES_BASE)) 30 || true
			kill -TERM "$spid" 2>/dev/null || true
			wait "$spid" || true
			emit workload=w6 system="$sys" round="$r" t0="$t0" t1="$t1" tps="$BENCH_W6_TPS" \
				samples="$samp" pids='["system","walsender","broker"]' records="$SERIES_CONS"
		done
		series_stop "$sys"
		series_check w6 "$sys" "$tag"
	done
}

# ------------------------------------------------------------------ EOS

# The relay's mean commit_transaction time (ms) from the summary line it
# logs at exit (exactly-once only; empty otherwise).
relay_commit_ms() { # TAG
	local log
	log=$([[ -n ${BENCH_KEEP_RAW:-} ]] && echo "$OUT/raw" || echo "$BENCH_DIR")/relay-$1.log
	grep -o 'kafka_transactions committed=[0-9]* aborted=[0-9]* commit_ms_avg=[0-9.]*' "$log" 2>/dev/null |
		tail -1 | sed 's/.*commit_ms_avg=//' || true
}

# BENCH_EOS_PERF: the relay's profile through a drain or a series.
PERF_PID=
perf_start() { # TAG
	[[ -n $BENCH_EOS_PERF ]] || return 0
	perf record -q -F 499 --call-graph dwarf,8192 -p "$SYS_PID" -o "$OUT/raw/$1.perf" >/dev/null 2>&1 &
	PERF_PID=$!
	env_on_cleanup "kill -INT $PERF_PID 2>/dev/null || true"
}
perf_stop() {
	[[ -n $PERF_PID ]] || return 0
	kill -INT "$PERF_PID" 2>/dev/null || true
	wait "$PERF_PID" 2>/dev/null || true
	PERF_PID=
}

# The settings of a mode: alo (at-least-once) or eos (exactly-once).
mode_set() {
	case $1 in
	alo) echo "$BENCH_EOS_ALO_SET" ;;
	eos) echo "$BENCH_EOS_SET" ;;
	esac
}

# One drain of a copy of SRC (N events) by the relay in MODE, timed by a
# read_committed consumer started before it: events/s from the first
# visible record to the last, CPU of the relay, its walsender and the
# broker over the same span (report.py), the relay's peak RSS and Kafka
# transactions, then the check (every event once, per-key order).
eos_drain() { # WORKLOAD MODE ROUND SRC N SEQ0 SEQ1 VARIANT [KEY=VALUE...]
	local wl=$1 mode=$2 r=$3 src=$4 n=$5 s0=$6 s1=$7 variant=$8
	shift 8
	local tag slot samp cons cpid spid wpid t0 t1 j0 j1 x1 early=
	tag=$wl-d-$mode${variant:+-$variant}-r$r
	slot=d_${tag//[-.]/_}
	samp=$OUT/raw/$tag.samples
	cons=$OUT/raw/$tag.records
	slot_copy "$src" "$slot"
	bench_log "$wl round $r: drain, $mode${variant:+ $variant} ($*)"
	# The topic exists, and the consumer fetches from it, before the
	# relay starts: its own start-up is not in the figures.
	topic_create "$tag.bench"
	"$BENCH_TOOL" consume -b "$BROKERS" -t "$tag.bench" -n "$n" -T 900 \
		-o "$cons" 2>/dev/null &
	cpid=$!
	sleep 2
	j0=$(jmx)
	t0=$(date +%s.%N)
	# shellcheck disable=SC2046,SC2086 # KEY=VALUE words
	RELAY_LIBDIR=$BENCH_EOS_LIBDIR relay_start "$slot" "$tag" ${BENCH_RELAY_SET:-} \
		$(mode_set "$mode") "$@"
	wpid=$(walsender_pid "$slot" 120) || wpid=0
	"$BENCH_TOOL" sample -b "$BROKERS" -p "$SYS_PID,$wpid,$(broker_pid)" \
		-T 900 -o "$samp" &
	spid=$!
	perf_start "$tag"
	while kill -0 "$cpid" 2>/dev/null; do
		if ! kill -0 "$SYS_PID" 2>/dev/null; then
			sleep 3
			kill -TERM "$cpid" 2>/dev/null || true
			early="the relay exited with $(wc -l <"$cons") of $n events visible"
			bench_log "$wl: $mode $early"
			break
		fi
		sleep 0.2
	done
	wait "$cpid" || [[ -n $early ]] || bench_log "$wl: $mode: $n events not visible in time"
	t1=$(date +%s.%N)
	sleep 0.3
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" || true
	j1=$(jmx)
	x1=$(relay_txns)
	perf_stop
	relay_stop
	emit workload="$wl-drain" system="$mode" variant="$variant" round="$r" \
		events="$n" t0="$t0" t1="$t1" samples="$samp" \
		pids='["system","walsender","broker"]' records="$cons" \
		seq0="$s0" seq1="$s1" jmx0="$j0" jmx1="$j1" txns1="$x1" \
		commit_ms="$(relay_commit_ms "$tag")" \
		settings="$(mode_set "$mode") $*${BENCH_EOS_LIBDIR:+ (librdkafka of $BENCH_EOS_LIBDIR)}" \
		${early:+"exit=$early"}
	"$PY" tests/bench/report.py check --last "$RUNS" || true
	[[ -n ${BENCH_KEEP_RAW:-} ]] || rm -f "$cons"
	slot_drop "$slot"
}

# Kafka's own cost of the mode, without the relay: bench-tool produce
# (the relay's producer settings, 650 B records under 2,000 keys), plain
# or transactional with BENCH_EOS_CEIL_TXN records a transaction; broker
# CPU sampled over it.
eos_ceiling() { # MODE ROUND N
	local mode=$1 r=$2 n=$3 tag samp spid res
	tag=eos-c-$mode-r$r
	samp=$OUT/raw/$tag.samples
	bench_log "eos round $r: producer ceiling, $mode"
	"$BENCH_TOOL" sample -b "$BROKERS" -p "$(broker_pid)" -T 900 -o "$samp" &
	spid=$!
	res=$("$BENCH_TOOL" produce -b "$BROKERS" -t "$tag.bench" -n "$n" -s 650 -k 2000 \
		$([[ $mode == eos ]] && echo "-x $BENCH_EOS_CEIL_TXN")) ||
		bench_log "eos: producer ceiling ($mode) failed"
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" || true
	emit workload=eos-ceil system="$mode" round="$r" events="$n" result="$res" \
		samples="$samp" pids='["broker"]' \
		txn_events="$([[ $mode == eos ]] && echo "$BENCH_EOS_CEIL_TXN" || echo 0)"
}

# TOPIC auto-created by a metadata request (the broker's num.partitions),
# once it has a leader.
topic_create() {
	local i
	for ((i = 0; i < 40; i++)); do
		kcat -b "$BROKERS" -L -t "$1" -m 3 2>/dev/null | grep 'leader 1' >/dev/null && return 0
		sleep 0.25
	done
	bench_log "topic $1: no leader after 10 s"
}

# A backlog of N events (100-row transactions) in a new slot SLOT, read
# by no one: EOS_SEQ0 and EOS_SEQ1, the writers' positions around it.
eos_load() { # SLOT N
	bench_log "eos: loading $2 events in 100-row transactions"
	slot_create "$1" wal2json
	EOS_SEQ0=$(seqs)
	pgbench -f "$BENCH_DIR/w1.sql" -c 2 -j 2 -t $(($2 / 200)) >/dev/null
	EOS_SEQ1=$(seqs)
	q "CHECKPOINT" >/dev/null
}

# One steady-load series of the relay in MODE: a consumer timing every
# record (read_committed), one window at each RATE.
eos_series() { # WORKLOAD MODE ROUND VARIANT RATES SECS [KEY=VALUE...]
	local wl=$1 mode=$2 r=$3 variant=$4 rates=$5 secs=$6 tag rate
	shift 6
	tag=$wl-s-$mode${variant:+-$variant}-r$r
	bench_log "$wl round $r: steady, $mode${variant:+ $variant} at ${rates// /, } events/s, ${secs}s each ($*)"
	# shellcheck disable=SC2046 # KEY=VALUE words
	RELAY_LIBDIR=$BENCH_EOS_LIBDIR series_start relay "$tag" $(mode_set "$mode") "$@"
	SERIES_BASE=$(($(seq_total) - $(wc -l <"$SERIES_CONS")))
	perf_start "$tag"
	for rate in $rates; do
		w2_window "$wl-steady" "$mode" "$tag" "$r" "$rate" "$secs" "$variant"
	done
	perf_stop
	series_stop relay
	emit workload="$wl-commit" system="$mode" variant="$variant" round="$r" \
		commit_ms="$(relay_commit_ms "$tag")"
	series_check "$wl-steady" "$mode" "$tag" "$variant"
	[[ -n ${BENCH_KEEP_RAW:-} ]] || rm -f "$SERIES_CONS"
}

# delivery.guarantee: both modes side by side, alternating in each round
# so that both see the same neighbours on the machine.
eos() {
	local r mode order
	eos_load eos_src "$BENCH_EOS_EVENTS"
	for ((r = 1; r <= BENCH_EOS_DRAIN_ROUNDS; r++)); do
		# Which mode goes first alternates too.
		((r % 2)) && order="alo eos" || order="eos alo"
		for mode in $order; do
			eos_drain eos "$mode" "$r" eos_src "$BENCH_EOS_EVENTS" \
				"$EOS_SEQ0" "$EOS_SEQ1" ""
			eos_ceiling "$mode" "$r" "$BENCH_EOS_EVENTS"
		done
	done
	slot_drop eos_src
	for ((r = 1; r <= BENCH_ROUNDS; r++)); do
		((r % 2)) && order="alo eos" || order="eos alo"
		for mode in $order; do
			eos_series eos "$mode" "$r" "" "$BENCH_EOS_RATES" "$BENCH_EOS_SECS"
		done
	done
}

# The transaction knobs, one short point each, at-least-once first and
# last as the reference of the same run.
eos-sweep() {
	local pts v name kvs r
	pts="alo-first: $BENCH_EOS_SWEEP_POINTS alo-last:"
	eos_load eos_sweep_src "$BENCH_EOS_SWEEP_EVENTS"
	for ((r = 1; r <= BENCH_EOS_SWEEP_ROUNDS; r++)); do
		for v in $pts; do
			name=${v%%:*}
			kvs=()
			[[ $v == *:?* ]] && IFS=, read -r -a kvs <<<"${v#*:}"
			if [[ $name == alo-* ]]; then
				eos_drain eos-sweep alo "$r" eos_sweep_src "$BENCH_EOS_SWEEP_EVENTS" \
					"$EOS_SEQ0" "$EOS_SEQ1" "${name#alo-}"
			else
				eos_drain eos-sweep eos "$r" eos_sweep_src "$BENCH_EOS_SWEEP_EVENTS" \
					"$EOS_SEQ0" "$EOS_SEQ1" "$name" "${kvs[@]}"
			fi
		done
	done
	slot_drop eos_sweep_src
	for ((r = 1; r <= BENCH_EOS_SWEEP_ROUNDS; r++)); do
		for v in $pts; do
			name=${v%%:*}
			kvs=()
			[[ $v == *:?* ]] && IFS=, read -r -a kvs <<<"${v#*:}"
			if [[ $name == alo-* ]]; then
				eos_series eos-sweep alo "$r" "${name#alo-}" "$BENCH_EOS_SWEEP_RATE" "$BENCH_EOS_SWEEP_SECS"
			else
				eos_series eos-sweep eos "$r" "$name" "$BENCH_EOS_SWEEP_RATE" "$BENCH_EOS_SWEEP_SECS" "${kvs[@]}"
			fi
		done
	done
}

for w in $BENCH_ONLY; do
	"$w"
done

bench_log "report"
"$PY" tests/bench/report.py report --runs "$RUNS" --plots "$OUT" \
	--machine "$MACHINE" --profile "$PROFILE" --out "$OUT/benchmarks.md"
if [[ -n $DOC ]]; then
	mkdir -p "$REPO/docs/benchmarks"
	cp "$OUT"/*.png "$REPO/docs/benchmarks/" 2>/dev/null || true
	"$PY" tests/bench/report.py report --runs "$RUNS" --plots "$REPO/docs/benchmarks" \
		--plot-ref benchmarks --machine "$MACHINE" --profile "$PROFILE" --out "$DOC"
	bench_log "wrote $DOC"
fi
if [[ -z ${BENCH_KEEP_RAW:-} ]]; then
	rm -f "$OUT"/raw/*.records
fi
