#!/usr/bin/env bash
# t330_heartbeat_idle -- the outbox database stays idle while ANOTHER
# database of the same cluster takes heavy writes (pgbench scale 2, 2
# clients, rate-limited to PGBENCH_RATE (800) transactions/s, about
# 0.4 MB of WAL a second, for LOAD_SECS (40)).
# Run twice against the same slot, from a caught-up slot each time:
#  (a) heartbeat.interval.ms=1000
#  (b) heartbeat.interval.ms=0 (off, the default)
# Every 0.5 s the slot's retained WAL (pg_current_wal_lsn() - restart_lsn)
# and confirmed lag are sampled, during the load and SETTLE_SECS (15)
# after it.
#
# What the relay controls is confirmed_flush_lsn: it confirms each
# heartbeat it sees (and, with nothing in flight, the server's keepalive
# WAL end). restart_lsn follows on PostgreSQL's own schedule: only when
# the walsender decodes an xl_running_xacts record (the bgwriter logs one
# every 15 s while there is activity, and may hibernate up to 10 s more;
# a checkpoint logs one at once) and the client has confirmed past it,
# and under load only to the previous such record. So even a perfect
# client retains up to ~30-40 s of the cluster's WAL (measured with
# pg_recvlogical -s 1 too), whatever the heartbeats do. Hence the bounds:
#  - confirmed lag <= the WAL written in the last 5 s + 256 KiB at every
#    sample (the relay keeps confirming while its database is idle);
#  - retained WAL <= the WAL written in the last WINDOW_SECS (45) + 1 MiB
#    at every sample (restart_lsn keeps moving); a slot that stopped
#    moving while the other database is busy breaks it before the run
#    ends (load + settle = 55 s > 45 s, and the load wrote several MB in
#    its first 10 s);
#  - after the load, a CHECKPOINT (an xl_running_xacts record at once)
#    brings retained WAL under 1 MiB within 10 s: nothing pins the slot.
#
# Asserted for (a):
#  - the relay saw its heartbeats: /metrics outbox_relay_heartbeats_total
#    > 0 and outbox_relay_heartbeat_rtt_seconds present (and < 5 s);
#  - the three bounds above;
#  - heartbeats never reach Kafka: events_received_total and
#    events_published_total stay 0, no per-topic series, and the broker
#    has no topic it did not have before the run (nothing else publishes).
# For (b) the same figures are measured and printed side by side with
# (a), and nothing about them is asserted except that no heartbeat
# arrived during the run (one left in the slot by (a) may be counted at
# the start) and no event was received. Measured so far: (b) stays bounded too,
# with figures like (a)'s. The relay confirms the server's keepalive WAL
# end whenever nothing is in flight, and the walsender sends such
# keepalives whenever it has caught up, so on PostgreSQL 15 the slot moves
# without heartbeats as well; the seconds until retained WAL falls back
# after the load ("settle") depend on where the bgwriter's 15 s cycle
# stands, in both runs. The heartbeats' value here is the round-trip
# metric (a stalled walsender), not the bound.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t330_heartbeat_idle
busy=t330_busy
LOAD_SECS=${LOAD_SECS:-40}
SETTLE_SECS=${SETTLE_SECS:-15}
WINDOW_SECS=${WINDOW_SECS:-45}
PGBENCH_RATE=${PGBENCH_RATE:-800}
MIB=1048576

topics() {
	kcat -b "$KAFKA_BROKERS" -L -J -m 10 2>/dev/null |
		python3 -c 'import json,sys; print("\n".join(sorted(t["topic"] for t in json.load(sys.stdin)["topics"])))'
}

retained() {
	it_sql "$db" "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, -1)
		FROM pg_replication_slots WHERE slot_name = '$db'"
}

# sampler FILE: "ms retained current_lsn confirmed_lag" every 0.5 s until
# FILE.stop exists (bounded: at most 10 minutes).
sampler() {
	local f=$1 i
	for ((i = 0; i < 1200; i++)); do
		[[ ! -e $f.stop ]] || break
		it_sql "$db" "SELECT $(date +%s%3N),
			coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, -1),
			pg_current_wal_lsn(),
			coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint, -1)
			FROM pg_replication_slots WHERE slot_name = '$db'" 2>/dev/null |
			tr '|' ' ' >>"$f" || true
		sleep 0.5
	done
}

