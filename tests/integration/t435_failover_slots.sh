#!/usr/bin/env bash
# t435_failover_slots -- the slot columns of each server version, failover
# slots (17) and the idle timeout (18), through --create-slot, --check,
# --slot-status, /slot, /metrics and the relay itself.
#
#   (a) every version: --slot-status --json shows the columns the server
#       has (failover, synced: 17; conflicting: 16; inactive_since while
#       idle: 17; server_version_num) and null for the ones it lacks;
#   (b) --create-slot: slot.failover = on before 17 exits 78 and creates
#       nothing; the default makes a failover slot on 17 and later
#       (pg_replication_slots.failover, --json "failover"), an ordinary
#       one before; a relay streams from it and its /slot and /metrics say
#       failover (17), inactive_since null while it streams;
#   (c) --check: before 17, failover_slot warns that there are none; on
#       17+ it is ok for the failover slot and warns for a slot created
#       with slot.failover = off (fails with on); synchronized_standby_slots
#       naming no physical slot fails (69), naming an idle physical slot
#       warns;
#   (d) 17+: a physical standby (an online base backup of the run's server,
#       primary_slot_name, sync_replication_slots = on, port PGPORT + 37):
#       --check warns while synchronized_standby_slots does not name its
#       slot (ghosts after a failover), is ok once it does; the standby
#       gets a synced copy of the slot, which --slot-status on the standby
#       shows (failover and synced true); the standby stopped, --check
#       warns that the relay waits for it; a relay with
#       slot.standby.conninfo pointing at the standby shows the copy in
#       /slot ("standby": synced true, lag_bytes small) and /metrics
#       (slot_standby_up, _synced, _lag_bytes); the standby stopped, it
#       shows it unreachable with a warn reason, and still streams and is
#       ready;
#   (f) before 17: slot.standby.conninfo pointing at a server without
#       slot synchronization (the run's own) reads it and warns so; the
#       relay streams and is ready;
#   (e) 18: idle_replication_slot_timeout set: --check warns; --slot-status
#       shows the time left (idle_timeout_eta_seconds); set to 1 s and a
#       CHECKPOINT, the slot is invalidated (idle_timeout): --slot-status
#       exits 3 naming it, --check fails the slot item naming it, and the
#       relay exits 69 at start with the runbook message.
# (e) sets idle_replication_slot_timeout on the run's server for a moment:
# every slot idle then is invalidated (the tests before have ended; the
# setting is reset at once and in a cleanup hook).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

IT_RUN_TIMEOUT=${RUN_TIMEOUT:-120}

