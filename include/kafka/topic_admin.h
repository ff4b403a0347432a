/* SPDX-License-Identifier: Apache-2.0 */
/* topic_admin.h -- creating Kafka topics through the admin API: the slot
 * ledger's topic (ledger.c) and, with topic.creation.default.partitions,
 * each topic the relay produces to (publisher.c) before its first record,
 * as Kafka Connect's topic.creation.default.* settings do. One copy of
 * the request, of what counts as created (TOPIC_ALREADY_EXISTS too) and
 * of which refusals are final. */
#ifndef RELAY_TOPIC_ADMIN_H
#define RELAY_TOPIC_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "lib/config.h"

/* One topic config ("cleanup.policy", "compact"). */
struct ta_config {
	const char *name;
	const char *value;
};

struct ta_topic {
	const char *name;
	int partitions;             /* -1: the broker's num.partitions */
	int replication_factor;     /* -1: the broker's default */
	const struct ta_config *configs;
	size_t nconfigs;
};

enum ta_result {
	TA_CREATED,     /* created now */
	TA_EXISTED,     /* there already (TOPIC_ALREADY_EXISTS) */
	TA_REFUSED,     /* the broker said no for good: authorization, a
	                 * policy, an invalid partition count, replication
	                 * factor or config */
	TA_FAILED,      /* no answer in time, or a refusal that can pass
	                 * (no controller yet, a broker down): try again */
};

/* Creates t through rk (a client of any type) and waits at most
 * timeout_ms for the answer. TA_REFUSED and TA_FAILED fill err with the
 * topic and the broker's reason. Call on one thread per rk. */
enum ta_result ta_create(rd_kafka_t *rk, const struct ta_topic *t,
                         int timeout_ms, char *err, size_t errlen);

/* True when cfg asks for topic creation (topic.creation.default.
 * partitions other than 0). */
bool ta_enabled(const struct relay_config *cfg);

/* With ta_enabled(cfg): creates topic with cfg's topic.creation.default.*
 * settings the first time this process asks for it, and returns at once
 * (TA_EXISTED) for a topic created or found before, whichever client
 * asked. The relay's producer calls it before a topic's first record; a
 * dead-letter writer can too. Without ta_enabled(cfg): TA_EXISTED, no
 * request. The set of topics is the process's: call from one thread (the
 * relay's loop). */
enum ta_result ta_ensure(rd_kafka_t *rk, const struct relay_config *cfg,
                         const char *topic, int timeout_ms, char *err,
                         size_t errlen);

#endif
