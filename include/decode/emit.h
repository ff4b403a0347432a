/* SPDX-License-Identifier: Apache-2.0 */
/* emit.h -- an event written by outbox_emit() (sql/emit.sql) as a
 * logical decoding message, read into the record of an outbox row.
 *
 * Plugin-neutral: wal2json's M record and pgoutput's Message both give a
 * REC_MESSAGE whose content is read here (event.c calls it for the
 * configured prefix), so an emitted event is the same for either. */
#ifndef RELAY_EMIT_H
#define RELAY_EMIT_H

#include <stddef.h>

#include "lib/common.h"
#include "decode/record.h"

/* Turns a logical message written by outbox_emit() into an event:
 * content is a JSON object with the members "id", "aggregate_id",
 * "aggregate_type" (strings), "event_type" (a string, or null or absent:
 * no header) and "payload" (any JSON value, null included). The payload
 * is the member's text exactly as it is in content, not re-encoded, so
 * numbers keep every digit, also beyond the range of a double (1e400).
 * content may point into rec (its msg_content). Returns 0 with rec a
 * REC_EVENT that owns its strings (lsn, xid and timestamp kept, prefix
 * and content gone), or -1 with the cause in err and rec unchanged. */
int emit_decode(const char *content, size_t len, struct record *rec,
                char *err, size_t errlen) RELAY_MUSTCHECK;

#endif
