# shellcheck shell=bash
# tests/integration/lib.sh -- helpers for the integration tests t[0-9]*.sh.
#
# A test script looks like:
#
#   #!/usr/bin/env bash
#   set -euo pipefail
#   source "$(dirname "$0")/lib.sh"
#   it_init                       # servers from run.sh, or its own if alone
#   it_setup_db t100_basic        # database + outbox table + wal2json slot
#   it_write_config "$IT_TEST_DIR/relay.conf" t100_basic
#   it_start_relay "$IT_TEST_DIR/relay.conf" "$IT_TEST_DIR/relay.log"
#   it_sql t100_basic "INSERT INTO outbox ..."
#   if it_consume_wait outbox.event.order "$IT_TEST_DIR/out.json" 1; then
#       ok "event arrived"
#   else
#       not_ok "event arrived" "$(it_show_log "$IT_TEST_DIR/relay.log")"
#   fi
#   rc=0; it_stop_relay || rc=$?
#   it_check "relay exits 0 on SIGTERM" test "$rc" -eq 0
#   it_summary
#
# run.sh runs every test as its own bash process with PGPORT, KAFKA_BROKERS
# (127.0.0.1:PORT), IT_DIR (the run's temp dir) and IT_RESULTS exported.
# Run alone (bash tests/integration/t100_x.sh), a test starts its own
# servers. Checks must go through ok/not_ok/it_check so that they can fail
# without aborting the script; a script that dies still counts as failed.
#
# Functions (PORT/DB/SLOT/TOPIC are plain words, files are paths):
#   it_init                          traps, servers, IT_TEST_DIR
#   it_servers_start / it_servers_stop
#   it_conninfo DB                   libpq conninfo for the relay
#   it_sql DB SQL                    psql -At, stops at the first error
#   it_sql_file DB FILE
#   it_setup_db NAME [SLOT]          fresh db NAME, sql/outbox.sql, slot (NAME)
#                                    of plugin RELAY_PLUGIN (with pgoutput:
#                                    the publication first)
#   it_create_slot DB SLOT           a RELAY_PLUGIN slot in DB (pgoutput:
#                                    creates outbox_pub on public.outbox
#                                    first if DB has none)
#   it_publish DB WHAT...            pgoutput: ALTER PUBLICATION outbox_pub
#                                    ADD WHAT ("TABLE x.y", "TABLES IN
#                                    SCHEMA x"); nothing with wal2json
#   it_wal2json_only REASON          under RELAY_PLUGIN=pgoutput: one SKIP
#                                    with REASON, and the test ends there
#   it_drop_db NAME                  drops the db and every slot in it
#   it_write_config FILE DB [SLOT] [key=value...]   pg.conninfo,
#                                    kafka.bootstrap.servers, slot.name
#   it_start_relay CONFIG LOGFILE [ARGS...]   sets IT_RELAY_PID
#   it_relay_alive [PID]
#   it_stop_relay [PID]              SIGTERM, wait; returns the exit code
#                                    (124: still running after the timeout,
#                                    then killed)
#   it_stop_checked DESC [PID]       it_stop_relay and a check that it
#                                    exited 0 (STOP_RC: the status)
#   it_wait_slot_active DB SLOT [SECS]
#   it_wait_exit PID SECS            true once PID has exited
#   it_consume TOPIC OUTFILE         all records, one kcat JSON object a line
#                                    (kcat's default isolation.level,
#                                    read_committed)
#   it_consume_uncommitted TOPIC OUTFILE   the same read_uncommitted: what
#                                    a consumer sees of aborted Kafka
#                                    transactions too
#   it_eos                           true under RELAY_DELIVERY=exactly-once
#   it_alo_only DESC REASON          under exactly-once: one SKIP and the
#                                    test ends (an at-least-once check)
#   it_consume_wait TOPIC OUTFILE N [SECS]  until at least N records
#   it_count FILE                    records in an it_consume file
#   it_wait_checked TOPIC OUT SECS ARGS...  checker.py until complete
#                                    (with --no-dups added under
#                                    exactly-once unless IT_ALLOW_DUPS=1)
#   it_check_confirmed_past DB SUMMARY DESC [SUFFIX]   the slot confirms
#                                    past the checker's max_pg_lsn
#   it_kafka_topic TOPIC [KEY=VALUE...]  creates TOPIC (the broker's
#                                    auto-creation, through a metadata
#                                    request) and sets topic configs
#                                    (kafka-configs.sh's ConfigCommand)
#   it_fields FILE FIELD...          tab-separated fields, one record a line;
#                                    FIELD: topic partition offset key payload
#                                    or h:NAME (header value)
#   it_slot_confirmed DB SLOT        confirmed_flush_lsn
#   it_current_lsn DB                pg_current_wal_lsn()
#   it_wait_confirmed DB SLOT LSN [SECS]
#   lsn_ge A B                       true if LSN A >= LSN B
#   ok DESC / not_ok DESC [DETAIL] / it_check DESC CMD... / it_diag MSG
#   skip DESC REASON                 "ok N - DESC # SKIP REASON": a check
#                                    that does not apply to this server
#   it_pg_has_setting NAME           true if the server knows setting NAME
#   it_show_log FILE [N]             last N lines of FILE, for not_ok DETAIL
#   it_summary                       "N passed, N failed, N skipped";
#                                    exit 1 if failed
#
# Shared by many tests (one copy here instead of one a script):
#   it_scenario DB                   db, type, topic, conf, log for the
#                                    script; it_setup_db DB
#   it_wait_log FILE ERE SECS [N]    until N lines (1) match
#   it_relay_exit PID SECS           EXIT_RC: its status or "running"
#   it_expect_relay_exit PID SECS CODE DESC STOPPED_DESC LOG
#   it_reap_child PID WHAT           a helper process told to quit, reaped
#   it_end_walsender DB [SLOT]       pg_terminate_backend of the walsender
#   it_slot_pid DB [SLOT]            the walsender's PID, 0 if none
#   it_json_get FILE EXPR            a Python expression over FILE's JSON
#   it_restore_kafka                 the run's broker back (a cleanup hook)
#   it_pgpass FILE LINE              a password file, mode 0600
#   it_run_relay NAME ARGS...        foreground, NAME.out/.err, RC
#                                    (IT_RUN_TIMEOUT, 45 s)
#   it_expect_exit NAME CODE DESC    RC == CODE, else the outputs' tails
#   it_expect_err NAME CODE DESC ERE...   and stderr matches each ERE
#   it_expect_in NAME out|err DESC STRING...   each string in the output
#   it_py_check DESC SCRIPT ARGS...  ok when python3 -c SCRIPT exits 0
#   it_stop_checked DESC [PID]       it_stop_relay and a check of exit 0
#   it_http_get PORT PATH            CODE, BODY
#   it_until_ready PORT CODE PREFIX SECS   /readyz until CODE PREFIX...; T
#   it_metric PORT SERIES / it_metric_in FILE SERIES   a sample's value
#   it_webhook_receiver FILE         webhook_receiver.py; HOOK_PORT
#   it_new_uuid, IT_INS              a uuid; "INSERT INTO outbox (id, ...)
#                                    VALUES" for SQL that is under test
#   it_txn DB STATEMENT...           one transaction; prints its xid
#   it_event DB TYPE AGG [EVENT_TYPE] [PAYLOAD]   one event
#   it_events DB TYPE N EVENT_TYPE [AGGS] [PAD]   N one-event transactions
#                                    (IT_EVENTS_PORT: another server)
# Next to this file, sourced by the tests that need them: load.sh (the
# writer under load, the kill loop, the checker), proxy.sh (tcp-proxy),
# mock.sh (kafka-mock), own_pg.sh (a PostgreSQL of the test's own), tls.sh.
#
# Everything in tests/env/lib.sh is available too; fault tests use the
# run's servers through IT_DIR: kafka_stop_hard "$IT_DIR", kafka_restart
# "$IT_DIR", pg_restart "$IT_DIR" (a restart stays up after the test).
# it_start_relay must run in the test's own shell (not inside $(...)) and
# it_stop_relay's status is read as: rc=0; it_stop_relay || rc=$?
#
# Knobs: RELAY_PLUGIN (wal2json or pgoutput: the plugin of the slots
# it_setup_db creates and the slot.plugin it_write_config writes),
# RELAY_DELIVERY (at-least-once, the default, or exactly-once: the
# delivery.guarantee it_write_config writes; a read_committed consumer
# -- kcat's default -- must then see no duplicate, so it_wait_checked
# passes --no-dups),
# IT_PGPORT (25450), IT_KAFKA_PORT (19150, controller +1), RELAY_BIN
# (build/test/outbox-relay: the test hooks), IT_CONSUME_TIMEOUT (30 s per kcat run),
# IT_RELAY_STOP_TIMEOUT (30 s), ENV_KEEP_TMP=1 (keep the temp dir). Also
# exported for tests: PGHOST=127.0.0.1 PGUSER=postgres.

