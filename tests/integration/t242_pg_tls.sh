#!/usr/bin/env bash
# t242_pg_tls -- PostgreSQL over TLS with SCRAM, on a cluster of the
# test's own (port PGPORT+13, or +15 or +21 if taken): ssl=on with a
# server certificate from a CA the test makes with openssl (SAN localhost
# and 127.0.0.1), pg_hba with "hostssl ... scram-sha-256" for the relay's
# role and a reject line for it without TLS, the password in a 0600
# PGPASSFILE.
#  (a) sslmode=verify-full, sslrootcert=the CA, host=localhost,
#      channel_binding=require: the relay streams and publishes (to the
#      run's Kafka); pg_stat_ssl shows TLS on its walsender and on its
#      watchdog's connection; the password is not in its log (debug);
#      host=127.0.0.1 (the certificate's IP entry) streams too;
#  (b) sslrootcert=another CA: exit 78, "certificate verify failed" and
#      the sslrootcert hint;
#  (c) a host name the certificate does not name (host=wrong-name.invalid
#      hostaddr=127.0.0.1): exit 78, "does not match host name";
#  (d) sslrootcert names no file: exit 78;
#  (e) sslmode=disable: pg_hba's reject line, 28000, exit 77;
#  (f) a wrong password over TLS: 28P01, exit 77;
#  (g) the server's certificate replaced (reload) by one naming only
#      localhost: host=127.0.0.1 is refused (exit 78, does not match),
#      host=localhost still streams.
# Every refusal comes at the first attempt, within the run_relay bound
# (30 s), with the message on stderr; none shows the password.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tls.sh
source "$(dirname "$0")/tls.sh"
it_init

own=$IT_TEST_DIR/own
certs=$IT_TEST_DIR/certs
port=
for p in $((PGPORT + 13)) $((PGPORT + 15)) $((PGPORT + 21)); do
	port_in_use 127.0.0.1 "$p" || { port=$p; break; }
done
db=t242_tls
role=t242_relay
pw=T242scramPw7
tag=$$
passfile=$IT_TEST_DIR/pgpass

if [[ -z $port ]] || ! pg_start "$own" "$port" "$db" 2>"$IT_TEST_DIR/pg.err"; then
	not_ok "own PostgreSQL cluster on port $port" "$(cat "$IT_TEST_DIR/pg.err")"
	it_summary
fi
sql() { psql_q "$port" "$db" "$1"; }

# ---------------------------------------------------------------- certs
if tls_ca "$certs" ca && tls_ca "$certs" otherca &&
	tls_cert "$certs" ca server "DNS:localhost,IP:127.0.0.1" &&
	tls_cert "$certs" ca server_dns "DNS:localhost"; then
	ok "test CAs and server certificates made with openssl"
else
	not_ok "test CAs and server certificates made with openssl" \
		"$(cat "$certs"/*.openssl.log 2>/dev/null | tail -n 20)"
	it_summary
fi
# The server refuses a key that others can read.
chmod 600 "$certs"/server.key "$certs"/server_dns.key
chown postgres:postgres "$certs"/server*.key "$certs"/server*.crt 2>/dev/null || true

{
	echo "ssl = on"
	echo "ssl_cert_file = '$certs/server.crt'"
	echo "ssl_key_file = '$certs/server.key'"
	echo "password_encryption = 'scram-sha-256'"
} >>"$own/pg/data/postgresql.conf"
sql "CREATE ROLE $role LOGIN REPLICATION PASSWORD '$pw'" >/dev/null
psql_f "$port" "$db" "$IT_ROOT/sql/outbox.sql" >/dev/null
# The suite's plugin (make integration-pgoutput): the publication first.
if [[ $RELAY_PLUGIN == pgoutput ]]; then
	sql "CREATE PUBLICATION $IT_PUBLICATION FOR TABLE public.outbox
		WITH (publish = 'insert')" >/dev/null
