#!/usr/bin/env bash
# t400_runbook_cli -- the runbook flags against a real PostgreSQL and
# Kafka: outputs, exit codes and refusals (docs/runbook-cli.md).
#
#   (a) --check: exit 0 on the test cluster (text and --json); a "fail"
#       item and exit 78 for a missing outbox table, 69 for a missing slot
#       and for an unreachable Kafka, 78 for a bad librdkafka property;
#   (b) --create-slot: creates a wal2json slot and prints its consistent
#       point; 69 when it exists; --if-not-exists accepts a wal2json slot
#       (0) and not a test_decoding one (69);
#   (c) --slot-status: 0 ok, 1 warn, 2 critical (thresholds set low), 3
#       for a missing slot; --json is the /slot document with the relay
#       part "not running";
#   (d) --dry-run prints exactly the pending events as JSON lines, leaves
#       confirmed_flush_lsn unchanged and produces nothing; --max-events;
#   (e) --drain publishes them (the records equal the dry-run lines) and
#       exits 0 once the slot confirmed the WAL position of its start;
#   (f) --advance-slot refuses without --yes (64), a malformed LSN (64),
#       backwards or equal (65); forward it lists the events it skips,
#       writes the AUDIT line and moves the slot to exactly the LSN;
#   (g) a poison transaction fail-stops the relay; --skip-transaction
#       refuses without --yes (64) and any xid but the first pending one
#       (65, naming it), and when the dead-letter copy cannot be
#       delivered (69, slot unchanged); with --to-dlq it publishes the transaction's
#       events (the relay's dead-letter record: __connect.errors.* headers
#       with the reason and the error) and skips exactly that one
#       transaction: the next one is then published by --drain; with
#       nothing pending it refuses (65);
#   (h) while a relay streams from the slot: --drop-slot, --advance-slot,
#       --skip-transaction and --drain refuse with 69 naming the PID;
#       --dry-run peeks at a temporary copy; --slot-status and --check
#       report the slot as active;
#   (k) --drain that cannot finish: Kafka unreachable (timeout: 69, the
#       relay it started is stopped), a poison event (the relay's 65);
#   (i) --drop-slot refuses without --yes (64), reports the WAL it
#       releases and the unconfirmed events with their ids, drops the slot
#       (also --json), and 69 for a missing slot;
#   (j) usage errors: two actions, a modifier of another action, a bad
#       --max-events, a missing value, a modifier without an action, an
#       ambiguous abbreviation: 64 (never a relay that starts).
#   (l) the CLI decodes what the relay publishes (regressions: the CLI
#       once asked wal2json only for the heartbeat prefix and counted only
#       table rows): with outbox.emit.prefix set, --dry-run prints a row
#       and an outbox_emit() event of one transaction, --drain publishes
#       exactly those, --advance-slot counts and names both, and
#       --skip-transaction --to-dlq copies both to the dead-letter topic;
#   (m) --check with outbox.table = schema.* (a partitioned outbox): ok
#       for a schema whose tables have the columns, as the relay accepts
#       it (once "schema.* does not exist"); fail for a missing schema or
#       a table in it that lacks a column.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
it_wal2json_only "creates wal2json slots by SQL and checks wal2json-specific output of every action; t430 runs the runbook against a pgoutput slot and a wal2json slot of the same WAL"

IT_RUN_TIMEOUT=${RUN_TIMEOUT:-120}
TAG=$$

confirmed() { it_slot_confirmed "$db" "${1:-$db}"; }

db=t400_cli
if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi
cfg=$IT_TEST_DIR/relay.conf
it_write_config "$cfg" "$db" status.interval.ms=500 shutdown.timeout.ms=5000

# ---------------------------------------------------------------- (a)
it_run_relay a_check --config "$cfg" --check
it_expect_exit a_check 0 "(a) --check on the test cluster"
it_expect_in a_check out "(a) --check: the items that matter are ok" \
	"ok    wal_level: logical" "ok    output_plugin_libraries" \
	"ok    wal2json: loadable" "ok    replication_connection: accepted" \
	"ok    outbox_table: public.outbox (id uuid" "ok    slot: \"$db\": wal2json" \
	"ok    kafka_config" "ok    kafka_reachable" ", 0 fail"
it_run_relay a_json --config "$cfg" --check --json
it_expect_exit a_json 0 "(a) --check --json"
it_py_check "(a) --check --json: one document, no fail, every item named" '
import json, sys
d = json.load(open(sys.argv[1]))
names = [c["check"] for c in d["checks"]]
assert d["fail"] == 0, d
for n in ("server_version", "wal_level", "max_replication_slots",
          "max_wal_senders", "output_plugin_libraries",
          "max_slot_wal_keep_size", "role", "wal2json",
          "replication_connection", "outbox_table", "slot", "kafka_config",
          "kafka_reachable", "kafka_topics", "kafka_min_insync_replicas"):
    assert n in names, n
