#!/usr/bin/env bash
# tests/env/demo.sh -- `make demo`: outbox-relay end to end on throwaway
# servers, the way an application would use it.
#
#   1. PostgreSQL 15 (port 25440) and a Kafka broker (port 19140) in a temp
#      dir under ${TMPDIR:-/tmp}; sql/outbox.sql + tests/env/demo.sql.
#   2. The replication slot is created here, explicitly: the relay never
#      creates one.
#   3. build/outbox-relay starts with a config file, logging to a file.
#   4. Orders are written as an application would: each business change
#      and its outbox event in one transaction; some transactions roll
#      back, one deletes its outbox row before committing.
#   5. The events are read back from Kafka with kcat and shown per order;
#      the slot's confirmed_flush_lsn is compared with the WAL position.
#   6. SIGTERM stops the relay, which must exit 0.
#   7. With Node.js >= 20.19: the TypeScript pair of examples/typescript
#      (tests/env/demo_ts.sh): a Prisma service, a relay on its "Outbox"
#      table, a consumer applying the events once through the inbox.
#
# Exits non-zero if an expected event is missing, a rolled-back one shows
# up, an order's events are out of order, or the relay fails. Everything
# started is stopped on exit and on Ctrl-C. DEMO_KEEP=1 keeps the temp dir;
# DEMO_PGPORT, DEMO_KAFKA_PORT, DEMO_WAIT (seconds) and RELAY_BIN override
# the defaults.
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=lib.sh
source tests/env/lib.sh

pgport=${DEMO_PGPORT:-25440}
kport=${DEMO_KAFKA_PORT:-19140}
httpport=${DEMO_HTTP_PORT:-18140}
wait_secs=${DEMO_WAIT:-30}
relay_bin=${RELAY_BIN:-build/outbox-relay}
db=outbox
slot=outbox_relay
topic=outbox.event.order
brokers=127.0.0.1:$kport

step() { printf '\n==> %s\n' "$*"; }
die() {
	echo "demo: $*" >&2
	exit 1
}

[[ -x $relay_bin ]] || die "$relay_bin is not built (run: make)"
[[ -z ${DEMO_KEEP:-} ]] || export ENV_KEEP_TMP=1

env_trap_cleanup
dir=$(env_mktemp outbox-relay-demo)
env_register_tmpdir "$dir"

relay_pid=
# Runs first at cleanup (before the servers stop): a relay left behind
# by Ctrl-C or a failure is stopped too.
stop_leftover_relay() {
	if [[ -n $relay_pid ]] && _env_pid_alive "$relay_pid"; then
		kill -TERM "$relay_pid" 2>/dev/null || true
		_env_wait_pid_gone "$relay_pid" 15 || kill -9 "$relay_pid" 2>/dev/null || true
	fi
}
env_on_cleanup stop_leftover_relay

# stop_relay: SIGTERM to relay_pid, 30 s to exit (then SIGKILL and
# failed=1); STOP_RC its exit status. Both parts of the demo stop so.
stop_relay() {
	local i
	kill -TERM "$relay_pid" 2>/dev/null || true
	for ((i = 0; i < 30 * 10; i++)); do
		_env_pid_alive "$relay_pid" || break
		sleep 0.1
	done
	if _env_pid_alive "$relay_pid"; then
		echo "the relay did not exit within 30s of SIGTERM; killing it"
		kill -9 "$relay_pid" 2>/dev/null || true
		failed=1
	fi
	STOP_RC=0
	wait "$relay_pid" || STOP_RC=$?
	relay_pid=
}

# ------------------------------------------------------------ servers, schema
step "Starting PostgreSQL on 127.0.0.1:$pgport and Kafka on $brokers (in $dir)"
pg_start "$dir" "$pgport" "$db"
kafka_start "$dir" "$kport"

step "Applying sql/outbox.sql and tests/env/demo.sql, creating slot $slot"
psql_f "$pgport" "$db" sql/outbox.sql
psql_f "$pgport" "$db" tests/env/demo.sql
psql_q "$pgport" "$db" \
	"SELECT pg_create_logical_replication_slot('$slot', 'wal2json')" >/dev/null
psql_q "$pgport" "$db" "SELECT 'slot ' || slot_name || ': plugin ' || plugin
	|| ', confirmed_flush_lsn ' || confirmed_flush_lsn
	FROM pg_replication_slots WHERE slot_name = '$slot'"

# ------------------------------------------------------------ relay
cfg=$dir/relay.conf
relay_log=$dir/relay.log
cat >"$cfg" <<EOF
# outbox-relay demo configuration (tests/env/demo.sh)
pg.conninfo = host=127.0.0.1 port=$pgport dbname=$db user=postgres
kafka.bootstrap.servers = $brokers
slot.name = $slot
status.interval.ms = 1000
http.listen = 127.0.0.1:$httpport
heartbeat.interval.ms = 5000
watchdog.interval.ms = 2000
EOF

