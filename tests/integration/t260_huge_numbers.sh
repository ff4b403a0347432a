#!/usr/bin/env bash
# t260_huge_numbers -- numbers beyond the range of a double (1e400) are
# valid JSON, and the events around them are published:
#  (1) public.outbox with an extra numeric column holding 1e400, -1e400 and
#      a 400-digit integer (wal2json prints each as a bare number of about
#      400 digits), jsonb payloads holding such numbers, and outbox_emit()
#      messages whose payload holds one;
#  (2) outbox.table = t260.* over a json and a text payload table, both
#      with the numeric column: json '{"x":1e400}' kept as written, text
#      '{"x":1e400}', '1e400' and others checked as JSON and passed on.
# Each Kafka value is byte for byte what SELECT payload::text returns (for
# outbox_emit(): payload::jsonb::text), the relay never fail-stops, and
# each slot is confirmed past its last event.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s) # fresh topics even when run twice against the same broker
db=t260_huge
ta=T250a_$run
tb=T250b_$run

# Kafka records of TOPIC as "key<TAB>hex of the value", one a line, from
# kcat's length-prefixed output so that no byte is re-encoded.
values_hex() {
	local topic=$1 out=$2
	timeout "$IT_CONSUME_TIMEOUT" kcat -b "$KAFKA_BROKERS" -C -t "$topic" \
		-o beginning -e -q -f '%K %k%S %s\n' >"$out.raw" || return 1
	python3 - "$out.raw" >"$out" <<-'PY'
	import sys
	buf = open(sys.argv[1], "rb").read()
	pos = 0

	def length():
	    global pos
	    end = buf.index(b" ", pos)
	    n = int(buf[pos:end])
	    pos = end + 1
	    return n

	while pos < len(buf):
	    n = length()
	    key = buf[pos:pos + max(n, 0)].decode("utf-8")
	    pos += max(n, 0)
	    n = length()
	    val = buf[pos:pos + max(n, 0)]
	    pos += max(n, 0)
	    if buf[pos:pos + 1] != b"\n":
	        sys.exit("record not followed by a newline")
	    pos += 1
	    print(key + "\t" + val.hex())
	PY
}

# Compares the values of TOPIC with WANT ("key<TAB>hex" lines, any order).
check_values() {
	local what=$1 topic=$2 want=$3 out=$4 got
	if ! values_hex "$topic" "$out"; then
		not_ok "$what: read $topic" "$(cat "$out.raw" 2>/dev/null | head -c 300)"
		return
	fi
	got=$(sort "$out")
	if [[ $got == "$(sort "$want")" ]]; then
		ok "$what: $(grep -c . "$want") values byte for byte as SELECT payload::text"
	else
		not_ok "$what: values byte for byte as SELECT payload::text" \
			"$(diff <(sort "$want") <(echo "$got") | cut -c1-200 | head -20)"
	fi
}

# Waits until SLOT is confirmed past the largest pg_lsn header of TOPIC.
check_confirmed() {
	local what=$1 slot=$2 topic=$3 out=$4 lsn
	it_consume "$topic" "$out" || true
	lsn=$(it_fields "$out" h:pg_lsn | python3 -c '
import sys
l = [x.strip() for x in sys.stdin if x.strip()]
key = lambda s: tuple(int(p, 16) for p in s.split("/"))
print(max(l, key=key) if l else "")')
	if [[ -n $lsn ]] && it_wait_confirmed "$db" "$slot" "$lsn" 30; then
		ok "$what: slot $slot confirmed past the last event ($lsn)"
	else
		not_ok "$what: slot $slot confirmed past the last event (${lsn:-none})" \
			"confirmed_flush_lsn $(it_slot_confirmed "$db" "$slot")"
	fi
}

no_failstop() {
	local what=$1 log=$2
	if grep -qiE 'fail-stop|malformed JSON|not JSON|number overflow' "$log"; then
		not_ok "$what: no fail-stop" \
			"$(grep -iE 'fail-stop|malformed|JSON|overflow' "$log" | head -5)"
	else
		ok "$what: no fail-stop, no JSON error in the log"
	fi
}

# =============================================================== (1)
it_setup_db "$db"
it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
it_sql "$db" "ALTER TABLE outbox ADD COLUMN amount numeric"
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
it_write_config "$conf" "$db" status.interval.ms=500 outbox.emit.prefix=outbox
it_start_relay "$conf" "$log"
relay1=$IT_RELAY_PID
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30

# From a file, so that no shell quoting is involved.
cat >"$IT_TEST_DIR/rows.sql" <<EOF
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount)
VALUES ('$ta', 'a-1', 'Huge', '{"n": 1}', 1e400),
       ('$ta', 'a-2', 'Huge', '{"n": 2}', -1e400);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount)
VALUES ('$ta', 'a-3', 'Huge', '{"n": 3}', repeat('7', 400)::numeric),
       ('$ta', 'a-4', 'Huge', '{"x": 1e400, "y": -1E+400, "z": 0.5}', 1.5),
       ('$ta', 'a-5', 'Huge', '[1e400]', 1e400);
