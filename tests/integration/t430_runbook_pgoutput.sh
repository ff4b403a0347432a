#!/usr/bin/env bash
# t430_runbook_pgoutput -- the runbook flags with slot.plugin = pgoutput
# against a real PostgreSQL 15 (docs/pgoutput.md, wiring plan 7 and 8).
#
#   (a) --create-slot creates the publication (FOR TABLE, publish =
#       'insert') and then the pgoutput slot: the publication is older
#       than the slot's catalog_xmin; again 69, --if-not-exists 0; --json
#       names plugin and publication; an existing publication is used,
#       not altered; a role that may not create it gets the SQL (77),
#       and sql/publication.sql (the DBA's way) makes one it accepts;
#       sql/emit.sql left no variant of pg_logical_emit_message to
#       PUBLIC (the test's other role cannot call it);
#   (b) --check: ok on that setup (no wal2json item, the server version
#       ok: 15 to 18 are tested with pgoutput); fail (69) for a
#       missing publication, a row filter, a column list without a spec
#       column, a publication of another table, a wal2json slot with
#       slot.plugin = pgoutput and a pgoutput slot with wal2json;
#   (c) --dry-run prints the same events from the pgoutput slot as from a
#       wal2json slot of the same WAL (rows and outbox_emit() messages);
#   (d) --skip-transaction and --advance-slot move both slots to the same
#       position: the commit end of the transaction skipped, and what is
#       left pending is the same;
#   (e) --slot-status names the plugin and the publication;
#   (f) --skip-transaction --to-dlq: the same dead-letter record from both
#       slots, pg_lsn the commit end; (g) --drop-slot counts the same
#       unconfirmed events; (h) outbox.table = schema.*: FOR TABLES IN
#       SCHEMA, --check ok, and a one-table publication fails;
#   (i) an event the decoder refuses is named and counted by
#       --skip-transaction and --advance-slot as with wal2json.
#
# On a server without wal2json (PostgreSQL 16 to 18 from tests/env/pgdist.sh,
# make check-pg-matrix) every pgoutput check runs as above; the commit ends
# come from a test_decoding slot of the same WAL instead, a test_decoding
# slot stands for the slot of another plugin in (b), and each comparison
# with the wal2json slot is a SKIP naming the reason.
set -euo pipefail
# Each slot's plugin is chosen here, whatever make integration-pgoutput
# sets: lib.sh's defaults (the slot it_setup_db makes, the slot.plugin
# it_write_config writes) stay wal2json's, and the pgoutput side is
# configured explicitly below.
RELAY_PLUGIN=wal2json
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

IT_RUN_TIMEOUT=${RUN_TIMEOUT:-120}

db=t430_pgo
pub=t430_pub
w2j=t430_w2j                  # a wal2json slot reading the same WAL
td=t430_td                    # a test_decoding slot: commit ends
# No slot yet: (a) creates the first one (and wal2json may be missing).
if ! { it_drop_db "$db" && it_sql postgres "CREATE DATABASE \"$db\"" &&
	it_sql_file "$db" "$IT_ROOT/sql/outbox.sql"; } >/dev/null 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database and outbox table created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi
it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
# Whether this server can load wal2json: a temporary slot says so.
if it_sql "$db" "SELECT 1 FROM pg_create_logical_replication_slot('t430_probe',
	'wal2json', true)" >/dev/null 2>&1; then
	HAVE_W2J=1
	both=both
else
	HAVE_W2J=
	NO_W2J="this server has no wal2json ($(it_sql "$db" "SHOW server_version"))"
	both="the pgoutput slot (no wal2json slot here)"
