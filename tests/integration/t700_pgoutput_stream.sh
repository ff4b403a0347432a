#!/usr/bin/env bash
# t700_pgoutput_stream -- the daemon with slot.plugin = pgoutput, whatever
# RELAY_PLUGIN says: a publication on public.outbox (inserts only), then
# the slot, both made with psql as the runbook's SQL says.
#  (a) rows and outbox_emit() messages in one stream: every event once,
#      with its key, payload and headers; pg_xid is the writing
#      transaction's, pg_lsn its commit LSN (after the row's own WAL,
#      before the WAL written after the commit: pgoutput's Begin has no
#      commit end, docs/pgoutput.md); heartbeats are seen (/metrics) and
#      never published;
#  (b) a walsender terminated while 40 acked events are not yet confirmed
#      (status.interval.ms 10 s): the next session replays from the slot,
#      skips the 40 on Begin's final_lsn and verifies the newest at its
#      Commit; 5 more events; exactly 45 records, summary skipped=40;
#  (c) a quiet outbox in a busy database: 300 transactions on a table
#      outside the publication send pgoutput nothing at all (no Begin, no
#      Commit), heartbeats off; the slot's confirmed_flush_lsn still
#      passes the WAL they wrote (keepalives), and nothing is published;
#  (d) a LATIN1 database: 'é' is stored as e9; pgoutput converts text to
#      the connection's client_encoding, which the relay sets to UTF8, so
#      Kafka gets c3 a9 (without it the relay fail-stops on bytes that
#      are not UTF-8).
set -euo pipefail
RELAY_PLUGIN=pgoutput
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t700_pgo
out=$IT_TEST_DIR/out.json

it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
it_sql "$db" "CREATE TABLE busy (n int, pad text)" >/dev/null
it_check "the slot is a pgoutput slot" test "$(it_sql "$db" "SELECT plugin
	FROM pg_replication_slots WHERE slot_name = '$db'")" = pgoutput

summary_field() { # LOG FIELD
	grep -o "summary: .*$2=[0-9]*" "$1" | tail -n1 | sed "s/.*$2=//" || true
}
events() { # N TAG: N one-event transactions, every third an outbox_emit()
	local i
	for ((i = 1; i <= $1; i++)); do
		if ((i % 3 == 0)); then
			echo "SELECT outbox_emit('$type', 'a-$((i % 4))', '$2',
				'{\"i\": $i, \"via\": \"emit\"}');"
		else
			echo "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
				VALUES (gen_random_uuid(), '$type', 'a-$((i % 4))', '$2', '{\"i\": $i}');"
		fi
	done | it_sql_file "$db" - >/dev/null
}

# ------------------------------------------------------------------ (a)
it_write_config "$conf" "$db" outbox.emit.prefix=outbox heartbeat.interval.ms=500 \
	watchdog.interval.ms=500 status.interval.ms=10000 status.min.interval.ms=10000 \
	reconnect.backoff.ms=100 reconnect.backoff.max.ms=500 stats.interval.ms=1000
it_start_relay "$conf" "$log"
relay=$IT_RELAY_PID
it_check "(a) relay streams from the pgoutput slot" it_wait_slot_active "$db" "$db" 30
port=$(it_health_port "$log") || port=0

# One transaction whose xid and LSNs are known: pg_lsn must lie between
# the row's own WAL and the WAL after the commit.
before=$(it_sql_file "$db" - <<-SQL | grep -E '^[0-9]+ [0-9A-F]+/[0-9A-F]+$'
	BEGIN;
	INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('00000000-0000-4000-8000-000000000700', '$type', 'known', 'Known',
	        '{"note": "ü 😀"}');
	SELECT pg_current_xact_id() || ' ' || pg_current_wal_insert_lsn();
	COMMIT;
	SQL
)
after=$(it_current_lsn "$db")
events 39 first
if it_consume_wait "$topic" "$out" 40 30; then
	ok "(a) 40 events published (27 rows, 13 outbox_emit())"
else
	not_ok "(a) 40 events published" "$(it_count "$out") records; $(it_show_log "$log" 10)"
fi
known=$(it_fields "$out" h:id h:pg_xid h:pg_lsn key h:event_type payload |
	awk -F'\t' '$1 == "00000000-0000-4000-8000-000000000700"')
IFS=$'\t' read -r _ kxid klsn kkey ktype kpay <<<"$known"
it_check "(a) pg_xid is the writing transaction's (${before% *})" \
	test "$kxid" = "${before% *}"
if [[ -n $klsn ]] && lsn_ge "$klsn" "${before#* }" && ! lsn_ge "$klsn" "$after"; then
	ok "(a) pg_lsn $klsn is the commit LSN: after the row (${before#* }), before the next WAL ($after)"
else
	not_ok "(a) pg_lsn is the commit LSN" "pg_lsn '$klsn', row ${before#* }, after $after"
fi
it_check "(a) key, type and payload as written" test \
	"$kkey|$ktype|$kpay" = 'known|Known|{"note": "ü 😀"}'
badlsn=$(it_fields "$out" h:pg_lsn | grep -cvE '^[0-9A-F]{1,8}/[0-9A-F]{1,8}$' || true)
it_check "(a) every pg_lsn header is an LSN" test "$badlsn" = 0
emitted=$(it_fields "$out" payload | grep -c '"via": "emit"' || true)
it_check "(a) the 13 outbox_emit() events are among them (got $emitted)" test "$emitted" = 13

