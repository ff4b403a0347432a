#!/usr/bin/env bash
# t410_sql_kit -- the SQL kit (sql/*.sql) on the real PostgreSQL 15, and
# one application transaction per write path through the relay to Kafka.
#
#  (1) every sql/ file applies to a fresh database, and applying them all
#      a second time changes nothing (pg_dump --schema-only identical);
#      the Prisma DDL documented in outbox.sql applies;
#  (2) roles.sql: the relay role is LOGIN REPLICATION and not superuser,
#      opens a replication=database connection (IDENTIFY_SYSTEM), creates
#      and drops a slot, reads output_plugin_libraries, has no access to
#      the outbox table; a plain role cannot start a walsender; monitor and
#      writer roles as documented;
#  (3) emit.sql: pg_logical_emit_message is PUBLIC out of the box (shown
#      in a database without the kit) and revoked by emit.sql; outbox_emit
#      is callable by the writer role only and refuses NULLs and prefixes
#      wal2json cannot match;
#  (4) inbox.sql: inbox_claim() is true once, then false; undone by a
#      rollback; the plain INSERT ... ON CONFLICT DO NOTHING RETURNING form;
#  (5) cleanup.sql: outbox_partitions_maintain() creates and drops the day
#      partitions it claims to, and is idempotent; an insert for a day
#      without a partition fails; what wal2json 2.5 does with partitions
#      (peeked from a slot: it names the partition, add-tables of the
#      parent or of a name prefix matches nothing, schema.* matches);
#  (6) end to end, every relay running as the least-privilege role of
#      roles.sql (custom names through psql variables), heartbeats on:
#      (a) table insert, row kept; (b) insert-then-delete by the trigger
#      of cleanup.sql, applied while the relay runs; (c) outbox_emit(),
#      with a savepoint rolled back, payload byte-identical to
#      payload::text; (d) table rows and outbox_emit() in one transaction,
#      in order; (e) the partitioned outbox through a second relay with
#      outbox.table = outbox_part.*, including a partition created after
#      it started and one dropped before it read it.
#      (c), (d) and (e) need the relay change proposed with the kit
#      (outbox.emit.prefix, outbox.table = schema.*): with a relay
#      without it they fail, as they should.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
it_wal2json_only "checks the SQL kit and --check against wal2json slots; sql/publication.sql is checked by t430"

SQL=$IT_ROOT/sql
run=$(date +%s)          # fresh topics when run twice against one broker
kit=t410_kit
e2e=t410_e2e
plain=t410_plain         # a role with no privileges at all
app=t410_app             # an application login, member of the writer role
relay=t410_relay         # custom role names for (6), psql variables
monitor=t410_monitor
writer=t410_writer

# psql as ROLE on DB, SQL on stdin; unaligned, tuples only, stops at the
# first error.
psql_as() {
	"$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U "$1" -d "$2" -X -q -At \
		-v ON_ERROR_STOP=1 -f - 2>&1
}

# apply DB FILE [PSQL_ARGS...]: one sql/ file, as postgres, like a DBA.
apply() {
	local db=$1 file=$2
	shift 2
	"$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$db" -X -q \
		-v ON_ERROR_STOP=1 "$@" -f "$file" 2>&1
}

fresh_db() {
	it_drop_db "$1" && it_sql postgres "CREATE DATABASE \"$1\""
}

# pg_dump of 15.14 and later frames its output with \restrict KEY and
# \unrestrict KEY, a random key each run: left out of the comparison.
schema_dump() {
	"$PG_BIN/pg_dump" -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$1" \
		--schema-only --no-comments 2>&1 | grep -Ev '^\\(un)?restrict '
}

# want DESC GOT WANT: ok when GOT is exactly WANT.
want() {
	if [[ $2 == "$3" ]]; then
		ok "$1"
	else
		not_ok "$1" "got:
$2
want:
$3"
	fi
}

