#!/usr/bin/env bash
# t210_refusals -- what the relay refuses to run with, and how it says so.
#
#   (a) a slot that does not exist: exit 69, the message says a slot is
#       never created implicitly, and no slot was created;
#   (b) a slot with another plugin (test_decoding): exit 69;
#   (c) an invalidated slot (wal_status lost, made with a tiny
#       max_slot_wal_keep_size for a moment): exit 69;
#   (d) outbox.table naming a missing table, or table.field.event.key a
#       missing column: exit 78 naming the table, or the key and column;
#   (e) configuration errors, all exit 78 with a message naming the place:
#       unknown key in the file (FILE:LINE), a bad integer, --set with an
#       unknown key, an unknown OUTBOX_RELAY_ variable,
#       kafka.enable.idempotence=false without producer.allow.unsafe=true
#       (and the same accepted with it), an invalid librdkafka property
#       with librdkafka's own message, a pg.conninfo libpq cannot parse;
#   (f) precedence file < environment < --set, seen in --print-config;
#   (g) --help (0, lists --config and --set), --version (0), an unknown
#       flag (64).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

# Every relay run here must end by itself quickly; the timeout only
# guards against a relay that would retry forever (its exit is then 124).
IT_RUN_TIMEOUT=${RUN_TIMEOUT:-45}

slots() { it_sql postgres "SELECT slot_name FROM pg_replication_slots ORDER BY 1"; }

db=t210_refusals
if ! it_setup_db "$db" 2>"$IT_TEST_DIR/setup.err"; then
	not_ok "database, outbox table and slot created" "$(cat "$IT_TEST_DIR/setup.err")"
	it_summary
fi
cfg=$IT_TEST_DIR/relay.conf
it_write_config "$cfg" "$db" status.interval.ms=500

# ---------------------------------------------------------------- (a)
missing_slot=t210_no_such_slot
before=$(slots)
it_run_relay a_missing --config "$cfg" --set slot.name=$missing_slot
it_expect_exit a_missing 69 "(a) missing slot"
it_expect_in a_missing err "(a) message: slot does not exist, never created implicitly" \
	"\"$missing_slot\" does not exist" "never creates one implicitly"
after=$(slots)
it_check "(a) pg_replication_slots unchanged" test "$before" = "$after"
it_check "(a) slot $missing_slot was not created" \
	test -z "$(it_sql postgres "SELECT 1 FROM pg_replication_slots
		WHERE slot_name = '$missing_slot'")"

# ---------------------------------------------------------------- (b)
it_sql "$db" "SELECT pg_create_logical_replication_slot('t210_test_decoding',
	'test_decoding')" >/dev/null
it_run_relay b_plugin --config "$cfg" --set slot.name=t210_test_decoding
it_expect_exit b_plugin 69 "(b) test_decoding slot"
# Since slot_judge() takes slot.plugin (02565fb) the fix names the key,
# not a plugin: "wal2json" is no longer in the message (it failed on main).
it_expect_in b_plugin err "(b) message names the slot's plugin" \
	'"t210_test_decoding"' '"test_decoding"' slot.plugin
it_check "(b) the slot is left as it was (plugin test_decoding)" \
	test "$(it_sql "$db" "SELECT plugin FROM pg_replication_slots
		WHERE slot_name = 't210_test_decoding'")" = test_decoding

