#!/usr/bin/env bash
# t120_kafka_down -- the broker is killed (SIGKILL) while the relay streams
# and stays down for more than 12 s while transactions keep committing,
# with wal_sender_timeout lowered to 5 s, status.interval.ms at its 10 s
# default and a small in-flight window (the relay stops reading once 50
# events wait for Kafka, so it cannot see reply requests). Asserts:
#  - confirmed_flush_lsn never reaches the commit end of the first
#    transaction written while Kafka was down (sampled every 0.5 s);
#  - the relay keeps its replication connection: PostgreSQL does not end
#    the walsender for replication timeout, the slot's active_pid never
#    changes, the relay log shows no new session, and the relay is alive;
#  - after kafka_restart every committed event arrives (checker, duplicates
#    allowed and reported) and confirmed_flush_lsn passes the last commit;
#  - SIGTERM still ends the relay with exit 0.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"

it_scenario t120_kafka_down
aggs=20
out=$IT_TEST_DIR/records.json
pglog=$IT_DIR/pg/postgres.log
samples=$IT_TEST_DIR/confirmed.samples
down_secs=14

# Whatever happens, later tests get a broker and the default timeout back.
restore_env() {
	it_sql postgres "ALTER SYSTEM RESET wal_sender_timeout" >/dev/null 2>&1 || true
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	if ! _env_pid_alive "$(cat "$IT_DIR/kafka/kafka.pid" 2>/dev/null || true)"; then
		kafka_restart "$IT_DIR" || true
	fi
}
env_on_cleanup restore_env

load_init "$db" "$type" "$aggs"
pgbench() { # CLIENTS TXNS_PER_CLIENT RATE
	"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
		-f "$IT_TEST_DIR/writer.pgbench" -c "$1" -j 1 -t "$2" -R "$3" "$db"
}

it_sql postgres "ALTER SYSTEM SET wal_sender_timeout = '5s'" >/dev/null
it_sql postgres "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
it_check "wal_sender_timeout is 5s" \
	test "$(it_sql postgres "SHOW wal_sender_timeout")" = 5s

# status.interval.ms stays at its default (10 s, twice wal_sender_timeout):
# with reads paused the relay cannot see the walsender's reply requests,
# so only its own paused-stream status timer keeps the connection alive.
# At 500 ms the timeout check below would prove nothing.
it_write_config "$conf" "$db" status.interval.ms=10000 stats.interval.ms=1000 \
	inflight.max.events=50 kafka.reconnect.backoff.max.ms=1000
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30

# -- before: some events through, the topic exists
pgbench 2 25 100 >"$IT_TEST_DIR/pgbench.pre.log" 2>&1
load_check "$topic" 60
rc=$LOAD_RC
it_check "events before the outage arrived" test "$rc" -eq 0
wpid=$(it_sql "$db" "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$db'")
pglog_off=$(stat -c %s "$pglog")
log_off=$(stat -c %s "$log")

# -- Kafka down
kafka_stop_hard "$IT_DIR"
t_down=$SECONDS
it_diag "kafka killed; walsender pid $wpid"
# The first transaction while Kafka is down, on its own; its xid is how
# its events are found in Kafka afterwards.
xid1=$(it_sql "$db" "SELECT emit(1)")
xid1=$((xid1 % 4294967296))
pgbench 2 100 40 >"$IT_TEST_DIR/pgbench.down.log" 2>&1 &
bench_pid=$!
# Exact bound: a confirmed position at or past E1, the commit end LSN of
# that first transaction, would tell PostgreSQL that its events are in
# Kafka -- impossible with the broker dead. Anything below E1 is legitimate
# (the last pre-outage commit end, a keepalive position while nothing was
# in flight). E1 itself is only known afterwards: it is the pg_lsn header
# of that transaction's events (wal2json's nextlsn of the commit). A
# pg_current_wal_lsn() taken after its COMMIT is >= E1 (other WAL may
# follow) and would leave [E1, that) unchecked; so the samples are kept
# and compared with E1 once the events have arrived.
: >"$samples"
for ((i = 0; i < 60; i++)); do
	it_sql "$db" "SELECT coalesce(confirmed_flush_lsn::text, '-'),
		coalesce(active_pid::text, '-') FROM pg_replication_slots
		WHERE slot_name = '$db'" >>"$samples" || true
	((SECONDS - t_down < down_secs)) || break
	sleep 0.5
done
bench_rc=0
wait "$bench_pid" || bench_rc=$?
it_check "writer committed while Kafka was down" test "$bench_rc" -eq 0
it_diag "kafka down for $((SECONDS - t_down)) s, $(grep -c . "$samples") samples"

