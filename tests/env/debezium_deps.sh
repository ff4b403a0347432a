#!/usr/bin/env bash
# tests/env/debezium_deps.sh -- a Kafka Connect 4.3.0 standalone worker and
# Debezium 3.6.1.Final's PostgreSQL connector with its Outbox Event Router,
# by Maven from tests/bench/connect/pom.xml into
# tests/bench/connect/target/dependency, when missing. Used by make bench
# (tests/bench/deps.sh), make check-debezium (t850) and
# tests/fixtures/record_debezium.sh (tests/env/debezium.sh runs them).
set -euo pipefail

cd "$(dirname "$0")/../.."

dep=tests/bench/connect/target/dependency
if compgen -G "$dep/debezium-connector-postgres-*.jar" >/dev/null &&
	compgen -G "$dep/connect-runtime-*.jar" >/dev/null; then
	exit 0
fi
echo "debezium-deps: fetching Kafka Connect and Debezium (tests/bench/connect/pom.xml)"
mvn_log=$(mktemp)
if ! mvn -B -q -f tests/bench/connect/pom.xml dependency:copy-dependencies \
	>"$mvn_log" 2>&1; then
	cat "$mvn_log" >&2
	rm -f "$mvn_log"
	echo "debezium-deps: Maven could not fetch Connect and Debezium" >&2
	exit 1
fi
rm -f "$mvn_log"
if ! compgen -G "$dep/debezium-connector-postgres-*.jar" >/dev/null; then
	echo "debezium-deps: Maven ran but $dep has no Debezium jar" >&2
	exit 1
fi