# py_json DESC FILE EXPR...: each Python expression over d (FILE's JSON)
# must be true.
py_json() {
	local desc=$1 file=$2 out rc=0
	shift 2
	out=$(python3 - "$file" "$@" 2>&1 <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	for e in sys.argv[2:]:
	    assert eval(e), "%s is false; the document: %s" % (e, json.dumps(d)[:1500])
	PY
	) || rc=$?
	if ((rc == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "$out"
	fi
}

# wait_slot PORT FILE SECS EXPR...: /slot into FILE until every Python
# expression over d holds (or SECS pass); py_json then tells.
wait_slot() {
	local port=$1 file=$2 secs=$3 i
	shift 3
	for ((i = 0; i < secs * 2; i++)); do
		if curl -sf "http://127.0.0.1:$port/slot" >"$file" &&
			python3 - "$file" "$@" >/dev/null 2>&1 <<-'PY'
			import json, sys
			d = json.load(open(sys.argv[1]))
			sys.exit(0 if all(eval(e) for e in sys.argv[2:]) else 1)
			PY
		then
			return 0
		fi
		sleep 0.5
	done
	return 1
}

db=t435_failover
slot=t435_failover
slot2=t435_plain
sbslot=t435_standby
type=t435_$(date +%s)
topic=outbox.event.$type

it_drop_db "$db" >/dev/null
it_sql postgres "CREATE DATABASE $db" >/dev/null
it_sql_file "$db" "$IT_ROOT/sql/outbox.sql" >/dev/null
ver=$(it_sql "$db" "SHOW server_version_num")
major=$((ver / 10000))
it_diag "PostgreSQL $ver, slot.plugin = $RELAY_PLUGIN"
cfg=$IT_TEST_DIR/relay.conf
it_write_config "$cfg" "$db" "$slot" status.interval.ms=500 \
	shutdown.timeout.ms=5000 standby.retry.ms=500 watchdog.interval.ms=500

reset_settings() {
	local s
	for s in synchronized_standby_slots idle_replication_slot_timeout; do
		if it_pg_has_setting "$s"; then
			it_sql postgres "ALTER SYSTEM RESET $s" >/dev/null || true
		fi
	done
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null || true
}
env_on_cleanup reset_settings
drop_standby_slot() {
	it_sql postgres "SELECT pg_drop_replication_slot(slot_name) FROM
		pg_replication_slots WHERE slot_name = '$sbslot' AND NOT active" \
		>/dev/null 2>&1 || true
}
env_on_cleanup drop_standby_slot

# ---------------------------------------------------------------- (b)
it_run_relay b_on --config "$cfg" --create-slot --set slot.failover=on
if ((major < 17)); then
	it_expect_exit b_on 78 "(b) slot.failover = on on PostgreSQL $major"
	it_expect_in b_on err "(b) it says failover slots need 17" \
		"has no failover slots (17 and later)" "nothing was created"
	it_check "(b) and created no slot" test "$(it_sql "$db" "SELECT count(*)
		FROM pg_replication_slots WHERE slot_name = '$slot'")" = 0
	it_run_relay b_create --config "$cfg" --create-slot --json
	it_expect_exit b_create 0 "(b) --create-slot with slot.failover = auto"
	py_json "(b) --json: an ordinary slot before 17" "$IT_TEST_DIR/b_create.out" \
		'd["created"] is True' 'd["failover"] is False'
else
	it_expect_exit b_on 0 "(b) --create-slot with slot.failover = on"
	it_expect_in b_on out "(b) it says the slot is a failover slot" ", failover)"
	it_check "(b) pg_replication_slots.failover is true" test \
		"$(it_sql "$db" "SELECT failover FROM pg_replication_slots
			WHERE slot_name = '$slot'")" = t
	it_run_relay b_plain --config "$cfg" --create-slot --json --set slot.name=$slot2 \
		--set slot.failover=off
	it_expect_exit b_plain 0 "(b) --create-slot with slot.failover = off"
	py_json "(b) --json: failover false with off" "$IT_TEST_DIR/b_plain.out" \
		'd["failover"] is False'
	it_check "(b) and that slot has no FAILOVER" test \
		"$(it_sql "$db" "SELECT failover FROM pg_replication_slots
			WHERE slot_name = '$slot2'")" = f
fi

# ---------------------------------------------------------------- (a)
it_run_relay a_status --config "$cfg" --slot-status --json
it_expect_exit a_status 0 "(a) --slot-status on an idle slot"
case $major in
15) py_json "(a) 15: the columns it lacks are null" "$IT_TEST_DIR/a_status.out" \
	"d['server']['server_version_num'] == $ver" \
	'd["server"]["failover"] is None' 'd["server"]["synced"] is None' \
	'd["server"]["conflicting"] is None' 'd["server"]["inactive_since"] is None' \
	'd["server"]["invalidation_reason"] is None' \
	'd["server"]["idle_replication_slot_timeout_seconds"] is None' ;;
16) py_json "(a) 16: conflicting, and null for 17's columns" "$IT_TEST_DIR/a_status.out" \
	"d['server']['server_version_num'] == $ver" \
	'd["server"]["conflicting"] is False' 'd["server"]["failover"] is None' \
	'd["server"]["inactive_since"] is None' ;;
*) py_json "(a) $major: failover, synced, conflicting, inactive_since" \
	"$IT_TEST_DIR/a_status.out" "d['server']['server_version_num'] == $ver" \
	'd["server"]["failover"] is True' 'd["server"]["synced"] is False' \
	'd["server"]["conflicting"] is False' \
	'd["server"]["inactive_since"] is not None' \
	'd["server"]["invalidation_reason"] is None' \
	"(d['server']['idle_replication_slot_timeout_seconds'] == 0) == ($major >= 18)" ;;
esac
it_run_relay a_text --config "$cfg" --slot-status
if ((major >= 17)); then
	it_expect_in a_text out "(a) --slot-status text names failover and inactive_since" \
		"failover: yes, synced: no" "inactive since "
else
	it_check "(a) --slot-status text has no failover line before 17" \
		bash -c "! grep -q 'failover:' '$IT_TEST_DIR/a_text.out'"
