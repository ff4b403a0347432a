/* SPDX-License-Identifier: Apache-2.0 */
/* w2j.h -- decoder for wal2json format-version 2 records.
 *
 * Pure: bytes in, a struct record (record.h) out; no I/O, no globals. The
 * strings in a decoded record are owned by the record (a JSON tree, or one
 * buffer of unescaped values when a scanner took the line) and stay valid
 * until record_clear(). The input line is not referenced after
 * w2j_decode() returns. */
#ifndef RELAY_W2J_H
#define RELAY_W2J_H

#include <stddef.h>

#include "lib/common.h"
#include "decode/record.h"

/* Decodes one record: "B" and "C" to REC_BEGIN and REC_COMMIT, "I" on the
 * outbox table to REC_EVENT, "M" to REC_MESSAGE, anything else to
 * REC_SKIP. Returns 0 with rec filled, or -1 with a message in err naming
 * the cause (and the LSN and xid when they were readable). On success,
 * call record_clear() when done with rec. */
int w2j_decode(const char *line, size_t len, const struct record_spec *spec,
               struct record *rec, char *err,
               size_t errlen) RELAY_MUSTCHECK;

/* Writes "schema.table" escaped for wal2json's add-tables option
 * (backslash before space, quote, comma, period, asterisk). Returns the
 * length written, or -1 when out is too small. */
int w2j_add_tables_value(const char *schema, const char *table, char *out,
                         size_t outlen) RELAY_MUSTCHECK;

#endif
