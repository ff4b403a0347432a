/* SPDX-License-Identifier: Apache-2.0 */
/* envelope.c -- the Outbox Event Router's options applied to an event
 * (envelope.h).
 *
 * Debezium's semantics, read from its EventRouterDelegate (3.6.1): the
 * key and value go through Connect's converters (wire.c); a NULL or
 * blank payload is a tombstone with route.tombstone.on.empty.payload;
 * table.field.event.timestamp gives the record timestamp, a NULL there
 * the default; an additional column is a header (its text; NULL a null
 * header), a member of the value, or the partition (an integer); a column
 * the row does not have is an error (table.field.additional.missing =
 * error, Debezium's default). Where Debezium reads a type the relay does
 * not see (it has the column's text), the text decides: see
 * docs/configuration.md. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/envelope.h"
#include "decode/event.h"

/* Days from 1970-01-01 back to a civil date (Howard Hinnant's
 * civil_from_days): the inverse of record.c's days_from_civil. */
static void env_civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yoe, doy, doe, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	*y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y += *m <= 2;
}

size_t envelope_rfc3339(int64_t us, char *out, size_t outlen)
{
	int64_t secs = us / 1000000, frac = us % 1000000, days, sod, y;
	unsigned m, d;
	int n;

	if (frac < 0) {
		frac += 1000000;
		secs--;
	}
	days = secs / 86400;
	sod = secs % 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	env_civil(days, &y, &m, &d);
	n = snprintf(out, outlen, "%04" PRId64 "-%02u-%02uT%02d:%02d:%02d.%06dZ",
	             y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
	             (int)(sod % 60), (int)frac);
	return n < 0 ? 0 : (size_t)n;
}

int envelope_parse_time(const char *s, size_t len, int64_t *out_ms)
{
	char buf[64];
	int64_t us;
	size_t i = len > 0 && s[0] == '-' ? 1 : 0;

	if (len == 0 || len >= sizeof(buf) - 4)
		return -1;
	if (i < len && strspn(s + i, "0123456789") == len - i) {
		/* A bigint: epoch milliseconds. */
		char *end;
		memcpy(buf, s, len);
		buf[len] = '\0';
		*out_ms = strtoll(buf, &end, 10);
		return len - i > 18 ? -1 : 0;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (record_parse_timestamp(buf, &us) != 0) {
		/* timestamp without time zone: no offset; read as UTC. */
		memcpy(buf + len, "+00", 4);
		if (record_parse_timestamp(buf, &us) != 0)
			return -1;
	}
	/* Java's division, as Debezium's MicroTimestamp / 1000. */
	*out_ms = us / 1000;
	return 0;
}

static bool env_hex(const char *s, size_t n)
{
	bool nonzero = false;

	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		nonzero = nonzero || s[i] != '0';
	}
	return nonzero || n == 2;
}

/* W3C Trace Context, version 00: 00-<32 hex>-<16 hex>-<2 hex>, lower
 * case, neither id all zeros. */
static bool env_traceparent_ok(const char *s, size_t len)
{
	return len == 55 && s[0] == '0' && s[1] == '0' && s[2] == '-' &&
	       env_hex(s + 3, 32) && s[35] == '-' && env_hex(s + 36, 16) &&
	       s[52] == '-' && env_hex(s + 53, 2);
}

int envelope_trace_context(const char *s, size_t len, struct rec_str *parent,
                           struct rec_str *state, char *err, size_t errlen)
{
	const char *p = s, *end = s + len;

	parent->ptr = state->ptr = NULL;
	parent->len = state->len = 0;
	/* java.util.Properties.load(): one key a line, '#' or '!' starts a
	 * comment, the key ends at '=', ':' or white space. */
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *k, *v, *ve;
		size_t klen;

		if (eol == NULL)
			eol = end;
		while (p < eol && (*p == ' ' || *p == '\t' || *p == '\f'))
			p++;
		if (p == eol || *p == '#' || *p == '!' || *p == '\r') {
			p = eol + 1;
			continue;
		}
		k = p;
		while (p < eol && *p != '=' && *p != ':' && *p != ' ' && *p != '\t')
			p++;
		klen = (size_t)(p - k);
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if (p < eol && (*p == '=' || *p == ':'))
			p++;
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		v = p;
		ve = eol > v && eol[-1] == '\r' ? eol - 1 : eol;
		if ((klen == 11 && memcmp(k, "traceparent", 11) == 0) ||
		    (klen == 10 && memcmp(k, "tracestate", 10) == 0)) {
			struct rec_str *dst = klen == 11 ? parent : state;
			if (memchr(v, '\\', (size_t)(ve - v)) != NULL) {
				errbuf_set(err, errlen, "trace context: the %.*s value "
				           "uses a Properties escape, which the relay does "
				           "not read", (int)klen, k);
				return -1;
			}
			dst->ptr = v;
			dst->len = (size_t)(ve - v);
		}
		p = eol + 1;
	}
	if (parent->ptr != NULL && !env_traceparent_ok(parent->ptr, parent->len)) {
		errbuf_set(err, errlen, "trace context: traceparent \"%.*s\" is not "
		           "W3C's 00-<32 hex>-<16 hex>-<2 hex>",
		           (int)(parent->len < 80 ? parent->len : 80), parent->ptr);
		return -1;
	}
	return 0;
}

