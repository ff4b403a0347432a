/* SPDX-License-Identifier: Apache-2.0 */
/* event.c -- the per-record policy of the relay (event.h).
 *
 * Moved here from relay.c so that the runbook reads records by the same
 * rules: which records are events, in which order the checks run, and
 * what each refusal says. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/emit.h"
#include "decode/envelope.h"
#include "decode/event.h"
#include "decode/w2j.h"

void ev_txn_reset(struct ev_txn *txn)
{
	txn->open = false;
	txn->xid = -1;
	txn->commit_lsn = LSN_INVALID;
	txn->header_lsn = LSN_INVALID;
	txn->commit_ts_us = 0;
}

void ev_record_clear(struct ev_record *out)
{
	record_clear(&out->rec);
	/* Only the options allocate these: no call on the default path. */
	if (out->wire.p != NULL)
		free(out->wire.p);
	if (out->ev.headers.more != NULL)
		route_headers_free(&out->ev.headers);
	memset(out, 0, sizeof(*out));
}

static void poison(struct ev_record *out, const char *fmt, ...)
	RELAY_PRINTF(2, 3);

static void poison(struct ev_record *out, const char *fmt, ...)
{
	va_list ap;

	out->kind = EV_POISON;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
}

/* The columns of a refused event, copied into one block rec owns:
 * the id, key, type, route and payload as the row has them (ptr NULL
 * for SQL NULL or what could not be read), for the runbook's lists and
 * the dead-letter record (dlq.h). */
static void adopt_cols(struct record *rec, const struct rec_str cols[REC_NCOLS])
{
	struct rec_str *dst[REC_NCOLS] = { &rec->id, &rec->key, &rec->type,
		                               &rec->route, &rec->payload };
	size_t total = 1, at = 0;
	char *buf;

	for (int k = 0; k < REC_NCOLS; k++)
		total += cols[k].ptr != NULL ? cols[k].len + 1 : 0;
	buf = xmalloc(total);
	for (int k = 0; k < REC_NCOLS; k++) {
		if (cols[k].ptr == NULL) {
			*dst[k] = (struct rec_str){ NULL, 0 };
			continue;
		}
		memcpy(buf + at, cols[k].ptr, cols[k].len);
		buf[at + cols[k].len] = '\0';
		*dst[k] = (struct rec_str){ buf + at, cols[k].len };
		at += cols[k].len + 1;
	}
	record_adopt(rec, buf);
}

/* A line that is an insert into the outbox table (any table of the
 * schema for schema.*) is an event whatever else is wrong with it: read
 * its columns as far as they can be read into rec (adopt_cols()).
 * Returns true for one. */
static bool raw_event_cols(const struct record_spec *spec, const char *raw,
                           size_t len, struct record *rec)
{
	json_t *root = json_loadb(raw, len, JSON_DECODE_ANY, NULL);
	const char *want[REC_NCOLS] = { spec->col_id, spec->col_key,
		                            spec->col_type, spec->col_route,
		                            spec->col_payload };
	struct rec_str cols[REC_NCOLS];
	char num[REC_NCOLS][32];
	char *dumped[REC_NCOLS] = { NULL };
	const char *action, *schema, *table;
	json_t *col;
	size_t i;
	bool is_event = false;

	memset(cols, 0, sizeof(cols));
	if (!json_is_object(root))
		goto out;
	action = json_string_value(json_object_get(root, "action"));
	schema = json_string_value(json_object_get(root, "schema"));
	table = json_string_value(json_object_get(root, "table"));
	if (action == NULL || strcmp(action, "I") != 0 || schema == NULL ||
	    table == NULL || strcmp(schema, spec->schema) != 0 ||
	    (strcmp(spec->table, "*") != 0 && strcmp(table, spec->table) != 0))
		goto out;
	is_event = true;
	json_array_foreach(json_object_get(root, "columns"), i, col) {
		const char *name = json_string_value(json_object_get(col, "name"));
		json_t *v = json_object_get(col, "value");
		for (int k = 0; name != NULL && v != NULL && k < REC_NCOLS; k++) {
			if (cols[k].ptr != NULL || strcmp(name, want[k]) != 0)
				continue;
			if (json_is_string(v)) {
				cols[k] = (struct rec_str){ json_string_value(v),
				                            json_string_length(v) };
			} else if (json_is_integer(v)) {
				int n = snprintf(num[k], sizeof(num[k]),
				                 "%" JSON_INTEGER_FORMAT,
				                 json_integer_value(v));
				cols[k] = (struct rec_str){ num[k], (size_t)n };
			} else if (!json_is_null(v) &&
			           (dumped[k] = json_dumps(v, JSON_ENCODE_ANY |
			                                      JSON_COMPACT)) != NULL) {
				cols[k] = (struct rec_str){ dumped[k], strlen(dumped[k]) };
			}
		}
	}
	adopt_cols(rec, cols);
out:
	for (int k = 0; k < REC_NCOLS; k++)
		free(dumped[k]);
	json_decref(root);
	return is_event;
}

