#!/usr/bin/env bash
# t320_slot_lost -- PostgreSQL invalidates the relay's slot while the relay
# streams from it. A throwaway cluster of this test only, so that no other
# test's slot is touched (port T320_PGPORT, default PGPORT + 5 so that runs
# on other ports do not collide; initdb --wal-segsize=1,
# max_slot_wal_keep_size=4MB, max_wal_size=32MB, min_wal_size=2MB,
# wal_keep_size=0, checkpoint_timeout=30s). The relay publishes one event,
# then the shared broker is SIGKILLed (restarted afterwards and in a
# cleanup hook) and one more event is written: it stays in flight, so the
# relay cannot confirm past it and restart_lsn stays put. WAL is then
# generated (CREATE/DROP TABLE, pg_switch_wal(), CHECKPOINT: PostgreSQL's
# 019_replslot_limit.pl technique; a look before each checkpoint; at most
# 40 rounds) until pg_replication_slots.wal_status is 'lost' (PostgreSQL
# terminates the walsender of an active slot it invalidates). Asserts:
#  - the slot became lost;
#  - the relay exits by itself with 69 (EX_UNAVAILABLE) within 60 s;
#  - its log has the runbook message: the slot is lost / invalidated,
#    "runbook", and that it will not be recreated;
#  - the slot still exists, wal_status lost, and it is the only slot of
#    the cluster (nothing was recreated);
#  - a second start (broker back) refuses at once (< 15 s) with exit 69
#    and the same runbook message, and still creates no slot.
# Reported, not required: the wal_status values seen on the way (by SQL
# and on the relay's /slot), e.g. reserved -> unreserved -> lost.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

run=$(date +%s)
lport=${T320_PGPORT:-$((PGPORT + 5))}
ldir=$IT_TEST_DIR/cluster
lpg=$ldir/pg
ldb=t320_slot_lost
slot=t320_slot_lost
type=t320_$run
topic=outbox.event.$type
conf=$IT_TEST_DIR/relay.conf
log=$IT_TEST_DIR/relay.log
log2=$IT_TEST_DIR/relay2.log
trace=$IT_TEST_DIR/wal_status.trace

lsql() { psql_q "$lport" "$ldb" "$1"; }

env_on_cleanup it_restore_kafka

# ------------------------------------------------------------- the cluster
# pg_start has no knob for initdb options: initdb here exactly as pg_start
# does (plus --wal-segsize=1), write the harness's settings and ours, then
# let pg_start launch it (it skips initdb for an existing data dir) and
# register it for cleanup.
if port_in_use 127.0.0.1 "$lport"; then
	not_ok "port $lport free for this test's own cluster (set T320_PGPORT)"
	it_summary
fi
mkdir -p "$lpg/sock"
[[ $EUID -ne 0 ]] || chown -R postgres:postgres "$lpg"
if _pg_run "$PG_BIN/initdb" -D "$lpg/data" -U postgres -A trust -E UTF8 --locale=C -N \
	--wal-segsize=1 >"$lpg/initdb.log" 2>&1; then
	ok "initdb --wal-segsize=1"
else
	not_ok "initdb --wal-segsize=1" "$(tail -n 20 "$lpg/initdb.log")"
	it_summary
fi
_pg_write_config "$lpg" "$lport"
cat >>"$lpg/data/postgresql.conf" <<-'EOF'
	# ---- t320_slot_lost: a slot that falls 4 MB behind is invalidated ----
	max_slot_wal_keep_size = 4MB
	max_wal_size = 32MB
	min_wal_size = 2MB
	wal_keep_size = 0
	checkpoint_timeout = 30s
EOF
if pg_start "$ldir" "$lport" "$ldb"; then
	ok "own cluster on 127.0.0.1:$lport"
else
	not_ok "own cluster on 127.0.0.1:$lport"
	it_summary
