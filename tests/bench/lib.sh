# shellcheck shell=bash
# tests/bench/lib.sh -- the systems `make bench` measures, each started on
# a slot of its own and stopped again (sourced by tests/bench/run.sh after
# tests/env/lib.sh; same conventions: set -euo pipefail callers, servers
# and files under $BENCH_DIR).
#
#   bench_pg_setup                   tune the cluster for the bench, schema
#   slot_create NAME PLUGIN          pg_create_logical_replication_slot
#   slot_copy SRC DST                pg_copy_logical_replication_slot
#   slot_drop NAME                   drop it (waits until it is inactive)
#   walsender_pid SLOT [SECS]        the active_pid of SLOT once it has one
#   relay_start SLOT TAG [KEY=VALUE...]   the relay, topic TAG.bench; sets
#                                    SYS_PID
#   relay_stop                       SIGTERM, wait
#   relay_txns                       "committed aborted" Kafka transactions
#                                    from the relay's /metrics (or nothing)
#   dbz_start SLOT TAG PROFILE       Debezium (defaults|tuned) on a Connect
#                                    standalone worker; sets SYS_PID
#   dbz_stop                         SIGTERM, bounded wait, SIGKILL
#   outboxx_start SLOT TAG           Outboxx ($OUTBOXX_BIN, built by hand:
#                                    tests/bench/outboxx.sh) on SLOT and the
#                                    bench publication, topic TAG.bench;
#                                    sets SYS_PID (outboxx_stop: as dbz_stop)
#   recvlogical PLUGIN SLOT ENDPOS OUT  pg_recvlogical with the relay's
#                                    wal2json options, or pgoutput proto 1
#
# Ports: PostgreSQL $BENCH_PGPORT (25800), Kafka $BENCH_KPORT (19500,
# controller +1), Connect REST $BENCH_REST_PORT (18383), the relay's
# health endpoint $BENCH_HTTP_PORT (18384); the broker's JMX port is
# run.sh's BENCH_JMX_PORT (18385). Set all of them to run beside another
# bench on the same machine.

# shellcheck source=../env/debezium.sh
source "$ENV_REPO_ROOT/tests/env/debezium.sh"

BENCH_PGPORT=${BENCH_PGPORT:-25800}
BENCH_KPORT=${BENCH_KPORT:-19500}
BENCH_REST_PORT=${BENCH_REST_PORT:-18383}
BENCH_HTTP_PORT=${BENCH_HTTP_PORT:-18384}
BROKERS=127.0.0.1:$BENCH_KPORT
DBZ_HEAP=${DBZ_HEAP:-1g}
RELAY_BIN=${RELAY_BIN:-$ENV_REPO_ROOT/build/outbox-relay}
BENCH_TOOL=${BENCH_TOOL:-$ENV_REPO_ROOT/build/bench-tool}
SYS_PID=

bench_log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

q() { psql_q "$BENCH_PGPORT" bench "$1"; }

# Settings for a drain of a few GB of WAL: no checkpoint in the middle,
# the whole outbox in shared buffers. fsync stays off as in tests/env
# (a thrown-away cluster on a shared disk: fsync only adds noise).
bench_pg_setup() {
	q "ALTER SYSTEM SET shared_buffers = '2GB'" >/dev/null
	q "ALTER SYSTEM SET max_wal_size = '32GB'" >/dev/null
	q "ALTER SYSTEM SET checkpoint_timeout = '1h'" >/dev/null
	q "ALTER SYSTEM SET wal_sender_timeout = '60s'" >/dev/null
	pg_restart "$BENCH_DIR" >/dev/null
	psql_f "$BENCH_PGPORT" bench "$ENV_REPO_ROOT/sql/outbox.sql" >/dev/null
	q "CREATE PUBLICATION bench_pub FOR TABLE public.outbox" >/dev/null
	local c
	for c in 0 1 2 3 4 5 6 7 50 99; do
		q "CREATE SEQUENCE bench_seq_$c" >/dev/null
	done
	# W6: the rest of a busy database (pgbench's own tables).
	runuser -u postgres -- "$PG_BIN/pgbench" -h 127.0.0.1 -p "$BENCH_PGPORT" \
		-i -s 10 -q bench >/dev/null 2>&1
}

