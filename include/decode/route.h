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

/* Room for the headers options add after the fixed five (CloudEvents,
 * trace context, table.fields.additional.placement). */
#define ROUTE_H_MAX (ROUTE_H_COUNT + 16)

/* What goes with a record besides topic, key and value: its headers,
 * partition and timestamp. */
struct route_headers {
	const char *name[ROUTE_H_MAX];
	/* The fixed five: NULL omits the header. Past them (added by
	 * route_header_add()): NULL is a header with a null value, as
	 * Connect writes a NULL column. */
	const char *value[ROUTE_H_MAX];
	size_t len[ROUTE_H_MAX];
	size_t n;               /* headers in use, ROUTE_H_COUNT at least */
	int32_t partition;      /* -1: the partitioner picks it */
	int64_t timestamp_ms;   /* 0: the producer's clock */
	char lsn_buf[24];
	char xid_buf[24];
	char time_buf[40];      /* ce_time */
};

/* Appends one header; false when ROUTE_H_MAX are in use. */
bool route_header_add(struct route_headers *h, const char *name,
                      const char *value, size_t len) RELAY_MUSTCHECK;

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