# Expects an SQL error containing TEXT: fails_with DESC ROLE DB TEXT <<SQL
fails_with() {
	local desc=$1 role=$2 db=$3 text=$4 out rc=0
	out=$(psql_as "$role" "$db") || rc=$?
	if ((rc != 0)) && [[ $out == *"$text"* ]]; then
		ok "$desc"
	else
		not_ok "$desc" "exit $rc, want an error with \"$text\"; output:
$out"
	fi
}

roles_drop() {
	local r
	for r in "$app" "$plain" "$relay" "$monitor" "$writer" \
		outbox_relay outbox_monitor outbox_writer; do
		it_sql postgres "DROP ROLE IF EXISTS \"$r\"" >/dev/null 2>&1 || true
	done
}

# Leftovers of an earlier run that died: databases first (they hold the
# roles' grants), then the roles.
it_drop_db "$kit"
it_drop_db "$e2e"
roles_drop
it_sql postgres "CREATE ROLE $plain LOGIN" >/dev/null

today=$(it_sql postgres "SELECT (now() AT TIME ZONE 'UTC')::date")
day() { it_sql postgres "SELECT to_char(date '$today' + $1, 'YYYYMMDD')"; }

# ===================================================================== (1)
files=(outbox.sql emit.sql cleanup.sql inbox.sql roles.sql)
fresh_db "$kit"
for f in "${files[@]}"; do
	it_check "apply $f to a fresh database" apply "$kit" "$SQL/$f"
done
dump1=$(schema_dump "$kit")
for f in "${files[@]}"; do
	it_check "apply $f a second time" apply "$kit" "$SQL/$f"
done
dump2=$(schema_dump "$kit")
if [[ -n $dump1 && $dump1 == "$dump2" ]]; then
	ok "second application changes nothing (pg_dump --schema-only identical, $(wc -l <<<"$dump1") lines)"
else
	not_ok "second application changes nothing" "$(diff <(echo "$dump1") <(echo "$dump2") | head -40)"
fi

# The Prisma variant documented in outbox.sql's comment is valid DDL, with
# the columns its config keys name.
sed -n '/^-- BEGIN PRISMA DDL$/,/^-- END PRISMA DDL$/{/^-- [A-Z]* PRISMA DDL$/d;s/^-- //;p}' \
	"$SQL/outbox.sql" >"$IT_TEST_DIR/prisma.sql"
