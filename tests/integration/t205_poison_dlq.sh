#!/usr/bin/env bash
# t205_poison_dlq -- poison.policy = dlq against the real broker: three
# poison events among good ones, every event either in its topic or in
# the dead-letter topic, none lost, and the relay goes on.
#
#  (a) one run, seven transactions committed before the relay starts:
#        G1; G2 + B (a 50 KB record, the topic's max.message.bytes is
#        10000: the broker refuses it); G3; M (a text payload column
#        holding 'not json'); G4; N (aggregate_id NULL); G5.
#      With poison.retries=1 the relay replays B alone, tries it once
#      more after poison.retry.backoff.ms, then parks it. Checked: every
#      G in the event topic; B, M and N in the dead-letter topic with
#      the record as read or produced (N's key NULL, M's value as the
#      row has it) and the headers (id, pg_xid, __connect.errors.topic,
#      stage, class name, message, outbox.dlq.tries); the slot confirmed
#      past the last commit; the relay still running; /metrics and /slot
#      count three parked events.
#  (b) a dead-letter topic that refuses the record (its max.message.bytes
#      below the record's size): a decode poison stops the relay with exit
#      65, and the slot is not confirmed past its transaction; once the
#      topic takes it, a restarted relay replays the poison, parks it and
#      confirms past it.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s)$$
db=t205_dlq
it_setup_db "$db"
it_sql "$db" "ALTER TABLE outbox ALTER COLUMN payload TYPE text;
	ALTER TABLE outbox ALTER COLUMN aggregate_id DROP NOT NULL" >/dev/null

type=t205_$run
topic=outbox.event.$type
dlq=t205.dlq.$run
it_check "(a) topic $topic with max.message.bytes=10000" \
	it_kafka_topic "$topic" max.message.bytes=10000
it_check "(a) dead-letter topic $dlq" it_kafka_topic "$dlq"

ins() { # ID AGG PAYLOAD_SQL
	echo "$IT_INS ('$1', '$type', $2, 'E', $3)"
}
g1=$(it_new_uuid) g2=$(it_new_uuid) g3=$(it_new_uuid) g4=$(it_new_uuid)
g5=$(it_new_uuid) b=$(it_new_uuid) m=$(it_new_uuid) n=$(it_new_uuid)
it_txn "$db" "$(ins "$g1" "'a'" "'{\"n\": 1}'")" >/dev/null
bxid=$(it_txn "$db" "$(ins "$g2" "'a'" "'{\"n\": 2}'")" \
	"$(ins "$b" "'a'" "json_build_object('pad', repeat('x', 50000))::text")" | sed -n 1p)
it_txn "$db" "$(ins "$g3" "'a'" "'{\"n\": 3}'")" >/dev/null
mxid=$(it_txn "$db" "$(ins "$m" "'a'" "'not json'")" | sed -n 1p)
it_txn "$db" "$(ins "$g4" "'a'" "'{\"n\": 4}'")" >/dev/null
nxid=$(it_txn "$db" "$(ins "$n" "NULL" "'{\"n\": 9}'")" | sed -n 1p)
it_txn "$db" "$(ins "$g5" "'a'" "'{\"n\": 5}'")" >/dev/null
last=$(it_current_lsn "$db")
it_diag "(a) xids B=$bxid M=$mxid N=$nxid, last commit before $last"

conf=$IT_TEST_DIR/relay.a.conf
log=$IT_TEST_DIR/relay.a.log
it_write_config "$conf" "$db" poison.policy=dlq "poison.dlq.topic=$dlq" \
	poison.retries=1 poison.retry.backoff.ms=200 reconnect.backoff.ms=100 \
	status.interval.ms=500
it_start_relay "$conf" "$log"
out=$IT_TEST_DIR/a.events.json
dout=$IT_TEST_DIR/a.dlq.json
# Confirmed past the last commit: every event is in Kafka by then (a
# replay may have written some twice).
it_check "(a) the slot is confirmed past the last commit ($last)" \
	it_wait_confirmed "$db" "$db" "$last" 90
it_consume "$dlq" "$dout" || true
it_consume "$topic" "$out" || true
ids=$(it_fields "$out" h:id | sort -u)
missing=()
for id in "$g1" "$g2" "$g3" "$g4" "$g5"; do
	grep -qxF -- "$id" <<<"$ids" || missing+=("$id")
