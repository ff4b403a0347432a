#!/usr/bin/env python3
# tests/bench/report.py -- the figures of `make bench` (tests/bench/run.sh)
# from its runs.jsonl, the samplers' files and the consumers' records.
#
#   report.py check --last RUNS.jsonl
#       the correctness and latency of the last run's records file (every
#       run of RUNS that names the same file is a window of it): every
#       event of each writer exactly once (its sequence range as the
#       database's sequences moved), per-key order (a writer's sequence
#       only grows within a key; one partition per key), and per window
#       latency percentiles and a CDF; written next to the records file
#       as RECORDS.json (the records file may then be deleted).
#   report.py report --runs RUNS.jsonl --plots DIR [--plot-ref REL]
#                    --machine TEXT --profile NAME --out FILE.md
#       the markdown tables (median and min-max of the rounds, ratios
#       against Debezium and the ceilings of the same run) and PNG plots.
#
# Debian's python3 with python3-matplotlib (plots only: tables without it).
import argparse
import datetime
import json
import os
import statistics
import sys

PCTS = (50, 90, 99, 99.9)


def load_runs(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    k = (len(sorted_vals) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def lat_summary(vals_ms):
    v = sorted(vals_ms)
    if not v:
        return None
    out = {"n": len(v), "max": v[-1]}
    for p in PCTS:
        out["p%s" % p] = pct(v, p)
    # A CDF of 200 points for the plots.
    out["cdf"] = [pct(v, q / 2.0) for q in range(0, 201)]
    return out


def parse_seqs(s):
    out = {}
    for item in (s or "").split():
        c, v = item.split(":")
        out[int(c)] = int(v)
    return out


# ---------------------------------------------------------------- check

def read_records(path):
    recs = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 8:
                continue
            recs.append((int(p[0]), int(p[1]), p[2], int(p[3]), int(p[4]),
                         int(p[5]), int(p[6]), int(p[7])))
    return recs


def check_records(recs, seq0, seq1):
    """Every event once, per-key order. recs: (part, off, key, c, s, t,
    create_ms, recv_us)."""
    res = {"records": len(recs)}
    expected = {c: (seq0.get(c, 0), seq1[c]) for c in seq1
                if seq1[c] > seq0.get(c, 0)}
    res["expected"] = sum(hi - lo for lo, hi in expected.values())
    seen = set()
    dups = unknown = 0
    for r in recs:
        c, s = r[3], r[4]
        if (c, s) in seen:
            dups += 1
            continue
        seen.add((c, s))
        lo, hi = expected.get(c, (0, 0))
        if not lo < s <= hi:
            unknown += 1
    missing = res["expected"] - (len(seen) - unknown)
    # Per key: offsets in order within the partition, the sequence grows.
    order = split = 0
    last = {}
    part_of = {}
    for r in sorted(recs, key=lambda r: (r[0], r[1])):
        key = r[2]
        if part_of.setdefault(key, r[0]) != r[0]:
            split += 1
        if key in last and r[4] <= last[key]:
            order += 1
        last[key] = max(last.get(key, -1), r[4])
    res.update(missing=missing, duplicates=dups, unknown=unknown,
               order_violations=order, keys_split=split,
               ok=missing == 0 and dups == 0 and unknown == 0 and order == 0
               and split == 0)
    return res


def cmd_check(args):
    runs = load_runs(args.last)
    last = runs[-1]
    path = last["records"]
    recs = read_records(path)
    res = check_records(recs, parse_seqs(last.get("seq0")),
                        parse_seqs(last.get("seq1")))
    windows = []
    for i, r in enumerate(runs):
        if r.get("records") != path or "t0" not in r:
            continue
        w = {"run": i}
        if r["workload"] in ("w2", "knobs", "w6") or r["workload"].endswith("-steady"):
            t0, t1 = r["t0"] * 1e6, r["t1"] * 1e6
            sel = [x for x in recs if t0 <= x[5] <= t1 and x[3] not in (99,)]
            w["recv"] = lat_summary([(x[7] - x[5]) / 1000.0 for x in sel])
            w["create"] = lat_summary([x[6] - x[5] / 1000.0 for x in sel])
        elif r["workload"].endswith("-drain"):
            # A backlog drained: when the read_committed consumer saw the
            # first and the last event, and the longest stretch without
            # any (an exactly-once relay's records appear a transaction
            # at a time).
            mine = [x for x in recs if x[3] not in (99, -1)]
            sel = sorted(x[7] for x in mine)
            if sel:
                # The producer's timestamp of the first event: when the
                # relay had it (start-up behind it, in both modes).
                w["first_create_ms"] = min(x[6] for x in mine)
                w["first_recv_us"] = sel[0]
                w["last_recv_us"] = sel[-1]
                w["visible"] = len(sel)
                w["max_gap_ms"] = max([(b - a) / 1000.0 for a, b in zip(sel, sel[1:])] or [0])
        elif r["workload"] == "w5":
            sel = [x for x in recs if x[3] == 7]
            w["recv"] = lat_summary([(x[7] - x[5]) / 1000.0 for x in sel])
            w["create"] = lat_summary([x[6] - x[5] / 1000.0 for x in sel])
        elif r["workload"] == "w3":
            big = [x for x in recs if x[3] == 6]
            tc = r["tc"] * 1e6
            if big:
                w["big_first_s"] = (min(x[7] for x in big) - tc) / 1e6
                w["big_last_s"] = (max(x[7] for x in big) - tc) / 1e6
                end = max(x[7] for x in big)
                bg = [x for x in recs if x[3] == 50 and r["t0"] * 1e6 <= x[5] <= end]
                w["bg_recv"] = lat_summary([(x[7] - x[5]) / 1000.0 for x in bg])
        windows.append(w)
    res["windows"] = windows
    with open(path + ".json", "w") as f:
        json.dump(res, f)
    flag = "ok" if res["ok"] else "FAILED"
    print("check %s: %d records, %d expected, missing %d, duplicates %d, "
          "unknown %d, order violations %d, keys split %d: %s" % (
              os.path.basename(path), res["records"], res["expected"],
              res["missing"], res["duplicates"], res["unknown"],
              res["order_violations"], res["keys_split"], flag),
          file=sys.stderr)
    return 0 if res["ok"] else 1


# ---------------------------------------------------------------- report

def read_samples(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 2:
                    continue
                vals = [float(p[0]), int(p[1])]
                for i in range(2, len(p), 2):
                    vals.append(None if p[i] == "-" else float(p[i]))
                    vals.append(None if p[i + 1] == "-" else int(p[i + 1]))
                rows.append(vals)
    except FileNotFoundError:
        pass
    return rows


def col(rows, i, what):
    """Values of pid column i (0-based): what = 'cpu' or 'hwm'."""
    j = 2 + 2 * i + (0 if what == "cpu" else 1)
    return [r[j] for r in rows if j < len(r) and r[j] is not None]


def cpu_delta(rows, i, a=0, b=-1):
    vals = [r[2 + 2 * i] for r in rows[a:(None if b == -1 else b + 1)]
            if r[2 + 2 * i] is not None]
    return vals[-1] - vals[0] if len(vals) >= 2 else None


def jmx_parse(s):
    out = {}
    for item in (s or "").split():
        if "=" in item:
            k, v = item.split("=", 1)
            try:
                out[k] = int(v)
            except ValueError:
                pass
    return out


def records_json(run):
    try:
        with open(run["records"] + ".json") as f:
            return json.load(f)
    except (KeyError, OSError, ValueError):
        return None


def w1_metrics(run):
    rows = read_samples(run["samples"])
    n = run["events"]
    m = {"system": run["system"], "round": run["round"]}
    if run["system"].startswith("ceil-"):
        secs = run["t1"] - run["t0"]
        m["rate"] = n / secs
        ws = col(rows, 0, "cpu")
        if ws:
            m["walsender_cpu_1m"] = ws[-1] / n * 1e6
        return m
    if run["system"] == "producer":
        res = dict(kv.split("=") for kv in run["result"].split())
        m["rate"] = float(res["rate"])
        first = next((i for i, r in enumerate(rows) if r[1] > 1), None)
        last = next((i for i, r in enumerate(rows) if r[1] >= n + 1), None)
        if first is not None and last is not None and last > first:
            d = cpu_delta(rows, 0, first, last)
            m["broker_cpu_1m"] = d / (rows[last][1] - rows[first][1]) * 1e6
        return m
    first = next((i for i, r in enumerate(rows) if r[1] > 0), None)
    last = next((i for i, r in enumerate(rows) if r[1] >= n), None)
    if first is None or last is None or last <= first:
        m["failed"] = True
        # A system that stopped short (Outboxx's fail-fast exit): what it
        # delivered is in the check.
        chk = records_json(run)
        if chk is not None:
            m["check"] = chk
        if run.get("exit"):
            m["exit"] = run["exit"]
        return m
    dn = rows[last][1] - rows[first][1]
    dt = rows[last][0] - rows[first][0]
    m["rate"] = dn / dt
    m["startup_s"] = rows[first][0] - run["t0"]
    for i, name in enumerate(("system", "walsender", "broker")):
        # The walsender decodes ahead of the first acknowledged record
        # (the relay's window): all of its CPU since the start is this
        # drain's.
        d = cpu_delta(rows, i, 0 if name == "walsender" else first, last)
        if d is not None:
            m[name + "_cpu_1m"] = d / (n if name == "walsender" else dn) * 1e6
    hwm = col(rows, 0, "hwm")
    if hwm:
        m["rss_mb"] = max(hwm) / 1024.0
    j0, j1 = jmx_parse(run.get("jmx0")), jmx_parse(run.get("jmx1"))
    if "Produce" in j0 and "Produce" in j1 and j1["Produce"] > j0["Produce"]:
        m["produce_reqs_1m"] = (j1["Produce"] - j0["Produce"]) / n * 1e6
    chk = records_json(run)
    if chk is not None:
        m["check"] = chk
    return m


def window_metrics(run, chk):
    rows = read_samples(run["samples"])
    m = {"system": run["system"], "variant": run.get("variant", ""),
         "round": run.get("round"), "rate": run.get("rate")}
    ev = run.get("events") or 0
    secs = run["t1"] - run["t0"]
    m["events"] = ev
    m["achieved"] = ev / secs if secs > 0 else None
    m["lag_s"] = run["t2"] - run["t1"] if "t2" in run else None
    if ev > 0 and len(rows) >= 2:
        for i, name in enumerate(("system", "walsender", "broker")):
            d = cpu_delta(rows, i)
            if d is not None:
                m[name + "_cpu_1m"] = d / ev * 1e6
                m[name + "_cpu_pct"] = d / (rows[-1][0] - rows[0][0]) * 100
    hwm = col(rows, 0, "hwm")
    if hwm:
        m["rss_mb"] = max(hwm) / 1024.0
    j0, j1 = jmx_parse(run.get("jmx0")), jmx_parse(run.get("jmx1"))
    span = rows[-1][0] - rows[0][0] if len(rows) >= 2 else secs
    for k in ("Produce", "Fetch"):
        if k in j0 and k in j1:
            m[k.lower() + "_per_s"] = (j1[k] - j0[k]) / span
    if m.get("produce_per_s") and ev:
        m["msgs_per_produce"] = ev / (m["produce_per_s"] * span)
    if chk is not None:
        for w in chk.get("windows", []):
            if w["run"] == run["_index"]:
                m["recv"] = w.get("recv")
                m["create"] = w.get("create")
    return m


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=0):
    if v is None:
        return "—"
    if digits == 0:
        return "{:,.0f}".format(v)
    return "{:,.{d}f}".format(v, d=digits)


def cell(vals, digits=0):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "—"
    if len(vals) == 1:
        return fmt(vals[0], digits)
    return "%s (%s–%s)" % (fmt(med(vals), digits), fmt(min(vals), digits),
                           fmt(max(vals), digits))


NAMES = {
    "ceil-w2j": "pg_recvlogical, wal2json v2 → /dev/null (ceiling)",
    "ceil-pgo": "pg_recvlogical, pgoutput proto 1 → /dev/null (ceiling)",
    "producer": "producer ceiling (librdkafka, relay's settings, 650 B)",
    "kafka-floor": "Kafka alone: librdkafka producer, each record flushed → consumer (floor)",
    "relay": "outbox-relay (defaults)",
    "relay-pgo": "outbox-relay, slot.plugin = pgoutput",
    "relay-rdk": "outbox-relay on librdkafka 2.12.1",
    "relay-pgo-rdk": "outbox-relay on librdkafka 2.12.1, slot.plugin = pgoutput",
    "dbz-tuned": "Debezium tuned",
    "dbz-defaults": "Debezium defaults",
    "outboxx": "Outboxx 0.3.0 (Zig, pgoutput; OUTBOXX_BIN)",
}


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def txns_parse(s):
    """ "committed aborted" from the relay's /metrics, or None."""
    p = str(s or "").split()
    if len(p) != 2:
        return None
    try:
        return int(p[0]), int(p[1])
    except ValueError:
        return None


def at_or_before(rows, t):
    """Index of the last sample row at or before wall time t (0 if none)."""
    i = 0
    for j, r in enumerate(rows):
        if r[0] <= t:
            i = j
    return i


def at_or_after(rows, t):
    for j, r in enumerate(rows):
        if r[0] >= t:
            return j
    return len(rows) - 1


def eos_drain_metrics(run, chk):
    """A drain timed by the read_committed consumer (tests/bench/run.sh
    eos_drain): rate from the first visible event to the last, CPU over
    the sample rows around that span."""
    m = {"system": run["system"], "variant": run.get("variant", ""),
         "round": run.get("round"), "events": run["events"],
         "settings": run.get("settings", "")}
    w = None
    for x in (chk or {}).get("windows", []):
        if x["run"] == run["_index"]:
            w = x
    if chk is not None:
        m["check"] = chk
    if run.get("exit"):
        m["exit"] = run["exit"]
    if not w or "first_recv_us" not in w or w["last_recv_us"] <= w["first_recv_us"]:
        m["failed"] = True
        return m
    f, l = w["first_recv_us"] / 1e6, w["last_recv_us"] / 1e6
    n = w["visible"]
    # From the first event produced to the last one visible: an
    # exactly-once drain's first events become visible only at its first
    # commit, and that wait is part of its cost.
    c = w.get("first_create_ms", f * 1e3) / 1e3
    if c > f:
        c = f
    m["rate"] = n / (l - c)
    m["startup_s"] = c - run["t0"]
    m["first_visible_s"] = f - c
    f = c
    m["max_gap_ms"] = w.get("max_gap_ms")
    rows = read_samples(run["samples"])
    if len(rows) >= 2:
        a, b = at_or_before(rows, f), at_or_after(rows, l)
        for i, name in enumerate(("system", "walsender", "broker")):
            # The walsender decodes ahead of the first visible event: all
            # of its CPU since the start is this drain's.
            d = cpu_delta(rows, i, 0 if name == "walsender" else a, b)
            if d is not None:
                m[name + "_cpu_1m"] = d / n * 1e6
        hwm = col(rows, 0, "hwm")
        if hwm:
            m["rss_mb"] = max(hwm) / 1024.0
    j0, j1 = jmx_parse(run.get("jmx0")), jmx_parse(run.get("jmx1"))
    for k in ("Produce", "EndTxn", "AddPartitionsToTxn"):
        if k in j0 and k in j1:
            m[k.lower() + "_1k"] = (j1[k] - j0[k]) / n * 1e3
    if isinstance(run.get("commit_ms"), (int, float)):
        m["commit_ms"] = run["commit_ms"]
    t = txns_parse(run.get("txns1"))
    if t is not None:
        m["txns"], m["aborted"] = t
        if t[0]:
            m["events_per_txn"] = n / t[0]
    return m


def ceil_metrics(run):
    m = {"system": run["system"], "round": run.get("round"),
         "txn_events": run.get("txn_events")}
    try:
        res = dict(kv.split("=") for kv in str(run.get("result") or "").split())
        m["rate"] = float(res["rate"])
    except (KeyError, ValueError):
        return m
    rows = read_samples(run["samples"])
    d = cpu_delta(rows, 0)
    if d is not None and run.get("events"):
        m["broker_cpu_1m"] = d / run["events"] * 1e6
    return m


def paired_ratios(alo, eos, f):
    """EOS / ALO per round (the two modes alternate within a round)."""
    out = []
    for e in eos:
        a = [x for x in alo if x.get("round") == e.get("round")]
        if a:
            r = ratio(e.get(f) if not callable(f) else f(e),
                      a[0].get(f) if not callable(f) else f(a[0]))
            if r is not None:
                out.append(r)
    return out


def correct_cell(ms):
    checks = [m.get("check") for m in ms if m.get("check")]
    if not checks:
        return "—"
    bad = [c for c in checks if not c["ok"]]
    out = "%d/%d ok" % (len(checks) - len(bad), len(checks))
    if bad:
        b = bad[0]
        out += " (missing %d, dup %d, order %d)" % (
            b["missing"], b["duplicates"], b["order_violations"])
    return out


def eos_report(out, runs, checks, window_metrics_of):
    """The exactly-once sections: both modes side by side, the sweep."""
    def drains(wl):
        return [eos_drain_metrics(r, checks.get(r.get("records")))
                for r in runs if r["workload"] == wl]

    def steady(wl):
        ms = []
        for r in runs:
            if r["workload"] != wl:
                continue
            m = window_metrics_of(r)
            t0, t1 = txns_parse(r.get("txns0")), txns_parse(r.get("txns1"))
            if t0 and t1:
                m["txns"] = t1[0] - t0[0]
                m["aborted"] = t1[1] - t0[1]
                span = r["t2"] - r["t0"]
                m["txn_per_s"] = m["txns"] / span if span > 0 else None
                if m["txns"] > 0 and m.get("events"):
                    m["events_per_txn"] = m["events"] / m["txns"]
            m["check"] = checks.get(r.get("records"))
            # The series' mean commit_transaction time (the relay's
            # summary at its stop, over every window of the series).
            for c in runs:
                if c["workload"] == wl.replace("-steady", "-commit") and \
                        c["system"] == r["system"] and c.get("round") == r.get("round") and \
                        c.get("variant", "") == r.get("variant", "") and \
                        isinstance(c.get("commit_ms"), (int, float)):
                    m["commit_ms"] = c["commit_ms"]
            ms.append(m)
        return ms

    def p(f, q):
        return lambda m: m[f]["p%s" % q] if m.get(f) else None

    def get(m, f):
        return f(m) if callable(f) else m.get(f)

    def side_rows(alo, eos, rows, correct=True):
        out.append("| figure | at-least-once | exactly-once | exactly-once ÷ at-least-once |")
        out.append("|---|---|---|---|")
        for label, f, digits in rows:
            a = [get(m, f) for m in alo]
            e = [get(m, f) for m in eos]
            pr = paired_ratios(alo, eos, f)
            rc = ("%s (%s–%s)" % (fmt(med(pr), 2), fmt(min(pr), 2), fmt(max(pr), 2))
                  if len(pr) > 1 else (fmt(pr[0], 2) if pr else "—"))
            out.append("| %s | %s | %s | %s |" % (label, cell(a, digits), cell(e, digits), rc))
        if correct:
            out.append("| correct (every event once, per-key order) | %s | %s | |" % (
                correct_cell(alo), correct_cell(eos)))
        out.append("")

    dr = drains("eos-drain")
    st = steady("eos-steady")
    if dr or st:
        out.append("### Exactly-once beside at-least-once (`delivery.guarantee`)")
        out.append("")
        sets = sorted({m.get("settings", "").strip() for m in dr if m["system"] == "eos"})
        out.append("The two modes alternate in every round (which goes first "
                   "alternates too); the ratio column is the median of the "
                   "rounds' own ratios (min–max). Every figure is from a "
                   "read_committed consumer (`bench-tool consume`, "
                   "isolation.level=read_committed): an event counts when such a "
                   "consumer can see it. Exactly-once settings: %s." % (
                       ", ".join("`%s`" % x for x in sets if x) or "defaults"))
        out.append("")
    if dr:
        alo = [m for m in dr if m["system"] == "alo"]
        eos = [m for m in dr if m["system"] == "eos"]
        out.append("Drain of %s events (~700 B, 100-row transactions), from the first "
                   "event produced (its CreateTime) to the last one visible:" % fmt(dr[0]["events"]))
        out.append("")
        side_rows(alo, eos, [
            ("events/s", "rate", 0),
            ("start → first event produced s", "startup_s", 2),
            ("first produced → first visible ms", lambda m: m["first_visible_s"] * 1e3 if m.get("first_visible_s") is not None else None, 0),
            ("longest stretch with nothing visible ms", "max_gap_ms", 0),
            ("relay CPU µs / event", "system_cpu_1m", 2),
            ("walsender CPU µs / event", "walsender_cpu_1m", 2),
            ("broker CPU µs / event", "broker_cpu_1m", 2),
            ("relay peak RSS MB", "rss_mb", 1),
            ("produce requests / 1k events", "produce_1k", 2),
            ("Kafka transactions", "txns", 0),
            ("events / transaction", "events_per_txn", 0),
            ("commit_transaction() ms, mean (the relay's summary)", "commit_ms", 1),
        ])
        ce = [ceil_metrics(r) for r in runs if r["workload"] == "eos-ceil"]
        if ce:
            calo = [m for m in ce if m["system"] == "alo"]
            ceos = [m for m in ce if m["system"] == "eos"]
            k = next((m["txn_events"] for m in ceos if m.get("txn_events")), None)
            out.append("Kafka alone, after each drain: `bench-tool produce` of as many "
                       "650-byte records with the relay's producer settings, plain, or "
                       "transactional with %s records a transaction:" % fmt(k))
            out.append("")
            side_rows(calo, ceos, [
                ("producer events/s", "rate", 0),
                ("broker CPU µs / event", "broker_cpu_1m", 2),
            ], correct=False)
            rel = {}
            for m in alo + eos:
                c = [x for x in ce if x["system"] == m["system"] and x["round"] == m["round"]]
                if c and m.get("rate") and c[0].get("rate"):
                    rel.setdefault(m["system"], []).append(m["rate"] / c[0]["rate"])
            out.append("The relay's drain as a fraction of its mode's producer (same round): "
                       "at-least-once %s, exactly-once %s." % (
                           cell(rel.get("alo", []), 2), cell(rel.get("eos", []), 2)))
            out.append("")
    if st:
        for rate in sorted({m["rate"] for m in st}):
            alo = [m for m in st if m["system"] == "alo" and m["rate"] == rate]
            eos = [m for m in st if m["system"] == "eos" and m["rate"] == rate]
            out.append("Steady load at %s events/s (pgbench -R, 10 rows a transaction), "
                       "commit → visible = when the read_committed consumer has the "
                       "event − the statement's clock_timestamp():" % fmt(rate))
            out.append("")
            side_rows(alo, eos, [
                ("achieved events/s", "achieved", 0),
                ("commit → visible p50 ms", p("recv", 50), 1),
                ("commit → visible p99 ms", p("recv", 99), 1),
                ("commit → visible max ms", lambda m: m["recv"]["max"] if m.get("recv") else None, 1),
                ("relay CPU µs / event", "system_cpu_1m", 2),
                ("walsender CPU µs / event", "walsender_cpu_1m", 2),
                ("broker CPU µs / event", "broker_cpu_1m", 2),
                ("broker CPU % of a core", "broker_cpu_pct", 1),
                ("relay peak RSS MB", "rss_mb", 1),
                ("produce requests / s", "produce_per_s", 0),
                ("Kafka transactions / s", "txn_per_s", 1),
                ("events / transaction", "events_per_txn", 0),
                ("commit_transaction() ms, mean (the series)", "commit_ms", 1),
            ])

    sd = drains("eos-sweep-drain")
    ss = steady("eos-sweep-steady")
    if sd or ss:
        def ref(ms, f):
            return med([get(m, f) for m in ms if m["system"] == "alo"])
        points = []
        for m in sd + ss:
            key = (m["system"], m["variant"])
            if key not in points:
                points.append(key)
        out.append("### Transaction knobs (exactly-once; one short point each)")
        out.append("")
        out.append("`delivery.transaction.interval.ms` (i) and `delivery.transaction.max.events` "
                   "(m); at-least-once ran first and last as the reference (× ALO: against "
                   "the median of the two). Drain: %s events, from the first event produced to "
                   "the last visible; steady: %s events/s for %s s. A cell of several rounds "
                   "is their median (min–max); a bare figure is one round, where differences "
                   "under ~15 %% (CPU, latency) or ~40 %% (drain rate, broker CPU) are the "
                   "machine's noise." % (
                       fmt(sd[0]["events"]) if sd else "—",
                       fmt(ss[0]["rate"]) if ss else "—",
                       fmt(ss[0]["events"] / ss[0]["rate"]) if ss and ss[0].get("rate") else "—"))
        out.append("")
        out.append("| point | drain ev/s | × ALO | drain relay CPU µs/ev | drain broker CPU µs/ev "
                   "| drain events/txn | steady ev/s | commit → visible p50 / p99 ms "
                   "| steady relay CPU µs/ev | steady broker CPU µs/ev | broker % of a core "
                   "| txn/s | events/txn | commit ms | correct |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for sysname, var in points:
            d = [m for m in sd if m["system"] == sysname and m["variant"] == var]
            t = [m for m in ss if m["system"] == sysname and m["variant"] == var]
            name = ("at-least-once (%s)" % var) if sysname == "alo" else var
            def dc(f, digits=0):
                return cell([get(m, f) for m in d], digits)

            def tc(f, digits=0):
                return cell([get(m, f) for m in t], digits)
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, dc("rate"),
                fmt(ratio(med([m.get("rate") for m in d]), ref(sd, "rate")), 2),
                dc("system_cpu_1m", 1), dc("broker_cpu_1m", 1), dc("events_per_txn"),
                tc("achieved"), tc(p("recv", 50), 1), tc(p("recv", 99), 1),
                tc("system_cpu_1m", 1), tc("broker_cpu_1m", 1),
                tc("broker_cpu_pct", 1), tc("txn_per_s", 1), tc("events_per_txn"),
                tc("commit_ms", 1),
                "drain %s, steady %s" % (correct_cell(d), correct_cell(t))))
        out.append("")


def cmd_report(args):
    runs = load_runs(args.runs)
    for i, r in enumerate(runs):
        r["_index"] = i
    out = []
    date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    out.append("<!-- written by tests/bench/report.py (make bench); edit the "
               "prose in tests/bench/report.py or below the generated part -->")
    out.append("## Results: %s profile, %s" % (args.profile, date))
    out.append("")
    out.append("Machine: %s. One system at a time. A cell of several "
               "rounds is their median (min–max); a bare figure is one "
               "round only. CPU from /proc (utime+stime) over the "
               "measured window. Ratios are from this run only." % args.machine)
    out.append("")
    plots = {}

    # ---- W1
    w1 = [w1_metrics(r) for r in runs if r["workload"] == "w1"]
    load = [r for r in runs if r["workload"] == "w1-load"]
    if w1:
        by = {}
        for m in w1:
            by.setdefault(m["system"], []).append(m)
        medrate = {s: med([m.get("rate") for m in ms]) for s, ms in by.items()}
        n = load[0]["events"] if load else None
        out.append("### W1: drain of %s events (~700 B, 100-row transactions, "
                   "slots created before the load)" % fmt(n))
        out.append("")
        if load:
            out.append("Load: %s s, %s MB of WAL." % (
                fmt(load[0]["secs"], 1), fmt(load[0].get("wal_bytes", 0) / 1e6)))
            out.append("")
        out.append("| system | drain ev/s | × its ceiling | × Debezium tuned | × Outboxx | "
                   "start → first event s | peak RSS MB | own CPU s / 1M | "
                   "walsender CPU s / 1M | broker CPU s / 1M | produce requests / 1M | correct |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        order = [s for s in NAMES if s in by]
        for s in order:
            ms = by[s]
            ceil = "ceil-w2j" if s in ("relay", "relay-rdk", "ceil-w2j") else "ceil-pgo"
            rc = ratio(medrate.get(s), medrate.get(ceil)) if not s.startswith("ceil") and s != "producer" else None
            rd = ratio(medrate.get(s), medrate.get("dbz-tuned")) if s.startswith("relay") or s in ("dbz-defaults", "outboxx") else None
            # Outboxx reads pgoutput: the relay's pgoutput rows only.
            rx = ratio(medrate.get(s), medrate.get("outboxx")) if s in ("relay-pgo", "relay-pgo-rdk") else None
            checks = [m.get("check") for m in ms if m.get("check")]
            corr = "—"
            if checks:
                bad = [c for c in checks if not c["ok"]]
                corr = "%d/%d ok" % (len(checks) - len(bad), len(checks))
                if bad:
                    b = bad[0]
                    corr += " (missing %d, dup %d, order %d)" % (
                        b["missing"], b["duplicates"], b["order_violations"])
            exits = [m["exit"] for m in ms if m.get("exit")]
            if exits:
                corr += "; %d/%d exited before the end (%s)" % (
                    len(exits), len(ms), exits[0])
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                NAMES[s], cell([m.get("rate") for m in ms]),
                fmt(rc, 2) + "×" if rc else "—", fmt(rd, 2) + "×" if rd else "—",
                fmt(rx, 2) + "×" if rx else "—",
                cell([m.get("startup_s") for m in ms], 1),
                cell([m.get("rss_mb") for m in ms], 1),
                cell([m.get("system_cpu_1m") for m in ms], 1),
                cell([m.get("walsender_cpu_1m") for m in ms], 1),
                cell([m.get("broker_cpu_1m") for m in ms], 1),
                cell([m.get("produce_reqs_1m") for m in ms]),
                corr))
        out.append("")
        plots["w1"] = (order, by)

    # ---- steady-state windows (W2, knobs, W6)
    checks = {}
    for r in runs:
        if r.get("records") and r["records"] not in checks:
            try:
                with open(r["records"] + ".json") as f:
                    checks[r["records"]] = json.load(f)
            except (OSError, ValueError):
                checks[r["records"]] = None
    def windows(wl):
        return [window_metrics(r, checks.get(r.get("records")))
                for r in runs if r["workload"] == wl]
    def series_ok(wl, system, variant=""):
        for r in runs:
            if r["workload"] == wl + "-check" and r["system"] == system and \
                    r.get("variant", "") == variant:
                c = checks.get(r["records"])
                if c is None:
                    return "—"
                if c["ok"]:
                    return "ok (%s)" % fmt(c["expected"])
                return "FAILED: missing %d, dup %d, order %d" % (
                    c["missing"], c["duplicates"], c["order_violations"])
        return "—"

    def steady_table(title, ws, keyf, label):
        groups = {}
        for m in ws:
            groups.setdefault(keyf(m), []).append(m)
        out.append(title)
        out.append("")
        out.append("| %s | offered ev/s | achieved ev/s | receive − commit p50 / p90 / p99 / p99.9 / max ms "
                   "| CreateTime − commit p50 / p99 ms | own CPU s / 1M | walsender CPU s / 1M "
                   "| broker CPU s / 1M | produce req/s | events per request | peak RSS MB |" % label)
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for k in sorted(groups, key=lambda k: (k[1], k[0]) if isinstance(k, tuple) else (0, k)):
            ms = groups[k]
            lat = lambda f, p: [m[f]["p%s" % p] if m.get(f) else None for m in ms]
            mx = [m["recv"]["max"] if m.get("recv") else None for m in ms]
            out.append("| %s | %s | %s | %s / %s / %s / %s / %s | %s / %s | %s | %s | %s | %s | %s | %s |" % (
                k[0] if isinstance(k, tuple) else k, fmt(ms[0]["rate"]),
                cell([m["achieved"] for m in ms]),
                fmt(med(lat("recv", 50)), 1), fmt(med(lat("recv", 90)), 1),
                cell(lat("recv", 99), 1), fmt(med(lat("recv", 99.9)), 1),
                fmt(med(mx), 1), fmt(med(lat("create", 50)), 1),
                fmt(med(lat("create", 99)), 1),
                cell([m.get("system_cpu_1m") for m in ms], 1),
                cell([m.get("walsender_cpu_1m") for m in ms], 1),
                cell([m.get("broker_cpu_1m") for m in ms], 1),
                cell([m.get("produce_per_s") for m in ms]),
                fmt(med([m.get("msgs_per_produce") for m in ms]), 1),
                fmt(med([m.get("rss_mb") for m in ms]), 1)))
        out.append("")
        return groups

    w2 = windows("w2")
    if w2:
        g = steady_table("### W2: steady load (pgbench -R, 10 rows a transaction; "
                         "latency of every event from a separate consumer; "
                         "commit = the statement's clock_timestamp() in the payload)",
                         w2, lambda m: (NAMES.get(m["system"], m["system"]), m["rate"]),
                         "system")
        rates = sorted({m["rate"] for m in w2})
        lines = []
        for rate in rates:
          for rs in ("relay", "relay-pgo", "relay-rdk", "relay-pgo-rdk"):
            rel = [m for m in w2 if m["rate"] == rate and m["system"] == rs]
            dbz = [m for m in w2 if m["rate"] == rate and m["system"] == "dbz-tuned"]
            if rel and dbz:
                def mm(ms, f, sub=None):
                    return med([(m[f]["p99"] if m.get(f) else None) if sub else m.get(f) for m in ms])
                lines.append("| %s | %s | %s | %s | %s | %s |" % (
                    fmt(rate), rs, fmt(ratio(mm(rel, "recv", 1), mm(dbz, "recv", 1)), 2),
                    fmt(ratio(mm(rel, "system_cpu_1m"), mm(dbz, "system_cpu_1m")), 2),
                    fmt(ratio(mm(rel, "walsender_cpu_1m"), mm(dbz, "walsender_cpu_1m")), 2),
                    fmt(ratio(mm(rel, "broker_cpu_1m"), mm(dbz, "broker_cpu_1m")), 2)))
        if lines:
            out.append("Relay ÷ Debezium tuned (medians; below 1 favours the relay):")
            out.append("")
            out.append("| ev/s | relay | p99 receive − commit | own CPU / event | walsender CPU / event | broker CPU / event |")
            out.append("|---|---|---|---|---|---|")
            out.extend(lines)
            out.append("")
        out.append("Correctness of each series (every event once, per-key order): " +
                   ", ".join("%s %s" % (NAMES.get(s, s), series_ok("w2", s))
                             for s in sorted({m["system"] for m in w2})) + ".")
        out.append("")
        plots["w2"] = w2

    kn = windows("knobs")
    w2 = w2 or []
    if kn:
        steady_table("### Producer settings at %s ev/s (relay; the broker-CPU investigation)"
                     % fmt(kn[0]["rate"]), kn, lambda m: (m["variant"], m["rate"]),
                     "relay variant")
        out.append("Correctness: " + ", ".join(
            "%s %s" % (v, series_ok("knobs", "relay", v))
            for v in sorted({m["variant"] for m in kn})) + ".")
        out.append("")
        plots["knobs"] = kn
        # The broker's side of it: requests per second and what each
        # carries, beside Debezium's at the same offered rate (W2).
        rate = kn[0]["rate"]
        rows = [("Debezium tuned (W2)", [m for m in w2 if m["system"] == "dbz-tuned" and m["rate"] == rate]),
                ("Debezium defaults (W2)", [m for m in w2 if m["system"] == "dbz-defaults" and m["rate"] == rate]),
                ("relay defaults (W2)", [m for m in w2 if m["system"] == "relay" and m["rate"] == rate])]
        for v in sorted({m["variant"] for m in kn}):
            rows.append(("relay " + v, [m for m in kn if m["variant"] == v]))
        out.append("Broker requests at %s ev/s (JMX RequestsPerSec counts over each window; "
                   "fetches are the one timing consumer's, the same client for every system):" % fmt(rate))
        out.append("")
        out.append("| producer | produce req/s | events per produce request | fetch req/s | broker CPU % of a core | broker CPU s / 1M | p99 receive − commit ms |")
        out.append("|---|---|---|---|---|---|---|")
        for name, ms in rows:
            if not ms:
                continue
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                name, cell([m.get("produce_per_s") for m in ms]),
                fmt(med([m.get("msgs_per_produce") for m in ms]), 1),
                cell([m.get("fetch_per_s") for m in ms]),
                cell([m.get("broker_cpu_pct") for m in ms], 1),
                cell([m.get("broker_cpu_1m") for m in ms], 1),
                cell([m["recv"]["p99"] if m.get("recv") else None for m in ms], 1)))
        out.append("")

    # ---- W5
    w5 = [r for r in runs if r["workload"] == "w5"]
    if w5:
        client = next((r.get("client") for r in w5 if r.get("client")), None)
        out.append("### W5: latency floor (idle, then one single-row commit%s; "
                   "receive − commit)" % {
                       "session": ", all from one session",
                       "psql": ", each from a new psql"}.get(client, ""))
        out.append("")
        out.append("| system | commits | idle before each s | p50 ms | p90 ms | p99 ms | max ms | CreateTime − commit p50 ms | correct |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for r in w5:
            c = checks.get(r["records"])
            w = next((w for w in (c or {}).get("windows", []) if w["run"] == r["_index"]), {})
            lr, lc = w.get("recv") or {}, w.get("create") or {}
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                NAMES.get(r["system"], r["system"]), r["count"], r["idle"],
                fmt(lr.get("p50"), 1), fmt(lr.get("p90"), 1), fmt(lr.get("p99"), 1),
                fmt(lr.get("max"), 1), fmt(lc.get("p50"), 1),
                series_ok("w5", r["system"])))
        out.append("")
        plots["w5"] = [(r["system"], next((w for w in (checks.get(r["records"]) or {}).get("windows", [])
                                            if w["run"] == r["_index"]), {})) for r in w5]

    # ---- W3
    w3 = [r for r in runs if r["workload"] == "w3"]
    if w3:
        out.append("### W3: one %s-row transaction beside 1k events/s" % fmt(w3[0]["rows"]))
        out.append("")
        out.append("| system | commit → first event s | commit → last event s | background p50 / p99 / max ms during it | spill MB | peak RSS MB | own CPU s | correct |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in w3:
            c = checks.get(r["records"]) or {}
            w = next((w for w in c.get("windows", []) if w["run"] == r["_index"]), {})
            rows = read_samples(r["samples"])
            hwm = col(rows, 0, "hwm")
            bg = w.get("bg_recv") or {}
            spill = r.get("spill")
            out.append("| %s | %s | %s | %s / %s / %s | %s | %s | %s | %s |" % (
                NAMES.get(r["system"], r["system"]), fmt(w.get("big_first_s"), 1),
                fmt(w.get("big_last_s"), 1), fmt(bg.get("p50"), 0), fmt(bg.get("p99"), 0),
                fmt(bg.get("max"), 0),
                fmt(spill / 1e6 if isinstance(spill, (int, float)) else None),
                fmt(max(hwm) / 1024.0 if hwm else None, 1),
                fmt(cpu_delta(rows, 0), 1), series_ok("w3", r["system"])))
        out.append("")

    # ---- W6
    w6 = windows("w6")
    if w6:
        steady_table("### W6: the outbox as 5 %% of a busy database's transactions (%s TPS of pgbench TPC-B-like + outbox)"
                     % fmt(runs[[r["workload"] for r in runs].index("w6")]["tps"]),
                     w6, lambda m: (NAMES.get(m["system"], m["system"]), m["rate"]),
                     "system")
        out.append("CPU per 1M *outbox events* (the other 95 % of transactions are B/C only for the relay). Correctness: " +
                   ", ".join("%s %s" % (NAMES.get(s, s), series_ok("w6", s))
                             for s in sorted({m["system"] for m in w6})) + ".")
        out.append("")

    eos_report(out, runs, checks,
               lambda r: window_metrics(r, checks.get(r.get("records"))))

    imgs = make_plots(plots, args.plots)
    if imgs:
        out.append("### Plots")
        out.append("")
        ref = args.plot_ref or "."
        for name, title in imgs:
            out.append("![%s](%s/%s)" % (title, ref, name))
            out.append("")
    text = "\n".join(out) + "\n"
    write_doc(args.out, text)
    return 0


BEGIN = "<!-- BEGIN GENERATED: make bench -->"
END = "<!-- END GENERATED: make bench -->"


def write_doc(path, text):
    """Replaces the generated part of an existing document (between the
    BEGIN/END markers), keeping the prose around it."""
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    block = BEGIN + "\n" + text + END + "\n"
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        new = head + block + tail
    else:
        new = block if not old else old.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(new)


def make_plots(plots, d):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: no matplotlib (apt-get install python3-matplotlib): "
              "no plots", file=sys.stderr)
        return []
    os.makedirs(d, exist_ok=True)
    imgs = []
    short = {"ceil-w2j": "wal2json\nceiling", "ceil-pgo": "pgoutput\nceiling",
             "producer": "producer\nceiling", "relay": "outbox-relay",
             "relay-pgo": "outbox-relay\npgoutput",
             "dbz-tuned": "Debezium\ntuned", "dbz-defaults": "Debezium\ndefaults",
             "outboxx": "Outboxx"}
    if "w1" in plots:
        order, by = plots["w1"]
        fig, ax = plt.subplots(figsize=(8, 4))
        meds = [med([m.get("rate") for m in by[s]]) or 0 for s in order]
        lo = [meds[i] - min(m.get("rate") or 0 for m in by[s]) for i, s in enumerate(order)]
        hi = [max(m.get("rate") or 0 for m in by[s]) - meds[i] for i, s in enumerate(order)]
        colors = ["#bbbbbb" if s.startswith("ceil") or s == "producer" else
                  ("#1f77b4" if s.startswith("relay") else
                   "#9467bd" if s == "outboxx" else "#d62728") for s in order]
        ax.bar([short[s] for s in order], meds, yerr=[lo, hi], color=colors, capsize=4)
        ax.set_ylabel("events/s (median, min–max)")
        ax.set_title("W1 drain throughput")
        for i, v in enumerate(meds):
            ax.text(i, v, "{:,.0f}".format(v), ha="center", va="bottom", fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "w1_throughput.png"), dpi=100)
        plt.close(fig)
        imgs.append(("w1_throughput.png", "W1 drain throughput"))

        sysl = [s for s in order if s in ("relay", "relay-pgo", "outboxx", "dbz-tuned", "dbz-defaults")]
        if sysl:
            fig, ax = plt.subplots(figsize=(7, 4))
            bottom = [0.0] * len(sysl)
            for part, color in (("system", "#1f77b4"), ("walsender", "#2ca02c"),
                                ("broker", "#ff7f0e")):
                vals = [med([m.get(part + "_cpu_1m") for m in by[s]]) or 0 for s in sysl]
                ax.bar([short[s] for s in sysl], vals, bottom=bottom, color=color,
                       label={"system": "relay / Outboxx / Connect JVM"}.get(part, part))
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_ylabel("CPU seconds per 1M events")
            ax.set_title("W1 drain: CPU per event by process")
            ax.legend()
            fig.tight_layout()
            fig.savefig(os.path.join(d, "w1_cpu.png"), dpi=100)
            plt.close(fig)
            imgs.append(("w1_cpu.png", "W1 CPU per event, stacked by process"))

            fig, ax = plt.subplots(figsize=(6, 4))
            vals = [med([m.get("rss_mb") for m in by[s]]) or 0 for s in sysl]
            ax.bar([short[s] for s in sysl], vals,
                   color=["#1f77b4" if s.startswith("relay") else "#d62728" for s in sysl])
            ax.set_yscale("log")
            ax.set_ylabel("peak RSS (VmHWM), MB, log scale")
            ax.set_title("W1 drain: peak memory")
            for i, v in enumerate(vals):
                ax.text(i, v, "%.1f" % v, ha="center", va="bottom", fontsize=8)
            fig.tight_layout()
            fig.savefig(os.path.join(d, "w1_rss.png"), dpi=100)
            plt.close(fig)
            imgs.append(("w1_rss.png", "W1 peak RSS"))

    if "w2" in plots:
        w2 = plots["w2"]
        rates = sorted({m["rate"] for m in w2})
        fig, axes = plt.subplots(1, len(rates), figsize=(4.5 * len(rates), 4), squeeze=False)
        for ax, rate in zip(axes[0], rates):
            for s, color in (("relay", "#1f77b4"), ("relay-pgo", "#2ca02c"), ("dbz-tuned", "#d62728"),
                             ("dbz-defaults", "#9467bd")):
                ms = [m for m in w2 if m["rate"] == rate and m["system"] == s and m.get("recv")]
                for i, m in enumerate(ms):
                    cdf = m["recv"]["cdf"]
                    ax.plot(cdf, [q / 200.0 for q in range(len(cdf))], color=color,
                            alpha=0.8, label=short[s].replace("\n", " ") if i == 0 else None)
            ax.set_xscale("log")
            ax.set_xlabel("receive − commit, ms (log)")
            ax.set_ylabel("fraction of events")
            ax.set_title("W2 at {:,} ev/s".format(rate))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "w2_latency_cdf.png"), dpi=100)
        plt.close(fig)
        imgs.append(("w2_latency_cdf.png", "W2 latency CDF, every round"))

        sysl = [s for s in ("relay", "relay-pgo", "dbz-tuned", "dbz-defaults") if any(m["system"] == s for m in w2)]
        fig, axes = plt.subplots(1, len(rates), figsize=(4 * len(rates), 4), squeeze=False)
        for ax, rate in zip(axes[0], rates):
            bottom = [0.0] * len(sysl)
            for part, color in (("system", "#1f77b4"), ("walsender", "#2ca02c"),
                                ("broker", "#ff7f0e")):
                vals = [med([m.get(part + "_cpu_1m") for m in w2
                             if m["system"] == s and m["rate"] == rate]) or 0 for s in sysl]
                ax.bar([short[s] for s in sysl], vals, bottom=bottom, color=color,
                       label={"system": "relay / Connect JVM"}.get(part, part))
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_title("W2 at {:,} ev/s".format(rate))
            ax.set_ylabel("CPU seconds per 1M events")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "w2_cpu.png"), dpi=100)
        plt.close(fig)
        imgs.append(("w2_cpu.png", "W2 CPU per event, stacked by process"))

    if "knobs" in plots:
        kn = plots["knobs"]
        variants = sorted({m["variant"] for m in kn}, key=lambda v: (v != "default", v))
        fig, ax1 = plt.subplots(figsize=(7, 4))
        bc = [med([m.get("broker_cpu_1m") for m in kn if m["variant"] == v]) or 0 for v in variants]
        p99 = [med([m["recv"]["p99"] if m.get("recv") else None for m in kn if m["variant"] == v]) or 0
               for v in variants]
        ax1.bar(variants, bc, color="#ff7f0e")
        ax1.set_ylabel("broker CPU s per 1M events (bars)")
        ax2 = ax1.twinx()
        ax2.plot(variants, p99, "o-", color="#1f77b4")
        ax2.set_ylabel("p99 receive − commit ms (line)")
        ax1.set_title("Relay producer settings at {:,} ev/s".format(kn[0]["rate"]))
        fig.tight_layout()
        fig.savefig(os.path.join(d, "knobs.png"), dpi=100)
        plt.close(fig)
        imgs.append(("knobs.png", "Producer settings: broker CPU and p99"))
    return imgs


def main():
    ap = argparse.ArgumentParser(prog="report.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--last", required=True)
    r = sub.add_parser("report")
    r.add_argument("--runs", required=True)
    r.add_argument("--plots", required=True)
    r.add_argument("--plot-ref")
    r.add_argument("--machine", default="")
    r.add_argument("--profile", default="quick")
    r.add_argument("--out", required=True)
    a = ap.parse_args()
    return cmd_check(a) if a.cmd == "check" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
