#!/usr/bin/env bash
# t420_runbook_doc -- every command of docs/runbook.md runs against the
# test PostgreSQL and Kafka.
#
# The doc tags each command block: ```sh runbook:ID``` (run by bash with
# `outbox-relay` on PATH and the placeholders RELAY_CONF, DB, SLOT, XID,
# LSN, TOPIC, HTTP, PID, SINCE in the environment) or ```sql runbook:ID```
# (the placeholders substituted as text, then psql -v ON_ERROR_STOP=1 in
# $DB). This script sets up the situation of each block (a slot with
# pending events, a long transaction, a poison transaction and its xid, a
# running relay and its health port, a standby relay, wal2json removed
# from output_plugin_libraries, ...), runs it and checks its exit code and
# output. At the end the ids it ran and the ids in the doc must be the
# same set (a block nobody runs, or a block the script expects that the
# doc lost, is a failure), and no ```sh or ```sql block may be untagged.
# The destructive blocks (pg_terminate_backend, ALTER SYSTEM, --drop-slot)
# run on the test cluster only; ALTER SYSTEM settings are reset at the end.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
it_wal2json_only "runs the runbook's wal2json blocks as written"

DOC=$IT_ROOT/docs/runbook.md
BLOCKS=$IT_TEST_DIR/blocks
RUNDIR=$IT_TEST_DIR/run
SHIM=$IT_TEST_DIR/bin
BLOCK_TIMEOUT=${BLOCK_TIMEOUT:-150}
mkdir -p "$BLOCKS" "$RUNDIR" "$SHIM"
ln -sf "$RELAY_BIN" "$SHIM/outbox-relay"
TAG=$$

# ------------------------------------------------------------ extraction

# Writes BLOCKS/ID.sh or BLOCKS/ID.sql per tagged block and BLOCKS/ids
# ("ID LANG" lines, doc order); prints problems (untagged sh/sql blocks,
# duplicate or malformed ids, unterminated blocks) and exits 1 on any.
if python3 - "$DOC" "$BLOCKS" >"$IT_TEST_DIR/extract.err" 2>&1 <<-'PY'; then
	import re, sys, os
	doc, out = sys.argv[1], sys.argv[2]
	problems, ids, cur, body = [], [], None, []
	fence = re.compile(r'^```(\S*)(?:\s+(.*))?$')
	with open(doc) as f:
	    lines = f.read().split('\n')
	inblock = False
	for n, line in enumerate(lines, 1):
	    m = fence.match(line)
	    if not inblock:
	        if m:
	            inblock, lang, info = True, m.group(1), (m.group(2) or '').strip()
	            body, cur = [], None
	            if lang in ('sh', 'sql', 'bash', 'shell', 'console', 'psql'):
	                t = re.fullmatch(r'runbook:([a-z0-9][a-z0-9-]*)', info)
	                if lang not in ('sh', 'sql') or not t:
	                    problems.append(f'line {n}: command block without a runbook:ID tag: {line}')
	                else:
	                    cur = (t.group(1), lang, n)
	            elif info.startswith('runbook:'):
	                problems.append(f'line {n}: runbook tag on a {lang!r} block')
	        continue
	    if line.strip() == '```':
	        inblock = False
	        if cur:
	            i, lang, start = cur
	            if any(i == x for x, _ in ids):
	                problems.append(f'line {start}: duplicate id {i}')
	            elif not ''.join(body).strip():
	                problems.append(f'line {start}: empty block {i}')
	            else:
	                ids.append((i, lang))
	                with open(os.path.join(out, f'{i}.{lang}'), 'w') as g:
	                    g.write('\n'.join(body) + '\n')
	        continue
	    body.append(line)
	if inblock:
	    problems.append('unterminated code block at the end')
	with open(os.path.join(out, 'ids'), 'w') as g:
	    for i, lang in ids:
	        g.write(f'{i} {lang}\n')
	for p in problems:
	    print(p)
	sys.exit(1 if problems or not ids else 0)
	PY
	ok "docs/runbook.md: $(grep -c . "$BLOCKS/ids") tagged blocks, every sh/sql block tagged"
