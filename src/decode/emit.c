/* SPDX-License-Identifier: Apache-2.0 */
/* emit.c -- reads what outbox_emit() (sql/emit.sql) wrote as a logical
 * decoding message into the record of an outbox row (emit.h).
 *
 * Apart from the decoders because it serves both: wal2json's M record and
 * pgoutput's Message give the same content, and event.c turns either into
 * an event here. It reads the content with jansson as w2j.c reads a
 * record (w2j_load_wide() for numbers beyond a double, w2j_error() for
 * the message), and takes the payload as the member's own text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/emit.h"
#include "decode/json_check.h"
#include "w2j_int.h"

static bool emit_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The end of the JSON value at p, in text jansson has already accepted:
 * the ',' or '}' that follows it in its object (trailing white space
 * not yet stripped). */
static const char *emit_value_end(const char *p, const char *end)
{
	int depth = 0;

	for (; p < end; p++) {
		switch (*p) {
		case '"':
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return p;
			depth--;
			break;
		case ',':
			if (depth == 0)
				return p;
			break;
		}
	}
	return p;
}

/* Finds the text of the top-level member name of a JSON object that
 * jansson has already accepted (without duplicate keys; or, with a number
 * beyond a double, jc_check() and jansson its stand-in copy, which has the
 * same structure byte for byte), so the syntax can be trusted. jansson would print a value back with its own spacing
 * and every number as a double (19.90 as 19.9, long integers rounded);
 * the member's own text is what PostgreSQL printed for the jsonb, byte
 * for byte. Returns false when there is no such member. */
static bool emit_member_text(const char *s, size_t len, const char *name,
                            struct rec_str *out)
{
	const char *p = s, *end = s + len;
	size_t nlen = strlen(name);

	while (p < end && emit_ws(*p))
		p++;
	if (p >= end || *p++ != '{')
		return false;
	for (;;) {
		const char *k, *v, *ve;
		size_t klen;
		bool match;

		while (p < end && emit_ws(*p))
			p++;
		if (p >= end || *p != '"')
			return false; /* the '}' of an empty object */
		k = ++p;
		while (p < end && *p != '"')
			p += *p == '\\' ? 2 : 1;
		klen = (size_t)(p - k);
		p++;
		while (p < end && (emit_ws(*p) || *p == ':'))
			p++;
		v = p;
		p = ve = emit_value_end(p, end);
		while (ve > v && emit_ws(ve[-1]))
			ve--;
		if (memchr(k, '\\', klen) == NULL) {
			match = klen == nlen && memcmp(k, name, nlen) == 0;
		} else {
			/* An escaped key ("pay\u006coad"): jansson reads it. */
			json_t *kj = json_loadb(k - 1, klen + 2, JSON_DECODE_ANY, NULL);
			match = json_is_string(kj) && json_string_length(kj) == nlen &&
			        memcmp(json_string_value(kj), name, nlen) == 0;
			json_decref(kj);
		}
		if (match) {
			out->ptr = v;
			out->len = (size_t)(ve - v);
			return true;
		}
		if (p >= end || *p++ != ',')
			return false;
	}
}

int emit_decode(const char *content, size_t len, struct record *rec,
                char *err, size_t errlen)
{
	/* In enum rec_col order; the default outbox column names. */
	static const char *const names[REC_NCOLS] = {
		"id", "aggregate_id", "event_type", "aggregate_type", "payload"
	};
	struct w2j_ctx c = { .rec = rec, .have_lsn = rec->lsn != 0 };
	struct rec_str val[REC_NCOLS];
	struct record ev;
	struct rec_str *dst[REC_NCOLS] = { &ev.id, &ev.key, &ev.type, &ev.route,
		                               &ev.payload };
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL |
	                     JSON_DECODE_ANY;
	struct jc_error jc = { 0, NULL };
	json_error_t jerr;
	json_t *root;
	size_t need = 0;
	char *buf, *o;
	int k;

	memset(val, 0, sizeof(val));
	/* INT_AS_REAL: a long integer in the payload is valid JSON; the
	 * payload's value is never taken from the tree anyway, so a number
	 * beyond a double may stand in for it too (w2j_load_wide()). */
	root = json_loadb(content, len, flags, &jerr);
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow) {
		bool int_as_real = true; /* already, from flags */
		root = w2j_load_wide(content, len, flags, &int_as_real, &jerr, &jc);
	}
	if (root == NULL) {
		if (jc.reason != NULL)
			w2j_error(err, errlen, &c, "outbox message content is not "
			          "JSON: %s at byte %zu", jc.reason, jc.offset);
		else
			w2j_error(err, errlen, &c, "outbox message content is not "
			          "JSON: %s at byte %d", jerr.text, jerr.position);
		return -1;
	}
	if (!json_is_object(root)) {
		w2j_error(err, errlen, &c, "outbox message content is a JSON %s, "
		          "not an object", json_is_array(root) ? "array" : "scalar");
		goto fail;
	}
	for (k = 0; k < REC_COL_PAYLOAD; k++) {
		json_t *v = json_object_get(root, names[k]);
		if (k == REC_COL_TYPE && (v == NULL || json_is_null(v)))
			continue; /* no event_type header */
		if (!json_is_string(v)) {
			w2j_error(err, errlen, &c, v == NULL
			          ? "outbox message: member \"%s\" is missing"
			          : "outbox message: member \"%s\" is not a string",
			          names[k]);
			goto fail;
		}
		val[k].ptr = json_string_value(v);
		val[k].len = json_string_length(v);
		need += val[k].len + 1;
		if (k == REC_COL_ID)
			c.event_id = val[k].ptr; /* later errors can name it */
	}
	if (json_object_get(root, "payload") == NULL ||
	    !emit_member_text(content, len, "payload", &val[REC_COL_PAYLOAD])) {
		w2j_error(err, errlen, &c,
		          "outbox message: member \"payload\" is missing");
		goto fail;
	}
	need += val[REC_COL_PAYLOAD].len + 1;

	/* One block for every string, as the I scanner does; then the
	 * message (which content may live in) is released. */
	buf = malloc(need);
	if (buf == NULL) {
		w2j_error(err, errlen, &c, "outbox message: out of memory");
		goto fail;
	}
	memset(&ev, 0, sizeof(ev));
	ev.kind = REC_EVENT;
	ev.lsn = rec->lsn;
	ev.nextlsn = rec->nextlsn;
	ev.xid = rec->xid;
	ev.commit_ts_us = rec->commit_ts_us;
	o = buf;
	for (k = 0; k < REC_NCOLS; k++) {
		if (val[k].ptr == NULL)
			continue;
		memcpy(o, val[k].ptr, val[k].len);
		o[val[k].len] = '\0';
		dst[k]->ptr = o;
		dst[k]->len = val[k].len;
		o += val[k].len + 1;
	}
	record_adopt(&ev, buf);
	json_decref(root);
	record_clear(rec);
	*rec = ev;
	return 0;

fail:
	json_decref(root);
	return -1;
}