for c in d["checks"]:
    assert c["status"] in ("ok", "warn", "fail"), c
    assert (c["fix"] is None) == (c["status"] == "ok"), c
' "$IT_TEST_DIR/a_json.out"
# Exactly-once: the brokers' transaction coordinator is asked too.
it_run_relay a_eos --config "$cfg" --check --json \
	--set delivery.guarantee=exactly-once
it_py_check "(a) --check under exactly-once: kafka_transactions ok" '
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["checks"] if c["check"] == "kafka_transactions"]
assert len(c) == 1 and c[0]["status"] == "ok", d
' "$IT_TEST_DIR/a_eos.out"
it_run_relay a_table --config "$cfg" --check --set outbox.table=public.t400_missing
it_expect_exit a_table 78 "(a) --check, missing outbox table"
it_expect_in a_table out "(a) fail item names the table, with a fix" \
	"fail  outbox_table: public.t400_missing does not exist" "fix: create it"
it_run_relay a_slot --config "$cfg" --check --set slot.name=t400_no_slot
it_expect_exit a_slot 69 "(a) --check, missing slot"
it_expect_in a_slot out "(a) fail item for the slot, fix --create-slot" \
	'fail  slot: "t400_no_slot" does not exist' "--create-slot"
it_run_relay a_kafka --config "$cfg" --check --timeout-ms 3000 \
	--set kafka.bootstrap.servers=127.0.0.1:1
it_expect_exit a_kafka 69 "(a) --check, Kafka unreachable"
it_expect_in a_kafka out "(a) fail item kafka_reachable" "fail  kafka_reachable"
it_run_relay a_kcfg --config "$cfg" --check --set kafka.linger.ms=abc
it_expect_exit a_kcfg 78 "(a) --check, bad librdkafka property"
it_expect_in a_kcfg out "(a) fail item kafka_config" "fail  kafka_config: kafka.linger.ms"

# ---------------------------------------------------------------- (b)
it_run_relay b_create --config "$cfg" --set slot.name=t400_new --create-slot
it_expect_exit b_create 0 "(b) --create-slot"
if grep -qE '^created slot "t400_new" \(plugin wal2json\), consistent point [0-9A-F]+/[0-9A-F]+' \
	"$IT_TEST_DIR/b_create.out"; then
	ok "(b) prints the name and the consistent point"
else
	not_ok "(b) prints the name and the consistent point" "$(cat "$IT_TEST_DIR/b_create.out")"
fi
it_check "(b) slot t400_new exists with wal2json" test "$(it_sql "$db" \
	"SELECT plugin FROM pg_replication_slots WHERE slot_name = 't400_new'")" = wal2json
it_run_relay b_again --config "$cfg" --set slot.name=t400_new --create-slot
it_expect_exit b_again 69 "(b) --create-slot on an existing slot"
it_expect_in b_again err "(b) says it exists" '"t400_new" already exists' "--if-not-exists"
it_run_relay b_ine --config "$cfg" --set slot.name=t400_new --create-slot --if-not-exists
it_expect_exit b_ine 0 "(b) --create-slot --if-not-exists, existing wal2json slot"
it_expect_in b_ine out "(b) says nothing to do" '"t400_new" already exists' "nothing to do"
it_run_relay b_ine_json --config "$cfg" --set slot.name=t400_new --create-slot --if-not-exists --json
it_py_check "(b) --json: created false" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["slot"] == "t400_new" and d["created"] is False and d["plugin"] == "wal2json", d
' "$IT_TEST_DIR/b_ine_json.out"
it_run_relay b_json --config "$cfg" --set slot.name=t400_new2 --create-slot --json
it_expect_exit b_json 0 "(b) --create-slot --json"
it_py_check "(b) --json: created true with a consistent point" '
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["created"] is True and re.fullmatch(r"[0-9A-F]+/[0-9A-F]+", d["consistent_point"]), d
' "$IT_TEST_DIR/b_json.out"
it_sql "$db" "SELECT pg_create_logical_replication_slot('t400_td', 'test_decoding')" >/dev/null
it_run_relay b_td --config "$cfg" --set slot.name=t400_td --create-slot --if-not-exists
it_expect_exit b_td 69 "(b) --if-not-exists with a test_decoding slot"
it_expect_in b_td err "(b) names the plugin" '"test_decoding"'
it_sql "$db" "SELECT pg_drop_replication_slot(s) FROM unnest(ARRAY['t400_new',
	't400_new2', 't400_td']) s" >/dev/null

