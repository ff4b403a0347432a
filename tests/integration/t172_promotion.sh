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
# shellcheck source=own_pg.sh
source "$(dirname "$0")/own_pg.sh"

port=$((PGPORT + 13))
db=t172_promote
type=t172_$(date +%s)
topic=outbox.event.$type
records=$IT_TEST_DIR/out.json
own_pg_start "$port" "$db"
conf=$IT_TEST_DIR/relay.conf
own_write_config "$conf"

# The server, stopped cleanly, comes back as a standby without a primary
# and is promoted at once: a new timeline that branches at its WAL end.
# DATA names a saved data directory to come back from instead.
promote() { # [DATA]
	pg_stop "$OWN"
	if [[ -n ${1:-} ]]; then
		rm -rf "$OWN/pg/data"
		cp -a "$OWN/pg/$1" "$OWN/pg/data"
	fi
	_pg_run touch "$OWN/pg/data/standby.signal"
	pg_launch "$OWN"
	_pg_run "$PG_BIN/pg_ctl" -D "$OWN/pg/data" -w -t 60 promote >/dev/null
}
timeline() {
	own_sql "SELECT timeline_id FROM pg_control_checkpoint()"
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
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 20 before 5
it_check "(a) 20 events before the promotion arrive" own_all_arrived "$topic" before 20 30
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(a) the relay confirmed them ($lsn)" own_wait_confirmed "$lsn" 15
tl0=$(timeline)
promote_under "$pid"
tl1=$(timeline)
it_check "(a) the server was promoted (timeline $tl0 -> $tl1)" test "$tl1" -gt "$tl0"
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 20 after 5
it_check "(a) 20 events after the promotion arrive" own_all_arrived "$topic" after 20 40
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
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(a) the relay confirmed on the new timeline ($lsn)" own_wait_confirmed "$lsn" 15
kill -STOP "$pid"
own_copy_data copy1
kill -CONT "$pid"
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 lost 5
it_check "(b) 10 events after the copy arrive" own_all_arrived "$topic" lost 10 30
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(b) the relay confirmed them ($lsn)" own_wait_confirmed "$lsn" 15
promote_under "$pid" copy1
tl2=$(timeline)
it_check "(b) the copy was promoted (timeline $tl2)" test "$tl2" -gt "$tl1"
it_expect_relay_exit "$pid" 30 69 "(b) the relay stopped with exit 69" \
	"(b) the relay stopped" "$log"
if grep -q "which left timeline $tl1 at [0-9A-F]*/[0-9A-F]*, before WAL this process had already published from" "$log" &&
	grep -qE 'Kafka may hold events with commit LSNs \(pg_lsn header\) above [0-9A-F]+/[0-9A-F]+ and up to [0-9A-F]+/[0-9A-F]+' "$log"; then
	ok "(b) the log says the promoted server lacks published WAL, with the range"
else
	not_ok "(b) the log says the promoted server lacks published WAL, with the range" \
		"$(it_show_log "$log" 10)"
fi
own_check_slot_behind "(b)"

# ------------------------------------------------------------------ (c)
own_sql "SELECT pg_drop_replication_slot('$db')" >/dev/null
sed -i 's/^http.listen = .*/http.listen =/' "$conf"
log=$IT_TEST_DIR/relay.c.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
it_expect_relay_exit "$pid" 30 69 "(c) a relay without its slot on a promoted server exits 69" \
	"(c) a relay without its slot on a promoted server exits" "$log"
if grep -q "This server is on timeline $tl2: it was promoted" "$log" &&
	grep -q 'Runbook: failover' "$log"; then
	ok "(c) the log points to the failover runbook"
else
	not_ok "(c) the log points to the failover runbook" "$(it_show_log "$log" 10)"
fi

it_summary
