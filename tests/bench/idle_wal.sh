#!/usr/bin/env bash
# tests/bench/idle_wal.sh -- retained WAL of an idle outbox next to a busy
# database, ROUNDS (10) times: runs tests/integration/t330_heartbeat_idle
# (heartbeats every 1 s, then off; 40 s of pgbench in another database at
# 800 tx/s, about 0.4 MB of WAL a second) and prints, per round, the peak
# retained WAL of the slot (pg_current_wal_lsn() - restart_lsn, sampled
# every 0.5 s) in each phase, then the worst of all rounds. A figure, not
# a test: t330 asserts its own bounds.
#
#   tests/bench/idle_wal.sh            10 rounds
#   ROUNDS=3 tests/bench/idle_wal.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-10}
worst_a=0
worst_b=0
for ((r = 1; r <= rounds; r++)); do
	out=$(mktemp)
	tests/integration/run.sh t330 >"$out" 2>&1 || true
	a=$(sed -n 's/^# (a) heartbeat.interval.ms=1000: .* peak=\([0-9]*\) .*/\1/p' "$out" | sed -n 1p)
	b=$(sed -n 's/^# (b) heartbeat.interval.ms=0: .* peak=\([0-9]*\) .*/\1/p' "$out" | sed -n 1p)
	res=$(tail -n1 "$out")
	rm -f "$out"
	printf 'round %2d: peak retained WAL, heartbeats 1 s: %s MiB; off: %s MiB (%s)\n' "$r" \
		"$(awk -v x="${a:-0}" 'BEGIN { printf "%.1f", x / 1048576 }')" \
		"$(awk -v x="${b:-0}" 'BEGIN { printf "%.1f", x / 1048576 }')" "$res"
	((${a:-0} > worst_a)) && worst_a=$a
	((${b:-0} > worst_b)) && worst_b=$b
done
printf 'worst of %d rounds: heartbeats 1 s %s MiB, off %s MiB\n' "$rounds" \
	"$(awk -v x="$worst_a" 'BEGIN { printf "%.1f", x / 1048576 }')" \
	"$(awk -v x="$worst_b" 'BEGIN { printf "%.1f", x / 1048576 }')"