# ---------------------------------------------------------------- (c)
it_sql "$db" "$IT_INS ('$(it_new_uuid)', 'T400c$TAG', 'c-1', 'Warm', '{}')"
it_run_relay c_ok --config "$cfg" --slot-status
it_expect_exit c_ok 0 "(c) --slot-status, healthy slot"
it_expect_in c_ok out "(c) state and figures" "slot \"$db\": ok" "confirmed_flush_lsn" "retained WAL"
it_run_relay c_json --config "$cfg" --slot-status --json
it_expect_exit c_json 0 "(c) --slot-status --json"
it_py_check "(c) --json is the /slot document, relay not running" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["slot"] == sys.argv[2] and d["state"] == "ok" and d["reasons"] == [], d
assert d["server"]["slot_exists"] is True and d["relay"]["state"] == "not running", d
assert d["plugin"] == "wal2json" and d["publication"] is None, d
' "$IT_TEST_DIR/c_json.out" "$db"
it_run_relay c_warn --config "$cfg" --slot-status --set watchdog.retained.warn.bytes=1
it_expect_exit c_warn 1 "(c) --slot-status, warn threshold crossed"
it_run_relay c_crit --config "$cfg" --slot-status --set watchdog.retained.critical.bytes=1
it_expect_exit c_crit 2 "(c) --slot-status, critical threshold crossed"
it_expect_in c_crit out "(c) the reason is printed" "critical: retained WAL"
it_run_relay c_missing --config "$cfg" --slot-status --set slot.name=t400_no_slot
it_expect_exit c_missing 3 "(c) --slot-status, missing slot"
it_expect_in c_missing out "(c) says the slot does not exist" "fatal: slot does not exist"
it_run_relay c_missing_json --config "$cfg" --slot-status --json --set slot.name=t400_no_slot
it_expect_exit c_missing_json 3 "(c) --slot-status --json, missing slot"
it_py_check "(c) --json: state fatal" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["state"] == "fatal" and d["server"]["slot_exists"] is False, d
' "$IT_TEST_DIR/c_missing_json.out"
# Back to an empty backlog for (d).
it_run_relay c_drain --config "$cfg" --drain --timeout-ms 60000
it_expect_exit c_drain 0 "(c) --drain of the warm-up event"

# ---------------------------------------------------------------- (d)
tA=T400a$TAG tB=T400b$TAG
d1=$(it_new_uuid) d2=$(it_new_uuid) d3=$(it_new_uuid)
x1=$(it_txn "$db" "$IT_INS ('$d1', '$tA', 'k-1', 'Created', '{\"n\": 1, \"s\": \"ü \\\"q\\\"\"}')" \
	"$IT_INS ('$d2', '$tA', 'k-1', 'Paid', '[1, 2.50, null]')")
x2=$(it_txn "$db" "$IT_INS ('$d3', '$tB', 'k-2', 'Created', '\"text\"')")
c0=$(confirmed)
it_run_relay d_dry --config "$cfg" --dry-run
it_expect_exit d_dry 0 "(d) --dry-run"
it_py_check "(d) --dry-run prints exactly the three pending events, in order" '
import json, sys
out, ta, tb, d1, d2, d3, x1, x2 = sys.argv[1:]
recs = [json.loads(l) for l in open(out)]
assert len(recs) == 3, recs
want = [(d1, "outbox.event." + ta, "k-1", "Created", ta, x1, {"n": 1, "s": "ü \"q\""}),
        (d2, "outbox.event." + ta, "k-1", "Paid", ta, x1, [1, 2.5, None]),
        (d3, "outbox.event." + tb, "k-2", "Created", tb, x2, "text")]
for r, (i, t, k, et, at, x, p) in zip(recs, want):
    h = r["headers"]
    assert r["topic"] == t and r["key"] == k, r
    assert h["id"] == i and h["event_type"] == et and h["aggregate_type"] == at, r
    assert h["pg_xid"] == x and "/" in h["pg_lsn"], r
    assert json.loads(r["payload"]) == p, r
assert recs[0]["headers"]["pg_lsn"] == recs[1]["headers"]["pg_lsn"], recs
' "$IT_TEST_DIR/d_dry.out" "$tA" "$tB" "$d1" "$d2" "$d3" "$x1" "$x2"
it_check "(d) confirmed_flush_lsn unchanged by --dry-run" test "$(confirmed)" = "$c0"
it_consume "outbox.event.$tA" "$IT_TEST_DIR/d_topic.json" 2>/dev/null || true
it_check "(d) nothing was produced" test "$(it_count "$IT_TEST_DIR/d_topic.json")" -eq 0
it_expect_in d_dry err "(d) summary says nothing moved" "3 events in 2 transactions" \
	"nothing was produced and the slot did not move"
