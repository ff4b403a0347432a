#!/usr/bin/env bash
# t172_promotion -- a new timeline under a running relay: the promotion of
# a standby that holds everything the relay published is followed without
# a stop and without publishing the acked events again; one that branched
# off before what the relay published stops it (exit 69, the LSN range);
# a slot missing on a promoted server says failover. On a cluster of the
# test's own, promoted in place (standby.signal, then pg_ctl promote),
# which gives a new timeline whose history is the real one. The failover
# between two servers is t527's; this one runs on every version.
#  (a) 20 events, confirmed; the server becomes a standby of nobody and is
#      promoted (timeline + 1, switch point at its WAL end); 20 more.
#      The relay stays up, logs the timeline change, and Kafka holds the
#      40 events once each.
#  (b) a copy of the data directory; 10 events published and confirmed;
#      the copy comes back as a standby and is promoted: its timeline left
#      the old one before those 10. Exit 69, the log names the range.
#  (c) the slot dropped on the promoted server: a new relay exits 69 and
#      its log points to the failover runbook.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

own=$IT_TEST_DIR/own
port=$((PGPORT + 13))
db=t172_promote
type=t172_$(date +%s)
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
	echo "http.listen = 127.0.0.1:0"
	echo "reconnect.backoff.ms = 100"
	echo "reconnect.backoff.max.ms = 300"
} >"$conf"

