#!/usr/bin/env bash
# t246_secrets_surfaces -- the three secrets a relay holds (the PostgreSQL
# password in pg.conninfo, kafka.sasl.password, a token in
# alert.webhook.url) appear on none of its surfaces, and a URI password
# with an unencoded '@' leaks no part of itself. On the run's servers
# (the PostgreSQL one trusts loopback, so the password is carried but not
# checked; the SASL password is accepted with the plaintext protocol).
#  (a) one relay with all three, from its file and its environment, at
#      log.level=debug with kafka.debug=all, its health state driven to
#      warn (watchdog.retained.warn.bytes=1) so that the webhook fires:
#      it publishes, the webhook receiver gets the POST, and no secret (nor
#      the webhook's user name) is in its log, --print-config (the three
#      keys <redacted>), /slot, /slot?pretty=1, /metrics, /readyz, /livez
#      or /proc/PID/cmdline (which does show --config: the control);
#  (b) a webhook on a port nothing listens on, with the same token: the
#      failure is logged (the origin only) and the token is not;
#  (c) postgresql://postgres:LEFT@RIGHT@127.0.0.1:PORT/db (an unencoded
#      '@' in the password): the relay refuses it at start, exit 78, with
#      a message telling to percent-encode; neither half of the password
#      is in its output (libpq would have quoted "RIGHT@127.0.0.1" as a
#      host name it cannot resolve, at every retry). The same for an
#      unencoded '/' (libpq would have quoted LEFT as a bad port), and
#      for --slot-status and --check; the %40-encoded URI streams;
#  (d) the health endpoint's default address is 127.0.0.1:8080: shown by
#      --print-config, and (when the port is free) a relay without
#      http.listen listens on 127.0.0.1:8080 only.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t246_secrets
tag=$$
pg_pw=T246pgPw4
sasl_pw=T246saslPw6
hook_user=t246hookuser
hook_tok1=T246hookA1
hook_tok2=T246hookB2
hook_tok3=T246hookC3
secrets=("$pg_pw" "$sasl_pw" "$hook_user" "$hook_tok1" "$hook_tok2" "$hook_tok3")

if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi

# no_secret DESC FILE...: no file holds any of the secrets (any case).
no_secret() {
	local desc=$1 f s hits=
	shift
	for f in "$@"; do
		if [[ ! -f $f ]]; then
			hits+="$f: missing"$'\n'
			continue
		fi
		for s in "${secrets[@]}"; do
			if grep -qiF -- "$s" "$f"; then
				hits+="$f: $s: $(grep -m2 -iF -- "$s" "$f" | cut -c1-300)"$'\n'
			fi
		done
	done
	if [[ -z $hits ]]; then
		ok "$desc"
	else
		not_ok "$desc" "$hits"
	fi
}
hook_url() { # PORT
	echo "http://$hook_user:$hook_tok1@127.0.0.1:$1/hook/$hook_tok2?token=$hook_tok3"
}

# ---------------------------------------------------------------- (a)
it_webhook_receiver "$IT_TEST_DIR/hooks.jsonl" || true
hook_port=$HOOK_PORT
if [[ -z $hook_port ]]; then
	not_ok "webhook receiver started" "$(cat "$IT_TEST_DIR/receiver.err")"
	it_summary
fi

type=t246a_$tag
cfg=$IT_TEST_DIR/a.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug kafka.debug=all \
	watchdog.interval.ms=500 watchdog.retained.warn.bytes=1 \
	watchdog.retained.critical.bytes=0 watchdog.lag.warn.bytes=0 \
	watchdog.lag.critical.bytes=0 "kafka.sasl.password=$sasl_pw"
sed -i "s|^pg.conninfo = .*|& password=$pg_pw|" "$cfg"
chmod 600 "$cfg"
it_check "(a) the file holds the PostgreSQL and SASL passwords" \
	grep -qF -e "password=$pg_pw" "$cfg"
log=$IT_TEST_DIR/a.log
OUTBOX_RELAY_ALERT_WEBHOOK_URL=$(hook_url "$hook_port") it_start_relay "$cfg" "$log"
pid=$IT_RELAY_PID
hport=$(it_health_port "$log" || true)
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(a) relay with the three secrets streams"
else
	not_ok "(a) relay with the three secrets streams" "$(it_show_log "$log")"
fi
it_event "$db" "$type" agg-1 Secret '{"n": 1}'
if it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/a.json" 1 30; then
	ok "(a) ... and publishes"
