#!/usr/bin/env bash
# t240_secrets -- the relay never writes a secret.
#
#   (a) pg.conninfo with password=S3cretPw1 (the test server trusts
#       loopback, so the password is sent nowhere that checks it): the
#       relay streams and publishes, with log.level=debug, and neither its
#       log nor --print-config shows the password; also in URI form;
#   (b) the same password with a port nothing listens on, and in a
#       conninfo libpq cannot parse: the error lines (which are there) do
#       not contain it;
#   (c) kafka.sasl.password=S3cretPw2 with the plaintext protocol (the
#       relay publishes), and with sasl_plaintext against the plaintext
#       broker (authentication fails and is logged), both with
#       kafka.debug=all: the value is in no log line and not in
#       --print-config; and a mistyped kafka.sasl.oauthbearer.config (a
#       secret the relay redacts) whose value librdkafka's error quotes;
#   (d) `ps -o args` of a running relay shows no secret when the secret
#       comes from the configuration file or from OUTBOX_RELAY_PG_CONNINFO
#       (a --set value is visible there: the positive control).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t240_secrets
pw1=S3cretPw1
pw2=S3cretPw2
tag=$$

if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi

# A loopback port nothing listens on.
dead_port=
for p in $((PGPORT + 17)) $((PGPORT + 29)) $((PGPORT + 41)); do
	if ! port_in_use 127.0.0.1 "$p"; then
		dead_port=$p
		break
	fi
done

# no_secret DESC SECRET FILE...: none of the files contains SECRET (any
# case, so that an upper-cased or otherwise reformatted copy counts too).
no_secret() {
	local desc=$1 secret=$2 f hits=
	shift 2
	for f in "$@"; do
		if [[ ! -f $f ]]; then
			hits+="$f: missing"$'\n'
		elif grep -qiF -- "$secret" "$f"; then
			hits+="$f: $(grep -m3 -iF -- "$secret" "$f")"$'\n'
		fi
	done
	if [[ -z $hits ]]; then
		ok "$desc"
	else
		not_ok "$desc" "$hits"
	fi
}

# publish_one TYPE NAME: one event through the running relay; true when it
# arrived.
publish_one() {
	local type=$1 name=$2
	it_event "$db" "$type" agg-1 Secret '{"n": 1}' &&
		it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/$name.json" 1 30
}

stop_relay_checked() {
	local desc=$1 rc=0
	it_stop_relay || rc=$?
	it_check "$desc exits 0 on SIGTERM" test "$rc" -eq 0
}

ci="host=127.0.0.1 port=$PGPORT dbname=$db user=postgres"

# ---------------------------------------------------------------- (a)
cfg=$IT_TEST_DIR/a.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug
sed -i "s|^pg.conninfo = .*|pg.conninfo = $ci password=$pw1|" "$cfg"
it_check "(a) the config file holds the password" grep -qF "password=$pw1" "$cfg"
log=$IT_TEST_DIR/a.log
it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'streaming from slot' 30 && publish_one "t240a_$tag" a; then
	ok "(a) relay with a password in pg.conninfo streams and publishes"
else
	not_ok "(a) relay with a password in pg.conninfo streams and publishes" \
		"$(it_show_log "$log")"
fi
stop_relay_checked "(a) relay"
"$RELAY_BIN" --config "$cfg" --print-config >"$IT_TEST_DIR/a.print" 2>&1 || true
it_check "(a) --print-config shows pg.conninfo redacted" \
	grep -qxF "pg.conninfo = <redacted> # file" "$IT_TEST_DIR/a.print"
no_secret "(a) password in neither the log nor --print-config" "$pw1" \
	"$log" "$IT_TEST_DIR/a.print"

# URI form, from the environment.
uri="postgresql://postgres:$pw1@127.0.0.1:$PGPORT/$db"
log=$IT_TEST_DIR/a_uri.log
OUTBOX_RELAY_PG_CONNINFO=$uri it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'streaming from slot' 30 && publish_one "t240a_uri_$tag" a_uri; then
	ok "(a) relay with a URI with a password streams and publishes"
else
	not_ok "(a) relay with a URI with a password streams and publishes" \
		"$(it_show_log "$log")"
fi
stop_relay_checked "(a) URI relay"
OUTBOX_RELAY_PG_CONNINFO=$uri "$RELAY_BIN" --config "$cfg" --print-config \
	>"$IT_TEST_DIR/a_uri.print" 2>&1 || true
it_check "(a) --print-config shows the URI redacted, from env" \
	grep -qxF "pg.conninfo = <redacted> # env" "$IT_TEST_DIR/a_uri.print"
