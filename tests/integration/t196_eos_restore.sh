#!/usr/bin/env bash
# t196_eos_restore -- exactly-once and a database restored to an earlier
# copy, once its WAL has grown past what the relay had published. Runs
# under RELAY_DELIVERY=exactly-once (make reliability-eos); otherwise one
# SKIP (at-least-once has no skip at start: t170 covers it).
#
# The slot ledger's record says Kafka holds the commits up to L. The
# database is restored to a copy taken before L, commits 10 events (their
# commit LSNs below L: they reuse the LSNs of what Kafka holds), and then
# enough other writes that its WAL passes L, all while no relay runs (the
# runbook's "start the relay again" after a restore). A new relay reads
# the ledger and must not take L as "already in Kafka" for transactions
# that are not the ones Kafka holds: either the 10 events arrive, or the
# relay stops with exit 69 and "the database went back in time". Skipping
# them is a silent loss (what the first run of this test found, issue 19:
# "the commits between are skipped, not published again").
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=own_pg.sh
source "$(dirname "$0")/own_pg.sh"
it_eos || {
	skip "t196_eos_restore" "exactly-once only (RELAY_DELIVERY=exactly-once, make reliability-eos); at-least-once: t170"
	it_summary
}

port=$((PGPORT + 12))
db=t196_restore
type=t196_$(date +%s)
topic=outbox.event.$type
own_pg_start "$port" "$db"
conf=$IT_TEST_DIR/relay.conf
own_write_config "$conf" http.listen=

log=$IT_TEST_DIR/relay.1.log
it_start_relay "$conf" "$log"
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 before 5 0
it_check "10 events before the copy arrive" own_all_arrived "$topic" before 10 30
own_copy_data copy1
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 50 after 5 0
lsn=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "50 events after the copy arrive" own_all_arrived "$topic" after 50 30
it_check "the relay confirmed them ($lsn)" own_wait_confirmed "$lsn" 15
it_stop_checked "the first relay exits 0 on SIGTERM"

own_restore_data copy1
IT_EVENTS_PORT=$OWN_PORT it_events "$db" "$type" 10 restored 5 0
own_sql "CREATE TABLE filler (t text)" >/dev/null
for ((i = 0; i < 50; i++)); do
	cur=$(own_sql "SELECT pg_current_wal_lsn()")
	lsn_ge "$cur" "$lsn" && break
	own_sql "INSERT INTO filler SELECT repeat('y', 1000) FROM generate_series(1, 200)" >/dev/null
done
cur=$(own_sql "SELECT pg_current_wal_lsn()")
it_check "the restored server's WAL ($cur) passed what Kafka holds ($lsn)" lsn_ge "$cur" "$lsn"

log=$IT_TEST_DIR/relay.2.log
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
arrived=
own_all_arrived "$topic" restored 10 20 && arrived=1
stopped=
if ! it_relay_alive "$pid"; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	[[ $rc == 69 ]] && grep -q 'the database went back in time' "$log" && stopped=1
fi
if [[ -n $arrived || -n $stopped ]]; then
	ok "a new relay after the restore: ${arrived:+the 10 events committed since arrive}${stopped:+exit 69, the database went back in time}"
else
	not_ok "a new relay after the restore: the 10 events committed since arrive, or exit 69" \
		"$(grep -E 'exactly-once|skipped|went back' "$log" | cut -c1-300 | tail -n 4)"
fi
it_diag "new relay: $(grep -E 'exactly-once: Kafka holds|went back in time' "$log" | cut -c1-260 | head -n 2)"
it_relay_alive "$pid" && it_stop_relay "$pid" >/dev/null 2>&1 || true
# The runbook's way on after a stop (the database went back in time):
# --accept-slot --yes records the slot's position, and the next relay
# publishes what the restored database committed.
if [[ -n $stopped && -z $arrived ]]; then
	it_run_relay accept --config "$conf" --accept-slot --yes
	it_expect_exit accept 0 "--accept-slot --yes after the stop"
	it_diag "--accept-slot: $(head -c 300 "$IT_TEST_DIR/accept.out" | tr '\n' ' ')"
	log=$IT_TEST_DIR/relay.3.log
	it_start_relay "$conf" "$log"
	it_check "then a new relay publishes the 10 events" own_all_arrived "$topic" restored 10 30
	it_stop_checked "that relay exits 0 on SIGTERM"
fi

it_summary
