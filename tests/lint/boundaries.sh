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
rule "only main.c includes cli/cli.h" \
	"$(grep -rlE '#include "(cli/cli|cli_int|check_int)\.h"' src include |
		grep -vE '^(src/main\.c|src/cli/|include/cli/cli\.h$)')"

# 2. The SQL about the slot and the table lives in src/pg/slot*.c: src/cli/ names
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
		grep -v '^src/decode/stream_spec\.c:')"

# 5. The loop (src/relay/, but the tracker itself) reads the LSN tracker
#    and the replication stream through their functions (lsn_tracker.h,
#    repl.h), not their fields: the loop then cannot come to depend on
#    how either keeps its books.
rule "the loop reads the tracker and the stream through their functions" \
	"$(grep -nE '(r->|\b)(lt|rs)(\.|->)[a-z_]' src/relay/*.c |
		grep -v '^src/relay/lsn_tracker\.c:' |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*)')"

# 5b. The loop reaches the producer through the Kafka seam
#     (relay/kafka_port.h) only: kafka_port_rd.c is the one file of
#     src/relay/ that calls publisher.h's producer functions, so the unit
#     tests' fake sees every call the loop makes.
rule "the loop calls the producer through the seam (kafka_port.h)" \
	"$(grep -nE '\bpub_(new|send|poll|nudge|event_fd|event_fd_drain|fatal|auth_failed|outq_len|contact_age_us|broker_up|stats|error_count|free)[[:space:]]*\(' src/relay/*.c |
		grep -v '^src/relay/kafka_port_rd\.c:' |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*)')"

# 5c. The loop's insides (relay/relay_int.h: struct relay and the
#     functions its files share with the unit tests and fuzz_relay) stay
#     inside src/relay/: the daemon sees relay/relay.h only.
rule "only src/relay/ includes relay/relay_int.h" \
	"$(grep -rlE '#include "relay/relay_int\.h"' src include |
		grep -vE '^(src/relay/|include/relay/relay_int\.h$)')"

# 6. The folders are layers of the pipeline (docs/design.md): a folder
#    includes headers of its own and of the folders below it, never of one
#    above. lib/ is the floor; the decoders know nothing of PostgreSQL's
#    connection or of Kafka; the watchdog and health rules read the slot
#    (pg/) but are not read by it; only the loop (relay/) sees everything,
#    and the runbook (cli/) shares every module but the loop.
declare -A below=(
	[lib]="lib"
	[decode]="lib decode"
	[pg]="lib decode pg"
	[kafka]="lib decode kafka"
	[health]="lib decode pg health"
	[relay]="lib decode pg kafka health relay"
	[cli]="lib decode pg kafka health cli"
)
for d in lib decode pg kafka health relay cli; do
	allowed=${below[$d]// /|}
	rule "$d/ includes only from $(printf '%s/ ' ${below[$d]})" \
		"$(grep -rnE '#include "[a-z_]+/' "src/$d" "include/$d" 2>/dev/null |
			grep -vE "#include \"($allowed)/")"
done

# 7. No two modules call each other, by the symbols their objects define
#    and use (make boundaries builds them first): a circle means neither
#    can be read, tested or replaced alone.
circles=
if compgen -G 'build/obj/*/*.o' >/dev/null; then
	tmp=$(mktemp -d)
	for o in build/obj/*/*.o; do
		m=${o#build/obj/}
		m=${m%.o}
		nm --defined-only -g "$o" | awk -v m="$m" '{print $3, m}' >>"$tmp/defs"
		nm -u "$o" | awk -v m="$m" '{print m, $2}' >>"$tmp/uses"
	done
	circles=$(awk 'NR == FNR { d[$1] = $2; next }
		($2 in d) && d[$2] != $1 { e[$1 " " d[$2]] = 1 }
		END { for (k in e) { split(k, p, " ")
			if ((p[2] " " p[1]) in e && p[1] < p[2]) print p[1] " <-> " p[2] } }' \
		"$tmp/defs" "$tmp/uses")
	rm -rf "$tmp"
else
	circles="build/obj has no objects: run make all first"
fi
rule "no two modules call each other (nm over build/obj)" "$circles"

# 8. The test hooks stay in the test build (build/test/): the binary that
#    make builds and make install installs has neither the stall hook nor
#    the alert backoff knob.
hooks=
if [[ -x build/outbox-relay ]]; then
	hooks=$(grep -ac 'RELAY_TEST_STALL_MS' build/outbox-relay | grep -v '^0$'
		nm build/outbox-relay 2>/dev/null | grep -w alert_set_backoff_for_tests)
else
	hooks="build/outbox-relay missing: run make all first"
fi
rule "build/outbox-relay has no test hook" "$hooks"

echo "$pass passed, $fail failed"
((fail == 0))
