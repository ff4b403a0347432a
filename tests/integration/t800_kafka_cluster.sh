#!/usr/bin/env bash
# t800_kafka_cluster -- a replicated Kafka cluster under load: three KRaft
# nodes of the test's own (tests/env/kafka_cluster.sh; broker and
# controller each, a three-voter quorum) on loopback, ports KAFKA_PORT+20
# .. +25 (T800_KAFKA_BASE), with the run's PostgreSQL. Topics have
# replication factor 3, min.insync.replicas = 2 and
# unclean.leader.election.enable = false (broker defaults, and set on the
# outbox topic too); the relay produces with its defaults (acks=all,
# idempotence). While a writer commits (checker.py --rich: a ledger row
# in every transaction, rollbacks, two-aggregate transactions):
#  - three rounds: kill -9 the node that leads most of the outbox topic's
#    partitions (once every partition has 3 in-sync replicas again); its
#    partitions get new leaders; events are acknowledged while it is down
#    (two in-sync replicas are enough); it is started again;
#  - one round with two nodes killed, leaving one node, the only in-sync
#    replica that can answer (and no controller quorum): nothing can be
#    acknowledged, so the relay must wait -- no ack, the slot not
#    confirmed past what was acknowledged, the relay still running -- and
#    /readyz must leave "ready" (watchdog.outbox.lag.critical.ms is 12 s
#    here; 300 s by default); both nodes are started again.
# Then every committed event must be in Kafka: the checker against the
# database's ledger (nothing missing, nothing rolled back published,
# per-key order with re-deliveries only repeating a suffix, at most one
# per fault); the duplicate factor (consumed / committed) is printed, the
# slot confirms the last commit and the relay exits 0 on SIGTERM.
# Under RELAY_DELIVERY=exactly-once (make check-kafka-cluster-eos) the
# relay publishes in Kafka transactions (their coordinator's log has
# replication factor 3, min.isr 2, like the topics): each round also waits
# for __transaction_state to be in sync, the checker wants no duplicate
# from its read_committed consumer (--no-dups) and the read_uncommitted
# figures are printed beside it.
# Heavy (three more JVMs; 2.5 min on 2 CPUs, more when busy): `make
# check-kafka-cluster` runs it (IT_KAFKA_CLUSTER=1), not `make check`,
# where it is one SKIP with that reason.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../env/kafka_cluster.sh
source "$IT_ROOT/tests/env/kafka_cluster.sh"
# shellcheck source=load.sh
source "$(dirname "$0")/load.sh"
it_init
if [[ -z ${IT_KAFKA_CLUSTER:-} ]]; then
	skip "three-node Kafka cluster" "make check-kafka-cluster runs it (IT_KAFKA_CLUSTER=1): three more brokers, about 2.5 min"
	it_summary
fi

