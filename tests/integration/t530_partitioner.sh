#!/usr/bin/env bash
# t530_partitioner -- reliability matrix F20: a key goes to the partition
# the Java producer would pick, so relay and Java producers writing the
# same topic keep one key in one partition. A 12-partition topic (made
# with the Java AdminClient), 10,000 events with distinct keys (ASCII,
# unicode, long, short, digits); the partition each record landed on
# (kcat) must equal the Java client's murmur2 for its key, computed with
# the kafka-clients jar the tests fetch (tests/integration/java/
# PartitionOf.java).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

N=10000
PARTS=12
it_scenario t530_partitioner
jar=$(compgen -G "$KAFKA_JARS/kafka-clients-*.jar" | sed -n 1p)
src=$IT_ROOT/tests/integration/java/PartitionOf.java
java_run() { java -Xmx256m -cp "$jar:$KAFKA_JARS/*" "$src" "$@"; }

if java_run create "$KAFKA_BROKERS" "$topic" "$PARTS" >"$IT_TEST_DIR/create.log" 2>&1; then
	ok "topic $topic with $PARTS partitions (Java AdminClient)"
else
	not_ok "topic $topic with $PARTS partitions" "$(tail -n 5 "$IT_TEST_DIR/create.log")"
	it_summary
fi
it_write_config "$conf" "$db"
it_start_relay "$conf" "$log"
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
it_sql "$db" "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload)
	SELECT gen_random_uuid(), '$type',
	       CASE i % 5 WHEN 0 THEN 'order-' || i
	                  WHEN 1 THEN 'ü€😀-' || i
	                  WHEN 2 THEN repeat('k', 1 + i % 300) || i
	                  WHEN 3 THEN i::text
	                  ELSE md5(i::text) END,
	       'E', '{}'
	FROM generate_series(1, $N) AS i" >/dev/null
out=$IT_TEST_DIR/out.tsv
got=0
for ((i = 0; i < 120; i++)); do
	timeout 60 kcat -b "$KAFKA_BROKERS" -C -t "$topic" -o beginning -e -q \
		-f '%k\t%p\n' >"$out" 2>/dev/null || true
	got=$(grep -c . "$out" || true)
	((got >= N)) && break
	sleep 0.5
done
it_check "$N records consumed (got $got)" test "$got" -ge "$N"
cut -f1 "$out" | java_run partition "$PARTS" >"$IT_TEST_DIR/java.tsv" 2>"$IT_TEST_DIR/java.err" || true
result=$(python3 - "$out" "$IT_TEST_DIR/java.tsv" <<-'PY'
	import sys
	relay = [l.rstrip("\n").rsplit("\t", 1) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
	java = [l.rstrip("\n").rsplit("\t", 1) for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
	want = dict(java)
	bad = [(k, p, want.get(k)) for k, p in relay if want.get(k) != p]
	used = len({p for _, p in relay})
	print(f"{len(relay)} {len(java)} {len(bad)} {used} {bad[:3]!r}")
	PY
)
read -r nrelay njava nbad used rest <<<"$result"
it_diag "records $nrelay, Java answers $njava, mismatches $nbad, partitions used $used ${rest}"
if [[ $nrelay == "$N" && $njava == "$N" && $nbad == 0 ]]; then
	ok "F20: all $N keys on the Java client's murmur2 partition ($used of $PARTS partitions used)"
else
	not_ok "F20: all $N keys on the Java client's murmur2 partition" "$result $(head -c 300 "$IT_TEST_DIR/java.err")"
fi
it_diag "row: scenario=F20 rounds=1 keys=$N mismatches=${nbad:-?} partitions_used=${used:-?}"
it_stop_checked "relay exits 0"

it_summary