if [[ -n ${_IT_LIB_SOURCED:-} ]]; then
	return 0
fi
_IT_LIB_SOURCED=1

# shellcheck source=../env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

IT_ROOT=$ENV_REPO_ROOT
RELAY_PLUGIN=${RELAY_PLUGIN:-wal2json}
case $RELAY_PLUGIN in
wal2json | pgoutput) ;;
*)
	echo "RELAY_PLUGIN must be wal2json or pgoutput, not '$RELAY_PLUGIN'" >&2
	exit 1
	;;
esac
# The relay's default slot.publication.
IT_PUBLICATION=outbox_pub
RELAY_DELIVERY=${RELAY_DELIVERY:-at-least-once}
case $RELAY_DELIVERY in
at-least-once | exactly-once) ;;
*)
	echo "RELAY_DELIVERY must be at-least-once or exactly-once, not '$RELAY_DELIVERY'" >&2
	exit 1
	;;
esac
RELAY_BIN=${RELAY_BIN:-$IT_ROOT/build/test/outbox-relay}
IT_CONSUME_TIMEOUT=${IT_CONSUME_TIMEOUT:-30}
IT_RELAY_STOP_TIMEOUT=${IT_RELAY_STOP_TIMEOUT:-30}

IT_PASS=0
IT_FAIL=0
IT_SKIP=0
IT_RELAY_PID=
_IT_RELAY_PIDS=()