fi
sql "SELECT pg_create_logical_replication_slot('$db', '$RELAY_PLUGIN')" >/dev/null
hba=$own/pg/data/pg_hba.conf
{
	echo "hostssl all $role 127.0.0.1/32 scram-sha-256"
	echo "host    all $role 127.0.0.1/32 reject"
	cat "$hba"
} >"$hba.new"
mv "$hba.new" "$hba"
chown postgres:postgres "$hba" 2>/dev/null || true
sql "SELECT pg_reload_conf()" >/dev/null
for ((i = 0; i < 25; i++)); do
	[[ $(sql "SHOW ssl") == on ]] && break
	sleep 0.2
done
it_check "server has ssl=on after the reload" test "$(sql "SHOW ssl")" = on

write_pass() { it_pgpass "$passfile" "*:$port:*:$role:$1"; }
# Every refusal comes at the first attempt: 30 s is plenty.
IT_RUN_TIMEOUT=30
IT_EXPECT_DIAG=1 # each refusal's ERROR line, also when it passes
# conf_for FILE CONNINFO [KEY=VALUE...]: a relay of this server's slot,
# no health endpoint, quick reconnects.
conf_for() {
	it_write_config "$1" "$db" "pg.conninfo=$2" http.listen= log.level=debug \
		reconnect.backoff.ms=100 reconnect.backoff.max.ms=300 "${@:3}"
}
write_pass "$pw"

tls="sslmode=verify-full sslrootcert=$certs/ca.crt"
base="port=$port dbname=$db user=$role"

# ---------------------------------------------------------------- (a)
type=t242_$tag
conf_for "$IT_TEST_DIR/a.conf" "host=localhost $base $tls channel_binding=require" \
	status.interval.ms=500 watchdog.interval.ms=500
log=$IT_TEST_DIR/a.log
PGPASSFILE=$passfile it_start_relay "$IT_TEST_DIR/a.conf" "$log"
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(a) verify-full + SCRAM + channel_binding=require: the relay streams"
else
	not_ok "(a) verify-full + SCRAM + channel_binding=require: the relay streams" \
		"$(it_show_log "$log")"
fi
IT_EVENTS_PORT=$port it_event "$db" "$type" agg-1 Tls '{"n": 1}'
if it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/a.json" 1 30; then
	ok "(a) an event written over TLS is published"
else
	not_ok "(a) an event written over TLS is published" "$(it_show_log "$log")"
fi
# Both of the relay's connections: the walsender and the watchdog's.
ssl_rows() {
	sql "SELECT a.application_name || ' ' || a.backend_type || ' ' || s.version
		FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
		WHERE a.usename = '$role' AND s.ssl ORDER BY 1"
}
for ((i = 0; i < 25; i++)); do
	[[ $(ssl_rows | grep -c .) -ge 2 ]] && break
	sleep 0.2
done
rows=$(ssl_rows)
it_diag "(a) pg_stat_ssl: ${rows//$'\n'/; }"
it_check "(a) the walsender's connection uses TLS" \
	grep -qE '^outbox-relay walsender TLSv1\.[23]' <<<"$rows"
it_check "(a) the watchdog's connection uses TLS" \
	grep -qE '^outbox-relay-watchdog client backend TLSv1\.[23]' <<<"$rows"
it_stop_checked "(a) relay exits 0 on SIGTERM"
it_check "(a) the password is not in the debug log" \
	bash -c '! grep -qiF -- "$1" "$2"' _ "$pw" "$log"

