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
# Under RELAY_DELIVERY=exactly-once the slot ledger is the relay's memory
# across processes: in (a) a new relay stops with 69 as well, and starts
# from the slot once --accept-slot --yes recorded its position; in (b)
# the ledger's LSN is below the WAL end, and the new relay must still not
# skip the events committed since (t196 has that case alone): it stops
# with 69 as well, and --accept-slot --yes is the way on again.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=own_pg.sh
source "$(dirname "$0")/own_pg.sh"

port=$((PGPORT + 11))
db=t170_rewind
type=t170_$(date +%s)
topic=outbox.event.$type
own_pg_start "$port" "$db"
conf=$IT_TEST_DIR/relay.conf
own_write_config "$conf" http.listen=

# ------------------------------------------------------------------ (a)
log=$IT_TEST_DIR/relay.a.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 before 5 0
it_check "(a) 10 events before the copy arrive" own_all_arrived "$topic" before 10 30
own_copy_data copy1
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 50 after 5 0
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(a) 50 events after the copy arrive" own_all_arrived "$topic" after 50 30
it_check "(a) the relay confirmed them ($lsn)" own_wait_confirmed "$lsn" 15
own_restore_data copy1
# While it decides: the slot must never pass the server's WAL (an update
# goes out at the latest status.interval.ms, 10 s, after connecting).
past=
for ((i = 0; i < 30; i++)); do
	_env_pid_alive "$pid" || break
	slot=$(own_sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
	wal=$(own_sql "SELECT pg_current_wal_lsn()")
	if ! lsn_ge "$wal" "$slot"; then
		past="slot $slot past the server's WAL $wal"
		break
	fi
	sleep 0.5
done
it_check "(a) the slot never passed the restored server's WAL${past:+ ($past)}" test -z "$past"
it_expect_relay_exit "$pid" 30 69 "(a) the relay stopped with exit 69 after the restore" \
	"(a) the relay stopped after the restore" "$log"
if grep -q 'the database went back in time' "$log" &&
	grep -qE 'Kafka may hold events with commit LSNs \(pg_lsn header\) above [0-9A-F]+/[0-9A-F]+ and up to [0-9A-F]+/[0-9A-F]+' "$log"; then
	ok "(a) the log says the database went back in time, with the LSN range"
else
	not_ok "(a) the log says the database went back in time, with the LSN range" \
		"$(it_show_log "$log" 10)"
fi
own_check_slot_behind "(a)"
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 30 restored 5 0
log=$IT_TEST_DIR/relay.a2.log
if it_eos; then
	# Exactly-once remembers across processes: the slot ledger says Kafka
	# holds commits up to an LSN past this server's WAL end, so a new
	# relay stops too, until the operator records the slot's position
	# (runbook: --accept-slot --yes, after reconciling).
	it_start_relay "$conf" "$log"
	it_expect_relay_exit "$IT_RELAY_PID" 30 69 \
		"(a) exactly-once: a new relay stops too (exit 69: the ledger is past the WAL end)" \
		"(a) exactly-once: a new relay stops too" "$log"
	it_check "(a) ... saying the database went back in time" \
		grep -q 'the database went back in time' "$log"
	it_run_relay accept --config "$conf" --accept-slot --yes
	it_expect_exit accept 0 "(a) exactly-once: --accept-slot --yes records the slot's position"
	log=$IT_TEST_DIR/relay.a3.log
fi
it_start_relay "$conf" "$log"
it_check "(a) a new relay publishes the 30 events committed after the restore" \
	own_all_arrived "$topic" restored 30 30

# ------------------------------------------------------------------ (b)
pid=$IT_RELAY_PID
own_copy_data copy2
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 before2 5 0
it_check "(b) 10 events after the second copy arrive" own_all_arrived "$topic" before2 10 30
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(b) the relay confirmed them ($lsn)" own_wait_confirmed "$lsn" 15
kill -STOP "$pid"
own_restore_data copy2
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 restored2 5 0
# Past what the relay confirmed, with rows of another table.
own_sql "CREATE TABLE filler (t text)" >/dev/null
for ((i = 0; i < 50; i++)); do
	cur=$(own_sql "SELECT pg_current_wal_lsn()")
	lsn_ge "$cur" "$lsn" && break
	own_sql "INSERT INTO filler SELECT repeat('y', 1000) FROM generate_series(1, 200)" >/dev/null
done
cur=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "(b) the restored server's WAL ($cur) passed what was confirmed ($lsn)" \
	lsn_ge "$cur" "$lsn"
kill -CONT "$pid"
it_expect_relay_exit "$pid" 40 69 "(b) the relay stopped with exit 69" \
	"(b) the relay stopped" "$log"
if grep -q 'is not in the server.s WAL any more' "$log"; then
	ok "(b) the log says the confirmed commit is not in the WAL any more"
else
	not_ok "(b) the log says the confirmed commit is not in the WAL any more" \
		"$(it_show_log "$log" 10)"
fi
log=$IT_TEST_DIR/relay.b2.log
if it_eos; then
	# The ledger names the newest commit Kafka holds; the restored
	# database has another one there (the same xid and commit LSN can
	# come again: xids and WAL restart from the copy; the commit time
	# tells them apart): a new relay stops too, until --accept-slot.
	it_start_relay "$conf" "$log"
	it_expect_relay_exit "$IT_RELAY_PID" 30 69 \
		"(b) exactly-once: a new relay stops too (exit 69: the ledger's commit is not in the WAL)" \
		"(b) exactly-once: a new relay stops too" "$log"
	it_diag "(b) $(grep -m1 'went back in time' "$log" | cut -c1-300)"
	it_run_relay acceptb --config "$conf" --accept-slot --yes
	it_expect_exit acceptb 0 "(b) exactly-once: --accept-slot --yes records the slot's position"
	log=$IT_TEST_DIR/relay.b3.log
fi
it_start_relay "$conf" "$log"
it_check "(b) a new relay publishes the 10 events committed after the restore" \
	own_all_arrived "$topic" restored2 10 30
it_stop_checked "relay exits 0 on SIGTERM"

it_summary
