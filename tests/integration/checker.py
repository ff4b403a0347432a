#!/usr/bin/env python3
# tests/integration/checker.py -- delivery checker for the relay's
# integration tests (python3 standard library only).
#
# The writer scheme (installed by `setup-sql`): every aggregate has a row in
# agg_seq, and each event is written by
#
#     SELECT emit(agg_id, rolled_back)
#
# which does UPDATE agg_seq SET n = n + 1 WHERE id = agg_id RETURNING n and
# inserts an outbox row whose payload is {"agg": AGG, "seq": n} (plus
# "rb": true when the caller is going to roll the transaction back). The
# UPDATE's row lock serialises writers per aggregate, so n follows commit
# order; a rollback undoes the UPDATE too, so the committed sequence numbers
# of an aggregate are exactly 1..agg_seq.n. Several emit() calls in one
# transaction must take their aggregates in ascending id order (no
# deadlocks); the pgbench script from `pgbench-script` does.
#
# The rich workload (setup-sql --rich, pgbench-script --rich) adds, in the
# same transaction as each event: a ledger row (agg_ledger: agg, seq, id;
# it commits or rolls back with the event, so it is the independent
# record of what was committed), a row of another table (noise), and a
# payload "note" of unicode and control characters derived from (agg,
# seq) (checked with --notes). Each event is, at random, an outbox row
# (mode 0), an outbox row deleted again in its transaction (mode 1: the
# insert is still decoded and published) or an outbox_emit() message
# (mode 2: sql/emit.sql, relay with outbox.emit.prefix=outbox).
#
# Usage:
#   checker.py --self-test
#   checker.py setup-sql --type T --aggs N [--rich]   SQL: agg_seq, emit()
#   checker.py pgbench-script --aggs N [--rollback-pct P] [--multi-pct P]
#                             [--rich [--delete-pct P] [--emit-pct P]]
#   checker.py check --expected FILE [--ids FILE] [--topic T] [--no-dups]
#                    [--faults N] [--notes]
#                    [--covered LSN=SNAPSHOT]... [--key-json] [--lsn-optional]
#                    [--uncommitted RU.json]... [--quiet] RECORDS.json...
#
# check: RECORDS are kcat -C -J outputs (one JSON object a line: topic,
# partition, offset, key, payload, headers = [name, value, ...]). FILE
# lines are "agg|n" (SELECT agg, n FROM agg_seq); --ids lines are
# "agg|seq|id" (the committed outbox rows). Verifies:
#   (a) every committed (agg, seq), seq in 1..n, was published at least
#       once, and nothing else was (no seq > n, no unknown aggregate);
#   (b) no record carries "rb": true (a rolled-back transaction);
#   (c) per aggregate, in offset order within its partition, the first
#       occurrences of seq are strictly increasing (nothing appears for the
#       first time after a newer event) and their commit LSNs never go
#       back; the key equals the payload's agg; one partition per key;
#   (d) duplicates are counted (records minus distinct events); with
#       --no-dups any duplicate is a violation;
#   (e) exactly one id header per record, the same id for every copy of an
#       event and different ids for different events (and the outbox row's
#       id with --ids); pg_lsn is an LSN and pg_xid a number, the same for
#       every copy of an event;
#   (f) with --covered LSN=SNAPSHOT (repeatable): SNAPSHOT is a kcat -J
#       consume taken while the slot's confirmed_flush_lsn was LSN and no
#       relay ran; every event whose commit end (pg_lsn, from RECORDS) is
#       <= LSN must be in it: PostgreSQL was told it was in Kafka;
#   (g) with --faults N (the harness injected N faults): a key's records
#       read 1, 2, 3, ... and a re-delivery may only repeat a suffix: each
#       record is the next seq, or a restart at an earlier seq from which
#       the following records count up again (A1 A2 A3 A2 A3 A4), at most
#       N restarts per key; anything else (A1 A2 A1 A3, A1 A3 A2) is an
#       order violation. --faults 0: no duplicate at all;
#   (h) with --notes: each payload's "note" is the text the rich workload
#       derives from (agg, seq), byte for byte after JSON decoding;
#   (i) with --key-json the key is the agg as a JSON string ("st-1", quoted:
#       what Connect's JsonConverter writes, and key.format = json); with
#       --lsn-optional a record with neither pg_lsn nor pg_xid header (one
#       that Debezium wrote, in the cutover test) is accepted and left out
#       of the LSN checks, the rest still checked;
#   (j) with --uncommitted RU.json (repeatable; a kcat -J consume with
#       isolation.level=read_uncommitted of the same topic, RECORDS being
#       the read_committed one): RU is checked the same way but for
#       --no-dups, --faults and --covered (copies from aborted Kafka
#       transactions are allowed there) and a second line compares the
#       two: "checker: isolation committed=N rc_records= rc_distinct=
#       rc_duplicates= rc_missing= rc_order_violations= ru_records= ...
#       ru_aborted=" (ru_aborted: RU records at an offset RECORDS does not
#       have, i.e. of aborted or still open transactions). The exit
#       status stays that of RECORDS' check.
# Prints one summary line (committed, consumed, missing, duplicates,
# leaked = rolled back but published, order violations, keys split over
# partitions, ...). Exit status: 0 all good; 1 a violation (or duplicates
# with --no-dups); 2 only events missing so far (a caller may consume
# again and retry); 3 bad input or usage.
import argparse
import io
import json
import os
import re
import sys
import tempfile
from contextlib import redirect_stdout, redirect_stderr

EXIT_OK, EXIT_VIOLATION, EXIT_INCOMPLETE, EXIT_INPUT = 0, 1, 2, 3
LSN_RE = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")
MAX_SHOWN = 10


