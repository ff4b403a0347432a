#!/usr/bin/env bash
# t180_slot_recreated -- F12: a slot dropped and created again while the
# relay was down starts at the WAL position of its creation, past every
# event committed in between. PostgreSQL 15 cannot tell it from the old
# slot; the slot ledger (slot.ledger.topic, a compacted Kafka topic) can:
# the relay records every position before it confirms it, the runbook CLI
# before it moves the slot, and a slot found past its record is refused.
#  (a) a relay publishes and stops; the ledger holds the slot's record at
#      or past the slot's position;
#  (b) events committed while no relay runs; the slot dropped and created
#      again with plain SQL; more events: the relay refuses to start
#      (exit 69, "dropped and created again", the runbook step), and
#      --check fails on slot_ledger;
#  (c) --accept-slot without --yes: 64; with --yes: 0 and an AUDIT line;
#      then the relay streams and publishes what was committed after the
#      recreation (what was committed before it is lost, as the refusal
#      said);
#  (d) the runbook CLI moves the slot on the record: --advance-slot
#      records before it advances, and the relay starts; a slot dropped
#      and created with --create-slot is taken as well;
#  (e) slot.ledger.topic empty: the check is off, the relay streams
#      (under exactly-once: refused at start, exit 78).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
it_wal2json_only "drops and recreates its slot as wal2json by SQL and reads wal2json output; t430 covers the runbook slot actions on pgoutput"

it_scenario t180_recreated
ledger=outbox-relay.slots
it_write_config "$conf" "$db" reconnect.backoff.ms=100
out=$IT_TEST_DIR/out.json

sysid=$(it_sql "$db" "SELECT system_identifier FROM pg_control_system()")
key="$sysid/$db/$db"
# The newest ledger record of the slot (its JSON value), "" when none.
record() {
	kcat -b "$KAFKA_BROKERS" -C -t "$ledger" -o beginning -e -q -f '%k\t%s\n' 2>/dev/null |
		awk -F'\t' -v k="$key" '$1 == k { v = $2 } END { print v }'
}

# ------------------------------------------------------------------ (a)
log=$IT_TEST_DIR/a.log
it_start_relay "$conf" "$log"
it_check "(a) relay streams" it_wait_slot_active "$db" "$db" 30
it_events "$db" "$type" 5 a
it_check "(a) 5 events published" it_consume_wait "$topic" "$out" 5 30
lsn=$(it_current_lsn "$db")
it_check "(a) confirmed past them" it_wait_confirmed "$db" "$db" "$lsn" 15
it_stop_checked "(a) relay exits 0"
rec=$(record || true)
rec_lsn=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["lsn"])' "$rec" 2>/dev/null || true)
slot=$(it_slot_confirmed "$db" "$db")
it_diag "(a) ledger record: $rec"
if [[ -n $rec_lsn ]] && lsn_ge "$rec_lsn" "$slot"; then
	ok "(a) the ledger records the slot at $rec_lsn >= its position $slot"
else
	not_ok "(a) the ledger records the slot at or past its position $slot" "record: '$rec'"
fi

# ------------------------------------------------------------------ (b)
it_events "$db" "$type" 3 lost
it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null
it_sql "$db" "SELECT pg_create_logical_replication_slot('$db', 'wal2json')" >/dev/null
it_events "$db" "$type" 4 after
it_run_relay b --config "$conf"
it_check "(b) a recreated slot is refused: exit 69 (got $RC)" test "$RC" = 69
it_check "(b) ... saying it was dropped and created again, with the runbook step" \
	bash -c 'grep -q "dropped and created again" "$1" && grep -q -- "--accept-slot --yes" "$1"' _ "$IT_TEST_DIR/b.err"
it_run_relay b-check --config "$conf" --check
it_check "(b) --check fails (got $RC)" test "$RC" != 0
it_check "(b) --check: fail slot_ledger" grep -qE '^fail +slot_ledger: ' "$IT_TEST_DIR/b-check.out"

# ------------------------------------------------------------------ (c)
it_run_relay c-noyes --config "$conf" --accept-slot
it_check "(c) --accept-slot without --yes: exit 64 (got $RC)" test "$RC" = 64
it_run_relay c-yes --config "$conf" --accept-slot --yes
it_check "(c) --accept-slot --yes: exit 0 (got $RC)" test "$RC" = 0
it_check "(c) ... with an AUDIT line" grep -q '^AUDIT: slot .* accepted at' "$IT_TEST_DIR/c-yes.err"
log=$IT_TEST_DIR/c.log
it_start_relay "$conf" "$log"
it_check "(c) the relay streams again" it_wait_slot_active "$db" "$db" 30
if it_consume_wait "$topic" "$out" 9 30; then
	ok "(c) the 4 events committed after the recreation arrive"
else
	not_ok "(c) the 4 events committed after the recreation arrive" "$(it_count "$out") records"
fi
lost=$(it_fields "$out" h:event_type | grep -c '^lost$' || true)
it_diag "(c) events committed between the drop and the recreation that reached Kafka: $lost of 3 (the refusal's warning)"
it_stop_checked "(c) relay exits 0"

# ------------------------------------------------------------------ (d)
it_events "$db" "$type" 2 skipped
target=$(it_current_lsn "$db")
it_events "$db" "$type" 2 kept
it_run_relay d-adv --config "$conf" --advance-slot "$target" --yes
it_check "(d) --advance-slot --yes: exit 0 (got $RC)" test "$RC" = 0
log=$IT_TEST_DIR/d.log
it_start_relay "$conf" "$log"
it_check "(d) after --advance-slot the relay streams (the CLI recorded it)" \
	it_wait_slot_active "$db" "$db" 30
it_stop_checked "(d) relay exits 0"
it_run_relay d-drop --config "$conf" --drop-slot --yes
it_check "(d) --drop-slot --yes: exit 0 (got $RC)" test "$RC" = 0
it_events "$db" "$type" 2 dropped
it_run_relay d-create --config "$conf" --create-slot
it_check "(d) --create-slot: exit 0 (got $RC)" test "$RC" = 0
log=$IT_TEST_DIR/d2.log
it_start_relay "$conf" "$log"
it_check "(d) a slot made with --create-slot is taken" it_wait_slot_active "$db" "$db" 30
it_stop_checked "(d) relay exits 0"

# ------------------------------------------------------------------ (e)
it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null
it_sql "$db" "SELECT pg_create_logical_replication_slot('$db', 'wal2json')" >/dev/null
conf_off=$IT_TEST_DIR/off.conf
it_write_config "$conf_off" "$db" slot.ledger.topic=
if it_eos; then
	# Exactly-once records what Kafka holds in the ledger: without it
	# the relay refuses to start.
	it_run_relay e --config "$conf_off"
	it_expect_err e 78 "(e) exactly-once with slot.ledger.topic empty is refused" \
		'exactly-once needs slot.ledger.topic'
else
	log=$IT_TEST_DIR/e.log
	it_start_relay "$conf_off" "$log"
	it_check "(e) slot.ledger.topic empty: the relay streams" it_wait_slot_active "$db" "$db" 30
	it_stop_checked "(e) relay exits 0"
fi

it_summary