fi
# w2j NAME DESC ARGS...: a runbook action on the wal2json slot, or a SKIP.
w2j() {
	local name=$1 desc=$2
	shift 2
	if [[ -n $HAVE_W2J ]]; then
		it_run_relay "$name" --config "$cfgW" "$@"
		it_expect_exit "$name" 0 "$desc"
	else
		skip "$desc" "$NO_W2J"
	fi
}
# The suffix of the wal2json side's output files, or the pgoutput side's.
w2j_or_p() { if [[ -n $HAVE_W2J ]]; then echo w; else echo p; fi; }
# The commit end of transaction XID, from the wal2json slot's C row or
# test_decoding's COMMIT row (both carry the end of the commit record).
commit_end() {
	if [[ -n $HAVE_W2J ]]; then
		it_sql "$db" "SELECT lsn FROM pg_logical_slot_peek_changes('$w2j', NULL, NULL,
			'format-version', '2', 'include-lsn', '1', 'include-xids', '1')
			WHERE data::jsonb->>'action' = 'C' AND (data::jsonb->>'xid')::bigint = $1"
	else
		it_sql "$db" "SELECT lsn FROM pg_logical_slot_peek_changes('$td', NULL, NULL,
			'include-xids', '1') WHERE data = 'COMMIT $1'"
	fi
}
# The wal2json slot comes after (a): a slot holds back the catalog_xmin
# of every slot created after it, and (a) compares the publication's
# xmin with the new slot's.
cfg=$IT_TEST_DIR/pgo.conf
it_write_config "$cfg" "$db" status.interval.ms=500 shutdown.timeout.ms=5000 \
	slot.plugin=pgoutput slot.publication=$pub outbox.emit.prefix=outbox
cfgW=$IT_TEST_DIR/w2j.conf
it_write_config "$cfgW" "$db" "$w2j" status.interval.ms=500 \
	shutdown.timeout.ms=5000 outbox.emit.prefix=outbox

# ---------------------------------------------------------------- (a)
it_run_relay a_create --config "$cfg" --create-slot
it_expect_exit a_create 0 "(a) --create-slot with pgoutput"
# slot.failover = auto: a failover slot from 17 on, said in the line.
failover_said=
(($(it_sql "$db" "SHOW server_version_num") >= 170000)) && failover_said=", failover"
it_expect_in a_create out "(a) it says what it created" \
	"created publication \"$pub\"" "created slot \"$db\" (plugin pgoutput, publication $pub$failover_said)"
it_check "(a) the publication is insert-only on public.outbox" test \
	"$(it_sql "$db" "SELECT p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate,
		string_agg(t.schemaname || '.' || t.tablename, ',')
		FROM pg_publication p JOIN pg_publication_tables t USING (pubname)
		WHERE p.pubname = '$pub' GROUP BY 1, 2, 3, 4")" = "t|f|f|f|public.outbox"
it_check "(a) the slot is a pgoutput slot" test \
	"$(it_sql "$db" "SELECT plugin, two_phase FROM pg_replication_slots
		WHERE slot_name = '$db'")" = "pgoutput|f"
it_check "(a) the publication was created before the slot" test \
	"$(it_sql "$db" "SELECT (SELECT xmin::text::bigint FROM pg_publication
		WHERE pubname = '$pub') < (SELECT catalog_xmin::text::bigint
		FROM pg_replication_slots WHERE slot_name = '$db')")" = t
it_run_relay a_again --config "$cfg" --create-slot
it_expect_exit a_again 69 "(a) --create-slot when the slot exists"
it_run_relay a_ine --config "$cfg" --create-slot --if-not-exists --json
it_expect_exit a_ine 0 "(a) --create-slot --if-not-exists"
it_py_check "(a) --json names plugin and publication" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["created"] is False and d["plugin"] == "pgoutput", d
assert d["publication"] == sys.argv[2], d
' "$IT_TEST_DIR/a_ine.out" "$pub"
it_run_relay a_ine_nopub --config "$cfg" --create-slot --if-not-exists --set slot.publication=t430_nope
it_expect_exit a_ine_nopub 69 "(a) --if-not-exists, the slot exists but not its publication"
it_expect_in a_ine_nopub err "(a) it says why it does not create it now" \
	"exists but its publication \"t430_nope\" does not" "--advance-slot"
