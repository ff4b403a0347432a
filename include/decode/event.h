/* SPDX-License-Identifier: Apache-2.0 */
/* event.h -- one record of either plugin (a wal2json line, a pgoutput
 * message) and its transaction to what the relay does with it.
 *
 * Pure: a record's bytes in, a verdict out. A record begins or ends a
 * transaction, is an outbox event (topic, key, value, headers: exactly
 * what goes to Kafka), is the relay's own heartbeat, is nothing to
 * publish, or is poison: the relay fail-stops on it, for the reason
 * given. The relay, --dry-run, --drop-slot, --advance-slot and
 * --skip-transaction all read records through ev_next_at(), so what the
 * runbook shows, counts and skips is what the relay publishes. */
#ifndef RELAY_EVENT_H
#define RELAY_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/pgo.h"
#include "decode/route.h"
#include "decode/stream_spec.h"
#include "decode/record.h"

enum ev_kind {
	EV_BEGIN,       /* B: txn now describes the transaction */
	EV_COMMIT,      /* C: rec.nextlsn is the commit end; txn closed */
	EV_EVENT,       /* an outbox event: ev is filled */
	EV_HEARTBEAT,   /* the relay's heartbeat: heartbeat_sent_us, rec.lsn */
	EV_SKIP,        /* nothing to publish */
	EV_POISON,      /* the relay stops here: reason */
};

/* The transaction the next record belongs to; the caller keeps it from
 * one ev_next() to the next and resets it when a stream starts over. */
struct ev_txn {
	bool open;              /* between B and C */
	int64_t xid;            /* the latest B's; -1 before the first */
	uint64_t commit_lsn;    /* its commit end (B's nextlsn); 0 for
	                         * pgoutput, whose Begin does not carry it */
	int64_t commit_ts_us;   /* its commit time (the B's), epoch µs; 0
	                         * unknown */
	uint64_t header_lsn;    /* what its events' pg_lsn header says: the
	                         * commit end where B carries it (wal2json),
	                         * else the commit LSN (pgoutput's final_lsn,
	                         * where the commit record starts) */
};

/* An outbox event as it is produced. Strings borrowed from the
 * ev_record holding it. */
struct ev_event {
	char topic[256];        /* "" when routing failed (EV_POISON) */
	struct rec_str id;
	struct rec_str key;
	struct rec_str value;   /* the payload text, byte for byte (value.format
	                         * string), or the converter's bytes; ptr NULL:
	                         * a tombstone */
	struct route_headers headers;
	size_t bytes;           /* key + value: what the in-flight window counts */
};

/* One verdict. Owns the decoded record: release with ev_record_clear().
 * Not to be copied (ev.headers points into the struct itself). */
struct ev_record {
	enum ev_kind kind;
	struct record rec;      /* the decoded record (zeroed if undecodable) */
	struct ev_event ev;     /* EV_EVENT; also EV_POISON when decoded */
	bool decoded;           /* EV_POISON: ev holds the event's fields
	                         * (it decoded, then routing or the
	                         * transaction check failed) */
	bool is_event;          /* EV_POISON: the record was an outbox event
	                         * (a row of the table, an outbox_emit()) */
	char event_id[80];      /* EV_POISON with is_event: its id, or "?" */
	int64_t heartbeat_sent_us; /* EV_HEARTBEAT: the watchdog's clock when
	                         * it wrote it; 0 unknown */
	char reason[1024];      /* EV_POISON: why, as the relay logs it;
	                         * EV_SKIP with invalid_op: what to log */
	bool invalid_op;        /* EV_SKIP: an UPDATE of an outbox row, to
	                         * log and count (table.op.invalid.behavior
	                         * warn or error: ss->env.op_invalid) */
	struct wire_buf wire;   /* key and value bytes of key.format /
	                         * value.format other than string */
};

/* A stream (a session, a peek) starts: nothing is open. */
void ev_txn_reset(struct ev_txn *txn);

/* Reads one record (len bytes of wal2json text) in the context of txn,
 * which it updates on B and C. out is overwritten; clear it with
 * ev_record_clear() whatever the kind. */
void ev_next(const struct stream_spec *ss, const char *line, size_t len,
             struct ev_txn *txn, struct ev_record *out);

/* The same for either plugin (ss->plugin): wal2json text through
 * w2j_decode(), or one pgoutput message through pgo_decode() with pgo,
 * the stream's relation cache (required for pgoutput, NULL for
 * wal2json), and wal_start, the dataStart of the frame or the peek
 * row's lsn that carried it. A pgoutput Begin does not carry the commit
 * end: txn->commit_lsn is 0 until its Commit. */
void ev_next_at(const struct stream_spec *ss, struct pgo_state *pgo,
                const char *data, size_t len, uint64_t wal_start,
                struct ev_txn *txn, struct ev_record *out);

void ev_record_clear(struct ev_record *out);

#endif
