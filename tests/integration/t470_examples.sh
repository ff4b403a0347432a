#!/usr/bin/env bash
# t470_examples -- the application side, end to end with the real parts:
# the TypeScript service of examples/typescript writes orders through
# Prisma (an Outbox model with camelCase columns, read by the relay
# through its table.field.* keys), the relay is killed with -9 in a loop
# under that load (duplicates in Kafka, as at-least-once allows), and the
# two consumers of examples/ (TypeScript with kafkajs, C with librdkafka),
# each killed with -9 a few times too, apply the events to their own
# databases through the inbox (sql/inbox.sql). Asserts:
#  - Kafka holds duplicates (else this test proves nothing);
#  - each consumer applied every committed event exactly once (its
#    order_effects log, which has no unique key, holds each id once and
#    nothing else), every order in version order, and nothing of the
#    orders whose transaction rolled back after emit();
#  - the same consumer without its inbox (--no-inbox) applies the
#    duplicates: the check above can fail.
# Needs `make examples` (Node.js >= 20.19); skipped without it unless
# EXAMPLES_REQUIRED is set (CI sets it).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

EX=$IT_ROOT/examples
TS=$EX/typescript
CBIN=$EX/c/consumer
# T470_CONSUMERS: which consumers run (default both; the mutant always)
read -r -a consumers <<<"${T470_CONSUMERS:-ts c}"
if [[ ! -f $TS/dist/consumer.js || ! -d $TS/node_modules ||
	(" ${consumers[*]} " == *" c "* && ! -x $CBIN) ]]; then
	why="examples not built (make examples; the TypeScript pair needs Node.js >= 20.19)"
	if [[ -n ${EXAMPLES_REQUIRED:-} ]]; then
		not_ok "examples built" "$why"
	else
		skip "t470_examples" "$why"
	fi
	it_summary
fi
if it_eos; then
	# A read_committed consumer of an exactly-once relay sees no
	# duplicates to drop: nothing here would be tested.
	skip "t470_examples under delivery.guarantee = exactly-once" "needs the duplicates of at-least-once"
	it_summary
fi

db=t470_shop
stamp=$(date +%s)
topic=outbox.event.Order.$stamp
conf=$IT_TEST_DIR/relay.conf
orders=${T470_ORDERS:-600}
rounds=${T470_ROUNDS:-8}
url() { echo "postgresql://$PGUSER@127.0.0.1:$PGPORT/$1"; }

# -- the service's database, as Prisma's migration makes it; the slot by
#    the runbook's --create-slot (a publication on "Outbox" for pgoutput)
setup_err=$IT_TEST_DIR/setup.err
{
	it_drop_db "$db" &&
		it_sql postgres "SELECT pg_drop_replication_slot(slot_name)
			FROM pg_replication_slots WHERE slot_name = '$db'" >/dev/null &&
		it_sql postgres "CREATE DATABASE $db" &&
		it_sql_file "$db" "$TS/prisma/migrations/0001_init/migration.sql"
} >/dev/null 2>"$setup_err" || {
	not_ok "service database from the Prisma migration" "$(cat "$setup_err")"
	it_summary
}
it_write_config "$conf" "$db" outbox.table=public.Outbox \
	table.field.event.key=aggregateId table.field.event.type=eventType \
	route.by.field=aggregateType table.field.event.timestamp=createdAt \
	"route.topic.replacement=outbox.event.\${routedByValue}.$stamp" \
	status.interval.ms=500 standby.retry.ms=200 reconnect.backoff.ms=100
it_run_relay create-slot --config "$conf" --create-slot
it_expect_exit create-slot 0 "relay --create-slot on public.Outbox"

for c in "${consumers[@]}" noinbox; do
	{
		it_drop_db "t470_$c" && it_sql postgres "CREATE DATABASE t470_$c" &&
			it_sql_file "t470_$c" "$IT_ROOT/sql/inbox.sql" &&
			it_sql_file "t470_$c" "$EX/sql/order_view.sql"
	} >/dev/null 2>>"$setup_err" || {
		not_ok "consumer database t470_$c" "$(cat "$setup_err")"
		it_summary
	}
done