# ------------------------------------------------------------------ (b)
slot_before=$(it_slot_confirmed "$db" "$db")
if lsn_ge "$slot_before" "$after"; then
	not_ok "(b) precondition: the slot is behind the acked events" "slot $slot_before"
else
	ok "(b) precondition: the slot ($slot_before) is behind the acked events"
fi
it_end_walsender "$db"
it_check "(b) the relay reconnected" it_wait_log "$log" 'streaming from slot' 10 2
it_check "(b) it replays without publishing again" \
	grep -q 'transactions already published are skipped' "$log"
events 5 second
it_consume_wait "$topic" "$out" 45 30 || true
sleep 2
it_consume "$topic" "$out"
n=$(it_count "$out")
ids=$(it_fields "$out" h:id | sort -u | grep -c . || true)
if ((n == 45 && ids == 45)); then
	ok "(b) 45 records, 45 distinct ids: nothing acked was published again"
else
	not_ok "(b) 45 records, 45 distinct ids" "records $n, ids $ids; $(it_show_log "$log" 15)"
fi
# (a)'s heartbeats, read late so that (b)'s precondition is not raced.
hbs=
for ((i = 0; i < 50; i++)); do
	hbs=$(it_metric "$port" outbox_relay_heartbeats_total)
	hbs=${hbs%.*}
	[[ $hbs =~ ^[0-9]+$ ]] && ((hbs > 0)) && break
	sleep 0.2
done
if [[ $hbs =~ ^[0-9]+$ ]] && ((hbs > 0)); then
	ok "(a) heartbeats seen through pgoutput (heartbeats_total $hbs)"
else
	not_ok "(a) heartbeats seen through pgoutput" "heartbeats_total '${hbs}'"
fi
it_stop_checked "(b) relay exits 0 on SIGTERM" "$relay"
it_check "(b) summary: skipped=40" test "$(summary_field "$log" skipped)" = 40

# ------------------------------------------------------------------ (c)
conf_c=$IT_TEST_DIR/quiet.conf
log_c=$IT_TEST_DIR/quiet.log
it_write_config "$conf_c" "$db" outbox.emit.prefix=outbox heartbeat.interval.ms=0 \
	status.interval.ms=500 stats.interval.ms=1000
it_start_relay "$conf_c" "$log_c"
relay=$IT_RELAY_PID
it_check "(c) relay streams" it_wait_slot_active "$db" "$db" 30
for ((i = 0; i < 300; i++)); do
	echo "INSERT INTO busy SELECT g, repeat('x', 200) FROM generate_series(1, 20) g;"
done | it_sql_file "$db" - >/dev/null
busy_end=$(it_current_lsn "$db")
if it_wait_confirmed "$db" "$db" "$busy_end" 30; then
	ok "(c) confirmed_flush_lsn passed the busy table's WAL ($busy_end) with no heartbeats"
else
	not_ok "(c) confirmed_flush_lsn passed $busy_end" \
		"slot at $(it_slot_confirmed "$db" "$db"); $(it_show_log "$log_c" 10)"
fi
it_stop_checked "(c) relay exits 0" "$relay"
it_check "(c) nothing published and no transaction read for the busy table" \
	test "$(summary_field "$log_c" received):$(summary_field "$log_c" txns)" = 0:0

# ------------------------------------------------------------------ (d)
ldb=t700_latin1
ltype=t700l_$(date +%s)
ltopic=outbox.event.$ltype
it_drop_db "$ldb"
it_sql postgres "CREATE DATABASE $ldb ENCODING 'LATIN1' LC_COLLATE 'C'
	LC_CTYPE 'C' TEMPLATE template0" >/dev/null
it_sql_file "$ldb" "$IT_ROOT/sql/outbox.sql" >/dev/null
it_create_slot "$ldb" "$ldb"
conf_d=$IT_TEST_DIR/latin1.conf
log_d=$IT_TEST_DIR/latin1.log
it_write_config "$conf_d" "$ldb" status.interval.ms=500
it_start_relay "$conf_d" "$log_d"
relay=$IT_RELAY_PID
it_check "(d) relay streams from a LATIN1 database" it_wait_slot_active "$ldb" "$ldb" 30
# psql sends UTF-8; the server stores LATIN1.
PGCLIENTENCODING=UTF8 it_sql "$ldb" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$ltype', 'clé', 'Créé', '{\"s\": \"é\"}')" >/dev/null
stored=$(it_sql "$ldb" "SELECT encode(convert_to(aggregate_id, 'LATIN1'), 'hex')
	FROM outbox WHERE aggregate_type = '$ltype'")
it_check "(d) stored as LATIN1 (clé = $stored)" test "$stored" = 636ce9
lout=$IT_TEST_DIR/latin1.json
if it_consume_wait "$ltopic" "$lout" 1 30; then
	got=$(it_fields "$lout" key h:event_type payload)
	it_check "(d) key, type and payload arrive as UTF-8" test \
		"$got" = $'clé\tCréé\t{"s": "é"}'
	it_check "(d) the key's bytes are 63 6c c3 a9" test \
		"$(it_fields "$lout" key | tr -d '\n' | od -An -tx1 | tr -d ' \n')" = 636cc3a9
else
	not_ok "(d) the LATIN1 event published" "$(it_show_log "$log_d" 10)"
fi
it_stop_checked "(d) relay exits 0 (no fail-stop on the converted text)" "$relay"

it_summary