# The writer stops by itself after 300 s, should the test not stop it.
LOAD_MAX_SECS=300
ROUNDS=3
it_scenario t800_kafka_cluster
ledger_topic=outbox-relay.slots
aggs=40
base=${T800_KAFKA_BASE:-$((${KAFKA_BROKERS##*:} + 20))}
t0=$SECONDS

if ! kc_start "$IT_TEST_DIR" "$base"; then
	not_ok "three-node Kafka cluster started on 127.0.0.1:$base-$((base + 5))"
	it_summary
fi
ok "three-node Kafka cluster started on 127.0.0.1:$base-$((base + 5)) in $((SECONDS - t0)) s ($(kafka_version))"
# The relay goes before the cluster at cleanup (hooks run last first).
env_on_cleanup _it_kill_relays
# Every client of this test (relay, kcat, checker) talks to the cluster.
KAFKA_BROKERS=$(kc_brokers "$IT_TEST_DIR")
export KAFKA_BROKERS

it_sql_file "$db" "$IT_ROOT/sql/emit.sql" >/dev/null
load_init "$db" "$type" "$aggs" 10 25 --rich

# The outbox topic before the first event (a metadata request has the
# broker create it with its defaults), then its topic-level configs.
kcat -b "$KAFKA_BROKERS" -L -t "$topic" -m 5 >/dev/null 2>&1 || true
it_check "outbox topic: every partition has a leader and 3 in-sync replicas" \
	kc_wait_isr "$IT_TEST_DIR" "$topic" 3 60
it_check "outbox topic: min.insync.replicas=2, unclean.leader.election.enable=false" \
	kc_topic_config "$IT_TEST_DIR" "$topic" min.insync.replicas=2 \
	unclean.leader.election.enable=false
desc=$(kc_describe_topic "$IT_TEST_DIR" "$topic" || true)
parts=$(kc_partitions "$IT_TEST_DIR" "$topic" || true)
it_diag "partitions (id leader replicas isr): $(tr '\n' ';' <<<"$parts")"
if grep -q 'min.insync.replicas=2 ' <<<"$desc" &&
	grep -q 'unclean.leader.election.enable=false ' <<<"$desc" &&
	[[ -n $parts ]] && awk '$3 != 3 { bad = 1 } END { exit bad }' <<<"$parts"; then
	ok "outbox topic: $(grep -c . <<<"$parts") partitions of replication factor 3, configs read back"
else
	not_ok "outbox topic: replication factor 3, configs read back" "$desc
$parts"
fi

# The in-flight window stays at its default; the outbox lag thresholds are
# low so that a relay waiting for acks shows it within the round.
it_write_config "$conf" "$db" outbox.emit.prefix=outbox reconnect.backoff.ms=100 \
	kafka.reconnect.backoff.max.ms=1000 stats.interval.ms=2000 \
	watchdog.outbox.lag.warn.ms=5000 watchdog.outbox.lag.critical.ms=12000

it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30
hport=$(it_health_port "$log") || hport=
# pgbench bursts of 2 s (2 clients, 100 transactions/s) until load_stop.
load_start 100 2

# readyz: "CODE BODY" of GET /readyz.
readyz() {
	local body code
	body=$(curl -s -m 3 -o - -w '\n%{http_code}' "http://127.0.0.1:$hport/readyz" 2>/dev/null) ||
		true
	code=${body##*$'\n'}
	body=${body%$'\n'*}
	printf '%s %s\n' "${code:-000}" "$(head -n1 <<<"$body")"
}
# published: events_published_total from /metrics.
published() {
	it_metric "$hport" outbox_relay_events_published_total
}
# Waits until no partition of TOPIC is led by NODE and all have a leader.
leaders_moved() {
	local node=$1 secs=$2 i p
	for ((i = 0; i < secs * 2; i++)); do
		p=$(kc_partitions "$IT_TEST_DIR" "$topic" 2>/dev/null) || p=
		if [[ -n $p ]] && awk -v n="$node" '$2 < 0 || $2 == n { bad = 1 }
			END { exit bad }' <<<"$p"; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}
others() { # the nodes other than those given, sorted
	local n out=
	for n in 1 2 3; do
		[[ " $* " == *" $n "* ]] || out+="${out:+ }$n"
	done
	printf '%s\n' "$out"
}

# Acknowledged events, from /metrics (a consumer of a topic written
# without pause is slow to reach its end on this busy machine).
published_at_least() {
	local n=$1 secs=$2 i p
	for ((i = 0; i < secs * 2; i++)); do
		p=$(published)
		[[ -n $p ]] && ((${p%.*} >= n)) && return 0
		sleep 0.5
	done
	return 1
}
it_check "events acknowledged before the first kill" published_at_least 500 60

# Exactly-once: the transaction coordinators' log in sync too before a
# kill (the relay's first transaction created it); at-least-once: nothing.
txn_log_in_sync() {
	it_eos || return 0
	kc_wait_isr "$IT_TEST_DIR" __transaction_state 3 60
}

kills=0
for ((r = 1; r <= ROUNDS; r++)); do
	rt=$SECONDS
	if ! kc_wait_isr "$IT_TEST_DIR" "$topic" 3 90 ||
		! kc_wait_isr "$IT_TEST_DIR" "$ledger_topic" 3 30 ||
		! txn_log_in_sync; then
		not_ok "round $r: every replica in sync before the kill"
		break
	fi
	top=$(kc_top_leader "$IT_TEST_DIR" "$topic")
	led=$(kc_partitions "$IT_TEST_DIR" "$topic" | awk -v n="$top" '$2 == n { c++ } END { print c + 0 }')
	p0=$(published)
	kc_kill "$IT_TEST_DIR" "$top"
	kills=$((kills + 1))
	tk=$SECONDS
	if leaders_moved "$top" 30; then
		ok "round $r: node $top (leader of $led partitions) killed -9; new leaders within $((SECONDS - tk)) s"
	else
		not_ok "round $r: node $top killed -9; new leaders within 30 s" \
			"$(kc_partitions "$IT_TEST_DIR" "$topic" | tr '\n' ';')"
	fi
	# Two in-sync replicas of three: acks=all writes are acknowledged (3 s
	# at least, 15 s at most, of acks with the node down).
	sleep 3
	for ((i = 0; i < 24; i++)); do
		p1=$(published)
		[[ -n $p0 && -n $p1 ]] && ((${p1%.*} > ${p0%.*})) && break
		sleep 0.5
	done
	if [[ -n $p0 && -n $p1 ]] && ((${p1%.*} > ${p0%.*})); then
		ok "round $r: events acknowledged with node $top down ($p0 -> $p1 published)"
	else
		not_ok "round $r: events acknowledged with node $top down" "published $p0 -> $p1
$(it_show_log "$log" 15)"
	fi
	it_diag "round $r: /readyz with node $top down: $(readyz)"
	if kc_launch "$IT_TEST_DIR" "$top"; then
		ok "round $r: node $top restarted ($((SECONDS - rt)) s for the round)"
	else
		not_ok "round $r: node $top restarted"
		break
	fi
	it_check "round $r: relay still running" it_relay_alive
done

# -- one in-sync replica left: two nodes killed, the quorum with them.
if kc_wait_isr "$IT_TEST_DIR" "$topic" 3 90 && kc_wait_isr "$IT_TEST_DIR" "$ledger_topic" 3 30 &&
	txn_log_in_sync; then
	rt=$SECONDS
	first=$(kc_top_leader "$IT_TEST_DIR" "$topic")
	kc_kill "$IT_TEST_DIR" "$first"
	kills=$((kills + 1))
	# Fenced first (out of every ISR), so the last node's partitions have
	# it and the second victim in sync when the second one goes.
	kc_wait_brokers "$IT_TEST_DIR" "$(others "$first")" 30 || true
	leaders_moved "$first" 30 || true
	second=$(kc_top_leader "$IT_TEST_DIR" "$topic")
	last=$(others "$first" "$second")
	kc_kill "$IT_TEST_DIR" "$second"
	kills=$((kills + 1))
	ts=$SECONDS
	it_diag "one node left: $last (killed $first, then $second); partitions: $(kc_partitions "$IT_TEST_DIR" "$topic" | tr '\n' ';')"
	sleep 3
	p0=$(published)
	c0=$(it_slot_confirmed "$db" "$db")
	not_ready=
	ready_log=
	for ((i = 0; i < 9; i++)); do
		sleep 2
		rz=$(readyz)
		ready_log+="$((SECONDS - ts))s: $rz; "
		[[ $rz == 503* ]] && not_ready=${not_ready:-$rz}
	done
	p1=$(published)
	c1=$(it_slot_confirmed "$db" "$db")
	it_diag "one in-sync replica, $((SECONDS - ts)) s: /readyz $ready_log"
	it_diag "published $p0 -> $p1, confirmed_flush_lsn $c0 -> $c1"
	if [[ -n $p0 && $p0 == "$p1" ]]; then
		ok "one replica left: no event acknowledged for $((SECONDS - ts - 3)) s (produce waits)"
	else
		not_ok "one replica left: no event acknowledged (produce waits)" "published $p0 -> $p1"
	fi
	it_check "one replica left: confirmed_flush_lsn did not move ($c0)" test "$c0" = "$c1"
	it_check "one replica left: relay still running" it_relay_alive
	if [[ -n $not_ready ]]; then
		ok "one replica left: /readyz left ready: $not_ready"
	else
		not_ok "one replica left: /readyz left ready within 18 s" "$ready_log"
	fi
	if kc_launch "$IT_TEST_DIR" "$first" "$second"; then
		ok "nodes $first and $second restarted ($((SECONDS - rt)) s for the round)"
	else
		not_ok "nodes $first and $second restarted"
	fi
	tb=$SECONDS
	for ((i = 0; i < 60; i++)); do
		[[ $(readyz) == 200* ]] && break
		sleep 1
	done
	it_check "/readyz ready again after the restart ($((SECONDS - tb)) s)" \
		test "$(readyz | cut -d' ' -f1)" = 200
else
	not_ok "one-replica round: every replica in sync before it"
fi

# A few more seconds of load on the whole cluster, then drain.
sleep 3
load_stop
it_check "writer ran without errors" test "$LOAD_FAILED" = 0
load_expected
it_sql "$db" "SELECT agg, seq, id FROM agg_ledger" >"$IT_TEST_DIR/ledger"
committed=$(it_sql "$db" "SELECT count(*) FROM agg_ledger")
load_checked "$topic" 120 --ids "$IT_TEST_DIR/ledger" --topic "$topic" \
	--faults "$kills" --notes
rc=$LOAD_RC summary=$LOAD_SUMMARY out=$LOAD_OUT
it_diag "$summary"
[[ -z $LOAD_ISO ]] || it_diag "$LOAD_ISO"
consumed=$(it_count "$out")
ratio=$(awk -v c="$consumed" -v n="$committed" 'BEGIN { if (n > 0) printf "%.3f", c / n }')
if ((rc == 0)); then
	ok "$committed events after $kills broker kills: none missing, none leaked, per-key order, $(it_eos && echo "no duplicate read_committed (exactly-once)" || echo "re-deliveries only suffixes") (duplicate factor $ratio)"
else
	not_ok "$committed events after $kills broker kills" "exit $rc: $(head -n 30 "$out.check")
$(it_show_log "$log" 20)"
fi
it_check_confirmed_past "$db" "$summary" "confirmed_flush_lsn passed the last outbox commit"
errs=$(grep -ciE 'unsupported|protocol error|invalid request|UNSUPPORTED_VERSION' "$log" || true)
it_check "no protocol error in the relay's log" test "$errs" = 0
it_diag "relay log: $(grep -cE 'replaying from slot' "$log" || true) replays, $(grep -ciE 'producer rebuilt|rebuilding' "$log" || true) producer rebuilds"
it_diag "row: scenario=cluster rounds=$kills committed=$committed consumed=$consumed ratio=$ratio $(sed 's/^checker: [A-Z]* //' <<<"$summary") $(load_row_extra) wall=$((SECONDS - t0))s"
it_stop_checked "relay exits 0 on SIGTERM"
rc=$STOP_RC
((rc == 0)) || it_diag "$(it_show_log "$log" 20)"

it_summary
