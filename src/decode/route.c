/* SPDX-License-Identifier: Apache-2.0 */
/* route.c -- the Kafka topic of an event and the headers it carries.
 *
 * Pure functions over a decoded record: nothing here allocates. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "decode/route.h"
#include "decode/record.h"

#define ROUTE_PLACEHOLDER "${routedByValue}"
#define ROUTE_TOPIC_MAX 249 /* Kafka's limit on a topic name's length */

static bool route_topic_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

/* Writes the route value into buf for a message: printable ASCII as is,
 * anything else as \xHH, cut after 64 bytes. The value comes from a
 * table row and may hold anything, newlines and escapes included. */
static void route_quote(const char *s, size_t len, char *buf, size_t buflen)
{
	size_t n = 0, i;

	for (i = 0; i < len && i < 64 && n + 5 < buflen; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, buflen - n, "\\x%02X", ch);
	}
	if (i < len && n + 4 < buflen) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
}

int route_topic(const char *tmpl, const char *value, size_t value_len,
                char *out, size_t outlen, char *err, size_t errlen)
{
	const size_t ph_len = sizeof(ROUTE_PLACEHOLDER) - 1;
	char shown[300];
	size_t n = 0, i;
	const char *p = tmpl;

	/* Expand into out while counting, so an overlong topic is reported
	 * as such even when out is small. */
	while (*p != '\0') {
		const char *src;
		size_t len;
		if (strncmp(p, ROUTE_PLACEHOLDER, ph_len) == 0) {
			src = value;
			len = value_len;
			p += ph_len;
		} else {
			src = p;
			len = 1;
			p++;
		}
		if (n < outlen && len > 0)
			memcpy(out + n, src, len <= outlen - n ? len : outlen - n);
		n += len;
	}

	route_quote(value, value_len, shown, sizeof(shown));
	if (n == 0) {
		snprintf(err, errlen,
		         "topic from template \"%s\" and value \"%s\" is empty",
		         tmpl, shown);
		return -1;
	}
	if (n > ROUTE_TOPIC_MAX) {
		snprintf(err, errlen,
		         "topic for value \"%s\" is %zu bytes long; Kafka allows "
		         "at most %d", shown, n, ROUTE_TOPIC_MAX);
		return -1;
	}
	if (n >= outlen) {
		snprintf(err, errlen,
		         "topic for value \"%s\" needs %zu bytes, buffer has %zu",
		         shown, n + 1, outlen);
		return -1;
	}
	out[n] = '\0';
	for (i = 0; i < n; i++) {
		if (!route_topic_char((unsigned char)out[i])) {
			char topic[300];
			route_quote(out, n, topic, sizeof(topic));
			snprintf(err, errlen,
			         "value \"%s\" makes topic \"%s\" invalid: byte 0x%02X "
			         "at offset %zu is not in [A-Za-z0-9._-]", shown, topic,
			         (unsigned char)out[i], i);
			out[0] = '\0';
			return -1;
		}
	}
	/* Kafka reserves these two names. */
	if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
		snprintf(err, errlen,
		         "value \"%s\" makes the topic \"%s\", which Kafka "
		         "reserves", shown, out);
		out[0] = '\0';
		return -1;
	}
	return (int)n;
}

void route_headers(struct route_headers *h, const struct record *rec,
                   uint64_t commit_lsn)
{
	static const char *const names[ROUTE_H_COUNT] = {
		[ROUTE_H_ID] = "id",
		[ROUTE_H_EVENT_TYPE] = "event_type",
		[ROUTE_H_AGGREGATE_TYPE] = "aggregate_type",
		[ROUTE_H_PG_LSN] = "pg_lsn",
		[ROUTE_H_PG_XID] = "pg_xid",
	};
	int n;

	for (int i = 0; i < ROUTE_H_COUNT; i++) {
		h->name[i] = names[i];
		h->value[i] = NULL;
		h->len[i] = 0;
	}
	h->extra = NULL;
	h->n_extra = 0;

	h->value[ROUTE_H_ID] = rec->id.ptr;
	h->len[ROUTE_H_ID] = rec->id.len;
	if (rec->type.ptr != NULL) {
		h->value[ROUTE_H_EVENT_TYPE] = rec->type.ptr;
		h->len[ROUTE_H_EVENT_TYPE] = rec->type.len;
	}
	h->value[ROUTE_H_AGGREGATE_TYPE] = rec->route.ptr;
	h->len[ROUTE_H_AGGREGATE_TYPE] = rec->route.len;

	/* The commit end, as pg_replication_slots prints it, so a consumer
	 * can tell which transaction (and slot position) a record came from. */
	_Static_assert(sizeof(h->lsn_buf) >= LSN_STR_MAX, "lsn_buf");
	n = (int)lsn_format(h->lsn_buf, commit_lsn);
	h->value[ROUTE_H_PG_LSN] = h->lsn_buf;
	h->len[ROUTE_H_PG_LSN] = (size_t)n;

	if (rec->xid >= 0) {
		_Static_assert(sizeof(h->xid_buf) >= I64_STR_MAX, "xid_buf");
		n = (int)i64_format(h->xid_buf, rec->xid);
		h->value[ROUTE_H_PG_XID] = h->xid_buf;
		h->len[ROUTE_H_PG_XID] = (size_t)n;
	}
}