# figures SAMPLES LOAD_START_MS LOAD_END_MS: one line of key=value.
figures() {
	python3 - "$@" "$MIB" "$WINDOW_SECS" <<-'PY'
	import sys
	path, t0, t1, mib, window = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]) * 1000
	def lsn(s):
	    hi, lo = s.split("/")
	    return (int(hi, 16) << 32) | int(lo, 16)
	rows = []
	for line in open(path):
	    p = line.split()
	    if len(p) == 4:
	        rows.append((int(p[0]), int(p[1]), lsn(p[2]), int(p[3])))
	if not rows:
	    print("samples=0"); sys.exit()
	load = [r for r in rows if t0 <= r[0] <= t1]
	after = [r for r in rows if r[0] > t1]
	total = (max(r[2] for r in load) - min(r[2] for r in load)) if load else 0
	peak = max(r[1] for r in rows)
	# sliding bounds: retained <= WAL written in the window before + 1 MiB;
	# confirmed lag <= WAL written in the 5 s before + 256 KiB
	def written(r, span):
	    return r[2] - min(q[2] for q in rows if r[0] - span <= q[0] <= r[0])
	excess, worst = max((r[1] - (written(r, window) + mib), r[0]) for r in rows)
	lagexcess, lworst = max((r[3] - (written(r, 5000) + 262144), r[0]) for r in rows)
	settle = "never"
	for r in after:
	    if 0 <= r[1] < mib:
	        settle = "%.1f" % ((r[0] - t1) / 1000.0)
	        break
	drops = sum(1 for a, b in zip(load, load[1:]) if b[1] < a[1])
	lagmax = max(r[3] for r in rows)
	print("total=%d peak=%d end=%d settle=%s excess=%d worst_at=%.1f lagexcess=%d lagworst_at=%.1f drops=%d lagmax=%d samples=%d"
	      % (total, peak, rows[-1][1], settle, excess, (worst - t0) / 1000.0,
	         lagexcess, (lworst - t0) / 1000.0, drops, lagmax, len(rows)))
	PY
}

