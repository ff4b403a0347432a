#!/usr/bin/env bash
# t310_slot_bloat -- retained WAL grows while the relay streams and
# confirms: a background session keeps a transaction open (it has an xid
# and wrote a row, so logical decoding cannot move restart_lsn past its
# start; an xid alone, SELECT txid_current() without a write, does not
# pin it: such a transaction is not in the decoder's reorder buffer and
# restart_lsn moves at the next xl_running_xacts, measured) while bulk
# inserts into a scratch table generate WAL, in steps of about 1.2 MB. Small thresholds: watchdog.retained.warn.bytes=4000000,
# .critical.bytes=16000000, confirmed-lag rules off, watchdog every 500 ms,
# alerts to a local webhook receiver (webhook_receiver.py). Asserts:
#  - /slot goes ok -> warn -> critical, with reasons naming the retained
#    WAL and the threshold; /slot answers 200 at warn and 503 at critical;
#    /readyz stays 200 at warn and is 503 "slot critical" at critical;
#  - /metrics outbox_relay_health_state is 1 at warn and 2 at critical;
#  - server.oldest_xact.pid at critical is the holding session's pid;
#  - retained_wal_bytes > confirmed_lag_bytes at critical (the relay keeps
#    confirming: restart_lsn is pinned, confirmed_flush_lsn is not), and
#    the confirmed lag stays below the warn threshold;
#  - the log has "slot health ok -> warn" and "warn -> critical";
#  - the webhook got JSON POSTs for warn (previous ok) and critical
#    (previous warn) naming the slot, with reasons and figures;
#  - after the holding session is terminated (and a CHECKPOINT, which logs
#    the running transactions that let restart_lsn move), the state comes
#    back to ok: log "critical -> ok", a webhook with state ok, health_state
#    0, /slot 200, /readyz 200; the relay still publishes and exits 0.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t310_slot_bloat
warn_b=4000000
crit_b=16000000
hooks=$IT_TEST_DIR/hooks.jsonl
samples=$IT_TEST_DIR/samples

# get NAME PATH: sets CODE and F (the body file).
get() {
	F=$IT_TEST_DIR/$1.body
	CODE=$(curl -s -m 10 -o "$F" -w '%{http_code}' "$base$2" 2>/dev/null) || true
	[[ -n $CODE ]] || CODE=000
}

health_state() {
	get metrics /metrics
	awk '$1 == "outbox_relay_health_state" {print $2}' "$F"
}

# -- webhook receiver
it_webhook_receiver "$hooks" || true
hook_port=$HOOK_PORT
if [[ -n $hook_port ]]; then
	ok "webhook receiver on 127.0.0.1:$hook_port"
else
	not_ok "webhook receiver started" "$(cat "$IT_TEST_DIR/receiver.err")"
	it_summary
fi

# -- database, relay
it_sql "$db" "CREATE TABLE t310_hold (n int); CREATE TABLE t310_bulk (n int, pad text)"
it_write_config "$conf" "$db" http.listen=127.0.0.1:0 watchdog.interval.ms=500 \
	status.interval.ms=500 \
	watchdog.retained.warn.bytes=$warn_b watchdog.retained.critical.bytes=$crit_b \
	watchdog.lag.warn.bytes=0 watchdog.lag.critical.bytes=0 \
	"alert.webhook.url=http://127.0.0.1:$hook_port/hook"
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30
if port=$(it_health_port "$log"); then
	base=http://127.0.0.1:$port
else
	not_ok "health endpoint port from the log" "$(it_show_log "$log")"
	it_summary
fi
st0=
for ((i = 0; i < 50; i++)); do
	get slot0 /slot
	st0=$(it_json_get "$F" 'd["state"] if d["server"] else "-"' 2>/dev/null || true)
	[[ $st0 == ok ]] && break
	sleep 0.2
done
it_check "/slot state ok before the load (got '$st0')" test "$st0" = ok

# -- the holding transaction
holder_pid=
stop_holder() {
	[[ -z $holder_pid ]] ||
		it_sql postgres "SELECT pg_terminate_backend($holder_pid)" >/dev/null 2>&1 || true
	if [[ -n ${hold_job:-} ]]; then
		kill "$hold_job" 2>/dev/null || true
		wait "$hold_job" 2>/dev/null || true
		hold_job=
	fi
}
env_on_cleanup stop_holder
PGAPPNAME=t310_holder "$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$db" \
	-X -q -At -v ON_ERROR_STOP=1 >"$IT_TEST_DIR/holder.out" 2>&1 <<-'EOF' &
	BEGIN;
	SELECT txid_current();
	INSERT INTO t310_hold VALUES (1);
	SELECT pg_sleep(150);
	COMMIT;
	EOF
