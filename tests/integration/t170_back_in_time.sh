#!/usr/bin/env bash
# t170_back_in_time -- a database restored to an earlier copy while the
# relay runs: the relay must stop (exit 69) instead of confirming what the
# restored server never wrote, and a relay started afterwards publishes
# what the restored database commits. On a cluster of the test's own (its
# data directory is copied and restored).
#  (a) restored copy, no writes since: the server's WAL ends before what
#      the relay confirmed. Exit 69, the log says the database went back
#      in time and names the LSN range; the slot is not moved past the
#      server's WAL; the 30 events committed after the restore all arrive
#      once a new relay starts.
#  (b) restored copy, then enough writes that its WAL passes what the
#      relay confirmed before it comes back (the relay is SIGSTOPped while
#      that happens): the WAL end alone cannot tell; the newest commit the
#      relay confirmed is not there any more. Exit 69, the same message;
#      the 10 events committed after the restore arrive with a new relay.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

own=$IT_TEST_DIR/own
port=$((PGPORT + 11))
db=t170_rewind
type=t170_$(date +%s)
topic=outbox.event.$type
records=$IT_TEST_DIR/out.json
if ! pg_start "$own" "$port" "$db" 2>"$IT_TEST_DIR/pg.err"; then
	not_ok "own PostgreSQL cluster on port $port" "$(cat "$IT_TEST_DIR/pg.err")"
	it_summary
fi
psql_f "$port" "$db" "$IT_ROOT/sql/outbox.sql" >/dev/null
[[ $RELAY_PLUGIN == wal2json ]] || psql_q "$port" "$db" "CREATE PUBLICATION
	$IT_PUBLICATION FOR TABLE public.outbox WITH (publish = 'insert')" >/dev/null
psql_q "$port" "$db" "SELECT pg_create_logical_replication_slot('$db', '$RELAY_PLUGIN')" >/dev/null

sql() { psql_q "$port" "$db" "$1"; }
conf=$IT_TEST_DIR/relay.conf
{
	echo "pg.conninfo = host=127.0.0.1 port=$port dbname=$db user=postgres"
	echo "kafka.bootstrap.servers = $KAFKA_BROKERS"
	echo "slot.name = $db"
	echo "slot.plugin = $RELAY_PLUGIN"
	echo "http.listen ="
	echo "reconnect.backoff.ms = 100"
	echo "reconnect.backoff.max.ms = 300"
} >"$conf"

