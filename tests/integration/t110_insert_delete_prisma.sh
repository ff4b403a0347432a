#!/usr/bin/env bash
# t110_insert_delete_prisma -- what is published, and byte for byte:
#  (1) a transaction that inserts an outbox row (with a business row) and
#      deletes it again publishes the event exactly once and leaves the
#      outbox table empty; a later UPDATE or DELETE of an outbox row
#      publishes nothing;
#  (2) a Prisma-style "Outbox" table (camelCase columns, uuid default) in
#      its own database and slot, with the mapping keys from the README:
#      topic, key and every header come from the right columns, and rows
#      of a lower-case outbox table in the same database are not read;
#  (3) payloads with unicode (ü, emoji), quotes, backslashes, escaped
#      newlines, top-level string/array/null, ~100 KB: each Kafka value is
#      byte for byte what SELECT payload::text returns, and a unicode key
#      and event type arrive unchanged.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s) # fresh topics even when run twice against the same broker
db=t110_insert_delete
pdb=t110_prisma
type=t110_$run
topic=outbox.event.$type
btype=t110_bytes_$run
btopic=outbox.event.$btype
ptype=PrismaOrder_$run
ptopic=outbox.event.$ptype

# Raw records of TOPIC: one JSON line per record with partition, offset
# and key/payload as hex, parsed from kcat's length-prefixed format so
# that no byte is re-encoded on the way.
raw_records() {
	local topic=$1 out=$2
	timeout "$IT_CONSUME_TIMEOUT" kcat -b "$KAFKA_BROKERS" -C -t "$topic" \
		-o beginning -e -q -f '%p %o %K %k%S %s\n' >"$out.raw"
	python3 - "$out.raw" >"$out" <<-'PY'
	import json, sys
	data = open(sys.argv[1], "rb").read()
	i = 0

	def word():
	    global i
	    j = data.index(b" ", i)
	    w, i = data[i:j], j + 1
	    return int(w)

	while i < len(data):
	    p, o, kl = word(), word(), word()
	    k = data[i:i + kl] if kl >= 0 else None
	    i += max(kl, 0)
	    sl = word()
	    s = data[i:i + sl] if sl >= 0 else None
	    i += max(sl, 0)
	    assert data[i:i + 1] == b"\n", "record separator"
	    i += 1
	    print(json.dumps({"partition": p, "offset": o,
	                      "key": k.hex() if k is not None else None,
	                      "payload": s.hex() if s is not None else None}))
	PY
}

# =============================================================== (1)
it_setup_db "$db"
it_sql "$db" "CREATE TABLE business (id int PRIMARY KEY, note text)"
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
it_write_config "$conf" "$db" status.interval.ms=500
it_start_relay "$conf" "$log"
relay1=$IT_RELAY_PID
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30

u1=11111111-1111-4111-8111-111111111111
u2=22222222-2222-4222-8222-222222222222
u3=33333333-3333-4333-8333-333333333333
ins() { # ID PAYLOAD
	echo "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
		VALUES ('$1', '$type', 'o-1', 'Step', '$2');"
}
# One transaction: business row, outbox row, the outbox row deleted again.
it_sql "$db" "BEGIN;
	INSERT INTO business VALUES (1, 'kept');
	$(ins $u1 '{"step": 1}')
	DELETE FROM outbox WHERE id = '$u1';
	INSERT INTO business VALUES (2, 'deleted too');
	DELETE FROM business WHERE id = 2;
	COMMIT"
it_check "outbox table empty after insert+delete in one transaction" \
	test "$(it_sql "$db" "SELECT count(*) FROM outbox")" = 0
it_check "business row committed" \
	test "$(it_sql "$db" "SELECT string_agg(note, ',') FROM business")" = kept
# Then: an insert, an UPDATE of it, a DELETE of it, each on its own, and a
# marker. Same key, so one partition in commit order: once the marker is
# there, anything the UPDATE or DELETE had produced would be before it.
it_sql "$db" "$(ins $u2 '{"step": 2}')"
it_sql "$db" "UPDATE outbox SET payload = '{\"step\": 3}', event_type = 'Updated'
	WHERE id = '$u2'"
it_sql "$db" "DELETE FROM outbox WHERE id = '$u2'"
it_sql "$db" "$(ins $u3 '{"step": "marker"}')"

out1=$IT_TEST_DIR/part1.json
if it_consume_wait "$topic" "$out1" 3 30; then
	ok "insert/delete events arrived"
else
	not_ok "insert/delete events arrived" "got $(it_count "$out1")
$(it_show_log "$log" 20)"
fi
# The marker's commit confirmed means the relay is past everything before.
mlsn=$(it_fields "$out1" h:id h:pg_lsn | awk -F'\t' -v u=$u3 '$1 == u {print $2}')
if [[ -n $mlsn ]] && it_wait_confirmed "$db" "$db" "$mlsn" 30; then
	ok "slot confirmed past the marker ($mlsn)"
