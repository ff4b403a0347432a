#!/usr/bin/env bash
# t000_servers -- the test environment itself: PostgreSQL accepts wal2json
# slots (format-version 2 decodes an outbox insert), or pgoutput ones with
# the publication under RELAY_PLUGIN=pgoutput, and the Kafka broker
# round-trips a record with key and headers through kcat. If this fails,
# every relay test after it would fail for reasons unrelated to the relay.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t000_servers

# -- PostgreSQL: a RELAY_PLUGIN slot in a fresh database
if it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	ok "database, outbox table and $RELAY_PLUGIN slot created"
else
	not_ok "database, outbox table and $RELAY_PLUGIN slot created" \
		"$(cat "$IT_TEST_DIR/setup.err")"
fi

plugin=$(it_sql "$db" "SELECT plugin FROM pg_replication_slots
	WHERE slot_name = '$db'" 2>&1 || true)
it_check "slot uses $RELAY_PLUGIN" test "$plugin" = "$RELAY_PLUGIN"

# Decode one insert without consuming it (peek) in the relay's format.
# Two psql calls: one -c string is one transaction, and the peek must see
# the insert committed. A failing call leaves its error in $changes.
rc=0
changes=$(it_sql "$db" "
	INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
	VALUES ('order', 'o-smoke', 'Smoke', '{\"n\": 1}')" 2>&1) || rc=$?
if ((rc == 0)) && [[ $RELAY_PLUGIN == pgoutput ]]; then
	# One message a row: its type byte, and whether it holds the key.
	changes=$(it_sql "$db" "SELECT chr(get_byte(data, 0)) ||
		(position('o-smoke'::bytea IN data) > 0)::int
		FROM pg_logical_slot_peek_binary_changes('$db', NULL, NULL,
		'proto_version', '1', 'publication_names', '$IT_PUBLICATION')" 2>&1) || true
	if [[ $(tr -d '\n' <<<"$changes") == B0R0I1C0 ]]; then
		ok "pgoutput decodes an outbox insert (Begin, Relation, Insert, Commit)"
	else
		not_ok "pgoutput decodes an outbox insert (Begin, Relation, Insert, Commit)" \
			"$changes"
	fi
elif ((rc == 0)); then
	changes=$(it_sql "$db" "SELECT data FROM pg_logical_slot_peek_changes(
		'$db', NULL, NULL, 'format-version', '2', 'include-xids', '1')" 2>&1) || true
fi
if [[ $RELAY_PLUGIN == pgoutput ]]; then
	:
elif [[ $changes == *'"action":"I"'* && $changes == *'"table":"outbox"'* &&
	$changes == *'o-smoke'* && $changes == *'"action":"C"'* ]]; then
	ok "wal2json format-version 2 decodes an outbox insert"
else
	not_ok "wal2json format-version 2 decodes an outbox insert" "$changes"
fi

it_check "slot dropped" it_sql "$db" "SELECT pg_drop_replication_slot('$db')"
it_check "database dropped" it_drop_db "$db"

# -- Kafka: produce with key and headers, consume it back
topic=it.t000.$$.$RANDOM
if printf 'hello\tworld {"a":1}\n' | timeout 30 kcat -b "$KAFKA_BROKERS" -P \
	-t "$topic" -k k-1 -H h1=v1 -H event_type=Smoke 2>"$IT_TEST_DIR/produce.err"; then
	ok "kcat produced to $topic"
else
	not_ok "kcat produced to $topic" "$(cat "$IT_TEST_DIR/produce.err")"
fi

out=$IT_TEST_DIR/consumed.json
if it_consume_wait "$topic" "$out" 1 30; then
	ok "record consumed back"
else
	not_ok "record consumed back" "got $(it_count "$out") records"
fi
got=$(it_fields "$out" key h:h1 h:event_type payload 2>&1 || true)
want=$(printf 'k-1\tv1\tSmoke\thello\\tworld {"a":1}')
it_check "key, headers and payload round-trip" test "$got" = "$want"
if [[ $got != "$want" ]]; then
	it_diag "got:  $got"
	it_diag "want: $want"
fi

# -- the harness: a relay's log exists once it_start_relay returns, so a
# test may read it at once (a missing file under `set -e -o pipefail`
# ended t620 with status 2 before its first check, in CI). The race is
# between the shell's fork and the child's redirection: 50 starts of a
# relay that exits at once make it show (it missed 7 in 100 before).
rlog=$IT_TEST_DIR/start.log missing=0 pids=("${_IT_RELAY_PIDS[@]}")
for ((i = 0; i < 50; i++)); do
	rm -f "$rlog"
	RELAY_BIN=/bin/true it_start_relay /dev/null "$rlog"
	[[ -e $rlog ]] || missing=$((missing + 1))
	wait "$IT_RELAY_PID" || true
done
IT_RELAY_PID= _IT_RELAY_PIDS=("${pids[@]}") # the cleanup must not signal reused pids
it_check "it_start_relay: the relay's log exists when it returns (missing $missing of 50)" \
	test "$missing" -eq 0

# -- the harness's ports are outside the kernel's ephemeral range: a
# client connection's local port taken from it made t225's own cluster
# fail to bind PGPORT + 12 in a CI run. Tests use PGPORT to PGPORT + 43
# and the broker's port to + 7 (t800's three-node cluster: + 20 to + 25).
read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range
kport=${KAFKA_BROKERS##*:}
outside() { (($2 < eph_lo || $1 > eph_hi)); }
it_check "PostgreSQL ports $PGPORT-$((PGPORT + 43)) outside the ephemeral range $eph_lo-$eph_hi (set IT_PGPORT)" \
	outside "$PGPORT" $((PGPORT + 43))
it_check "Kafka ports $kport-$((kport + 25)) outside the ephemeral range $eph_lo-$eph_hi (set IT_KAFKA_PORT)" \
	outside "$kport" $((kport + 25))

it_summary
