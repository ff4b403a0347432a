#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/seeds.py -- writes the seed corpus of every fuzz harness.
#
#   tests/fuzz/seeds.py OUTDIR      OUTDIR/NAME/ for each harness, plus
#                                   OUTDIR/config.dict
#
# Seeds come from the golden fixtures (tests/fixtures/*.jsonl, real
# wal2json output), deploy/outbox-relay.conf.example and a few inputs
# written here for what those lack. The layouts are the harnesses' own
# (see the comment at the top of each tests/fuzz/fuzz_NAME.c). Files are
# named after a hash of their content, so rewriting them is a no-op.
import hashlib
import os
import re
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = ["outbox.jsonl", "odd_tables.jsonl", "prisma.jsonl",
            "all_changes.jsonl"]


def fixture_lines():
    for name in FIXTURES:
        with open(os.path.join(ROOT, "tests", "fixtures", name), "rb") as f:
            yield name, [l.rstrip(b"\n") for l in f if l.strip()]


def write(outdir, harness, data):
    d = os.path.join(outdir, harness)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(data).hexdigest()[:16])
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)


# fuzz_w2j.c: a spec byte (index into its table; top bit adds the emit
# and jc_check() readings), then one line.
def w2j(outdir):
    spec_of = {"outbox.jsonl": 0, "odd_tables.jsonl": 3, "prisma.jsonl": 0,
               "all_changes.jsonl": 4}
    for name, lines in fixture_lines():
        for line in lines:
            write(outdir, "w2j", bytes([spec_of[name]]) + line)
            write(outdir, "w2j", bytes([0x80 | spec_of[name]]) + line)
    for extra in [b'{"id":"e1","aggregate_type":"order","aggregate_id":"42",'
                  b'"event_type":"created","payload":{"n":1e400}}',
                  b'{"action":"M","transactional":true,"prefix":"outbox",'
                  b'"content":"{}","lsn":"0/1"}',
                  b'[1,2,{"a":"\\u0000"}]']:
        write(outdir, "w2j", b"\x80" + extra)


# fuzz_repl.c: frames behind a two-byte big-endian length.
def frame(body):
    return struct.pack(">H", len(body)) + body


def xlog(start, end, data):
    return frame(b"w" + struct.pack(">QQQ", start, end, 0) + data)


def keepalive(end, reply):
    return frame(b"k" + struct.pack(">QQB", end, 0, reply))


def repl(outdir):
    for _, lines in fixture_lines():
        lsn = 0x1965000
        stream = keepalive(lsn, 0)
        for line in lines:
            stream += xlog(lsn, lsn + 0x100, line)
            lsn += 0x40
        stream += keepalive(lsn + 0x100, 1)
        write(outdir, "repl", stream)
    # Short and odd frames: one byte short of each header, exact
    # headers, an unknown type, an empty frame.
    write(outdir, "repl", frame(b"w" + b"\0" * 23))
    write(outdir, "repl", frame(b"w" + b"\1" * 24))
    write(outdir, "repl", frame(b"k" + b"\0" * 16))
    write(outdir, "repl", frame(b"k" + b"\xff" * 17))
    write(outdir, "repl", frame(b"r" + b"\0" * 33) + frame(b""))
    # pgoutput: the recorded messages in XLogData frames, each with its
    # row's LSN as dataStart, as the walsender sends them.
    for name in ("outbox.pgo", "odd.pgo"):
        stream = keepalive(0x1965000, 0)
        for at, m in pgo_frames(name):
            stream += xlog(at, at, m)
        write(outdir, "repl", stream + keepalive(0x1966000, 1))


# fuzz_lsn.c: operation bytes (low four bits), most with one argument.
BEGIN, EVENT, COMMIT, ACK, ACK9 = 0x00, 0x02, 0x05, 0x07, 0x09
KEEPALIVE, RECEIVED, STATUS, RECONNECT = 0x0A, 0x0B, 0x0C, 0x0D
RESTORED, LOST, OTHER = 0x0E, 0x1E, 0xFF


def lsn(outdir):
    txn = bytes([BEGIN, 3, RECEIVED, 40, EVENT, 10, EVENT, 20, COMMIT])
    acks = bytes([ACK, 1, ACK, 0])
    seeds = [
        txn + acks + bytes([STATUS, KEEPALIVE, 200, STATUS]),
        # acks out of order across transactions, an empty transaction
        txn + txn + bytes([BEGIN, 1, COMMIT]) + bytes([ACK, 3, ACK, 1]) +
        acks + bytes([STATUS]),
        # a failed ack, then a reconnect that replays
        txn + bytes([ACK9, 0, ACK, 0, STATUS, RECONNECT, 0]) + txn + acks,
        # confirmed, then the slot behind: the resume is verified
        txn + acks + txn + acks + bytes([STATUS, LOST, 1]) + txn + txn + txn,
        # restored to an earlier point with other transactions after it
        txn + acks + txn + acks + bytes([STATUS, RESTORED, 1, 1]) + txn +
        bytes([KEEPALIVE, 255]) + txn,
        # another cluster answers
        txn + acks + bytes([STATUS, OTHER, 1]),
        # a produce() refused at once, late acks from the last session
        bytes([BEGIN, 0, EVENT, 7, EVENT, 8, COMMIT, RECONNECT, 0, ACK, 0]) +
        txn + acks,
    ]
    for s in seeds:
        write(outdir, "lsn", s)