no_secret "(a) URI password in neither the log nor --print-config" "$pw1" \
	"$log" "$IT_TEST_DIR/a_uri.print"

# ---------------------------------------------------------------- (b)
# conninfo NAME CONNINFO ERROR_REGEX: the relay retries; after its first
# error line it is stopped, and the log must not hold the password.
bad_conninfo() {
	local name=$1 conninfo=$2 pat=$3 log=$IT_TEST_DIR/$1.log c=$IT_TEST_DIR/$1.conf
	it_write_config "$c" "$db" status.interval.ms=500 log.level=debug \
		reconnect.backoff.ms=200
	OUTBOX_RELAY_PG_CONNINFO=$conninfo it_start_relay "$c" "$log"
	if it_wait_log "$log" "$pat" 20; then
		ok "(b) $name: the relay logged the connection error"
		it_diag "$(grep -m1 -E -- "$pat" "$log")"
	else
		not_ok "(b) $name: the relay logged the connection error" "$(it_show_log "$log")"
	fi
	sleep 1 # a retry or two
	# Whether the relay retries (0 on SIGTERM) or gave up on an unusable
	# conninfo (78) is t210's business; here it only has to stop.
	local rc=0
	it_stop_relay || rc=$?
	it_check "(b) $name relay stopped (exit $rc: 0 or 78)" \
		test "$rc" -eq 0 -o "$rc" -eq 78
	no_secret "(b) $name: password not in the log" "$pw1" "$log"
}
if [[ -n $dead_port ]]; then
	bad_conninfo dead_port "host=127.0.0.1 port=$dead_port dbname=$db user=postgres password=$pw1" \
		'could not connect'
	bad_conninfo dead_port_uri "postgresql://postgres:$pw1@127.0.0.1:$dead_port/$db" \
		'could not connect'
else
	not_ok "(b) found a free loopback port"
fi
bad_conninfo unparsable "$ci password=$pw1 no_such_option=$pw1" \
	'not a valid connection string'

# ---------------------------------------------------------------- (c)
cfg=$IT_TEST_DIR/c.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug \
	kafka.sasl.password="$pw2" kafka.debug=all
log=$IT_TEST_DIR/c.log
it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'streaming from slot' 30 && publish_one "t240c_$tag" c; then
	ok "(c) relay with kafka.sasl.password (plaintext protocol) streams and publishes"
else
	not_ok "(c) relay with kafka.sasl.password (plaintext protocol) streams and publishes" \
		"$(it_show_log "$log")"
fi
stop_relay_checked "(c) relay"
"$RELAY_BIN" --config "$cfg" --print-config >"$IT_TEST_DIR/c.print" 2>&1 || true
it_check "(c) --print-config shows kafka.sasl.password redacted" \
	grep -qxF "kafka.sasl.password = <redacted> # file" "$IT_TEST_DIR/c.print"
it_diag "(c) $(grep -c . "$log") log lines with kafka.debug=all"
no_secret "(c) sasl password in neither the log nor --print-config" "$pw2" \
	"$log" "$IT_TEST_DIR/c.print"

# SASL against a plaintext listener: authentication fails, and says so.
cfg=$IT_TEST_DIR/c_sasl.conf
it_write_config "$cfg" "$db" status.interval.ms=500 log.level=debug \
	kafka.security.protocol=sasl_plaintext kafka.sasl.mechanisms=PLAIN \
	kafka.sasl.username=relay kafka.debug=all
log=$IT_TEST_DIR/c_sasl.log
OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$pw2 it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'SASL|AUTHENTICATION' 30; then
	ok "(c) SASL against the plaintext broker: the failure is logged"
	it_diag "$(grep -m1 -E 'ERROR.*(SASL|AUTHENTICATION)' "$log" || true)"
else
	not_ok "(c) SASL against the plaintext broker: the failure is logged" \
		"$(it_show_log "$log")"
fi
sleep 1
stop_relay_checked "(c) SASL relay"
OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$pw2 "$RELAY_BIN" --config "$cfg" --print-config \
	>"$IT_TEST_DIR/c_sasl.print" 2>&1 || true
it_check "(c) --print-config shows the env sasl password redacted" \
	grep -qxF "kafka.sasl.password = <redacted> # env" "$IT_TEST_DIR/c_sasl.print"
no_secret "(c) SASL: password in neither the log nor --print-config" "$pw2" \
	"$log" "$IT_TEST_DIR/c_sasl.print"

