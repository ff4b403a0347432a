#!/usr/bin/env bash
# t555_tcp_proxy -- the fault proxy itself (build/tcp-proxy, driven by
# proxy.sh) in front of PostgreSQL, with psql and pg_recvlogical as
# clients, before t570-t594 trust it with the relay:
#  - pass forwards; delay 300 makes a query take at least one round trip
#    of 2 x 300 ms; blackhole makes a new connection time out and pass
#    lets it through again; refuse refuses and accept accepts;
#  - reset ends a running query at once and its backend goes away;
#  - close_after 100 cuts the start-up exchange after 100 server bytes;
#  - blackhole_after_ready 2 answers the start-up and one query, then
#    nothing;
#  - inject_error: pg_recvlogical reads the ErrorResponse as the server's
#    ERROR with its text and exits, and the slot becomes inactive (the
#    walsender saw the server side close); with no stream it is an error;
#  - stats counts what happened; unknown commands are errors; quit ends
#    the proxy with exit 0.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=proxy.sh
source "$(dirname "$0")/proxy.sh"
it_init

db=t555_tcp_proxy
it_setup_db "$db"
it_sql "$db" "CREATE TABLE t (i int, pad text)"

proxy_start_pg
ok "tcp-proxy starts and listens on port $PROXY_PORT"

# via SQL [CONNECT_TIMEOUT]: psql through the proxy; output and status.
via() {
	PGCONNECT_TIMEOUT=${2:-5} "$PG_BIN/psql" -h 127.0.0.1 -p "$PROXY_PORT" \
		-U postgres -d "$db" -X -q -At -v ON_ERROR_STOP=1 -c "$1" 2>&1
}
ms() { echo $(($(date +%s%N) / 1000000)); }

it_check "pass: a query through the proxy" test "$(via 'SELECT 40 + 2')" = 42

proxy_cmd "delay 300"
t0=$(ms)
out=$(via 'SELECT 1') || true
took=$(($(ms) - t0))
if [[ $out == 1 ]] && ((took >= 600)); then
	ok "delay 300: the query still works and took ${took} ms (>= 600)"
else
	not_ok "delay 300: the query works and takes >= 600 ms" "took ${took} ms: $out"
fi
proxy_cmd pass

proxy_cmd blackhole
t0=$(ms)
out=$(via 'SELECT 1' 2) && rc=0 || rc=$?
took=$(($(ms) - t0))
if ((rc != 0)) && ((took < 8000)); then
	ok "blackhole: a new connection times out (${took} ms: ${out//$'\n'/ })"
else
	not_ok "blackhole: a new connection times out" "exit $rc after ${took} ms: $out"
fi
proxy_cmd pass
it_check "pass after blackhole: queries work again" test "$(via 'SELECT 2')" = 2

proxy_cmd refuse
out=$(via 'SELECT 1') && rc=0 || rc=$?
if ((rc != 0)) && [[ $out == *"Connection refused"* ]]; then
	ok "refuse: connection refused"
else
	not_ok "refuse: connection refused" "exit $rc: $out"
fi
proxy_cmd accept
it_check "accept: queries work again" test "$(via 'SELECT 3')" = 3