# phase NAME HB_MS: relay with heartbeat.interval.ms=HB_MS; a caught-up
# slot; LOAD_SECS of pgbench in the other database; SETTLE_SECS more. Sets
# F_<key> for every figure, the metrics in $IT_TEST_DIR/NAME.metrics.
phase() {
	local name=$1 hb=$2 conf log smp port rc t0 t1 spid r i
	conf=$IT_TEST_DIR/$name.conf
	log=$IT_TEST_DIR/$name.log
	smp=$IT_TEST_DIR/$name.samples
	it_write_config "$conf" "$db" http.listen=127.0.0.1:0 heartbeat.interval.ms="$hb" \
		watchdog.interval.ms=1000 status.interval.ms=1000
	it_start_relay "$conf" "$log"
	it_check "($name) relay holds the slot" it_wait_slot_active "$db" "$db" 30
	port=$(it_health_port "$log") || port=0
	# Start from a caught-up slot: a checkpoint logs the running
	# transactions at once, the relay confirms past them.
	it_sql postgres "CHECKPOINT"
	for ((i = 0; i < 60; i++)); do
		r=$(retained)
		((r >= 0 && r < MIB)) && break
		sleep 0.5
	done
	it_check "($name) slot caught up before the load (retained $r bytes)" \
		test "$r" -ge 0 -a "$r" -lt "$MIB"
	# The endpoint's snapshot trails the loop by up to a second: let it
	# show whatever the stream start replayed before taking the baseline.
	sleep 1.5
	curl -s -m 5 "http://127.0.0.1:$port/metrics" >"$IT_TEST_DIR/$name.metrics0" || true
	: >"$smp"
	rm -f "$smp.stop"
	sampler "$smp" &
	spid=$!
	t0=$(date +%s%3N)
	rc=0
	"$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres -c 2 -j 1 \
		-R "$PGBENCH_RATE" -T "$LOAD_SECS" "$busy" >"$IT_TEST_DIR/$name.pgbench" 2>&1 || rc=$?
	t1=$(date +%s%3N)
	it_check "($name) pgbench ran ${LOAD_SECS} s in $busy" test "$rc" -eq 0
	sleep "$SETTLE_SECS"
	touch "$smp.stop"
	wait "$spid" || true
	# Nothing pins the slot: one xl_running_xacts record and it catches up.
	it_sql postgres "CHECKPOINT"
	F_ckpt=never
	for ((i = 0; i < 50; i++)); do
		r=$(retained)
		if ((r >= 0 && r < MIB)); then
			F_ckpt=$(awk -v i="$i" 'BEGIN {printf "%.1f", i / 5}')
			break
		fi
		sleep 0.2
	done
	curl -s -m 5 "http://127.0.0.1:$port/metrics" >"$IT_TEST_DIR/$name.metrics" || true
	it_stop_checked "($name) relay exits 0 on SIGTERM"
	figures "$smp" "$t0" "$t1" >"$IT_TEST_DIR/$name.figures"
	unset F_total F_peak F_end F_settle F_excess F_drops F_lagmax F_samples F_worst_at F_lagexcess F_lagworst_at
	eval "$(tr ' ' '\n' <"$IT_TEST_DIR/$name.figures" | sed -n 's/^\([a-z_]*\)=\([0-9.a-z-]*\)$/F_\1=\2/p')"
	it_diag "($name) heartbeat.interval.ms=$hb: $(cat "$IT_TEST_DIR/$name.figures") ckpt=$F_ckpt; pgbench $(grep -E '^tps' "$IT_TEST_DIR/$name.pgbench" | head -n1)"
}

# ------------------------------------------------------------- setup
it_setup_db "$db"
it_drop_db "$busy"
it_sql postgres "CREATE DATABASE $busy"
if "$PG_BIN/pgbench" -i -q -s 2 -h 127.0.0.1 -p "$PGPORT" -U postgres "$busy" \
	>"$IT_TEST_DIR/pgbench-init.log" 2>&1; then
	ok "pgbench -i -s 2 in $busy"
else
	not_ok "pgbench -i -s 2 in $busy" "$(tail -n 5 "$IT_TEST_DIR/pgbench-init.log")"
	it_summary
fi
topics >"$IT_TEST_DIR/topics.before"

# ------------------------------------------------------------- (a) heartbeats on
phase a 1000
a_total=${F_total:-0} a_peak=${F_peak:--1} a_end=${F_end:--1} a_settle=${F_settle:-never}
a_excess=${F_excess:-x} a_drops=${F_drops:-0} a_lag=${F_lagmax:--1} a_worst=${F_worst_at:-}
a_lagexcess=${F_lagexcess:-x} a_lagworst=${F_lagworst_at:-} a_ckpt=$F_ckpt
m=$IT_TEST_DIR/a.metrics
hbs=$(it_metric_in "$m" outbox_relay_heartbeats_total)
rtt=$(it_metric_in "$m" outbox_relay_heartbeat_rtt_seconds)
it_check "(a) outbox_relay_heartbeats_total > 0 (got ${hbs:-none})" test "${hbs:-0}" -gt 0
it_check "(a) outbox_relay_heartbeat_rtt_seconds present and < 5 s (got ${rtt:-none})" \
	python3 -c 'import sys; v=float(sys.argv[1]); sys.exit(0 if 0 <= v < 5 else 1)' "${rtt:-x}"
it_check "(a) confirmed lag <= WAL of the last 5 s + 256 KiB at every sample (worst excess $a_lagexcess bytes at ${a_lagworst} s; peak lag $a_lag)" \
	test "$a_lagexcess" -le 0
it_check "(a) retained WAL <= WAL of the last ${WINDOW_SECS} s + 1 MiB at every sample (worst excess $a_excess bytes at ${a_worst} s; peak $a_peak of $a_total written)" \
	test "$a_excess" -le 0