class InputError(Exception):
    pass


def lsn_parse(s):
    m = LSN_RE.match(s) if isinstance(s, str) else None
    if not m:
        return None
    return (int(m.group(1), 16) << 32) | int(m.group(2), 16)


def lsn_fmt(v):
    return "%X/%X" % (v >> 32, v & 0xFFFFFFFF)


# ---------------------------------------------------------------- writer SQL

def note_of(agg, seq):
    """The rich workload's payload note for (agg, seq); the SQL in
    setup_sql(rich=True) builds the same text."""
    return f'ü€😀 "q" \\ {chr(1 + seq % 31)}\t{agg}:{seq}'


RICH_SQL = """
CREATE TABLE agg_ledger (
    agg  text   NOT NULL,
    seq  int    NOT NULL,
    id   uuid   NOT NULL,
    mode int    NOT NULL,
    PRIMARY KEY (agg, seq)
);
CREATE TABLE noise (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO noise SELECT i FROM generate_series(1, 16) AS i;
-- One event in the rich workload: the next seq under the row lock, a
-- ledger row in the same transaction, a row of another table, and the
-- event as an outbox row (mode 0), a row deleted again (1) or an
-- outbox_emit() message (2). Returns the event id.
CREATE FUNCTION emit_rich(p_id int, p_rb boolean, p_mode int) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    v_agg  text;
    v_n    int;
    v_id   uuid;
    v_pl   jsonb;
BEGIN
    UPDATE agg_seq SET n = n + 1 WHERE id = p_id RETURNING agg, n
        INTO STRICT v_agg, v_n;
    v_pl := jsonb_build_object('agg', v_agg, 'seq', v_n, 'note',
                'ü€😀 "q" \\ ' || chr(1 + v_n %% 31) || E'\t' || v_agg || ':' || v_n)
            || CASE WHEN p_rb THEN '{"rb": true}'::jsonb ELSE '{}'::jsonb END;
    IF p_mode = 2 THEN
        v_id := public.outbox_emit('%(type)s', v_agg, 'SeqEvent', v_pl);
    ELSE
        INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
        VALUES ('%(type)s', v_agg, 'SeqEvent', v_pl) RETURNING id INTO v_id;
        IF p_mode = 1 THEN
            DELETE FROM outbox WHERE id = v_id;
        END IF;
    END IF;
    INSERT INTO agg_ledger VALUES (v_agg, v_n, v_id, p_mode);
    UPDATE noise SET n = n + 1 WHERE id = 1 + (v_n %% 16);
    RETURN v_id;
END
$$;
"""


def setup_sql(agg_type, aggs, rich=False):
    if not re.match(r"^[A-Za-z0-9_.-]+$", agg_type):
        raise InputError("--type must match [A-Za-z0-9_.-]+")
    extra = RICH_SQL % {"type": agg_type} if rich else ""
    return extra + f"""\
CREATE TABLE agg_seq (
    id  int  PRIMARY KEY,
    agg text NOT NULL UNIQUE,
    n   int  NOT NULL DEFAULT 0
);
INSERT INTO agg_seq (id, agg)
    SELECT i, '{agg_type}-' || i FROM generate_series(1, {int(aggs)}) AS i;
-- One event of aggregate p_id: the next sequence number in commit order
-- (row lock on agg_seq) and an outbox row carrying it. Returns the xid.
CREATE FUNCTION emit(p_id int, p_rb boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_agg text;
    v_n   int;
BEGIN
    UPDATE agg_seq SET n = n + 1 WHERE id = p_id RETURNING agg, n
        INTO STRICT v_agg, v_n;
    INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
    VALUES ('{agg_type}', v_agg, 'SeqEvent',
            jsonb_build_object('agg', v_agg, 'seq', v_n)
            || CASE WHEN p_rb THEN '{{"rb": true}}'::jsonb ELSE '{{}}'::jsonb END);
    RETURN txid_current();
END
$$;
"""


def pgbench_script(aggs, rollback_pct, multi_pct, rich=False, delete_pct=15,
                   emit_pct=15):
    aggs = int(aggs)
    if aggs < 2:
        raise InputError("--aggs must be at least 2")
    half = aggs // 2
    if rich:
        # mode: 2 (outbox_emit) under emit_pct, 1 (insert then delete)
        # under the next delete_pct, else 0 (a row).
        e, d = int(emit_pct), int(emit_pct) + int(delete_pct)
        return f"""\
\\set a random(1, {aggs})
\\set r random(1, 100)
\\set m random(1, 100)
\\set k random(1, 100)
\\set lo random(1, {half})
\\set hi random({half + 1}, {aggs})
BEGIN;
\\if :m <= {int(multi_pct)}
SELECT emit_rich(:lo, :r <= {int(rollback_pct)}, CASE WHEN :k <= {e} THEN 2 WHEN :k <= {d} THEN 1 ELSE 0 END);
SELECT emit_rich(:hi, :r <= {int(rollback_pct)}, CASE WHEN :k > {d} THEN 2 ELSE 0 END);
\\else
SELECT emit_rich(:a, :r <= {int(rollback_pct)}, CASE WHEN :k <= {e} THEN 2 WHEN :k <= {d} THEN 1 ELSE 0 END);
\\endif
\\if :r <= {int(rollback_pct)}
ROLLBACK;
\\else
COMMIT;
\\endif
"""
    # Two-event transactions take a < b, in that order: no deadlocks.
    return f"""\
\\set a random(1, {aggs})
\\set r random(1, 100)
\\set m random(1, 100)
\\set lo random(1, {half})
\\set hi random({half + 1}, {aggs})
BEGIN;
\\if :m <= {int(multi_pct)}
SELECT emit(:lo, :r <= {int(rollback_pct)});
SELECT emit(:hi, :r <= {int(rollback_pct)});
\\else
SELECT emit(:a, :r <= {int(rollback_pct)});
\\endif
\\if :r <= {int(rollback_pct)}
ROLLBACK;
\\else
COMMIT;
\\endif
"""


