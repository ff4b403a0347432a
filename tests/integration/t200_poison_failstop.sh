#!/usr/bin/env bash
# t200_poison_failstop -- the default policy for a poison event is
# fail-stop. For each case, in a database and slot of its own, three
# transactions are committed before the relay starts:
#
#   G1  one good event
#   P   a good event, then the poison row, in one transaction
#   G2  one good event
#
# and the relay must: exit 65; log the LSN (X/X), the xid, the event id and
# the cause; have published G1 and not G2; leave the slot's
# confirmed_flush_lsn at or past G1's commit end and before P's commit end
# (commit ends read from a copy of the slot with
# pg_logical_slot_peek_changes); and fail the same way when started again,
# since the slot keeps P.
#
# Cases: (a) NULL payload, (b) NULL aggregate_id, (c) a text payload
# column holding 'not json', (d) a record larger than
# kafka.message.max.bytes, (e) an aggregate_type that makes an invalid
# topic name.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
it_wal2json_only "finds the commit ends of its transactions with a wal2json peek of a copied slot; pgoutput's refusals are covered by check_pgo.c and t700"

RUN_TAG=$$
RELAY_EXIT_WAIT=${RELAY_EXIT_WAIT:-60}

# Peeks at the slot through a copy of it (the original is left as it is)
# and prints, as JSON lines, every wal2json record in the relay's format.
peek_copy() {
	local db=$1 slot=$2 copy=${2}_peek
	it_sql "$db" "SELECT pg_copy_logical_replication_slot('$slot', '$copy')" >/dev/null
	it_sql "$db" "SELECT data FROM pg_logical_slot_peek_changes('$copy', NULL, NULL,
		'format-version', '2', 'include-transaction', '1', 'include-lsn', '1',
		'include-xids', '1')"
	it_sql "$db" "SELECT pg_drop_replication_slot('$copy')" >/dev/null
}

# From a peek_copy file: the commit end (C record's nextlsn) of XID.
commit_end_of() {
	python3 - "$1" "$2" <<-'PY'
	import json, sys
	for line in open(sys.argv[1]):
	    r = json.loads(line)
	    if r.get("action") == "C" and str(r.get("xid")) == sys.argv[2]:
	        print(r["nextlsn"])
	        break
	PY
}

# From a peek_copy file: the LSNs that may name the poison row: its own I
# record's lsn and its transaction's commit lsn and nextlsn.
poison_lsns() {
	python3 - "$1" "$2" "$3" <<-'PY'
	import json, sys
	path, xid, bad_id = sys.argv[1], sys.argv[2], sys.argv[3]
	for line in open(path):
	    r = json.loads(line)
	    if str(r.get("xid")) != xid:
	        continue
	    if r.get("action") == "I" and any(
	            c.get("value") == bad_id for c in r.get("columns", [])):
	        print(r["lsn"])
	    if r.get("action") == "C":
	        print(r["lsn"])
	        print(r["nextlsn"])
	PY
}

# True if an it_consume file holds a record whose "id" header is ID.
# (Not `it_fields | grep -q`: grep -q leaving early can fail the writer
# with EPIPE, and pipefail then turns a match into a miss.)
has_id() {
	local ids
	ids=$(it_fields "$1" h:id) || return 2
	grep -qxF -- "$2" <<<"$ids"
}

lsn_lt() { ! lsn_ge "$1" "$2"; }

