/* SPDX-License-Identifier: Apache-2.0 */
/* pgo.h -- decoder for pgoutput, PostgreSQL's binary logical replication
 * protocol (proto_version 1, or 2 without streaming).
 *
 * Pure: one message in (the payload of an XLogData frame), a struct
 * record out, the same records w2j.c gives for wal2json, so that the
 * relay can read either plugin. No I/O, no globals: the relation cache
 * (pgoutput describes a table once, in a Relation message, and then names
 * it by OID) and the open transaction live in a struct pgo_state that the
 * caller owns, one per replication session. docs/pgoutput.md has the
 * format, what is refused and how the LSNs map. */
#ifndef RELAY_PGO_H
#define RELAY_PGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "decode/record.h"

/* pgoutput's timestamps count microseconds from 2000-01-01 00:00 UTC
 * (PostgreSQL's epoch); the relay's from 1970-01-01. */
#define PGO_EPOCH_OFFSET_US INT64_C(946684800000000)

struct pgo_rel; /* one cached Relation message; private to pgo_rel.c */

struct pgo_state {
	const struct record_spec *spec; /* borrowed; outlives the state */
	struct pgo_rel **rels;       /* open addressing on relid; owned */
	size_t cap;                  /* slots in rels: 0 or a power of two */
	size_t nrels;                /* relations cached */

	/* The open transaction, from its Begin message: pgoutput puts the
	 * xid and commit time on Begin only, the relay wants them on every
	 * record of the transaction. */
	bool in_txn;
	int64_t xid;
	int64_t commit_ts_us;        /* Unix epoch µs */
	uint64_t final_lsn;          /* Begin's final_lsn: the commit's LSN */
};

/* Sets up an empty state that decodes for spec (borrowed). */
void pgo_init(struct pgo_state *st, const struct record_spec *spec);

/* Forgets every relation and the open transaction, keeping the spec.
 * Call it whenever a new START_REPLICATION begins: the server sends the
 * Relation messages again in each session, and a cached relation from
 * an earlier one may describe a table that has changed since. */
void pgo_reset(struct pgo_state *st);

/* Releases what st owns. Safe on a zeroed or freed state. */
void pgo_free(struct pgo_state *st);

/* Decodes one pgoutput message of len bytes (borrowed; not referenced
 * after the call). wal_start is the dataStart of the XLogData frame that
 * carried it, the record's LSN where the message has none of its own
 * (Insert: the change's LSN, as wal2json's "lsn"). Returns 0 with rec
 * filled:
 *   Begin    REC_BEGIN: lsn = final_lsn (the commit record's LSN), xid,
 *            commit_ts_us; nextlsn 0, which Begin does not carry;
 *   Commit   REC_COMMIT: lsn = commit LSN, nextlsn = end LSN (what to
 *            confirm), xid from the Begin, commit_ts_us;
 *   Insert   REC_EVENT on the outbox table (xid and time of its Begin),
 *            REC_SKIP on any other table;
 *   Message  REC_MESSAGE: lsn, transactional, prefix and content; xid
 *            of the Begin when transactional, else -1; commit_ts_us 0, as
 *            w2j.c gives it;
 *   Relation, Type, Origin, Update, Delete, Truncate: REC_SKIP.
 * The strings of rec are owned by rec until record_clear(). Returns
 * -1 with a message in err naming the cause (and the relation, event id,
 * LSN and xid that were known), rec cleared and st unchanged, on anything
 * malformed or refused: a message cut short or with bytes left over,
 * an unknown message type, streaming and two-phase messages, an unknown
 * relation, a tuple whose column count is not its relation's, binary
 * column data, and on the outbox table what w2j_decode() refuses too. */
/* Whether msg (len bytes) is an Insert into the outbox table by st's
 * relation cache, read as far as the event id whatever else is wrong
 * with it: the runbook lists and counts a refused event by its id, as
 * event.c's raw scan does for a wal2json line. id gets the id column's
 * text, or "?" when it cannot be read. Pure; st is not changed. */
bool pgo_event_id(const struct pgo_state *st, const void *msg, size_t len,
                  char *id, size_t idlen);

/* The same Insert read for its columns, as far as they can be read:
 * cols[REC_COL_*] get each column's text as the row has it (pointing
 * into msg), ptr NULL for SQL NULL or what cannot be read. What the
 * dead-letter record of a refused event carries (dlq.h). Returns false
 * when msg is not an Insert into the outbox table. Pure. */
bool pgo_event_cols(const struct pgo_state *st, const void *msg, size_t len,
                    struct rec_str cols[REC_NCOLS]);

int pgo_decode(struct pgo_state *st, const void *msg, size_t len,
               uint64_t wal_start, struct record *rec, char *err,
               size_t errlen) RELAY_MUSTCHECK;

#endif
