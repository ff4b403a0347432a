/* SPDX-License-Identifier: Apache-2.0 */
/* route.h -- topic routing and the Kafka headers of an event. Pure. */
#ifndef RELAY_ROUTE_H
#define RELAY_ROUTE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"

struct record;

/* Expands the topic template: every "${routedByValue}" becomes value.
 * Returns the length written, or -1 when out is too small or the result
 * is not a valid Kafka topic name (1-249 of [A-Za-z0-9._-]), with the
 * reason in err. */
int route_topic(const char *tmpl, const char *value, size_t value_len,
                char *out, size_t outlen, char *err,
                size_t errlen) RELAY_MUSTCHECK;

/* The headers every record carries, in this order. */
enum route_header {
	ROUTE_H_ID = 0,
	ROUTE_H_EVENT_TYPE,
	ROUTE_H_AGGREGATE_TYPE,
	ROUTE_H_PG_LSN,
	ROUTE_H_PG_XID,
	ROUTE_H_COUNT
};

/* One header beyond those (the dead-letter record's, dlq.h). */
struct route_kv {
	const char *name;
	const char *value;
	size_t len;
};

/* The headers options add after the fixed five (CloudEvents, trace
 * context, table.fields.additional.placement), in one block allocated
 * on the first: an event without them carries no more than before. */
#define ROUTE_H_MORE 16

struct route_more {
	size_t n;
	const char *name[ROUTE_H_MORE];
	const char *value[ROUTE_H_MORE]; /* NULL: a header with a null value,
	                                  * as Connect writes a NULL column */
	size_t len[ROUTE_H_MORE];
	char time_buf[40];      /* ce_time */
};

/* What goes with a record besides topic, key and value: its headers,
 * partition and timestamp. */
struct route_headers {
	const char *name[ROUTE_H_COUNT];
	const char *value[ROUTE_H_COUNT]; /* NULL: header omitted */
	size_t len[ROUTE_H_COUNT];
	int32_t partition;      /* -1: the partitioner picks it */
	int64_t timestamp_ms;   /* 0: the producer's clock */
	struct route_more *more; /* owned; NULL: none (route_headers_free) */
	char lsn_buf[24];
	char xid_buf[24];
	const struct route_kv *extra; /* after the ones above; NULL: none */
	size_t n_extra;
};

/* The added headers' block, allocated on first use. */
struct route_more *route_more(struct route_headers *h);

/* Appends one header; false when ROUTE_H_MORE are in use. */
bool route_header_add(struct route_headers *h, const char *name,
                      const char *value, size_t len) RELAY_MUSTCHECK;

void route_headers_free(struct route_headers *h);

/* Every header: the fixed five, the added ones (more), then extra. Header
 * i of route_header_count() as name, value and length; returns whether
 * it is sent: a fixed or extra header whose value is NULL is left out,
 * an added one with a NULL value is sent with a null value (as Connect
 * writes a NULL column). */
static inline size_t route_header_count(const struct route_headers *h)
{
	return ROUTE_H_COUNT + (h->more != NULL ? h->more->n : 0) + h->n_extra;
}

static inline bool route_header_at(const struct route_headers *h, size_t i,
                                   const char **name, const char **value,
                                   size_t *len)
{
	size_t nmore = h->more != NULL ? h->more->n : 0;

	if (i < ROUTE_H_COUNT) {
		*name = h->name[i];
		*value = h->value[i];
		*len = h->len[i];
		return *value != NULL;
	}
	i -= ROUTE_H_COUNT;
	if (i < nmore) {
		*name = h->more->name[i];
		*value = h->more->value[i];
		*len = h->more->len[i];
		return true;
	}
	i -= nmore;
	*name = h->extra[i].name;
	*value = h->extra[i].value;
	*len = h->extra[i].len;
	return *value != NULL;
}

/* route.topic.regex: Debezium hands the route.by.field value to Connect's
 * RegexRouter, which replaces the topic only when the (Java) regex
 * matches the whole value, and leaves the value itself as the topic
 * otherwise. */
struct route_regex {
	bool identity;          /* the default (?<routedByValue>.*): no regex
	                         * is run, the value is the group */
	bool compiled;          /* re holds a compiled regex */
	regex_t re;             /* ^(translated)$, REG_EXTENDED */
	size_t group;           /* the routedByValue group in re; 0: none */
};

/* Translates Java's syntax to POSIX extended (a named group
 * (?<routedByValue>...) becomes a plain group) and compiles it. Returns
 * 0, or -1 with err saying which Java construct POSIX has no word for. */
int route_regex_compile(struct route_regex *rx, const char *java, char *err,
                        size_t errlen) RELAY_MUSTCHECK;
void route_regex_free(struct route_regex *rx);

/* The topic of a value: the template with ${routedByValue} expanded to
 * the regex's group when it matches the whole value, else the value
 * itself. As route_topic(). */
int route_topic_rx(const struct route_regex *rx, const char *tmpl,
                   const char *value, size_t value_len, char *out,
                   size_t outlen, char *err, size_t errlen) RELAY_MUSTCHECK;

/* Fills h from an event record and its transaction's commit end LSN.
 * Values are borrowed from rec (and h's own buffers). */
void route_headers(struct route_headers *h, const struct record *rec,
                   uint64_t commit_lsn);

#endif
