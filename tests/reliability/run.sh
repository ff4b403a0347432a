#!/usr/bin/env bash
# tests/reliability/run.sh -- the reliability matrix: runs the fault
# scenarios of docs/reliability.md (integration tests against the real
# PostgreSQL and Kafka, each ending with the independent checker where it
# publishes under load) and prints one row per scenario: rounds, events
# committed, consumed, missing, duplicates, order violations, wall time,
# result. `make reliability` runs it with the CI round counts, `make soak`
# with more (SOAK=1: F1 100 kills, a 300 s crash loop). Exits non-zero
# when any scenario failed.
#
# RELAY_DELIVERY=exactly-once (make reliability-eos) runs every scenario
# with delivery.guarantee = exactly-once: the checker then wants no
# duplicate at all from its read_committed consumer (--no-dups) and
# reports what a read_uncommitted one saw (the "ru dups" column: copies
# from aborted Kafka transactions). The mode column says which guarantee
# each row ran under (EOS, t195, is exactly-once in either run).
#
#   tests/reliability/run.sh            every scenario
#   tests/reliability/run.sh F1 F19     only these
#   RELAY_DELIVERY=exactly-once tests/reliability/run.sh EOS F1
set -euo pipefail
cd "$(dirname "$0")/../.."

# id | test (name prefix) | what a pass proves
matrix=(
	"F1|t500_kill9_rounds|SIGKILL at random points under the rich workload: nothing lost or leaked, re-deliveries only suffixes"
	"crash-loop|t510_crash_loop|SIGKILL every 1-3 s: progress in every third, nothing lost"
	"hang: silent peer|t590_silent_peer|a peer silent while a session starts (bounded, reconnected), on the watchdog's connection (sampling resumes, SIGTERM completes), or after an ErrorResponse (logged, reconnected)"
	"reset/cut|t585_pg_reset_cut|connections reset or cut mid-stream, delay: nothing lost"
	"F3|t560_pg_crash|PostgreSQL pg_ctl stop -m immediate under load: nothing lost, the relay stays up"
	"F5|t570_half_open|half-open TCP to PostgreSQL (proxy blackhole): noticed, reconnected, nothing lost"
	"F6|t575_walsender_stall|a stalled walsender (SIGSTOP) under load: nothing lost"
	"F22|t580_stream_error|a server-side error on the stream (proxy ErrorResponse): nothing lost"
	"F7/F8 mock faults|t550_mock_faults|leader change, broker down/up, retriable and fatal Produce errors, RTT on the mock cluster under load: nothing lost, re-deliveries only suffixes"
	"F7/F8 broker errors|t250_broker_refusals|records the broker refuses, mock-cluster pushed errors: named, fail-stop, nothing confirmed past"
	"F7 leaderless|t255_stuck_event|a partition without leader: reading pauses, memory bounded, nothing lost"
	"broker stop|t120_kafka_down|the broker killed and restarted: nothing lost, nothing confirmed past it"
	"cluster|t800_kafka_cluster|three-node cluster, RF 3, min.insync.replicas 2: the leader killed -9 three times, then two nodes down (produce waits): nothing lost, re-deliveries only suffixes"
	"broker SIGSTOP|t305_stalls|broker and walsender stopped: not ready within bounds"
	"F10|t310_slot_bloat|retained WAL to warn and critical"
	"F11|t320_slot_lost|slot invalidated: exit 69, never recreated"
	"F12|t180_slot_recreated|slot dropped and created again: refused"
	"restore|t170_back_in_time|database restored to an earlier copy: exit 69, nothing lost afterwards"
	"restore EOS|t196_eos_restore|exactly-once only: a restored database whose WAL passed the ledger's LSN: the events it commits arrive, or exit 69 (never skipped)"
	"reconnect|t160_reconnect_no_replay|walsender terminated, server crash: nothing acked published again"
	"F13|t330_heartbeat_idle|idle database next to a busy one: WAL released"
	"F15|t230_big_txn_memory|1,000,000-row transaction: bounded RSS, nothing lost"
	"F17|t540_hostile_values|hostile names and values: byte-exact"
	"F18|t527_failover|primary killed, standby promoted (17 failover slot; 17 standby held back; 16): goes on with nothing lost and no ghost, or exit 69"
	"F19|t520_standby_takeover|two relays, active killed: takeover, nothing lost"
	"F20|t530_partitioner|key to partition equals the Java client's murmur2"
	"F21|t140_sigterm_load|SIGTERM under load: exit 0, nothing lost"
	"EOS|t195_exactly_once|exactly-once (always): 50 kills, PostgreSQL crashes, broker kill, takeover and a fenced zombie, two relays sharing the ledger in host crashes: read_committed sees each committed event once, in order"
)
# t800 runs only when asked (it is not part of make check).
export IT_KAFKA_CLUSTER=1
if [[ -n ${SOAK:-} ]]; then
	export F1_ROUNDS=${F1_ROUNDS:-100} LOOP_SECS=${LOOP_SECS:-300}
	export IT_TEST_TIMEOUT=${IT_TEST_TIMEOUT:-1800}
