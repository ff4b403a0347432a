#!/usr/bin/env bash
# t850_debezium_cutover -- the switch from Debezium to the relay and back,
# under load, with real Debezium (PostgreSQL connector 3.6.1.Final, Outbox
# Event Router, Kafka Connect 4.3.0 standalone: tests/env/debezium.sh).
# Both write the same topic (outbox.event.<type>), keyed by aggregate_id,
# the value the payload's text; a writer commits ~250 events/s over 20
# aggregates (per-aggregate sequence numbers, rollbacks, two-aggregate
# transactions: checker.py) the whole time.
#
#  A  Debezium -> relay. Debezium streams (pgoutput, its own slot and
#     publication, snapshot.mode=no_data). The relay's slot is created
#     (outbox-relay --create-slot) at consistent point C: the relay will
#     publish every transaction that commits after C. Debezium confirms an
#     LSN to PostgreSQL only after the records up to it were acked by
#     Kafka and their offsets flushed (docs/migrating-from-debezium.md
#     says where in its source), so once its slot's confirmed_flush_lsn
#     is >= C, everything before C is in Kafka: Debezium is stopped, the
#     relay started.
#  B  relay -> Debezium. The relay streams. Debezium is started and
#     creates its own slot at S (it streams from S); once the relay's
#     confirmed_flush_lsn is >= S the relay is stopped.
#  C  relay -> Debezium, one at a time: Debezium's slot made by hand at S
#     (pg_create_logical_replication_slot, pgoutput) while the relay
#     streams; the relay stopped once it confirmed S; Debezium started
#     T850_LAG_SECS (2) later on that slot with no stored offset: it must
#     stream from the slot's position.
#
# After each switch the writer goes on a few seconds, then stops, and a
# kcat consumer reads the topic: every committed event (from the
# database) at least once, per-key order of first copies, one partition
# per key across both writers, the outbox row's id in the id header
# (consumers dedupe by it); and, by the payload's aggregate whatever the
# key bytes, every aggregate on one partition across both writers.
# Figures per switch: committed, published by each side, duplicates at
# the switch, order violations, aggregates that kept their partition.
#
# Keys: with T850_KEY=json (the default once the relay has key.format)
# Debezium's key converter is JsonConverter without schemas (the common
# setup: key "st-1" quoted) and the relay runs with key.format = json;
# T850_KEY=string uses StringConverter and the relay's plain key. Without
# key.format in the relay, string it is, with a line saying so.
#
# In A, Debezium is frozen (SIGSTOP) for T850_LAG_SECS (2) before C is
# taken: it is behind C by that much load when the wait starts, as it
# would be behind a slow broker. T850_MUTANT=no-wait kills it there
# instead of waiting: the events it had not published before C are lost,
# and the test fails (checked by hand; see the commit).
# T850_MUTANT=key-mismatch (with key.format in the relay) leaves the
# relay's key plain beside Debezium's JSON keys: keys differ, and
# aggregates change partition at the switch; the test must fail.
#
# Heavy (a Connect JVM three times, ~1.5 min): `make check-debezium` runs it
# (IT_DEBEZIUM=1), not make check, where it is one SKIP. Connect's REST
# port: IT_DBZ_REST_PORT (default the Kafka port + 30).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=../env/debezium.sh
source "$IT_ROOT/tests/env/debezium.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"

if [[ -z ${IT_DEBEZIUM:-} ]]; then
	skip "cutover with real Debezium" "make check-debezium runs it (IT_DEBEZIUM=1): a Connect JVM three times, about 1.5 min"
	it_summary
fi
if ! dbz_have_jars; then
	not_ok "Debezium and Connect jars in $DBZ_JARS" "make debezium-deps fetches them"
	it_summary
fi

