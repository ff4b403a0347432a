#!/usr/bin/env bash
# tests/lint/boundaries.sh -- the module boundaries of docs/design.md,
# checked by grep (make boundaries, part of make check). Each rule keeps
# one copy of a policy: when the runbook CLI grows its own SQL about the
# slot or its own producer settings, the copies drift (issue 9).
#
# Prints "ok - RULE" or "not ok - RULE" with the offending lines, ends
# with "N passed, N failed" and exits non-zero when a rule is broken.
set -uo pipefail

cd "$(dirname "$0")/../.."

pass=0
fail=0

# rule NAME OUTPUT: OUTPUT is what the grep found; empty means kept.
rule()
{
	if [[ -z $2 ]]; then
		pass=$((pass + 1))
		echo "ok - $1"
	else
		fail=$((fail + 1))
		echo "not ok - $1"
		printf '%s\n' "$2" | sed 's/^/#   /'
	fi
}

# 1. The runbook is reached through main.c only: no other daemon module
#    includes its headers, so the CLI never becomes a dependency of the
#    relay.
rule "only main.c includes cli.h" \
	"$(grep -rlE '#include "(cli|cli_int|check_int)\.h"' src include |
		grep -vE '^(src/main\.c|src/cli/|include/cli\.h$)')"

# 2. The SQL about the slot and the table lives in slot.c: src/cli/ names
#    pg_replication_slots or pg_attribute only in comments, never in a
#    string it could send.
rule "src/cli/ sends no SQL about the slot or the table" \
	"$(grep -rnE '"[^"]*(pg_replication_slots|pg_attribute|pg_class)' src/cli/)"

# 3. Producer properties come from kafka_conf.c's table: src/cli/ sets
#    none itself (callbacks, rd_kafka_conf_set_*_cb, are its own).
rule "src/cli/ sets no producer property (kafka_conf.c does)" \
	"$(grep -rnE 'rd_kafka_conf_set[[:space:]]*\(' src/cli/)"

# 4. wal2json's options are built in stream_spec.c only, not by editing
#    the START_REPLICATION command string.
rule "wal2json options come from stream_spec.c" \
	"$(grep -rnE '"(include-xids|add-msg-prefixes|format-version)"' src |
		grep -v '^src/stream_spec\.c:')"

# 5. relay.c reads the LSN tracker and the replication stream through
#    their functions (lsn_tracker.h, repl.h), not their fields: the loop
#    then cannot come to depend on how either keeps its books.
rule "relay.c reads the tracker and the stream through their functions" \
	"$(grep -nE '(r->|\b)(lt|rs)(\.|->)[a-z_]' src/relay.c |
		grep -vE '^[0-9]+:[[:space:]]*(/?\*)')"

echo "$pass passed, $fail failed"
((fail == 0))