# run_case NAME SETUP_SQL BAD_INSERT CAUSE_REGEX [key=value...]
# SETUP_SQL runs after the standard outbox table exists ("" for none).
# BAD_INSERT is an INSERT with two placeholders: @ID@ (the poison row's
# id) and @TYPE@ (the good aggregate_type).
run_case() {
	local name=$1 setup=$2 bad=$3 cause=$4
	shift 4
	local db=t200_$name slot=t200_$name dir=$IT_TEST_DIR/$name
	local type=t200_${name}_$RUN_TAG topic g1 pg pb g2 out rc rc2 log log2
	local g1xid pxid g2xid g1end pend conf conf2 line line2 lsns l found
	topic=outbox.event.$type
	mkdir -p "$dir"
	log=$dir/relay.log
	log2=$dir/relay2.log
	it_diag "case $name"

	if ! it_setup_db "$db" 2>"$dir/setup.err" ||
		{ [[ -n $setup ]] && ! it_sql "$db" "$setup" 2>>"$dir/setup.err"; }; then
		not_ok "$name: database set up" "$(cat "$dir/setup.err")"
		return 0
	fi

	g1=$(it_new_uuid) pg=$(it_new_uuid) pb=$(it_new_uuid) g2=$(it_new_uuid)
	bad=${bad//@ID@/$pb}
	bad=${bad//@TYPE@/$type}
	if ! g1xid=$(it_txn "$db" "$IT_INS ('$g1', '$type', 'agg-1', 'Good1', '{\"n\": 1}')" \
		2>"$dir/sql.err") ||
		! pxid=$(it_txn "$db" "$IT_INS ('$pg', '$type', 'agg-1', 'GoodInP', '{\"n\": 2}')" \
			"$bad" 2>>"$dir/sql.err") ||
		! g2xid=$(it_txn "$db" "$IT_INS ('$g2', '$type', 'agg-1', 'Good2', '{\"n\": 3}')" \
			2>>"$dir/sql.err"); then
		not_ok "$name: G1, P and G2 committed" "$(cat "$dir/sql.err")"
		return 0
	fi
	if ! peek_copy "$db" "$slot" >"$dir/peek.json" 2>"$dir/peek.err"; then
		not_ok "$name: slot peeked through a copy" "$(cat "$dir/peek.err")"
		return 0
	fi
	g1end=$(commit_end_of "$dir/peek.json" "$g1xid")
	pend=$(commit_end_of "$dir/peek.json" "$pxid")
	lsns=$(poison_lsns "$dir/peek.json" "$pxid" "$pb")
	if [[ -z $g1end || -z $pend ]]; then
		not_ok "$name: commit ends of G1 and P found" \
			"xids $g1xid $pxid $g2xid; $(head -c 2000 "$dir/peek.json")"
		return 0
	fi
	it_diag "$name: xids G1=$g1xid P=$pxid G2=$g2xid, commit ends G1=$g1end P=$pend"

	it_write_config "$dir/relay.conf" "$db" "$slot" status.interval.ms=500 \
		"$@"
	it_start_relay "$dir/relay.conf" "$log"
	it_relay_exit "$IT_RELAY_PID" "$RELAY_EXIT_WAIT"
	rc=$EXIT_RC
	it_check "$name: relay exits 65 (fail-stop)" test "$rc" = 65
	[[ $rc == 65 ]] || it_diag "$(it_show_log "$log")"

	line=$(grep -m1 'fail-stop' "$log" || true)
	if [[ -n $line ]]; then
		ok "$name: log has a fail-stop line"
	else
		not_ok "$name: log has a fail-stop line" "$(it_show_log "$log")"
	fi
	it_diag "$name: $line"
	found=
	for l in $lsns; do
		[[ $line == *"LSN $l"* ]] && found=$l
	done
	if [[ -n $found ]]; then
		ok "$name: fail-stop line names the poison LSN ($found)"
	else
		not_ok "$name: fail-stop line names the poison LSN" \
			"expected one of: ${lsns//$'\n'/ }"
	fi
	if [[ $line =~ xid\ $pxid([^0-9]|$) ]]; then
		ok "$name: fail-stop line names xid $pxid"
	else
		not_ok "$name: fail-stop line names xid $pxid"
	fi
	if [[ $line == *"$pb"* ]]; then
		ok "$name: fail-stop line names the event id"
	else
		not_ok "$name: fail-stop line names the event id" "event id $pb not in: $line"
	fi
	if [[ $line =~ $cause ]]; then
		ok "$name: fail-stop line names the cause"
	else
		not_ok "$name: fail-stop line names the cause" "/$cause/ not in: $line"
	fi

	out=$dir/out.json
	it_consume_wait "$topic" "$out" 1 30 || true
	if has_id "$out" "$g1"; then
		ok "$name: G1's event is in Kafka"
	else
		not_ok "$name: G1's event is in Kafka" \
			"$(it_count "$out") records in $topic; $(it_show_log "$log" 15)"
	fi
	if has_id "$out" "$g2"; then
		not_ok "$name: G2's event is not in Kafka"
	else
		ok "$name: G2's event is not in Kafka"
	fi
	if has_id "$out" "$pg"; then
		it_diag "$name: P's good event was published (allowed: at-least-once)"
	fi

	conf=$(it_slot_confirmed "$db" "$slot")
	it_check "$name: confirmed_flush_lsn $conf >= G1's commit end $g1end" \
		lsn_ge "$conf" "$g1end"
	it_check "$name: confirmed_flush_lsn $conf < P's commit end $pend" \
		lsn_lt "$conf" "$pend"

	# The slot keeps P: a second start stops at the same place.
	it_start_relay "$dir/relay.conf" "$log2"
	it_relay_exit "$IT_RELAY_PID" "$RELAY_EXIT_WAIT"
	rc2=$EXIT_RC
	it_check "$name: restarted relay exits 65 again" test "$rc2" = 65
	line2=$(grep -m1 'fail-stop' "$log2" || true)
	# Same LSN, xid and cause; the text after the timestamp must match.
	if [[ -n $line2 && ${line2#* } == "${line#* }" ]]; then
		ok "$name: restarted relay fails on the same record"
	else
		not_ok "$name: restarted relay fails on the same record" \
			"first:  $line
second: $line2"
	fi
	conf2=$(it_slot_confirmed "$db" "$slot")
	it_check "$name: slot still before P after the restart ($conf2)" \
		lsn_lt "$conf2" "$pend"
	it_consume "$topic" "$out" || true
	if has_id "$out" "$g2"; then
		not_ok "$name: G2's event still not in Kafka after the restart"
	else
		ok "$name: G2's event still not in Kafka after the restart"
	fi
	it_drop_db "$db" >/dev/null 2>&1 || true
}

# (a) NULL payload: the table must allow it.
run_case a_null_payload \
	"ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL" \
	"$IT_INS ('@ID@', '@TYPE@', 'agg-1', 'Bad', NULL)" \
	'payload.*NULL|NULL.*payload'

# (b) NULL aggregate_id (the record key).
run_case b_null_key \
	"ALTER TABLE outbox ALTER COLUMN aggregate_id DROP NOT NULL" \
	"$IT_INS ('@ID@', '@TYPE@', NULL, 'Bad', '{\"n\": 9}')" \
	'aggregate_id.*NULL|NULL.*aggregate_id'

# (c) a text payload column holding something that is not JSON.
run_case c_text_not_json \
	"ALTER TABLE outbox ALTER COLUMN payload TYPE text" \
	"$IT_INS ('@ID@', '@TYPE@', 'agg-1', 'Bad', 'not json')" \
	'not JSON|not valid JSON|invalid JSON'

# (d) a record larger than the producer's limit (about 200 kB against
# message.max.bytes = 100000).
run_case d_too_large "" \
	"$IT_INS ('@ID@', '@TYPE@', 'agg-1', 'Bad',
		jsonb_build_object('big', repeat('x', 200000)))" \
	'[Tt]oo large|[Ss]ize' \
	kafka.message.max.bytes=100000

# (e) an aggregate_type that makes an invalid topic name.
run_case e_bad_topic "" \
	"$IT_INS ('@ID@', 'has space', 'agg-1', 'Bad', '{\"n\": 9}')" \
	'has space.*invalid|invalid.*has space'

it_summary
