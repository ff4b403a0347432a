# shellcheck shell=bash
# tests/env/debezium.sh -- Debezium's PostgreSQL connector (3.6.1.Final)
# with its Outbox Event Router on a Kafka Connect 4.3.0 standalone worker,
# for the scripts that run real Debezium beside the relay: make bench
# (tests/bench/lib.sh), the recorder of Debezium's wire format
# (tests/fixtures/record_debezium.sh) and the cutover test
# (tests/integration/t850_debezium_cutover.sh). Sourced after
# tests/env/lib.sh; callers run under set -euo pipefail.
#
# The jars come by Maven from tests/bench/connect/pom.xml into
# tests/bench/connect/target/dependency (tests/bench/deps.sh,
# tests/env/debezium_deps.sh); DBZ_JARS points elsewhere.
#
#   dbz_have_jars                 true if the worker and connector jars
#                                 are there
#   dbz_worker_conf DIR BROKERS REST_PORT [LINE...]
#                                 DIR/worker.properties (key and value:
#                                 StringConverter unless a connector says
#                                 otherwise; offsets in DIR/offsets) and
#                                 DIR/log4j.properties (DIR/connect.log);
#                                 each LINE is appended to the worker file
#   dbz_connector_conf FILE NAME PGPORT DB SLOT PUB TABLE [LINE...]
#                                 a connector on an existing slot and
#                                 publication (pgoutput, snapshot.mode
#                                 no_data, the EventRouter as transform
#                                 "outbox" with Debezium's own defaults);
#                                 LINEs are appended (later lines win)
#   dbz_launch DIR HEAP CONNECTOR_FILE...
#                                 the worker in the background, output in
#                                 DIR/stdout.log; sets DBZ_PID (registered
#                                 for cleanup)
#   dbz_wait_running REST_PORT NAME SECS
#                                 until the connector and its task report
#                                 RUNNING on the REST API
#   dbz_halt [PID]                SIGTERM (the worker commits its offsets
#                                 on the way out), bounded wait, SIGKILL
#   dbz_slot_sql PORT DB SLOT     "confirmed_flush_lsn active" of a slot

DBZ_JARS=${DBZ_JARS:-${CONNECT_JARS:-$ENV_REPO_ROOT/tests/bench/connect/target/dependency}}
# DBZ_FLUSH_MS: offset.flush.interval.ms. The worker commits its source
# offsets this often, and Debezium confirms an LSN to PostgreSQL only when
# it handles that commit: this bounds how far the slot lags what Kafka has
# acked. Empty: Connect's own default (60 s), which make bench measures.
DBZ_FLUSH_MS=${DBZ_FLUSH_MS:-}
# DBZ_JAVA_OPTS: more JVM options for the worker (word-split).
DBZ_JAVA_OPTS=${DBZ_JAVA_OPTS:-}
DBZ_PID=

dbz_have_jars() {
	compgen -G "$DBZ_JARS/debezium-connector-postgres-*.jar" >/dev/null &&
		compgen -G "$DBZ_JARS/connect-runtime-*.jar" >/dev/null
}

dbz_worker_conf() {
	local d=$1 brokers=$2 rest=$3 line
	shift 3
	mkdir -p "$d"
	cat >"$d/worker.properties" <<-EOF
	bootstrap.servers=$brokers
	key.converter=org.apache.kafka.connect.storage.StringConverter
	value.converter=org.apache.kafka.connect.storage.StringConverter
	offset.storage.file.filename=$d/offsets
	listeners=http://127.0.0.1:$rest
	plugin.discovery=service_load
	EOF
	[[ -z $DBZ_FLUSH_MS ]] || echo "offset.flush.interval.ms=$DBZ_FLUSH_MS" >>"$d/worker.properties"
	for line in "$@"; do
		printf '%s\n' "$line" >>"$d/worker.properties"
	done
	cat >"$d/log4j.properties" <<-EOF
	log4j.rootLogger=INFO, file
	log4j.appender.file=org.apache.log4j.FileAppender
	log4j.appender.file.File=$d/connect.log
	log4j.appender.file.layout=org.apache.log4j.PatternLayout
	log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
	EOF
}

dbz_connector_conf() {
	local f=$1 name=$2 port=$3 db=$4 slot=$5 pub=$6 table=$7 line
	shift 7
	cat >"$f" <<-EOF
	name=$name
	connector.class=io.debezium.connector.postgresql.PostgresConnector
	tasks.max=1
	plugin.name=pgoutput
	database.hostname=127.0.0.1
	database.port=$port
	database.user=postgres
	database.password=unused
	database.dbname=$db
	topic.prefix=$name
	slot.name=$slot
	publication.name=$pub
	publication.autocreate.mode=disabled
	table.include.list=$table
	snapshot.mode=no_data
	tombstones.on.delete=false
	transforms=outbox
	transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
	EOF
	for line in "$@"; do
		printf '%s\n' "$line" >>"$f"
	done
}

dbz_launch() {
	local d=$1 heap=$2
	shift 2
	(
		cd "$d"
		# shellcheck disable=SC2086 # DBZ_JAVA_OPTS: words on purpose
		exec java -Xmx"$heap" -XX:+ExitOnOutOfMemoryError $DBZ_JAVA_OPTS \
			-Djava.awt.headless=true \
			-Dlog4j.configuration="file:$d/log4j.properties" \
			-cp "$DBZ_JARS/*" org.apache.kafka.connect.cli.ConnectStandalone \
			worker.properties "$@"
	) </dev/null >"$d/stdout.log" 2>&1 &
	DBZ_PID=$!
	env_on_cleanup "kill -9 $DBZ_PID 2>/dev/null || true"
}

dbz_wait_running() {
	local rest=$1 name=$2 secs=$3 i st
	for ((i = 0; i < secs * 2; i++)); do
		st=$(curl -fsS "http://127.0.0.1:$rest/connectors/$name/status" 2>/dev/null) || st=
		if [[ -n $st ]] && jq -e '.connector.state == "RUNNING" and (.tasks | length) > 0 and
			all(.tasks[]; .state == "RUNNING")' <<<"$st" >/dev/null 2>&1; then
			return 0
		fi
		if [[ -n $st ]] && jq -e 'any(.tasks[]?; .state == "FAILED") or .connector.state == "FAILED"' \
			<<<"$st" >/dev/null 2>&1; then
			env_log "debezium: $name failed: $(jq -r '[.connector.trace, .tasks[]?.trace] | map(select(.)) | .[0] // ""' <<<"$st" | head -5)"
			return 1
		fi
		sleep 0.5
	done
	env_log "debezium: $name not RUNNING after ${secs}s: ${st:-no answer on :$rest}"
	return 1
}

dbz_halt() {
	local pid=${1:-$DBZ_PID} i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[[ $pid != "$DBZ_PID" ]] || DBZ_PID=
}

dbz_slot_sql() {
	psql_q "$1" "$2" "SELECT confirmed_flush_lsn || ' ' || active FROM pg_replication_slots WHERE slot_name = '$3'"
}
