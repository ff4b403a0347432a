#!/usr/bin/env bash
# t620_dashboard_metrics -- every outbox_relay_* metric that the Grafana
# dashboard (deploy/grafana/outbox-relay.json) and the alert rules
# (deploy/prometheus/*.yml, and so deploy/k8s/prometheusrule.yaml) query
# is one the relay exports: a family in a streaming relay's /metrics
# (a histogram's _bucket, _sum and _count count as its family), after an
# event went through. A renamed metric fails here, not on a dashboard.
# The outbox_relay_reconcile_* gauges of the alert rules are checked
# against the file --reconcile --metrics-file writes instead.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t620_dashboard_metrics
type=t620_$(date +%s)
it_setup_db "$db"
conf=$IT_TEST_DIR/relay.conf
it_write_config "$conf" "$db" watchdog.interval.ms=1000
log=$IT_TEST_DIR/relay.log
it_start_relay "$conf" "$log"
port=$(it_health_port "$log") || port=
it_check "relay streams" it_wait_slot_active "$db" "$db" 30
it_event "$db" "$type" a1
it_check "the event arrives" it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/out.json" 1 30
sleep 2
curl -s -m 5 "http://127.0.0.1:${port:-1}/metrics" >"$IT_TEST_DIR/metrics.txt" || true
it_check "/metrics answered" grep -q '^# TYPE outbox_relay_build_info gauge' "$IT_TEST_DIR/metrics.txt"

# The rules of --reconcile read its textfile gauges (docs/reconcile.md):
# a run over the event's window writes them, and they count as exported.
it_run_relay reconcile --config "$conf" \
	--set "reconcile.events.sql=SELECT count(*) FROM outbox WHERE created_at >= \$1 AND created_at < \$2" \
	--set "reconcile.events.topic=outbox.event.$type" \
	--reconcile --since "1 hour" --until "0 seconds" --metrics-file "$IT_TEST_DIR/reconcile.prom"
it_expect_exit reconcile 0 "--reconcile over the event's window"
cat "$IT_TEST_DIR/metrics.txt" "$IT_TEST_DIR/reconcile.prom" >"$IT_TEST_DIR/families.txt" 2>/dev/null || true

it_check "every metric the dashboard and the alert rules use is in /metrics (or --reconcile's file)" \
	python3 - "$IT_TEST_DIR/families.txt" "$IT_ROOT/deploy/grafana/outbox-relay.json" \
	"$IT_ROOT"/deploy/prometheus/*.yml <<-'PY'
	import json, re, sys
	families = {}
	for line in open(sys.argv[1]):
	    m = re.match(r"# TYPE (\S+) (\S+)", line)
	    if m:
	        families[m.group(1)] = m.group(2)
	def exported(name):
	    if name in families:
	        return True
	    for suffix in ("_bucket", "_sum", "_count"):
	        base = name[: -len(suffix)]
	        if name.endswith(suffix) and families.get(base) == "histogram":
	            return True
	    return False
	names = {}
	d = json.load(open(sys.argv[2]))
	for p in d["panels"]:
	    for t in p.get("targets", []):
	        for n in re.findall(r"\boutbox_relay_[a-z0-9_]+", t["expr"]):
	            names.setdefault(n, "dashboard: " + p["title"])
	for v in d["templating"]["list"]:
	    q = v.get("query")
	    q = q.get("query", "") if isinstance(q, dict) else (q or "")
	    for n in re.findall(r"\boutbox_relay_[a-z0-9_]+", q):
	        names.setdefault(n, "dashboard variable " + v["name"])
	for f in sys.argv[3:]:
	    for n in re.findall(r"\boutbox_relay_[a-z0-9_]+", open(f).read()):
	        names.setdefault(n, f)
	missing = sorted("%s (%s)" % (n, w) for n, w in names.items() if not exported(n))
	assert not missing, "not in /metrics: " + ", ".join(missing)
	assert len(names) >= 15, sorted(names)
	print(len(names), "names checked against", len(families), "families")
	PY

it_stop_checked "relay exits 0 on SIGTERM"
it_summary
