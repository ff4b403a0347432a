#!/usr/bin/env bash
# t425_from_debezium -- outbox-relay --from-debezium on the connector
# files of tests/fixtures/debezium/, as a user runs it: the printed
# configuration loads with --config OUT --print-config (exit 0, the
# mapped values shown as coming from the file), what does not map is on
# stderr, no password is printed anywhere, and a connector without the
# outbox router is exit 78 with nothing on stdout.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

fx=$IT_ROOT/tests/fixtures/debezium

# convert NAME FILE WANT...: --from-debezium FILE, then the output through
# --config --print-config, which must show every WANT line.
convert() {
	local name=$1 file=$2 want missing=()
	shift 2
	it_run_relay "$name" --from-debezium "$fx/$file"
	it_expect_exit "$name" 0 "$file: printed"
	if grep -q Zq7 "$IT_TEST_DIR/$name.out" "$IT_TEST_DIR/$name.err"; then
		not_ok "$file: no password printed" "$(grep -h Zq7 "$IT_TEST_DIR/$name".*)"
	else
		ok "$file: no password printed"
	fi
	cp "$IT_TEST_DIR/$name.out" "$IT_TEST_DIR/$name.conf"
	it_run_relay "$name.print" --config "$IT_TEST_DIR/$name.conf" --print-config
	it_expect_exit "$name.print" 0 "$file: the output loads (--config OUT --print-config)"
	for want in "$@"; do
		grep -qxF -- "$want" "$IT_TEST_DIR/$name.print.out" || missing+=("$want")
	done
	if ((${#missing[@]} == 0)); then
		ok "$file: --print-config shows the mapped values ($# lines)"
	else
		not_ok "$file: --print-config shows the mapped values" \
			"missing: ${missing[*]}
$(cat "$IT_TEST_DIR/$name.print.out")"
	fi
}

convert json connector.json \
	"slot.name = orders_outbox # file" \
	"slot.plugin = pgoutput # file" \
	"slot.publication = orders_outbox_pub # file" \
	"outbox.table = public.outbox # file" \
	"table.field.event.key = aggregateid # file" \
	"route.by.field = aggregatetype # file" \
	"key.format = json # file" \
	"value.format = string # file" \
	"table.fields.additional.placement = type:header:eventType # file" \
	"poison.policy = dlq # file" \
	"poison.dlq.topic = orders.dlq # file" \
	"topic.creation.default.partitions = 6 # file" \
	"topic.creation.default.cleanup.policy = delete # file" \
	"kafka.linger.ms = 10 # file"
it_check "connector.json: stderr lists topic.prefix with why" \
	grep -q "^topic.prefix: names Debezium's change-event topics" "$IT_TEST_DIR/json.err"

convert props connector.properties \
	"slot.name = billing_slot # file" \
	"slot.failover = on # file" \
	"status.interval.ms = 5000 # file" \
	"outbox.table = billing.outbox # file" \
	"route.topic.replacement = billing.\${routedByValue} # file"
it_check "connector.properties: stderr says the relay never snapshots" \
	grep -q "^snapshot.mode: initial: the relay never snapshots" "$IT_TEST_DIR/props.err"

it_run_relay none --from-debezium "$fx/not_outbox.json"
it_expect_err none 78 "not an outbox connector" "not an outbox connector"
it_check "not an outbox connector: nothing on stdout" test ! -s "$IT_TEST_DIR/none.out"

# A path that opens but cannot be read (a directory): an error, not an
# empty connector.
it_run_relay dir --from-debezium "$fx"
it_expect_err dir 78 "directory: cannot read" "cannot read $fx: Is a directory"
it_summary
