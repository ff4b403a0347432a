#!/usr/bin/env bash
# tests/bench/deps.sh -- what `make bench` needs beyond tests/env/deps.sh
# (run first by `make bench-deps`), installed only when missing:
#   1. Debian packages: matplotlib for Debian's own python3 (the plots),
#      strace (syscall counts of the relay's CPU profile);
#   2. a Kafka Connect 4.3.0 standalone worker and Debezium 3.6.1.Final's
#      PostgreSQL connector with its Outbox Event Router, by Maven from
#      tests/bench/connect/pom.xml into tests/bench/connect/target/dependency
#      (tests/env/debezium_deps.sh);
#   3. librdkafka 2.12.1 (tests/env/rdkafka.sh) for the -rdk systems.
set -euo pipefail

cd "$(dirname "$0")/../.."

# shellcheck source=../env/apt.sh
source tests/env/apt.sh
apt_ensure bench-deps python3-matplotlib strace

tests/env/debezium_deps.sh

# The -rdk systems: the relay on a current librdkafka (the same build
# make check-rdkafka uses). Without cargo they are skipped, not failed.
if ! tests/env/rdkafka.sh >/dev/null; then
	echo "bench-deps: no librdkafka 2.12.1 (tests/env/rdkafka.sh failed): make bench skips the -rdk systems" >&2
fi