slot_create() {
	q "SELECT pg_create_logical_replication_slot('$1', '$2')" >/dev/null
}

slot_copy() {
	q "SELECT pg_copy_logical_replication_slot('$1', '$2')" >/dev/null
}

slot_drop() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ $(q "SELECT active FROM pg_replication_slots WHERE slot_name = '$1'") == t ]] || break
		sleep 0.1
	done
	q "SELECT pg_drop_replication_slot('$1') FROM pg_replication_slots WHERE slot_name = '$1'" >/dev/null
}

walsender_pid() {
	local slot=$1 secs=${2:-60} i pid
	for ((i = 0; i < secs * 50; i++)); do
		pid=$(q "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'")
		if [[ -n $pid ]]; then
			echo "$pid"
			return 0
		fi
		sleep 0.02
	done
	bench_log "no walsender on slot $slot after ${secs}s"
	return 1
}

broker_pid() { cat "$BENCH_DIR/kafka/kafka.pid"; }

# ---------------------------------------------------------------- relay

relay_start() {
	local slot=$1 tag=$2 conf=$BENCH_DIR/relay-$2.conf kv
	shift 2
	cat >"$conf" <<-CONF
	pg.conninfo = host=127.0.0.1 port=$BENCH_PGPORT dbname=bench user=postgres
	kafka.bootstrap.servers = $BROKERS
	slot.name = $slot
	route.topic.replacement = $tag.\${routedByValue}
	http.listen = 127.0.0.1:$BENCH_HTTP_PORT
	CONF
	for kv in "$@"; do
		printf '%s = %s\n' "${kv%%=*}" "${kv#*=}" >>"$conf"
	done
	# BENCH_KEEP_RAW keeps the relay's log with the records.
	# RELAY_LIBDIR: the librdkafka the relay loads (the -rdk systems);
	# env execs, so $! is still the relay's PID.
	env ${RELAY_LIBDIR:+LD_LIBRARY_PATH=$RELAY_LIBDIR} "$RELAY_BIN" --config "$conf" \
		2>"$([[ -n ${BENCH_KEEP_RAW:-} ]] && echo "$OUT/raw" || echo "$BENCH_DIR")/relay-$tag.log" &
	SYS_PID=$!
	env_on_cleanup "kill -9 $SYS_PID 2>/dev/null || true"
}

# The relay's Kafka transactions so far, "committed aborted" (its /metrics;
# empty when it does not answer, as for a system that is not the relay).
relay_txns() {
	curl -s -m 2 "http://127.0.0.1:$BENCH_HTTP_PORT/metrics" 2>/dev/null |
		awk '$1 ~ /^outbox_relay_kafka_transactions_committed_total/ {c += $2; f = 1}
		     $1 ~ /^outbox_relay_kafka_transactions_aborted_total/ {a += $2; f = 1}
		     END {if (f) printf "%d %d", c, a}' || true
}

relay_stop() {
	[[ -n $SYS_PID ]] || return 0
	kill -TERM "$SYS_PID" 2>/dev/null || true
	wait "$SYS_PID" 2>/dev/null || true
	SYS_PID=
}

# ---------------------------------------------------------------- Debezium

