#!/usr/bin/env bash
# tests/deploy/check.sh -- `make check-deploy` (part of make check): the
# deployment files validate, without a cluster, a Prometheus or systemd
# running. Tools come from tests/env/deps.sh (kubernetes-validate in a
# venv, promtool from Debian's prometheus package, both under .tmp/tools).
#
#   1. deploy/k8s/*.yaml: kubernetes-validate --strict against Kubernetes
#      KUBE_VERSIONS (1.29: native sidecars on by default; 1.33: GA; the
#      newest the package ships); the two Prometheus Operator kinds have
#      no schema there and are checked by field below;
#   2. what the manifests must hold for a rollout to survive them
#      (manifests.py): the sidecar shape, the Deployment's probes and
#      strategy, securityContext, grace period above shutdown.timeout.ms,
#      http.listen off loopback, the password file mounted, memory limit
#      above the window, PDB, NetworkPolicy, PodMonitor; the reconcile
#      CronJob's shape, and its --set keys load on the relay's ConfigMap;
#   3. deploy/k8s/prometheusrule.yaml is what prometheusrule.sh makes of
#      deploy/prometheus/*.yml; promtool check rules on both; promtool
#      test rules tests/deploy/alerts.test.yml;
#   4. deploy/systemd/outbox-relay.service: systemd-analyze verify (with
#      ExecStart pointed at build/outbox-relay and the man page in a
#      MANPATH), and systemd-analyze security --offline at most
#      SYSTEMD_EXPOSURE_MAX (2.0); skipped, with the reason, when
#      systemd-analyze is missing;
#   5. deploy/compose.yaml (no Docker engine here to run it): parses, has
#      its four services, every file it names exists, and the relay
#      accepts its OUTBOX_RELAY_* variables (--print-config);
#   6. deploy/grafana/outbox-relay.json parses, and each panel queries
#      outbox_relay_* metrics (t620 checks the names against /metrics).
#
# Prints "ok N - ..." / "not ok N - ..." and ends with "N passed, N
# failed, N skipped"; exits 1 if anything failed.
set -uo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS=$ROOT/.tmp/tools
PY=$TOOLS/venv/bin/python3
KV=$TOOLS/venv/bin/kubernetes-validate
PROMTOOL=${PROMTOOL:-$TOOLS/prometheus/usr/bin/promtool}
KUBE_VERSIONS=${KUBE_VERSIONS:-1.29.0 1.33.0 1.37.0}
SYSTEMD_EXPOSURE_MAX=${SYSTEMD_EXPOSURE_MAX:-2.0}
RELAY_BIN=${RELAY_BIN:-$ROOT/build/outbox-relay}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/outbox-relay-deploy.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