/* Debezium: payload == null || payload.toString().trim().isEmpty();
 * Java's trim() drops every byte up to ' '. */
static bool env_blank(const struct rec_str *v)
{
	if (v->ptr == NULL)
		return true;
	for (size_t i = 0; i < v->len; i++)
		if ((unsigned char)v->ptr[i] > ' ')
			return false;
	return true;
}

static int env_partition(const struct rec_str *v, const char *col,
                         int32_t *out, char *err, size_t errlen)
{
	long long n = 0;

	if (v->ptr == NULL) {
		*out = -1; /* Debezium: a null partition, the partitioner's */
		return 0;
	}
	if (v->len == 0 || v->len > 10 ||
	    strspn(v->ptr, "0123456789") != v->len) {
		errbuf_set(err, errlen, "column \"%s\" (a partition) is \"%.*s\", "
		           "not a partition number", col,
		           (int)(v->len < 64 ? v->len : 64), v->ptr);
		return -1;
	}
	for (size_t i = 0; i < v->len; i++)
		n = n * 10 + (v->ptr[i] - '0');
	if (n > INT32_MAX) {
		errbuf_set(err, errlen, "column \"%s\" (a partition) is %lld, "
		           "beyond an int32", col, n);
		return -1;
	}
	*out = (int32_t)n;
	return 0;
}

/* The headers, partition and envelope members of
 * table.fields.additional.placement, in the list's order. */
static int env_additional(const struct stream_spec *ss,
                          const struct record *rec, struct ev_event *ev,
                          char *err, size_t errlen)
{
	const struct ss_envelope *e = &ss->env;

	for (size_t i = 0; i < e->nadd; i++) {
		int slot = e->add[i].slot;
		const char *col = ss->spec.col_extra[slot];
		const struct rec_str *v = &rec->extra[slot];

		if (!(rec->extra_seen & (1u << slot))) {
			errbuf_set(err, errlen, "column \"%s\" of "
			           "table.fields.additional.placement is not in the row",
			           col);
			return -1;
		}
		switch (e->add[i].place) {
		case SS_PLACE_HEADER:
			if (!route_header_add(&ev->headers, e->add[i].alias, v->ptr,
			                      v->len)) {
				errbuf_set(err, errlen, "too many headers");
				return -1;
			}
			break;
		case SS_PLACE_PARTITION:
			if (env_partition(v, col, &ev->headers.partition, err, errlen) <
			    0)
				return -1;
			break;
		case SS_PLACE_ENVELOPE:
			break; /* env_value() */
		}
	}
	return 0;
}

/* value.format = json with envelope members: {"payload":...,"alias":...},
 * the payload first, then the members in the list's order, each a JSON
 * string of the column's text (or null). */
static void env_value(const struct stream_spec *ss, const struct record *rec,
                      const struct ev_event *ev, struct wire_buf *b)
{
	const struct ss_envelope *e = &ss->env;

	wire_puts(b, "{\"payload\":");
	if (ev->value.ptr == NULL)
		wire_puts(b, "null");
	else
		wire_json_string(b, ev->value.ptr, ev->value.len);
	for (size_t i = 0; i < e->nadd; i++) {
		const struct rec_str *v = &rec->extra[e->add[i].slot];
		if (e->add[i].place != SS_PLACE_ENVELOPE)
			continue;
		wire_puts(b, ",");
		wire_json_string(b, e->add[i].alias, strlen(e->add[i].alias));
		wire_puts(b, ":");
		if (v->ptr == NULL)
			wire_puts(b, "null");
		else
			wire_json_string(b, v->ptr, v->len);
	}
	wire_puts(b, "}");
}

static int env_cloudevents(const struct stream_spec *ss,
                           const struct record *rec, struct ev_event *ev,
                           char *err, size_t errlen)
{
	struct route_headers *h = &ev->headers;
	const char *src = ss->env.ce_source;
	int64_t us = h->timestamp_ms != 0 ? h->timestamp_ms * 1000
	                                  : rec->commit_ts_us;
	bool ok;

	/* type is REQUIRED by CloudEvents: a NULL event type cannot make
	 * one. */
	if (rec->type.ptr == NULL) {
		errbuf_set(err, errlen, "cloudevents.enabled: the event type "
		           "column is NULL, and ce_type is required");
		return -1;
	}
	ok = route_header_add(h, "ce_id", ev->id.ptr, ev->id.len) &&
	     route_header_add(h, "ce_source", src, strlen(src)) &&
	     route_header_add(h, "ce_type", rec->type.ptr, rec->type.len) &&
	     route_header_add(h, "ce_specversion", "1.0", 3);
	if (ok && us != 0) {
		char *buf = route_more(h)->time_buf;
		size_t n = envelope_rfc3339(us, buf, sizeof(h->more->time_buf));
		ok = route_header_add(h, "ce_time", buf, n);
	}
	/* Binary mode: the datacontenttype is the content-type header;
	 * the value is JSON whatever the format. A tombstone has none. */
	if (ok && ev->value.ptr != NULL)
		ok = route_header_add(h, "content-type", "application/json", 16);
	if (!ok) {
		errbuf_set(err, errlen, "too many headers");
		return -1;
	}
	return 0;
}

