#!/usr/bin/env bash
# t600_standby_ready -- the readiness contract Kubernetes needs
# (docs/monitoring.md, "Readiness and the standby"): a healthy standby is
# ready, so that a rolling update of a two-replica Deployment moves on.
#  (a) relay A streams: /readyz 200 "ready"; relay B on the same slot is
#      a standby: /readyz 200 with a body starting "standby: slot held by
#      another process (PID <A's walsender>)", /metrics
#      outbox_relay_state{state="standby"} 1 and {state="streaming"} 0,
#      /slot relay.state "standby";
#  (b) relay C, a standby whose critical threshold for retained WAL is 1
#      byte: /readyz 503 "slot critical", and /slot 503;
#  (c) the broker stopped (SIGSTOP) with kafka.contact.timeout.ms=4000:
#      standby B answers 503 "no answer from a Kafka broker" within 4 s +
#      6 s, and 200 "standby" again within 30 s of SIGCONT;
#  (d) A stopped with SIGTERM (exit 0): B takes over and answers 200
#      "ready" within 15 s; B and C exit 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t600_standby_ready
type=t600_$(date +%s)
it_setup_db "$db"
common=(standby.retry.ms=500 reconnect.backoff.ms=100 reconnect.backoff.max.ms=500
	kafka.contact.timeout.ms=4000 watchdog.interval.ms=1000)
it_write_config "$IT_TEST_DIR/a.conf" "$db" "${common[@]}"
it_write_config "$IT_TEST_DIR/c.conf" "$db" "${common[@]}" \
	watchdog.retained.warn.bytes=1 watchdog.retained.critical.bytes=1
kpid=$(cat "$IT_DIR/kafka/kafka.pid")
env_on_cleanup 'kill -CONT "$kpid" 2>/dev/null || true'

# ------------------------------------------------------------------ (a)
it_start_relay "$IT_TEST_DIR/a.conf" "$IT_TEST_DIR/a.log"
pid_a=$IT_RELAY_PID
port_a=$(it_health_port "$IT_TEST_DIR/a.log") || { not_ok "relay A health port"; it_summary; }
it_check "(a) relay A streams" it_wait_slot_active "$db" "$db" 30
T=
it_until_ready "$port_a" 200 ready 20 || true
it_check "(a) relay A: /readyz 200 ready (last: $CODE '$BODY')" test -n "$T"
walsender=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'")

it_start_relay "$IT_TEST_DIR/a.conf" "$IT_TEST_DIR/b.log"
pid_b=$IT_RELAY_PID
port_b=$(it_health_port "$IT_TEST_DIR/b.log") || { not_ok "relay B health port"; it_summary; }
want="standby: slot held by another process (PID $walsender); takes over when it is released"
if it_until_ready "$port_b" 200 "$want" 20; then
	ok "(a) standby B: /readyz 200 after ${T}s: $BODY"
else
	not_ok "(a) standby B: /readyz 200 \"$want\" within 20 s" "last: $CODE '$BODY'
$(it_show_log "$IT_TEST_DIR/b.log" 10)"
fi
it_check "(a) standby B: outbox_relay_state{state=\"standby\"} 1" \
	test "$(it_metric "$port_b" 'outbox_relay_state{state="standby"}')" = 1
it_check "(a) standby B: outbox_relay_state{state=\"streaming\"} 0" \
	test "$(it_metric "$port_b" 'outbox_relay_state{state="streaming"}')" = 0
it_check "(a) relay A: outbox_relay_state{state=\"streaming\"} 1" \
	test "$(it_metric "$port_a" 'outbox_relay_state{state="streaming"}')" = 1
it_http_get "$port_b" /slot
it_check "(a) standby B: /slot 200 with relay.state standby" python3 -c '
import json, sys
d = json.loads(sys.argv[2])
assert sys.argv[1] == "200", sys.argv[1]
assert d["relay"]["state"] == "standby", d["relay"]["state"]
' "$CODE" "$BODY"

# ------------------------------------------------------------------ (b)
it_event "$db" "$type" a1
it_start_relay "$IT_TEST_DIR/c.conf" "$IT_TEST_DIR/c.log"
pid_c=$IT_RELAY_PID
port_c=$(it_health_port "$IT_TEST_DIR/c.log") || { not_ok "relay C health port"; it_summary; }
if it_until_ready "$port_c" 503 "slot critical: " 20; then
	ok "(b) standby C with the slot critical: /readyz 503 after ${T}s: $BODY"
else
	not_ok "(b) standby C with the slot critical: /readyz 503 \"slot critical\"" \
		"last: $CODE '$BODY'
$(it_show_log "$IT_TEST_DIR/c.log" 10)"
fi
it_http_get "$port_c" /slot
it_check "(b) standby C: /slot 503, relay.state standby, state critical" python3 -c '
import json, sys
d = json.loads(sys.argv[2])
assert sys.argv[1] == "503", sys.argv[1]
assert d["relay"]["state"] == "standby" and d["state"] == "critical", d
' "$CODE" "$BODY"
rc=0; it_stop_relay "$pid_c" || rc=$?
it_check "(b) relay C exits 0 on SIGTERM" test "$rc" -eq 0

# ------------------------------------------------------------------ (c)
kill -STOP "$kpid"
if it_until_ready "$port_b" 503 "no answer from a Kafka broker" 10; then
	ok "(c) broker stopped: standby B /readyz 503 after ${T}s: $BODY"
else
	not_ok "(c) broker stopped: standby B /readyz 503 within 10 s" "last: $CODE '$BODY'"
fi
it_check "(c) standby B: outbox_relay_kafka_up 0" test "$(it_metric "$port_b" outbox_relay_kafka_up)" = 0
kill -CONT "$kpid"
if it_until_ready "$port_b" 200 "standby: " 30; then
	ok "(c) broker back: standby B /readyz 200 again after ${T}s"
else
	not_ok "(c) broker back: standby B /readyz 200 within 30 s" "last: $CODE '$BODY'"
fi

# ------------------------------------------------------------------ (d)
rc=0; it_stop_relay "$pid_a" || rc=$?
it_check "(d) relay A exits 0 on SIGTERM" test "$rc" -eq 0
if it_until_ready "$port_b" 200 ready 15; then
	ok "(d) B took over: /readyz 200 ready after ${T}s"
else
	not_ok "(d) B took over: /readyz 200 ready within 15 s" "last: $CODE '$BODY'
$(it_show_log "$IT_TEST_DIR/b.log" 10)"
fi
it_check "(d) the event arrived" it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/out.json" 1 30
rc=0; it_stop_relay "$pid_b" || rc=$?
it_check "(d) relay B exits 0 on SIGTERM" test "$rc" -eq 0

it_summary