fi

want=()
prefixes=()
for row in "${matrix[@]}"; do
	IFS='|' read -r id t _ <<<"$row"
	if (($# > 0)); then
		sel=
		for a in "$@"; do [[ $id == "$a" || $id == "$a "* ]] && sel=1; done
		[[ -n $sel ]] || continue
	fi
	if compgen -G "tests/integration/$t*.sh" >/dev/null; then
		want+=("$row")
		prefixes+=("$t")
	fi
done
if ((${#prefixes[@]} == 0)); then
	echo "reliability: no scenario selected" >&2
	exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
tests/integration/run.sh "${prefixes[@]}" 2>&1 | tee "$log" || rc=$?

machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -r)"
echo
echo "## Reliability matrix, $(date -u +%Y-%m-%d), delivery.guarantee = ${RELAY_DELIVERY:-at-least-once}, $machine"
echo
echo "| scenario | test | mode | rounds | committed | consumed | missing | duplicates | ru dups | order violations | wall | result |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
python3 - "$log" "${RELAY_DELIVERY:-at-least-once}" "${want[@]}" <<'PY'
import re, sys
log = open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n")
run_mode = sys.argv[2]
rows = [r.split("|", 2) for r in sys.argv[3:]]
cur, per = None, {}
for line in log:
    m = re.match(r"^# ---- (t\S+)$", line)
    if m:
        cur = m.group(1)
        per[cur] = {"ok": 0, "fail": 0, "rows": [], "time": "?"}
        continue
    if cur is None:
        continue
    d = per[cur]
    if line.startswith("ok "):
        d["ok"] += 1
    elif line.startswith("not ok"):
        d["fail"] += 1
    m = re.match(r"^# row: (.*)$", line)
    if m:
        row = {}
        for kv in m.group(1).split():
            if "=" in kv:
                k, v = kv.split("=", 1)
                row.setdefault(k, v)
        d["rows"].append(row)
    m = re.match(r"^# time (\S+) (\d+) s$", line)
    if m and m.group(1) == cur:
        d["time"] = m.group(2) + " s"
for id_, t, _ in rows:
    name = next((n for n in per if n.startswith(t)), None)
    if name is None:
        print(f"| {id_} | {t} | {run_mode} | | | | | | | | | not run |")
        continue
    d = per[name]
    res = "pass" if d["fail"] == 0 and d["ok"] > 0 else "FAIL"
    # A test with several rows (t195: one a fault) gets a line for each;
    # its result and time are the test's.
    for r in d["rows"] or [{}]:
        label = id_ if len(d["rows"]) < 2 else f"{id_} {r.get('scenario', '')}"
        order = r.get("order_violations", "")
        print(f"| {label} | {name} | {r.get('mode', run_mode)} | {r.get('rounds', '')} | "
              f"{r.get('committed', '')} | {r.get('consumed', '')} | "
              f"{r.get('missing', '')} | {r.get('duplicates', '')} | "
              f"{r.get('ru_duplicates', '')} | {order} | {d['time']} | {res} "
              f"({d['ok']} checks) |")
PY
exit "$rc"