# -- consumers. consumer_as NAME GROUP TOPIC: CMD is consumer NAME's
#    command (noinbox: the TypeScript one without its inbox), and the
#    environment names its database t470_NAME, its group and TOPIC.
declare -A CPID=() KILLS=() RUNS=()
export KAFKA_BROKERS KAFKA_TOPIC KAFKA_GROUP DATABASE_URL KAFKA_SESSION_TIMEOUT_MS=6000
consumer_as() {
	case $1 in
	ts) CMD=(node "$TS/dist/consumer.js") ;;
	c) CMD=("$CBIN") ;;
	noinbox) CMD=(node "$TS/dist/consumer.js" --no-inbox) ;;
	esac
	KAFKA_GROUP=t470-$2-$stamp KAFKA_TOPIC=$3 DATABASE_URL=$(url "t470_$1")
}
# consumer_start NAME: in the background; CPID[NAME] its pid
consumer_start() {
	local name=$1
	RUNS[$name]=$((${RUNS[$name]:-0} + 1))
	consumer_as "$name" "$name" "$topic"
	"${CMD[@]}" >>"$IT_TEST_DIR/consumer.$name.log" 2>&1 </dev/null &
	CPID[$name]=$!
	_IT_RELAY_PIDS+=("$!") # killed with the relays should the test die
}
consumer_kill9() {
	kill -9 "${CPID[$1]}" 2>/dev/null || true
	wait "${CPID[$1]}" 2>/dev/null || true
	KILLS[$1]=$((${KILLS[$1]:-0} + 1))
}

# -- the service writes while the relay is killed and restarted
svc_log=$IT_TEST_DIR/service.log
DATABASE_URL=$(url "$db") node "$TS/dist/service.js" --orders "$orders" \
	--concurrency 8 --fail-pct 10 >"$svc_log" 2>&1 </dev/null &