else
	not_ok "slot confirmed past the marker (${mlsn:-no marker})" \
		"confirmed_flush_lsn $(it_slot_confirmed "$db" "$db")"
fi
it_consume "$topic" "$out1"
got=$(it_fields "$out1" key h:id payload h:event_type)
want=$(printf 'o-1\t%s\t{"step": 1}\tStep\no-1\t%s\t{"step": 2}\tStep\no-1\t%s\t{"step": "marker"}\tStep' \
	"$u1" "$u2" "$u3")
if [[ $got == "$want" ]]; then
	ok "insert+delete published exactly once; UPDATE and DELETE published nothing"
else
	not_ok "insert+delete published exactly once; UPDATE and DELETE published nothing" \
		"got:
$got
want:
$want"
fi

# =============================================================== (3)
# Payloads written from a file, so no shell quoting is involved. jsonb
# normalises on input; the value must equal its text output exactly.
cat >"$IT_TEST_DIR/bytes.sql" <<EOF
CREATE TABLE bytes_case (n int PRIMARY KEY, payload jsonb NOT NULL);
INSERT INTO bytes_case VALUES
 (1, \$j\${"s": "Grüße ü 😀 👩‍💻 日本", "q": "say \"hi\"", "b": "back\\\\slash \\\\n not a newline"}\$j\$),
 (2, \$j\${"nl": "line1\nline2\r\n\ttabbed", "ctl": "\u0001\u001f", "u": "\u00e9\ud83d\ude00"}\$j\$),
 (3, \$j\${"n": 1.50, "e": 2e3, "big": 123456789012345678901234567890.000, "neg": -0.0, "t": true, "x": null}\$j\$),
 (4, \$j\$"just a JSON string with a \\" quote"\$j\$),
 (5, \$j\$[1, "two", {"three": [3]}, []]\$j\$),
 (6, 'null'),
 (7, '{}'),
 (8, \$j\${"a":{"b":{"c":{"d":["deep", "\\\\\\\\"]}}}, "": "empty key", "dup": 1, "dup": 2}\$j\$),
 (9, jsonb_build_object('big', repeat('xyzü😀', 20000)));
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	SELECT '$btype', 'p-' || n, 'Bytes', payload FROM bytes_case ORDER BY n;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$btype', 'kü-😀 "k" \\ ✓', 'Évent ✓ "q"', '{"unicode": "key"}');
EOF
it_sql_file "$db" "$IT_TEST_DIR/bytes.sql"
nb=$(it_sql "$db" "SELECT count(*) FROM outbox WHERE aggregate_type = '$btype'")
it_sql "$db" "SELECT id, encode(convert_to(aggregate_id, 'UTF8'), 'hex'),
	encode(convert_to(payload::text, 'UTF8'), 'hex'), event_type
	FROM outbox WHERE aggregate_type = '$btype'" >"$IT_TEST_DIR/bytes.want"
outb=$IT_TEST_DIR/bytes.json
if it_consume_wait "$btopic" "$outb" "$nb" 30; then
	ok "$nb payload-bytes events arrived"
else
	not_ok "$nb payload-bytes events arrived" "got $(it_count "$outb")"
fi
raw_records "$btopic" "$IT_TEST_DIR/bytes.raw.json"
rc=0
cmp_out=$(python3 - "$IT_TEST_DIR/bytes.want" "$outb" "$IT_TEST_DIR/bytes.raw.json" <<-'PY'
	import json, sys
	want = {}
	for line in open(sys.argv[1], encoding="utf-8"):
	    eid, key, payload, etype = line.rstrip("\n").split("|", 3)
	    want[eid] = (key, payload, etype)
	meta = {}
	for line in open(sys.argv[2], encoding="utf-8"):
	    r = json.loads(line)
	    h = r.get("headers") or []
	    hm = {h[i]: h[i + 1] for i in range(0, len(h), 2)}
	    meta[(r["partition"], r["offset"])] = hm
	bad, seen = [], {}
	for line in open(sys.argv[3]):
	    r = json.loads(line)
	    hm = meta.get((r["partition"], r["offset"]), {})
	    eid = hm.get("id")
	    if eid not in want:
	        bad.append(f"record {r['partition']}/{r['offset']} has unknown id {eid}")
	        continue
	    seen[eid] = seen.get(eid, 0) + 1
	    key, payload, etype = want[eid]
	    if r["key"] != key:
	        bad.append(f"{eid}: key {bytes.fromhex(r['key'] or '')!r} != "
	                   f"{bytes.fromhex(key)!r}")
	    if r["payload"] != payload:
	        got, exp = bytes.fromhex(r["payload"] or ""), bytes.fromhex(payload)
	        at = next((i for i in range(min(len(got), len(exp)))
	                   if got[i] != exp[i]), min(len(got), len(exp)))
	        bad.append(f"{eid}: value differs at byte {at} (len {len(got)} vs "
	                   f"{len(exp)}): got {got[max(0, at - 20):at + 20]!r}, "
	                   f"want {exp[max(0, at - 20):at + 20]!r}")
	    if hm.get("event_type") != etype:
	        bad.append(f"{eid}: event_type header {hm.get('event_type')!r} != {etype!r}")
	for eid in want:
	    if seen.get(eid, 0) != 1:
	        bad.append(f"{eid}: published {seen.get(eid, 0)} times")
	print("\n".join(bad) if bad else f"{len(want)} values, keys and event types identical")
	sys.exit(1 if bad else 0)
	PY
) || rc=$?
if ((rc == 0)); then
	ok "Kafka value == SELECT payload::text byte for byte ($cmp_out)"
else
	not_ok "Kafka value == SELECT payload::text byte for byte" "$cmp_out"
fi

it_stop_checked "relay (outbox) exits 0 on SIGTERM" "$relay1"

# =============================================================== (2)
it_setup_db "$pdb"
it_sql "$pdb" 'CREATE TABLE "Outbox" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	"aggregateType" text, "aggregateId" text, "eventType" text,
	"payload" jsonb)'