# Connect standalone (tests/env/debezium.sh): the worker's producer is the
# one Debezium's records go through. Both profiles: key and value as
# strings (the value is then the payload's JSON text, the same bytes the
# relay sends), -Xmx$DBZ_HEAP.
dbz_start() {
	local slot=$1 tag=$2 profile=$3 d=$BENCH_DIR/dbz-$2
	local -a worker=() conn=(
		"topic.prefix=$tag"
		transforms.outbox.table.field.event.id=id
		transforms.outbox.table.field.event.key=aggregate_id
		transforms.outbox.table.field.event.payload=payload
		transforms.outbox.route.by.field=aggregate_type
		"transforms.outbox.route.topic.replacement=$tag.\${routedByValue}"
		transforms.outbox.table.fields.additional.placement=event_type:header:event_type
	)
	if [[ $profile == tuned ]]; then
		conn+=(poll.interval.ms=10 max.batch.size=20480 max.queue.size=81920)
		worker=(producer.linger.ms=5 producer.enable.idempotence=true producer.acks=all
			producer.max.in.flight.requests.per.connection=5)
	fi
	dbz_worker_conf "$d" "$BROKERS" "$BENCH_REST_PORT" "${worker[@]}"
	dbz_connector_conf "$d/connector.properties" "dbz-$tag" "$BENCH_PGPORT" bench \
		"$slot" bench_pub public.outbox "${conn[@]}"
	dbz_launch "$d" "$DBZ_HEAP" connector.properties
	SYS_PID=$DBZ_PID
}

dbz_stop() {
	[[ -n $SYS_PID ]] || return 0
	dbz_halt "$SYS_PID"
	SYS_PID=
}

# ---------------------------------------------------------------- Outboxx

# Outboxx (a Zig relay: pgoutput proto 1 -> Kafka, one JSON envelope per
# row: {"op","data":{column: value},"meta"}; the jsonb payload arrives as a
# string in data.payload, which bench-tool consume reads too). It takes an
# existing slot and publication by name (it creates them only when absent),
# so it drains the same copied slot and bench_pub as relay-pgo; key: the
# aggregate_id column. No HTTP endpoint ([observability] left out).
OUTBOXX_BIN=${OUTBOXX_BIN:-}

outboxx_start() {
	local slot=$1 tag=$2 conf=$BENCH_DIR/outboxx-$2.toml
	cat >"$conf" <<-CONF
	[metadata]
	version = "v0"

	[source]
	type = "postgres"

	[source.postgres]
	connection_env = "OUTBOXX_PG"
	slot_name = "$slot"
	publication_name = "bench_pub"

	[sink]
	type = "kafka"

	[sink.kafka]
	brokers = ["$BROKERS"]
	tls = false

	[[streams]]
	name = "outbox"

	[streams.source]
	resource = "outbox"
	operations = ["insert"]

	[streams.flow]
	format = "json"

	[streams.sink]
	destination = "$tag.bench"
	routing_key = "aggregate_id"
	CONF
	# OUTBOXX_LIBDIR: another librdkafka for it (LD_LIBRARY_PATH).
	OUTBOXX_PG="host=127.0.0.1 port=$BENCH_PGPORT dbname=bench user=postgres" \
		env ${OUTBOXX_LIBDIR:+LD_LIBRARY_PATH=$OUTBOXX_LIBDIR} \
		"$OUTBOXX_BIN" --config "$conf" </dev/null \
		>"$([[ -n ${BENCH_KEEP_RAW:-} ]] && echo "$OUT/raw" || echo "$BENCH_DIR")/outboxx-$tag.log" 2>&1 &
	SYS_PID=$!
	env_on_cleanup "kill -9 $SYS_PID 2>/dev/null || true"
}

outboxx_stop() { dbz_stop; }

# ---------------------------------------------------------------- ceilings

# The relay's wal2json options (repl.c, repl_start_command()), or
# pgoutput proto 1 on the bench publication; OUT is usually /dev/null.
recvlogical() {
	local plugin=$1 slot=$2 endpos=$3 out=$4 opts
	if [[ $plugin == wal2json ]]; then
		opts=(-o format-version=2 -o include-lsn=1 -o include-xids=1
			-o include-transaction=1 -o include-timestamp=1
			-o actions=insert,update -o add-tables=public.outbox)
	else
		opts=(-o proto_version=1 -o publication_names=bench_pub)
	fi
	runuser -u postgres -- "$PG_BIN/pg_recvlogical" -h 127.0.0.1 \
		-p "$BENCH_PGPORT" -d bench --slot "$slot" --start --no-loop \
		-f "$out" --endpos "$endpos" "${opts[@]}"
}