it_run_relay d_max --config "$cfg" --dry-run --max-events 1
it_expect_exit d_max 0 "(d) --dry-run --max-events 1"
it_check "(d) --max-events 1 prints one event" test "$(it_count "$IT_TEST_DIR/d_max.out")" -eq 1

# ---------------------------------------------------------------- (e)
lsn0=$(it_current_lsn "$db")
it_run_relay e_drain --config "$cfg" --drain --timeout-ms 60000
it_expect_exit e_drain 0 "(e) --drain"
it_expect_in e_drain out "(e) says it drained" "drained slot \"$db\""
cur=$(confirmed)
if lsn_ge "$cur" "$lsn0"; then
	ok "(e) confirmed_flush_lsn $cur >= $lsn0, the WAL position before --drain"
else
	not_ok "(e) confirmed_flush_lsn >= the WAL position before --drain" "$cur < $lsn0"
fi
it_consume_wait "outbox.event.$tA" "$IT_TEST_DIR/e_a.json" 2 20 || true
it_consume_wait "outbox.event.$tB" "$IT_TEST_DIR/e_b.json" 1 20 || true
it_py_check "(e) the published records are exactly the dry-run lines" '
import json, sys
dry = [json.loads(l) for l in open(sys.argv[1])]
pub = []
for f in sys.argv[2:]:
    for l in open(f):
        r = json.loads(l)
        h = r["headers"]
        pub.append({"topic": r["topic"], "key": r["key"],
                    "headers": dict(zip(h[0::2], h[1::2])), "payload": r["payload"]})
key = lambda r: r["headers"]["id"]
assert sorted(dry, key=key) == sorted(pub, key=key), (dry, pub)
' "$IT_TEST_DIR/d_dry.out" "$IT_TEST_DIR/e_a.json" "$IT_TEST_DIR/e_b.json"
it_run_relay e_idle --config "$cfg" --drain --json
it_expect_exit e_idle 0 "(e) --drain --json with nothing pending"
it_py_check "(e) --json: drained true" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["drained"] is True, d
' "$IT_TEST_DIR/e_idle.out"

# ---------------------------------------------------------------- (f)
c0=$(confirmed)
f1=$(it_new_uuid)
it_sql "$db" "$IT_INS ('$f1', 'T400f$TAG', 'f-1', 'Skipped', '{}')"
target=$(it_current_lsn "$db")
it_run_relay f_noyes --config "$cfg" --advance-slot "$target"
it_expect_exit f_noyes 64 "(f) --advance-slot without --yes"
it_run_relay f_bad --config "$cfg" --advance-slot 12345 --yes
it_expect_exit f_bad 64 "(f) --advance-slot with a malformed LSN"
it_run_relay f_equal --config "$cfg" --advance-slot "$c0" --yes
it_expect_exit f_equal 65 "(f) --advance-slot to confirmed_flush_lsn itself"
it_run_relay f_back --config "$cfg" --advance-slot 0/1 --yes
it_expect_exit f_back 65 "(f) --advance-slot backwards"
it_expect_in f_back err "(f) the refusal says it only moves forward" "only moves forward"
it_check "(f) refusals left the slot where it was" test "$(confirmed)" = "$c0"
it_run_relay f_adv --config "$cfg" --advance-slot "$target" --yes
it_expect_exit f_adv 0 "(f) --advance-slot LSN --yes"
it_expect_in f_adv out "(f) lists the event it skips" "skips 1 outbox event in 1 transaction" "$f1"
it_expect_in f_adv err "(f) audit line" \
	"AUDIT: slot $db advanced from $c0 to $target by user postgres at " \
	"skipping 1 events (ids $f1)"
it_check "(f) confirmed_flush_lsn is exactly the LSN" test "$(confirmed)" = "$target"
it_run_relay f_dry --config "$cfg" --dry-run
it_check "(f) the skipped event is no longer pending" test "$(it_count "$IT_TEST_DIR/f_dry.out")" -eq 0

# ---------------------------------------------------------------- (g)
tG=T400g$TAG
g1=$(it_new_uuid) pg=$(it_new_uuid) pb=$(it_new_uuid) g2=$(it_new_uuid)
gx1=$(it_txn "$db" "$IT_INS ('$g1', '$tG', 'g-1', 'Good1', '{}')")
px=$(it_txn "$db" "$IT_INS ('$pg', '$tG', 'g-1', 'GoodInP', '{}')" \
	"$IT_INS ('$pb', 't400 bad!', 'g-1', 'Poison', '{}')")