else
	not_ok "docs/runbook.md: every sh/sql block tagged, ids unique" "$(cat "$IT_TEST_DIR/extract.err")"
fi
[[ -f $BLOCKS/ids ]] || : >"$BLOCKS/ids"

# ------------------------------------------------------------ running

declare -A RAN=()
export RELAY_CONF DB SLOT XID LSN TOPIC HTTP PID SINCE
RELAY_CONF='' DB='' SLOT='' XID='' LSN='' TOPIC='' HTTP='' PID='' SINCE=''

# block ID: runs the block; RC = exit code, OUT/ERR = its files.
block() {
	local id=$1 lang f sqlf
	RAN[$id]=1
	OUT=$RUNDIR/$id.out ERR=$RUNDIR/$id.err RC=0
	lang=$(awk -v id="$id" '$1 == id { print $2 }' "$BLOCKS/ids")
	f=$BLOCKS/$id.$lang
	if [[ -z $lang || ! -f $f ]]; then
		echo "block $id is not in docs/runbook.md" >"$ERR"
		: >"$OUT"
		RC=127
		return 0
	fi
	if [[ $lang == sh ]]; then
		PATH=$SHIM:$PATH timeout -k 5 "$BLOCK_TIMEOUT" bash -o pipefail "$f" \
			</dev/null >"$OUT" 2>"$ERR" || RC=$?
	else
		sqlf=$RUNDIR/$id.sql
		if ! python3 - "$f" "$sqlf" 2>"$ERR" <<-'PY'; then
			import os, re, sys
			names = 'RELAY_CONF DB SLOT XID LSN TOPIC HTTP PID SINCE'.split()
			src = open(sys.argv[1]).read()
			def sub(m):
			    v = os.environ.get(m.group(1), '')
			    if not v:
			        sys.exit(f'placeholder ${m.group(1)} has no value in this test')
			    return v
			s = re.sub(r'\$(' + '|'.join(names) + r')\b', sub, src)
			left = re.findall(r'\$[A-Z][A-Z_]*', s)
			if left:
			    sys.exit(f'unknown placeholders: {left}')
			open(sys.argv[2], 'w').write(s)
			PY
			RC=126
			: >"$OUT"
			return 0
		fi
		timeout -k 5 "$BLOCK_TIMEOUT" psql -X -At -F '|' -v ON_ERROR_STOP=1 \
			-d "$DB" -f "$sqlf" </dev/null >"$OUT" 2>"$ERR" || RC=$?
	fi
}

show() {
	echo "exit $RC; stdout:"
	tail -n 15 "$OUT"
	echo "stderr:"
	tail -n 15 "$ERR"
}