# ---------------------------------------------------------------- reading

def read_table(path, ncols, what):
    rows = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("\t") if "\t" in line else line.split("|")
            if len(parts) != ncols:
                raise InputError(f"{path}:{no}: {what}: want {ncols} fields, "
                                 f"got {line!r}")
            rows.append(parts)
    return rows


def read_expected(path):
    exp = {}
    for agg, n in read_table(path, 2, "expected agg|n"):
        try:
            n = int(n)
        except ValueError:
            raise InputError(f"{path}: n is not a number for {agg!r}: {n!r}")
        if agg in exp:
            raise InputError(f"{path}: aggregate {agg!r} listed twice")
        exp[agg] = n
    return exp


def read_ids(path):
    ids = {}
    for agg, seq, eid in read_table(path, 3, "ids agg|seq|id"):
        try:
            seq = int(seq)
        except ValueError:
            raise InputError(f"{path}: seq is not a number: {seq!r}")
        if (agg, seq) in ids:
            raise InputError(f"{path}: ({agg}, {seq}) has two outbox rows")
        ids[(agg, seq)] = eid
    return ids


def read_records(paths):
    recs = []
    for path in paths:
        with open(path, encoding="utf-8", errors="strict") as f:
            for no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise InputError(f"{path}:{no}: not a kcat -J line ({e}): "
                                     f"{line[:200]!r}")
                if not isinstance(r, dict) or not all(
                        k in r for k in ("topic", "partition", "offset")):
                    raise InputError(f"{path}:{no}: no topic/partition/offset: "
                                     f"{line[:200]!r}")
                r["_where"] = f"{path}:{no}"
                recs.append(r)
    return recs


def headers_of(r):
    h = r.get("headers") or []
    if not isinstance(h, list) or len(h) % 2:
        return None
    out = {}
    for i in range(0, len(h), 2):
        out.setdefault(h[i], []).append(h[i + 1])
    return out


# ---------------------------------------------------------------- checking

class Result:
    def __init__(self):
        self.violations = []     # (kind, message)
        self.missing = []        # (agg, seq)
        self.stats = {}

    def bad(self, kind, msg):
        self.violations.append((kind, msg))

    def kinds(self):
        return {k for k, _ in self.violations}

    def code(self, no_dups):
        if self.violations:
            return EXIT_VIOLATION
        if no_dups and self.stats.get("duplicates", 0) > 0:
            return EXIT_VIOLATION
        if self.missing:
            return EXIT_INCOMPLETE
        return EXIT_OK


def where(r):
    return f"{r['topic']}[{r['partition']}]@{r['offset']}"