int envelope_apply(const struct stream_spec *ss, const struct record *rec,
                   struct ev_event *ev, struct wire_buf *wire, char *err,
                   size_t errlen)
{
	const struct ss_envelope *e = &ss->env;
	size_t key_off = 0, key_len = 0, val_off = 0, val_len = 0;
	bool key_built = false, val_built = false, envelope = false;

	if (e->tombstone_on_empty && env_blank(&ev->value)) {
		ev->value.ptr = NULL;
		ev->value.len = 0;
	}
	if (e->ts_slot >= 0) {
		const struct rec_str *v = &rec->extra[e->ts_slot];
		const char *col = ss->spec.col_extra[e->ts_slot];
		if (!(rec->extra_seen & (1u << e->ts_slot))) {
			errbuf_set(err, errlen, "column \"%s\" "
			           "(table.field.event.timestamp) is not in the row",
			           col);
			return -1;
		}
		/* NULL: the default timestamp, as Debezium falls back to its
		 * own. */
		if (v->ptr != NULL &&
		    envelope_parse_time(v->ptr, v->len, &ev->headers.timestamp_ms) <
		        0) {
			errbuf_set(err, errlen, "column \"%s\" "
			           "(table.field.event.timestamp) is \"%.*s\": not a "
			           "timestamp, timestamptz or epoch milliseconds", col,
			           (int)(v->len < 64 ? v->len : 64), v->ptr);
			return -1;
		}
		if (v->ptr != NULL && ev->headers.timestamp_ms <= 0) {
			errbuf_set(err, errlen, "column \"%s\" "
			           "(table.field.event.timestamp) is \"%.*s\": before "
			           "1970, which a Kafka timestamp cannot be", col,
			           (int)(v->len < 64 ? v->len : 64), v->ptr);
			return -1;
		}
	}
	if (env_additional(ss, rec, ev, err, errlen) < 0)
		return -1;
	if (e->trace_slot >= 0 && (rec->extra_seen & (1u << e->trace_slot)) &&
	    rec->extra[e->trace_slot].ptr != NULL) {
		struct rec_str tp, ts;
		const struct rec_str *v = &rec->extra[e->trace_slot];
		if (envelope_trace_context(v->ptr, v->len, &tp, &ts, err, errlen) < 0)
			return -1;
		if ((tp.ptr != NULL &&
		     !route_header_add(&ev->headers, "traceparent", tp.ptr, tp.len)) ||
		    (tp.ptr != NULL && ts.ptr != NULL &&
		     !route_header_add(&ev->headers, "tracestate", ts.ptr, ts.len))) {
			errbuf_set(err, errlen, "too many headers");
			return -1;
		}
	}

	/* The bytes: offsets first, as the buffer may move while it grows. */
	if (e->key_format != WIRE_STRING) {
		struct wire_col c = { rec->key_type, e->key_optional };
		key_off = wire->len;
		if (wire_encode(wire, e->key_format, &c, ev->key.ptr, ev->key.len,
		                err, errlen) < 0)
			return -1;
		key_len = wire->len - key_off;
		key_built = true;
	}
	for (size_t i = 0; i < e->nadd; i++)
		envelope = envelope || e->add[i].place == SS_PLACE_ENVELOPE;
	if (ev->value.ptr != NULL && envelope) {
		val_off = wire->len;
		env_value(ss, rec, ev, wire);
		val_len = wire->len - val_off;
		val_built = true;
	} else if (ev->value.ptr != NULL && e->value_format != WIRE_STRING) {
		struct wire_col c = { rec->payload_type, e->payload_optional };
		val_off = wire->len;
		if (wire_encode(wire, e->value_format, &c, ev->value.ptr,
		                ev->value.len, err, errlen) < 0)
			return -1;
		val_len = wire->len - val_off;
		val_built = true;
	}
	if (key_built) {
		ev->key.ptr = wire->p + key_off;
		ev->key.len = key_len;
	}
	if (val_built) {
		ev->value.ptr = wire->p + val_off;
		ev->value.len = val_len;
	}
	ev->bytes = ev->key.len + ev->value.len;
	if (e->cloudevents)
		return env_cloudevents(ss, rec, ev, err, errlen);
	return 0;
}