else
	not_ok "(a) ... and publishes" "$(it_show_log "$log")"
fi
if it_wait_log "$IT_TEST_DIR/hooks.jsonl" '"state":"warn"' 30; then
	ok "(a) the webhook (URL with user, token in path and query) got the warn POST"
else
	not_ok "(a) the webhook (URL with user, token in path and query) got the warn POST" \
		"$(it_show_log "$log")"
fi
surf=$IT_TEST_DIR/surfaces
mkdir -p "$surf"
for path in /slot "/slot?pretty=1" /metrics /readyz /livez; do
	name=${path//[^a-z]/_}
	curl -s -m 10 -D "$surf/$name.hdr" -o "$surf/$name.body" \
		"http://127.0.0.1:$hport$path" 2>/dev/null || true
done
it_check "(a) /slot answered with the slot's JSON" grep -q "\"$db\"" "$surf/_slot.body"
it_check "(a) /metrics answered" grep -q '^outbox_relay_health_state ' "$surf/_metrics.body"
tr '\0' ' ' <"/proc/$pid/cmdline" >"$surf/cmdline" 2>/dev/null || true
it_diag "(a) cmdline: $(cat "$surf/cmdline")"
it_check "(a) /proc/PID/cmdline shows the relay's arguments (--config)" \
	grep -qF -- "--config $cfg" "$surf/cmdline"
it_stop_checked "(a) relay exits 0 on SIGTERM"
OUTBOX_RELAY_ALERT_WEBHOOK_URL=$(hook_url "$hook_port") "$RELAY_BIN" --config "$cfg" \
	--print-config >"$surf/print-config" 2>&1 || true
it_check "(a) --print-config redacts the three keys" bash -c '
	grep -qxF "pg.conninfo = <redacted> # file" "$1" &&
	grep -qxF "kafka.sasl.password = <redacted> # file" "$1" &&
	grep -qxF "alert.webhook.url = <redacted> # env" "$1"' _ "$surf/print-config"
it_diag "(a) $(grep -c . "$log") log lines at debug with kafka.debug=all"
no_secret "(a) no secret in the debug log" "$log"
no_secret "(a) no secret in --print-config" "$surf/print-config"
no_secret "(a) no secret in /slot, /slot?pretty=1, /metrics, /readyz, /livez (bodies, headers)" \
	"$surf"/*.body "$surf"/*.hdr
no_secret "(a) no secret in /proc/PID/cmdline" "$surf/cmdline"

# ---------------------------------------------------------------- (b)
dead=
for p in $((PGPORT + 19)) $((PGPORT + 31)) $((PGPORT + 43)); do
	port_in_use 127.0.0.1 "$p" || { dead=$p; break; }
done
cfg=$IT_TEST_DIR/b.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug \
	watchdog.interval.ms=500 watchdog.retained.warn.bytes=1 \
	watchdog.retained.critical.bytes=0 watchdog.lag.warn.bytes=0 \
	watchdog.lag.critical.bytes=0
log=$IT_TEST_DIR/b.log
OUTBOX_RELAY_ALERT_WEBHOOK_URL=$(hook_url "$dead") it_start_relay "$cfg" "$log"
it_wait_log "$log" 'slot health ok -> warn' 30 || true
sleep 2 # a first attempt or two
rc=0
it_stop_relay || rc=$?
if grep -qE "alert: webhook http://127.0.0.1:$dead" "$log"; then
	ok "(b) a webhook nothing answers: the failure is logged, by origin"
	it_diag "(b) $(grep -m1 -E 'alert: webhook' "$log")"
else
	not_ok "(b) a webhook nothing answers: the failure is logged, by origin" \
		"$(it_show_log "$log")"
fi
no_secret "(b) ... and the token is not" "$log"

# ---------------------------------------------------------------- (c)
left=Kp4left
right=Wm8right
secrets+=("$left" "$right")
cfg=$IT_TEST_DIR/c.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug \
	reconnect.backoff.ms=200 reconnect.backoff.max.ms=400
run_uri() { # NAME URI [ARGS...]: foreground, bounded; sets RC
	local name=$1 uri=$2
	shift 2
	RC=0
	OUTBOX_RELAY_PG_CONNINFO=$uri timeout -k 5 20 "$RELAY_BIN" --config "$cfg" "$@" \
		</dev/null >"$IT_TEST_DIR/$name.out" 2>"$IT_TEST_DIR/$name.err" || RC=$?
}
at_uri="postgresql://postgres:$left@$right@127.0.0.1:$PGPORT/$db"
run_uri c_at "$at_uri"
it_check "(c) unencoded '@' in the URI password: exit 78 at start (got $RC)" \
	test "$RC" = 78
it_check "(c) ... saying to percent-encode it" \
	grep -qE "pg.conninfo \(from env\): the URI has an '@' after its user info.*%40" \
	"$IT_TEST_DIR/c_at.err"
it_diag "(c) $(head -c 300 "$IT_TEST_DIR/c_at.err")"
no_secret "(c) ... and no part of the password in its output" \
	"$IT_TEST_DIR/c_at.out" "$IT_TEST_DIR/c_at.err"

run_uri c_slash "postgresql://postgres:$left/$right@127.0.0.1:$PGPORT/$db"
it_check "(c) unencoded '/' in the URI password: exit 78 (got $RC)" test "$RC" = 78
no_secret "(c) ... no part of that password in its output" \
	"$IT_TEST_DIR/c_slash.out" "$IT_TEST_DIR/c_slash.err"

run_uri c_status "$at_uri" --slot-status
it_check "(c) --slot-status with that URI: exit 78 (got $RC)" test "$RC" = 78
run_uri c_check "$at_uri" --check
it_check "(c) --check with that URI fails (exit $RC)" test "$RC" -ne 0
it_check "(c) ... naming pg.conninfo" grep -qF "the URI has an '@'" \
	"$IT_TEST_DIR/c_check.out" "$IT_TEST_DIR/c_check.err"
no_secret "(c) --slot-status and --check: no part of the password in their output" \
	"$IT_TEST_DIR/c_status.out" "$IT_TEST_DIR/c_status.err" \
	"$IT_TEST_DIR/c_check.out" "$IT_TEST_DIR/c_check.err"

log=$IT_TEST_DIR/c_encoded.log
OUTBOX_RELAY_PG_CONNINFO="postgresql://postgres:$left%40$right@127.0.0.1:$PGPORT/$db" \
	it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(c) the %40-encoded URI streams"
else
	not_ok "(c) the %40-encoded URI streams" "$(it_show_log "$log")"
fi
it_stop_checked "(c) that relay exits 0 on SIGTERM"
no_secret "(c) ... and its debug log holds no part of the password" "$log"

# ---------------------------------------------------------------- (d)
cfg=$IT_TEST_DIR/d.conf
it_write_config "$cfg" "$db" status.interval.ms=500
sed -i '/^http.listen/d' "$cfg"
"$RELAY_BIN" --config "$cfg" --print-config >"$IT_TEST_DIR/d.print" 2>&1 || true
it_check "(d) --print-config: http.listen = 127.0.0.1:8080 by default" \
	grep -qxF "http.listen = 127.0.0.1:8080 # default" "$IT_TEST_DIR/d.print"
if port_in_use 127.0.0.1 8080 || [[ -n $(ss -Hltn 'sport = :8080' 2>/dev/null) ]]; then
	skip "(d) a relay without http.listen listens on 127.0.0.1:8080 only" \
		"port 8080 is in use on this machine"
else
	log=$IT_TEST_DIR/d.log
	it_start_relay "$cfg" "$log"
	if it_wait_log "$log" 'health endpoint on http://127.0.0.1:8080' 15; then
		listeners=$(ss -Hltn 'sport = :8080' | awk '{print $4}' | sort -u)
		it_diag "(d) listening on: ${listeners//$'\n'/ }"
		it_check "(d) a relay without http.listen listens on 127.0.0.1:8080 only" \
			test "$listeners" = "127.0.0.1:8080"
		other=$(hostname -I 2>/dev/null | awk '{print $1}')
		if [[ -n $other && $other != 127.* ]]; then
			it_check "(d) ... not reachable on $other:8080" \
				bash -c '! curl -s -m 3 -o /dev/null "http://$1:8080/livez"' _ "$other"
		fi
	elif grep -q 'cannot bind' "$log"; then
		skip "(d) a relay without http.listen listens on 127.0.0.1:8080 only" \
			"port 8080 was taken meanwhile"
	else
		not_ok "(d) a relay without http.listen listens on 127.0.0.1:8080 only" \
			"$(it_show_log "$log")"
	fi
	rc=0
	it_stop_relay || rc=$?
fi

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