fi
settings=$(lsql "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ' ' ORDER BY name)
	FROM pg_settings WHERE name IN ('wal_segment_size', 'max_slot_wal_keep_size',
	'max_wal_size', 'wal_keep_size', 'wal_level')")
it_diag "settings: $settings"
it_check "wal_segment_size 1MB and max_slot_wal_keep_size 4MB in effect" \
	test "$(lsql "SELECT current_setting('wal_segment_size') || ' ' || current_setting('max_slot_wal_keep_size')")" = "1MB 4MB"
psql_f "$lport" "$ldb" "$IT_ROOT/sql/outbox.sql"
[[ $RELAY_PLUGIN == wal2json ]] || lsql "CREATE PUBLICATION $IT_PUBLICATION
	FOR TABLE public.outbox WITH (publish = 'insert')" >/dev/null
lsql "SELECT pg_create_logical_replication_slot('$slot', '$RELAY_PLUGIN')" >/dev/null

# ------------------------------------------------------------- the relay
it_write_config "$conf" "$ldb" "$slot" \
	"pg.conninfo=host=127.0.0.1 port=$lport dbname=$ldb user=postgres" \
	http.listen=127.0.0.1:0 watchdog.interval.ms=500 status.interval.ms=500 \
	shutdown.timeout.ms=3000 kafka.reconnect.backoff.max.ms=1000
it_start_relay "$conf" "$log"
relay_pid=$IT_RELAY_PID
active=
for ((i = 0; i < 150; i++)); do
	[[ $(lsql "SELECT active FROM pg_replication_slots WHERE slot_name = '$slot'") == t ]] &&
		active=1 && break
	sleep 0.2
done
it_check "relay holds the slot" test -n "$active"
port=$(it_health_port "$log") || port=
base=http://127.0.0.1:${port:-0}

insert_event() {
	IT_EVENTS_PORT=$lport it_event "$ldb" "$type" "$1" Lost '{"n": 1}'
}
insert_event agg-1
if it_consume_wait "$topic" "$IT_TEST_DIR/out1.json" 1 30; then
	ok "first event published"
else
	not_ok "first event published" "$(it_show_log "$log")"
fi

# -- Kafka down, one event in flight: the relay cannot confirm past it
kafka_stop_hard "$IT_DIR"
insert_event agg-2
inflight=
for ((i = 0; i < 50; i++)); do
	inflight=$(curl -s -m 5 "$base/metrics" 2>/dev/null |
		awk '$1 == "outbox_relay_inflight_events" {print $2}') || true
	[[ ${inflight:-0} -ge 1 ]] && break
	sleep 0.2
done
it_check "second event in flight while Kafka is down (inflight_events $inflight)" \
	test "${inflight:-0}" -ge 1
confirmed0=$(lsql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")

# ------------------------------------------------------------- WAL until lost
: >"$trace"
status="" t_lost="" relay_exited_at=""
t0=$SECONDS
# sample WHEN: one line of the trace, SQL's view and the relay's /slot.
sample() {
	row=$(lsql "SELECT coalesce(wal_status, '-') || ' ' || coalesce(safe_wal_size::text, '-')
		|| ' ' || coalesce(active_pid::text, '-') || ' '
		|| coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint::text, '-')
		FROM pg_replication_slots WHERE slot_name = '$slot'" 2>/dev/null || echo "? ? ? ?")
	status=${row%% *}
	relay_view=$(curl -s -m 2 "$base/slot" 2>/dev/null | python3 -c \
		'import json,sys; d=json.load(sys.stdin); print("%s/%s" % (d["state"], (d["server"] or {}).get("wal_status")))' \
		2>/dev/null || echo "-")
	echo "round $round $1: sql wal_status safe_wal_size active_pid retained = $row; relay /slot state/wal_status = $relay_view" >>"$trace"
}
# Each round: a new segment, a look (the watchdog samples every 500 ms,
# so it can see unreserved before the checkpoint removes the WAL), then
# the checkpoint that invalidates the slot once it is too far behind.
for ((round = 1; round <= 40; round++)); do
	psql_f "$lport" "$ldb" - >/dev/null 2>>"$IT_TEST_DIR/wal.err" <<-'EOF' || true
		CREATE TABLE t320_w ();
		DROP TABLE t320_w;
		SELECT pg_switch_wal();
	EOF
	sleep 0.7
	sample switched
	[[ $status != lost ]] || break
	lsql "CHECKPOINT" 2>>"$IT_TEST_DIR/wal.err" || true
	sample checkpoint
	[[ $status != lost ]] || break
	if [[ -z $relay_exited_at ]] && ! it_relay_alive "$relay_pid"; then
		relay_exited_at=$round
	fi
done
[[ $status != lost ]] || t_lost=$SECONDS
it_diag "$(cat "$trace")"
if [[ $status == lost ]]; then
	ok "slot invalidated (wal_status lost) after $round rounds, $((SECONDS - t0)) s"
else
	not_ok "slot invalidated (wal_status lost) within 40 rounds" \
		"last wal_status '$status'; $(tail -n 5 "$IT_TEST_DIR/wal.err" 2>/dev/null)"
fi
if [[ -n $relay_exited_at ]]; then
	it_diag "note: the relay was gone before the slot was lost (round $relay_exited_at)"
fi
seen=$(sed -n 's/.*= \([a-z-]*\) .*/\1/p' "$trace" | uniq | tr '\n' ' ')
it_diag "wal_status seen by SQL: $seen"
it_diag "wal_status seen on the relay's /slot: $(sed -n 's/.*state\/wal_status = //p' "$trace" | uniq | tr '\n' ' ')"
it_diag "confirmed_flush_lsn when Kafka went down: $confirmed0"
it_diag "postgres: $(grep -E 'invalidating|terminating process|can no longer' "$lpg/postgres.log" | cut -c1-240 | head -n 4)"

# ------------------------------------------------------------- the relay stops
rc=
for ((i = 0; i < 300; i++)); do
	if ! it_relay_alive "$relay_pid"; then
		rc=0
		wait "$relay_pid" 2>/dev/null || rc=$?
		break
	fi
	sleep 0.2
done
if [[ -n $rc ]]; then
	secs=$((SECONDS - ${t_lost:-$SECONDS}))
	it_check "relay exits 69 by itself after the slot was lost (exit $rc, ${secs} s after)" \
		test "$rc" -eq 69
else
	not_ok "relay exits by itself within 60 s after the slot was lost" "$(it_show_log "$log" 20)"
	rc=0
	it_stop_relay "$relay_pid" || rc=$?
	it_diag "stopped with SIGTERM: exit $rc"
fi
it_check "relay log: runbook message (lost / can no longer get changes, not recreated)" \
	bash -c "grep -E 'runbook' '$log' | grep -E 'is lost|can no longer get changes|is invalidated' >/dev/null"
it_check "relay log: the slot will not be recreated" grep -qE 'will not recreate' "$log"
it_diag "relay: $(grep -E 'ERROR|lost|runbook|exit' "$log" | cut -c1-300 | tail -n 6)"

it_check "slot still there with wal_status lost" \
	test "$(lsql "SELECT wal_status FROM pg_replication_slots WHERE slot_name = '$slot'")" = lost
it_check "no other slot created (slots: $(lsql "SELECT string_agg(slot_name, ',') FROM pg_replication_slots"))" \
	test "$(lsql "SELECT count(*) FROM pg_replication_slots")" = 1

# ------------------------------------------------------------- a second start
if kafka_restart "$IT_DIR"; then
	ok "kafka restarted"
else
	not_ok "kafka restarted"
fi
t1=$SECONDS
rc2=0
timeout -k 5 30 "$RELAY_BIN" --config "$conf" </dev/null >"$log2" 2>&1 || rc2=$?
t2=$((SECONDS - t1))
it_check "second start refuses with exit 69 (exit $rc2 after ${t2} s)" test "$rc2" -eq 69
it_check "second start refuses at once (${t2} s < 15 s)" test "$t2" -lt 15
it_check "second start: runbook message names the invalidated slot" \
	bash -c "grep -q 'runbook' '$log2' && grep -qE '\"$slot\" (is invalidated|is lost)' '$log2'"
it_diag "second start: $(grep -E 'ERROR' "$log2" | cut -c1-300 | head -n 2)"
it_check "still one slot, still lost" \
	test "$(lsql "SELECT count(*) || ' ' || min(wal_status) FROM pg_replication_slots")" = "1 lost"

it_summary
