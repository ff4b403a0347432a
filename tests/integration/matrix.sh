#!/usr/bin/env bash
# tests/integration/matrix.sh -- `make check-pg-matrix`: the pgoutput
# integration tests that depend on the server, on each PostgreSQL major
# of the version matrix (server binaries from tests/env/pgdist.sh; Debian
# packages 15 only, which make check covers with wal2json and pgoutput).
#
#   tests/integration/matrix.sh             the subset below on 16, 17, 18
#   tests/integration/matrix.sh t430 t700   other tests (run.sh prefixes)
#
# For each version: RELAY_PLUGIN=pgoutput tests/integration/run.sh with
# PG_BIN from pgdist.sh (its own servers, ports IT_PGPORT/IT_KAFKA_PORT as
# run.sh), then one summary line per version, and last the closing line
# "N passed, N failed, N skipped" summed over the versions. Exits non-zero
# if anything failed, a version whose binaries cannot be fetched included.
#
# Knobs: PG_MATRIX_VERSIONS (default "16 17 18"), PGDIST_CACHE (where
# pgdist.sh keeps the binaries, default .tmp/pgdist), and run.sh's.
#
# The subset, with its seconds on 16.14 / 17.10 / 18.4 in the first run
# (a busy 2-core machine; each version's run.sh took 127 / 115 / 126 s
# with its server starts, the matrix 368 s):
#   t170 the back-in-time guard: a restored copy of the data
#        directory (16 / 13 / 15)
#   t172 a promotion under the relay: followed when the new timeline
#        holds everything published, exit 69 when it branched before,
#        the slot missing on a promoted server (about 14 s each)
#   t300 health endpoints, /slot, /metrics (26 / 24 / 26)
#   t310 the watchdog on a slot that retains WAL: /slot warn and
#        critical, alerts (22 / 22 / 25)
#   t320 a slot the server invalidates while it streams: wal_status
#        lost, exit 69, nothing recreated (23 / 23 / 21)
#   t430 the runbook actions on a pgoutput slot: --check, --slot-status,
#        --create-slot, --dry-run, --skip-transaction [--to-dlq],
#        --advance-slot, --drop-slot (8 / 8 / 7)
#   t435 the slot columns each version has, --create-slot with
#        failover (17+), --check's failover items against a standby
#        with sync_replication_slots, 18's idle_replication_slot_timeout
#        (about 5 / 15 / 18 s)
#   t700 streaming rows and outbox_emit() messages, heartbeats, the
#        resume after a reconnect (acked events skipped) (14 / 14 / 14)
# Left out for the time budget (seconds on 17.10, all passed there):
# t160 resume (20; t700 (b) resumes the same way), t150 (32), t220 (36),
# t305 (24), t330 heartbeats under load (118), t560 (25), t600 (12).
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=tally.sh
source tests/integration/tally.sh

SUBSET=(t170 t172 t300 t310 t320 t430 t435 t700)
read -r -a versions <<<"${PG_MATRIX_VERSIONS:-16 17 18}"
if (($# > 0)); then
	tests=("$@")
else
	tests=("${SUBSET[@]}")
fi

pass=0
fail=0
skipped=0
summary=()
failed_versions=()
t0=$SECONDS
for v in "${versions[@]}"; do
	echo "# ==== PostgreSQL $v: ${tests[*]}"
	v_start=$SECONDS
	if ! bin=$(tests/env/pgdist.sh "$v"); then
		summary+=("PostgreSQL $v: no server binaries (tests/env/pgdist.sh $v failed)")
		fail=$((fail + 1))
		failed_versions+=("$v")
		continue
	fi
	ver=$("$bin/postgres" --version | awk '{print $NF}')
	log=$(mktemp)
	rc=0
	PG_BIN=$bin RELAY_PLUGIN=pgoutput tests/integration/run.sh "${tests[@]}" \
		2>&1 | tee "$log" || rc=$?
	it_tally "$log" "$rc"
	rm -f "$log"
	((f == 0)) || failed_versions+=("$v")
	summary+=("PostgreSQL $ver: $p passed, $f failed, $s skipped ($((SECONDS - v_start)) s)")
done

echo "# ==== version matrix (pgoutput), $((SECONDS - t0)) s: ${tests[*]}"
for line in "${summary[@]}"; do
	echo "# $line"
done
((${#failed_versions[@]} == 0)) || echo "# failed on: ${failed_versions[*]}"
echo "$pass passed, $fail failed, $skipped skipped"
((fail == 0))