it_check "(a) and does not create it" test \
	"$(it_sql "$db" "SELECT count(*) FROM pg_publication WHERE pubname = 't430_nope'")" = 0
it_sql "$db" "ALTER PUBLICATION $pub SET (publish = 'insert, update')" >/dev/null
it_run_relay a_second --config "$cfg" --set slot.name=t430_second --create-slot --json
it_expect_exit a_second 0 "(a) a second slot on the existing publication"
it_py_check "(a) --json: created, the publication used as it was" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["created"] is True and d["plugin"] == "pgoutput", d
assert d["publication"] == sys.argv[2] and d["publication_created"] is False, d
' "$IT_TEST_DIR/a_second.out" "$pub"
it_check "(a) the existing publication was not altered" test \
	"$(it_sql "$db" "SELECT pubupdate FROM pg_publication WHERE pubname = '$pub'")" = t
it_sql "$db" "ALTER PUBLICATION $pub SET (publish = 'insert');
	SELECT pg_drop_replication_slot('t430_second')" >/dev/null
# A role that can create slots but does not own the table.
it_sql "$db" "SET client_min_messages = warning; DROP ROLE IF EXISTS t430_repl; CREATE ROLE t430_repl LOGIN REPLICATION;
	GRANT USAGE ON SCHEMA public TO t430_repl; GRANT SELECT ON public.outbox TO t430_repl" >/dev/null
# sql/emit.sql (applied above) took EXECUTE on every variant of
# pg_logical_emit_message from PUBLIC, whatever this server's variants
# are (17 added a fourth argument, flush, to both): a role granted
# nothing may not forge an outbox_emit() event.
it_check "(a) emit.sql: no variant of pg_logical_emit_message is left to PUBLIC" test \
	"$(it_sql "$db" "SELECT count(*), count(*) FILTER (WHERE
		has_function_privilege('t430_repl', p.oid, 'EXECUTE'))
		FROM pg_proc p WHERE p.proname = 'pg_logical_emit_message'")" = "2|0"