gx2=$(it_txn "$db" "$IT_INS ('$g2', '$tG', 'g-1', 'Good2', '{}')")
it_diag "(g) xids: G1 $gx1, P $px, G2 $gx2"
log=$IT_TEST_DIR/g_relay.log
it_start_relay "$cfg" "$log"
it_relay_exit "$IT_RELAY_PID" 60
it_check "(g) the relay fail-stops on the poison transaction (65)" test "$EXIT_RC" = 65
it_consume_wait "outbox.event.$tG" "$IT_TEST_DIR/g_before.json" 1 20 || true
it_check "(g) G1 was published before the fail-stop" \
	grep -qF "$g1" "$IT_TEST_DIR/g_before.json"
c0=$(confirmed)
it_run_relay g_noyes --config "$cfg" --skip-transaction "$px"
it_expect_exit g_noyes 64 "(g) --skip-transaction without --yes"
it_run_relay g_wrong --config "$cfg" --skip-transaction "$gx2" --yes
it_expect_exit g_wrong 65 "(g) --skip-transaction of a transaction that is not first"
it_expect_in g_wrong err "(g) the refusal names the first pending xid" \
	"the first pending transaction in slot \"$db\" is $px "
it_check "(g) refusals left the slot where it was" test "$(confirmed)" = "$c0"
dlq=t400.dlq.$TAG
it_run_relay g_dlqfail --config "$cfg" --skip-transaction "$px" --yes --to-dlq "$dlq" \
	--timeout-ms 3000 --set kafka.bootstrap.servers=127.0.0.1:1
it_expect_exit g_dlqfail 69 "(g) --to-dlq with Kafka unreachable"
it_expect_in g_dlqfail err "(g) says nothing was advanced" "nothing was advanced"
it_check "(g) a failed dead-letter copy leaves the slot where it was" \
	test "$(confirmed)" = "$c0"
it_run_relay g_skip --config "$cfg" --skip-transaction "$px" --yes --to-dlq "$dlq"
it_expect_exit g_skip 0 "(g) --skip-transaction XID --yes --to-dlq"
it_expect_in g_skip out "(g) prints what was skipped" "skipped transaction $px" \
	"2 outbox events" "$pg" "$pb"
it_expect_in g_skip err "(g) audit line names the transaction and the dead-letter topic" \
	"AUDIT: slot $db advanced from $c0 to " "skipping 2 events" \
	"of transaction $px, published first to dead-letter topic $dlq"
it_consume_wait "$dlq" "$IT_TEST_DIR/g_dlq.json" 2 20 || true
it_py_check "(g) the dead-letter topic has both events with their reasons" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
hs = {}
for r in recs:
    h = r["headers"]
    h = dict(zip(h[0::2], h[1::2]))
    hs[h["id"]] = (h, r)
good, bad = sys.argv[2], sys.argv[3]
assert len(recs) == 2 and set(hs) == {good, bad}, recs
msg = "__connect.errors.exception.message"
for h, r in hs.values():
    assert h[msg].startswith("skipped by operator") and h["pg_xid"] == sys.argv[4], h
    assert h["__connect.errors.exception.class.name"] == "outbox_relay.skip_transaction", h
    assert h["outbox.dlq.tries"] == "0", h
assert hs[good][0][msg] == "skipped by operator", hs
assert hs[good][0]["__connect.errors.topic"].startswith("outbox.event."), hs
assert "t400 bad!" in hs[bad][0][msg], hs
' "$IT_TEST_DIR/g_dlq.json" "$pg" "$pb" "$px"
it_run_relay g_dry --config "$cfg" --dry-run
it_py_check "(g) exactly one transaction was skipped: only G2 is pending" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["headers"]["id"] for r in recs] == [sys.argv[2]], recs
' "$IT_TEST_DIR/g_dry.out" "$g2"
it_run_relay g_drain --config "$cfg" --drain --timeout-ms 60000
it_expect_exit g_drain 0 "(g) --drain after the skip"
it_consume_wait "outbox.event.$tG" "$IT_TEST_DIR/g_after.json" 2 20 || true
it_check "(g) G2 is published by the relay after the skip" \
	grep -qF "$g2" "$IT_TEST_DIR/g_after.json"
it_run_relay g_none --config "$cfg" --skip-transaction "$px" --yes
it_expect_exit g_none 65 "(g) --skip-transaction with nothing pending"
it_expect_in g_none err "(g) says nothing is pending" "no pending transaction"