# ---------------------------------------------------------------- results

it_diag() {
	local line
	while IFS= read -r line; do
		printf '# %s\n' "$line"
	done <<<"$*"
}

ok() {
	IT_PASS=$((IT_PASS + 1))
	printf 'ok %d - %s\n' $((IT_PASS + IT_FAIL + IT_SKIP)) "$1"
	[[ -z ${IT_RESULTS:-} ]] || echo "ok" >>"$IT_RESULTS"
}

not_ok() {
	IT_FAIL=$((IT_FAIL + 1))
	printf 'not ok %d - %s\n' $((IT_PASS + IT_FAIL + IT_SKIP)) "$1"
	[[ -z ${2:-} ]] || it_diag "$2"
	[[ -z ${IT_RESULTS:-} ]] || echo "not ok" >>"$IT_RESULTS"
}

# A check that cannot apply here (a setting this server minor does not
# have): TAP's "# SKIP", counted apart from passes, always with a reason.
skip() {
	IT_SKIP=$((IT_SKIP + 1))
	printf 'ok %d - %s # SKIP %s\n' $((IT_PASS + IT_FAIL + IT_SKIP)) "$1" "$2"
	[[ -z ${IT_RESULTS:-} ]] || echo "skip" >>"$IT_RESULTS"
}

# Runs CMD; ok if it succeeds, not_ok with its output otherwise.
it_check() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "exit $rc: $*${out:+
$out}"
	fi
}

it_show_log() {
	local f=$1 n=${2:-30}
	if [[ -f $f ]]; then
		echo "last $n lines of $f:"
		tail -n "$n" "$f"
	else
		echo "(no $f)"
	fi
}

it_summary() {
	# Servers and relays go before the closing line, so it stays the last.
	env_cleanup
	echo "$IT_PASS passed, $IT_FAIL failed, $IT_SKIP skipped"
	((IT_FAIL == 0)) || exit 1
	exit 0
}

# ---------------------------------------------------------------- servers

it_servers_start() {
	local pgport=${IT_PGPORT:-25450} kport=${IT_KAFKA_PORT:-19150}
	IT_DIR=$(env_mktemp outbox-relay-it)
	env_register_tmpdir "$IT_DIR"
	pg_start "$IT_DIR" "$pgport" || return 1
	kafka_start "$IT_DIR" "$kport" || return 1
	export IT_DIR
	export PGPORT=$pgport PGHOST=127.0.0.1 PGUSER=postgres
	export KAFKA_BROKERS=127.0.0.1:$kport
}

it_servers_stop() {
	kafka_stop "$IT_DIR"
	pg_stop "$IT_DIR"
}

_it_kill_relays() {
	local pid
	for pid in "${_IT_RELAY_PIDS[@]}"; do
		if _env_pid_alive "$pid"; then
			kill -TERM "$pid" 2>/dev/null || true
			_env_wait_pid_gone "$pid" 10 || {
				kill -9 "$pid" 2>/dev/null || true
				_env_wait_pid_gone "$pid" 5 || true
			}
		fi
	done
}

it_init() {
	env_trap_cleanup
	# Relays first: they must not see the servers go away under them.
	env_on_cleanup _it_kill_relays
	IT_TEST_NAME=$(basename "$0" .sh)
	if [[ -z ${IT_DIR:-} ]]; then
		# Run alone: own servers, stopped when this script exits.
		it_servers_start || {
			not_ok "start servers"
			it_summary
		}
	elif [[ -z ${PGPORT:-} || -z ${KAFKA_BROKERS:-} ]]; then
		echo "IT_DIR is set but PGPORT or KAFKA_BROKERS is not" >&2
		exit 1
	fi
	IT_TEST_DIR=$IT_DIR/$IT_TEST_NAME
	rm -rf "$IT_TEST_DIR"
	mkdir -p "$IT_TEST_DIR"
}

# it_scenario DB: the start most tests share. Sets, for the script, db=DB,
# type=tNNN_<epoch> (a fresh topic per run: the broker outlives runs),
# topic=outbox.event.$type, conf=$IT_TEST_DIR/relay.conf and
# log=$IT_TEST_DIR/relay.log; then it_setup_db DB (database, outbox table,
# slot DB).
it_scenario() {
	db=$1
	type=${IT_TEST_NAME%%_*}_$(date +%s)
	topic=outbox.event.$type
	conf=$IT_TEST_DIR/relay.conf
	log=$IT_TEST_DIR/relay.log
	it_setup_db "$db"
}

# ---------------------------------------------------------------- postgres

it_conninfo() {
	echo "host=127.0.0.1 port=$PGPORT dbname=$1 user=postgres"
}

it_sql() { psql_q "$PGPORT" "$1" "$2"; }
it_sql_file() { psql_f "$PGPORT" "$1" "$2"; }

_it_check_name() {
	if [[ ! $1 =~ ^[a-z_][a-z0-9_]*$ ]]; then
		echo "name '$1' must match [a-z_][a-z0-9_]* (database and slot)" >&2
		return 1
	fi
}

