/* SPDX-License-Identifier: Apache-2.0 */
/* w2j.h -- decoder for wal2json format-version 2 records.
 *
 * Pure: bytes in, a struct w2j_record out; no I/O, no globals. The
 * strings in a decoded record are owned by the record (a JSON tree, or one
 * buffer of unescaped values when the fast scanner took the line) and stay
 * valid until w2j_record_clear(). The input line is not referenced after
 * w2j_decode() returns. */
#ifndef RELAY_W2J_H
#define RELAY_W2J_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"

enum w2j_kind {
	W2J_BEGIN,   /* "B": a transaction starts */
	W2J_COMMIT,  /* "C": it ends; nextlsn is the position to confirm */
	W2J_EVENT,   /* "I" on the outbox table: one event */
	W2J_MESSAGE, /* "M": a logical decoding message (prefix, content) */
	W2J_SKIP,    /* anything else the relay must step over */
};

/* What the decoder looks for: the outbox table and its columns. */
struct w2j_spec {
	const char *schema;
	const char *table;     /* "*": every table of the schema */
	const char *col_id;
	const char *col_key;
	const char *col_type;
	const char *col_route;
	const char *col_payload;
};

/* A borrowed string; ptr is NUL-terminated, NULL when absent. */
struct w2j_str {
	const char *ptr;
	size_t len;
};

struct w2j_record {
	enum w2j_kind kind;
	uint64_t lsn;          /* record's lsn ("lsn"), 0 when absent */
	uint64_t nextlsn;      /* B/C: commit end, the LSN to confirm */
	int64_t xid;           /* -1 when absent */
	int64_t commit_ts_us;  /* commit time, Unix epoch µs; 0 when absent */

	/* W2J_EVENT only. */
	struct w2j_str id;
	struct w2j_str key;
	struct w2j_str type;   /* ptr NULL when the column is SQL NULL */
	struct w2j_str route;
	struct w2j_str payload;

	/* W2J_MESSAGE only. */
	bool transactional;
	struct w2j_str msg_prefix;
	struct w2j_str msg_content;

	void *root_;           /* owns the strings above; private */
	char num_[4][32];      /* text of numeric id/key/type/route; private */
};

/* Decodes one record. Returns 0 with rec filled, or -1 with a message in
 * err naming the cause (and the LSN and xid when they were readable).
 * On success, call w2j_record_clear() when done with rec. */
int w2j_decode(const char *line, size_t len, const struct w2j_spec *spec,
               struct w2j_record *rec, char *err,
               size_t errlen) RELAY_MUSTCHECK;

/* Releases what rec borrows from. Safe on a zeroed or cleared record. */
void w2j_record_clear(struct w2j_record *rec);

/* Gives rec one block from malloc() (buf) that the strings of rec point
 * into; w2j_record_clear() frees it. For the relay's other decoder
 * (pgo.c), so that the one clear serves every record whatever decoded
 * it. rec must hold no other block (root_ NULL). */
void w2j_record_adopt(struct w2j_record *rec, void *buf);

/* Turns a logical message written by outbox_emit() (sql/emit.sql) into
 * an event: content is a JSON object with the members "id",
 * "aggregate_id", "aggregate_type" (strings), "event_type" (a string, or
 * null or absent: no header) and "payload" (any JSON value, null
 * included). The payload is the member's text exactly as it is in
 * content, not re-encoded, so numbers keep every digit, also beyond the
 * range of a double (1e400). content may point
 * into rec (its msg_content). Returns 0 with rec a W2J_EVENT that owns
 * its strings (lsn, xid and timestamp kept, prefix and content gone), or
 * -1 with the cause in err and rec unchanged. */
int w2j_decode_emit(const char *content, size_t len, struct w2j_record *rec,
                    char *err, size_t errlen) RELAY_MUSTCHECK;

/* Parses wal2json's timestamp ("2026-11-29 20:09:17.5376+00") into Unix
 * epoch microseconds. Returns 0, or -1 when malformed. */
int w2j_parse_timestamp(const char *s, int64_t *out_us) RELAY_MUSTCHECK;

/* Writes "schema.table" escaped for wal2json's add-tables option
 * (backslash before space, quote, comma, period, asterisk). Returns the
 * length written, or -1 when out is too small. */
int w2j_add_tables_value(const char *schema, const char *table, char *out,
                         size_t outlen) RELAY_MUSTCHECK;

#endif