it_check "relay alive while Kafka is down" it_relay_alive
timeouts=$(tail -c +$((pglog_off + 1)) "$pglog" |
	grep -c 'terminating walsender process due to replication timeout' || true)
it_check "walsender not ended for replication timeout (wal_sender_timeout 5s)" \
	test "$timeouts" = 0
pids=$(cut -d'|' -f2 "$samples" | sort -u | tr '\n' ' ')
it_check "slot held by the same walsender all along (active_pid $wpid)" \
	test "$pids" = "$wpid "
sessions=$(tail -c +$((log_off + 1)) "$log" |
	grep -cE 'streaming from slot|replaying from slot|retrying in' || true)
it_check "relay did not reconnect while Kafka was down" test "$sessions" = 0
if it_eos; then
	# Exactly-once stops reading at a PostgreSQL commit once the Kafka
	# transaction is due, until it commits: the window need not fill. The
	# pause shows as stats lines (one a second) with the same received=
	# and events in flight, for most of the outage.
	paused=$(tail -c +$((log_off + 1)) "$log" |
		sed -n 's/.*stats: .* received=\([0-9]*\) .* inflight=\([1-9][0-9]*\) .*/\1/p' |
		uniq -c | sort -rn | awk 'NR == 1 {print $1}')
	it_check "reads were paused waiting for the Kafka commit (received= unchanged, events in flight, in ${paused:-0} stats lines in a row)" \
		test "${paused:-0}" -ge $((down_secs / 2))
else
	paused=$(tail -c +$((log_off + 1)) "$log" | grep -c 'stats: .* inflight=50 ' || true)
	it_check "reads were paused with the window full (stats inflight=50)" test "$paused" -gt 0
fi
if ((timeouts + sessions > 0)) || [[ $pids != "$wpid " ]]; then
	it_diag "$(tail -c +$((pglog_off + 1)) "$pglog" | grep -i walsender | tail -n 5)"
	it_diag "$(tail -c +$((log_off + 1)) "$log" | grep -vE 'stats:|kafka: ' | tail -n 10)"
fi

# -- Kafka back
if kafka_restart "$IT_DIR"; then
	ok "kafka restarted after $((SECONDS - t_down)) s"
else
	not_ok "kafka restarted"
fi
load_check "$topic" 90
committed=$LOAD_COMMITTED rc=$LOAD_RC summary=$LOAD_SUMMARY
if ((rc == 0)); then
	ok "checker: all $committed events arrived, in order, none rolled back"
else
	not_ok "checker: all $committed events arrived, in order, none rolled back" \
		"exit $rc: $(head -n 40 "$out.check")
$(it_show_log "$log" 20)"
fi
it_diag "$summary"
load_row broker-stop 1
# Duplicates are allowed; if the relay replayed, say why.
replayed=$(tail -c +$((log_off + 1)) "$log" |
	grep -E 'delivery failed|fatal|replaying from slot|restart' | grep -v 'stats:' |
	head -n 5 | cut -c1-300 || true)
[[ -z $replayed ]] || it_diag "relay after the outage: $replayed"

e1=$(it_fields "$out" h:pg_xid h:pg_lsn | awk -F'\t' -v x="$xid1" '$1 == x {print $2}' |
	sort -u)
if [[ $e1 =~ ^[0-9A-F]+/[0-9A-F]+$ ]]; then
	reached=
	while IFS='|' read -r c _; do
		[[ $c == - ]] && continue
		if lsn_ge "$c" "$e1"; then
			reached+="$c "
		fi
	done <"$samples"
	first=$(head -n1 "$samples" | cut -d'|' -f1)
	last=$(tail -n1 "$samples" | cut -d'|' -f1)
	it_diag "first down transaction xid $xid1 ends at $e1; confirmed while down: $first .. $last"
	if [[ -z $reached ]]; then
		ok "confirmed_flush_lsn stayed below the first down transaction's commit end while Kafka was down"
	else
		not_ok "confirmed_flush_lsn stayed below the first down transaction's commit end while Kafka was down" \
			"samples at or past $e1: $reached"
	fi
else
	not_ok "commit end of the first down transaction (xid $xid1) found" "pg_lsn: '$e1'"
fi

it_check_confirmed_past "$db" "$summary" "confirmed_flush_lsn passed the last outbox commit" " after Kafka came back"

it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"
restore_env
it_check "wal_sender_timeout restored" \
	test "$(it_sql postgres "SHOW wal_sender_timeout")" != 5s

it_summary