done
if ((${#missing[@]} == 0)); then
	ok "(a) the five good events are in $topic"
else
	not_ok "(a) the five good events are in $topic" \
		"missing ${missing[*]}; $(it_show_log "$log" 20)"
fi
it_check "(a) no poison event in $topic" \
	bash -c '! grep -qxE -- "$1|$2|$3" <<<"$4"' _ "$b" "$m" "$n" "$ids"

# One line per dead-letter record: id, key, the headers, the value's start.
it_fields "$dout" h:id key h:pg_xid h:__connect.errors.topic \
	h:__connect.errors.stage h:__connect.errors.exception.class.name \
	h:outbox.dlq.tries h:__connect.errors.exception.message \
	h:__connect.errors.connector.name payload >"$dout.tsv"
it_diag "(a) dead-letter records:"
cut -c1-240 "$dout.tsv" | while read -r l; do it_diag "  $l"; done
row() { awk -F'\t' -v id="$1" '$1 == id' "$dout.tsv" | head -n1; }
col() { cut -f"$2" <<<"$1"; }
rb=$(row "$b") rm=$(row "$m") rn=$(row "$n")
if [[ -n $rb && -n $rm && -n $rn ]]; then
	ok "(a) B, M and N are in the dead-letter topic ($(it_count "$dout") records)"
else
	not_ok "(a) B, M and N are in the dead-letter topic ($(it_count "$dout") records)" \
		"$(cut -c1-200 "$dout.tsv")"
fi
it_check "(a) B's record: key a, xid $bxid, topic, KAFKA_PRODUCE, tries 2" \
	test "$(col "$rb" 2)|$(col "$rb" 3)|$(col "$rb" 4)|$(col "$rb" 5)|$(col "$rb" 6)|$(col "$rb" 7)" \
	= "a|$bxid|$topic|KAFKA_PRODUCE|outbox_relay.kafka.MSG_SIZE_TOO_LARGE|2"
it_check "(a) B's record holds the value as produced (50 KB)" \
	bash -c '[[ $(cut -f10 <<<"$1" | wc -c) -gt 50000 ]]' _ "$rb"
it_check "(a) M's record: value 'not json', xid $mxid, decode, tries 1" \
	test "$(col "$rm" 2)|$(col "$rm" 3)|$(col "$rm" 4)|$(col "$rm" 5)|$(col "$rm" 6)|$(col "$rm" 7)|$(col "$rm" 10)" \
	= "a|$mxid|$topic|TASK_POLL|outbox_relay.decode|1|not json"
it_check "(a) M's message names the cause" \
	bash -c '[[ $(cut -f8 <<<"$1") == *"not JSON"* ]]' _ "$rm"
it_check "(a) N's record: key NULL, xid $nxid, decode, tries 1" \
	test "$(col "$rn" 2)|$(col "$rn" 3)|$(col "$rn" 4)|$(col "$rn" 6)|$(col "$rn" 7)|$(col "$rn" 10)" \
	= "\\N|$nxid|$topic|outbox_relay.decode|1|{\"n\": 9}"
it_check "(a) N's message names the NULL key" \
	bash -c '[[ $(cut -f8 <<<"$1") == *aggregate_id* ]]' _ "$rn"
it_check "(a) connector name outbox-relay/$db" \
	test "$(col "$rn" 9)" = "outbox-relay/$db"
it_check "(a) the relay keeps running" it_relay_alive
it_check "(a) B was tried again after the backoff" \
	grep -q "try 1 of 2, tried again after a backoff" "$log"
port=$(it_health_port "$log" 5 || true)
parked=$(it_metric "$port" outbox_relay_poison_parked_total)
it_check "(a) /metrics: outbox_relay_poison_parked_total 3 (got $parked)" \
	test "$parked" = 3
slotp=$(curl -s -m 5 "http://127.0.0.1:$port/slot" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["relay"]["poison_parked"])' || true)
it_check "(a) /slot: relay.poison_parked 3 (got $slotp)" test "$slotp" = 3
it_stop_checked "(a) relay exits 0 on SIGTERM"

# ------------------------------------------------------------------ (b)
dlq2=t205.dlq2.$run
it_check "(b) dead-letter topic $dlq2 with max.message.bytes=100" \
	it_kafka_topic "$dlq2" max.message.bytes=100
m2=$(it_new_uuid) g6=$(it_new_uuid)
it_txn "$db" "$(ins "$m2" "'a'" "'not json either'")" >/dev/null
m2end=$(it_current_lsn "$db")
it_txn "$db" "$(ins "$g6" "'a'" "'{\"n\": 6}'")" >/dev/null
conf=$IT_TEST_DIR/relay.b.conf
log=$IT_TEST_DIR/relay.b.log
it_write_config "$conf" "$db" poison.policy=dlq "poison.dlq.topic=$dlq2" \
	reconnect.backoff.ms=100 status.interval.ms=500
it_start_relay "$conf" "$log"
it_relay_exit "$IT_RELAY_PID" 60
it_check "(b) the dead-letter topic refuses: exit 65 (got $EXIT_RC)" test "$EXIT_RC" = 65
line=$(grep -m1 'fail-stop' "$log" || true)
it_diag "(b) $line"
it_check "(b) the fail-stop line names the dead-letter topic" \
	grep -q "dead-letter topic $dlq2" <<<"$line"
c=$(it_slot_confirmed "$db" "$db")
if lsn_ge "$c" "$m2end"; then
	not_ok "(b) slot ($c) not confirmed past the poison's commit ($m2end)"
else
	ok "(b) slot ($c) not confirmed past the poison's commit ($m2end)"
fi
it_check "(b) $dlq2 now takes 1 MB records" \
	it_kafka_topic "$dlq2" max.message.bytes=1000000
log2=$IT_TEST_DIR/relay.b2.log
it_start_relay "$conf" "$log2"
dout2=$IT_TEST_DIR/b.dlq.json
it_check "(b) restarted, the relay parks the poison" \
	it_consume_wait "$dlq2" "$dout2" 1 60
it_check "(b) ... its record is M2's" \
	grep -qxF -- "$m2" <<<"$(it_fields "$dout2" h:id)"
last=$(it_current_lsn "$db")
it_check "(b) the slot is confirmed past it ($last)" \
	it_wait_confirmed "$db" "$db" "$last" 30
it_consume_wait "$topic" "$out" 6 20 || true
it_check "(b) the event after it is published" \
	grep -qxF -- "$g6" <<<"$(it_fields "$out" h:id)"
it_stop_checked "(b) relay exits 0 on SIGTERM"
it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
