#!/usr/bin/env bash
# t190_envelope_options -- the Outbox Event Router's options end to end,
# checked byte for byte on what Kafka holds: key.format = json (the key a
# JSON string, as JsonConverter writes it), value.format = json-schema
# (the jsonb payload under io.debezium.data.Json, optional false because
# the column is NOT NULL), a column placed as a header under an alias,
# table.field.event.timestamp (the record timestamp is created_at, not
# the produce time), CloudEvents binary headers, and an UPDATE of an
# outbox row logged at WARN (table.op.invalid.behavior = warn) and not
# published (with pgoutput the publication publishes updates here). Then
# a bad route.topic.regex stops the relay at start with exit 78.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s)
db=t190_envelope
type=t190_$run
topic=outbox.event.$type
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
out=$IT_TEST_DIR/records.json

it_setup_db "$db"
it_sql "$db" "ALTER TABLE outbox ADD COLUMN tenant text" >/dev/null
# pgoutput sends what the publication publishes: updates too, so that
# they are judged as with wal2json (docs/configuration.md).
if [[ $RELAY_PLUGIN == pgoutput ]]; then
	it_sql "$db" "ALTER PUBLICATION $IT_PUBLICATION SET
		(publish = 'insert, update')" >/dev/null
fi
it_write_config "$conf" "$db" status.interval.ms=500 \
	key.format=json value.format=json-schema \
	"table.fields.additional.placement=tenant:header:x-tenant" \
	table.field.event.timestamp=created_at \
	cloudevents.enabled=true cloudevents.source=/t190/orders
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30

u1=11111111-1111-4111-8111-111111111111
u2=22222222-2222-4222-8222-222222222222
it_sql "$db" "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type,
	payload, created_at, tenant) VALUES
	('$u1', '$type', 'o-1', 'OrderCreated', '{\"note\": \"a\\\\nb \\\"q\\\" ü\", \"n\": 1.50}',
	 '2026-01-02 03:04:05.678+00', 'acme')" >/dev/null
it_sql "$db" "UPDATE outbox SET event_type = 'Changed' WHERE id = '$u1'" >/dev/null
it_sql "$db" "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type,
	payload, created_at, tenant) VALUES
	('$u2', '$type', 'o-1', 'OrderPaid', '[]', '2026-01-02 03:04:06+00', NULL)" >/dev/null
it_sql "$db" "SELECT id, payload::text FROM outbox ORDER BY created_at" \
	>"$IT_TEST_DIR/want"

if it_consume_wait "$topic" "$out" 2 30; then
	ok "two events arrived"
else
	not_ok "two events arrived" "got $(it_count "$out")
$(it_show_log "$log" 20)"
fi
rc=0
res=$(python3 - "$out" "$IT_TEST_DIR/want" <<-'PY'
	import json, sys
	want = {}
	for line in open(sys.argv[2], encoding="utf-8"):
	    eid, payload = line.rstrip("\n").split("|", 1)
	    want[eid] = payload
	ts = {"11111111-1111-4111-8111-111111111111": (1767323045678, "2026-01-02T03:04:05.678000Z", "acme"),
	      "22222222-2222-4222-8222-222222222222": (1767323046000, "2026-01-02T03:04:06.000000Z", None)}
	types = {"11111111-1111-4111-8111-111111111111": "OrderCreated",
	         "22222222-2222-4222-8222-222222222222": "OrderPaid"}
	bad, n = [], 0
	for line in open(sys.argv[1], encoding="utf-8"):
	    r = json.loads(line)
	    h = r.get("headers") or []
	    hm = {h[i]: h[i + 1] for i in range(0, len(h), 2)}
	    eid = hm.get("id")
	    if eid not in want:
	        bad.append(f"unknown id {eid}")
	        continue
	    n += 1
	    if r["key"] != '"o-1"':
	        bad.append(f"{eid}: key {r['key']!r}, want '\"o-1\"'")
	    # Debezium 3.6.1 + JsonConverter(schemas.enable=true), jsonb NOT NULL.
	    exp = ('{"schema":{"type":"string","optional":false,'
	           '"name":"io.debezium.data.Json","version":1},"payload":'
	           + json.dumps(want[eid], ensure_ascii=False, separators=(",", ":"))
	           + '}')
	    if r["payload"] != exp:
	        bad.append(f"{eid}: value\n  {r['payload']!r}\nwant\n  {exp!r}")
	    ms, cet, tenant = ts[eid]
	    if r.get("ts") != ms:
	        bad.append(f"{eid}: timestamp {r.get('ts')} want {ms}")
	    if hm.get("x-tenant", "missing") != tenant:
	        bad.append(f"{eid}: x-tenant {hm.get('x-tenant', 'missing')!r} want {tenant!r}")
	    ce = {"ce_id": eid, "ce_source": "/t190/orders", "ce_type": types[eid],
	          "ce_specversion": "1.0", "ce_time": cet,
	          "content-type": "application/json"}
	    for k, v in ce.items():
	        if hm.get(k) != v:
	            bad.append(f"{eid}: header {k} {hm.get(k)!r} want {v!r}")
	if n != 2:
	    bad.append(f"{n} records, want 2 (the UPDATE must publish nothing)")
	print("\n".join(bad) if bad else "key, value, timestamp and headers as expected")
	sys.exit(1 if bad else 0)
	PY
) || rc=$?
if ((rc == 0)); then
	ok "$res"
else
	not_ok "key json, value json-schema, header placement, timestamp, CloudEvents" "$res"
fi
if it_wait_log "$log" 'WARN .*UPDATE of a row of the outbox table public\.outbox at LSN' 10; then
	ok "the UPDATE is logged at WARN with table and LSN"
else
	not_ok "the UPDATE is logged at WARN with table and LSN" "$(it_show_log "$log" 20)"
fi
port=$(it_health_port "$log" 5 || true)
n=$(it_metric "$port" outbox_relay_invalid_ops_total)
it_check "the UPDATE is counted (invalid_ops_total $n)" test "${n:-}" = 1
it_stop_checked "relay exits 0 on SIGTERM"

# A regex POSIX cannot read: refused at start, exit 78, the construct named.
bad=$IT_TEST_DIR/bad.conf
it_write_config "$bad" "$db" 'route.topic.regex=(?<routedByValue>\d+)'
it_run_relay badregex --config "$bad"
it_expect_err badregex 78 "Java-only regex syntax is refused at start" \
	'route.topic.regex: "\\d" is Java syntax'


it_summary