/* The refused event's id for the lists an operator reads, "?" when
 * unreadable. */
static void cols_event_id(const struct record *rec, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", rec->id.ptr != NULL ? rec->id.ptr : "?");
}

/* The "id" member of an outbox_emit() message that did not decode. */
static void emit_id(const struct rec_str *content, char *out, size_t outlen)
{
	json_t *root = json_loadb(content->ptr, content->len, 0, NULL);
	const char *id = json_string_value(json_object_get(root, "id"));

	snprintf(out, outlen, "%s", id != NULL ? id : "?");
	json_decref(root);
}

/* An event record (a row, or an outbox_emit() decoded into one): the
 * transaction check, then its topic and headers. */
static void event(const struct stream_spec *ss, const struct ev_txn *txn,
                  bool emitted, struct ev_record *out)
{
	struct record *rec = &out->rec;
	struct ev_event *ev = &out->ev;
	char err[512];

	/* An outbox_emit() message has no columns beyond the five: the
	 * extra ones count as NULL (the default timestamp, no trace
	 * context; config.c refuses placements with emitted events). */
	if (emitted)
		rec->extra_seen = (1u << ss->spec.nextra) - 1;
	/* A message does not carry the commit time its Begin had. */
	if (rec->commit_ts_us == 0)
		rec->commit_ts_us = txn->commit_ts_us;
	ev->id = rec->id;
	ev->key = rec->key;
	ev->value = rec->payload;
	ev->bytes = rec->payload.len + rec->key.len;
	route_headers(&ev->headers, rec, txn->header_lsn);
	out->decoded = true;
	out->is_event = true;
	{
		/* snprintf("%s")'s truncation, without its cost per event. */
		const char *id = rec->id.ptr != NULL ? rec->id.ptr : "?";
		size_t n = strnlen(id, sizeof(out->event_id) - 1);
		memcpy(out->event_id, id, n);
		out->event_id[n] = '\0';
	}
	if (!txn->open) {
		poison(out, "%s outside a transaction (is include-transaction "
		       "off?)", emitted ? "outbox message" : "insert record");
		return;
	}
	if ((ss->env.rx.identity
	         ? route_topic(ss->topic_template, rec->route.ptr, rec->route.len,
	                       ev->topic, sizeof(ev->topic), err, sizeof(err))
	         : route_topic_rx(&ss->env.rx, ss->topic_template, rec->route.ptr,
	                          rec->route.len, ev->topic, sizeof(ev->topic), err,
	                          sizeof(err))) < 0) {
		ev->topic[0] = '\0';
		poison(out, "event id %s: %s", rec->id.ptr, err);
		return;
	}
	/* The options of the Outbox Event Router; none set: nothing to do,
	 * not even a call. */
	if ((ss->env.active ||
	     (ss->env.trace_slot >= 0 &&
	      (rec->extra_seen & (1u << ss->env.trace_slot)))) &&
	    envelope_apply(ss, rec, ev, &out->wire, err, sizeof(err)) < 0) {
		poison(out, "event id %s: %s", rec->id.ptr, err);
		return;
	}
	out->kind = EV_EVENT;
}

static void message(const struct stream_spec *ss, const struct ev_txn *txn,
                    struct ev_record *out)
{
	struct record *rec = &out->rec;
	char err[512];

	switch (ss_message_kind(ss, rec->transactional, rec->msg_prefix.ptr)) {
	case SS_MSG_HEARTBEAT:
		/* Its content is the wall clock when the watchdog wrote it. */
		out->kind = EV_HEARTBEAT;
		out->heartbeat_sent_us = strtoll(rec->msg_content.ptr, NULL, 10);
		if (out->heartbeat_sent_us < 0)
			out->heartbeat_sent_us = 0;
		return;
	case SS_MSG_EMIT:
		/* outbox_emit() (sql/emit.sql): an event without a row,
		 * published exactly like one. */
		if (!txn->open) {
			out->is_event = true;
			emit_id(&rec->msg_content, out->event_id,
			        sizeof(out->event_id));
			poison(out, "outbox message outside a transaction (is "
			       "include-transaction off?)");
			return;
		}
		if (emit_decode(rec->msg_content.ptr, rec->msg_content.len, rec,
		                err, sizeof(err)) < 0) {
			out->is_event = true;
			emit_id(&rec->msg_content, out->event_id,
			        sizeof(out->event_id));
			poison(out, "%s", err);
			return;
		}
		event(ss, txn, true, out);
		return;
	case SS_MSG_OTHER:
		out->kind = EV_SKIP;
		return;
	}
}