def check(recs, expected, ids=None, topic=None, no_dups=False, covered=(),
          faults=None, notes=False, key_json=False, lsn_optional=False):
    res = Result()
    leaked = 0
    # Offsets are unique per topic-partition: a repeated one means the
    # input was consumed twice or is corrupt, not a relay duplicate.
    seen_off = {}
    for r in recs:
        k = (r["topic"], r["partition"], r["offset"])
        if k in seen_off:
            raise InputError(f"{r['_where']}: offset {where(r)} also at "
                             f"{seen_off[k]}: the same record read twice")
        seen_off[k] = r["_where"]
    recs = sorted(recs, key=lambda r: (r["topic"], r["partition"], r["offset"]))

    per_key = {}        # key -> [records in (partition, offset) order]
    key_parts = {}      # key -> {partition}
    events = {}         # (agg, seq) -> first record
    copies = {}         # (agg, seq) -> count
    id_owner = {}       # id -> (agg, seq)
    max_lsn = None
    for r in recs:
        w = where(r)
        if topic is not None and r["topic"] != topic:
            res.bad("topic", f"{w}: topic {r['topic']!r}, want {topic!r}")
        key = r.get("key")
        try:
            p = json.loads(r.get("payload") or "")
        except ValueError:
            p = None
        if not isinstance(p, dict) or not isinstance(p.get("agg"), str) or \
                type(p.get("seq")) is not int:
            res.bad("payload", f"{w}: payload is not {{agg, seq}}: "
                    f"{str(r.get('payload'))[:200]!r}")
            continue
        agg, seq = p["agg"], p["seq"]
        r["_ev"] = (agg, seq)
        if p.get("rb") is True:
            leaked += 1
            res.bad("rolled_back", f"{w}: ({agg}, {seq}) comes from a "
                    f"rolled-back transaction (payload rb=true)")
        if notes and p.get("note") != note_of(agg, seq):
            res.bad("note", f"{w}: ({agg}, {seq}) note {p.get('note')!r}, "
                    f"want {note_of(agg, seq)!r}")
        if key != (json.dumps(agg, ensure_ascii=False) if key_json else agg):
            res.bad("key", f"{w}: key {key!r} but payload agg {agg!r}"
                    f"{' (--key-json)' if key_json else ''}")
        h = headers_of(r)
        if h is None:
            res.bad("headers", f"{w}: headers are not name/value pairs")
            h = {}
        no_lsn = lsn_optional and "pg_lsn" not in h and "pg_xid" not in h
        ids_h = h.get("id", [])
        if len(ids_h) != 1 or not ids_h[0]:
            res.bad("id", f"{w}: ({agg}, {seq}): want one id header, got {ids_h!r}")
            eid = None
        else:
            eid = ids_h[0]
        lsn_h = h.get("pg_lsn", [])
        lsn = lsn_parse(lsn_h[0]) if len(lsn_h) == 1 else None
        if lsn is None:
            if not no_lsn:
                res.bad("pg_lsn", f"{w}: ({agg}, {seq}): pg_lsn header {lsn_h!r} "
                        f"is not one X/X LSN")
        else:
            max_lsn = lsn if max_lsn is None else max(max_lsn, lsn)
        xid_h = h.get("pg_xid", [])
        if not no_lsn and (len(xid_h) != 1 or not re.match(r"^[0-9]+$", xid_h[0] or "")):
            res.bad("pg_xid", f"{w}: ({agg}, {seq}): pg_xid header {xid_h!r}")
        r["_id"], r["_lsn"] = eid, lsn
        r["_xid"] = xid_h[0] if len(xid_h) == 1 else None

        ev = (agg, seq)
        copies[ev] = copies.get(ev, 0) + 1
        first = events.get(ev)
        if first is None:
            events[ev] = r
            if eid is not None:
                other = id_owner.get(eid)
                if other is not None and other != ev:
                    res.bad("id", f"{w}: id {eid} is used by ({agg}, {seq}) "
                            f"and by {other}")
                id_owner.setdefault(eid, ev)
            if ids is not None and eid is not None:
                want = ids.get(ev)
                if want is not None and want != eid:
                    res.bad("id", f"{w}: ({agg}, {seq}) id header {eid}, but "
                            f"the outbox row's id is {want}")
        else:
            if eid != first["_id"]:
                res.bad("id", f"{w}: duplicate of ({agg}, {seq}) has id {eid}, "
                        f"the first copy ({where(first)}) {first['_id']}")
            both = not lsn_optional or (lsn is not None and first["_lsn"] is not None)
            if both and (lsn != first["_lsn"] or r["_xid"] != first["_xid"]):
                res.bad("pg_lsn", f"{w}: duplicate of ({agg}, {seq}) has "
                        f"pg_lsn/pg_xid {lsn_h}/{xid_h}, the first copy "
                        f"({where(first)}) {lsn_fmt(first['_lsn']) if first['_lsn'] is not None else None}"
                        f"/{first['_xid']}")
        per_key.setdefault(key, []).append(r)
        key_parts.setdefault(key, set()).add((r["topic"], r["partition"]))

    # (c) one partition per key, first occurrences in order.
    replays = 0
    split = 0
    for key, rs in per_key.items():
        if faults is not None:
            # (g) next seq, or a restart from which the records count up
            # again: a replay repeats a suffix, at most `faults` times.
            prev, restarts = 0, 0
            for r in rs:
                ev = r.get("_ev")
                if ev is None:
                    continue
                seq = ev[1]
                if seq == prev + 1:
                    prev = seq
                    continue
                if seq <= prev:
                    restarts += 1
                    if restarts > faults:
                        res.bad("order", f"key {key!r}: seq {seq} at {where(r)} "
                                f"repeats after seq {prev}: restart {restarts} "
                                f"with {faults} fault(s) recorded")
                else:
                    res.bad("order", f"key {key!r}: seq {seq} at {where(r)} "
                            f"follows seq {prev}: a re-delivery must repeat a "
                            f"suffix, counting up from where it restarts")
                prev = seq
        if len(key_parts[key]) > 1:
            split += 1
            res.bad("partition", f"key {key!r} is in several partitions: "
                    f"{sorted(key_parts[key])}")
            continue
        max_seq, last_first, seen = 0, None, set()
        for r in rs:
            ev = r.get("_ev")
            if ev is None:
                continue
            seq = ev[1]
            if ev in seen:
                continue  # a duplicate: allowed anywhere after the first copy
            seen.add(ev)
            if seq <= max_seq:
                res.bad("order", f"key {key!r}: seq {seq} first appears at "
                        f"{where(r)}, after seq {max_seq} "
                        f"({where(last_first)}): an older event after a newer one")
            elif last_first is not None and r["_lsn"] is not None and \
                    last_first["_lsn"] is not None and r["_lsn"] < last_first["_lsn"]:
                res.bad("order", f"key {key!r}: seq {seq} at {where(r)} has "
                        f"commit LSN {lsn_fmt(r['_lsn'])} below seq {max_seq}'s "
                        f"{lsn_fmt(last_first['_lsn'])}")
            if seq > max_seq:
                max_seq, last_first = seq, r
        # A replay: a record that repeats an event after a newer one.
        prev = 0
        for r in rs:
            ev = r.get("_ev")
            if ev is not None:
                if ev[1] <= prev:
                    replays += 1  # counted once per replayed run
                prev = ev[1]

    # (a) completeness and nothing invented.
    for (agg, seq), r in sorted(events.items()):
        n = expected.get(agg)
        if n is None:
            res.bad("unknown", f"{where(r)}: aggregate {agg!r} is not in the "
                    f"expected list")
        elif seq < 1 or seq > n:
            res.bad("invented", f"{where(r)}: ({agg}, {seq}) was never "
                    f"committed (committed seqs are 1..{n})")
    for agg, n in sorted(expected.items()):
        for seq in range(1, n + 1):
            if (agg, seq) not in events:
                res.missing.append((agg, seq))
    if ids is not None:
        nexp = sum(expected.values())
        if len(ids) != nexp or any((a, s) not in ids for a, n in expected.items()
                                   for s in range(1, n + 1)):
            res.bad("writer", f"the outbox rows ({len(ids)}) are not exactly "
                    f"seqs 1..n of agg_seq ({nexp} events): the writer scheme "
                    f"itself is broken")

    # (f) what the slot had confirmed was in Kafka at that moment.
    for clsn, snap_name, snap in covered:
        have = set()
        for r in snap:
            try:
                p = json.loads(r.get("payload") or "")
                have.add((p["agg"], p["seq"]))
            except (ValueError, TypeError, KeyError):
                pass
        lost = sorted((r["_lsn"], ev) for ev, r in events.items()
                      if r["_lsn"] is not None and r["_lsn"] <= clsn
                      and ev not in have)
        if lost:
            shown = ", ".join(f"{ev} (commit end {lsn_fmt(l)})"
                              for l, ev in lost[:MAX_SHOWN])
            res.bad("confirmed_unpublished",
                    f"{len(lost)} events at or below confirmed_flush_lsn "
                    f"{lsn_fmt(clsn)} were not in Kafka ({snap_name}): {shown}"
                    f"{' ...' if len(lost) > MAX_SHOWN else ''}")

    dup_events = sum(1 for c in copies.values() if c > 1)
    res.stats = {
        "committed": sum(expected.values()),
        "leaked": leaked,
        "order_violations": sum(1 for k, _ in res.violations if k == "order"),
        "split_keys": split,
        "records": sum(copies.values()),
        "events": len(events),
        "expected": sum(expected.values()),
        "missing": len(res.missing),
        "duplicates": sum(copies.values()) - len(events),
        "dup_events": dup_events,
        "replays": replays,
        "aggregates": len(per_key),
        "max_pg_lsn": lsn_fmt(max_lsn) if max_lsn is not None else "none",
    }
    if no_dups and res.stats["duplicates"] > 0:
        shown = [f"{ev} x{c}" for ev, c in sorted(copies.items()) if c > 1]
        res.bad("duplicate", f"{res.stats['duplicates']} duplicate records "
                f"(--no-dups): {', '.join(shown[:MAX_SHOWN])}"
                f"{' ...' if len(shown) > MAX_SHOWN else ''}")
    return res


