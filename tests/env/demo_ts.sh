# shellcheck shell=bash
# tests/env/demo_ts.sh -- the second part of `make demo`, sourced by
# demo.sh once its relay has stopped: the TypeScript pair of
# examples/typescript on the same servers. The service writes 5 orders
# through Prisma (one rolls back after emit()), a relay of its own reads
# the "Outbox" table of database shop through a slot of its own, and the
# consumer applies the events to database orderview through the inbox.
# Left out, with the reason, when Node.js >= 20.19 is not there (the
# examples are then not built). Uses demo.sh's pgport, brokers, dir,
# relay_bin, relay_pid, step, stop_relay, failed.

demo_ts() {
	local ts=examples/typescript shop=shop view=orderview cfg log rc topic
	step "The TypeScript pair (examples/typescript): Prisma service, kafkajs consumer with the inbox"
	if ! tests/env/node.sh 2>"$dir/node.why"; then
		echo "    left out: $(cat "$dir/node.why")"
		return 0
	fi
	if [[ ! -f $ts/dist/consumer.js ]]; then
		echo "    left out: examples/typescript is not built (make examples)"
		return 0
	fi
	topic=outbox.event.Order
	psql_q "$pgport" postgres "CREATE DATABASE $shop" >/dev/null
	psql_q "$pgport" postgres "CREATE DATABASE $view" >/dev/null
	psql_f "$pgport" "$shop" "$ts/prisma/migrations/0001_init/migration.sql" >/dev/null
	psql_f "$pgport" "$view" sql/inbox.sql >/dev/null
	psql_f "$pgport" "$view" examples/sql/order_view.sql >/dev/null

	cfg=$dir/relay-shop.conf
	log=$dir/relay-shop.log
	cat >"$cfg" <<-EOF
	# the relay for the Prisma service: its Outbox model, camelCase columns
	pg.conninfo = host=127.0.0.1 port=$pgport dbname=$shop user=postgres
	kafka.bootstrap.servers = $brokers
	slot.name = shop_outbox
	outbox.table = public.Outbox
	table.field.event.key = aggregateId
	table.field.event.type = eventType
	route.by.field = aggregateType
	table.field.event.timestamp = createdAt
	http.listen = 127.0.0.1:0
	status.interval.ms = 1000
	EOF
	sed 's/^/    /' "$cfg"
	echo "    $relay_bin --config $cfg --create-slot"
	"$relay_bin" --config "$cfg" --create-slot 2>&1 | sed 's/^/    /'
	"$relay_bin" --config "$cfg" </dev/null >"$log" 2>&1 &
	relay_pid=$!

	echo "    node $ts/dist/service.js --orders 5 --fail-pct 20"
	DATABASE_URL="postgresql://postgres@127.0.0.1:$pgport/$shop" \
		node "$ts/dist/service.js" --orders 5 --fail-pct 20 2>&1 | sed 's/^/    /'
	echo "    node $ts/dist/consumer.js --idle-exit-ms 3000"
	rc=0
	KAFKA_BROKERS=$brokers KAFKA_TOPIC=$topic KAFKA_GROUP=order-view \
		DATABASE_URL="postgresql://postgres@127.0.0.1:$pgport/$view" \
		timeout 90 node "$ts/dist/consumer.js" --idle-exit-ms 3000 >"$dir/consumer.log" 2>&1 || rc=$?
	sed 's/^/    /' "$dir/consumer.log"
	echo "    the consumer's database, order_view:"
	psql_q "$pgport" "$view" "SELECT order_id, status, version, events_applied
		FROM order_view ORDER BY updated_at" | sed 's/^/      /'
	if ((rc != 0)) || [[ $(psql_q "$pgport" "$view" "SELECT count(*) FILTER (WHERE
		status = 'shipped' AND version = 3 AND events_applied = 3) || '/' || count(*)
		FROM order_view") != 4/4 ]]; then
		echo "    MISMATCH: want 4 orders shipped at version 3 (the fifth rolled back), consumer exit $rc"
		failed=1
	fi
	stop_relay
	rc=$STOP_RC
	echo "    relay (shop) exit status: $rc"
	((rc == 0)) || {
		tail -n 20 "$log" | sed 's/^/    /'
		failed=1
	}
}