events() { # N TAG: N one-event transactions
	local i
	for ((i = 1; i <= $1; i++)); do
		echo "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), '$type', 'a-$((i % 5))', '$2',
			        jsonb_build_object('i', $i));"
	done | psql_f "$port" "$db" - >/dev/null
}
# The server, stopped cleanly, comes back as a standby without a primary
# and is promoted at once: a new timeline that branches at its WAL end.
# DATA names a saved data directory to come back from instead.
promote() { # [DATA]
	pg_stop "$own"
	if [[ -n ${1:-} ]]; then
		rm -rf "$own/pg/data"
		cp -a "$own/pg/$1" "$own/pg/data"
	fi
	_pg_run touch "$own/pg/data/standby.signal"
	pg_launch "$own"
	_pg_run "$PG_BIN/pg_ctl" -D "$own/pg/data" -w -t 60 promote >/dev/null
}
copy_data() { # NAME: stop, copy the data directory, start again
	pg_stop "$own"
	rm -rf "$own/pg/$1"
	cp -a "$own/pg/data" "$own/pg/$1"
	pg_launch "$own"
}
timeline() {
	sql "SELECT timeline_id FROM pg_control_checkpoint()"
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
all_arrived() { # TAG N SECS: all N committed ids of TAG are in Kafka
	local tag=$1 n=$2 deadline=$((SECONDS + $3)) missing
	sql "SELECT id FROM outbox WHERE event_type = '$tag' ORDER BY id" >"$IT_TEST_DIR/want.$tag"
	[[ $(grep -c . "$IT_TEST_DIR/want.$tag") == "$n" ]] || return 1
	while :; do
		it_consume "$topic" "$records" 2>/dev/null || true
		it_fields "$records" h:id | sort -u >"$IT_TEST_DIR/have"
		missing=$(comm -23 "$IT_TEST_DIR/want.$tag" "$IT_TEST_DIR/have" | grep -c . || true)
		((missing == 0)) && return 0
		((SECONDS < deadline)) || break
		sleep 0.5
	done
	it_diag "$missing of $n ids of $tag missing in Kafka"
	return 1
}
# The relay must not talk to the server while it is a standby (15 cannot
# decode there; 16 and later could, from the standby's own timeline): it
# is stopped around the promotion and finds the promoted server after.
promote_under() { # PID [DATA]
	kill -STOP "$1"
	promote "${2:-}"
	kill -CONT "$1"
}

# ------------------------------------------------------------------ (a)
log=$IT_TEST_DIR/relay.a.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
events 20 before
it_check "(a) 20 events before the promotion arrive" all_arrived before 20 30
lsn=$(sql "SELECT pg_current_wal_lsn()")
it_check "(a) the relay confirmed them ($lsn)" wait_confirmed_own "$lsn" 15
tl0=$(timeline)
promote_under "$pid"
tl1=$(timeline)
it_check "(a) the server was promoted (timeline $tl0 -> $tl1)" test "$tl1" -gt "$tl0"
events 20 after
it_check "(a) 20 events after the promotion arrive" all_arrived after 20 40
it_check "(a) the relay is still running" it_relay_alive "$pid"
if grep -q "the server is on timeline $tl1 now: a promoted standby" "$log"; then
	ok "(a) the log names the promotion"
else
	not_ok "(a) the log names the promotion" "$(it_show_log "$log" 10)"
fi
it_consume "$topic" "$records" 2>/dev/null || true
n=$(it_count "$records")
it_check "(a) Kafka holds the 40 events once each ($n records)" test "$n" -eq 40
hport=$(it_health_port "$log")
metrics=$(curl -s -m 10 "http://127.0.0.1:$hport/metrics" || true)
it_check "(a) /metrics: outbox_relay_failovers_total 1" \
	grep -qx 'outbox_relay_failovers_total 1' <<<"$metrics"
it_check "(a) /metrics: outbox_relay_events_republished_total 0" \
	grep -qx 'outbox_relay_events_republished_total 0' <<<"$metrics"

# ------------------------------------------------------------------ (b)
lsn=$(sql "SELECT pg_current_wal_lsn()")
it_check "(a) the relay confirmed on the new timeline ($lsn)" wait_confirmed_own "$lsn" 15
kill -STOP "$pid"
copy_data copy1
kill -CONT "$pid"
events 10 lost
it_check "(b) 10 events after the copy arrive" all_arrived lost 10 30
lsn=$(sql "SELECT pg_current_wal_lsn()")
it_check "(b) the relay confirmed them ($lsn)" wait_confirmed_own "$lsn" 15
promote_under "$pid" copy1
tl2=$(timeline)
it_check "(b) the copy was promoted (timeline $tl2)" test "$tl2" -gt "$tl1"
if it_wait_exit "$pid" 30; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	it_check "(b) the relay stopped with exit 69" test "$rc" -eq 69
else
	not_ok "(b) the relay stopped" "$(it_show_log "$log" 10)"
	kill -9 "$pid" 2>/dev/null || true
fi
if grep -q "which left timeline $tl1 at [0-9A-F]*/[0-9A-F]*, before WAL this process had already published from" "$log" &&
	grep -qE 'Kafka may hold events with commit LSNs \(pg_lsn header\) above [0-9A-F]+/[0-9A-F]+ and up to [0-9A-F]+/[0-9A-F]+' "$log"; then
	ok "(b) the log says the promoted server lacks published WAL, with the range"
else
	not_ok "(b) the log says the promoted server lacks published WAL, with the range" \
		"$(it_show_log "$log" 10)"
fi
slot=$(sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
wal=$(sql "SELECT pg_current_wal_lsn()")
it_check "(b) the slot ($slot) is not past the server's WAL ($wal)" lsn_ge "$wal" "$slot"

# ------------------------------------------------------------------ (c)
sql "SELECT pg_drop_replication_slot('$db')" >/dev/null
sed -i 's/^http.listen = .*/http.listen =/' "$conf"
log=$IT_TEST_DIR/relay.c.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
if it_wait_exit "$pid" 30; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	it_check "(c) a relay without its slot on a promoted server exits 69" test "$rc" -eq 69
else
	not_ok "(c) a relay without its slot on a promoted server exits" "$(it_show_log "$log" 10)"
	kill -9 "$pid" 2>/dev/null || true
fi
if grep -q "This server is on timeline $tl2: it was promoted" "$log" &&
	grep -q 'Runbook: failover' "$log"; then
	ok "(c) the log points to the failover runbook"
else
	not_ok "(c) the log points to the failover runbook" "$(it_show_log "$log" 10)"
fi

it_summary