REST=${IT_DBZ_REST_PORT:-$((${KAFKA_BROKERS##*:} + 30))}
AGGS=20
RATE=${T850_RATE:-200}   # transactions/s; ~1.25 events each (a quarter two-aggregate)
RUN_SECS=${T850_SECS:-6} # load before and after each switch
LAG_SECS=${T850_LAG_SECS:-2}
export DBZ_FLUSH_MS=1000

# -- key format: json when the relay knows key.format
KEY=${T850_KEY:-json}
probe=$IT_TEST_DIR/probe.conf
printf 'pg.conninfo = host=127.0.0.1\nslot.name = probe\nkafka.bootstrap.servers = %s\n' "$KAFKA_BROKERS" >"$probe"
if [[ $KEY == json ]] && "$RELAY_BIN" --config "$probe" --print-config >/dev/null 2>&1 &&
	! "$RELAY_BIN" --config <(cat "$probe"; echo 'key.format = json') --print-config >/dev/null 2>&1; then
	it_diag "the relay has no key.format yet: keys as strings (StringConverter on Debezium's side)"
	KEY=string
fi
relay_key=()
dbz_key=(key.converter=org.apache.kafka.connect.storage.StringConverter)
check_key=()
if [[ $KEY == json ]]; then
	relay_key=(key.format=json)
	dbz_key=(key.converter=org.apache.kafka.connect.json.JsonConverter key.converter.schemas.enable=false)
	check_key=(--key-json)
	# The naive cutover: Debezium's quoted key, the relay's plain one.
	[[ ${T850_MUTANT:-} != key-mismatch ]] || relay_key=()
fi
it_diag "keys: $KEY"

# dbz_up DIR DB SLOT: a worker with one connector on DB; the slot is
# created by Debezium if missing. Waits until it runs.
dbz_up() {
	local d=$1 db=$2 slot=$3
	dbz_worker_conf "$d" "$KAFKA_BROKERS" "$REST"
	dbz_connector_conf "$d/connector.properties" "dbz-$db" "$PGPORT" "$db" "$slot" dbz_pub public.outbox \
		"${dbz_key[@]}" value.converter=org.apache.kafka.connect.storage.StringConverter \
		transforms.outbox.table.field.event.key=aggregate_id \
		transforms.outbox.route.by.field=aggregate_type
	dbz_launch "$d" 512m connector.properties
	dbz_wait_running "$REST" "dbz-$db" 90
}

# wait_lsn DB SLOT LSN SECS: until SLOT's confirmed_flush_lsn >= LSN;
# prints how long it took (ms).
wait_lsn() {
	local db=$1 slot=$2 lsn=$3 secs=$4 t0 cur
	t0=$(load_ms)
	while (($(load_ms) - t0 < secs * 1000)); do
		cur=$(it_slot_confirmed "$db" "$slot")
		if [[ -n $cur ]] && lsn_ge "$cur" "$lsn"; then
			echo $(($(load_ms) - t0))
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# wait_advance DB SLOT SECS: until SLOT confirms past where it is now (the
# system on it streams and confirms under the load).
wait_advance() {
	local db=$1 slot=$2 secs=$3 from
	from=$(it_slot_confirmed "$db" "$slot")
	wait_lsn "$db" "$slot" "$(lsn_add "$from" 1)" "$secs" >/dev/null
}
# slot_gone DB SLOT: drops SLOT once no walsender holds it (bounded).
slot_gone() {
	local i
	for ((i = 0; i < 50; i++)); do
		[[ $(it_sql "$1" "SELECT active FROM pg_replication_slots WHERE slot_name = '$2'") == t ]] || break
		sleep 0.2
	done
	it_sql "$1" "SELECT pg_drop_replication_slot('$2') FROM pg_replication_slots WHERE slot_name = '$2'" >/dev/null
}
lsn_add() { # LSN N: LSN + N bytes
	python3 -c 'import sys; h, l = sys.argv[1].split("/"); v = (int(h, 16) << 32 | int(l, 16)) + int(sys.argv[2]); print("%X/%X" % (v >> 32, v & 0xffffffff))' "$1" "$2"
}

# figures NAME: the check of the switch and its figures from the records.
figures() {
	local name=$1 desc
	load_expected && load_ids || return 1
	load_checked "$topic" 120 --ids "$IT_TEST_DIR/ids" --topic "$topic" --lsn-optional "${check_key[@]}"
	desc="$name: every committed event in Kafka at least once, per-key order, one partition per key, ids of the outbox rows"
	if ((LOAD_RC == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "exit $LOAD_RC: $(head -n 30 "$LOAD_OUT.check")"
	fi
	it_diag "$LOAD_SUMMARY"
	python3 - "$LOAD_OUT" "$name" >"$IT_TEST_DIR/figures-$name" <<-'PY' || true
	import json, sys
	src, name = sys.argv[1:]
	by = {"debezium": {}, "relay": {}}
	parts = {}
	for line in open(src, encoding="utf-8"):
	    r = json.loads(line)
	    h = r.get("headers") or []
	    names = h[0::2]
	    eid = h[names.index("id") * 2 + 1] if "id" in names else None
	    who = "relay" if "pg_lsn" in names else "debezium"
	    by[who][eid] = by[who].get(eid, 0) + 1
	    # By the payload's aggregate, not the key: a key format that differs
	    # between the two sides splits an aggregate over two keys.
	    try:
	        agg = json.loads(r.get("payload") or "")["agg"]
	    except (ValueError, TypeError, KeyError):
	        agg = None
	    parts.setdefault(agg, set()).add(r["partition"])
	both = set(by["debezium"]) & set(by["relay"])
	print(f"figures {name}: published by debezium={sum(by['debezium'].values())} "
	      f"relay={sum(by['relay'].values())}; events published by both "
	      f"(duplicates at the switch)={len(both)}; duplicates within one "
	      f"side={sum(c - 1 for d in by.values() for c in d.values())}; "
	      f"aggregates={len(parts)} on one partition each="
	      f"{sum(1 for p in parts.values() if len(p) == 1)}")
	PY
	it_diag "$(cat "$IT_TEST_DIR/figures-$name")"
	# The checker groups by key; this is by aggregate, whatever the key
	# bytes: the partition an aggregate's consumers read must not change.
	it_check "$name: every aggregate on one partition across both writers" \
		grep -Eq 'aggregates=([0-9]+) on one partition each=\1$' "$IT_TEST_DIR/figures-$name"
}

# ---------------------------------------------------------------- A
t_a=$SECONDS
it_scenario t850_a
it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null # the relay's comes later
it_sql "$db" "CREATE PUBLICATION dbz_pub FOR TABLE public.outbox" >/dev/null
load_init "$db" "$type" "$AGGS"
it_write_config "$conf" "$db" status.interval.ms=500 "${relay_key[@]}"
dbz=$IT_TEST_DIR/dbz-a
# Not through it_check: that runs its command in a subshell, and DBZ_PID
# (the worker to stop later) must be set here.
if dbz_up "$dbz" "$db" dbz_a; then
	ok "A: Debezium runs (creates slot dbz_a)"
else
	not_ok "A: Debezium runs (creates slot dbz_a)" "$(tail -n 30 "$dbz/connect.log")"
fi
load_start "$RATE" 3
it_check "A: Debezium streams under load (its slot confirms)" wait_advance "$db" dbz_a 60
sleep "$RUN_SECS"
# Debezium falls behind (frozen for LAG_SECS, as a slow broker or a GC
# pause would make it): the transactions committed meanwhile are before C
# and only Debezium can publish them. The wait below is what makes it.
kill -STOP "$DBZ_PID"
sleep "$LAG_SECS"
rc=0
"$RELAY_BIN" --config "$conf" --create-slot >"$IT_TEST_DIR/create-a.log" 2>&1 || rc=$?
it_check "A: outbox-relay --create-slot under load" test "$rc" -eq 0
((rc == 0)) || it_diag "$(cat "$IT_TEST_DIR/create-a.log")"
C=$(it_slot_confirmed "$db" "$db")
it_diag "A: relay slot consistent point C=$C, Debezium's slot at $(it_slot_confirmed "$db" dbz_a)"
if [[ ${T850_MUTANT:-} == no-wait ]]; then
	it_diag "A: MUTANT: Debezium killed, still behind C, without the wait"
	kill -KILL "$DBZ_PID"
else
	kill -CONT "$DBZ_PID"
	if ms=$(wait_lsn "$db" dbz_a "$C" 60); then
		ok "A: Debezium's slot confirmed C ($C) after $ms ms"
	else
		not_ok "A: Debezium's slot confirmed C ($C)" "at $(it_slot_confirmed "$db" dbz_a)"
	fi
fi
dbz_halt
it_diag "A: Debezium stopped; its slot at $(it_slot_confirmed "$db" dbz_a)"
it_start_relay "$conf" "$log"
it_check "A: relay holds its slot" it_wait_slot_active "$db" "$db" 30
sleep "$RUN_SECS"
load_stop_checked
figures A
it_stop_checked "A: relay exits 0 on SIGTERM"
slot_gone "$db" dbz_a
it_diag "A took $((SECONDS - t_a)) s"

# ---------------------------------------------------------------- B, C
# phase_back NAME HOW: relay -> Debezium. HOW=auto: Debezium creates its
# slot while the relay runs (both publish until the relay has confirmed
# past S). HOW=hand: Debezium's slot made by hand at S while the relay
# runs; the relay stopped once past S; Debezium started LAG_SECS later on
# that slot, with no stored offset (so it must start from the slot's
# position, not from where the WAL is when it starts).
phase_back() {
	local name=$1 how=$2 t0=$SECONDS lname slot S ms
	lname=$(tr 'A-Z' 'a-z' <<<"$name")
	slot=dbz_$lname
	it_scenario "t850_$lname"
	it_sql "$db" "CREATE PUBLICATION dbz_pub FOR TABLE public.outbox" >/dev/null
	load_init "$db" "$type" "$AGGS"
	it_write_config "$conf" "$db" status.interval.ms=500 "${relay_key[@]}"
	it_start_relay "$conf" "$log"
	it_check "$name: relay holds its slot" it_wait_slot_active "$db" "$db" 30
	load_start "$RATE" 3
	it_check "$name: relay streams under load (its slot confirms)" wait_advance "$db" "$db" 30
	sleep "$RUN_SECS"
	dbz=$IT_TEST_DIR/dbz-$lname
	if [[ $how == hand ]]; then
		S=$(it_sql "$db" "SELECT lsn FROM pg_create_logical_replication_slot('$slot', 'pgoutput')")
		it_diag "$name: Debezium's slot made by hand at S=$S"
	else
		if dbz_up "$dbz" "$db" "$slot"; then
			ok "$name: Debezium runs (creates slot $slot)"
		else
			not_ok "$name: Debezium runs (creates slot $slot)" "$(tail -n 30 "$dbz/connect.log")"
		fi
		S=$(it_slot_confirmed "$db" "$slot")
		it_diag "$name: Debezium's slot start S=$S (read once it runs: at or after where it streams from)"
	fi
	if ms=$(wait_lsn "$db" "$db" "$S" 60); then
		ok "$name: the relay's slot confirmed S ($S) after $ms ms"
	else
		not_ok "$name: the relay's slot confirmed S ($S)" "at $(it_slot_confirmed "$db" "$db")"
	fi
	it_stop_checked "$name: relay exits 0 on SIGTERM"
	if [[ $how == hand ]]; then
		sleep "$LAG_SECS"
		if dbz_up "$dbz" "$db" "$slot"; then
			ok "$name: Debezium runs on the slot made by hand"
		else
			not_ok "$name: Debezium runs on the slot made by hand" "$(tail -n 30 "$dbz/connect.log")"
		fi
	fi
	sleep "$RUN_SECS"
	load_stop_checked
	figures "$name"
	dbz_halt
	slot_gone "$db" "$slot"
	it_diag "$name took $((SECONDS - t0)) s"
}

phase_back B auto
phase_back C hand

it_summary
