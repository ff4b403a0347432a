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
# The subset (seconds per test on 17.10 with the suite's servers, measured
# on a busy 2-core machine; the whole matrix about 7 minutes):
#   t160 resume after a reconnect without republishing (the acked commit)
#   t170 the back-in-time guard: a restored copy of the data directory
#   t300 health endpoints, /slot, /metrics
#   t310 the watchdog on a slot that retains WAL: warn, critical, alerts
#   t320 a slot the server invalidates while streaming (wal_status lost)
#   t430 every runbook action on a pgoutput slot (--check, --slot-status,
#        --create-slot, --dry-run, --skip-transaction, --advance-slot,
#        --drop-slot)
#   t700 streaming rows and outbox_emit() messages, heartbeats, a resume
set -euo pipefail

cd "$(dirname "$0")/../.."

SUBSET=(t160 t170 t300 t310 t320 t430 t700)
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
	last=$(tail -n 1 "$log")
	rm -f "$log"
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
	else
		p=0 f=1 s=0
	fi
	# A failing status with a closing line that says 0 failed is a failure.
	((rc == 0 || f > 0)) || f=1
	pass=$((pass + p))
	fail=$((fail + f))
	skipped=$((skipped + s))
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
