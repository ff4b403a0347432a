#!/usr/bin/env bash
# t225_pg_permanent_errors -- errors at connect that no retry can fix stop
# the relay (so a supervisor or a pod's restart count shows them) instead
# of retrying forever at WARN with health ok. On a cluster of the test's
# own, with password (SCRAM) and reject lines in its pg_hba.conf:
#  (a) wrong password (28P01): exit 77 at the first attempt, the log names
#      the SQLSTATE and says where the password comes from;
#  (b) pg_hba reject (28000): exit 77;
#  (c) a role without REPLICATION (42501 at connect): exit 77;
#  (d) an unknown database (3D000): exit 78;
#  (e) an option libpq refuses (port=abc): exit 78;
#  (f) a running relay whose password is changed under it (rotation): it
#      retries pg.permanent.error.retries=3 times (WARN "attempt N of 3"),
#      then exits 77;
#  (g) still transient: the server stopped (connection refused): the
#      relay keeps retrying, and streams again once it is back.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=own_pg.sh
source "$(dirname "$0")/own_pg.sh"

port=$((PGPORT + 12))
db=t225_perm
own_pg_start "$port" "$db"
own_sql "CREATE ROLE t225_pw LOGIN REPLICATION PASSWORD 'right';
	CREATE ROLE t225_rej LOGIN REPLICATION;
	CREATE ROLE t225_norep LOGIN;
	GRANT SELECT ON pg_catalog.pg_replication_slots TO t225_norep;" >/dev/null
hba=$OWN/pg/data/pg_hba.conf
{
	echo "host all t225_pw 127.0.0.1/32 scram-sha-256"
	echo "host all t225_rej 127.0.0.1/32 reject"
	cat "$hba"
} >"$hba.new"
mv "$hba.new" "$hba"
chown postgres:postgres "$hba" 2>/dev/null || true
own_sql "SELECT pg_reload_conf()" >/dev/null
sleep 0.5

passfile=$IT_TEST_DIR/pgpass
write_pass() { it_pgpass "$passfile" "127.0.0.1:$port:*:t225_pw:$1"; }
# Every refusal comes at the first attempt: 30 s is plenty.
IT_RUN_TIMEOUT=30
# conf_for FILE CONNINFO [KEY=VALUE...]: a relay of this server's slot,
# no health endpoint, quick reconnects.
conf_for() {
	it_write_config "$1" "$db" "pg.conninfo=$2" http.listen= \
		reconnect.backoff.ms=100 reconnect.backoff.max.ms=300 "${@:3}"
}
base="host=127.0.0.1 port=$port dbname=$db"

write_pass wrong
conf_for "$IT_TEST_DIR/a.conf" "$base user=t225_pw"
PGPASSFILE=$passfile it_run_relay a --config "$IT_TEST_DIR/a.conf"
it_expect_err a 77 "(a) wrong password" 'ERROR .*28P01: password authentication failed' 'PGPASSFILE'
it_check "(a) stopped at the first attempt (no retry line)" \
	bash -c '! grep -q "attempt 1 of" "$1"' _ "$IT_TEST_DIR/a.err"

conf_for "$IT_TEST_DIR/b.conf" "$base user=t225_rej"
PGPASSFILE=$passfile it_run_relay b --config "$IT_TEST_DIR/b.conf"
it_expect_err b 77 "(b) pg_hba reject" 'ERROR .*28000: pg_hba.conf rejects'

conf_for "$IT_TEST_DIR/c.conf" "$base user=t225_norep"
PGPASSFILE=$passfile it_run_relay c --config "$IT_TEST_DIR/c.conf"
it_expect_err c 77 "(c) role without REPLICATION" 'ERROR .*42501: .*replication' 'REPLICATION attribute'

conf_for "$IT_TEST_DIR/d.conf" "host=127.0.0.1 port=$port dbname=t225_nope user=postgres"
PGPASSFILE=$passfile it_run_relay d --config "$IT_TEST_DIR/d.conf"
it_expect_err d 78 "(d) unknown database" 'ERROR .*3D000: database "t225_nope" does not exist'

conf_for "$IT_TEST_DIR/e.conf" "host=127.0.0.1 port=abc dbname=$db user=postgres"
PGPASSFILE=$passfile it_run_relay e --config "$IT_TEST_DIR/e.conf"
it_expect_err e 78 "(e) port=abc" 'ERROR .*invalid integer value "abc" for connection option "port"'

# ------------------------------------------------------------------ (f)
write_pass right
conf_for "$IT_TEST_DIR/f.conf" "$base user=t225_pw"
log=$IT_TEST_DIR/f.log
PGPASSFILE=$passfile it_start_relay "$IT_TEST_DIR/f.conf" "$log"
pid=$IT_RELAY_PID
ok_stream=
for ((i = 0; i < 100; i++)); do
	grep -q 'streaming from slot' "$log" && ok_stream=1 && break
	sleep 0.2
done
it_check "(f) relay streams with the right password" test -n "$ok_stream"
own_sql "ALTER ROLE t225_pw PASSWORD 'rotated'" >/dev/null
own_sql "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
	WHERE slot_name = '$db' AND active" >/dev/null
for ((i = 0; i < 300; i++)); do _env_pid_alive "$pid" || break; sleep 0.1; done
rc=running
if ! _env_pid_alive "$pid"; then
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
else
	kill -9 "$pid" 2>/dev/null || true
fi
it_check "(f) after 3 attempts with the old password: exit 77 (got $rc)" test "$rc" = 77
it_check "(f) attempts 1 and 2 of 3 logged as warnings" \
	bash -c 'grep -q "WARN .*28P01.*attempt 1 of 3" "$1" && grep -q "WARN .*attempt 2 of 3" "$1"' _ "$log"

# ------------------------------------------------------------------ (g)
conf_for "$IT_TEST_DIR/g.conf" "$base user=postgres"
log=$IT_TEST_DIR/g.log
it_start_relay "$IT_TEST_DIR/g.conf" "$log"
pid=$IT_RELAY_PID
for ((i = 0; i < 100; i++)); do grep -q 'streaming from slot' "$log" && break; sleep 0.2; done
pg_stop "$OWN"
sleep 5
it_check "(g) server down: the relay keeps retrying" _env_pid_alive "$pid"
it_check "(g) ... at WARN, connection refused" grep -q 'WARN .*Connection refused.*retrying' "$log"
pg_launch "$OWN"
n=0
for ((i = 0; i < 100; i++)); do
	n=$(grep -c 'streaming from slot' "$log" || true)
	((n >= 2)) && break
	sleep 0.2
done
it_check "(g) streams again once the server is back" test "$n" -ge 2
it_stop_checked "(g) relay exits 0 on SIGTERM"

it_summary