it_check "(a) after the load, a CHECKPOINT brings retained WAL under 1 MiB within 10 s (after $a_ckpt s)" \
	test "$a_ckpt" != never
recv=$(it_metric_in "$m" outbox_relay_events_received_total)
pub=$(it_metric_in "$m" outbox_relay_events_published_total)
it_check "(a) heartbeats are not events: events_received_total 0, events_published_total 0 (got ${recv:-none}, ${pub:-none})" \
	test "${recv:-x}:${pub:-x}" = "0:0"
it_check "(a) no events_published_by_topic_total series" \
	bash -c "! grep -q '^outbox_relay_events_published_by_topic_total{' '$m'"

# ------------------------------------------------------------- (b) heartbeats off
phase b 0
b_total=${F_total:-0} b_peak=${F_peak:--1} b_end=${F_end:--1} b_settle=${F_settle:-never}
b_excess=${F_excess:-x} b_drops=${F_drops:-0} b_lag=${F_lagmax:--1}
b_lagexcess=${F_lagexcess:-x} b_ckpt=$F_ckpt
m=$IT_TEST_DIR/b.metrics
# A heartbeat that (a)'s watchdog wrote after (a)'s last confirm is
# replayed to (b) and recognised by its prefix (wal2json add-msg-prefixes
# is asked for it even with heartbeats off): counted, never published.
# So (b) asserts that no heartbeat arrived during its own run.
hbs_b0=$(it_metric_in "$IT_TEST_DIR/b.metrics0" outbox_relay_heartbeats_total)
hbs_b=$(it_metric_in "$m" outbox_relay_heartbeats_total)
it_check "(b) heartbeats off: outbox_relay_heartbeats_total did not grow during the run (${hbs_b0:-none} -> ${hbs_b:-none})" \
	test "${hbs_b0:-x}" = "${hbs_b:-y}"
[[ ${hbs_b0:-0} == 0 ]] || it_diag "(b) counted $hbs_b0 heartbeat(s) left in the slot by (a) at its start"
recv=$(it_metric_in "$m" outbox_relay_events_received_total)
it_check "(b) events_received_total 0 (got ${recv:-none})" test "${recv:-x}" = 0

topics >"$IT_TEST_DIR/topics.after"
# The slot ledger (slot.ledger.topic, default outbox-relay.slots) is the
# relay's own record, created at its first confirm when no earlier test
# made it: not a heartbeat published.
new=$(comm -13 "$IT_TEST_DIR/topics.before" "$IT_TEST_DIR/topics.after" |
	grep -vx 'outbox-relay\.slots' | tr '\n' ' ' || true)
it_check "no topic appeared on the broker during (a) and (b)${new:+: $new}" test -z "$new"

it_diag "side by side                                (a) heartbeat 1 s   (b) heartbeat off"
row() { it_diag "$(printf '%-44s %17s %19s' "$1" "$2" "$3")"; }
row "WAL written during the ${LOAD_SECS} s load (bytes)" "$a_total" "$b_total"
row "retained WAL, peak (bytes)" "$a_peak" "$b_peak"
row "retained WAL, last sample (bytes)" "$a_end" "$b_end"
row "worst excess over the ${WINDOW_SECS} s bound (bytes)" "$a_excess" "$b_excess"
row "restart_lsn moves seen during the load" "$a_drops" "$b_drops"
row "confirmed lag, peak (bytes)" "$a_lag" "$b_lag"
row "worst excess over the 5 s lag bound (bytes)" "$a_lagexcess" "$b_lagexcess"
row "seconds to < 1 MiB after the load (no help)" "$a_settle" "$b_settle"
row "seconds to < 1 MiB after a CHECKPOINT" "$a_ckpt" "$b_ckpt"
if [[ $b_ckpt != never && ${b_excess:-1} -le 0 && ${b_lagexcess:-1} -le 0 ]]; then
	it_diag "(b) stayed bounded without heartbeats as well (keepalive confirms)"
fi

it_drop_db "$busy" >/dev/null 2>&1 || true
it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