it_publish "$pdb" 'TABLE "Outbox"'
pconf=$IT_TEST_DIR/prisma.conf
plog=$IT_TEST_DIR/prisma.log
it_write_config "$pconf" "$pdb" status.interval.ms=500 \
	outbox.table=public.Outbox table.field.event.key=aggregateId \
	table.field.event.type=eventType route.by.field=aggregateType
it_start_relay "$pconf" "$plog"
prelay=$IT_RELAY_PID
it_check "prisma relay holds its slot" it_wait_slot_active "$pdb" "$pdb" 30

# Three Prisma rows in two transactions; in between, a row of the
# lower-case outbox table with the same routing value, which this relay
# must not read.
it_sql "$pdb" "BEGIN;
	INSERT INTO \"Outbox\" (\"aggregateType\", \"aggregateId\", \"eventType\", payload)
	VALUES ('$ptype', 'po-1', 'OrderPlaced', '{\"order\": 1}'),
	       ('$ptype', 'po-2', 'OrderPlaced', '{\"order\": 2}');
	COMMIT" >/dev/null
it_sql "$pdb" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$ptype', 'po-1', 'WrongTable', '{\"wrong\": true}')"
it_sql "$pdb" "INSERT INTO \"Outbox\" (\"aggregateType\", \"aggregateId\", \"eventType\", payload)
	VALUES ('$ptype', 'po-1', 'OrderShipped', '{\"order\": 1, \"shipped\": true}')"
# xid of each row: the xmin of its row version.
it_sql "$pdb" "SELECT \"aggregateId\", id, \"eventType\", \"aggregateType\", xmin::text,
	payload::text FROM \"Outbox\" ORDER BY xmin::text::bigint, \"aggregateId\"" |
	tr '|' '\t' >"$IT_TEST_DIR/prisma.want"
outp=$IT_TEST_DIR/prisma.json
if it_consume_wait "$ptopic" "$outp" 3 30; then
	ok "Prisma events arrived on $ptopic"
else
	not_ok "Prisma events arrived on $ptopic" "got $(it_count "$outp")
$(it_show_log "$plog" 20)"
fi
plsn=$(it_fields "$outp" h:pg_lsn | sort | tail -n1)
if [[ -n $plsn ]] && it_wait_confirmed "$pdb" "$pdb" "$plsn" 30; then
	ok "prisma slot confirmed past its last event"
else
	not_ok "prisma slot confirmed past its last event" \
		"confirmed $(it_slot_confirmed "$pdb" "$pdb"), want ${plsn:-?}"
fi
it_consume "$ptopic" "$outp"
got=$(it_fields "$outp" key h:id h:event_type h:aggregate_type h:pg_xid payload |
	sort -t$'\t' -k5,5n -k1,1)
want=$(cat "$IT_TEST_DIR/prisma.want")
if [[ $got == "$want" ]]; then
	ok "Prisma: key, id, event_type, aggregate_type, pg_xid, value from the mapped columns; lower-case table ignored"
else
	not_ok "Prisma: key, id, event_type, aggregate_type, pg_xid, value from the mapped columns; lower-case table ignored" \
		"got:
$got
want:
$want"
fi
badlsn=$(it_fields "$outp" h:pg_lsn | grep -cvE '^[0-9A-F]{1,8}/[0-9A-F]{1,8}$' || true)
it_check "Prisma: every pg_lsn header is an LSN" test "$badlsn" = 0
tops=$(it_fields "$outp" topic | sort -u)
it_check "Prisma: topic is outbox.event.<aggregateType>" test "$tops" = "$ptopic"

it_stop_checked "prisma relay exits 0 on SIGTERM" "$prelay"

it_summary
