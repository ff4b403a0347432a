/* SPDX-License-Identifier: Apache-2.0 */
/* w2j_int.h -- what the wal2json decoder's files share, and nobody else:
 * w2j.c (jansson, the reference), w2j_scan.c (the scanners in front of
 * it) and emit.c (outbox_emit() content, which jansson reads with the
 * same care for numbers beyond a double and names in errors the same
 * way). Not under include/: no other module may come to depend on it. */
#ifndef RELAY_W2J_INT_H
#define RELAY_W2J_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "lib/common.h"
#include "decode/json_check.h"
#include "decode/record.h"

/* What is known about the record so far, for error messages. */
struct w2j_ctx {
	const struct record *rec;
	bool have_lsn;
	bool int_as_real;      /* parsed with JSON_DECODE_INT_AS_REAL */
	const char *schema;    /* of an I record, once read */
	const char *table;
	const char *event_id;  /* the outbox row's id, once read */
};

/* Writes "<message> (LSN X/X, xid N)" into err, leaving out what the
 * record did not reveal before the failure (w2j.c). */
void w2j_error(char *err, size_t errlen, const struct w2j_ctx *c,
               const char *fmt, ...) RELAY_PRINTF(4, 5);

/* jansson for a text that may hold a number beyond a double (w2j.c,
 * where the reasoning is). */
json_t *w2j_load_wide(const char *s, size_t len, size_t flags,
                      bool *int_as_real, json_error_t *jerr,
                      struct jc_error *jc);

/* outbox.table "schema.*": every table of the schema is the outbox. For
 * a partitioned outbox whose partitions have a schema of their own:
 * wal2json names the partition in each record, never the parent. */
static inline bool w2j_any_table(const struct record_spec *spec)
{
	return strcmp(spec->table, "*") == 0;
}

/* Checks that a payload that is not json/jsonb is JSON. Both decode
 * paths call it, so they agree on what passes. jc_check() rather than
 * jansson: it builds no tree, and it takes numbers of any size (1e400,
 * which jansson refuses, is as valid in text as in jsonb). Returns 0, or
 * -1 with the offset and reason in jc. */
static inline int w2j_check_payload(const char *s, size_t len,
                                    struct jc_error *jc)
{
	return jc_check(s, len, NULL, NULL, jc);
}

/* The two ways to decode a line, each alone. w2j_decode() is the first,
 * then the second when the first declines. Deliberately not in w2j.h:
 * only tests/unit/check_w2j.c and fuzz_w2j.c call them, to decode a line
 * each way and compare. */

/* The scanners (w2j_scan.c): 0 with rec filled, or 1 with rec cleared
 * when the line is not theirs to decode. */
int w2j_decode_fast(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec);

/* jansson alone (w2j.c): the reference for every line, and the decoder
 * of all that the scanners leave. */
int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
                    char *err, size_t errlen);

#endif