# sasl.oauthbearer.config is a secret too (redacted by --print-config; it
# may carry extension values such as API keys). One mistyped word in it
# makes librdkafka's token refresh fail, and librdkafka's message quotes
# the value from that word on: what the relay logs of it must not.
pw3=S3cretPw3
cfg=$IT_TEST_DIR/c_oauth.conf
it_write_config "$cfg" "$db" status.interval.ms=500 \
	kafka.security.protocol=sasl_plaintext kafka.sasl.mechanisms=OAUTHBEARER \
	kafka.enable.sasl.oauthbearer.unsecure.jwt=true \
	"kafka.sasl.oauthbearer.config=principal=relay lifeSecond=60 extension_apikey=$pw3"
log=$IT_TEST_DIR/c_oauth.log
it_start_relay "$cfg" "$log"
if it_wait_log "$log" 'OAUTHBEARER' 30; then
	ok "(c) bad sasl.oauthbearer.config: the token failure is logged"
else
	not_ok "(c) bad sasl.oauthbearer.config: the token failure is logged" \
		"$(it_show_log "$log")"
fi
sleep 1
stop_relay_checked "(c) OAUTHBEARER relay"
"$RELAY_BIN" --config "$cfg" --print-config >"$IT_TEST_DIR/c_oauth.print" 2>&1 || true
it_check "(c) --print-config shows kafka.sasl.oauthbearer.config redacted" \
	grep -qxF "kafka.sasl.oauthbearer.config = <redacted> # file" \
	"$IT_TEST_DIR/c_oauth.print"
no_secret "(c) OAUTHBEARER: the config's secret in neither the log nor --print-config" \
	"$pw3" "$log" "$IT_TEST_DIR/c_oauth.print"

# ---------------------------------------------------------------- (d)
# ps_args NAME PID: the relay's command line as ps shows it.
ps_args() {
	ps -o args= -p "$2" >"$IT_TEST_DIR/$1.ps" 2>&1 || true
	it_diag "(d) $1: $(cat "$IT_TEST_DIR/$1.ps")"
}

cfg=$IT_TEST_DIR/d.conf
it_write_config "$cfg" "$db" status.interval.ms=500 kafka.sasl.password="$pw2"
sed -i "s|^pg.conninfo = .*|pg.conninfo = $ci password=$pw1|" "$cfg"
log=$IT_TEST_DIR/d_file.log
it_start_relay "$cfg" "$log" --set stats.interval.ms=60001
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(d) relay with secrets in its file runs"
else
	not_ok "(d) relay with secrets in its file runs" "$(it_show_log "$log")"
fi
ps_args d_file "$IT_RELAY_PID"
# Positive control: ps does show this relay's arguments.
it_check "(d) ps shows the relay's arguments (--config, the --set value)" \
	grep -q -e "--config $cfg --set stats.interval.ms=60001" "$IT_TEST_DIR/d_file.ps"
no_secret "(d) ps shows neither secret of the file" "$pw1" "$IT_TEST_DIR/d_file.ps"
no_secret "(d) ps shows no kafka secret of the file" "$pw2" "$IT_TEST_DIR/d_file.ps"
stop_relay_checked "(d) file relay"

log=$IT_TEST_DIR/d_env.log
it_write_config "$IT_TEST_DIR/d_env.conf" "$db" status.interval.ms=500
OUTBOX_RELAY_PG_CONNINFO="$ci password=$pw1" OUTBOX_RELAY_KAFKA_SASL_PASSWORD=$pw2 \
	it_start_relay "$IT_TEST_DIR/d_env.conf" "$log"
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(d) relay with secrets in its environment runs"
else
	not_ok "(d) relay with secrets in its environment runs" "$(it_show_log "$log")"
fi
ps_args d_env "$IT_RELAY_PID"
it_check "(d) ps shows the relay's arguments" \
	grep -qF -- "--config $IT_TEST_DIR/d_env.conf" "$IT_TEST_DIR/d_env.ps"
no_secret "(d) ps shows no secret of the environment" "$pw1" "$IT_TEST_DIR/d_env.ps"
no_secret "(d) ps shows no kafka secret of the environment" "$pw2" "$IT_TEST_DIR/d_env.ps"
stop_relay_checked "(d) env relay"
no_secret "(d) logs of both relays hold no secret" "$pw1" \
	"$IT_TEST_DIR/d_file.log" "$IT_TEST_DIR/d_env.log"
no_secret "(d) logs of both relays hold no kafka secret" "$pw2" \
	"$IT_TEST_DIR/d_file.log" "$IT_TEST_DIR/d_env.log"

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