events() { # N TAG [PAD]: N one-event transactions
	local i pad=${3:-0}
	for ((i = 1; i <= $1; i++)); do
		echo "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), '$type', 'a-$((i % 5))', '$2',
			        jsonb_build_object('i', $i, 'pad', repeat('x', $pad)));"
	done | psql_f "$port" "$db" - >/dev/null
}
copy_data() { # NAME: stop, copy the data directory, start again
	pg_stop "$own"
	rm -rf "$own/pg/$1"
	cp -a "$own/pg/data" "$own/pg/$1"
	pg_launch "$own"
}
restore_data() { # NAME: stop, put the copy back, start
	pg_stop "$own"
	rm -rf "$own/pg/data"
	cp -a "$own/pg/$1" "$own/pg/data"
	pg_launch "$own"
}
wait_confirmed_own() { # LSN SECS
	local i cur
	for ((i = 0; i < $2 * 5; i++)); do
		cur=$(sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
		[[ -n $cur ]] && lsn_ge "$cur" "$1" && return 0
		sleep 0.2
	done
	return 1
}
ids_of() { # TAG: the committed ids with that event_type
	sql "SELECT id FROM outbox WHERE event_type = '$1' ORDER BY id"
}
all_arrived() { # TAG N SECS: all N committed ids of TAG are in Kafka
	local tag=$1 n=$2 secs=$3 deadline=$((SECONDS + $3)) have
	ids_of "$tag" >"$IT_TEST_DIR/want.$tag"
	[[ $(grep -c . "$IT_TEST_DIR/want.$tag") == "$n" ]] || return 1
	while :; do
		it_consume "$topic" "$records" 2>/dev/null || true
		it_fields "$records" h:id | sort -u >"$IT_TEST_DIR/have"
		have=$(comm -23 "$IT_TEST_DIR/want.$tag" "$IT_TEST_DIR/have" | grep -c . || true)
		((have == 0)) && return 0
		((SECONDS < deadline)) || break
		sleep 0.5
	done
	it_diag "$have of $n ids of $tag missing in Kafka"
	return 1
}

# ------------------------------------------------------------------ (a)
log=$IT_TEST_DIR/relay.a.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
events 10 before
it_check "(a) 10 events before the copy arrive" all_arrived before 10 30
copy_data copy1
events 50 after
lsn=$(sql "SELECT pg_current_wal_lsn()")
it_check "(a) 50 events after the copy arrive" all_arrived after 50 30
it_check "(a) the relay confirmed them ($lsn)" wait_confirmed_own "$lsn" 15
restore_data copy1
# While it decides: the slot must never pass the server's WAL (an update
# goes out at the latest status.interval.ms, 10 s, after connecting).
past=
for ((i = 0; i < 30; i++)); do
	_env_pid_alive "$pid" || break
	slot=$(sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
	wal=$(sql "SELECT pg_current_wal_lsn()")
	if ! lsn_ge "$wal" "$slot"; then
		past="slot $slot past the server's WAL $wal"
		break
	fi
	sleep 0.5
done
it_check "(a) the slot never passed the restored server's WAL${past:+ ($past)}" test -z "$past"
if it_wait_exit "$pid" 30; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	it_check "(a) the relay stopped with exit 69 after the restore" test "$rc" -eq 69
else
	not_ok "(a) the relay stopped after the restore" "$(it_show_log "$log" 10)"
	kill -9 "$pid" 2>/dev/null || true
fi
if grep -q 'the database went back in time' "$log" &&
	grep -qE 'Kafka may hold events with commit LSNs \(pg_lsn header\) above [0-9A-F]+/[0-9A-F]+ and up to [0-9A-F]+/[0-9A-F]+' "$log"; then
	ok "(a) the log says the database went back in time, with the LSN range"
else
	not_ok "(a) the log says the database went back in time, with the LSN range" \
		"$(it_show_log "$log" 10)"
fi
slot=$(sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
wal=$(sql "SELECT pg_current_wal_lsn()")
it_check "(a) the slot ($slot) is not past the server's WAL ($wal)" lsn_ge "$wal" "$slot"
events 30 restored
log=$IT_TEST_DIR/relay.a2.log
it_start_relay "$conf" "$log"
it_check "(a) a new relay publishes the 30 events committed after the restore" \
	all_arrived restored 30 30

# ------------------------------------------------------------------ (b)
pid=$IT_RELAY_PID
copy_data copy2
events 10 before2
it_check "(b) 10 events after the second copy arrive" all_arrived before2 10 30
lsn=$(sql "SELECT pg_current_wal_lsn()")
it_check "(b) the relay confirmed them ($lsn)" wait_confirmed_own "$lsn" 15
kill -STOP "$pid"
restore_data copy2
events 10 restored2
# Past what the relay confirmed, with rows of another table.
sql "CREATE TABLE filler (t text)" >/dev/null
for ((i = 0; i < 50; i++)); do
	cur=$(sql "SELECT pg_current_wal_lsn()")
	lsn_ge "$cur" "$lsn" && break
	sql "INSERT INTO filler SELECT repeat('y', 1000) FROM generate_series(1, 200)" >/dev/null
done
cur=$(sql "SELECT pg_current_wal_lsn()")
it_check "(b) the restored server's WAL ($cur) passed what was confirmed ($lsn)" \
	lsn_ge "$cur" "$lsn"
kill -CONT "$pid"
if it_wait_exit "$pid" 40; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	it_check "(b) the relay stopped with exit 69" test "$rc" -eq 69
else
	not_ok "(b) the relay stopped" "$(it_show_log "$log" 10)"
	kill -9 "$pid" 2>/dev/null || true
fi
if grep -q 'is not in the server.s WAL any more' "$log"; then
	ok "(b) the log says the confirmed commit is not in the WAL any more"
else
	not_ok "(b) the log says the confirmed commit is not in the WAL any more" \
		"$(it_show_log "$log" 10)"
fi
log=$IT_TEST_DIR/relay.b2.log
it_start_relay "$conf" "$log"
it_check "(b) a new relay publishes the 10 events committed after the restore" \
	all_arrived restored2 10 30
rc=0
it_stop_relay || rc=$?
it_check "relay exits 0 on SIGTERM" test "$rc" -eq 0

it_summary