# ---------------------------------------------------------------- (h)
log=$IT_TEST_DIR/h_relay.log
it_start_relay "$cfg" "$log"
if it_wait_slot_active "$db" "$db" 30; then
	ok "(h) a relay streams from the slot"
else
	not_ok "(h) a relay streams from the slot" "$(it_show_log "$log")"
fi
pid=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'")
h1=$(it_new_uuid)
it_sql "$db" "$IT_INS ('$h1', 'T400h$TAG', 'h-1', 'Live', '{}')"
it_run_relay h_drop --config "$cfg" --drop-slot --yes
it_expect_exit h_drop 69 "(h) --drop-slot while active"
it_expect_in h_drop err "(h) --drop-slot names the PID" "is active for PID $pid"
it_run_relay h_adv --config "$cfg" --advance-slot "$(it_current_lsn "$db")" --yes
it_expect_exit h_adv 69 "(h) --advance-slot while active"
it_expect_in h_adv err "(h) --advance-slot names the PID" "is active for PID $pid"
it_run_relay h_skip --config "$cfg" --skip-transaction 1 --yes
it_expect_exit h_skip 69 "(h) --skip-transaction while active"
it_run_relay h_drain --config "$cfg" --drain
it_expect_exit h_drain 69 "(h) --drain while another relay streams"
it_run_relay h_dry --config "$cfg" --dry-run
it_expect_exit h_dry 0 "(h) --dry-run while active"
it_expect_in h_dry err "(h) --dry-run peeks at a temporary copy" "temporary copy"
it_run_relay h_status --config "$cfg" --slot-status
it_expect_exit h_status 0 "(h) --slot-status while active"
it_expect_in h_status out "(h) --slot-status shows the PID" "active: yes (PID $pid)"
it_run_relay h_check --config "$cfg" --check
it_expect_exit h_check 0 "(h) --check while active (a warning only)"
it_expect_in h_check out "(h) --check warns that the slot is active" \
	"warn  slot: \"$db\" is active for PID $pid"
it_check "(h) the slot is still there" test -n "$(confirmed)"
it_check "(h) no temporary copy is left" test -z "$(it_sql "$db" \
	"SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'outbox_relay_dry_run_%'")"
it_stop_checked "(h) that relay exits 0 on SIGTERM"

# ---------------------------------------------------------------- (k)
it_sql "$db" "$IT_INS ('$(it_new_uuid)', 'T400k$TAG', 'k-1', 'Stuck', '{}')"
start=$SECONDS
it_run_relay k_timeout --config "$cfg" --drain --timeout-ms 4000 \
	--set kafka.bootstrap.servers=127.0.0.1:1 --set shutdown.timeout.ms=1000
it_expect_exit k_timeout 69 "(k) --drain that cannot reach Kafka times out"
it_expect_in k_timeout err "(k) says it timed out and stops the relay" "timed out before slot"
it_check "(k) it ended soon after the timeout" test $((SECONDS - start)) -lt 30
sleep 1
it_check "(k) the relay it started is gone (slot inactive)" test "$(it_sql "$db" \
	"SELECT active FROM pg_replication_slots WHERE slot_name = '$db'")" = f
it_txn "$db" "$IT_INS ('$(it_new_uuid)', 't400 bad!', 'k-2', 'Poison', '{}')" >/dev/null
it_run_relay k_poison --config "$cfg" --drain --timeout-ms 60000
it_expect_exit k_poison 65 "(k) --drain returns the relay's fail-stop code"
it_expect_in k_poison err "(k) says the relay exited before the slot was drained" \
	"exited with code 65 before the slot was drained"

# ---------------------------------------------------------------- (i)
it_sql "$db" "SELECT pg_create_logical_replication_slot('t400_drop', 'wal2json')" >/dev/null
i1=$(it_new_uuid) i2=$(it_new_uuid)
it_txn "$db" "$IT_INS ('$i1', 'T400i$TAG', 'i-1', 'Lost1', '{}')" \
	"$IT_INS ('$i2', 'T400i$TAG', 'i-1', 'Lost2', '{}')" >/dev/null
it_run_relay i_noyes --config "$cfg" --set slot.name=t400_drop --drop-slot
it_expect_exit i_noyes 64 "(i) --drop-slot without --yes"
it_check "(i) the slot is still there" test -n "$(confirmed t400_drop)"
it_run_relay i_drop --config "$cfg" --set slot.name=t400_drop --drop-slot --yes
it_expect_exit i_drop 0 "(i) --drop-slot --yes"
it_expect_in i_drop out "(i) reports WAL released and the unconfirmed events" \
	"released WAL: " \
	"unconfirmed outbox events that will never be published from this slot: 2 in 1 transaction (ids: $i1, $i2)" \
	'dropped slot "t400_drop"'
