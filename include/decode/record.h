/* SPDX-License-Identifier: Apache-2.0 */
/* record.h -- what every decoder gives the relay: one record of the
 * change stream, whatever plugin wrote it, and what a decoder looks for.
 *
 * wal2json's decoder (w2j.h) and pgoutput's (pgo.h) both fill a struct
 * record from a struct record_spec; event.c, route.c and the runbook read
 * records without knowing which plugin they came from. Kept apart from
 * either decoder so that neither looks like the other's guest.
 *
 * The strings in a record are owned by the record (a jansson tree, or one
 * heap block) and stay valid until record_clear(). */
#ifndef RELAY_RECORD_H
#define RELAY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "decode/wire.h"

enum rec_kind {
	REC_BEGIN,   /* a transaction starts */
	REC_COMMIT,  /* it ends; nextlsn is the position to confirm */
	REC_EVENT,   /* an insert into the outbox table: one event */
	REC_MESSAGE, /* a logical decoding message (prefix, content) */
	REC_UPDATE,  /* an update of an outbox row (never an event) */
	REC_SKIP,    /* anything else the relay must step over */
};

/* What a decoder looks for: the outbox table and its columns. */
struct record_spec {
	const char *schema;
	const char *table;     /* "*": every table of the schema */
	const char *col_id;
	const char *col_key;
	const char *col_type;
	const char *col_route;
	const char *col_payload;
	/* More columns some options read (table.field.event.timestamp,
	 * table.fields.additional.placement, tracing.span.context.field):
	 * the decoder hands their text over as it does the five above. A
	 * row without one is not an error here: the option says what that
	 * means. */
	const char *col_extra[8];
	size_t nextra;
	bool want_types;       /* fill key_type and payload_type (json-schema) */
	bool payload_nullable; /* a NULL payload is no error: payload.ptr NULL
	                        * (route.tombstone.on.empty.payload) */
};

#define REC_MAX_EXTRA 8

/* The columns of an event, in struct record_spec order; the first four
 * are also the slots of struct record.num_ for numeric values. */
enum rec_col {
	REC_COL_ID = 0,
	REC_COL_KEY,
	REC_COL_TYPE,
	REC_COL_ROUTE,
	REC_COL_PAYLOAD,
	REC_NCOLS
};

/* Columns a decoder looks for: the five, then the extra ones. */
#define REC_NROLES (REC_NCOLS + REC_MAX_EXTRA)

/* A borrowed string; ptr is NUL-terminated, NULL when absent. */
struct rec_str {
	const char *ptr;
	size_t len;
};

struct record {
	enum rec_kind kind;
	uint64_t lsn;          /* record's lsn, 0 when absent */
	uint64_t nextlsn;      /* B/C: commit end, the LSN to confirm */
	int64_t xid;           /* -1 when absent */
	int64_t commit_ts_us;  /* commit time, Unix epoch µs; 0 when absent */

	/* REC_EVENT only. */
	struct rec_str id;
	struct rec_str key;
	struct rec_str type;   /* ptr NULL when the column is SQL NULL */
	struct rec_str route;
	struct rec_str payload;
	/* The schema the key and payload columns have (their PostgreSQL
	 * type), for key.format / value.format = json-schema. */
	enum wire_type key_type;
	enum wire_type payload_type;
	/* The extra columns of the spec, in its order: ptr NULL when SQL
	 * NULL or when the row has no such column (bit i of extra_seen
	 * clear). */
	struct rec_str extra[REC_MAX_EXTRA];
	unsigned extra_seen;

	/* REC_MESSAGE only. */
	bool transactional;
	struct rec_str msg_prefix;
	struct rec_str msg_content;

	void *root_;           /* owns the strings above; private */
	char num_[4][32];      /* text of numeric id/key/type/route; private */
};

/* Releases what rec borrows from. Safe on a zeroed or cleared record. */
void record_clear(struct record *rec);

/* Gives rec one block from malloc() (buf) that the strings of rec point
 * into; record_clear() frees it. Every decoder that copies its strings
 * (pgo.c, the wal2json scanners, emit.c) hands them over this way, so
 * that the one clear serves every record whatever decoded it. rec must
 * hold no other block (root_ NULL). */
void record_adopt(struct record *rec, void *buf);

/* Parses PostgreSQL's timestamptz text in ISO style, as wal2json prints
 * it ("2026-11-29 20:09:17.5376+00"), into Unix epoch microseconds.
 * Returns 0, or -1 when malformed. */
int record_parse_timestamp(const char *s, int64_t *out_us) RELAY_MUSTCHECK;

#endif