step "Starting $relay_bin --config $cfg (log: $relay_log)"
sed 's/^/    /' "$cfg"
"$relay_bin" --config "$cfg" </dev/null >"$relay_log" 2>&1 &
relay_pid=$!

# The relay is streaming once the slot is active; give up if it exits.
for ((i = 0; i < wait_secs * 5; i++)); do
	_env_pid_alive "$relay_pid" || break
	[[ $(psql_q "$pgport" "$db" "SELECT active FROM pg_replication_slots
		WHERE slot_name = '$slot'") == t ]] && break
	sleep 0.2
done
if ! _env_pid_alive "$relay_pid"; then
	rc=0
	wait "$relay_pid" || rc=$?
	relay_pid=
	_env_tail "$relay_log" 40
	die "the relay exited with status $rc before streaming"
fi
[[ $(psql_q "$pgport" "$db" "SELECT active FROM pg_replication_slots
	WHERE slot_name = '$slot'") == t ]] || {
	_env_tail "$relay_log" 40
	die "the relay did not attach to slot $slot within ${wait_secs}s"
}
echo "relay pid $relay_pid is streaming from slot $slot"

# ------------------------------------------------------------ application
step "Writing orders the way an application does (change + event, one transaction)"

# txn LABEL < SQL: one psql session; the SQL holds BEGIN and COMMIT/ROLLBACK.
txn() {
	printf '  %-60s' "$1"
	psql_f "$pgport" "$db" - >/dev/null
	echo "$2"
}

# event AGG_ID TYPE STATUS: the outbox insert; the payload carries the order.
event() {
	cat <<-EOF
	INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	SELECT 'order', id, '$2', jsonb_build_object('order_id', id,
	    'customer', customer, 'amount', amount, 'status', '$3')
	FROM orders WHERE id = '$1';
	EOF
}

create_order() { # ID CUSTOMER AMOUNT
	echo "INSERT INTO orders VALUES ('$1', '$2', $3, 'created');"
	event "$1" OrderCreated created
}

set_status() { # ID STATUS EVENT_TYPE
	echo "UPDATE orders SET status = '$2' WHERE id = '$1';"
	event "$1" "$3" "$2"
}

txn "o-1 created (alice, 120.50)" committed <<EOF
BEGIN; $(create_order o-1 alice 120.50) COMMIT;
EOF
txn "o-2 created (bob, 35.00)" committed <<EOF
BEGIN; $(create_order o-2 bob 35.00) COMMIT;
EOF
txn "o-1 paid" committed <<EOF
BEGIN; $(set_status o-1 paid OrderPaid) COMMIT;
EOF
txn "o-3 created (carol, 99.90)" committed <<EOF
BEGIN; $(create_order o-3 carol 99.90) COMMIT;
EOF
txn "o-4 created (dave, 10.00)" "ROLLED BACK: no event may appear" <<EOF
BEGIN; $(create_order o-4 dave 10.00) ROLLBACK;
EOF
txn "o-2 paid" committed <<EOF
BEGIN; $(set_status o-2 paid OrderPaid) COMMIT;
EOF
txn "o-1 shipped" committed <<EOF
BEGIN; $(set_status o-1 shipped OrderShipped) COMMIT;
EOF
txn "o-3 paid and o-2 shipped, one transaction" committed <<EOF
BEGIN; $(set_status o-3 paid OrderPaid) $(set_status o-2 shipped OrderShipped) COMMIT;
EOF
txn "o-3 shipped" "ROLLED BACK: no event may appear" <<EOF
BEGIN; $(set_status o-3 shipped OrderShipped) ROLLBACK;
EOF
# The outbox row is deleted before commit, so the table stays empty; the
# insert is still in the WAL, so the event must still be published.
txn "o-3 cancelled, outbox row deleted in the same transaction" committed <<EOF
BEGIN; $(set_status o-3 cancelled OrderCancelled)
DELETE FROM outbox WHERE aggregate_id = 'o-3' AND event_type = 'OrderCancelled';
COMMIT;
EOF
last_lsn=$(psql_q "$pgport" "$db" "SELECT pg_current_wal_lsn()")
echo "  outbox rows left in the table: $(psql_q "$pgport" "$db" "SELECT count(*) FROM outbox")"

# What each order's partition must hold, in this order; nothing else.
declare -A expected=(
	[o-1]="OrderCreated OrderPaid OrderShipped"
	[o-2]="OrderCreated OrderPaid OrderShipped"
	[o-3]="OrderCreated OrderPaid OrderCancelled"
)
want=9

# ------------------------------------------------------------ consume
step "Reading $topic back with kcat (waiting up to ${wait_secs}s for $want events)"
out=$dir/consumed.txt
fmt='topic=%t partition=%p offset=%o key=%k headers=%h payload=%s\n'
got=0
deadline=$((SECONDS + wait_secs))
while :; do
	# A topic that does not exist yet is an error for kcat: count it as 0.
	if timeout 20 kcat -b "$brokers" -C -t "$topic" -o beginning -e -q \
		-f "$fmt" >"$out" 2>"$dir/kcat.err"; then
		got=$(grep -c '^topic=' "$out" || true)
	fi
	((got >= want || SECONDS >= deadline)) && break
	sleep 1
done

failed=0
for key in o-1 o-2 o-3 o-4; do
	[[ $key == o-4 ]] && printf '\n%s (rolled back: expected nothing)\n' "$key" ||
		printf '\n%s (expected: %s)\n' "$key" "${expected[$key]}"
	# Same key, same partition: offset order is the order of delivery.
	grep -F " key=$key " "$out" | sort -t' ' -k3,3V | sed 's/^/    /' || true
done

# Per order: the event_type headers in offset order.
for key in "${!expected[@]}"; do
	seen=$(grep -F " key=$key " "$out" | sort -t' ' -k3,3V |
		sed -n 's/.*[ ,=]event_type=\([^, ]*\).*/\1/p' | paste -sd' ' || true)
	if [[ $seen != "${expected[$key]}" ]]; then
		echo "MISMATCH $key: got '${seen}', expected '${expected[$key]}'"
		failed=1
	fi
done
if grep -qF " key=o-4 " "$out"; then
	echo "MISMATCH: an event of the rolled-back order o-4 was published"
	failed=1
fi
echo
echo "events in $topic: $got of $want expected"
if ((got != want)); then
	failed=1
	[[ ! -s $dir/kcat.err ]] || sed 's/^/    kcat: /' "$dir/kcat.err"
fi

# ------------------------------------------------------------ LSNs
step "Replication slot progress"
# The relay confirms an LSN only after Kafka acknowledged everything before
# it, and reports it on its status interval: give it a little time.
confirmed=
for ((i = 0; i < 15 * 5; i++)); do
	confirmed=$(psql_q "$pgport" "$db" "SELECT confirmed_flush_lsn
		FROM pg_replication_slots WHERE slot_name = '$slot'")
	[[ $(psql_q "$pgport" "$db" \
		"SELECT '$confirmed'::pg_lsn >= '$last_lsn'::pg_lsn") == t ]] && break
	sleep 0.2
done
psql_q "$pgport" "$db" "SELECT 'confirmed_flush_lsn ' || confirmed_flush_lsn
	|| ', pg_current_wal_lsn ' || pg_current_wal_lsn()
	|| ', WAL after the last outbox commit ' || '$last_lsn'
	|| ', not yet confirmed: '
	|| pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn))
	FROM pg_replication_slots WHERE slot_name = '$slot'"
if [[ $(psql_q "$pgport" "$db" "SELECT '$confirmed'::pg_lsn >= '$last_lsn'::pg_lsn") == t ]]; then
	echo "every committed event is confirmed to PostgreSQL"
else
	echo "note: confirmed_flush_lsn has not reached $last_lsn yet"
fi

# ------------------------------------------------------------ stop
step "Slot health from the relay's endpoint (http://127.0.0.1:$httpport)"
sleep 2 # one watchdog sample after the last write
for path in readyz metrics; do
	code=$(curl -s -o "$dir/$path.out" -w '%{http_code}' "http://127.0.0.1:$httpport/$path" || true)
	echo "    GET /$path -> $code"
done
sed 's/^/    /' "$dir/readyz.out"
grep -E '^outbox_relay_(events_published_total|slot_retained_wal_bytes|slot_confirmed_lag_bytes|health_state|heartbeats_total) ' \
	"$dir/metrics.out" | sed 's/^/    /' || true
curl -s "http://127.0.0.1:$httpport/slot?pretty=1" >"$dir/slot.json" || true
python3 - "$dir/slot.json" <<'PY' || true
import json, sys
s = json.load(open(sys.argv[1]))
srv, rel = s.get("server") or {}, s["relay"]
print(f"    /slot: state={s['state']} wal_status={srv.get('wal_status')} "
      f"retained={srv.get('retained_wal_bytes')} B confirmed_lag={srv.get('confirmed_lag_bytes')} B "
      f"published={rel['events_published']} confirmed={rel['confirmed_lsn']} "
      f"heartbeat_rtt={rel.get('heartbeat_rtt_seconds')} s")
PY

step "Stopping the relay with SIGTERM"
stop_relay
rc=$STOP_RC
echo "relay exit status: $rc"
((rc == 0)) || failed=1
psql_q "$pgport" "$db" "SELECT 'after shutdown: confirmed_flush_lsn '
	|| confirmed_flush_lsn || ', active ' || active
	FROM pg_replication_slots WHERE slot_name = '$slot'"

step "Relay log ($relay_log, last 40 lines)"
tail -n 40 "$relay_log" | sed 's/^/    /'

# shellcheck source=demo_ts.sh
source tests/env/demo_ts.sh
demo_ts

echo
if ((failed)); then
	echo "demo FAILED (see above)"
	exit 1
fi
echo "demo OK: $got events, in order per order id, rolled-back work not published"