it_check "(i) the slot is gone" test -z "$(it_sql "$db" \
	"SELECT 1 FROM pg_replication_slots WHERE slot_name = 't400_drop'")"
it_run_relay i_again --config "$cfg" --set slot.name=t400_drop --drop-slot --yes
it_expect_exit i_again 69 "(i) --drop-slot of a missing slot"
it_run_relay i_create --config "$cfg" --set slot.name=t400_drop2 --create-slot
it_expect_exit i_create 0 "(i) --create-slot t400_drop2"
i3=$(it_new_uuid)
it_sql "$db" "$IT_INS ('$i3', 'T400i$TAG', 'i-2', 'Lost3', '{}')"
it_run_relay i_json --config "$cfg" --set slot.name=t400_drop2 --drop-slot --yes --json
it_expect_exit i_json 0 "(i) --drop-slot --yes --json"
it_py_check "(i) --json: dropped, one unconfirmed event named" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["dropped"] is True and d["unconfirmed_events"] == 1, d
assert d["unconfirmed_event_ids"] == [sys.argv[2]] and d["released_wal_bytes"] > 0, d
' "$IT_TEST_DIR/i_json.out" "$i3"

# ---------------------------------------------------------------- (j)
it_run_relay j_two --config "$cfg" --check --dry-run
it_expect_exit j_two 64 "(j) two actions"
it_run_relay j_mod --config "$cfg" --dry-run --yes
it_expect_exit j_mod 64 "(j) --yes with --dry-run"
it_expect_in j_mod err "(j) says which flag does not fit" "--yes does not go with --dry-run"
it_run_relay j_max --config "$cfg" --dry-run --max-events 0
it_expect_exit j_max 64 "(j) --max-events 0"
it_run_relay j_noval --config "$cfg" --advance-slot
it_expect_exit j_noval 64 "(j) --advance-slot without an LSN"
# A modifier alone, or an ambiguous abbreviation, must not start the relay.
it_run_relay j_alone --config "$cfg" --yes
it_expect_exit j_alone 64 "(j) --yes without an action"
it_expect_in j_alone err "(j) says no action was given" "no runbook action given"
it_run_relay j_ambig --config "$cfg" --dr
it_expect_exit j_ambig 64 "(j) an ambiguous abbreviation (--dr)"

# ---------------------------------------------------------------- (l)
# A slot of its own: the one of (a)-(k) holds (k)'s poison transaction.
it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
it_sql "$db" "SELECT pg_create_logical_replication_slot('t400_emit', 'wal2json')" >/dev/null
cfgE=$IT_TEST_DIR/emit.conf
it_write_config "$cfgE" "$db" t400_emit status.interval.ms=500 \
	shutdown.timeout.ms=5000 outbox.emit.prefix=outbox
tL=T400l$TAG
# emit_txn KEY: one transaction with an outbox row and an outbox_emit()
# event; sets EX (xid), EROW (row id) and EMIT (the emitted event's id).
emit_txn() {
	local out
	EROW=$(it_new_uuid)
	out=$(it_txn "$db" "$IT_INS ('$EROW', '$tL', '$1', 'Row', '{\"via\": \"row\"}')" \
		"SELECT outbox_emit('$tL', '$1', 'Emitted', '{\"via\": \"emit\", \"n\": 1.50}')")
	EX=$(sed -n 1p <<<"$out")
	EMIT=$(sed -n 2p <<<"$out")
}
emit_txn l-1
l1x=$EX l1r=$EROW l1e=$EMIT
it_diag "(l) xid $l1x: row $l1r, emitted $l1e"
it_run_relay l_dry --config "$cfgE" --dry-run
it_expect_exit l_dry 0 "(l) --dry-run with outbox.emit.prefix"
it_py_check "(l) --dry-run prints the row and the emitted event, in order" '
import json, sys
out, row, emitted, xid, topic = sys.argv[1:]
recs = [json.loads(l) for l in open(out)]
assert [r["headers"]["id"] for r in recs] == [row, emitted], recs
for r in recs:
    assert r["topic"] == "outbox.event." + topic and r["key"] == "l-1", r
    assert r["headers"]["pg_xid"] == xid, r
