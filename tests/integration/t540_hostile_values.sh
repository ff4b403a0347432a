#!/usr/bin/env bash
# t540_hostile_values -- reliability matrix F17: names and values an
# application (or an attacker with INSERT rights) can put in the outbox.
# The outbox is "Sch ema"."Out,box.x*'y" (a space, a comma, periods, an
# asterisk and a quote: wal2json's add-tables needs each escaped) with
# columns "Id", "agg id", "type'q", "route.by", "pay""load" and an extra
# numeric and float8 column. Rows: control characters and unicode in the
# key and the payload, numeric NaN and float8 Infinity in the extra
# columns, a 100 KB key, payloads that are JSON but not objects (an
# array, a string, a number, true, JSON null), a number beyond a double
# (1e400) in a json payload. Every record arrives with its key and payload
# exactly as PostgreSQL printed them, and the relay keeps running.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t540_hostile
it_setup_db "$db"
it_sql "$db" "
	CREATE SCHEMA \"Sch ema\";
	CREATE TABLE \"Sch ema\".\"Out,box.x*'y\" (
	    \"Id\"       uuid  PRIMARY KEY DEFAULT gen_random_uuid(),
	    \"agg id\"   text  NOT NULL,
	    \"type'q\"   text,
	    \"route.by\" text  NOT NULL,
	    \"pay\"\"load\" json NOT NULL,
	    amount     numeric,
	    ratio      float8
	);" >/dev/null
it_publish "$db" "TABLE \"Sch ema\".\"Out,box.x*'y\""
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
it_write_config "$conf" "$db" "outbox.table=Sch ema.Out,box.x*'y" "table.field.event.id=Id" \
	"table.field.event.key=agg id" "table.field.event.type=type'q" "route.by.field=route.by" \
	'table.field.event.payload=pay"load'
it_start_relay "$conf" "$log"
it_check "relay streams from \"Sch ema\".\"Out,box.x*'y\"" it_wait_slot_active "$db" "$db" 30
route=t540_$(date +%s)
topic=outbox.event.$route
ins() { # KEY_SQL PAYLOAD_SQL [AMOUNT] [RATIO]
	echo "INSERT INTO \"Sch ema\".\"Out,box.x*'y\" (\"agg id\", \"type'q\", \"route.by\", \"pay\"\"load\", amount, ratio)
		VALUES ($1, 'T', '$route', $2, ${3:-NULL}, ${4:-NULL});"
}
{
	ins "E'ctl\\x01\\x02\\x1f\\ttab\\nnl'" "E'{\"s\": \"\\\\u0001 ü€😀 \\\\\" \\\\\\\\\"}'"
	ins "'ü€😀 ключ 鍵'" "'[1, \"two\", {\"3\": null}]'" "'NaN'" "'Infinity'"
	ins "repeat('K', 100000)" "'\"just a string\"'"
	ins "'num'" "'42'" "'-1.5e300'" "'-Infinity'"
	ins "'bool'" "'true'"
	ins "'jnull'" "'null'"
	ins "'huge'" "'{\"x\": 1e400, \"y\": -2E+999}'" "'1e400'"
} | it_sql_file "$db" - >/dev/null
out=$IT_TEST_DIR/out.json
if it_consume_wait "$topic" "$out" 7 40; then
	ok "all 7 hostile rows published"
else
	not_ok "all 7 hostile rows published" "$(it_count "$out") records; $(it_show_log "$log" 10)"
fi
it_sql "$db" "SELECT encode(convert_to(\"agg id\", 'UTF8'), 'hex'),
	encode(convert_to(\"pay\"\"load\"::text, 'UTF8'), 'hex')
	FROM \"Sch ema\".\"Out,box.x*'y\"" >"$IT_TEST_DIR/want"
result=$(python3 - "$out" "$IT_TEST_DIR/want" <<-'PY'
	import json, sys
	got = set()
	for line in open(sys.argv[1], encoding="utf-8"):
	    if line.strip():
	        r = json.loads(line)
	        got.add((r["key"].encode().hex(), r["payload"].encode().hex()))
	want = set(tuple(l.strip().split("|")) for l in open(sys.argv[2]) if l.strip())
	print(len(want), len(got & want), len(got - want))
	PY
)
read -r nwant nsame nextra <<<"$result"
it_check "keys and payloads byte for byte as PostgreSQL has them ($nsame of $nwant, $nextra other)" \
	test "$nsame" = "$nwant" -a "$nextra" = 0
it_check "the relay keeps running" it_relay_alive
it_diag "row: scenario=F17 rounds=1 rows=$nwant exact=$nsame other=$nextra"
it_stop_checked "relay exits 0"

it_summary
