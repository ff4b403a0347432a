#!/usr/bin/env bash
# t244_kafka_sasl_ssl -- Kafka over SASL_SSL: a second broker of the
# test's own (tests/integration/tls.sh; the run's broker port + 2 or the
# next free pair) with only a SASL_SSL listener, SCRAM-SHA-512 users
# created at format time and a certificate from a CA the test makes with
# openssl. The relay reads from the run's PostgreSQL.
#  (a) security.protocol=SASL_SSL, sasl.mechanisms=SCRAM-SHA-512, user
#      relay, ssl.ca.location=the CA (librdkafka verifies the broker's
#      name by default): the relay publishes, kcat with the same settings
#      reads the event back, /readyz is 200 (the contact probe gets
#      through SASL_SSL); with log.level=debug and kafka.debug=security,
#      broker the password is in no log line;
#  (b) a wrong password: the log says so at ERROR ("SASL authentication
#      error ... invalid credentials") within 20 s, /readyz is 503, and
#      the relay does not retry silently for ever: it exits 77 within 45 s
#      with one line saying the brokers refuse its credentials and which
#      settings to check (needs relay.c to call pub_auth_failed(); see
#      include/publisher.h). Neither password is in its output;
#  (c) ssl.ca.location=a CA that did not sign the broker's certificate:
#      the log names the certificate verification failure at ERROR.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tls.sh
source "$(dirname "$0")/tls.sh"
it_init

db=t244_sasl
tag=$$
certs=$IT_TEST_DIR
admin_pw=T244adminPw3
relay_pw=T244relayPw5
bad_pw=T244wrongPw8