def report(res, no_dups, quiet=False):
    code = res.code(no_dups)
    s = res.stats
    verdict = {EXIT_OK: "OK", EXIT_VIOLATION: "FAIL",
               EXIT_INCOMPLETE: "INCOMPLETE"}[code]
    line = ("checker: %s records=%d events=%d expected=%d missing=%d "
            "duplicates=%d dup_events=%d replays=%d aggregates=%d max_pg_lsn=%s"
            " committed=%d consumed=%d leaked=%d order_violations=%d "
            "split_keys=%d"
            % (verdict, s["records"], s["events"], s["expected"], s["missing"],
               s["duplicates"], s["dup_events"], s["replays"], s["aggregates"],
               s["max_pg_lsn"], s["committed"], s["records"], s["leaked"],
               s["order_violations"], s["split_keys"]))
    print(line)
    if not quiet:
        for kind, msg in res.violations[:MAX_SHOWN * 3]:
            print(f"checker: violation [{kind}]: {msg}")
        if len(res.violations) > MAX_SHOWN * 3:
            print(f"checker: ... {len(res.violations) - MAX_SHOWN * 3} more "
                  f"violations")
        if res.missing:
            shown = ", ".join(f"({a}, {q})" for a, q in res.missing[:MAX_SHOWN])
            more = " ..." if len(res.missing) > MAX_SHOWN else ""
            print(f"checker: missing {len(res.missing)} committed events: "
                  f"{shown}{more}")
    return code


ISO_FIELDS = (("records", "records"), ("distinct", "events"),
              ("duplicates", "duplicates"), ("missing", "missing"),
              ("order_violations", "order_violations"), ("leaked", "leaked"))


def isolation_line(rc, ru, rc_recs, ru_recs):
    """One line with the read_committed (rc) and read_uncommitted (ru)
    figures side by side; ru_aborted counts the RU records at offsets the
    read_committed consume does not have (aborted or open transactions)."""
    rc_off = {(r["topic"], r["partition"], r["offset"]) for r in rc_recs}
    aborted = sum(1 for r in ru_recs
                  if (r["topic"], r["partition"], r["offset"]) not in rc_off)
    parts = ["checker: isolation committed=%d" % rc.stats["committed"]]
    for pre, res in (("rc", rc), ("ru", ru)):
        parts += ["%s_%s=%d" % (pre, name, res.stats[key])
                  for name, key in ISO_FIELDS]
    parts.append("ru_aborted=%d" % aborted)
    return " ".join(parts)


def cmd_check(args):
    expected = read_expected(args.expected)
    ids = read_ids(args.ids) if args.ids else None
    recs = read_records(args.records)
    covered = []
    for spec in args.covered or []:
        lsn_s, sep, path = spec.partition("=")
        lsn = lsn_parse(lsn_s)
        if not sep or lsn is None:
            raise InputError(f"--covered {spec!r}: want LSN=FILE")
        covered.append((lsn, path, read_records([path])))
    ru_recs = read_records(args.uncommitted) if args.uncommitted else None
    res = check(recs, expected, ids=ids, topic=args.topic, no_dups=args.no_dups,
                covered=covered, faults=args.faults, notes=args.notes,
                key_json=args.key_json, lsn_optional=args.lsn_optional)
    code = report(res, args.no_dups, args.quiet)
    if ru_recs is not None:
        ru = check(ru_recs, expected, ids=ids, topic=args.topic, notes=args.notes,
                   key_json=args.key_json, lsn_optional=args.lsn_optional)
        print(isolation_line(res, ru, recs, ru_recs))
        if not args.quiet:
            for kind, msg in ru.violations[:MAX_SHOWN]:
                print(f"checker: read_uncommitted violation [{kind}]: {msg}")
    return code


# ---------------------------------------------------------------- self-test