out=$(it_sql "$db" "SET ROLE t430_repl;
	SELECT pg_logical_emit_message(true, 'outbox', '{}')" 2>&1 || true)
if [[ $out == *"permission denied for function pg_logical_emit_message"* ]]; then
	ok "(a) emit.sql: a role granted nothing cannot call it"
else
	not_ok "(a) emit.sql: a role granted nothing cannot call it" "$out"
fi
cfgR=$IT_TEST_DIR/role.conf
it_write_config "$cfgR" "$db" t430_norights slot.plugin=pgoutput \
	slot.publication=t430_pub_r
sed -i "s/user=postgres/user=t430_repl/" "$cfgR"
it_run_relay a_rights --config "$cfgR" --create-slot
it_expect_exit a_rights 77 "(a) --create-slot without the right to create the publication"
it_expect_in a_rights err "(a) it prints the SQL for a DBA" \
	"CREATE PUBLICATION \"t430_pub_r\" FOR TABLE \"public\".\"outbox\" WITH (publish = 'insert');"
it_check "(a) and creates no slot" test \
	"$(it_sql "$db" "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 't430_norights'")" = 0

# The DBA's way: sql/publication.sql as the table owner (twice: it is
# idempotent), then --create-slot by the role without the rights.
kit() {
	psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$db" -v ON_ERROR_STOP=1 \
		-v publication=t430_pub_kit -f "$IT_ROOT/sql/publication.sql"
}
it_check "(a) sql/publication.sql applies" kit
it_check "(a) sql/publication.sql applies again (no change)" kit
it_check "(a) it made an insert-only publication of public.outbox" test \
	"$(it_sql "$db" "SELECT p.pubinsert, p.pubupdate, t.schemaname || '.' || t.tablename
		FROM pg_publication p JOIN pg_publication_tables t USING (pubname)
		WHERE p.pubname = 't430_pub_kit'")" = "t|f|public.outbox"
it_run_relay a_kit --config "$cfgR" --set slot.publication=t430_pub_kit --create-slot
it_expect_exit a_kit 0 "(a) --create-slot without the rights, on the DBA's publication"
it_expect_in a_kit out "(a) it used the publication as it was" \
	"created slot \"t430_norights\" (plugin pgoutput, publication t430_pub_kit$failover_said)"
it_sql "$db" "SELECT pg_drop_replication_slot('t430_norights')" >/dev/null

if [[ -n $HAVE_W2J ]]; then
	it_sql "$db" "SELECT pg_create_logical_replication_slot('$w2j', 'wal2json')" >/dev/null
else
	it_sql "$db" "SELECT pg_create_logical_replication_slot('$td', 'test_decoding')" >/dev/null
fi

# ---------------------------------------------------------------- (b)
it_run_relay b_check --config "$cfg" --check
it_expect_exit b_check 0 "(b) --check with pgoutput"
it_expect_in b_check out "(b) the publication and slot items are ok" \
	"ok    pgoutput: built into PostgreSQL" "ok    publication: \"$pub\"" \
	"ok    slot: \"$db\": pgoutput" ", 0 fail"
# 15, and 16 to 18 with pgoutput (make check-pg-matrix), are tested.
it_expect_in b_check out "(b) the server version is a tested one" "ok    server_version: PostgreSQL"
if grep -q "wal2json: loadable" "$IT_TEST_DIR/b_check.out"; then
	not_ok "(b) no wal2json item with pgoutput" "$(cat "$IT_TEST_DIR/b_check.out")"
else
	ok "(b) no wal2json item with pgoutput"
fi
it_sql "$db" "CREATE TABLE public.t430_other (id int);
	CREATE PUBLICATION t430_rf FOR TABLE public.outbox WHERE (event_type <> 'x') WITH (publish = 'insert');
	CREATE PUBLICATION t430_cl FOR TABLE public.outbox (id, aggregate_type, aggregate_id, payload) WITH (publish = 'insert');
	CREATE PUBLICATION t430_other FOR TABLE public.t430_other;
	CREATE PUBLICATION t430_noins FOR TABLE public.outbox WITH (publish = 'update')" >/dev/null
b_fail() { # NAME DESC FAIL_TEXT ARGS...
	local name=$1 desc=$2 text=$3
	shift 3
	it_run_relay "$name" --config "$cfg" --check "$@"
	it_expect_exit "$name" 69 "(b) --check, $desc"
	it_expect_in "$name" out "(b) fail item: $desc" "$text" "      fix: "
}
b_fail b_nopub "a missing publication" 'fail  publication: "t430_nope" does not exist' \
	--set slot.publication=t430_nope
b_fail b_rf "a row filter" 'fail  publication: "t430_rf" has a row filter on public.outbox' \
	--set slot.publication=t430_rf
b_fail b_cl "a column list without event_type" \
	'fail  publication: "t430_cl" leaves out column "event_type" of public.outbox' \
	--set slot.publication=t430_cl
# The fix sentences' SQL repairs both, as printed.
fix_sql() { sed -n 's/^      fix: \(BEGIN;.*COMMIT;\) (adds it back.*/\1/p' "$IT_TEST_DIR/$1.out"; }
for b in b_rf b_cl; do
	sql=$(fix_sql $b)
	if [[ -n $sql ]] && it_sql "$db" "$sql" >"$IT_TEST_DIR/$b.fix" 2>&1; then
		ok "(b) the fix of $b runs: $sql"
	else
		not_ok "(b) the fix of $b runs" "$sql: $(cat "$IT_TEST_DIR/$b.fix")"
	fi
done
it_run_relay b_fixed --config "$cfg" --check --set slot.publication=t430_rf
it_expect_exit b_fixed 0 "(b) --check after the fix (row filter)"
it_run_relay b_fixed2 --config "$cfg" --check --set slot.publication=t430_cl
it_expect_exit b_fixed2 0 "(b) --check after the fix (column list)"
b_fail b_other "a publication of another table" \
	'fail  publication: "t430_other" does not publish public.outbox' \
	--set slot.publication=t430_other
b_fail b_noins "a publication without inserts" \
	'fail  publication: "t430_noins" does not publish inserts' \
	--set slot.publication=t430_noins
if [[ -n $HAVE_W2J ]]; then
	b_fail b_w2jslot "a wal2json slot with slot.plugin = pgoutput" \
		"fail  slot: \"$w2j\"" --set slot.name=$w2j
else
	b_fail b_tdslot "a test_decoding slot with slot.plugin = pgoutput" \
		"fail  slot: \"$td\"" --set slot.name=$td
fi
it_run_relay b_pgoslot --config "$cfgW" --check --set slot.name=$db
it_expect_exit b_pgoslot 69 "(b) --check, a pgoutput slot with slot.plugin = wal2json"
it_expect_in b_pgoslot out "(b) fail item names the plugin" "fail  slot: \"$db\"" "pgoutput"

# ---------------------------------------------------------------- (c)
# Both slots from the same position: the wal2json slot saw the DDL
# above as empty transactions, which pgoutput does not send.
it_sql "$db" "SELECT count(pg_replication_slot_advance(slot_name, pg_current_wal_lsn()))
	FROM pg_replication_slots WHERE slot_name IN ('$db', '$w2j', '$td')" >/dev/null
tag=T430$$
x1=$(it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$tag', 'k-1', 'Row', '{\"n\": 1}')" \
	"$IT_INS ('$(it_new_uuid)', '$tag', 'k-1', 'Row', '{\"n\": 2}')" \
	"SELECT outbox_emit('$tag', 'k-1', 'Emitted', '{\"via\": \"emit\"}')" | sed -n 1p)
x2=$(it_txn "$db" "SELECT outbox_emit('$tag', 'k-2', 'Emitted', '{\"n\": 3}')" \
	"$IT_INS ('$(it_new_uuid)', '$tag', 'k-2', 'Row', '{\"n\": 4, \"s\": \"\\u00e9\"}')" | sed -n 1p)
x3=$(it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$tag', 'k-3', 'Row', '{\"n\": 5}')" | sed -n 1p)
it_sql "$db" "INSERT INTO public.t430_other VALUES (1)" >/dev/null
it_diag "(c) xids $x1 $x2 $x3"
it_run_relay c_dry_p --config "$cfg" --dry-run
it_expect_exit c_dry_p 0 "(c) --dry-run from the pgoutput slot"
w2j c_dry_w "(c) --dry-run from the wal2json slot" --dry-run
it_expect_in c_dry_p err "(c) the summary counts rows and messages" "6 events in 3 transactions"
it_py_check "(c) the 6 events in commit order: keys, types, payloads" '
import json, sys
got = []
for l in open(sys.argv[1]):
    r = json.loads(l)
    got.append((r["key"], r["headers"]["event_type"], json.loads(r["payload"])))
want = [("k-1", "Row", {"n": 1}), ("k-1", "Row", {"n": 2}),
        ("k-1", "Emitted", {"via": "emit"}), ("k-2", "Emitted", {"n": 3}),
        ("k-2", "Row", {"n": 4, "s": "\u00e9"}), ("k-3", "Row", {"n": 5})]
assert got == want, got
' "$IT_TEST_DIR/c_dry_p.out"
dry_same() { # DESC PGO_OUT W2J_OUT
	it_py_check "$1" '
import json, sys
def load(p):
    out = []
    for l in open(p):
        r = json.loads(l)
        r["headers"].pop("pg_lsn", None)
        out.append(r)
    return out
p, w = load(sys.argv[1]), load(sys.argv[2])
assert len(p) == int(sys.argv[3]), (len(p), p)
assert p == w, (p, w)
' "$2" "$3" "$4"
}
if [[ -n $HAVE_W2J ]]; then
	dry_same "(c) the same 6 events, in order, as wal2json (all but pg_lsn)" \
		"$IT_TEST_DIR/c_dry_p.out" "$IT_TEST_DIR/c_dry_w.out" 6
else
	skip "(c) the same 6 events, in order, as wal2json (all but pg_lsn)" "$NO_W2J"
fi

# ---------------------------------------------------------------- (d)
# The commit end of x1 (the wal2json slot's C row, or test_decoding's).
end1=$(commit_end "$x1")
it_run_relay d_skip_p --config "$cfg" --skip-transaction "$x1" --yes --json
it_expect_exit d_skip_p 0 "(d) --skip-transaction on the pgoutput slot"
w2j d_skip_w "(d) --skip-transaction on the wal2json slot" \
	--skip-transaction "$x1" --yes --json
conf_p=$(it_slot_confirmed "$db" "$db")
if [[ -n $HAVE_W2J ]]; then
	conf_w=$(it_slot_confirmed "$db" "$w2j")
else
	conf_w=$end1  # no wal2json slot: the pgoutput side alone
fi
it_check "(d) $both at the commit end of $x1 ($end1): pgoutput $conf_p, wal2json $conf_w" \
	test -n "$end1" -a "$conf_p" = "$end1" -a "$conf_w" = "$end1"
it_py_check "(d) $both skip 3 events" '
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    assert d["skipped_events"] == 3, d
' "$IT_TEST_DIR/d_skip_p.out" ${HAVE_W2J:+"$IT_TEST_DIR/d_skip_w.out"}
end2=$(commit_end "$x2")
it_run_relay d_adv_p --config "$cfg" --advance-slot "$end2" --yes --json
it_expect_exit d_adv_p 0 "(d) --advance-slot on the pgoutput slot"
w2j d_adv_w "(d) --advance-slot on the wal2json slot" \
	--advance-slot "$end2" --yes --json
it_py_check "(d) $both count the 2 events of $x2 and end at $end2" '
import json, sys
end = sys.argv[1]
for f in sys.argv[2:]:
    d = json.load(open(f))
    assert d["skipped_events"] == 2 and d["skipped_transactions"] == 1, d
    assert d["to"] == end, d
' "$end2" "$IT_TEST_DIR/d_adv_p.out" ${HAVE_W2J:+"$IT_TEST_DIR/d_adv_w.out"}
it_run_relay d_dry_p --config "$cfg" --dry-run
if [[ -n $HAVE_W2J ]]; then
	it_run_relay d_dry_w --config "$cfgW" --dry-run
	dry_same "(d) the same 1 event is left pending in both" \
		"$IT_TEST_DIR/d_dry_p.out" "$IT_TEST_DIR/d_dry_w.out" 1
else
	it_py_check "(d) 1 event is left pending: the one of $x3" '
import json, sys
got = [json.loads(l)["key"] for l in open(sys.argv[1])]
assert got == ["k-3"], got
' "$IT_TEST_DIR/d_dry_p.out"
fi

# ---------------------------------------------------------------- (e)
it_run_relay e_status --config "$cfg" --slot-status
it_expect_in e_status out "(e) --slot-status names plugin and publication" \
	"plugin pgoutput, publication $pub"
it_run_relay e_json --config "$cfg" --slot-status --json
it_py_check "(e) --slot-status --json names plugin and publication" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plugin"] == "pgoutput" and d["publication"] == sys.argv[2], d
' "$IT_TEST_DIR/e_json.out" "$pub"

# ---------------------------------------------------------------- (f)
end3=$(commit_end "$x3")
dlqP=t430.dlq.pgo.$$
dlqW=t430.dlq.w2j.$$
it_run_relay f_dlq_p --config "$cfg" --skip-transaction "$x3" --yes --to-dlq "$dlqP"
it_expect_exit f_dlq_p 0 "(f) --skip-transaction --to-dlq on the pgoutput slot"
w2j f_dlq_w "(f) --skip-transaction --to-dlq on the wal2json slot" \
	--skip-transaction "$x3" --yes --to-dlq "$dlqW"
it_consume_wait "$dlqP" "$IT_TEST_DIR/f_dlq_p.json" 1 20 || true
if [[ -n $HAVE_W2J ]]; then
	it_consume_wait "$dlqW" "$IT_TEST_DIR/f_dlq_w.json" 1 20 || true
else
	cp "$IT_TEST_DIR/f_dlq_p.json" "$IT_TEST_DIR/f_dlq_w.json"
fi
it_py_check "(f) the same dead-letter record from $both, pg_lsn the commit end $end3" '
import json, sys
def load(p):
    out = []
    for l in open(p):
        r = json.loads(l)
        h = r["headers"]
        h = dict(zip(h[0::2], h[1::2]))
        # Names its slot: the one thing the two slots differ in.
        assert h.pop("__connect.errors.connector.name").startswith("outbox-relay/"), h
        out.append((r["key"], r["payload"], h))
    return out
p, w = load(sys.argv[1]), load(sys.argv[2])
assert len(p) == 1 and p == w, (p, w)
assert p[0][2]["pg_lsn"] == sys.argv[3], p
assert p[0][2]["__connect.errors.exception.message"].startswith("skipped by operator"), p
' "$IT_TEST_DIR/f_dlq_p.json" "$IT_TEST_DIR/f_dlq_w.json" "$end3"
it_check "(f) $both at the commit end of $x3" test -n "$end3" -a \
	"$(it_slot_confirmed "$db" "$db")" = "$end3" -a \
	"$(if [[ -n $HAVE_W2J ]]; then it_slot_confirmed "$db" "$w2j"; else echo "$end3"; fi)" = "$end3"

# ---------------------------------------------------------------- (g)
it_txn "$db" "$IT_INS ('$(it_new_uuid)', '$tag', 'k-4', 'Row', '{\"n\": 6}')" \
	"SELECT outbox_emit('$tag', 'k-4', 'Emitted', '{\"n\": 7}')" >/dev/null
it_run_relay g_drop_p --config "$cfg" --drop-slot --yes --json
it_expect_exit g_drop_p 0 "(g) --drop-slot on the pgoutput slot"
w2j g_drop_w "(g) --drop-slot on the wal2json slot" --drop-slot --yes --json
it_py_check "(g) $both count the same 2 unconfirmed events" '
import json, sys
p = json.load(open(sys.argv[1]))
w = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else p
assert p["unconfirmed_events"] == 2 and p["unconfirmed_events_exact"], p
assert len(p["unconfirmed_event_ids"]) == 2, p
assert p["unconfirmed_event_ids"] == w["unconfirmed_event_ids"], (p, w)
' "$IT_TEST_DIR/g_drop_p.out" ${HAVE_W2J:+"$IT_TEST_DIR/g_drop_w.out"}

# ---------------------------------------------------------------- (h)
it_sql "$db" "CREATE SCHEMA t430_part;
	CREATE TABLE t430_part.p1 (LIKE public.outbox INCLUDING DEFAULTS)" >/dev/null
cfgS=$IT_TEST_DIR/schema.conf
it_write_config "$cfgS" "$db" t430_schema slot.plugin=pgoutput \
	slot.publication=t430_pub_s outbox.table=t430_part.*
it_run_relay h_create --config "$cfgS" --create-slot
it_expect_exit h_create 0 "(h) --create-slot with outbox.table = schema.*"
it_check "(h) the publication is FOR TABLES IN SCHEMA t430_part" test \
	"$(it_sql "$db" "SELECT n.nspname FROM pg_publication_namespace pn
		JOIN pg_publication p ON p.oid = pn.pnpubid
		JOIN pg_namespace n ON n.oid = pn.pnnspid WHERE p.pubname = 't430_pub_s'")" = t430_part
it_run_relay h_check --config "$cfgS" --check
it_expect_exit h_check 0 "(h) --check with outbox.table = schema.*"
it_expect_in h_check out "(h) the publication item is ok" 'ok    publication: "t430_pub_s" publishes the inserts into schema t430_part'
it_run_relay h_bad --config "$cfgS" --check --set slot.publication=$pub
it_expect_exit h_bad 69 "(h) --check, a publication of one table for schema.*"
it_expect_in h_bad out "(h) the fail item says the schema must be in it" \
	"fail  publication: \"$pub\" does not publish schema t430_part"
it_sql "$db" "INSERT INTO t430_part.p1 (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$tag', 'k-5', 'Row', '{}')" >/dev/null
it_run_relay h_dry --config "$cfgS" --dry-run
it_expect_exit h_dry 0 "(h) --dry-run with outbox.table = schema.*"
it_expect_in h_dry err "(h) it counts the partition's row" "1 event in 1 transaction"

# ---------------------------------------------------------------- (i)
# Events the decoder refuses (a text payload that is not JSON) are
# events all the same: listed by id and counted, as with wal2json.
it_sql "$db" "CREATE TABLE t430_part.p2 (LIKE public.outbox INCLUDING DEFAULTS);
	ALTER TABLE t430_part.p2 ALTER COLUMN payload TYPE text" >/dev/null
it_sql "$db" "SELECT pg_replication_slot_advance('t430_schema', pg_current_wal_lsn())" >/dev/null
if [[ -n $HAVE_W2J ]]; then
	it_sql "$db" "SELECT pg_create_logical_replication_slot('t430_schema_w', 'wal2json')" >/dev/null
fi
cfgSW=$IT_TEST_DIR/schema_w2j.conf
it_write_config "$cfgSW" "$db" t430_schema_w outbox.table=t430_part.*
bad1=$(it_new_uuid)
bad2=$(it_new_uuid)
xb1=$(it_txn "$db" "INSERT INTO t430_part.p2 (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$bad1', '$tag', 'k-6', 'Row', 'not json')" | sed -n 1p)
it_txn "$db" "INSERT INTO t430_part.p2 (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES ('$bad2', '$tag', 'k-7', 'Row', 'not json either')" >/dev/null
it_run_relay i_dry --config "$cfgS" --dry-run
it_expect_exit i_dry 65 "(i) --dry-run stops at the undecodable event"
it_expect_in i_dry out "(i) and says why" "not JSON"
it_run_relay i_skip_p --config "$cfgS" --skip-transaction "$xb1" --yes --json
it_expect_exit i_skip_p 0 "(i) --skip-transaction of it on the pgoutput slot"
cfgW=$cfgSW
w2j i_skip_w "(i) --skip-transaction of it on the wal2json slot" \
	--skip-transaction "$xb1" --yes --json
it_py_check "(i) $both name the event by its id" '
import json, sys
for f in sys.argv[1:3]:
    d = json.load(open(f))
    assert d["skipped_events"] == 1, d
    assert [e["id"] for e in d["events"]] == [sys.argv[3]], d
' "$IT_TEST_DIR/i_skip_p.out" "$IT_TEST_DIR/i_skip_$(w2j_or_p).out" "$bad1"
target=$(it_current_lsn "$db")
it_run_relay i_adv_p --config "$cfgS" --advance-slot "$target" --yes --json
it_expect_exit i_adv_p 0 "(i) --advance-slot past the second on the pgoutput slot"
w2j i_adv_w "(i) --advance-slot past the second on the wal2json slot" \
	--advance-slot "$target" --yes --json
it_py_check "(i) $both count it and name it" '
import json, sys
for f in sys.argv[1:3]:
    d = json.load(open(f))
    assert d["skipped_events"] == 1, d
    assert d["skipped_event_ids"] == [sys.argv[3]], d
' "$IT_TEST_DIR/i_adv_p.out" "$IT_TEST_DIR/i_adv_$(w2j_or_p).out" "$bad2"

it_drop_db "$db" >/dev/null 2>&1 || true
it_sql postgres "DROP ROLE IF EXISTS t430_repl" >/dev/null 2>&1 || true
it_summary