assert recs[1]["headers"]["event_type"] == "Emitted", recs
assert json.loads(recs[1]["payload"]) == {"via": "emit", "n": 1.5}, recs
' "$IT_TEST_DIR/l_dry.out" "$l1r" "$l1e" "$l1x" "$tL"
it_expect_in l_dry err "(l) the summary counts both" "2 events in 1 transaction"
it_run_relay l_drain --config "$cfgE" --drain --timeout-ms 60000
it_expect_exit l_drain 0 "(l) --drain with outbox.emit.prefix"
it_consume_wait "outbox.event.$tL" "$IT_TEST_DIR/l_pub.json" 2 20 || true
it_py_check "(l) the relay published exactly the dry-run lines" '
import json, sys
dry = [json.loads(l) for l in open(sys.argv[1])]
pub = []
for l in open(sys.argv[2]):
    r = json.loads(l)
    h = r["headers"]
    pub.append({"topic": r["topic"], "key": r["key"],
                "headers": dict(zip(h[0::2], h[1::2])), "payload": r["payload"]})
key = lambda r: r["headers"]["id"]
assert sorted(dry, key=key) == sorted(pub, key=key), (dry, pub)
' "$IT_TEST_DIR/l_dry.out" "$IT_TEST_DIR/l_pub.json"

emit_txn l-2
l2r=$EROW l2e=$EMIT
c0=$(it_slot_confirmed "$db" t400_emit)
target=$(it_current_lsn "$db")
it_run_relay l_adv --config "$cfgE" --advance-slot "$target" --yes
it_expect_exit l_adv 0 "(l) --advance-slot with outbox.emit.prefix"
it_expect_in l_adv out "(l) --advance-slot counts the row and the emitted event" \
	"skips 2 outbox events in 1 transaction" "$l2r" "$l2e"
it_expect_in l_adv err "(l) the audit line counts both" \
	"AUDIT: slot t400_emit advanced from $c0 to $target" "skipping 2 events"
it_check "(l) the slot moved to exactly the LSN" \
	test "$(it_slot_confirmed "$db" t400_emit)" = "$target"

emit_txn l-3
l3x=$EX l3r=$EROW l3e=$EMIT
dlqL=t400.dlq.emit.$TAG
it_run_relay l_skip --config "$cfgE" --skip-transaction "$l3x" --yes --to-dlq "$dlqL"
it_expect_exit l_skip 0 "(l) --skip-transaction --to-dlq with outbox.emit.prefix"
it_expect_in l_skip out "(l) --skip-transaction lists both events" \
	"2 outbox events" "$l3r" "$l3e"
it_consume_wait "$dlqL" "$IT_TEST_DIR/l_dlq.json" 2 20 || true
it_py_check "(l) the dead-letter topic has the row and the emitted event" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ids = []
for r in recs:
    h = r["headers"]
    h = dict(zip(h[0::2], h[1::2]))
    assert h["__connect.errors.exception.message"] == "skipped by operator", h
    ids.append(h["id"])
assert sorted(ids) == sorted(sys.argv[2:]), recs
' "$IT_TEST_DIR/l_dlq.json" "$l3r" "$l3e"
it_run_relay l_after --config "$cfgE" --dry-run
it_check "(l) nothing is pending after the skip" test "$(it_count "$IT_TEST_DIR/l_after.out")" -eq 0

# ---------------------------------------------------------------- (m)
it_sql "$db" "CREATE SCHEMA t400_part;
	CREATE TABLE t400_part.p1 (LIKE public.outbox INCLUDING DEFAULTS);
	CREATE TABLE t400_part.p2 (LIKE public.outbox INCLUDING DEFAULTS);
	CREATE SCHEMA t400_part_bad;
	CREATE TABLE t400_part_bad.p1 (LIKE public.outbox INCLUDING DEFAULTS);
	ALTER TABLE t400_part_bad.p1 DROP COLUMN event_type" >/dev/null
it_run_relay m_check --config "$cfgE" --check --set outbox.table=t400_part.*
it_expect_exit m_check 0 "(m) --check with outbox.table = schema.*"
it_expect_in m_check out "(m) the outbox_table item is ok" "ok    outbox_table: t400_part.*"
it_run_relay m_noschema --config "$cfgE" --check --set outbox.table=t400_nope.*
it_expect_exit m_noschema 78 "(m) --check with outbox.table = a missing schema.*"
it_expect_in m_noschema out "(m) the fail item names the schema" \
	"fail  outbox_table: schema t400_nope does not exist"
it_run_relay m_nocol --config "$cfgE" --check --set outbox.table=t400_part_bad.*
it_expect_exit m_nocol 78 "(m) --check with a schema.* table that lacks a column"
it_expect_in m_nocol out "(m) the fail item names the table and the column" \
	'fail  outbox_table: table.field.event.type: column "event_type" does not exist in t400_part_bad.p1'

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