def _rec(topic, part, off, agg, seq, eid=None, lsn=None, xid="700", key=None,
         rb=False, payload=None, headers=None):
    p = {"agg": agg, "seq": seq}
    if rb:
        p["rb"] = True
    if headers is None:
        headers = ["id", eid or f"id-{agg}-{seq}", "event_type", "SeqEvent",
                   "aggregate_type", "st", "pg_lsn",
                   lsn or "0/%X" % (0x1000 + seq * 0x100), "pg_xid", xid]
    return {"topic": topic, "partition": part, "offset": off, "tstype": "create",
            "ts": 1, "broker": 1, "headers": headers,
            "key": agg if key is None else key,
            "payload": json.dumps(p) if payload is None else payload}


def _run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def self_test():
    T = "outbox.event.st"
    A, B = "st-1", "st-2"
    exp = {A: 3, B: 2}

    def stream(seqs_a, seqs_b=(1, 2), part_a=0, part_b=1, **kw):
        rs = [_rec(T, part_a, i, A, s) for i, s in enumerate(seqs_a)]
        rs += [_rec(T, part_b, i, B, s) for i, s in enumerate(seqs_b)]
        return rs

    def mutate(rs, idx, **kw):
        r = rs[idx]
        agg = json.loads(r["payload"])["agg"]
        seq = json.loads(r["payload"])["seq"]
        args = dict(eid=None, lsn=None, xid="700", key=None, rb=False,
                    payload=None, headers=None)
        args.update(kw)
        rs[idx] = _rec(r["topic"], r["partition"], r["offset"], agg, seq, **args)
        return rs

    cases = [
        # name, records, expected, kwargs, want exit, want violation kind
        ("valid", stream([1, 2, 3]), exp, {}, EXIT_OK, None),
        ("valid --no-dups", stream([1, 2, 3]), exp, {"no_dups": True}, EXIT_OK, None),
        ("replayed suffix A1 A2 A3 A2 A3", stream([1, 2, 3, 2, 3]), exp, {},
         EXIT_OK, None),
        ("replay is a duplicate under --no-dups", stream([1, 2, 3, 2, 3]), exp,
         {"no_dups": True}, EXIT_VIOLATION, "duplicate"),
        ("old duplicate between firsts A1 A2 A1 A3", stream([1, 2, 1, 3]), exp,
         {}, EXIT_OK, None),
        ("reordered A1 A3 A2", stream([1, 3, 2]), exp, {}, EXIT_VIOLATION, "order"),
        ("reordered at the start A2 A1 A3", stream([2, 1, 3]), exp, {},
         EXIT_VIOLATION, "order"),
        ("missing A2", stream([1, 3]), exp, {}, EXIT_INCOMPLETE, None),
        ("missing last B2", stream([1, 2, 3], (1,)), exp, {}, EXIT_INCOMPLETE, None),
        ("rolled back", stream([1, 2, 3]) + [_rec(T, 0, 3, A, 4, rb=True)], exp,
         {}, EXIT_VIOLATION, "rolled_back"),
        ("rolled back with a taken seq",
         mutate(stream([1, 2, 3]), 2, rb=True), exp, {}, EXIT_VIOLATION,
         "rolled_back"),
        ("invented seq 4", stream([1, 2, 3, 4]), exp, {}, EXIT_VIOLATION, "invented"),
        ("unknown aggregate", stream([1, 2, 3]) + [_rec(T, 2, 0, "st-9", 1)], exp,
         {}, EXIT_VIOLATION, "unknown"),
        ("key differs from agg", mutate(stream([1, 2, 3]), 1, key="st-x"), exp,
         {}, EXIT_VIOLATION, "key"),
        ("key in two partitions",
         stream([1, 2]) + [_rec(T, 2, 0, A, 3)], exp, {}, EXIT_VIOLATION,
         "partition"),
        ("duplicate with another id",
         mutate(stream([1, 2, 3, 3]), 3, eid="other"), exp, {}, EXIT_VIOLATION,
         "id"),
        ("two events share an id", mutate(stream([1, 2, 3]), 1, eid="id-st-1-1"),
         exp, {}, EXIT_VIOLATION, "id"),
        ("id header missing",
         mutate(stream([1, 2, 3]), 0, headers=["pg_lsn", "0/1", "pg_xid", "1"]),
         exp, {}, EXIT_VIOLATION, "id"),
        ("pg_lsn not an LSN", mutate(stream([1, 2, 3]), 2, lsn="0-1"), exp, {},
         EXIT_VIOLATION, "pg_lsn"),
        ("duplicate with another pg_lsn",
         mutate(stream([1, 2, 3, 3]), 3, lsn="0/99999"), exp, {}, EXIT_VIOLATION,
         "pg_lsn"),
        # --key-json / --lsn-optional (the Debezium cutover): a quoted key,
        # and a record without pg_lsn/pg_xid (Debezium's) beside the relay's.
        ("--key-json: quoted keys",
         [dict(r, key=json.dumps(r["key"])) for r in stream([1, 2, 3])], exp,
         {"key_json": True}, EXIT_OK, None),
        ("--key-json: a bare key", stream([1, 2, 3]), exp, {"key_json": True},
         EXIT_VIOLATION, "key"),
        ("no pg_lsn header without --lsn-optional",
         mutate(stream([1, 2, 3]), 1, headers=["id", "id-st-1-2", "__debezium.context.connectorName", "postgresql"]), exp, {},
         EXIT_VIOLATION, "pg_lsn"),
        ("--lsn-optional: a Debezium record and its duplicate from the relay",
         mutate(stream([1, 2, 2, 3]), 1, headers=["id", "id-st-1-2", "__debezium.context.connectorName", "postgresql"]), exp,
         {"lsn_optional": True}, EXIT_OK, None),
        ("--lsn-optional: order still checked",
         mutate(stream([1, 3, 2]), 1, headers=["id", "id-st-1-3", "__debezium.context.connectorName", "postgresql"]), exp,
         {"lsn_optional": True}, EXIT_VIOLATION, "order"),
        ("commit LSN goes back", mutate(stream([1, 2, 3]), 2, lsn="0/1"), exp, {},
         EXIT_VIOLATION, "order"),
        ("payload not JSON", mutate(stream([1, 2, 3]), 0, payload="{oops"), exp,
         {}, EXIT_VIOLATION, "payload"),
        ("wrong topic", stream([1, 2, 3]), exp, {"topic": "outbox.event.other"},
         EXIT_VIOLATION, "topic"),
        ("ids match the outbox rows", stream([1, 2, 3]), exp,
         {"ids": {(A, 1): "id-st-1-1", (A, 2): "id-st-1-2", (A, 3): "id-st-1-3",
                  (B, 1): "id-st-2-1", (B, 2): "id-st-2-2"}}, EXIT_OK, None),
        ("confirmed events were in Kafka", stream([1, 2, 3]), exp,
         {"covered": [(0x1200, "snap", stream([1, 2], (1, 2)))]}, EXIT_OK, None),
        ("confirmed event not in Kafka", stream([1, 2, 3]), exp,
         {"covered": [(0x1200, "snap", stream([1], (1, 2)))]}, EXIT_VIOLATION,
         "confirmed_unpublished"),
        ("--faults 1: replayed suffix A1 A2 A3 A2 A3", stream([1, 2, 3, 2, 3]),
         exp, {"faults": 1}, EXIT_OK, None),
        ("--faults 1: restart then on to new A1 A2 A1 A2 A3", stream([1, 2, 1, 2, 3]),
         exp, {"faults": 1}, EXIT_OK, None),
        ("--faults 1: not a suffix A1 A2 A1 A3", stream([1, 2, 1, 3]), exp,
         {"faults": 1}, EXIT_VIOLATION, "order"),
        ("--faults 0: a replay without a fault", stream([1, 2, 3, 2, 3]), exp,
         {"faults": 0}, EXIT_VIOLATION, "order"),
        ("--faults 1: two restarts A1 A2 A1 A2 A1 A2 A3",
         stream([1, 2, 1, 2, 1, 2, 3]), exp, {"faults": 1}, EXIT_VIOLATION, "order"),
        ("--faults 2: two restarts A1 A2 A1 A2 A1 A2 A3",
         stream([1, 2, 1, 2, 1, 2, 3]), exp, {"faults": 2}, EXIT_OK, None),
        ("--faults 3: a gap A1 A3 A2", stream([1, 3, 2]), exp, {"faults": 3},
         EXIT_VIOLATION, "order"),
        ("--notes: note as derived", stream([1, 2, 3]), exp, {"notes": True},
         EXIT_VIOLATION, "note"),
        ("--notes: right notes", [_rec(T, 0, i, A, q, payload=json.dumps(
            {"agg": A, "seq": q, "note": note_of(A, q)})) for i, q in
            enumerate([1, 2, 3])] + [_rec(T, 1, i, B, q, payload=json.dumps(
            {"agg": B, "seq": q, "note": note_of(B, q)})) for i, q in
            enumerate([1, 2])], exp, {"notes": True}, EXIT_OK, None),
        ("--notes: a control character lost", [_rec(T, 0, i, A, q, payload=json.dumps(
            {"agg": A, "seq": q, "note": note_of(A, q).replace("\t", " ")}))
            for i, q in enumerate([1, 2, 3])] + stream([], (1, 2)), exp,
         {"notes": True}, EXIT_VIOLATION, "note"),
        ("id differs from the outbox row", stream([1, 2, 3]), exp,
         {"ids": {(A, 1): "id-st-1-1", (A, 2): "xx", (A, 3): "id-st-1-3",
                  (B, 1): "id-st-2-1", (B, 2): "id-st-2-2"}}, EXIT_VIOLATION, "id"),
    ]
    failures = 0
    for name, recs, expected, kw, want_code, want_kind in cases:
        for i, r in enumerate(recs):
            r["_where"] = f"self-test:{i + 1}"
        res = check(recs, expected, **kw)
        code = res.code(kw.get("no_dups", False))
        good = code == want_code and (want_kind is None or want_kind in res.kinds())
        if want_kind is None and res.violations:
            good = False
        print(f"self-test: {'ok' if good else 'FAILED'}: {name}: exit {code} "
              f"(want {want_code}), kinds {sorted(res.kinds()) or '-'}"
              f"{'' if want_kind is None else f' (want {want_kind})'}")
        failures += not good

    # The command line, files and all: a reordered, a missing and a
    # rolled-back input each fail; a good one passes.
    with tempfile.TemporaryDirectory() as d:
        ef = os.path.join(d, "expected")
        with open(ef, "w") as f:
            f.write(f"{A}|3\n{B}|2\n")
        files = {
            "good": (stream([1, 2, 3]), EXIT_OK),
            "reordered": (stream([1, 3, 2]), EXIT_VIOLATION),
            "missing": (stream([1, 2]), EXIT_INCOMPLETE),
            "rolled-back": (stream([1, 2, 3]) + [_rec(T, 0, 3, A, 4, rb=True)],
                            EXIT_VIOLATION),
            "corrupt line": (None, EXIT_INPUT),
        }
        for name, (recs, want) in files.items():
            rf = os.path.join(d, "records.json")
            with open(rf, "w") as f:
                if recs is None:
                    f.write('{"topic": "x", "partition": 0, "offset": 0}\nnot json\n')
                for r in recs or []:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            code, out = _run_main(["check", "--expected", ef, "--no-dups", rf])
            good = code == want
            print(f"self-test: {'ok' if good else 'FAILED'}: command line, "
                  f"{name}: exit {code} (want {want})")
            if not good:
                print("  " + out.replace("\n", "\n  "))
            failures += not good
        # --uncommitted: an aborted Kafka transaction's copies (A2 A3 at
        # offsets 1-2, its marker at 3) are seen read_uncommitted only;
        # the read_committed consume stays duplicate-free and decides.
        rc_recs = [_rec(T, 0, 0, A, 1), _rec(T, 0, 4, A, 2), _rec(T, 0, 5, A, 3),
                   _rec(T, 1, 0, B, 1), _rec(T, 1, 1, B, 2)]
        ru_recs = [_rec(T, 0, 0, A, 1), _rec(T, 0, 1, A, 2), _rec(T, 0, 2, A, 3),
                   _rec(T, 0, 4, A, 2), _rec(T, 0, 5, A, 3),
                   _rec(T, 1, 0, B, 1), _rec(T, 1, 1, B, 2)]
        rcf, ruf = os.path.join(d, "rc.json"), os.path.join(d, "ru.json")
        for path, recs in ((rcf, rc_recs), (ruf, ru_recs)):
            with open(path, "w") as f:
                for r in recs:
                    f.write(json.dumps(r) + "\n")
        iso_cases = [
            ("read_committed clean, read_uncommitted with aborted copies",
             [rcf], EXIT_OK,
             ["checker: isolation committed=5 rc_records=5 rc_distinct=5 "
              "rc_duplicates=0 rc_missing=0 rc_order_violations=0 rc_leaked=0 "
              "ru_records=7 ru_distinct=5 ru_duplicates=2 ru_missing=0 "
              "ru_order_violations=0 ru_leaked=0 ru_aborted=2"]),
            # The read_uncommitted file where the read_committed one belongs:
            # its copies are duplicates, --no-dups fails, the line still comes.
            ("duplicates read_committed fail under --no-dups", [ruf],
             EXIT_VIOLATION, ["rc_duplicates=2", "ru_duplicates=2", "ru_aborted=0"]),
        ]
        for name, recs_f, want, needles in iso_cases:
            code, out = _run_main(["check", "--expected", ef, "--no-dups",
                                   "--uncommitted", ruf] + recs_f)
            good = code == want and all(n in out for n in needles)
            print(f"self-test: {'ok' if good else 'FAILED'}: --uncommitted, "
                  f"{name}: exit {code} (want {want})")
            if not good:
                print("  " + out.replace("\n", "\n  "))
            failures += not good
        # Without --uncommitted no isolation line.
        code, out = _run_main(["check", "--expected", ef, rcf])
        good = code == EXIT_OK and "isolation" not in out
        print(f"self-test: {'ok' if good else 'FAILED'}: no isolation line "
              f"without --uncommitted")
        failures += not good
        # The pgbench script and setup SQL render.
        try:
            assert "\\if :r <= 10" in pgbench_script(200, 10, 25)
            assert "CREATE FUNCTION emit" in setup_sql("st", 3)
            assert "CREATE FUNCTION emit_rich" in setup_sql("st", 3, True)
            assert "emit_rich(:a" in pgbench_script(20, 10, 25, True)
            print("self-test: ok: writer SQL renders")
        except AssertionError:
            print("self-test: FAILED: writer SQL renders")
            failures += 1

    print(f"self-test: {'all passed' if not failures else f'{failures} FAILED'}")
    return EXIT_OK if not failures else EXIT_VIOLATION