# fuzz_config.c: an options byte, then file text, --set lines and
# environment lines split at NUL bytes.
def config(outdir):
    with open(os.path.join(ROOT, "deploy", "outbox-relay.conf.example"),
              "rb") as f:
        example = f.read()
    write(outdir, "config", b"\x00" + example)
    write(outdir, "config", b"\x04" + example +
          b"\0slot.name=other\nkafka.acks=1\0KAFKA_LINGER_MS=5\n")
    write(outdir, "config", b"\x01" +
          b"outbox.table = \"Sales\".\"Outbox\"\n"
          b"kafka.bootstrap.servers = 127.0.0.1:9092\n# comment\n  \n"
          b"status.interval.ms = \"500\"\n"
          b"\0producer.allow.unsafe=yes\nkafka.enable.idempotence=false\n"
          b"\0SLOT_NAME=s2\nKAFKA_SASL_MECHANISM=PLAIN\nHTTP_LISTEN=[::1]:0\n")
    write(outdir, "config", b"\x00" + b"no equals sign\n")
    write(outdir, "config", b"\x02\0=v\nkey\nlog.level=loud\0OUTBOX_RELAY_X=1")
    write(outdir, "config", b"\x00inflight.max.bytes = 99999999999999999999\n"
          b"http.listen = 127.0.0.1:99999\nalert.webhook.url = ftp://x\n"
          b"heartbeat.prefix = a,b\n")
    # --reconcile's per-type keys (reconcile.<name>.<field>).
    write(outdir, "config", b"\x00reconcile.orders.sql = SELECT id FROM o "
          b"WHERE t >= $1 AND t < $2\nreconcile.orders.topic = t\n"
          b"reconcile.orders.type.header = eventType\nreconcile.grace.ms = 0\n"
          b"\0reconcile.x.query=1\nreconcile..sql=1\n")


def config_dict(outdir):
    """Every key of the table in src/lib/config.c, for the dictionary."""
    with open(os.path.join(ROOT, "src", "lib", "config.c")) as f:
        keys = sorted(set(re.findall(r'\{ "([a-z.]+)", CFG_', f.read())))
    words = keys + [k.upper().replace(".", "_") for k in keys]
    words += ["kafka.", "KAFKA_", "OUTBOX_RELAY_", "true", "false", "=",
              "\\x00", "\\x0A", "\\\"", "#", "schema.*", "127.0.0.1:0",
              "password", "bootstrap.servers", "reconcile.", ".sql", ".topic",
              ".type", ".type.header"]
    with open(os.path.join(outdir, "config.dict"), "w") as f:
        for w in words:
            f.write('"%s"\n' % w)


# fuzz_http.c: raw bytes on a connection.
def http(outdir):
    crlf = b"\r\n"
    for path in [b"/livez", b"/healthz", b"/readyz", b"/slot",
                 b"/slot?pretty=1", b"/metrics", b"/nope", b"/livez?x=1"]:
        write(outdir, "http", b"GET " + path + b" HTTP/1.1" + crlf +
              b"Host: 127.0.0.1" + crlf + crlf)
    write(outdir, "http", b"HEAD /metrics HTTP/1.0" + crlf + crlf)
    write(outdir, "http", b"POST /livez HTTP/1.1" + crlf +
          b"Content-Length: 4" + crlf + crlf + b"abcd")
    write(outdir, "http", b"GET /livez HTTP/1.1" + crlf + b"Host: a" + crlf +
          crlf + b"GET /readyz HTTP/1.1" + crlf + crlf)
    write(outdir, "http", b"GET /slot?pretty=1&pretty=0 HTTP/1.1" + crlf +
          b"Transfer-Encoding: chunked" + crlf + crlf + b"0" + crlf + crlf)
    write(outdir, "http", b"GET /" + b"a" * 3000 + b" HTTP/1.1" + crlf + crlf)
    write(outdir, "http", b"GET /livez HTTP/1.1\nX: " + b"b" * 2000 + b"\n\n")


# fuzz_pgo.c: a spec byte (index into its table; top bit adds the emit
# reading), then messages behind a two-byte big-endian length (0xffff:
# a new session). From the recorded pgoutput fixtures: each whole, and
# each transaction alone after the Relation messages before it.
PGO_FIXTURES = {"outbox.pgo": 0, "all.pgo": 5, "odd.pgo": 1,
                "binary.pgo": 0, "stream.pgo": 0}