# expect ID CODE DESC [GREP_E...]: exit CODE and every pattern (grep -E) in
# stdout+stderr.
expect() {
	local id=$1 code=$2 desc=$3 p missing=()
	shift 3
	for p in "$@"; do
		grep -qE -- "$p" "$OUT" "$ERR" || missing+=("$p")
	done
	if [[ $RC == "$code" ]] && ((${#missing[@]} == 0)); then
		ok "runbook:$id: $desc"
	else
		not_ok "runbook:$id: $desc" "want exit $code${missing[*]:+, missing: ${missing[*]}}
$(show)"
	fi
}

ALTERED=
reset_settings() {
	[[ -n $ALTERED ]] || return 0
	psql -X -q -d postgres -c "ALTER SYSTEM RESET max_slot_wal_keep_size" \
		-c "ALTER SYSTEM RESET output_plugin_libraries" \
		-c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	ALTERED=
}
env_on_cleanup reset_settings

# ------------------------------------------------------------ setup

db=t420_doc
other=t420_other
if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err" ||
	! it_drop_db "$other" 2>>"$IT_TEST_DIR/setup.err" ||
	! it_sql postgres "CREATE DATABASE $other" 2>>"$IT_TEST_DIR/setup.err"; then
	not_ok "databases, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi
cfg=$IT_TEST_DIR/relay.conf
it_write_config "$cfg" "$db" status.interval.ms=500 shutdown.timeout.ms=5000
RELAY_CONF=$cfg DB=$db SLOT=$db

# ------------------------------------------------------------ read-only

block check
expect check 0 "--check passes on the test cluster" '^ok +slot: ' '[0-9]+ ok, [0-9]+ warn, 0 fail'
block print-config
expect print-config 0 "--print-config shows the slot and the health listener" \
	"slot\.name.*$db" "http\.listen"
block heartbeat-config
expect heartbeat-config 0 "heartbeat.interval.ms=10000 in effect, from the flag" \
	'^heartbeat\.interval\.ms.*10000'
block slot-status
expect slot-status 0 "--slot-status: ok (exit 0) on a fresh slot" "slot \"$db\": ok"
block slot-status-json
expect slot-status-json 0 "--slot-status --json exits 0"
it_py_check "runbook:slot-status-json: the /slot fields the doc names" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["slot"] == sys.argv[2], d["slot"]
assert d["state"] == "ok", d["state"]
for k in ("retained_wal_bytes", "confirmed_lag_bytes", "wal_status", "oldest_xact"):
    assert k in d["server"], k
assert "eta_seconds" in d and "outbox_lag_seconds" in d
' "$RUNDIR/slot-status-json.out" "$db"
block slot-row
expect slot-row 0 "pg_replication_slots row of the slot: wal2json, inactive" \
	"^$db\|wal2json\|$db\|f\|\|reserved\|"
block rewind-where
expect rewind-where 0 "where the server stands: WAL end, timeline, system id, the slot" \
	'^[0-9A-F]+/[0-9A-F]+\|1\|[0-9]+\|[0-9A-F]+/[0-9A-F]+$'
# output_plugin_libraries exists only on recent 15.x minors: where the
# server lacks it, its blocks are skipped (and counted as seen).
if it_pg_has_setting output_plugin_libraries; then
	HAS_OPL=1
else
	HAS_OPL=
	NO_OPL="PostgreSQL $(it_sql postgres "SHOW server_version") has no output_plugin_libraries setting (any plugin loads)"
fi
skip_block() { # ID DESC REASON
	RAN[$1]=1
	skip "runbook:$1: $2" "$3"
}
if [[ -n $HAS_OPL ]]; then
	block plugin-show
	expect plugin-show 0 "output_plugin_libraries shown (wal2json listed, superuser context)" \
		'^pgoutput, .*wal2json\|superuser$'
else
	skip_block plugin-show "output_plugin_libraries shown" "$NO_OPL"
fi
block wal-usage
expect wal-usage 0 "retained WAL per slot and pg_wal size" "^$db\|f\|reserved\|" \
	'^[0-9]+ (bytes|kB|MB|GB)$'

# ------------------------------------------------------------ long transaction

lt_log=$IT_TEST_DIR/longxact.log
{
	echo "BEGIN;"
	echo "SELECT 'lt-xid', txid_current();"
	echo "SELECT pg_sleep(120);"
	echo "COMMIT;"
} | psql -X -At -d "$db" >"$lt_log" 2>&1 &
lt_bg=$!
lt_pid=
for ((i = 0; i < 100; i++)); do
	lt_pid=$(it_sql "$db" "SELECT pid FROM pg_stat_activity
		WHERE query LIKE 'SELECT pg_sleep(120)%' AND backend_xid IS NOT NULL LIMIT 1")
	[[ -n $lt_pid ]] && break
	sleep 0.1
done
if [[ -n $lt_pid ]]; then
	ok "a long transaction holds an xid (backend $lt_pid)"
else
	not_ok "a long transaction holds an xid" "$(cat "$lt_log")"
fi
block oldest-xact
expect oldest-xact 0 "the long transaction is listed with its pid" "^${lt_pid:-none}\|[0-9]+\|"
PID=${lt_pid:-0}
block terminate-xact
expect terminate-xact 0 "pg_terminate_backend returns t" '^t$'
gone=
for ((i = 0; i < 100; i++)); do
	if ! kill -0 "$lt_bg" 2>/dev/null; then gone=1; break; fi
	sleep 0.1
done
wait "$lt_bg" 2>/dev/null || true
it_check "runbook:terminate-xact: the long transaction's session ended" test -n "$gone"
it_check "runbook:terminate-xact: its backend is gone" \
	test -z "$(it_sql "$db" "SELECT pid FROM pg_stat_activity WHERE pid = ${lt_pid:-0}")"
PID=

# ------------------------------------------------------------ ALTER SYSTEM

ALTERED=1
block keep-size
expect keep-size 0 "ALTER SYSTEM max_slot_wal_keep_size + reload"
it_check "runbook:keep-size: max_slot_wal_keep_size is 20GB after the reload" \
	test "$(it_sql postgres "SHOW max_slot_wal_keep_size")" = 20GB
it_sql postgres "ALTER SYSTEM RESET max_slot_wal_keep_size" >/dev/null
it_sql postgres "SELECT pg_reload_conf()" >/dev/null

if [[ -n $HAS_OPL ]]; then
	# wal2json not allowed: remove it, see the refusal, run the doc's fix.
	it_sql postgres "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding'" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	RC=0
	timeout 120 "$RELAY_BIN" --config "$cfg" --check >"$RUNDIR/pre-allow.out" 2>&1 || RC=$?
	if [[ $RC != 0 ]] && grep -qE "^fail +output_plugin_libraries: .*wal2json is not allowed" "$RUNDIR/pre-allow.out"; then
		ok "without wal2json in output_plugin_libraries --check fails (exit $RC) as the doc says"
	else
		not_ok "without wal2json in output_plugin_libraries --check fails as the doc says" \
			"exit $RC; $(cat "$RUNDIR/pre-allow.out")"
	fi
	logN=$IT_TEST_DIR/relay-notallowed.log
	it_start_relay "$cfg" "$logN"
	rcN=0
	for ((i = 0; i < 300; i++)); do it_relay_alive "$IT_RELAY_PID" || break; sleep 0.1; done
	it_stop_relay || rcN=$?
	it_check "without wal2json allowed the relay exits 69 at start" test "$rcN" = 69
	it_check "its log has the server error the doc quotes" \
		grep -q 'library "wal2json" may not be used as an output plugin' "$logN"
	block plugin-allow
	expect plugin-allow 0 "ALTER SYSTEM output_plugin_libraries + reload"
	it_check "runbook:plugin-allow: the setting lists the three libraries" \
		test "$(it_sql postgres "SHOW output_plugin_libraries")" = "pgoutput, test_decoding, wal2json"
	sleep 0.5
	RC=0
	timeout 120 "$RELAY_BIN" --config "$cfg" --check >"$RUNDIR/post-allow.out" 2>&1 || RC=$?
	if [[ $RC == 0 ]] && grep -qE "^ok +output_plugin_libraries: .*wal2json" "$RUNDIR/post-allow.out" &&
		grep -qE "^ok +wal2json: " "$RUNDIR/post-allow.out"; then
		ok "runbook:plugin-allow: --check passes again"
	else
		not_ok "runbook:plugin-allow: --check passes again" "exit $RC; $(cat "$RUNDIR/post-allow.out")"
	fi
else
	skip_block plugin-allow "wal2json refused, then allowed with ALTER SYSTEM" "$NO_OPL"
fi
reset_settings

# ------------------------------------------------------------ running relay

logA=$IT_TEST_DIR/relayA.log
it_start_relay "$cfg" "$logA"
pidA=$IT_RELAY_PID
it_check "relay A streams from the slot" it_wait_slot_active "$db" "$db" 30
if port=$(it_health_port "$logA"); then
	ok "relay A health port from its log ($port)"
else
	not_ok "relay A health port from its log" "$(it_show_log "$logA")"
	port=1
fi
HTTP=127.0.0.1:$port
type=t420_$TAG
it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$type', 'a-1', 'Created', '{\"n\": 1}')" >/dev/null
lsn=$(it_current_lsn "$db")
it_check "relay A confirms the first event" it_wait_confirmed "$db" "$db" "$lsn" 30
for ((i = 0; i < 50; i++)); do
	curl -s "http://$HTTP/readyz" | grep '^ready$' >/dev/null && break
	sleep 0.2
done
block readyz
expect readyz 0 "/readyz says ready" '^ready$'
# The endpoint serves a snapshot refreshed a few times a second: give it
# a moment to show the ack that the slot already confirmed.
for ((i = 0; i < 50; i++)); do
	curl -s "http://$HTTP/metrics" | grep '^outbox_relay_inflight_events 0$' >/dev/null && break
	sleep 0.2
done
block metrics
expect metrics 0 "the four metrics the doc names" '^outbox_relay_kafka_up 1$' \
	'^outbox_relay_inflight_events 0$' '^outbox_relay_outbox_lag_seconds ' \
	'^outbox_relay_confirmed_lsn [0-9]+'
block http-slot
expect http-slot 0 "/slot answers"
it_py_check "runbook:http-slot: JSON with the fields the doc names" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["state"] in ("ok", "warn"), d["state"]
s = d["server"]
assert isinstance(s["retained_wal_bytes"], int) and isinstance(s["confirmed_lag_bytes"], int)
assert "eta_seconds" in d and "oldest_xact" in s
' "$RUNDIR/http-slot.out"

# Idle database: WAL from another database, then the manual heartbeat.
it_sql "$other" "CREATE TABLE busy AS SELECT g FROM generate_series(1, 20000) g" >/dev/null
lsn=$(it_current_lsn "$db")
block heartbeat-now
expect heartbeat-now 0 "pg_logical_emit_message heartbeat" '^[0-9A-F]+/[0-9A-F]+$'
it_check "runbook:heartbeat-now: relay A confirms past the other database's WAL" \
	it_wait_confirmed "$db" "$db" "$lsn" 30

# Standby relay.
logB=$IT_TEST_DIR/relayB.log
it_start_relay "$cfg" "$logB"
pidB=$IT_RELAY_PID
if it_wait_log "$logB" "standby: replication slot \"$db\" is active for PID [0-9]+; retrying every 5000 ms" 20; then
	ok "relay B logs the standby line the doc quotes"
else
	not_ok "relay B logs the standby line the doc quotes" "$(it_show_log "$logB")"
fi
active_pid=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'")
block who-holds
expect who-holds 0 "names the walsender holding the slot" "^${active_pid:-none}\|127\.0\.0\.1(/32)?\|[^|]*\|.*\|streaming$"
block takeover
expect takeover 0 "pg_terminate_backend of the slot's walsender returns t" '^t$'
new_pid=
for ((i = 0; i < 150; i++)); do
	new_pid=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots
		WHERE slot_name = '$db' AND active")
	[[ -n $new_pid && $new_pid != "$active_pid" ]] && break
	new_pid=
	sleep 0.2
done
it_check "runbook:takeover: a relay streams from the slot again (new walsender)" test -n "$new_pid"
rcA=0; it_stop_relay "$pidA" || rcA=$?
rcB=0; it_stop_relay "$pidB" || rcB=$?
it_check "relays A and B exit 0 on SIGTERM" test "$rcA/$rcB" = 0/0

# ------------------------------------------------------------ poison event

good1=$(it_new_uuid) bad=$(it_new_uuid) good2=$(it_new_uuid)
it_txn "$db" "$IT_INS ('$good1', '$type', 'p-1', 'Good', '{}')" >/dev/null
pxid=$(it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$type', 'p-2', 'GoodInPoisonTxn', '{}')" \
	"$IT_INS ('$bad', 't420 bad!', 'p-3', 'Poison', '{}')")
it_txn "$db" "$IT_INS ('$good2', '$type', 'p-4', 'After', '{}')" >/dev/null
logC=$IT_TEST_DIR/relayC.log
it_start_relay "$cfg" "$logC"
rcC=0
for ((i = 0; i < 300; i++)); do it_relay_alive "$IT_RELAY_PID" || break; sleep 0.1; done
it_stop_relay || rcC=$?
it_check "the relay fail-stops on the poison transaction (65)" test "$rcC" = 65
if grep -qE "fail-stop at LSN [0-9A-F]+/[0-9A-F]+ \(xid $pxid\): .*; nothing at or after this transaction is confirmed and the slot keeps it\. Fix the cause or skip the transaction deliberately \(see the runbook: poison event\)" "$logC" &&
	grep -q "outbox-relay exiting with code 65" "$logC"; then
	ok "the relay logs the fail-stop and exit lines the doc quotes (xid $pxid)"
else
	not_ok "the relay logs the fail-stop and exit lines the doc quotes" "$(it_show_log "$logC")"
fi
before=$(it_slot_confirmed "$db" "$db")
block dry-run
expect dry-run 65 "--dry-run stops at the poison transaction"
it_py_check "runbook:dry-run: the poison transaction's good event, then the error with its xid" '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines and lines[-1].get("xid") == int(sys.argv[2]) and lines[-1].get("error"), lines[-1:]
types = [l["headers"]["event_type"] for l in lines[:-1]]
assert types == ["GoodInPoisonTxn"], types
' "$RUNDIR/dry-run.out" "$pxid"
it_check "runbook:dry-run: confirmed_flush_lsn unchanged" \
	test "$(it_slot_confirmed "$db" "$db")" = "$before"
XID=$pxid TOPIC=t420.dlq.$TAG
block skip-transaction
expect skip-transaction 0 "--skip-transaction with --to-dlq" \
	"^AUDIT: slot $db advanced from .* of transaction $pxid, published first to dead-letter topic t420\.dlq\.$TAG"
if it_consume_wait "$TOPIC" "$RUNDIR/dlq.json" 2 30; then
	ok "runbook:skip-transaction: both events of the transaction are in the DLQ topic"
else
	not_ok "runbook:skip-transaction: both events of the transaction are in the DLQ topic" \
		"$(it_count "$RUNDIR/dlq.json") records"
fi
it_check "runbook:skip-transaction: DLQ records carry the reason" \
	grep -q 'skipped by operator' "$RUNDIR/dlq.json"
XID='' TOPIC=''
block drain
expect drain 0 "--drain publishes what is left and exits 0"
it_consume "outbox.event.$type" "$RUNDIR/main.json" || true
got=$(it_fields "$RUNDIR/main.json" h:event_type | sort | tr '\n' ' ')
# GoodInPoisonTxn went out before the fail-stop (the doc says so); the
# poison row never reaches the main topic, After exactly once.
it_check "runbook:drain: After published once after the skip, the poison row never" \
	test "$got" = "After Created Good GoodInPoisonTxn "

# ------------------------------------------------------------ advance

it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$type', 'v-1', 'Skipped', '{}')" >/dev/null
LSN=$(it_current_lsn "$db")
block peek-commits
expect peek-commits 0 "peeks the commit ends" '^[0-9A-F]+/[0-9A-F]+\|[0-9]+\|[0-9A-F]+/[0-9A-F]+$'
commit_end=$(tail -n 1 "$RUNDIR/peek-commits.out" | cut -d'|' -f3)
it_check "runbook:peek-commits: the last commit end is the WAL position after the transaction" \
	lsn_ge "$LSN" "${commit_end:-0/0}"
LSN=${commit_end:-$LSN}
before=$(it_slot_confirmed "$db" "$db")
block advance-slot
expect advance-slot 0 "--advance-slot to the commit end" \
	"^AUDIT: slot $db advanced from $before to $LSN by user postgres .*skipping 1 events"
it_check "runbook:advance-slot: confirmed_flush_lsn is exactly \$LSN" \
	test "$(it_slot_confirmed "$db" "$db")" = "$LSN"
LSN=

# ------------------------------------------------------------ slot lost

SINCE=$(it_sql "$db" "SELECT now()")
sleep 0.05
lost1=$(it_new_uuid) lost2=$(it_new_uuid)
it_txn "$db" "$IT_INS ('$lost1', '$type', 'l-1', 'Lost', '{}')" \
	"$IT_INS ('$lost2', '$type', 'l-2', 'Lost', '{}')" >/dev/null
block drop-slot
expect drop-slot 0 "--drop-slot --yes reports what it loses and drops" \
	"unconfirmed outbox events that will never be published from this slot: 2 in 1 transaction" \
	"^dropped slot \"$db\"$"
it_check "runbook:drop-slot: the slot is gone" \
	test -z "$(it_sql "$db" "SELECT 1 FROM pg_replication_slots WHERE slot_name = '$db'")"
RC=0
timeout 60 "$RELAY_BIN" --config "$cfg" --slot-status >"$RUNDIR/missing.out" 2>&1 || RC=$?
it_check "--slot-status exits 3 for the missing slot (as the doc says)" test "$RC" = 3
block create-slot
expect create-slot 0 "--create-slot" "^created slot \"$db\" \(plugin wal2json\), consistent point "
block republish
expect republish 0 "re-inserts the outbox rows since \$SINCE"
RC=0
timeout 120 "$RELAY_BIN" --config "$cfg" --dry-run >"$RUNDIR/after-republish.out" \
	2>"$RUNDIR/after-republish.err" || RC=$?
it_py_check "runbook:republish: the new slot has exactly the two rows, original ids" '
import json, sys
ids = sorted(json.loads(l)["headers"]["id"] for l in open(sys.argv[1]) if l.strip())
assert ids == sorted(sys.argv[2:]), ids
' "$RUNDIR/after-republish.out" "$lost1" "$lost2"

# ------------------------------------------------------------ slot moved behind the relay's back

it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null
it_sql "$db" "SELECT pg_create_logical_replication_slot('$db', 'wal2json')" >/dev/null
it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$type', 'm-1', 'Moved', '{}')" >/dev/null
logM=$IT_TEST_DIR/relay-moved.log
it_start_relay "$cfg" "$logM"
rcM=0
for ((i = 0; i < 300; i++)); do it_relay_alive "$IT_RELAY_PID" || break; sleep 0.1; done
it_stop_relay || rcM=$?
it_check "a slot recreated with SQL: the relay exits 69 at start" test "$rcM" = 69
it_check "its log has the message the doc quotes" \
	grep -q 'past .* which the slot ledger last recorded .*dropped and created again' "$logM"
block accept-slot
expect accept-slot 0 "--accept-slot --yes records the slot's position" \
	"^slot \"$db\" accepted at [0-9A-F]+/[0-9A-F]+" '^AUDIT: slot .* accepted at'
RC=0
timeout 120 "$RELAY_BIN" --config "$cfg" --check >"$RUNDIR/post-accept.out" 2>&1 || RC=$?
it_check "runbook:accept-slot: --check says ok slot_ledger again" \
	grep -qE '^ok +slot_ledger: ' "$RUNDIR/post-accept.out"

# ------------------------------------------------------------ coverage

mapfile -t doc_ids < <(awk '{ print $1 }' "$BLOCKS/ids")
not_run=() not_in_doc=()
for id in "${doc_ids[@]}"; do
	[[ -n ${RAN[$id]:-} ]] || not_run+=("$id")
done
for id in "${!RAN[@]}"; do
	grep -q "^$id " "$BLOCKS/ids" || not_in_doc+=("$id")
done
it_check "every tagged block of docs/runbook.md was run (${#doc_ids[@]})" \
	test "${#not_run[@]}" -eq 0 -a "${#doc_ids[@]}" -gt 0
[[ ${#not_run[@]} -eq 0 ]] || it_diag "not run: ${not_run[*]}"
it_check "every block this test runs is in docs/runbook.md" test "${#not_in_doc[@]}" -eq 0
[[ ${#not_in_doc[@]} -eq 0 ]] || it_diag "not in the doc: ${not_in_doc[*]}"

it_drop_db "$other" >/dev/null 2>&1 || true
it_summary