# reset: a query that would run 20 s ends at once, and so does its backend
# (which checks its socket every 100 ms while the query runs).
via "SET client_connection_check_interval = 100; SELECT pg_sleep(20) /* t555 reset */" >"$IT_TEST_DIR/reset.out" 2>&1 &
sleeper=$!
for ((i = 0; i < 50; i++)); do
	[[ $(it_sql "$db" "SELECT count(*) FROM pg_stat_activity
		WHERE query LIKE '%t555 reset%' AND pid <> pg_backend_pid()") == 1 ]] && break
	sleep 0.1
done
t0=$(ms)
proxy_cmd reset
rc=0
wait "$sleeper" || rc=$?
took=$(($(ms) - t0))
if ((rc != 0 && took < 3000)); then
	ok "reset: the running query's client sees the connection end within ${took} ms ($(head -n1 "$IT_TEST_DIR/reset.out"))"
else
	not_ok "reset: the client sees the connection end at once" "exit $rc after ${took} ms: $(cat "$IT_TEST_DIR/reset.out")"
fi
gone=
for ((i = 0; i < 50; i++)); do
	if [[ $(it_sql "$db" "SELECT count(*) FROM pg_stat_activity
		WHERE query LIKE '%t555 reset%' AND pid <> pg_backend_pid()") == 0 ]]; then
		gone=1
		break
	fi
	sleep 0.1
done
it_check "reset: the server's backend is gone too" test -n "$gone"

proxy_cmd "close_after 100"
out=$(via 'SELECT 4') && rc=0 || rc=$?
if ((rc != 0)); then
	ok "close_after 100: the start-up is cut (${out//$'\n'/ })"
else
	not_ok "close_after 100: the start-up is cut" "$out"
fi
proxy_cmd pass
it_check "pass after close_after: queries work again" test "$(via 'SELECT 5')" = 5

# blackhole_after_ready: the start-up passes, then the server goes silent.
proxy_cmd "blackhole_after_ready 2 new"
out=$(PGCONNECT_TIMEOUT=5 timeout 4 "$PG_BIN/psql" -h 127.0.0.1 -p "$PROXY_PORT" \
	-U postgres -d "$db" -X -q -At -c 'SELECT 6' -c 'SELECT 7' 2>&1) && rc=0 || rc=$?
if ((rc == 124)) && [[ $out == 6 ]]; then
	ok "blackhole_after_ready 2: the first query is answered, the second never"
else
	not_ok "blackhole_after_ready 2: the first query is answered, the second never" "exit $rc: $out"
fi
proxy_cmd pass
it_check "pass after blackhole_after_ready: queries work again" test "$(via 'SELECT 8')" = 8

# inject_error on a live logical replication stream.
rc=0
proxy_cmd inject_error 2>/dev/null || rc=$?
it_check "inject_error without a stream is an error" test "$rc" -eq 1
it_sql "$db" "SELECT pg_create_logical_replication_slot('t555_slot', 'test_decoding')" >/dev/null
"$PG_BIN/pg_recvlogical" -h 127.0.0.1 -p "$PROXY_PORT" -U postgres -d "$db" \
	-S t555_slot --start --no-loop -s 1 -f "$IT_TEST_DIR/recv.out" \
	2>"$IT_TEST_DIR/recv.err" &
recv=$!
it_check "pg_recvlogical streams through the proxy" proxy_wait_stat streaming 1 15
it_sql "$db" "INSERT INTO t SELECT g, repeat('x', 300) FROM generate_series(1, 3000) AS g"
sleep 0.5
rc=0
proxy_cmd "inject_error t555: injected decoding failure" || rc=$?
it_check "inject_error on the stream: ok" test "$rc" -eq 0
ended=
for ((i = 0; i < 100; i++)); do
	_env_pid_alive "$recv" || { ended=1; break; }
	sleep 0.1
done
rc=0
wait "$recv" || rc=$?
if [[ -n $ended ]] && grep -q 'ERROR:  t555: injected decoding failure' "$IT_TEST_DIR/recv.err"; then
	ok "pg_recvlogical ends on the injected ERROR (exit $rc): $(grep -m1 'ERROR' "$IT_TEST_DIR/recv.err")"
else
	[[ -n $ended ]] || kill "$recv" 2>/dev/null || true
	not_ok "pg_recvlogical ends on the injected ERROR" "$(cat "$IT_TEST_DIR/recv.err")"
fi
inactive=
for ((i = 0; i < 50; i++)); do
	[[ $(it_sql "$db" "SELECT active FROM pg_replication_slots
		WHERE slot_name = 't555_slot'") == f ]] && { inactive=1; break; }
	sleep 0.1
done
it_check "the walsender saw the server side close: slot inactive" test -n "$inactive"

proxy_cmd stats
it_diag "stats: $PROXY_ANSWER"
it_check "stats: resets=1 cuts=1 injected=1" \
	grep -q 'resets=1 cuts=1 injected=1 ' <<<"$PROXY_ANSWER"
rc=0
proxy_cmd "no_such_command" 2>/dev/null || rc=$?
it_check "an unknown command is an error" test "$rc" -eq 1
rc=0
proxy_cmd "delay -5" 2>/dev/null || rc=$?
it_check "a bad argument is an error" test "$rc" -eq 1
rc=0
proxy_stop || rc=$?
it_check "quit: tcp-proxy exits 0" test "$rc" -eq 0
it_sql "$db" "SELECT pg_drop_replication_slot('t555_slot')" >/dev/null || true

it_summary