/* The verdict on a record that decode (rc, err) left in out->rec. */
static void judge(const struct stream_spec *ss, const struct pgo_state *pgo,
                  int rc, const char *err, const char *data, size_t len,
                  struct ev_txn *txn, struct ev_record *out)
{
	if (rc < 0) {
		memset(&out->rec, 0, sizeof(out->rec));
		out->rec.xid = -1;
		/* A refused outbox row is still an event: the runbook lists
		 * and counts it by its id, and the dead-letter record carries
		 * its columns, read from the raw record. */
		if (ss->plugin == SS_PLUGIN_PGOUTPUT) {
			struct rec_str cols[REC_NCOLS];
			if (pgo != NULL &&
			    pgo_event_cols(pgo, data, len, cols)) {
				out->is_event = true;
				adopt_cols(&out->rec, cols);
			}
		} else
			out->is_event = raw_event_cols(&ss->spec, data, len,
			                               &out->rec);
		if (out->is_event)
			cols_event_id(&out->rec, out->event_id,
			              sizeof(out->event_id));
		poison(out, "%s", err);
		return;
	}
	switch (out->rec.kind) {
	case REC_BEGIN:
		txn->open = true;
		txn->xid = out->rec.xid;
		txn->commit_lsn = out->rec.nextlsn;
		txn->commit_ts_us = out->rec.commit_ts_us;
		/* pgoutput's Begin has no end (nextlsn 0): its events are
		 * produced before the Commit brings it, so they carry the
		 * commit LSN, which the Begin has. */
		txn->header_lsn = ss->plugin == SS_PLUGIN_PGOUTPUT ? out->rec.lsn
		                                                   : out->rec.nextlsn;
		out->kind = EV_BEGIN;
		return;
	case REC_COMMIT:
		/* The xid and commit end stay: messages about a record after
		 * the commit name the last transaction. */
		txn->open = false;
		out->kind = EV_COMMIT;
		return;
	case REC_EVENT:
		event(ss, txn, false, out);
		return;
	case REC_MESSAGE:
		message(ss, txn, out);
		return;
	case REC_UPDATE:
		/* The outbox is insert-only; Debezium's
		 * table.op.invalid.behavior says what an update is. */
		out->kind = EV_SKIP;
		out->invalid_op = true;
		snprintf(out->reason, sizeof(out->reason), "UPDATE of a row of the "
		         "outbox table %s.%s at LSN " LSN_FMT " (xid %lld): the outbox "
		         "is insert-only, the update is not published",
		         ss->spec.schema, ss->spec.table, LSN_ARGS(out->rec.lsn),
		         (long long)out->rec.xid);
		if (ss->env.op_invalid == SS_OP_FATAL) {
			out->kind = EV_POISON;
			out->invalid_op = false;
			snprintf(out->reason + strlen(out->reason),
			         sizeof(out->reason) - strlen(out->reason),
			         " (table.op.invalid.behavior = fatal)");
		}
		return;
	case REC_SKIP:
		out->kind = EV_SKIP;
		return;
	}
}

void ev_next(const struct stream_spec *ss, const char *line, size_t len,
             struct ev_txn *txn, struct ev_record *out)
{
	char err[1024];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = w2j_decode(line, len, &ss->spec, &out->rec, err, sizeof(err));
	judge(ss, NULL, rc, err, line, len, txn, out);
}

void ev_next_at(const struct stream_spec *ss, struct pgo_state *pgo,
                const char *data, size_t len, uint64_t wal_start,
                struct ev_txn *txn, struct ev_record *out)
{
	char err[1024];
	int rc = -1;

	if (ss->plugin != SS_PLUGIN_PGOUTPUT) {
		ev_next(ss, data, len, txn, out);
		return;
	}
	memset(out, 0, sizeof(*out));
	if (pgo == NULL)
		snprintf(err, sizeof(err), "pgoutput record without a decoder "
		         "state (a bug: please report)");
	else
		rc = pgo_decode(pgo, data, len, wal_start, &out->rec, err,
		                sizeof(err));
	judge(ss, pgo, rc, err, data, len, txn, out);
}