hold_job=$!
for ((i = 0; i < 50; i++)); do
	holder_pid=$(it_sql "$db" "SELECT pid FROM pg_stat_activity
		WHERE application_name = 't310_holder' AND backend_xid IS NOT NULL
		AND state = 'active' AND query LIKE '%pg_sleep%'")
	[[ -z $holder_pid ]] || break
	sleep 0.2
done
if [[ -n $holder_pid ]]; then
	ok "holding transaction open in backend $holder_pid"
else
	not_ok "holding transaction open" "$(cat "$IT_TEST_DIR/holder.out")"
	it_summary
fi

# -- WAL, step by step, until critical
: >"$samples"
seen_warn="" seen_crit=""
warn_file="" crit_file=""
warn_metric="" crit_metric=""
warn_slot_code="" crit_slot_code=""
warn_ready="" crit_ready=""
t_load=$SECONDS
for ((step = 1; step <= 40; step++)); do
	it_sql "$db" "INSERT INTO t310_bulk SELECT g, repeat('x', 400)
		FROM generate_series(1, 2500) g"
	# A sample (500 ms) and an evaluation (250 ms) later:
	sleep 1
	get "slot_$step" /slot
	code=$CODE
	line=$(it_json_get "$F" '"%s %s %s %s" % (d["state"], d["server"]["retained_wal_bytes"], d["server"]["confirmed_lag_bytes"], (d["server"]["oldest_xact"] or {}).get("pid"))' \
		2>/dev/null || echo "- - - -")
	read -r st ret lag xpid <<<"$line"
	hs=$(health_state)
	echo "$step $code $st $ret $lag $xpid $hs" >>"$samples"
	if [[ $st == warn && -z $seen_warn ]]; then
		seen_warn=$step warn_file=$IT_TEST_DIR/slot_$step.body warn_metric=$hs
		warn_slot_code=$code
		get readyz_warn /readyz
		warn_ready="$CODE $(cat "$F")"
	fi
	if [[ $st == critical && -z $seen_crit ]]; then
		seen_crit=$step crit_file=$IT_TEST_DIR/slot_$step.body crit_metric=$hs
		crit_slot_code=$code
		get readyz_crit /readyz
		crit_ready="$CODE $(cat "$F")"
		break
	fi
done
it_diag "load: $step steps in $((SECONDS - t_load)) s; step code state retained lag oldest_pid health_state:"
it_diag "$(cat "$samples")"

# -- warn
if [[ -n $seen_warn ]]; then
	ok "/slot state warn (step $seen_warn)"
	reasons=$(it_json_get "$warn_file" '" | ".join(d["reasons"])')
	it_check "warn reasons name the retained WAL and the warn threshold ('$reasons')" \
		grep -qE 'retained WAL .* >= warn 3\.8 MiB' <<<"$reasons"
	it_check "/slot 200 at warn (got $warn_slot_code)" test "$warn_slot_code" = 200
	it_check "/metrics health_state 1 at warn (got $warn_metric)" test "$warn_metric" = 1
	it_check "/readyz still 200 at warn (got '$warn_ready')" test "${warn_ready%% *}" = 200
else
	not_ok "/slot state warn seen" "$(it_show_log "$log" 10)"
fi

# -- critical
if [[ -n $seen_crit ]]; then
	ok "/slot state critical (step $seen_crit)"
	reasons=$(it_json_get "$crit_file" '" | ".join(d["reasons"])')
	it_check "critical reasons name the retained WAL and the critical threshold ('$reasons')" \
		grep -qE 'retained WAL .* >= critical 15\.3 MiB' <<<"$reasons"
	it_check "/slot 503 at critical (got $crit_slot_code)" test "$crit_slot_code" = 503
	it_check "/metrics health_state 2 at critical (got $crit_metric)" test "$crit_metric" = 2
	it_check "/readyz 503 'slot critical' at critical (got '$crit_ready')" \
		grep -qE '^503 slot critical: retained WAL' <<<"$crit_ready"
	read -r ret lag xpid <<<"$(it_json_get "$crit_file" \
		'"%s %s %s" % (d["server"]["retained_wal_bytes"], d["server"]["confirmed_lag_bytes"], (d["server"]["oldest_xact"] or {}).get("pid"))')"
	it_check "server.oldest_xact.pid is the holding backend ($xpid = $holder_pid)" \
		test "$xpid" = "$holder_pid"
	it_check "retained_wal_bytes > confirmed_lag_bytes at critical ($ret > $lag)" \
		test "$ret" -gt "$lag"
	it_check "confirmed lag stays below warn while the relay confirms ($lag < $warn_b)" \
		test "$lag" -lt "$warn_b"
	it_diag "at critical: retained $ret, confirmed lag $lag, oldest xact $(it_json_get "$crit_file" 'd["server"]["oldest_xact"]')"
else
	not_ok "/slot state critical seen within 40 steps" "$(it_show_log "$log" 10)"
fi
it_check "log: slot health ok -> warn" grep -q 'slot health ok -> warn: retained WAL' "$log"
it_check "log: slot health warn -> critical" grep -q 'slot health warn -> critical: retained WAL' "$log"

# hook_check STATE PREV: a webhook line with that state and previous state,
# for our slot, with figures (and reasons naming the retained WAL unless
# STATE is ok). hook_wait STATE PREV [SECS]: the same, polled.
hook_check() {
	python3 - "$hooks" "$db" "$1" "$2" <<-'PY'
	import json, sys
	path, slot, state, prev = sys.argv[1:5]
	for line in open(path):
	    d = json.loads(line)
	    if d.get("state") == state and d.get("previous_state") == prev:
	        assert d.get("slot") == slot, "slot %r" % d.get("slot")
	        f = d.get("figures") or {}
	        assert isinstance(f.get("retained_wal_bytes"), int), f
	        if state != "ok":
	            assert d.get("reasons") and "retained WAL" in d["reasons"][0], d.get("reasons")
	        print("ok: %s" % line.strip()[:300])
	        sys.exit(0)
	sys.exit(1)
	PY
}
hook_wait() {
	local i
	for ((i = 0; i < ${3:-15} * 5; i++)); do
		hook_check "$1" "$2" >"$IT_TEST_DIR/hook_$1.check" 2>&1 && return 0
		sleep 0.2
	done
	cat "$IT_TEST_DIR/hook_$1.check"
	echo "received:"
	cat "$hooks"
	return 1
}
it_check "webhook: JSON POST for warn (previous ok) naming slot $db" hook_wait warn ok
it_check "webhook: JSON POST for critical (previous warn) naming slot $db" hook_wait critical warn

# -- end the transaction: back to ok
log_off=$(stat -c %s "$log")
it_sql postgres "SELECT pg_terminate_backend($holder_pid)" >/dev/null
wait "$hold_job" 2>/dev/null || true
hold_job=
holder_pid=
t_end=$SECONDS
it_event "$db" "$type" agg-1 Bloat '{"n": 1}'
# restart_lsn moves at the next xl_running_xacts record the relay confirms
# past: the bgwriter logs one every 15 s of activity, a checkpoint at once.
it_sql postgres "CHECKPOINT"
back="" st=""
for ((i = 0; i < 60; i++)); do
	get slot_back /slot
	st=$(it_json_get "$F" 'd["state"]' 2>/dev/null || true)
	if [[ $st == ok ]]; then
		back=$((SECONDS - t_end))
		break
	fi
	((i % 10 != 9)) || it_sql "$db" "INSERT INTO t310_bulk VALUES (0, 'tick')"
	sleep 0.5
done
if [[ -n $back ]]; then
	ok "/slot state ok again ${back} s after the transaction ended (retained $(it_json_get "$F" 'd["server"]["retained_wal_bytes"]'))"
else
	not_ok "/slot state ok again within 30 s" "state $st: $(it_json_get "$F" 'd["reasons"]' 2>&1)
$(it_show_log "$log" 10)"
fi
get slot_ok /slot
it_check "/slot 200 when ok (got $CODE)" test "$CODE" = 200
hs=$(health_state)
it_check "/metrics health_state 0 (got $hs)" test "$hs" = 0
get readyz_ok /readyz
it_check "/readyz 200 again (got $CODE $(cat "$F"))" test "$CODE" = 200
it_check "log: slot health critical -> ok" \
	bash -c "tail -c +$((log_off + 1)) '$log' | grep 'slot health critical -> ok' >/dev/null"
it_check "webhook: JSON POST for ok (previous critical)" hook_wait ok critical
if it_consume_wait "$topic" "$IT_TEST_DIR/out.json" 1 30; then
	ok "relay published the event written after the bloat"
else
	not_ok "relay published the event written after the bloat" "$(it_show_log "$log" 15)"
fi
it_diag "webhook POSTs: $(python3 -c 'import json,sys; print(" ".join("%s->%s" % (json.loads(l)["previous_state"], json.loads(l)["state"]) for l in open(sys.argv[1])))' "$hooks")"
it_diag "log: $(grep 'slot health' "$log" | cut -c1-200)"

it_stop_checked "relay exits 0 on SIGTERM"
it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