def pgo_messages(name):
    with open(os.path.join(ROOT, "tests", "fixtures", "pgoutput", name)) as f:
        return [bytes.fromhex(l.split()[2]) for l in f
                if l.strip() and not l.startswith("#")]


def pgo_frames(name):
    path = os.path.join(ROOT, "tests", "fixtures", "pgoutput", name)
    with open(path) as f:
        rows = [l.split() for l in f if l.strip() and not l.startswith("#")]
    return [(int(r[0].split("/")[0], 16) << 32 | int(r[0].split("/")[1], 16),
             bytes.fromhex(r[2])) for r in rows]


def pgo(outdir):
    for name, spec in PGO_FIXTURES.items():
        msgs = pgo_messages(name)
        write(outdir, "pgo", bytes([0x80 | spec]) +
              b"".join(frame(m) for m in msgs))
        rels, txn = [], []
        for m in msgs:
            if m[:1] == b"R":
                rels.append(m)
            txn.append(m)
            if m[:1] in (b"C", b"M") and (m[:1] == b"C" or len(txn) == 1):
                write(outdir, "pgo", bytes([0x80 | spec]) +
                      b"".join(frame(r) for r in rels + txn))
                txn = []
    # Every spec over the odd tables; a reset between two sessions.
    odd = b"".join(frame(m) for m in pgo_messages("odd.pgo"))
    for spec in range(8):
        write(outdir, "pgo", bytes([spec]) + odd)
    write(outdir, "pgo", b"\x02" + odd + b"\xff\xff" + odd)


# fuzz_relay.c: operation bytes (low four bits), some with one argument.
R_READ, R_REPORT, R_QFAIL, R_SERVE, R_FULL, R_REJECT = 0x00, 0x03, 0x04, 0x05, 0x06, 0x07
R_FATAL, R_PGBREAK, R_STATUS, R_KEEPALIVE, R_STOP = 0x08, 0x09, 0x0A, 0x0B, 0x0C
R_TURN, R_CONNECT, R_DRAIN = 0x0D, 0x0E, 0x0F


def relay(outdir):
    def txn(rows):
        # B, the rows, C: one read each (the argument only counts for B)
        return bytes([R_READ, rows] + [R_READ, 0] * (rows + 1))

    def ok(k):
        return bytes([R_REPORT, (k << 2) | 1])

    seeds = [
        # reports in any order across partitions, then the confirm
        txn(3) + txn(2) + ok(3) + ok(1) + ok(2) + ok(0) + ok(0) +
        bytes([R_STATUS, R_KEEPALIVE, R_STATUS]),
        # a failed report in the middle of a transaction, the replay
        txn(3) + ok(0) + bytes([R_REPORT, 1 << 2]) + bytes([R_TURN,
        R_CONNECT]) + txn(3) + ok(0) + ok(0) + ok(0) + bytes([R_STATUS]),
        # the last report of a transaction fails: nothing confirmed
        txn(2) + ok(0) + bytes([R_REPORT, 0, R_STATUS, R_KEEPALIVE,
        R_STATUS]),
        # a full queue: the frame held back until a report
        bytes([R_FULL, 2]) + txn(4) + ok(0) + bytes([R_READ, 0]) + ok(0) +
        bytes([R_READ, 0, R_READ, 0]) + ok(0) + ok(0) + bytes([R_STATUS]),
        # a fatal producer error, a new producer
        txn(2) + ok(0) + bytes([R_FATAL, R_TURN, R_CONNECT]) + txn(1) +
        ok(0) + ok(0) + bytes([R_STATUS]),
        # a refused batch replayed alone, refused again during teardown
        txn(2) + bytes([R_QFAIL, 1, R_SERVE, R_TURN, R_CONNECT]) + txn(2) +
        bytes([R_FATAL, R_QFAIL, 1, R_TURN, R_DRAIN]),
        # a shutdown with events in flight
        txn(3) + txn(1) + bytes([R_STOP]) + ok(1) + ok(0) +
        bytes([R_DRAIN]) + ok(0) + ok(0) + bytes([R_STATUS, R_DRAIN]),
        # the PostgreSQL side breaks: the producer stays, late acks
        txn(2) + bytes([R_PGBREAK, R_TURN, R_CONNECT]) + ok(0) + ok(0) +
        txn(2) + ok(0) + bytes([R_REJECT, 1]) + txn(1) + bytes([R_TURN]),
    ]
    for s in seeds:
        write(outdir, "relay", s)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: seeds.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for fn in (w2j, repl, lsn, config, config_dict, http, pgo, relay):
        fn(out)


if __name__ == "__main__":
    main()