svc=$!
t0=$SECONDS
for name in "${consumers[@]}"; do consumer_start "$name"; done
# At least $rounds kills, and on while the service writes (bounded: it
# ends by itself; 3 x rounds at most).
r=0
while ((++r <= rounds)) || { ((r <= 3 * rounds)) && _env_pid_alive "$svc"; }; do
	log=$IT_TEST_DIR/relay.$r.log
	it_start_relay "$conf" "$log"
	sleep "$(awk -v x="$RANDOM" 'BEGIN { printf "%.1f", 0.8 + (x % 20) / 10 }')"
	kill -9 "$IT_RELAY_PID" 2>/dev/null || true
	wait "$IT_RELAY_PID" 2>/dev/null || true
	IT_RELAY_PID=
	# a consumer killed every third round, alternately
	if ((r % 3 == 0)); then
		name=${consumers[$((r / 3 % ${#consumers[@]}))]}
		consumer_kill9 "$name"
		consumer_start "$name"
	fi
done
svc_rc=0
wait "$svc" || svc_rc=$?
svc_line=$(grep '^service: ' "$svc_log" | tail -n1 || true)
it_check "service exits 0 ($svc_line, $((SECONDS - t0)) s)" test "$svc_rc" = 0
((svc_rc == 0)) || it_diag "$(tail -n 20 "$svc_log")"
rounds=$((r - 1))

# -- the last relay drains
log=$IT_TEST_DIR/relay.final.log
it_start_relay "$conf" "$log"
events=$(it_sql "$db" 'SELECT count(*) FROM "Outbox"')
placed=$(it_sql "$db" 'SELECT count(*) FROM "Order"')
it_wait_confirmed "$db" "$db" "$(it_current_lsn "$db")" 60 ||
	it_diag "slot not confirmed past the last write in 60 s: $(it_slot_confirmed "$db" "$db")"

# Kafka's content: records, distinct ids
kout=$IT_TEST_DIR/kafka.json
it_consume_wait "$topic" "$kout" "$events" 60 || true
read -r krecords kdistinct < <(python3 - "$kout" <<-'PY'
	import json, sys
	ids = []
	for l in open(sys.argv[1]):
	    if l.strip():
	        h = json.loads(l)["headers"]
	        ids.append(dict(zip(h[0::2], h[1::2]))["id"])
	print(len(ids), len(set(ids)))
	PY
) || krecords=0 kdistinct=0
it_check "Kafka holds every event ($kdistinct distinct of $events written)" \
	test "$kdistinct" = "$events"
it_check "Kafka holds duplicates ($((krecords - kdistinct)) in $krecords records after $rounds x kill -9)" \
	test "$krecords" -gt "$kdistinct"

# -- the consumers finish: the last run of each stops when idle
for name in "${consumers[@]}"; do
	kill -TERM "${CPID[$name]}" 2>/dev/null || true
	wait "${CPID[$name]}" 2>/dev/null || true
	RUNS[$name]=$((${RUNS[$name]} + 1))
	rc=0
	consumer_as "$name" "$name" "$topic"
	timeout 120 "${CMD[@]}" --idle-exit-ms 4000 \
		>"$IT_TEST_DIR/consumer.$name.last" 2>&1 </dev/null || rc=$?
	cat "$IT_TEST_DIR/consumer.$name.last" >>"$IT_TEST_DIR/consumer.$name.log"
	it_check "$name consumer's last run exits 0 when idle" test "$rc" = 0
	((rc == 0)) || it_diag "$(tail -n 15 "$IT_TEST_DIR/consumer.$name.last")"
done
# the mutant: the TypeScript consumer without its inbox, over all of it
rc=0
consumer_as noinbox noinbox "$topic"
timeout 120 "${CMD[@]}" --idle-exit-ms 4000 \
	>"$IT_TEST_DIR/consumer.noinbox.log" 2>&1 </dev/null || rc=$?
it_check "the consumer without its inbox runs (exit $rc)" test "$rc" = 0

# -- what each consumer did
service_orders=$IT_TEST_DIR/orders.committed
it_sql "$db" 'SELECT id FROM "Order" ORDER BY 1' >"$service_orders"
for name in "${consumers[@]}" noinbox; do
	cdb=t470_$name
	read -r eff distinct ooo < <(it_sql "$cdb" "SELECT count(*), count(DISTINCT event_id),
		count(*) FILTER (WHERE NOT in_order) FROM order_effects" | tr '|' ' ')
	read -r views bad < <(it_sql "$cdb" "SELECT count(*), count(*) FILTER (WHERE
		version <> 3 OR events_applied <> 3 OR status <> 'shipped') FROM order_view" | tr '|' ' ')
	claimed=$(it_sql "$cdb" "SELECT count(*) FROM processed_events")
	dups=$(sed -n 's/^consumer: applied=[0-9]* duplicates=\([0-9]*\)$/\1/p' \
		"$IT_TEST_DIR/consumer.$name.log" | awk '{ s += $1 } END { print s + 0 }')
	it_diag "$name: ${RUNS[$name]:-1} runs, ${KILLS[$name]:-0} x kill -9; effects $eff ($distinct distinct ids), out of order $ooo, orders $views ($bad not shipped at version 3 with 3 events), inbox $claimed ids, duplicates dropped by finished runs $dups"
	if [[ $name == noinbox ]]; then
		it_check "without the inbox: the duplicates are applied ($eff effects for $events events, $krecords records)" \
			test "$eff" -gt "$events"
		continue
	fi
	it_check "$name: each of the $events events applied exactly once ($eff effects, $distinct distinct)" \
		test "$eff" = "$events" -a "$distinct" = "$events"
	it_check "$name: the inbox holds each id once ($claimed)" test "$claimed" = "$events"
	it_check "$name: every order's events in version order (out of order: $ooo)" test "$ooo" = 0
	it_check "$name: every committed order shipped, at version 3, 3 events applied ($views of $placed)" \
		test "$views" = "$placed" -a "$bad" = 0
	it_sql "$cdb" "SELECT order_id FROM order_view ORDER BY 1" >"$IT_TEST_DIR/orders.$name"
	it_check "$name: no order whose transaction rolled back" \
		cmp -s "$service_orders" "$IT_TEST_DIR/orders.$name"
done

# -- bad input stops a consumer (65) without committing the record's
#    offset: a second run stops on it again. Two kinds: a record that is
#    no order event (no id header), and one whose id PostgreSQL refuses
#    (not a uuid: SQLSTATE 22P02 in inbox_claim, rolled back).
stopped_on() { # TOPIC RC FILE
	[[ $2 == 65 ]] && grep -F "$1 [" "$3" | grep -E '\] at offset 0: ' >/dev/null ||
		{ tail -n 5 "$3"; return 1; }
}
printf 'not an event\n' | kcat -b "$KAFKA_BROKERS" -P -t "$topic.bad" -k o-1 2>/dev/null
printf '{"orderId":"o-1","version":1,"status":"placed","customer":"x","total":"1.00"}\n' |
	kcat -b "$KAFKA_BROKERS" -P -t "$topic.baduuid" -k o-1 -H id=not-a-uuid \
		-H event_type=OrderPlaced 2>/dev/null
for name in "${consumers[@]}"; do
	for kind in "bad:a record without an id header" "baduuid:an id that is not a uuid"; do
		for run in 1 2; do
			rc=0 out=$IT_TEST_DIR/${kind%%:*}.$name.$run
			consumer_as "$name" "${kind%%:*}-$name" "$topic.${kind%%:*}"
			timeout 60 "${CMD[@]}" --idle-exit-ms 4000 >"$out" 2>&1 </dev/null || rc=$?
			it_check "$name: ${kind#*:}: exit 65 naming its offset, run $run (exit $rc)" \
				stopped_on "$topic.${kind%%:*}" "$rc" "$out"
		done
	done
	it_check "$name: nothing of the refused records applied" \
		test "$(it_sql "t470_$name" "SELECT count(*) FROM order_effects WHERE order_id = 'o-1'")" = 0
done

it_stop_checked "final relay exits 0 on SIGTERM"
it_summary
