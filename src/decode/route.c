/* SPDX-License-Identifier: Apache-2.0 */
/* route.c -- the Kafka topic of an event and the headers it carries.
 *
 * Pure functions over a decoded record: nothing here allocates. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

struct route_more *route_more(struct route_headers *h)
{
	if (h->more == NULL)
		h->more = xcalloc(1, sizeof(*h->more));
	return h->more;
}

bool route_header_add(struct route_headers *h, const char *name,
                      const char *value, size_t len)
{
	struct route_more *m = route_more(h);

	if (m->n >= ROUTE_H_MORE)
		return false;
	m->name[m->n] = name;
	m->value[m->n] = value;
	m->len[m->n] = value != NULL ? len : 0;
	m->n++;
	return true;
}

void route_headers_free(struct route_headers *h)
{
	free(h->more);
	h->more = NULL;
}

#define ROUTE_DEFAULT_REGEX "(?<routedByValue>.*)"

int route_regex_compile(struct route_regex *rx, const char *java, char *err,
                        size_t errlen)
{
	static const char named[] = "(?<routedByValue>";
	size_t cap = strlen(java) + 8, n = 0, groups = 1;
	char *posix;
	bool in_class = false;
	int rc;

	memset(rx, 0, sizeof(*rx));
	if (strcmp(java, ROUTE_DEFAULT_REGEX) == 0) {
		rx->identity = true;
		return 0;
	}
	posix = xmalloc(cap);
	/* Java's matches(): the whole value. Group 1 is this wrapper. */
	posix[n++] = '^';
	posix[n++] = '(';
	for (const char *p = java; *p != '\0'; p++) {
		if (*p == '\\') {
			/* POSIX (glibc) knows \w \s \b and escaped
			 * punctuation; Java's class shorthands for digits
			 * and its quoting are another language. */
			if (p[1] == '\0' || strchr("dDQEpPhHvVRXzZAG", p[1]) != NULL ||
			    (p[1] >= '0' && p[1] <= '9')) {
				errbuf_set(err, errlen, "route.topic.regex: \"\\%c\" is Java "
				           "syntax that POSIX regular expressions do not have "
				           "(write [0-9] for \\d)", p[1] ? p[1] : ' ');
				goto fail;
			}
			posix[n++] = *p++;
			posix[n++] = *p;
			continue;
		}
		if (in_class) {
			if (*p == ']')
				in_class = false;
			posix[n++] = *p;
			continue;
		}
		if (*p == '[') {
			in_class = true;
			posix[n++] = *p;
			if (p[1] == '^')
				posix[n++] = *++p;
			if (p[1] == ']')
				posix[n++] = *++p;
			continue;
		}
		if (*p == '(' && p[1] == '?' && p[2] == ':') {
			/* A non-capturing group: a plain one, counted. */
			groups++;
			posix[n++] = '(';
			p += 2;
			continue;
		}
		if (*p == '(' && p[1] == '?') {
			if (strncmp(p, named, sizeof(named) - 1) != 0 ||
			    rx->group != 0) {
				errbuf_set(err, errlen, "route.topic.regex: \"%.20s\" is "
				           "Java syntax that POSIX regular expressions do not "
				           "have; only (?:...) and one named group, "
				           "(?<routedByValue>...), are translated", p);
				goto fail;
			}
			rx->group = ++groups;
			posix[n++] = '(';
			p += sizeof(named) - 2;
			continue;
		}
		if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') &&
		    (p[1] == '?' || p[1] == '+')) {
			errbuf_set(err, errlen, "route.topic.regex: \"%c%c\" (a lazy "
			           "or possessive quantifier) is Java syntax that POSIX "
			           "regular expressions do not have", p[0], p[1]);
			goto fail;
		}
		if (*p == '(')
			groups++;
		posix[n++] = *p;
	}
	posix[n++] = ')';
	posix[n++] = '$';
	posix[n] = '\0';
	rc = regcomp(&rx->re, posix, REG_EXTENDED);
	if (rc != 0) {
		char why[256];
		regerror(rc, &rx->re, why, sizeof(why));
		errbuf_set(err, errlen, "route.topic.regex: \"%s\" does not compile "
		           "(as POSIX \"%s\"): %s", java, posix, why);
		goto fail;
	}
	rx->compiled = true;
	free(posix);
	return 0;
fail:
	free(posix);
	memset(rx, 0, sizeof(*rx));
	return -1;
}

void route_regex_free(struct route_regex *rx)
{
	if (rx->compiled)
		regfree(&rx->re);
	memset(rx, 0, sizeof(*rx));
}

int route_topic_rx(const struct route_regex *rx, const char *tmpl,
                   const char *value, size_t value_len, char *out,
                   size_t outlen, char *err, size_t errlen)
{
	regmatch_t m[10];

	if (rx == NULL || rx->identity)
		return route_topic(tmpl, value, value_len, out, outlen, err, errlen);
	/* regexec() reads a NUL-terminated string: a value with a NUL in
	 * it (which PostgreSQL text cannot hold) would match short. */
	if (strlen(value) != value_len ||
	    regexec(&rx->re, value, 10, m, 0) != 0)
		return route_topic("${routedByValue}", value, value_len, out, outlen,
		                   err, errlen);
	if (rx->group == 0 || rx->group >= 10 || m[rx->group].rm_so < 0)
		return route_topic(tmpl, "", 0, out, outlen, err, errlen);
	return route_topic(tmpl, value + m[rx->group].rm_so,
	                   (size_t)(m[rx->group].rm_eo - m[rx->group].rm_so), out,
	                   outlen, err, errlen);
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
	h->partition = -1;
	h->timestamp_ms = 0;
	h->more = NULL;

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