it_drop_db() {
	local db=$1
	_it_check_name "$db" || return 1
	# Logical slots pin their database: drop them first (inactive only).
	it_sql postgres "SELECT pg_drop_replication_slot(slot_name)
		FROM pg_replication_slots WHERE database = '$db'" >/dev/null || return 1
	it_sql postgres "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" || return 1
}

it_setup_db() {
	local db=$1 slot=${2:-$1}
	_it_check_name "$db" && _it_check_name "$slot" || return 1
	it_drop_db "$db" || return 1
	it_sql postgres "SELECT pg_drop_replication_slot(slot_name)
		FROM pg_replication_slots WHERE slot_name = '$slot'" >/dev/null || return 1
	it_sql postgres "CREATE DATABASE \"$db\"" || return 1
	it_sql_file "$db" "$IT_ROOT/sql/outbox.sql" || return 1
	it_create_slot "$db" "$slot"
}

# pgoutput reads the publication with each change's historic snapshot:
# it must exist before the slot, or the changes before it fail to decode.
it_create_slot() {
	local db=$1 slot=$2
	_it_check_name "$slot" || return 1
	if [[ $RELAY_PLUGIN == pgoutput &&
		$(it_sql "$db" "SELECT count(*) FROM pg_publication
			WHERE pubname = '$IT_PUBLICATION'") == 0 ]]; then
		it_sql "$db" "CREATE PUBLICATION $IT_PUBLICATION FOR TABLE
			public.outbox WITH (publish = 'insert')" >/dev/null || return 1
	fi
	it_sql "$db" "SELECT pg_create_logical_replication_slot('$slot',
		'$RELAY_PLUGIN')" >/dev/null || return 1
}

it_publish() {
	local db=$1 t
	shift
	[[ $RELAY_PLUGIN == pgoutput ]] || return 0
	for t in "$@"; do
		it_sql "$db" "ALTER PUBLICATION $IT_PUBLICATION ADD $t" \
			>/dev/null || return 1
	done
}

# For a test that checks wal2json's own behaviour (its text, add-tables)
# or that builds wal2json slots and output by hand: under pgoutput it says
# so and ends, instead of failing on what does not apply.
it_wal2json_only() {
	[[ $RELAY_PLUGIN == pgoutput ]] || return 0
	skip "${IT_TEST_NAME:-$(basename "$0" .sh)} under slot.plugin = pgoutput" "$1"
	it_summary
}

# it_eos: true when the relays of this run publish exactly-once
# (RELAY_DELIVERY=exactly-once: transactions, the ledger's skip at start).
it_eos() { [[ $RELAY_DELIVERY == exactly-once ]]; }

# it_alo_only REASON: for a test (or the rest of one) that asserts what
# only at-least-once does (a replay counted, a record published twice on
# purpose): under exactly-once one SKIP with REASON, and the test ends.
it_alo_only() {
	it_eos || return 0
	skip "${IT_TEST_NAME:-$(basename "$0" .sh)} under delivery.guarantee = exactly-once" "$1"
	it_summary
}

# Whether the server has a setting: minors differ (output_plugin_libraries
# exists only in recent 15.x releases), and tests assert a setting's
# behaviour only where it exists.
it_pg_has_setting() {
	[[ $(it_sql postgres "SELECT count(*) FROM pg_settings WHERE name = '$1'") == 1 ]]
}

# it_end_walsender DB [SLOT]: ends the walsender that serves SLOT (default
# DB), as a server restart or a network cut would; the relay must reconnect.
it_end_walsender() {
	it_sql "$1" "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
		WHERE slot_name = '${2:-$1}' AND active" >/dev/null
}

# it_slot_pid DB [SLOT]: the PID of the walsender that serves SLOT
# (default DB), 0 while none does.
it_slot_pid() {
	it_sql "$1" "SELECT coalesce(active_pid, 0) FROM pg_replication_slots
		WHERE slot_name = '${2:-$1}'"
}

# it_json_get FILE EXPR: the Python expression EXPR over d, FILE's JSON.
it_json_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# it_restore_kafka: the run's broker back if a test killed it; for
# env_on_cleanup, so that the tests after a failure still have one.
it_restore_kafka() {
	if ! _env_pid_alive "$(cat "$IT_DIR/kafka/kafka.pid" 2>/dev/null || true)"; then
		kafka_restart "$IT_DIR" || true
	fi
}

# it_pgpass FILE LINE: a password file of that one line, mode 0600 (libpq
# ignores a file others can read).
it_pgpass() {
	echo "$2" >"$1"
	chmod 600 "$1"
}

it_current_lsn() { it_sql "$1" "SELECT pg_current_wal_lsn()"; }

it_slot_confirmed() {
	it_sql "$1" "SELECT confirmed_flush_lsn FROM pg_replication_slots
		WHERE slot_name = '$2'"
}

it_wait_slot_active() {
	local db=$1 slot=$2 secs=${3:-30} i
	for ((i = 0; i < secs * 5; i++)); do
		[[ $(it_sql "$db" "SELECT active FROM pg_replication_slots
			WHERE slot_name = '$slot'") == t ]] && return 0
		sleep 0.2
	done
	return 1
}

# it_wait_exit PID SECS: true once PID has exited (a zombie counts as
# gone), false if it still runs after SECS. The caller reaps it (wait).
it_wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		_env_pid_alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# it_reap_child PID WHAT: a helper process (mock cluster, proxy) that was
# told to quit: waited for up to 5 s, then SIGTERM and 5 s more, then
# SIGKILL with a line on stderr naming WHAT; reaped either way. Returns its
# exit status, 124 if it had to be killed. In the shell that started it.
it_reap_child() {
	local pid=$1 what=$2 rc=0
	if ! it_wait_exit "$pid" 5; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! it_wait_exit "$pid" 5; then
			echo "$what $pid ignores SIGTERM; killed" >&2
			kill -9 "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			return 124
		fi
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

it_wait_confirmed() {
	local db=$1 slot=$2 lsn=$3 secs=${4:-30} cur i
	for ((i = 0; i < secs * 5; i++)); do
		cur=$(it_slot_confirmed "$db" "$slot")
		[[ -n $cur ]] && lsn_ge "$cur" "$lsn" && return 0
		sleep 0.2
	done
	return 1
}

# LSNs are two 32-bit hex halves, "hi/lo"; compared as numbers in bash.
lsn_ge() {
	local re='^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$' ah al bh bl
	if [[ ! $1 =~ $re || ! $2 =~ $re ]]; then
		echo "lsn_ge: not an LSN: '$1' or '$2'" >&2
		return 2
	fi
	ah=$((16#${1%/*})) al=$((16#${1#*/}))
	bh=$((16#${2%/*})) bl=$((16#${2#*/}))
	((ah > bh || (ah == bh && al >= bl)))
}

# ---------------------------------------------------------------- relay

# key = value lines; extra "key=value" arguments are appended. SLOT may be
# left out (default: DB) since a slot name never contains "=".
it_write_config() {
	local file=$1 db=$2 slot=$2 kv
	shift 2
	if (($# > 0)) && [[ $1 != *=* ]]; then
		slot=$1
		shift
	fi
	{
		echo "# written by tests/integration/lib.sh for $IT_TEST_NAME"
		echo "pg.conninfo = $(it_conninfo "$db")"
		echo "kafka.bootstrap.servers = $KAFKA_BROKERS"
		echo "slot.name = $slot"
		[[ $RELAY_PLUGIN == wal2json ]] || echo "slot.plugin = $RELAY_PLUGIN"
		[[ $RELAY_DELIVERY == at-least-once ]] ||
			echo "delivery.guarantee = $RELAY_DELIVERY"
		# Several relays run at once in some tests: a free port each.
		echo "http.listen = 127.0.0.1:0"
		for kv in "$@"; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >"$file"
}

# Must run in the test's own shell (not in $(...)): it_stop_relay reads the
# exit status with `wait`, which only works for the shell's own children.
it_start_relay() {
	local cfg=$1 log=$2
	shift 2
	if [[ ! -x $RELAY_BIN ]]; then
		echo "relay binary missing: $RELAY_BIN (run make)" >&2
		return 1
	fi
	# The file exists before the child opens it: a test that reads the log
	# right after this returns must not race the fork.
	: >>"$log"
	"$RELAY_BIN" --config "$cfg" "$@" </dev/null >>"$log" 2>&1 &
	IT_RELAY_PID=$!
	_IT_RELAY_PIDS+=("$IT_RELAY_PID")
	echo "$IT_RELAY_PID" >"$log.pid"
}

# it_health_port LOG [SECS]: the health endpoint's port, from the relay's
# latest "health endpoint on http://... (port N)" line in LOG; waits up
# to SECS (15) for it, tries once when SECS is 0.
it_health_port() {
	local log=$1 secs=${2:-15} i p
	for ((i = 0; i == 0 || i < secs * 5; i++)); do
		((i == 0)) || sleep 0.2
		p=$(sed -n 's/.*health endpoint on http:[^ ]* (port \([0-9][0-9]*\)).*/\1/p' \
			"$log" 2>/dev/null | tail -n1) || p=
		if [[ -n $p ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

it_relay_alive() { _env_pid_alive "${1:-$IT_RELAY_PID}"; }

# it_stop_checked DESC [PID]: it_stop_relay, then it_check DESC that the
# relay exited 0; STOP_RC keeps its status for what the test does next.
it_stop_checked() {
	STOP_RC=0
	it_stop_relay "${2:-}" || STOP_RC=$?
	it_check "$1" test "$STOP_RC" -eq 0
}

it_stop_relay() {
	local pid=${1:-$IT_RELAY_PID} i rc=0
	if [[ -z $pid ]]; then
		echo "it_stop_relay: no relay started" >&2
		return 125
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < IT_RELAY_STOP_TIMEOUT * 10; i++)); do
		_env_pid_alive "$pid" || break
		sleep 0.1
	done
	if _env_pid_alive "$pid"; then
		echo "it_stop_relay: relay $pid still running ${IT_RELAY_STOP_TIMEOUT}s after SIGTERM; killed" >&2
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rc=124
	else
		wait "$pid" 2>/dev/null || rc=$?
	fi
	[[ $pid != "$IT_RELAY_PID" ]] || IT_RELAY_PID=
	return $rc
}

# ---------------------------------------------------------------- kafka

# kcat's JSON output (-J) escapes tabs and newlines in keys, headers and
# payloads, so one record is exactly one line. A topic that does not exist
# yet is an empty result, not an error.
it_consume() {
	local topic=$1 out=$2 err rc=0
	shift 2
	err=$(timeout "$IT_CONSUME_TIMEOUT" kcat -b "$KAFKA_BROKERS" -C -t "$topic" \
		"$@" -o beginning -e -q -J 2>&1 >"$out") || rc=$?
	if ((rc != 0)); then
		if [[ $err == *"Unknown topic or partition"* ]]; then
			: >"$out"
			return 0
		fi
		echo "it_consume $topic: kcat exit $rc: $err" >&2
		return "$rc"
	fi
}

# it_consume_uncommitted TOPIC OUTFILE: it_consume with
# isolation.level=read_uncommitted: the records of aborted Kafka
# transactions too (and of open ones, up to the high watermark), each
# still one line; offsets skip the transaction markers either way.
it_consume_uncommitted() {
	it_consume "$1" "$2" -X isolation.level=read_uncommitted
}

it_count() {
	if [[ -s $1 ]]; then
		grep -c . "$1"
	else
		echo 0
	fi
}

it_consume_wait() {
	local topic=$1 out=$2 n=$3 secs=${4:-30} deadline
	deadline=$((SECONDS + secs))
	while :; do
		if it_consume "$topic" "$out" 2>/dev/null && (($(it_count "$out") >= n)); then
			return 0
		fi
		((SECONDS < deadline)) || break
		sleep 0.5
	done
	it_consume "$topic" "$out" || true
	return 1
}

# Consumes TOPIC into OUT and runs checker.py check ARGS... on it, again
# every second while the checker says events are still missing (exit 2)
# or the topic cannot be read yet (3), for up to SECS. Returns the
# checker's exit code; its output is in OUT.check.
it_wait_checked() {
	local topic=$1 out=$2 secs=$3 deadline rc
	shift 3
	# A read_committed consumer of exactly-once sees each event once.
	if it_eos && [[ -z ${IT_ALLOW_DUPS:-} && " $* " != *" --no-dups "* ]]; then
		set -- "$@" --no-dups
	fi
	deadline=$((SECONDS + secs))
	while :; do
		rc=0
		if it_consume "$topic" "$out" 2>"$out.err"; then
			python3 "$IT_ROOT/tests/integration/checker.py" check "$@" "$out" >"$out.check" 2>&1 || rc=$?
		else
			rc=3
			cp "$out.err" "$out.check"
		fi
		if ((rc != 2 && rc != 3)) || ((SECONDS >= deadline)); then
			return "$rc"
		fi
		sleep 1
	done
}

# it_check_confirmed_past DB SUMMARY DESC [SUFFIX]: the slot DB confirms
# past the checker's max_pg_lsn (in SUMMARY, its "checker:" line: the
# newest pg_lsn header of the complete set, the last outbox commit's end)
# within 30 s: ok "DESC (LSN)SUFFIX", else not_ok "DESC (LSN or none)" with
# the slot's position. MAX_LSN is that LSN.
it_check_confirmed_past() {
	local db=$1 summary=$2 desc=$3 suffix=${4:-}
	MAX_LSN=$(sed -n 's/.* max_pg_lsn=\([0-9A-Fa-f]*\/[0-9A-Fa-f]*\).*/\1/p' <<<"$summary")
	if [[ -n $MAX_LSN ]] && it_wait_confirmed "$db" "$db" "$MAX_LSN" 30; then
		ok "$desc ($MAX_LSN)$suffix"
	else
		not_ok "$desc (${MAX_LSN:-none})" "confirmed_flush_lsn: $(it_slot_confirmed "$db" "$db")"
	fi
}

it_kafka_topic() {
	local topic=$1 i kv
	shift
	for ((i = 0; i < 20; i++)); do
		kcat -b "$KAFKA_BROKERS" -L -t "$topic" -m 3 2>/dev/null |
			grep 'leader 1' >/dev/null && break
		sleep 0.5
	done
	for kv in "$@"; do
		java -Xmx256m -Dlog4j.configuration=file:/dev/null -cp "$KAFKA_JARS/*" \
			"$(kafka_config_command)" --bootstrap-server "$KAFKA_BROKERS" \
			--entity-type topics --entity-name "$topic" --alter \
			--add-config "$kv" >/dev/null 2>&1 || {
			echo "it_kafka_topic: could not set $kv on $topic" >&2
			return 1
		}
	done
}

it_fields() {
	local file=$1
	shift
	python3 - "$file" "$@" <<-'PY'
	import json, sys
	path, fields = sys.argv[1], sys.argv[2:]

	def esc(v):
	    if v is None:
	        return "\\N"
	    return (str(v).replace("\\", "\\\\").replace("\t", "\\t")
	            .replace("\n", "\\n"))

	with open(path) as f:
	    for line in f:
	        if not line.strip():
	            continue
	        rec = json.loads(line)
	        hdrs = rec.get("headers") or []
	        hmap = {}
	        for i in range(0, len(hdrs) - 1, 2):
	            hmap.setdefault(hdrs[i], hdrs[i + 1])
	        out = []
	        for fld in fields:
	            if fld.startswith("h:"):
	                out.append(esc(hmap.get(fld[2:])))
	            else:
	                out.append(esc(rec.get(fld)))
	        print("\t".join(out))
	PY
}

# ---------------------------------------------------------------- waits

# it_wait_log FILE ERE SECS [N]: true once FILE has at least N (default
# 1) lines matching the extended regex ERE, polled every 0.2 s until SECS
# of wall clock have passed (a slow grep does not stretch the wait); false
# on the deadline. A missing FILE counts as no line yet.
it_wait_log() {
	local f=$1 ere=$2 secs=$3 n=${4:-1} c deadline
	deadline=$((${EPOCHREALTIME/./} + secs * 1000000))
	while :; do
		c=$(grep -cE -- "$ere" "$f" 2>/dev/null) || true
		((${c:-0} >= n)) && return 0
		((${EPOCHREALTIME/./} < deadline)) || return 1
		sleep 0.2
	done
}

# it_relay_exit PID SECS: waits up to SECS for the relay PID to exit by
# itself and sets EXIT_RC to its exit status, or to "running" (then stops
# it, so that the caller's check fails instead of hanging). Must run in
# the test's own shell: `wait` only reaps that shell's children.
it_relay_exit() {
	local pid=$1 secs=$2
	EXIT_RC=0
	if ! it_wait_exit "$pid" "$secs"; then
		it_stop_relay "$pid" >/dev/null 2>&1 || true
		EXIT_RC=running
		return 0
	fi
	wait "$pid" 2>/dev/null || EXIT_RC=$?
}

# it_expect_relay_exit PID SECS CODE DESC STOPPED_DESC LOG: the relay PID
# must end by itself within SECS: it_check DESC that its status is CODE;
# if it still runs, not_ok STOPPED_DESC with LOG's tail, and it is killed.
it_expect_relay_exit() {
	local pid=$1 secs=$2 code=$3 desc=$4 stopped=$5 log=$6 rc=0
	if it_wait_exit "$pid" "$secs"; then
		wait "$pid" 2>/dev/null || rc=$?
		it_check "$desc" test "$rc" -eq "$code"
	else
		not_ok "$stopped" "$(it_show_log "$log" 10)"
		kill -9 "$pid" 2>/dev/null || true
	fi
}

# ---------------------------------------------------------------- one-shot runs

# it_run_relay NAME ARGS...: the relay binary in the foreground with ARGS
# (e.g. --config FILE, a runbook action), stdout to $IT_TEST_DIR/NAME.out,
# stderr to NAME.err, bounded by IT_RUN_TIMEOUT seconds (45; a relay that
# should have exited then fails the caller's check with 124); sets RC.
# Environment for the relay goes before the call: PGPASSFILE=f it_run_relay.
it_run_relay() {
	local name=$1
	shift
	RC=0
	timeout -k 5 "${IT_RUN_TIMEOUT:-45}" "$RELAY_BIN" "$@" </dev/null \
		>"$IT_TEST_DIR/$name.out" 2>"$IT_TEST_DIR/$name.err" || RC=$?
}

# it_expect_exit NAME CODE DESC: ok when the last it_run_relay NAME ended
# with CODE; otherwise not_ok with the tails of its stdout and stderr.
it_expect_exit() {
	local name=$1 code=$2 desc=$3
	if [[ $RC == "$code" ]]; then
		ok "$desc: exit $code"
	else
		not_ok "$desc: exit $code" "exit $RC; stdout:
$(tail -n 20 "$IT_TEST_DIR/$name.out")
stderr:
$(tail -n 20 "$IT_TEST_DIR/$name.err")"
	fi
}

# it_expect_err NAME CODE DESC ERE...: ok when the last it_run_relay NAME
# ended with CODE and its stderr matches every ERE; IT_EXPECT_DIAG=1 adds
# the first ERROR line as a diagnostic on success.
it_expect_err() {
	local name=$1 code=$2 desc=$3 p missing=()
	shift 3
	for p in "$@"; do
		grep -qE -- "$p" "$IT_TEST_DIR/$name.err" || missing+=("$p")
	done
	if [[ $RC == "$code" ]] && ((${#missing[@]} == 0)); then
		ok "$desc: exit $code"
		[[ -z ${IT_EXPECT_DIAG:-} ]] ||
			it_diag "$(grep -m1 ERROR "$IT_TEST_DIR/$name.err" | cut -c1-400)"
	else
		not_ok "$desc: exit $code" "exit $RC${missing[*]:+, missing: ${missing[*]}}
$(tail -n 5 "$IT_TEST_DIR/$name.err")"
	fi
}

# it_expect_in NAME out|err DESC FIXED_STRING...: ok when each string is
# in NAME's stdout (out) or stderr (err).
it_expect_in() {
	local name=$1 stream=$2 desc=$3 s missing=()
	shift 3
	for s in "$@"; do
		grep -qF -- "$s" "$IT_TEST_DIR/$name.$stream" || missing+=("$s")
	done
	if ((${#missing[@]} == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "missing in $stream: ${missing[*]}
$(tail -n 20 "$IT_TEST_DIR/$name.$stream")"
	fi
}

# it_py_check DESC SCRIPT ARGS...: ok when python3 -c SCRIPT ARGS exits 0;
# not_ok with its output otherwise.
it_py_check() {
	local desc=$1 script=$2 out rc=0
	shift 2
	out=$(python3 -c "$script" "$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "$out"
	fi
}

# ---------------------------------------------------------------- http

# it_http_get PORT PATH: GET http://127.0.0.1:PORT/PATH; sets CODE (000
# when nothing answered) and BODY, the body also in $IT_TEST_DIR/http.body.
# In the test's own shell, not in $(...): it sets variables.
it_http_get() {
	CODE=$(curl -s -m 3 -o "$IT_TEST_DIR/http.body" -w '%{http_code}' "http://127.0.0.1:$1$2" || true)
	BODY=$(cat "$IT_TEST_DIR/http.body" 2>/dev/null || true)
}

# it_until_ready PORT CODE PREFIX SECS: polls /readyz every 0.25 s until it
# answers CODE with a body that starts with PREFIX (may be empty), for up
# to SECS; sets T to the seconds it took (one decimal; empty if it never
# did). CODE and BODY stay those of the last answer.
it_until_ready() {
	local i
	T=
	for ((i = 0; i < $4 * 4; i++)); do
		it_http_get "$1" /readyz
		if [[ $CODE == "$2" && $BODY == "$3"* ]]; then
			T=$((i / 4)).$(((i % 4) * 25))
			return 0
		fi
		sleep 0.25
	done
	return 1
}

# it_metric PORT SERIES: the value of SERIES (the whole series name, labels
# included) from the relay's /metrics on PORT; empty if absent or if the
# endpoint does not answer (a check then fails on the empty value; the
# script goes on).
it_metric() {
	{ curl -s -m 5 "http://127.0.0.1:$1/metrics" || true; } | it_metric_in - "$2"
}

# it_metric_in FILE SERIES: the same from a saved scrape (- for stdin).
it_metric_in() { awk -v s="$2" '$1 == s {print $2; exit}' "$1"; }

# it_webhook_receiver FILE: tests/integration/webhook_receiver.py in the
# background, each request a JSON line in FILE (stopped at cleanup, 300 s
# at most); sets HOOK_PORT once it listens. False if it did not come up
# within 5 s ($IT_TEST_DIR/receiver.err says why).
it_webhook_receiver() {
	local i pid
	python3 "$IT_ROOT/tests/integration/webhook_receiver.py" "$1" "$IT_TEST_DIR/hook.port" \
		--lifetime 300 >/dev/null 2>"$IT_TEST_DIR/receiver.err" &
	pid=$!
	env_on_cleanup "kill $pid 2>/dev/null || true"
	for ((i = 0; i < 50; i++)); do
		[[ -s $IT_TEST_DIR/hook.port ]] && break
		sleep 0.1
	done
	HOOK_PORT=$(cat "$IT_TEST_DIR/hook.port" 2>/dev/null || true)
	[[ -n $HOOK_PORT ]]
}

# ---------------------------------------------------------------- events

it_new_uuid() { cat /proc/sys/kernel/random/uuid; }

# The head of an outbox row with its id given: "$IT_INS ('$(it_new_uuid)',
# 'type', 'agg', 'E', '{}')", for statements whose SQL is itself the test.
IT_INS="INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload) VALUES"

# it_txn DB STATEMENT...: the statements as one transaction in DB; prints
# its xid (32 bits, as wal2json shows it) before their output.
it_txn() {
	local db=$1 s
	shift
	{
		echo "BEGIN;"
		echo "SELECT txid_current() % 4294967296;"
		for s in "$@"; do
			echo "$s;"
		done
		echo "COMMIT;"
	} | it_sql_file "$db" -
}

# it_event DB TYPE AGG [EVENT_TYPE] [PAYLOAD]: one event in its own
# transaction (event type E, payload {} by default; PAYLOAD is JSON text).
# IT_EVENTS_PORT (default PGPORT) picks the server, as for it_events.
it_event() {
	local db=$1 type=$2 agg=$3 et=${4:-E} payload=${5:-'{}'}
	psql_q "${IT_EVENTS_PORT:-$PGPORT}" "$db" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('$type', '$agg', '$et', '${payload//\'/\'\'}')" >/dev/null
}

# it_events DB TYPE N EVENT_TYPE [AGGS] [PAD]: N events, one transaction
# each, payload {"i": I} for I = 1..N ({"i": I, "pad": "xx..."} with PAD
# x's when PAD is given); aggregate "a", or "a-(I % AGGS)" when AGGS is not
# empty. IT_EVENTS_PORT (default PGPORT) picks the server: tests with a
# server of their own set it.
it_events() {
	local db=$1 type=$2 n=$3 et=$4 aggs=${5:-} pad=${6:-} agg payload i
	for ((i = 1; i <= n; i++)); do
		agg=a
		[[ -z $aggs ]] || agg=a-$((i % aggs))
		payload="jsonb_build_object('i', $i)"
		[[ -z $pad ]] || payload="jsonb_build_object('i', $i, 'pad', repeat('x', $pad))"
		echo "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('$type', '$agg', '$et', $payload);"
	done | psql_f "${IT_EVENTS_PORT:-$PGPORT}" "$db" - >/dev/null
}
