/* SPDX-License-Identifier: Apache-2.0 */
/* envelope.h -- what the Outbox Event Router's options make of an event:
 * key and value bytes (key.format, value.format), a tombstone for an empty
 * payload, the record timestamp and partition, and the headers the options
 * add (table.fields.additional.placement, trace context, CloudEvents).
 *
 * Pure, like the rest of decode/: the event and its record in, the event
 * reshaped (or a reason to refuse it) out. With every option at its
 * default it changes nothing and copies nothing: the relay's drain speed
 * rests on that path (docs/benchmarks.md). */
#ifndef RELAY_ENVELOPE_H
#define RELAY_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "decode/record.h"
#include "decode/stream_spec.h"
#include "decode/wire.h"

struct ev_event;

/* Shapes ev (its id, key, value and headers already filled from rec by
 * event.c) by ss->env. Bytes it builds go to wire, which the caller owns
 * (ev then points into it). Returns 0, or -1 with the reason in err (a
 * poison event). */
int envelope_apply(const struct stream_spec *ss, const struct record *rec,
                   struct ev_event *ev, struct wire_buf *wire, char *err,
                   size_t errlen) RELAY_MUSTCHECK;

/* The record timestamp a column's text gives, in Unix epoch ms: an
 * integer (epoch ms, a bigint column), or a timestamp as PostgreSQL
 * prints it with or without a UTC offset (timestamptz, or timestamp read
 * as UTC, as Debezium reads it). Returns 0, or -1 when it is neither. */
int envelope_parse_time(const char *s, size_t len,
                        int64_t *out_ms) RELAY_MUSTCHECK;

/* RFC 3339 in UTC with microseconds ("2026-11-29T20:09:17.537600Z") of
 * epoch microseconds, into out (at least 32 bytes). Returns its length. */
size_t envelope_rfc3339(int64_t us, char *out, size_t outlen);

/* The traceparent and tracestate of a java.util.Properties text
 * ("traceparent=00-...\ntracestate=..."), borrowed from s: ptr NULL when
 * absent. Returns 0, or -1 with err when traceparent is not W3C's
 * version-00 shape or a value uses an escape. */
int envelope_trace_context(const char *s, size_t len, struct rec_str *parent,
                           struct rec_str *state, char *err,
                           size_t errlen) RELAY_MUSTCHECK;

#endif
