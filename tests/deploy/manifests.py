#!/usr/bin/env python3
# tests/deploy/manifests.py DIR -- what deploy/k8s must hold for the relay
# to survive a rollout, beyond the schemas (tests/deploy/check.sh runs it).
# Each rule names the manifest and field it failed on; exits 1 on the
# first failure.
import re
import sys

import yaml

UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10**3, "M": 10**6, "G": 10**9}


def quantity(q):
    m = re.fullmatch(r"(\d+)([KMG]i?)?", str(q))
    assert m, "not a byte quantity: %r" % q
    return int(m.group(1)) * UNITS.get(m.group(2) or "", 1)


def load(d):
    docs = {}
    for name in ("config", "deployment", "sidecar", "monitoring", "prometheusrule", "reconcile"):
        with open("%s/%s.yaml" % (d, name)) as f:
            for doc in yaml.safe_load_all(f):
                docs[(doc["kind"], doc["metadata"]["name"])] = (name, doc)
    return docs


def relay_conf(docs):
    text = docs[("ConfigMap", "outbox-relay-config")][1]["data"]["relay.conf"]
    conf = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            conf[k.strip()] = v.strip()
    return conf


def check_relay_container(where, pod, c, conf, sidecar):
    sc = dict(pod.get("securityContext", {}))
    sc.update(c.get("securityContext", {}))
    assert sc.get("runAsNonRoot") is True, where + ": runAsNonRoot"
    assert int(sc.get("runAsUser", 0)) >= 1000, where + ": runAsUser (numeric, non-root)"
    assert sc.get("readOnlyRootFilesystem") is True, where + ": readOnlyRootFilesystem"
    assert sc.get("allowPrivilegeEscalation") is False, where + ": allowPrivilegeEscalation"
    assert sc.get("capabilities", {}).get("drop") == ["ALL"], where + ": capabilities.drop ALL"
    assert sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", where + ": seccompProfile"

    # The health port: the one http.listen binds, reachable off loopback.
    host, port = conf["http.listen"].rsplit(":", 1)
    assert host not in ("127.0.0.1", "localhost", "[::1]"), "http.listen on loopback: " + host
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports.get("relay-health") == int(port), where + ": port relay-health != http.listen"
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez", where + ": liveness on /livez"
    assert c["startupProbe"]["httpGet"]["path"] == "/livez", where + ": startup on /livez"
    if sidecar:
        assert c.get("restartPolicy") == "Always", where + ": a native sidecar needs restartPolicy Always"
        # A sidecar's readiness is the Pod's: a Kafka outage would take the
        # application out of its Service.
        assert "readinessProbe" not in c, where + ": no readinessProbe on the sidecar"
    else:
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", where + ": readiness on /readyz"

    # Memory: the window librdkafka may hold plus the measured baseline.
    res = c["resources"]
    limit = quantity(res["limits"]["memory"])
    window = int(conf.get("inflight.max.bytes", 8388608))
    assert limit >= window + (64 << 20), where + ": memory limit %d below the window %d + 64 MiB" % (limit, window)
    assert quantity(res["requests"]["memory"]) >= 48 << 20, where + ": memory request below the measured RSS"
    assert "cpu" in res["requests"], where + ": cpu request"

    # The grace period covers the drain.
    grace = pod["terminationGracePeriodSeconds"]
    assert grace * 1000 > int(conf.get("shutdown.timeout.ms", 30000)) + 5000, where + ": grace %d s" % grace

    # The configuration file and the password file are mounted where the
    # arguments and pg.password.file say.
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    args = c["args"]
    cfg_path = args[args.index("--config") + 1]
    cfg_dir, cfg_file = cfg_path.rsplit("/", 1)
    cm = vols[mounts[cfg_dir]]["configMap"]
    assert cm["name"] == "outbox-relay-config", where + ": config volume"
    assert any(i["path"] == cfg_file for i in cm["items"]), where + ": " + cfg_path + " not in the ConfigMap"
    pw_dir, pw_file = conf["pg.password.file"].rsplit("/", 1)
    sec = vols[mounts[pw_dir]]["secret"]
    assert sec["secretName"] == "outbox-relay-pg", where + ": password volume"
    assert any(i["path"] == pw_file for i in sec["items"]), where + ": pg.password.file not in the Secret"
    # Readable by the relay's user: group 10001 (fsGroup) or everyone.
    mode = sec.get("defaultMode", 0o644)
    if pod.get("securityContext", {}).get("fsGroup") == sc["runAsUser"]:
        assert mode & 0o040, where + ": Secret not group-readable with fsGroup"
    else:
        assert mode & 0o004, where + ": Secret unreadable by uid %d without fsGroup" % sc["runAsUser"]
    assert "password" not in conf["pg.conninfo"], "a password in pg.conninfo"


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def main():
    docs = load(sys.argv[1])
    conf = relay_conf(docs)
    pods = {}

    _, dep = docs[("Deployment", "outbox-relay")]
    spec = dep["spec"]
    assert spec["replicas"] == 2, "deployment: 2 replicas (active + hot standby)"
    ru = spec["strategy"]["rollingUpdate"]
    assert spec["strategy"]["type"] == "RollingUpdate" and ru["maxUnavailable"] == 0, \
        "deployment: a new relay first, then an old one goes"
    pod = spec["template"]["spec"]
    assert matches(spec["selector"], spec["template"]["metadata"]["labels"])
    relays = [c for c in pod["containers"] if c["image"].startswith("outbox-relay:")]
    assert len(relays) == 1, "deployment: one relay container"
    check_relay_container("deployment.yaml", pod, relays[0], conf, False)
    pods["deployment"] = (spec["template"]["metadata"]["labels"], pod)

    _, app = docs[("Deployment", "orders")]
    pod = app["spec"]["template"]["spec"]
    relays = [c for c in pod.get("initContainers", []) if c["image"].startswith("outbox-relay:")]
    assert len(relays) == 1, "sidecar.yaml: the relay is an init container"
    assert not any(c["image"].startswith("outbox-relay:") for c in pod["containers"]), \
        "sidecar.yaml: the relay is not a regular container"
    check_relay_container("sidecar.yaml", pod, relays[0], conf, True)
    pods["sidecar"] = (app["spec"]["template"]["metadata"]["labels"], pod)

    _, pdb = docs[("PodDisruptionBudget", "outbox-relay")]
    assert matches(pdb["spec"]["selector"], pods["deployment"][0]), "PDB selects the relays"
    assert pdb["spec"]["minAvailable"] == 1, "PDB: one relay stays"
    assert pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow", \
        "PDB: unready relays never block a drain"

    # Each shape's NetworkPolicy: the health port only from a selected
    # scraper; the application's own port as it was.
    for shape, name in (("deployment", "outbox-relay"), ("sidecar", "orders")):
        _, np = docs[("NetworkPolicy", name)]
        labels, pod = pods[shape]
        assert matches(np["spec"]["podSelector"], labels), name + ": policy selects the pods"
        assert np["spec"]["policyTypes"] == ["Ingress"]
        health = [r for r in np["spec"]["ingress"]
                  if any(p["port"] == "relay-health" for p in r.get("ports", []))]
        assert len(health) == 1 and health[0].get("from"), name + ": health port open to anyone"
        for peer in health[0]["from"]:
            assert peer.get("podSelector") and peer.get("namespaceSelector"), \
                name + ": the scraper is one namespace's pods"
        open_rules = [r for r in np["spec"]["ingress"] if not r.get("from")]
        for r in open_rules:
            assert all(p["port"] != "relay-health" for p in r["ports"]), name + ": health port open"

    # The PodMonitor scrapes both shapes on relay-health, as job outbox-relay
    # (the rules' and the dashboard's job).
    _, pm = docs[("PodMonitor", "outbox-relay")]
    for shape in pods:
        assert matches(pm["spec"]["selector"], pods[shape][0]), "PodMonitor misses the %s pods" % shape
    ep = pm["spec"]["podMetricsEndpoints"][0]
    assert ep["port"] == "relay-health" and ep["path"] == "/metrics"
    assert {"targetLabel": "job", "replacement": "outbox-relay"} in ep["relabelings"]
    _, rule = docs[("PrometheusRule", "outbox-relay")]
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert any('job="outbox-relay"' in e for e in exprs)
    # The reconcile CronJob (docs/reconcile.md): the relay's ConfigMap and
    # password file, reconcile.* keys only on its command line (nothing
    # secret in argv), and a finding that fails the Job instead of being
    # retried into a pass.
    _, cj = docs[("CronJob", "outbox-relay-reconcile")]
    job = cj["spec"]["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0, "reconcile: backoffLimit 0 (exit 1 is a finding)"
    assert cj["spec"]["concurrencyPolicy"] == "Forbid"
    pod = job["template"]["spec"]
    (c,) = pod["containers"]
    args = c["args"]
    assert "--reconcile" in args and "--since" in args and "--until" in args, "reconcile: the action"
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert sets and all(v.startswith("reconcile.") for v in sets), "reconcile: --set reconcile.* only"
    assert not any("password" in a.lower() for a in args), "reconcile: a password in argv"
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["config"]["configMap"]["name"] == "outbox-relay-config"
    assert vols["pg-password"]["secret"]["secretName"] == "outbox-relay-pg"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    print("ok: %d manifests" % len(docs))


if __name__ == "__main__":
    main()