BEGIN;
SELECT outbox_emit('$ta', 'a-6', 'HugeEmit', '{"x": 1e400}') IS NOT NULL;
SELECT outbox_emit('$ta', 'a-7', 'HugeEmit', '-1E+400') IS NOT NULL;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount)
VALUES ('$ta', 'a-8', 'Huge', '{"n": 8}', 1e400);
COMMIT;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('$ta', 'a-9', 'After', '{"after": true}');
EOF
it_sql_file "$db" "$IT_TEST_DIR/rows.sql" >/dev/null
{
	it_sql "$db" "SELECT aggregate_id || E'\t' ||
		encode(convert_to(payload::text, 'UTF8'), 'hex')
		FROM outbox WHERE aggregate_type = '$ta'"
	it_sql "$db" "SELECT 'a-6' || E'\t' ||
		encode(convert_to('{\"x\": 1e400}'::jsonb::text, 'UTF8'), 'hex')"
	it_sql "$db" "SELECT 'a-7' || E'\t' ||
		encode(convert_to('-1E+400'::jsonb::text, 'UTF8'), 'hex')"
} >"$IT_TEST_DIR/a.want"
out=$IT_TEST_DIR/a.json
if it_consume_wait "outbox.event.$ta" "$out" 9 30; then
	ok "(1) 9 events arrived (7 rows, 2 outbox_emit messages)"
else
	not_ok "(1) 9 events arrived" "got $(it_count "$out")
$(it_show_log "$log" 20)"
fi
check_values "(1)" "outbox.event.$ta" "$IT_TEST_DIR/a.want" "$IT_TEST_DIR/a.hex"
check_confirmed "(1)" "$db" "outbox.event.$ta" "$out"
it_check "(1) relay still running" it_relay_alive "$relay1"
no_failstop "(1)" "$log"
it_stop_checked "(1) relay exits 0 on SIGTERM" "$relay1"

# =============================================================== (2)
slot2=t260_schema
it_sql "$db" "CREATE SCHEMA t260;
	CREATE TABLE t260.ev_json (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
		aggregate_type text NOT NULL, aggregate_id text NOT NULL,
		event_type text NOT NULL, payload json NOT NULL, amount numeric);
	CREATE TABLE t260.ev_text (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
		aggregate_type text NOT NULL, aggregate_id text NOT NULL,
		event_type text NOT NULL, payload text NOT NULL, amount numeric)"
it_create_slot "$db" "$slot2"
it_publish "$db" "TABLES IN SCHEMA t260"
conf2=$IT_TEST_DIR/relay2.conf
log2=$IT_TEST_DIR/relay2.log
it_write_config "$conf2" "$db" "$slot2" status.interval.ms=500 \
	'outbox.table=t260.*'
it_start_relay "$conf2" "$log2"
relay2=$IT_RELAY_PID
it_check "(2) relay holds slot $slot2" it_wait_slot_active "$db" "$slot2" 30

digits=$(printf '8%.0s' $(seq 400))
cat >"$IT_TEST_DIR/rows2.sql" <<EOF
INSERT INTO t260.ev_json (aggregate_type, aggregate_id, event_type, payload, amount)
VALUES ('$tb', 'j-1', 'Json', '{"x":1e400}', 1e400),
       ('$tb', 'j-2', 'Json', '[1e400, -1E+400, $digits]', -1e400),
       ('$tb', 'j-3', 'Json', ' {"y" :  2e308 } ', NULL);
INSERT INTO t260.ev_text (aggregate_type, aggregate_id, event_type, payload, amount)
VALUES ('$tb', 't-1', 'Text', '{"x":1e400}', 1e400),
       ('$tb', 't-2', 'Text', '1e400', NULL),
       ('$tb', 't-3', 'Text', '  [-1E+400, 2e308, "1e400", $digits] ', 7),
       ('$tb', 't-4', 'Text', '{"ok": true}', -1e400);
EOF
it_sql_file "$db" "$IT_TEST_DIR/rows2.sql" >/dev/null
it_sql "$db" "SELECT aggregate_id || E'\t' ||
	encode(convert_to(payload::text, 'UTF8'), 'hex') FROM t260.ev_json
	UNION ALL SELECT aggregate_id || E'\t' ||
	encode(convert_to(payload::text, 'UTF8'), 'hex') FROM t260.ev_text" \
	>"$IT_TEST_DIR/b.want"
out2=$IT_TEST_DIR/b.json
if it_consume_wait "outbox.event.$tb" "$out2" 7 30; then
	ok "(2) 7 events arrived from the json and text tables"
else
	not_ok "(2) 7 events arrived from the json and text tables" \
		"got $(it_count "$out2")
$(it_show_log "$log2" 20)"
fi
check_values "(2)" "outbox.event.$tb" "$IT_TEST_DIR/b.want" "$IT_TEST_DIR/b.hex"
check_confirmed "(2)" "$slot2" "outbox.event.$tb" "$out2"
it_check "(2) relay still running" it_relay_alive "$relay2"
no_failstop "(2)" "$log2"
it_stop_checked "(2) relay exits 0 on SIGTERM" "$relay2"

it_summary