fi

# The relay streams from the (failover) slot: /slot and /metrics.
log=$IT_TEST_DIR/relay.log
it_start_relay "$cfg" "$log"
if it_wait_slot_active "$db" "$slot" 30; then
	ok "(b) the relay streams from the slot"
else
	not_ok "(b) the relay streams from the slot" "$(it_show_log "$log")"
fi
id=$(cat /proc/sys/kernel/random/uuid)
it_sql "$db" "$IT_INS ('$id', '$type', 'a1', 'created', '{\"n\": 1}')" >/dev/null
if it_consume_wait "$topic" "$IT_TEST_DIR/b_events.json" 1 60; then
	ok "(b) an event published through the slot"
else
	not_ok "(b) an event published through the slot" "$(it_show_log "$log")"
fi
port=$(it_health_port "$log") || port=
sleep 1.5 # a watchdog sample while active
if [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/slot" >"$IT_TEST_DIR/slot.json" &&
	curl -sf "http://127.0.0.1:$port/metrics" >"$IT_TEST_DIR/metrics.txt"; then
	if ((major >= 17)); then
		py_json "(b) /slot: failover true, inactive_since null while streaming" \
			"$IT_TEST_DIR/slot.json" 'd["server"]["failover"] is True' \
			'd["server"]["inactive_since"] is None' 'd["server"]["active"] is True'
		it_check "(b) /metrics: slot_failover 1" grep -qx \
			'outbox_relay_slot_failover 1' "$IT_TEST_DIR/metrics.txt"
		it_check "(b) /metrics: no inactive_since sample while active" \
			bash -c "! grep -q '^outbox_relay_slot_inactive_since_timestamp_seconds ' \
				'$IT_TEST_DIR/metrics.txt'"
	else
		py_json "(b) /slot: failover null before 17" "$IT_TEST_DIR/slot.json" \
			'd["server"]["failover"] is None' 'd["server"]["active"] is True'
		it_check "(b) /metrics: no slot_failover sample before 17" \
			bash -c "! grep -q '^outbox_relay_slot_failover ' '$IT_TEST_DIR/metrics.txt'"
	fi
	py_json "(b) /slot: standby null without slot.standby.conninfo" \
		"$IT_TEST_DIR/slot.json" 'd["standby"] is None'
	it_check "(b) /metrics: no slot_standby_up sample without it" \
		bash -c "! grep -q '^outbox_relay_slot_standby_up ' '$IT_TEST_DIR/metrics.txt'"
	it_check "(b) /metrics: slot_invalidation_reason wal_removed 0" grep -qx \
		'outbox_relay_slot_invalidation_reason{reason="wal_removed"} 0' \
		"$IT_TEST_DIR/metrics.txt"
else
	not_ok "(b) /slot and /metrics answered" "$(it_show_log "$log")"
fi
rc=0
it_stop_relay || rc=$?
it_check "(b) relay exits 0 on SIGTERM (exit $rc)" test "$rc" -eq 0

# ---------------------------------------------------------------- (f)
if ((major < 17)); then
	flog=$IT_TEST_DIR/relay_f.log
	it_start_relay "$cfg" "$flog" --set "slot.standby.conninfo=$(it_conninfo "$db")"
	fport=$(it_health_port "$flog") || fport=
	if [[ -n $fport ]] && wait_slot "$fport" "$IT_TEST_DIR/f_slot.json" 20 \
		'd["standby"]["reachable"]' 'd["relay"]["state"] == "streaming"'; then
		ok "(f) the relay reads slot.standby.conninfo's server and streams"
	else
		not_ok "(f) the relay reads slot.standby.conninfo's server and streams" \
			"$(it_show_log "$flog")"
	fi
	py_json "(f) /slot: standby read, synced null, a warn reason" \
		"$IT_TEST_DIR/f_slot.json" 'd["standby"]["reachable"] is True' \
		"d['standby']['server_version_num'] == $ver" \
		'd["standby"]["synced"] is None' 'd["standby"]["slot_exists"] is True' \
		'd["standby"]["in_recovery"] is False' 'd["state"] == "warn"' \
		"any(r.startswith('standby: PostgreSQL $major synchronizes no slots (17 and later)') for r in d['reasons'])"
	it_check "(f) /readyz 200 with the standby warning" \
		curl -sf "http://127.0.0.1:$fport/readyz"
	curl -sf "http://127.0.0.1:$fport/metrics" >"$IT_TEST_DIR/f_metrics.txt" || true
	it_check "(f) /metrics: slot_standby_up 1" grep -qx \
		'outbox_relay_slot_standby_up 1' "$IT_TEST_DIR/f_metrics.txt"
	it_check "(f) /metrics: no slot_standby_synced sample before 17" \
		bash -c "! grep -q '^outbox_relay_slot_standby_synced ' '$IT_TEST_DIR/f_metrics.txt'"
	rc=0
	it_stop_relay || rc=$?
	it_check "(f) relay exits 0 on SIGTERM (exit $rc)" test "$rc" -eq 0
fi

# ---------------------------------------------------------------- (c)
it_run_relay c_check --config "$cfg" --check
it_expect_exit c_check 0 "(c) --check"
if ((major < 17)); then
	it_expect_in c_check out "(c) failover slots are not available before 17" \
		"warn  failover_slot: not available on PostgreSQL $major" \
		'runbook, section "failover"'
	it_check "(c) no synchronized_standby_slots item before 17" \
		bash -c "! grep -q synchronized_standby_slots '$IT_TEST_DIR/c_check.out'"
	it_run_relay c_on --config "$cfg" --check --set slot.failover=on
	it_expect_exit c_on 78 "(c) --check with slot.failover = on before 17"
else
	it_expect_in c_check out "(c) the failover slot is ok" \
		"ok    failover_slot: \"$slot\" is a failover slot" \
		"ok    synchronized_standby_slots: "
	it_run_relay c_plain --config "$cfg" --check --set slot.name=$slot2
	it_expect_exit c_plain 0 "(c) --check on a slot without FAILOVER (auto)"
	it_expect_in c_plain out "(c) it warns, with the ALTER_REPLICATION_SLOT fix" \
		"warn  failover_slot: \"$slot2\" is not a failover slot" \
		"ALTER_REPLICATION_SLOT \"$slot2\" (FAILOVER true)"
	it_run_relay c_plain_on --config "$cfg" --check --set slot.name=$slot2 --set slot.failover=on
	it_expect_exit c_plain_on 69 "(c) ... and fails with slot.failover = on"
	it_sql "$db" "SELECT pg_drop_replication_slot('$slot2')" >/dev/null
	it_sql postgres "ALTER SYSTEM SET synchronized_standby_slots = 't435_nosuch'" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	it_run_relay c_nosuch --config "$cfg" --check
	it_expect_exit c_nosuch 69 "(c) synchronized_standby_slots naming no slot"
	it_expect_in c_nosuch out "(c) it says the walsender waits" \
		"fail  synchronized_standby_slots: 't435_nosuch' names t435_nosuch, which is no physical replication slot here"
	it_sql postgres "SELECT pg_create_physical_replication_slot('$sbslot', true)" >/dev/null
	it_sql postgres "ALTER SYSTEM SET synchronized_standby_slots = '$sbslot'" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	it_run_relay c_idle --config "$cfg" --check
	it_expect_exit c_idle 0 "(c) synchronized_standby_slots naming an idle physical slot"
	it_expect_in c_idle out "(c) it warns that the relay waits" \
		"warn  synchronized_standby_slots: '$sbslot': no standby streams from $sbslot now"
	it_sql postgres "ALTER SYSTEM RESET synchronized_standby_slots" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
fi

# ---------------------------------------------------------------- (d)
sport=$((PGPORT + 37))
sdir=$IT_TEST_DIR/standby
stop_standby() {
	if [[ -f $sdir/data/postmaster.pid ]]; then
		_pg_run "$PG_BIN/pg_ctl" -D "$sdir/data" -m immediate -w -t 30 stop \
			>/dev/null 2>&1 || true
	fi
}
if ((major < 17)); then
	skip "(d) a standby's synced failover slot" "PostgreSQL $major has no failover slots"
elif port_in_use 127.0.0.1 "$sport"; then
	not_ok "(d) port $sport free for the standby"
else
	env_on_cleanup stop_standby
	# An online base backup: pg_backup_start, a copy, pg_backup_stop's
	# label (the client tools here are 15's, too old for pg_basebackup).
	mkdir -p "$sdir/data" "$sdir/sock"
	chown -R postgres:postgres "$sdir" 2>/dev/null || true
	PGCONNECT_TIMEOUT=10 "$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres \
		-d postgres -X -q -At -v ON_ERROR_STOP=1 \
		-c "SELECT pg_backup_start('t435', true)" \
		-c "\\! cp -a '$IT_DIR/pg/data/.' '$sdir/data/' 2>/dev/null; true" \
		-c "\\o $sdir/backup_label" \
		-c "SELECT labelfile FROM pg_backup_stop(false)" >/dev/null
	cp "$sdir/backup_label" "$sdir/data/backup_label"
	rm -rf "$sdir/data/postmaster.pid" "$sdir/data/postmaster.opts" \
		"$sdir/data/pg_replslot/"* "$sdir/data/standby.signal"
	find "$sdir/data/pg_wal" -maxdepth 1 -type f -delete
	touch "$sdir/data/standby.signal"
	cat >>"$sdir/data/postgresql.auto.conf" <<-EOF
	port = $sport
	unix_socket_directories = '$sdir/sock'
	primary_conninfo = 'host=127.0.0.1 port=$PGPORT user=postgres dbname=$db'
	primary_slot_name = '$sbslot'
	hot_standby_feedback = on
	sync_replication_slots = on
	EOF
	chown -R postgres:postgres "$sdir"
	if _pg_run "$PG_BIN/pg_ctl" -D "$sdir/data" -l "$sdir/postgres.log" -w -t 60 \
		start >/dev/null 2>&1; then
		ok "(d) a standby started on port $sport"
	else
		not_ok "(d) a standby started on port $sport" "$(tail -n 20 "$sdir/postgres.log")"
	fi
	for ((i = 0; i < 150; i++)); do
		[[ $(it_sql postgres "SELECT active FROM pg_replication_slots
			WHERE slot_name = '$sbslot'") == t ]] && break
		sleep 0.2
	done
	it_run_relay d_unnamed --config "$cfg" --check
	it_expect_exit d_unnamed 0 "(d) --check with a standby not named"
	it_expect_in d_unnamed out "(d) it warns of ghosts after a failover" \
		"warn  synchronized_standby_slots: empty, but a standby streams from physical slot $sbslot" \
		"Kafka holds events the new primary never committed (ghosts)"
	it_sql postgres "ALTER SYSTEM SET synchronized_standby_slots = '$sbslot'" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	it_run_relay d_named --config "$cfg" --check
	it_expect_exit d_named 0 "(d) --check with the standby named"
	it_expect_in d_named out "(d) synchronized_standby_slots is ok" \
		"ok    synchronized_standby_slots: '$sbslot': every standby streaming"
	# The slot moves (the relay confirms an event), so that the standby's
	# copy can be made at a position the standby has.
	dlog=$IT_TEST_DIR/relay_d.log
	it_start_relay "$cfg" "$dlog" --set \
		"slot.standby.conninfo=host=127.0.0.1 port=$sport user=postgres dbname=$db"
	log=$dlog
	dport=$(it_health_port "$dlog") || dport=0
	id=$(cat /proc/sys/kernel/random/uuid)
	it_sql "$db" "$IT_INS ('$id', '$type', 'a2', 'created', '{\"n\": 2}')" >/dev/null
	if it_consume_wait "$topic" "$IT_TEST_DIR/d_events.json" 2 60; then
		ok "(d) the relay publishes with synchronized_standby_slots set"
	else
		not_ok "(d) the relay publishes with synchronized_standby_slots set" \
			"$(it_show_log "$log")"
	fi
	# A checkpoint logs the running transactions, past which the relay's
	# walsender moves restart_lsn: the copy waits for the primary's slot
	# to be past what the standby has.
	synced=
	for ((i = 0; i < 60; i++)); do
		synced=$(psql_q "$sport" postgres "SELECT synced FROM pg_replication_slots
			WHERE slot_name = '$slot' AND confirmed_flush_lsn IS NOT NULL" 2>/dev/null) || synced=
		[[ $synced == t ]] && break
		it_sql "$db" "SELECT pg_logical_emit_message(false, 't435', 'x')" >/dev/null
		it_sql postgres "CHECKPOINT" >/dev/null
		sleep 1
	done
	it_check "(d) the standby has a synced copy of the slot" test "$synced" = t
	# More events: the copy follows (the slot sync worker's period is up
	# to 30 s), lag_bytes small.
	for n in 3 4 5; do
		id=$(cat /proc/sys/kernel/random/uuid)
		it_sql "$db" "$IT_INS ('$id', '$type', 'a$n', 'created', '{\"n\": $n}')" >/dev/null
	done
	it_consume_wait "$topic" "$IT_TEST_DIR/d_events2.json" 5 60 || true
	if wait_slot "$dport" "$IT_TEST_DIR/d_slot.json" 60 \
		'd["standby"]["synced"] is True' \
		'd["standby"]["lag_bytes"] is not None and d["standby"]["lag_bytes"] < 1048576'; then
		ok "(d) /slot: the standby's copy synced and current"
	else
		not_ok "(d) /slot: the standby's copy synced and current" \
			"$(head -c 3000 "$IT_TEST_DIR/d_slot.json")"
	fi
	py_json "(d) /slot standby: reachable, synced, failover, lag < 1 MiB, no reason" \
		"$IT_TEST_DIR/d_slot.json" 'd["standby"]["reachable"] is True' \
		'd["standby"]["synced"] is True' 'd["standby"]["failover"] is True' \
		'd["standby"]["in_recovery"] is True' \
		'd["standby"]["confirmed_flush_lsn"] is not None' \
		'0 <= d["standby"]["lag_bytes"] < 1048576' 'd["standby"]["error"] is None' \
		'not any(r.startswith("standby:") for r in d["reasons"])'
	curl -sf "http://127.0.0.1:$dport/metrics" >"$IT_TEST_DIR/d_metrics.txt" || true
	it_check "(d) /metrics: slot_standby_up 1, slot_standby_synced 1" \
		grep -qx -e 'outbox_relay_slot_standby_up 1' "$IT_TEST_DIR/d_metrics.txt"
	it_check "(d) /metrics: slot_standby_synced 1" \
		grep -qx -e 'outbox_relay_slot_standby_synced 1' "$IT_TEST_DIR/d_metrics.txt"
	it_check "(d) /metrics: slot_standby_lag_bytes present" \
		grep -q '^outbox_relay_slot_standby_lag_bytes [0-9]' "$IT_TEST_DIR/d_metrics.txt"
	scfg=$IT_TEST_DIR/standby.conf
	it_write_config "$scfg" "$db" "$slot"
	sed -i "s/port=$PGPORT /port=$sport /" "$scfg"
	it_run_relay d_status --config "$scfg" --slot-status --json
	if [[ $RC == 0 || $RC == 1 || $RC == 2 ]]; then
		ok "(d) --slot-status on the standby answers (exit $RC)"
	else
		not_ok "(d) --slot-status on the standby answers" "exit $RC: $(cat "$IT_TEST_DIR/d_status.err")"
	fi
	py_json "(d) on the standby: failover and synced true" "$IT_TEST_DIR/d_status.out" \
		'd["server"]["failover"] is True' 'd["server"]["synced"] is True'
	stop_standby
	sleep 0.5
	it_run_relay d_down --config "$cfg" --check
	it_expect_exit d_down 0 "(d) --check with the named standby down"
	it_expect_in d_down out "(d) it warns that the relay waits for it" \
		"warn  synchronized_standby_slots: '$sbslot': no standby streams from $sbslot now"
	it_sql postgres "ALTER SYSTEM RESET synchronized_standby_slots" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	# The standby down: the relay says so, warns, and goes on.
	if wait_slot "$dport" "$IT_TEST_DIR/d_slot_down.json" 20 \
		'd["standby"]["reachable"] is False'; then
		ok "(d) /slot: the stopped standby unreachable"
	else
		not_ok "(d) /slot: the stopped standby unreachable" \
			"$(head -c 3000 "$IT_TEST_DIR/d_slot_down.json")"
	fi
	py_json "(d) /slot standby down: error, synced null, a warn reason" \
		"$IT_TEST_DIR/d_slot_down.json" 'd["standby"]["error"]' \
		'd["standby"]["synced"] is None' 'd["standby"]["lag_bytes"] is None' \
		'd["state"] == "warn"' \
		'any(r.startswith("standby: its copy of the slot cannot be read") for r in d["reasons"])'
	curl -sf "http://127.0.0.1:$dport/metrics" >"$IT_TEST_DIR/d_metrics_down.txt" || true
	it_check "(d) /metrics: slot_standby_up 0" grep -qx \
		'outbox_relay_slot_standby_up 0' "$IT_TEST_DIR/d_metrics_down.txt"
	it_check "(d) /metrics: pg_up 1 with the standby down" grep -qx \
		'outbox_relay_pg_up 1' "$IT_TEST_DIR/d_metrics_down.txt"
	id=$(cat /proc/sys/kernel/random/uuid)
	it_sql "$db" "$IT_INS ('$id', '$type', 'a6', 'created', '{\"n\": 6}')" >/dev/null
	if it_consume_wait "$topic" "$IT_TEST_DIR/d_events3.json" 6 60; then
		ok "(d) the relay still publishes with the standby down"
	else
		not_ok "(d) the relay still publishes with the standby down" "$(it_show_log "$dlog")"
	fi
	it_check "(d) /readyz 200 with the standby down" \
		curl -sf "http://127.0.0.1:$dport/readyz"
	it_check "(d) the log warns once about the standby, no conninfo in it" \
		bash -c "grep -q 'watchdog: standby: ' '$dlog' && ! grep -q 'port=$sport' '$dlog'"
	rc=0
	it_stop_relay || rc=$?
	it_check "(d) relay exits 0 on SIGTERM (exit $rc)" test "$rc" -eq 0
	it_sql postgres "SELECT pg_drop_replication_slot('$sbslot')" >/dev/null
fi

# ---------------------------------------------------------------- (e)
if ((major < 18)); then
	skip "(e) idle_replication_slot_timeout" "PostgreSQL $major has no such setting"
	it_summary
fi
it_sql postgres "ALTER SYSTEM SET idle_replication_slot_timeout = '1h'" >/dev/null
it_sql postgres "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
it_run_relay e_check --config "$cfg" --check
it_expect_exit e_check 0 "(e) --check with idle_replication_slot_timeout = 1h"
it_expect_in e_check out "(e) it warns, naming the setting" \
	"warn  idle_replication_slot_timeout: 3600 s: a slot no relay streams from for that long is invalidated"
it_run_relay e_eta --config "$cfg" --slot-status --json
py_json "(e) --slot-status shows the time left (idle_timeout_eta_seconds)" \
	"$IT_TEST_DIR/e_eta.out" '0 < d["idle_timeout_eta_seconds"] <= 3600' \
	'd["server"]["idle_replication_slot_timeout_seconds"] == 3600'
it_sql postgres "ALTER SYSTEM SET idle_replication_slot_timeout = '1s'" >/dev/null
it_sql postgres "SELECT pg_reload_conf()" >/dev/null
sleep 2
it_sql postgres "CHECKPOINT" >/dev/null
it_sql postgres "ALTER SYSTEM RESET idle_replication_slot_timeout" >/dev/null
it_sql postgres "SELECT pg_reload_conf()" >/dev/null
it_check "(e) the slot is invalidated: idle_timeout" test "$(it_sql "$db" \
	"SELECT invalidation_reason FROM pg_replication_slots
	 WHERE slot_name = '$slot'")" = idle_timeout
it_run_relay e_status --config "$cfg" --slot-status --json
it_expect_exit e_status 3 "(e) --slot-status on the invalidated slot"
py_json "(e) --slot-status: fatal, invalidation_reason idle_timeout" \
	"$IT_TEST_DIR/e_status.out" 'd["state"] == "fatal"' \
	'd["server"]["invalidation_reason"] == "idle_timeout"' \
	'd["reasons"][0].startswith("slot lost: invalidated (idle_timeout)")'
it_run_relay e_check2 --config "$cfg" --check
it_expect_exit e_check2 69 "(e) --check on the invalidated slot"
it_expect_in e_check2 out "(e) the slot item names the reason" \
	"fail  slot: \"$slot\" is invalidated (invalidation_reason=idle_timeout)" \
	"(runbook: slot lost)"
log2=$IT_TEST_DIR/relay2.log
it_start_relay "$cfg" "$log2"
for ((i = 0; i < 150; i++)); do
	it_relay_alive || break
	sleep 0.2
done
rc=0
if it_relay_alive; then
	it_stop_relay || true
	rc=running
else
	wait "$IT_RELAY_PID" || rc=$?
fi
it_check "(e) the relay refuses the slot: exit 69 (got $rc)" test "$rc" = 69
it_check "(e) its log names idle_timeout and the runbook" grep -q \
	'invalidation_reason=idle_timeout.*runbook: slot lost' "$log2"
it_summary
