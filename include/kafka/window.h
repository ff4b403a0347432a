/* SPDX-License-Identifier: Apache-2.0 */
/* window.h -- reading a topic's records from a point in time (--reconcile).
 *
 * One blocking consumer (kafka_conf.h's KC_WINDOW_CONSUMER: the kafka.*
 * security settings, read_committed forced) reads every partition of a
 * topic from the first offset whose timestamp is at or after from_ms
 * (rd_kafka_offsets_for_times) to the end it finds when it starts there,
 * bounded by a timeout, and hands each record to a callback. Records
 * with an older timestamp past that offset (CreateTime is the
 * producer's) are handed too: the caller judges the window. */
#ifndef RELAY_WINDOW_H
#define RELAY_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "lib/config.h"

/* One record: its key, the values of two headers (NULL: absent or a
 * null value), its timestamp (-1: none). Valid during the callback. */
struct kw_record {
	const char *key;
	size_t key_len;
	const char *id;             /* header "id" */
	size_t id_len;
	const char *type;           /* header type_header (kw_read) */
	size_t type_len;
	int64_t ts_ms;
	int32_t partition;
	int64_t offset;
};

typedef void (*kw_record_fn)(void *ctx, const struct kw_record *r);

/* What a read found. */
struct kw_stats {
	bool no_topic;              /* the topic does not exist */
	int partitions;
	uint64_t records;           /* handed to the callback */
};

struct kw_reader;

/* The consumer (cfg borrowed for its lifetime). Returns NULL with err
 * filled (a secret never quoted). */
struct kw_reader *kw_open(const struct relay_config *cfg, char *err,
                          size_t errlen);
void kw_close(struct kw_reader *r);

/* Reads topic from from_ms (ms since the epoch) to its end, within
 * timeout_ms in all; type_header names the header whose value goes in
 * kw_record.type (NULL: none). Returns 0 (a missing topic too, with
 * st->no_topic), or -1 with err filled. */
int kw_read(struct kw_reader *r, const char *topic, const char *type_header,
            int64_t from_ms, int timeout_ms, kw_record_fn fn, void *ctx,
            struct kw_stats *st, char *err, size_t errlen) RELAY_MUSTCHECK;

#endif
