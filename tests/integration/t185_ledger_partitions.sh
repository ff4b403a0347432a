#!/usr/bin/env bash
# t185 -- the slot ledger on a topic of several partitions.
#
# The relay creates its ledger topic with one partition, but a topic that
# already exists is used as it is: auto-created by a broker with
# num.partitions=3, or made by hand. The records of one slot can then sit
# on more than one partition (the runbook's producer and the relay's did
# not share a partitioner), and the reader must take the newest record,
# not the one on the highest partition it happens to read last.
#
#  (a) a relay streams with the ledger on a one-partition topic; its first
#      and its last record of the slot are kept;
#  (b) a topic of 3 partitions gets the first (older) record on partition
#      2, then the last (newer) one on partition 0; a relay on it streams
#      (the old reader kept partition 2's record and refused the slot as
#      "moved without the relay", exit 69);
#  (c) the relay's own records and a runbook action's (--advance-slot) on
#      a 3-partition topic land on one partition.
#
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
it_init

it_scenario t185_ledger
one=t185.slots.one.$$
three=t185.slots.three.$$
three_c=t185.slots.threec.$$
out=$IT_TEST_DIR/out.json
sysid=$(it_sql "$db" "SELECT system_identifier FROM pg_control_system()")
key="$sysid/$db/$db"

# KEY's records on TOPIC: "partition<TAB>value" lines, in partition order.
records() { # TOPIC
	kcat -b "$KAFKA_BROKERS" -C -t "$1" -o beginning -e -q -f '%p\t%k\t%s\n' 2>/dev/null |
		awk -F'\t' -v k="$key" '$2 == k { print $1 "\t" $3 }'
}
# A topic of 3 partitions (the test broker's num.partitions), made by a
# record of another key; waits until its metadata names 3 partitions.
make_topic3() { # TOPIC
	local i
	echo "other|{}" | kcat -b "$KAFKA_BROKERS" -P -t "$1" -K '|' -p 0 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		[[ $(kcat -b "$KAFKA_BROKERS" -L -t "$1" 2>/dev/null | grep -c 'partition [0-9]') -ge 3 ]] && return 0
		sleep 0.2
	done
	return 1
}
produce_to() { # TOPIC PARTITION VALUE
	printf '%s|%s\n' "$key" "$3" | kcat -b "$KAFKA_BROKERS" -P -t "$1" -K '|' -p "$2"
}

# ------------------------------------------------------------------ (a)
it_write_config "$conf" "$db" reconnect.backoff.ms=100 slot.ledger.topic="$one" \
	status.min.interval.ms=0
log=$IT_TEST_DIR/a.log
it_start_relay "$conf" "$log"
it_check "(a) relay streams" it_wait_slot_active "$db" "$db" 30
for round in 1 2 3; do
	it_events "$db" "$type" 3 "a$round"
	lsn=$(it_current_lsn "$db")
	it_wait_confirmed "$db" "$db" "$lsn" 15 || true
	sleep 0.3
done
it_check "(a) 9 events published" it_consume_wait "$topic" "$out" 9 30
it_stop_checked "(a) relay exits 0"
first=$(records "$one" | sed -n 1p | cut -f2-)
last=$(records "$one" | tail -n1 | cut -f2-)
n=$(records "$one" | wc -l)
it_diag "(a) $n records; first $first; last $last"
it_check "(a) the ledger holds at least two different records of the slot" \
	test "$n" -ge 2 -a "$first" != "$last"

# ------------------------------------------------------------------ (b)
it_check "(b) a ledger topic of 3 partitions" make_topic3 "$three"
produce_to "$three" 2 "$first"
sleep 1.1 # CreateTime has millisecond resolution; make the order plain
produce_to "$three" 0 "$last"
it_diag "(b) $(records "$three" | tr '\n' ' ')"
it_write_config "$conf" "$db" reconnect.backoff.ms=100 slot.ledger.topic="$three"
log=$IT_TEST_DIR/b.log
it_start_relay "$conf" "$log"
it_check "(b) the relay streams: the newer record (partition 0) is the slot's" \
	it_wait_slot_active "$db" "$db" 30
it_events "$db" "$type" 2 b
it_check "(b) 2 more events published" it_consume_wait "$topic" "$out" 11 30
rc=0
it_stop_relay || rc=$?
it_check "(b) relay exits 0 (got $rc; 69 is the refusal)" test "$rc" -eq 0
it_check "(b) no refusal in the log" bash -c '! grep -q "past .* which the slot ledger" "$1"' _ "$log"

# ------------------------------------------------------------------ (c)
it_check "(c) another ledger topic of 3 partitions" make_topic3 "$three_c"
it_write_config "$conf" "$db" reconnect.backoff.ms=100 slot.ledger.topic="$three_c"
log=$IT_TEST_DIR/c.log
it_start_relay "$conf" "$log"
it_check "(c) relay streams" it_wait_slot_active "$db" "$db" 30
it_events "$db" "$type" 2 c
lsn=$(it_current_lsn "$db")
it_check "(c) confirmed" it_wait_confirmed "$db" "$db" "$lsn" 15
rc=0
it_stop_relay || rc=$?
it_events "$db" "$type" 1 c-skipped
lsn=$(it_current_lsn "$db")
RC=0
timeout -k 5 45 "$RELAY_BIN" --config "$conf" --advance-slot "$lsn" --yes \
	</dev/null >"$IT_TEST_DIR/c-adv.out" 2>"$IT_TEST_DIR/c-adv.err" || RC=$?
it_check "(c) --advance-slot --yes: exit 0 (got $RC)" test "$RC" = 0
parts=$(records "$three_c" | cut -f1 | sort -u | tr '\n' ' ')
it_diag "(c) partitions of the slot's records: $parts"
it_check "(c) the relay's and the runbook's records share one partition ($parts)" \
	test "$(records "$three_c" | cut -f1 | sort -u | wc -l)" -eq 1

it_summary