n=0 pass=0 fail=0 skipped=0
ok() { n=$((n + 1)) pass=$((pass + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)) fail=$((fail + 1))
	echo "not ok $n - $1"
	[[ -z ${2:-} ]] || sed 's/^/# /' <<<"$2"
}
skip() { n=$((n + 1)) skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { # DESC CMD...: ok when CMD exits 0, else not_ok with its output
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then ok "$desc"; else not_ok "$desc" "exit $rc: $out"; fi
}

for tool in "$PY" "$KV" "$PROMTOOL"; do
	if [[ ! -x $tool ]]; then
		not_ok "tool $tool present (make deps installs it)"
		echo "$pass passed, $fail failed, $skipped skipped"
		exit 1
	fi
done

# ---------------------------------------------------------------- 1
manifests=(deploy/k8s/*.yaml)
for v in $KUBE_VERSIONS; do
	out=$("$KV" --strict -k "$v" "${manifests[@]}" 2>&1)
	rc=$?
	# Only the Operator's kinds may lack a schema.
	unknown=$(grep 'Couldn.t find schema' <<<"$out" |
		grep -vE 'kind (PodMonitor|PrometheusRule) with api version monitoring\.coreos\.com/v1' || true)
	if ((rc == 0)) && [[ -z $unknown ]]; then
		ok "kubernetes-validate --strict $v: $(grep -c ' passed ' <<<"$out") resources in ${#manifests[@]} files"
	else
		not_ok "kubernetes-validate --strict $v" "$out"
	fi
done

# ---------------------------------------------------------------- 2
check "manifests: sidecar, Deployment, probes, security, grace, PDB, policy, PodMonitor" \
	"$PY" tests/deploy/manifests.py deploy/k8s

# The reconcile CronJob's --set keys load on the relay's ConfigMap.
check "deploy/k8s/reconcile.yaml: its --set keys load (--print-config)" \
	"$PY" - "$RELAY_BIN" "$WORK" <<-'PY'
	import subprocess, sys, yaml
	relay, work = sys.argv[1], sys.argv[2]
	docs = {}
	for f in ("deploy/k8s/config.yaml", "deploy/k8s/reconcile.yaml"):
	    for d in yaml.safe_load_all(open(f)):
	        docs[(d["kind"], d["metadata"]["name"])] = d
	conf = docs[("ConfigMap", "outbox-relay-config")]["data"]["relay.conf"]
	open(work + "/reconcile.conf", "w").write(conf)
	c = docs[("CronJob", "outbox-relay-reconcile")]["spec"]["jobTemplate"]["spec"]
	args = c["template"]["spec"]["containers"][0]["args"]
	sets = [a for i, a in enumerate(args) if i and args[i - 1] == "--set"]
	cmd = [relay, "--config", work + "/reconcile.conf"]
	for v in sets:
	    cmd += ["--set", v]
	out = subprocess.run(cmd + ["--print-config"], capture_output=True, text=True)
	assert out.returncode == 0, out.stderr
	for v in sets:
	    k, val = v.split("=", 1)
	    assert "%s = %s # flag" % (k, val) in out.stdout, v
	PY

# ---------------------------------------------------------------- 3
if diff -u deploy/k8s/prometheusrule.yaml <(deploy/k8s/prometheusrule.sh) >"$WORK/rule.diff"; then
	ok "deploy/k8s/prometheusrule.yaml is prometheusrule.sh's output"
else
	not_ok "deploy/k8s/prometheusrule.yaml is prometheusrule.sh's output (run it)" "$(cat "$WORK/rule.diff")"
fi
for f in deploy/prometheus/*.yml; do
	check "promtool check rules $f" "$PROMTOOL" check rules "$f"
done
"$PY" -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
yaml.safe_dump(d["spec"], open(sys.argv[2], "w"))
' deploy/k8s/prometheusrule.yaml "$WORK/prometheusrule.spec.yml"
check "promtool check rules on the PrometheusRule's spec" "$PROMTOOL" check rules "$WORK/prometheusrule.spec.yml"
check "promtool test rules tests/deploy/alerts.test.yml" "$PROMTOOL" test rules tests/deploy/alerts.test.yml

# ---------------------------------------------------------------- 4
unit=deploy/systemd/outbox-relay.service
if ! command -v systemd-analyze >/dev/null 2>&1; then
	skip "systemd-analyze verify $unit" "systemd-analyze is not installed"
elif [[ ! -x $RELAY_BIN ]]; then
	not_ok "systemd-analyze verify $unit" "$RELAY_BIN is not built"
else
	mkdir -p "$WORK/unit" "$WORK/man/man1"
	sed "s|^ExecStart=/usr/local/bin/outbox-relay |ExecStart=$RELAY_BIN |" "$unit" \
		>"$WORK/unit/outbox-relay.service"
	cp docs/outbox-relay.1 "$WORK/man/man1/"
	if grep -q "^ExecStart=$RELAY_BIN " "$WORK/unit/outbox-relay.service"; then
		MANPATH=$WORK/man check "systemd-analyze verify $unit" \
			systemd-analyze verify "$WORK/unit/outbox-relay.service"
	else
		not_ok "systemd-analyze verify $unit" "ExecStart is not /usr/local/bin/outbox-relay ..."
	fi
	score=$(systemd-analyze security --offline=yes "$WORK/unit/outbox-relay.service" 2>&1 |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
	if [[ -n $score ]] && awk -v s="$score" -v m="$SYSTEMD_EXPOSURE_MAX" 'BEGIN { exit !(s <= m) }'; then
		ok "systemd-analyze security: exposure $score (at most $SYSTEMD_EXPOSURE_MAX)"
	else
		not_ok "systemd-analyze security: exposure at most $SYSTEMD_EXPOSURE_MAX (got '${score:-none}')"
	fi
fi

# ---------------------------------------------------------------- 5
check "deploy/compose.yaml: services, files, relay settings" \
	"$PY" - deploy/compose.yaml "$RELAY_BIN" <<-'PY'
	import os, subprocess, sys, yaml
	path, relay = sys.argv[1], sys.argv[2]
	base = os.path.dirname(path)
	d = yaml.safe_load(open(path))
	svc = d["services"]
	for name in ("postgres", "kafka", "outbox-relay", "kcat"):
	    assert name in svc, "missing service " + name
	for name, s in svc.items():
	    assert "image" in s or "build" in s, name + ": neither image nor build"
	    b = s.get("build")
	    if b:
	        ctx = os.path.join(base, b["context"])
	        assert os.path.isdir(ctx), name + ": no build context " + ctx
	        df = os.path.join(ctx, b.get("dockerfile", "Dockerfile"))
	        assert os.path.isfile(df), name + ": no Dockerfile " + df
	    for v in s.get("volumes", []):
	        src = v.split(":")[0]
	        if src.startswith("."):
	            assert os.path.exists(os.path.join(base, src)), name + ": no " + src
	    for dep in s.get("depends_on", {}):
	        assert dep in svc, name + ": depends on unknown " + dep
	    for sec in s.get("secrets", []):
	        assert sec in d.get("secrets", {}), name + ": unknown secret " + sec
	for sec in d.get("secrets", {}).values():
	    assert os.path.isfile(os.path.join(base, sec["file"])), "no secret file " + sec["file"]
	pg = svc["postgres"]
	assert "wal_level=logical" in pg["command"], "postgres without wal_level=logical"
	with open(os.path.join(base, pg["build"]["context"], pg["build"]["dockerfile"])) as f:
	    text = f.read()
	    assert "postgresql-15-wal2json" in text and "postgres:15" in text, "no PostgreSQL 15 with wal2json"
	assert "KAFKA_PROCESS_ROLES" in svc["kafka"]["environment"], "Kafka not in KRaft mode"
	relay = svc["outbox-relay"]
	assert relay["build"]["dockerfile"] == "deploy/docker/Dockerfile"
	env = {k: str(v) for k, v in relay["environment"].items()}
	assert env["OUTBOX_RELAY_HTTP_LISTEN"].startswith("0.0.0.0:"), "health endpoint on loopback only"
	# The relay refuses an unknown OUTBOX_RELAY_* variable or a bad value
	# (exit 78): every variable given must be one it knows.
	run_env = {k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_RELAY_")}
	run_env.update(env)
	p = subprocess.run([sys.argv[2], "--print-config"], env=run_env, capture_output=True, text=True)
	assert p.returncode == 0, ("--print-config", p.returncode, p.stderr)
	from_env = {"OUTBOX_RELAY_" + l.split(" = ")[0].upper().replace(".", "_")
	            for l in p.stdout.splitlines() if l.endswith(" # env")}
	assert from_env == set(env), ("taken from the environment", sorted(from_env), sorted(env))
	print(len(svc), "services")
	PY

# ---------------------------------------------------------------- 6
check "deploy/grafana/outbox-relay.json: every panel queries outbox_relay_* metrics" \
	"$PY" - deploy/grafana/outbox-relay.json <<-'PY'
	import json, re, sys
	d = json.load(open(sys.argv[1]))
	panels = [p for p in d["panels"] if p.get("type") != "row"]
	assert len(panels) >= 8, len(panels)
	for p in panels:
	    exprs = [t["expr"] for t in p.get("targets", [])]
	    assert exprs, p["title"] + ": no query"
	    for e in exprs:
	        assert re.search(r"\boutbox_relay_[a-z0-9_]+", e), (p["title"], e)
	titles = " ".join(p["title"].lower() for p in panels)
	for word in ("state", "events per second", "latency", "retained wal", "slot loss", "outbox lag"):
	    assert word in titles, "no panel about " + word
	PY

echo "$pass passed, $fail failed, $skipped skipped"
((fail == 0))