# The certificate's IP address entry: host=127.0.0.1 verifies too.
conf_for "$IT_TEST_DIR/a2.conf" "host=127.0.0.1 $base $tls"
log=$IT_TEST_DIR/a2.log
PGPASSFILE=$passfile it_start_relay "$IT_TEST_DIR/a2.conf" "$log"
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(a) host=127.0.0.1 (in the certificate's SAN) streams too"
else
	not_ok "(a) host=127.0.0.1 (in the certificate's SAN) streams too" \
		"$(it_show_log "$log")"
fi
it_stop_checked "(a) that relay exits 0 on SIGTERM"

# ---------------------------------------------------------------- (b)-(f)
conf_for "$IT_TEST_DIR/b.conf" \
	"host=localhost $base sslmode=verify-full sslrootcert=$certs/otherca.crt"
PGPASSFILE=$passfile it_run_relay b --config "$IT_TEST_DIR/b.conf"
it_expect_err b 78 "(b) a CA that did not sign the server's certificate" \
	'ERROR .*certificate verify failed' 'sslrootcert must hold the CA'

conf_for "$IT_TEST_DIR/c.conf" "host=wrong-name.invalid hostaddr=127.0.0.1 $base $tls"
PGPASSFILE=$passfile it_run_relay c --config "$IT_TEST_DIR/c.conf"
it_expect_err c 78 "(c) a host name the certificate does not name" \
	'ERROR .*does not match host name "wrong-name.invalid"' \
	'must be a name in the server.s certificate'

conf_for "$IT_TEST_DIR/d.conf" \
	"host=localhost $base sslmode=verify-full sslrootcert=$certs/no-such-ca.crt"
PGPASSFILE=$passfile it_run_relay d --config "$IT_TEST_DIR/d.conf"
it_expect_err d 78 "(d) sslrootcert names no file" 'ERROR .*root certificate file'

conf_for "$IT_TEST_DIR/e.conf" "host=localhost $base sslmode=disable"
PGPASSFILE=$passfile it_run_relay e --config "$IT_TEST_DIR/e.conf"
it_expect_err e 77 "(e) without TLS: pg_hba rejects the role" \
	'ERROR .*28000: pg_hba.conf rejects' 'no encryption'

write_pass wrong-password
conf_for "$IT_TEST_DIR/f.conf" "host=localhost $base $tls"
PGPASSFILE=$passfile it_run_relay f --config "$IT_TEST_DIR/f.conf"
it_expect_err f 77 "(f) a wrong password over TLS" \
	'ERROR .*28P01: password authentication failed'
write_pass "$pw"

# ---------------------------------------------------------------- (g)
sed -i "s|^ssl_cert_file = .*|ssl_cert_file = '$certs/server_dns.crt'|;
	s|^ssl_key_file = .*|ssl_key_file = '$certs/server_dns.key'|" \
	"$own/pg/data/postgresql.conf"
sql "SELECT pg_reload_conf()" >/dev/null
for ((i = 0; i < 25; i++)); do
	[[ $(sql "SHOW ssl_cert_file") == "$certs/server_dns.crt" ]] && break
	sleep 0.2
done
sleep 0.5 # the postmaster loads the new certificate on the reload
conf_for "$IT_TEST_DIR/g.conf" "host=127.0.0.1 $base $tls"
PGPASSFILE=$passfile it_run_relay g --config "$IT_TEST_DIR/g.conf"
it_expect_err g 78 "(g) certificate naming only localhost, host=127.0.0.1" \
	'ERROR .*does not match host name "127.0.0.1"'

conf_for "$IT_TEST_DIR/g2.conf" "host=localhost $base $tls"
log=$IT_TEST_DIR/g2.log
PGPASSFILE=$passfile it_start_relay "$IT_TEST_DIR/g2.conf" "$log"
if it_wait_log "$log" 'streaming from slot' 30; then
	ok "(g) ... host=localhost still streams with that certificate"
else
	not_ok "(g) ... host=localhost still streams with that certificate" \
		"$(it_show_log "$log")"
fi
it_stop_checked "(g) relay exits 0 on SIGTERM"

leaks=$(grep -lF -- "$pw" "$IT_TEST_DIR"/*.err "$IT_TEST_DIR"/*.out "$IT_TEST_DIR"/*.log \
	2>/dev/null || true)
it_check "the password is in no relay output" test -z "$leaks"

it_summary