it_check "outbox.sql: the documented Prisma DDL applies" apply "$kit" "$IT_TEST_DIR/prisma.sql"
got=$(it_sql "$kit" "SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ' '
	ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.\"Outbox\"'::regclass
	AND attnum > 0" 2>&1 || true)
want "Prisma table: the columns the documented keys map" "$got" \
	"id:uuid aggregateType:text aggregateId:text eventType:text payload:jsonb createdAt:timestamp(3) without time zone"

# ===================================================================== (2)
got=$(it_sql "$kit" "SELECT rolname, rolsuper, rolreplication, rolcanlogin,
	rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles
	WHERE rolname IN ('outbox_relay', 'outbox_monitor', 'outbox_writer') ORDER BY 1")
want "roles: relay LOGIN REPLICATION, monitor LOGIN, writer NOLOGIN; none superuser" "$got" \
	"outbox_monitor|f|f|t|f|f|f
outbox_relay|f|t|t|f|f|f
outbox_writer|f|f|f|f|f|f"
got=$(it_sql "$kit" "SELECT m.rolname, g.rolname FROM pg_auth_members a
	JOIN pg_roles m ON m.oid = a.member JOIN pg_roles g ON g.oid = a.roleid
	WHERE m.rolname LIKE 'outbox\_%' ORDER BY 1, 2")
want "memberships: relay pg_read_all_settings + pg_read_all_stats, monitor pg_monitor" "$got" \
	"outbox_monitor|pg_monitor
outbox_relay|pg_read_all_settings
outbox_relay|pg_read_all_stats"

repl_conn() { # ROLE DB: IDENTIFY_SYSTEM over replication=database
	"$PG_BIN/psql" -X -At -d "host=127.0.0.1 port=$PGPORT dbname=$2 user=$1 replication=database" \
		-c IDENTIFY_SYSTEM 2>&1
}
out=$(repl_conn outbox_relay "$kit") || true
if [[ $out =~ ^[0-9]+\|1\|[0-9A-F]+/[0-9A-F]+\|$kit$ ]]; then
	ok "relay role: replication=database connection, IDENTIFY_SYSTEM ($out)"
else
	not_ok "relay role: replication=database connection, IDENTIFY_SYSTEM" "$out"
fi
out=$(repl_conn "$plain" "$kit") || true
want "plain role: no walsender" \
	"$(grep -o 'must be superuser or replication role to start walsender' <<<"$out" || echo "$out")" \
	"must be superuser or replication role to start walsender"
out=$(psql_as outbox_relay "$kit" <<-'SQL'
	SELECT slot_name FROM pg_create_logical_replication_slot('t410_kit_probe', 'wal2json');
	SELECT pg_drop_replication_slot('t410_kit_probe');
	SELECT count(*) >= 0 FROM pg_stat_replication_slots;
	SQL
) || true
want "relay role: creates and drops a wal2json slot, reads slot stats" \
	"$(sed -n '1p;3p' <<<"$out")" "t410_kit_probe
t"
# output_plugin_libraries is superuser-only to read unless the role has
# pg_read_all_settings (roles.sql grants it for --check); the setting
# exists only on recent 15.x minors.
if it_pg_has_setting output_plugin_libraries; then
	out=$(psql_as outbox_relay "$kit" <<<"SHOW output_plugin_libraries;") || true
	want "relay role: reads output_plugin_libraries (pg_read_all_settings)" \
		"$out" "pgoutput, test_decoding, wal2json"
else
	skip "relay role: reads output_plugin_libraries (pg_read_all_settings)" \
		"PostgreSQL $(it_sql postgres "SHOW server_version") has no output_plugin_libraries setting"
fi
fails_with "relay role: no access to the outbox table" outbox_relay "$kit" \
	"permission denied for table outbox" <<<"SELECT count(*) FROM outbox;"
# pg_read_all_stats: another role's open transaction shows its start.
"$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$kit" -X -q -At \
	-c "BEGIN; SELECT txid_current(); SELECT pg_sleep(5); COMMIT" >/dev/null 2>&1 &
holder=$!
sleep 1
got=$(psql_as outbox_relay "$kit" <<<"SELECT count(*) FROM pg_stat_activity
	WHERE backend_xid IS NOT NULL AND xact_start IS NOT NULL AND datname = '$kit';")
got_plain=$(psql_as "$plain" "$kit" <<<"SELECT count(*) FROM pg_stat_activity
	WHERE backend_xid IS NOT NULL AND xact_start IS NOT NULL AND datname = '$kit';")
wait "$holder" || true
want "relay role sees other sessions' xact_start (pg_read_all_stats); a plain role does not" \
	"$got $got_plain" "1 0"

# ===================================================================== (3)
it_sql "$kit" "CREATE ROLE $app LOGIN IN ROLE outbox_writer" >/dev/null
fails_with "emit.sql: PUBLIC may no longer call pg_logical_emit_message" "$plain" "$kit" \
	"permission denied for function pg_logical_emit_message" \
	<<<"SELECT pg_logical_emit_message(true, 'outbox', '{}');"
fails_with "emit.sql: outbox_emit is not PUBLIC" "$plain" "$kit" \
	"permission denied for function outbox_emit" \
	<<<"SELECT outbox_emit('A', 'a-1', 'E', '{}');"
got=$(psql_as "$app" "$kit" <<<"SELECT outbox_emit('A', 'a-1', 'E', '{}') IS NOT NULL;")
want "emit.sql: the writer role calls outbox_emit (SECURITY DEFINER)" "$got" "t"
fails_with "outbox_emit refuses a NULL payload" "$app" "$kit" "must not be NULL" \
	<<<"SELECT outbox_emit('A', 'a-1', 'E', NULL);"
fails_with "outbox_emit refuses a prefix wal2json cannot match" "$app" "$kit" \
	"contains a comma, white space or a backslash" \
	<<<"SET outbox.emit_prefix = 'a,b'; SELECT outbox_emit('A', 'a-1', 'E', '{}');"
got=$(psql_as "$app" "$kit" <<<"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('A', 'a-1', 'E', '{}'); INSERT INTO outbox_partitioned
	(aggregate_type, aggregate_id, event_type, payload) VALUES ('A', 'a-1', 'E', '{}');
	SELECT 'inserted';")
want "writer role inserts into outbox and outbox_partitioned (INSERT only)" "$got" "inserted"
fails_with "writer role cannot read the outbox" "$app" "$kit" "permission denied" \
	<<<"SELECT count(*) FROM outbox;"

# ===================================================================== (4)
eid=$(it_new_uuid)
got=$(psql_as postgres "$kit" <<-SQL
	SELECT inbox_claim('$eid');
	SELECT inbox_claim('$eid');
	SQL
) || true
want "inbox_claim: true the first time, false the second" "$(sed -n 1,2p <<<"$got")" "t
f"
rid=$(it_new_uuid)
got=$(psql_as postgres "$kit" <<-SQL
	BEGIN; SELECT inbox_claim('$rid'); ROLLBACK;
	SELECT inbox_claim('$rid');
	SQL
)
want "inbox_claim is undone by a rollback of the consumer's transaction" "$got" "t
t"
sid=$(it_new_uuid)
got=$(psql_as postgres "$kit" <<-SQL
	INSERT INTO processed_events (event_id) VALUES ('$sid') ON CONFLICT (event_id) DO NOTHING RETURNING 'first';
	INSERT INTO processed_events (event_id) VALUES ('$sid') ON CONFLICT (event_id) DO NOTHING RETURNING 'again';
	SELECT 'end';
	SQL
)
want "plain check-and-insert: a row the first time, none the second" "$got" "first
end"

# ===================================================================== (5)
parts() {
	it_sql "$kit" "SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'public.outbox_partitioned'::regclass"
}
want "cleanup.sql created today's partition and the next two" "$(parts)" \
	"outbox_p$(day 0) outbox_p$(day 1) outbox_p$(day 2)"
got=$(it_sql "$kit" "SELECT action || ' ' || partition_name
	FROM outbox_partitions_maintain(2, 7, date '$today' - 20)")
want "maintain(2, 7, today-20) creates three past days, drops nothing" "$got" \
	"created outbox_part.outbox_p$(day -20)
created outbox_part.outbox_p$(day -19)
created outbox_part.outbox_p$(day -18)"
got=$(it_sql "$kit" "SELECT action || ' ' || partition_name
	FROM outbox_partitions_maintain(3, 7)")
want "maintain(3, 7) creates today+3 and drops the days before today-7" "$got" \
	"created outbox_part.outbox_p$(day 3)
dropped outbox_part.outbox_p$(day -20)
dropped outbox_part.outbox_p$(day -19)
dropped outbox_part.outbox_p$(day -18)"
got=$(it_sql "$kit" "SELECT count(*) FROM outbox_partitions_maintain(3, 7)")
want "maintain is idempotent (nothing to do the second time)" "$got" 0
want "partitions left: today .. today+3" "$(parts)" \
	"outbox_p$(day 0) outbox_p$(day 1) outbox_p$(day 2) outbox_p$(day 3)"
fails_with "an insert for a day without a partition fails in the application's transaction" \
	"$app" "$kit" "no partition of relation" <<-SQL
	INSERT INTO outbox_partitioned (aggregate_type, aggregate_id, event_type, payload, created_at)
	VALUES ('A', 'a-1', 'E', '{}', date '$today' + 30);
	SQL

# What wal2json does with partitions: a slot of its own, peeked.
it_sql "$kit" "SELECT pg_create_logical_replication_slot('t410_kit_peek', 'wal2json')" >/dev/null
it_sql "$kit" "INSERT INTO outbox_partitioned (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('A', 'peek-1', 'E', '{}')"
peek() { # ADD_TABLES: the table names of the I records
	it_sql "$kit" "SELECT data::json->>'schema' || '.' || (data::json->>'table')
		FROM pg_logical_slot_peek_changes('t410_kit_peek', NULL, NULL,
		'format-version', '2', 'actions', 'insert', 'add-tables', \$t\$$1\$t\$)
		WHERE data::json->>'action' = 'I'" 2>&1
}
p_parent=$(peek public.outbox_partitioned)
p_prefix=$(peek 'public.outbox_p*')
p_schema=$(peek 'outbox_part.*')
p_all=$(peek '*.*')
p_root=$(it_sql "$kit" "SELECT count(*) FROM pg_logical_slot_peek_changes('t410_kit_peek',
	NULL, NULL, 'format-version', '2', 'partition-root', '1')" 2>&1 || true)
it_diag "wal2json add-tables=public.outbox_partitioned: [${p_parent}]"
it_diag "wal2json add-tables=public.outbox_p*: [${p_prefix}]"
it_diag "wal2json add-tables=outbox_part.*: [${p_schema}]"
it_diag "wal2json add-tables=*.*: [${p_all}]"
it_diag "wal2json partition-root=1: $(head -n1 <<<"$p_root")"
want "wal2json names the partition, not the parent" "$p_all" "outbox_part.outbox_p$(day 0)"
want "wal2json add-tables of the parent matches nothing" "$p_parent" ""
want "wal2json add-tables with a name prefix (public.outbox_p*) matches nothing" "$p_prefix" ""
want "wal2json add-tables=outbox_part.* matches the partition" "$p_schema" "outbox_part.outbox_p$(day 0)"
want "wal2json 2.5 has no partition-root option" \
	"$(grep -o 'option "partition-root" = "1" is unknown' <<<"$p_root" || echo "$p_root")" \
	'option "partition-root" = "1" is unknown'
it_sql "$kit" "SELECT pg_drop_replication_slot('t410_kit_peek')" >/dev/null

# ===================================================================== (6)
fresh_db "$e2e"
# The PostgreSQL 15 default that emit.sql closes: before it, any role may
# write a logical message, and so could publish through the relay.
got=$(psql_as "$plain" "$e2e" <<<"SELECT pg_logical_emit_message(true, 'outbox', '{}') IS NOT NULL;" || true)
want "PostgreSQL 15 default: a plain role may call pg_logical_emit_message" "$got" "t"
rvars=(-v "relay_role=$relay" -v "monitor_role=$monitor" -v "writer_role=$writer")
for f in outbox.sql emit.sql inbox.sql; do
	it_check "e2e: apply $f" apply "$e2e" "$SQL/$f"
done
it_check "e2e: apply roles.sql with custom role names" apply "$e2e" "$SQL/roles.sql" "${rvars[@]}"
it_sql "$e2e" "CREATE ROLE $app LOGIN" >/dev/null 2>&1 || true
it_sql "$e2e" "GRANT $writer TO $app;
	CREATE TABLE business (id bigserial PRIMARY KEY, note text NOT NULL);
	GRANT INSERT ON business TO $app; GRANT USAGE ON SEQUENCE business_id_seq TO $app"
for s in t410_e2e t410_part; do
	it_check "relay role creates slot $s" psql_as "$relay" "$e2e" \
		<<<"SELECT pg_create_logical_replication_slot('$s', 'wal2json');"
done

conninfo="host=127.0.0.1 port=$PGPORT dbname=$e2e user=$relay"
confA=$IT_TEST_DIR/relay_a.conf
logA=$IT_TEST_DIR/relay_a.log
it_write_config "$confA" "$e2e" t410_e2e "pg.conninfo=$conninfo" \
	status.interval.ms=500 heartbeat.interval.ms=500 watchdog.interval.ms=500 \
	outbox.emit.prefix=outbox
it_start_relay "$confA" "$logA"
relayA=$IT_RELAY_PID
curlog=$logA
if it_wait_slot_active "$e2e" t410_e2e 30; then
	ok "relay A (public.outbox) streams"
else
	not_ok "relay A (public.outbox) streams" "$(it_show_log "$logA" 20)"
fi
got=$(it_sql "$e2e" "SELECT r.usename FROM pg_stat_replication r
	JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = 't410_e2e'")
want "relay A is connected as $relay (not superuser)" "$got" "$relay"

# (a) table insert: the row stays.
tA=T410tab_$run
ua=$(it_new_uuid)
psql_as "$app" "$e2e" >/dev/null <<-SQL
	BEGIN;
	INSERT INTO business (note) VALUES ('order placed');
	INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$ua', '$tA', 'tab-1', 'OrderPlaced', '{"order": 1, "amount": 19.90}');
	COMMIT;
	SQL
want "(a) the outbox row is kept" "$(it_sql "$e2e" "SELECT count(*) FROM outbox WHERE id = '$ua'")" 1

# (b) cleanup.sql applied while the relay runs (a migration), roles.sql
# again for the new table; then the trigger deletes each row at once.
it_check "e2e: apply cleanup.sql while the relay runs" apply "$e2e" "$SQL/cleanup.sql"
it_check "e2e: apply roles.sql again (grants on the new tables)" apply "$e2e" "$SQL/roles.sql" "${rvars[@]}"
tD=T410del_$run
ud=$(it_new_uuid)
psql_as "$app" "$e2e" >/dev/null <<-SQL
	BEGIN;
	INSERT INTO business (note) VALUES ('order paid');
	INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$ud', '$tD', 'del-1', 'OrderPaid', '{"order": 1}');
	COMMIT;
	SQL
want "(b) the trigger deleted the row in its own transaction" \
	"$(it_sql "$e2e" "SELECT count(*) FROM outbox WHERE id = '$ud'")" 0

# (c) outbox_emit, one savepoint rolled back.
tE=T410emit_$run
pe='{"amount": 19.90, "big": 123456789012345678901234567890.000, "s": "Grüße \"q\" 😀 \\\\ back", "list": [1, 2.50, {"a": null}]}'
out=$(psql_as "$app" "$e2e" <<-SQL
	BEGIN;
	SELECT 'xid', txid_current() % 4294967296;
	INSERT INTO business (note) VALUES ('order shipped');
	SELECT 'e1', outbox_emit('$tE', 'emit-1', 'OrderShipped', \$j\$$pe\$j\$);
	SAVEPOINT s;
	SELECT 'e2', outbox_emit('$tE', 'emit-1', 'RolledBack', '{"gone": true}');
	ROLLBACK TO SAVEPOINT s;
	SELECT 'e3', outbox_emit('$tE', 'emit-1', 'Second', '{"second": 2}');
	COMMIT;
	SQL
) || true
exid=$(awk -F'|' '$1 == "xid" {print $2}' <<<"$out")
e1=$(awk -F'|' '$1 == "e1" {print $2}' <<<"$out")
e3=$(awk -F'|' '$1 == "e3" {print $2}' <<<"$out")
pe_text=$(it_sql "$e2e" "SELECT \$j\$$pe\$j\$::jsonb::text")

# (d) rows and outbox_emit in one transaction: one key, so one partition,
# in statement order.
tM=T410mix_$run
um1=$(it_new_uuid)
um3=$(it_new_uuid)
out=$(psql_as "$app" "$e2e" <<-SQL
	BEGIN;
	INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$um1', '$tM', 'mix-1', 'Step', '{"step": 1}');
	SELECT outbox_emit('$tM', 'mix-1', 'Step', '{"step": 2}');
	INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$um3', '$tM', 'mix-1', 'Step', '{"step": 3}');
	COMMIT;
	SQL
) || true
um2=$out

# Kafka: (a) and (b).
check_topic() { # DESC TOPIC N FIELDS WANT
	local desc=$1 topic=outbox.event.$2 n=$3 fields=$4 wantv=$5 f got
	f=$IT_TEST_DIR/$2.json
	if ! it_consume_wait "$topic" "$f" "$n" "${6:-30}"; then
		not_ok "$desc" "$(it_count "$f") of $n records on $topic
$(it_show_log "$curlog" 10)"
		return
	fi
	sleep 1
	it_consume "$topic" "$f"
	# shellcheck disable=SC2086
	got=$(it_fields "$f" $fields)
	want "$desc" "$got" "$wantv"
}
check_topic "(a) table insert: key, value, id, event_type, aggregate_type" "$tA" 1 \
	"key payload h:id h:event_type h:aggregate_type" \
	"$(printf 'tab-1\t{"order": 1, "amount": 19.90}\t%s\tOrderPlaced\t%s' "$ua" "$tA")"
check_topic "(b) insert-then-delete (trigger): published once" "$tD" 1 \
	"key payload h:id h:event_type h:aggregate_type" \
	"$(printf 'del-1\t{"order": 1}\t%s\tOrderPaid\t%s' "$ud" "$tD")"

# Kafka: (c) -- value byte for byte what jsonb prints, headers from the
# message, the application's xid, the rolled back savepoint absent.
esc() { echo "${1//\\/\\\\}"; }
check_topic "(c) outbox_emit: 2 events (savepoint rolled back), value == payload::text, headers, pg_xid" \
	"$tE" 2 "key payload h:id h:event_type h:aggregate_type h:pg_xid" \
	"$(printf 'emit-1\t%s\t%s\tOrderShipped\t%s\t%s\nemit-1\t{"second": 2}\t%s\tSecond\t%s\t%s' \
		"$(esc "$pe_text")" "$e1" "$tE" "$exid" "$e3" "$tE" "$exid")"
check_topic "(d) rows and outbox_emit in one transaction: in order, one commit LSN" \
	"$tM" 3 "key payload h:id" \
	"$(printf 'mix-1\t{"step": 1}\t%s\nmix-1\t{"step": 2}\t%s\nmix-1\t{"step": 3}\t%s' \
		"$um1" "$um2" "$um3")"
f=$IT_TEST_DIR/$tM.json
if [[ -s $f ]]; then
	want "(d) the three records carry the same pg_lsn" \
		"$(it_fields "$f" h:pg_lsn | sort -u | wc -l)" 1
fi

# Heartbeats went through the revoke (roles.sql grants the relay role).
port=$(it_health_port "$logA" || true)
hb=
for ((i = 0; i < 50; i++)); do
	[[ -n $port ]] || break
	hb=$(curl -s -m 5 "http://127.0.0.1:$port/slot" | python3 -c '
import json, sys
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "heartbeats_seen":
                return v
            r = find(v)
            if r is not None:
                return r
    return None
print(find(json.load(sys.stdin)) or 0)' 2>/dev/null || echo 0)
	((hb > 0)) && break
	sleep 0.2
done
if [[ -n $hb ]] && ((hb > 0)); then
	ok "relay A's heartbeats (pg_logical_emit_message as $relay) are seen ($hb)"
else
	not_ok "relay A's heartbeats (pg_logical_emit_message as $relay) are seen" \
		"port ${port:-?}, heartbeats_seen ${hb:-?}
$(grep -i 'heartbeat\|permission' "$logA" | tail -5)"
fi

# (e) the partitioned outbox, through a second relay on its own slot
# (outbox_emit off there, or both relays would publish those events).
tP=T410part_$run
confB=$IT_TEST_DIR/relay_b.conf
logB=$IT_TEST_DIR/relay_b.log
it_write_config "$confB" "$e2e" t410_part "pg.conninfo=$conninfo" \
	status.interval.ms=500 "outbox.table=outbox_part.*" "outbox.emit.prefix="
it_start_relay "$confB" "$logB"
relayB=$IT_RELAY_PID
curlog=$logB
up_b=
if it_wait_slot_active "$e2e" t410_part 20; then
	up_b=1
	ok "relay B (outbox.table = outbox_part.*) streams"
else
	not_ok "relay B (outbox.table = outbox_part.*) streams" "$(it_show_log "$logB" 10)"
fi
up1=$(it_new_uuid)
up2=$(it_new_uuid)
up3=$(it_new_uuid)
psql_as "$app" "$e2e" >/dev/null <<-SQL
	BEGIN;
	INSERT INTO business (note) VALUES ('partitioned');
	INSERT INTO outbox_partitioned (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$up1', '$tP', 'part-1', 'Today', '{"day": 0}');
	COMMIT;
	SQL
# A partition created after relay B started.
it_sql "$e2e" "SELECT count(*) FROM outbox_partitions_maintain(0, 365, date '$today' + 10)" >/dev/null
psql_as "$app" "$e2e" >/dev/null <<-SQL
	INSERT INTO outbox_partitioned (id, aggregate_type, aggregate_id, event_type, payload, created_at)
	VALUES ('$up2', '$tP', 'part-1', 'NewPartition', '{"day": 10}', date '$today' + 10);
	SQL
if [[ -n $up_b ]]; then
	check_topic "(e) partitioned outbox: today's partition and one created after the relay started" \
		"$tP" 2 "key payload h:id h:event_type" \
		"$(printf 'part-1\t{"day": 0}\t%s\tToday\npart-1\t{"day": 10}\t%s\tNewPartition' "$up1" "$up2")"
	it_stop_checked "relay B exits 0 on SIGTERM" "$relayB"
else
	not_ok "(e) partitioned outbox: today's partition and one created after the relay started" \
		"relay B is not running"
fi
# Relay B down: a row in the new partition, then the partition dropped
# before anyone read it. The slot still has it.
psql_as "$app" "$e2e" >/dev/null <<-SQL
	INSERT INTO outbox_partitioned (id, aggregate_type, aggregate_id, event_type, payload, created_at)
	VALUES ('$up3', '$tP', 'part-1', 'Dropped', '{"day": 10, "dropped": true}', date '$today' + 10);
	SQL
it_sql "$e2e" "DROP TABLE outbox_part.outbox_p$(day 10)"
if [[ -n $up_b ]]; then
	it_start_relay "$confB" "$logB"
	relayB=$IT_RELAY_PID
	check_topic "(e) a row of a partition dropped before the relay read it is still published" \
		"$tP" 3 "h:id h:event_type" \
		"$(printf '%s\tToday\n%s\tNewPartition\n%s\tDropped' "$up1" "$up2" "$up3")"
else
	not_ok "(e) a row of a partition dropped before the relay read it is still published" \
		"relay B is not running"
fi

# Relay A published nothing of the partitioned table, relay B nothing of
# outbox_emit: the counts above are exact (check_topic reads everything).
it_stop_checked "relay A exits 0 on SIGTERM" "$relayA"
if [[ -n $up_b ]] && it_relay_alive "$relayB"; then
	it_stop_checked "relay B exits 0 on SIGTERM" "$relayB"
fi

it_drop_db "$kit" || true
it_drop_db "$e2e" || true
roles_drop
it_summary
