/* SPDX-License-Identifier: Apache-2.0 */
/* route.h -- topic routing and the Kafka headers of an event. Pure. */
#ifndef RELAY_ROUTE_H
#define RELAY_ROUTE_H

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

struct route_headers {
	const char *name[ROUTE_H_COUNT];
	const char *value[ROUTE_H_COUNT]; /* NULL: header omitted */
	size_t len[ROUTE_H_COUNT];
	char lsn_buf[24];
	char xid_buf[24];
	const struct route_kv *extra; /* after the ones above; NULL: none */
	size_t n_extra;
};

/* Fills h from an event record and its transaction's commit end LSN.
 * Values are borrowed from rec (and h's own buffers). */
void route_headers(struct route_headers *h, const struct record *rec,
                   uint64_t commit_lsn);

#endif