# ---------------------------------------------------------------- (c)
# max_slot_wal_keep_size invalidates every slot of the server that is far
# enough behind, not just ours: only done when no other test's slot is
# alive on the shared server, and reset at once (and at exit).
lost=t210_lost
reset_keep_size() {
	it_sql postgres "ALTER SYSTEM RESET max_slot_wal_keep_size" >/dev/null 2>&1 || true
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
}
it_create_slot "$db" "$lost"
others=$(it_sql postgres "SELECT string_agg(slot_name, ' ') FROM pg_replication_slots
	WHERE database IS DISTINCT FROM '$db' AND wal_status IS DISTINCT FROM 'lost'")
if [[ -n $others ]]; then
	it_diag "(c) skipped: other slots on the server ($others) would be invalidated too"
else
	env_on_cleanup reset_keep_size
	it_sql postgres "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'" >/dev/null
	it_sql postgres "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	status=
	for ((i = 0; i < 10; i++)); do
		it_sql "$db" "CREATE TEMP TABLE f AS SELECT g FROM generate_series(1, 1000) g;
			SELECT pg_switch_wal()" >/dev/null
		it_sql "$db" "CHECKPOINT"
		status=$(it_sql "$db" "SELECT wal_status FROM pg_replication_slots
			WHERE slot_name = '$lost'")
		[[ $status != lost ]] || break
	done
	reset_keep_size
	if [[ $status == lost ]]; then
		it_run_relay c_lost --config "$cfg" --set slot.name=$lost
		it_expect_exit c_lost 69 "(c) invalidated slot"
		it_expect_in c_lost err "(c) message says the slot is invalidated and not recreated" \
			"\"$lost\" is invalidated" "wal_status=lost" "will not recreate"
		it_check "(c) the slot is still there and still lost" \
			test "$(it_sql "$db" "SELECT wal_status FROM pg_replication_slots
				WHERE slot_name = '$lost'")" = lost
	else
		it_diag "(c) skipped: slot $lost not invalidated (wal_status=$status)"
	fi
	# This test's own slot was invalidated too: recreate it for (d) and (e).
	it_sql "$db" "SELECT pg_drop_replication_slot('$db')" >/dev/null
	it_create_slot "$db" "$db"
fi

# ---------------------------------------------------------------- (d)
it_run_relay d_table --config "$cfg" --set outbox.table=public.no_such_outbox
it_expect_exit d_table 78 "(d) missing outbox table"
it_expect_in d_table err "(d) message names the missing table" \
	outbox.table public.no_such_outbox "does not exist"

it_run_relay d_column --config "$cfg" --set table.field.event.key=no_such_column
it_expect_exit d_column 78 "(d) missing key column"
it_expect_in d_column err "(d) message names the key and the column" \
	table.field.event.key '"no_such_column"' "does not exist"

# ---------------------------------------------------------------- (e)
bad=$IT_TEST_DIR/unknown.conf
cp "$cfg" "$bad"
echo "no.such.key = 1" >>"$bad"
line=$(wc -l <"$bad")
it_run_relay e_unknown_file --config "$bad"
it_expect_exit e_unknown_file 78 "(e) unknown key in the file"
it_expect_in e_unknown_file err "(e) message is FILE:LINE: unknown key" \
	"$bad:$line: unknown key \"no.such.key\""

bad=$IT_TEST_DIR/badint.conf
cp "$cfg" "$bad"
echo "status.interval.ms = ten" >>"$bad"
line=$(wc -l <"$bad")
it_run_relay e_badint --config "$bad"
it_expect_exit e_badint 78 "(e) bad integer in the file"
it_expect_in e_badint err "(e) message is FILE:LINE: key: not an integer" \
	"$bad:$line: status.interval.ms: \"ten\" is not an integer"

it_run_relay e_set --config "$cfg" --set no.such.key=1
it_expect_exit e_set 78 "(e) --set with an unknown key"
it_expect_in e_set err "(e) message names --set and the key" \
	'--set: unknown key "no.such.key"'

OUTBOX_RELAY_SLOT_NAM=x it_run_relay e_env --config "$cfg"
it_expect_exit e_env 78 "(e) unknown OUTBOX_RELAY_ variable"
it_expect_in e_env err "(e) message names the variable" \
	"OUTBOX_RELAY_SLOT_NAM: unknown configuration variable"

it_run_relay e_idem --config "$cfg" --set kafka.enable.idempotence=false
it_expect_exit e_idem 78 "(e) kafka.enable.idempotence=false refused"
it_expect_in e_idem err "(e) message names the property and producer.allow.unsafe" \
	kafka.enable.idempotence=false producer.allow.unsafe=true

# Accepted with producer.allow.unsafe=true: the relay streams, and stops
# cleanly on SIGTERM.
log=$IT_TEST_DIR/e_unsafe.log
it_start_relay "$cfg" "$log" --set kafka.enable.idempotence=false \
	--set producer.allow.unsafe=true
for ((i = 0; i < 150; i++)); do
	grep -q 'streaming from slot' "$log" 2>/dev/null && break
	it_relay_alive || break
	sleep 0.2
done
if grep -q 'streaming from slot' "$log"; then
	ok "(e) kafka.enable.idempotence=false accepted with producer.allow.unsafe=true"
else
	not_ok "(e) kafka.enable.idempotence=false accepted with producer.allow.unsafe=true" \
		"$(it_show_log "$log")"
fi
it_stop_checked "(e) that relay exits 0 on SIGTERM"

it_run_relay e_kprop --config "$cfg" --set kafka.no.such.property=1
it_expect_exit e_kprop 78 "(e) unknown librdkafka property"
it_expect_in e_kprop err "(e) message is librdkafka's, with the property" \
	"kafka.no.such.property" 'No such configuration property: "no.such.property"'

it_run_relay e_kval --config "$cfg" --set kafka.linger.ms=abc
it_expect_exit e_kval 78 "(e) invalid librdkafka property value"
it_expect_in e_kval err "(e) message is librdkafka's, with the property" \
	"kafka.linger.ms" "Invalid value for configuration property"

# A conninfo libpq cannot parse can never work: a bad value, so 78 like
# every other one, not a reconnect loop (README: "An unknown key or a bad
# value stops the relay with ... exit code 78"). Short timeout: a relay
# that retries it is still running after 10 s.
IT_RUN_TIMEOUT=10 it_run_relay e_conninfo --config "$cfg" \
	--set "pg.conninfo=host=127.0.0.1 no_such_option=1"
it_expect_exit e_conninfo 78 "(e) pg.conninfo that libpq cannot parse"
it_expect_in e_conninfo err "(e) message names pg.conninfo" pg.conninfo

# ---------------------------------------------------------------- (f)
pc=$IT_TEST_DIR/prec.conf
it_write_config "$pc" "$db" slot_a
it_run_relay f_file --config "$pc" --print-config
it_expect_exit f_file 0 "(f) --print-config, file only"
it_check "(f) file alone: slot.name = slot_a # file" \
	grep -qxF "slot.name = slot_a # file" "$IT_TEST_DIR/f_file.out"
OUTBOX_RELAY_SLOT_NAME=slot_b it_run_relay f_env --config "$pc" --print-config
it_check "(f) file + env: slot.name = slot_b # env" \
	grep -qxF "slot.name = slot_b # env" "$IT_TEST_DIR/f_env.out"
OUTBOX_RELAY_SLOT_NAME=slot_b it_run_relay f_flag --config "$pc" --print-config \
	--set slot.name=slot_c
it_expect_exit f_flag 0 "(f) --print-config, file + env + flag"
it_check "(f) file + env + flag: slot.name = slot_c # flag" \
	grep -qxF "slot.name = slot_c # flag" "$IT_TEST_DIR/f_flag.out"
it_check "(f) exactly one slot.name line" \
	test "$(grep -c '^slot.name = ' "$IT_TEST_DIR/f_flag.out")" -eq 1

# ---------------------------------------------------------------- (g)
it_run_relay g_help --help
it_expect_exit g_help 0 "(g) --help"
it_check "(g) --help lists --config" \
	grep -q -e '--config' "$IT_TEST_DIR/g_help.out"
it_check "(g) --help lists --set" grep -q -e '--set' "$IT_TEST_DIR/g_help.out"
it_run_relay g_version --version
it_expect_exit g_version 0 "(g) --version"
it_check "(g) --version prints the name and a version" \
	grep -qE '^outbox-relay [0-9]' "$IT_TEST_DIR/g_version.out"
it_run_relay g_bogus --no-such-flag
it_expect_exit g_bogus 64 "(g) unknown flag"
it_run_relay g_arg --config "$cfg" stray-argument
it_expect_exit g_arg 64 "(g) stray argument"

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