# ---------------------------------------------------------------- main

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--self-test"], ["self-test"]):
        return self_test()
    ap = argparse.ArgumentParser(prog="checker.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--expected", required=True)
    c.add_argument("--ids")
    c.add_argument("--topic")
    c.add_argument("--no-dups", action="store_true")
    c.add_argument("--covered", action="append", metavar="LSN=SNAPSHOT")
    c.add_argument("--faults", type=int, metavar="N")
    c.add_argument("--notes", action="store_true")
    c.add_argument("--key-json", action="store_true")
    c.add_argument("--lsn-optional", action="store_true")
    c.add_argument("--uncommitted", action="append", metavar="RU.json")
    c.add_argument("--quiet", action="store_true")
    c.add_argument("records", nargs="+")
    s = sub.add_parser("setup-sql")
    s.add_argument("--type", required=True)
    s.add_argument("--aggs", type=int, required=True)
    s.add_argument("--rich", action="store_true")
    p = sub.add_parser("pgbench-script")
    p.add_argument("--aggs", type=int, required=True)
    p.add_argument("--rollback-pct", type=int, default=10)
    p.add_argument("--multi-pct", type=int, default=25)
    p.add_argument("--rich", action="store_true")
    p.add_argument("--delete-pct", type=int, default=15)
    p.add_argument("--emit-pct", type=int, default=15)
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_INPUT if e.code else EXIT_OK
    try:
        if args.cmd == "check":
            return cmd_check(args)
        if args.cmd == "setup-sql":
            sys.stdout.write(setup_sql(args.type, args.aggs, args.rich))
            return EXIT_OK
        if args.cmd == "pgbench-script":
            sys.stdout.write(pgbench_script(args.aggs, args.rollback_pct,
                                            args.multi_pct, args.rich,
                                            args.delete_pct, args.emit_pct))
            return EXIT_OK
    except (InputError, OSError, UnicodeDecodeError) as e:
        print(f"checker: bad input: {e}")
        return EXIT_INPUT
    return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