kport=${KAFKA_BROKERS##*:}
tport=
for p in $((kport + 2)) $((kport + 4)) $((kport + 6)); do
	if ! port_in_use 127.0.0.1 "$p" && ! port_in_use 127.0.0.1 $((p + 1)); then
		tport=$p
		break
	fi
done
if [[ -z $tport ]]; then
	not_ok "a free port pair for the SASL_SSL broker"
	it_summary
fi

if tls_ca "$certs" ca && tls_ca "$certs" otherca &&
	tls_cert "$certs" ca broker "DNS:localhost,IP:127.0.0.1"; then
	ok "test CAs and the broker certificate made with openssl"
else
	not_ok "test CAs and the broker certificate made with openssl" \
		"$(cat "$certs"/*.openssl.log 2>/dev/null | tail -n 20)"
	it_summary
fi
if ktls_start "$IT_TEST_DIR" "$tport" ca broker admin="$admin_pw" relay="$relay_pw" \
	2>"$IT_TEST_DIR/ktls.err"; then
	ok "SASL_SSL broker (SCRAM-SHA-512) on 127.0.0.1:$tport"
else
	not_ok "SASL_SSL broker (SCRAM-SHA-512) on 127.0.0.1:$tport" \
		"$(tail -n 30 "$IT_TEST_DIR/ktls.err")"
	it_summary
fi
if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi

# conf_for FILE [KEY=VALUE...]: the relay against the SASL_SSL broker; no
# password (it comes from the environment: OUTBOX_RELAY_KAFKA_SASL_PASSWORD).
conf_for() {
	local f=$1 kv
	shift
	{
		echo "pg.conninfo = $(it_conninfo "$db")"
		echo "slot.name = $db"
		echo "slot.plugin = $RELAY_PLUGIN" # it_setup_db's slot
		echo "http.listen = 127.0.0.1:0"
		echo "status.interval.ms = 500"
		echo "shutdown.timeout.ms = 5000"
		echo "kafka.bootstrap.servers = 127.0.0.1:$tport"
		echo "kafka.security.protocol = SASL_SSL"
		echo "kafka.sasl.mechanisms = SCRAM-SHA-512"
		echo "kafka.sasl.username = relay"
		echo "kafka.ssl.ca.location = $certs/ca.crt"
		for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
	} >"$f"
}

# ---------------------------------------------------------------- (a)
type=t244a_$tag
conf_for "$IT_TEST_DIR/a.conf" log.level=debug kafka.debug=security,broker
log=$IT_TEST_DIR/a.log
OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$relay_pw it_start_relay "$IT_TEST_DIR/a.conf" "$log"
hport=$(it_health_port "$log" || true)
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(a) relay with SASL_SSL to Kafka streams"
else
	not_ok "(a) relay with SASL_SSL to Kafka streams" "$(it_show_log "$log")"
fi
it_event "$db" "$type" agg-1 Sasl '{"n": 1}'
got=
for ((i = 0; i < 60; i++)); do
	ktls_kcat "$IT_TEST_DIR" relay "$relay_pw" -C -t "outbox.event.$type" -o beginning \
		-e -q -J >"$IT_TEST_DIR/a.json" 2>"$IT_TEST_DIR/a.kcat.err" || true
	if (($(it_count "$IT_TEST_DIR/a.json") >= 1)); then
		got=1
		break
	fi
	sleep 0.5
done
if [[ -n $got ]]; then
	ok "(a) the event is published; kcat (SASL_SSL, same user) reads it back"
	it_diag "(a) $(it_fields "$IT_TEST_DIR/a.json" topic key payload h:event_type)"
else
	not_ok "(a) the event is published; kcat (SASL_SSL, same user) reads it back" \
		"$(cat "$IT_TEST_DIR/a.kcat.err"; it_show_log "$log")"
fi
it_check "(a) /readyz is 200 (the broker answers over SASL_SSL)" \
	it_until_ready "$hport" 200 "" 20
it_stop_checked "(a) relay exits 0 on SIGTERM"
it_diag "(a) $(grep -c . "$log") log lines at debug with kafka.debug=security,broker"
it_check "(a) the SASL password is in no log line" \
	bash -c '! grep -qiF -- "$1" "$2"' _ "$relay_pw" "$log"

# ---------------------------------------------------------------- (b)
type=t244b_$tag
conf_for "$IT_TEST_DIR/b.conf"
log=$IT_TEST_DIR/b.log
t0=$SECONDS
OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$bad_pw it_start_relay "$IT_TEST_DIR/b.conf" "$log"
pid=$IT_RELAY_PID
hport=$(it_health_port "$log" || true)
it_wait_log "$log" 'streaming from slot' 30 || true
it_event "$db" "$type" agg-1 Sasl '{"n": 1}'
if it_wait_log "$log" 'ERROR .*SASL authentication error.*invalid credentials' 20; then
	ok "(b) wrong password: ERROR line from the broker's refusal"
	it_diag "(b) $(grep -m1 -E 'ERROR .*SASL authentication error' "$log" | cut -c1-300)"
else
	not_ok "(b) wrong password: ERROR line from the broker's refusal" "$(it_show_log "$log")"
fi
if [[ -n $hport ]] && _env_pid_alive "$pid"; then
	it_check "(b) /readyz is 503 while the credentials are refused" \
		it_until_ready "$hport" 503 "" 20
	it_diag "(b) /readyz: $(curl -s -m 5 "http://127.0.0.1:$hport/readyz" | head -c 200)"
fi
# The relay must stop by itself: exit 77, not run on with health ok.
# Bound, from its start: 10 s of refusals, shutdown.timeout.ms (5 s) for
# the event it cannot deliver, and room for a loaded machine.
while ((SECONDS - t0 < 45)); do
	_env_pid_alive "$pid" || break
	sleep 0.1
done
if _env_pid_alive "$pid"; then
	rc=running
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
else
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
fi
IT_RELAY_PID=
it_check "(b) the relay stops by itself with exit 77 within 45 s (got $rc after $((SECONDS - t0)) s)" \
	test "$rc" = 77
it_check "(b) ... with an ERROR line saying the brokers refuse its credentials" \
	grep -qE "ERROR .*refuse the relay's credentials.*kafka.sasl.password" "$log"
it_diag "(b) $(grep -c 'kafka: _AUTHENTICATION' "$log") authentication errors logged by the error callback"
it_check "(b) neither password is in its log" \
	bash -c '! grep -qiF -e "$1" -e "$2" "$3"' _ "$bad_pw" "$relay_pw" "$log"

# ---------------------------------------------------------------- (c)
conf_for "$IT_TEST_DIR/c.conf" "kafka.ssl.ca.location=$certs/otherca.crt"
log=$IT_TEST_DIR/c.log
OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$relay_pw it_start_relay "$IT_TEST_DIR/c.conf" "$log"
if it_wait_log "$log" 'ERROR .*certificate verify failed' 20; then
	ok "(c) a CA that did not sign the broker's certificate: ERROR line"
	it_diag "(c) $(grep -m1 -E 'ERROR .*certificate verify failed' "$log" | cut -c1-300)"
else
	not_ok "(c) a CA that did not sign the broker's certificate: ERROR line" \
		"$(it_show_log "$log")"
fi
rc=0
it_stop_relay || rc=$?
it_diag "(c) relay still running after the TLS failures, stopped with SIGTERM: exit $rc"

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
