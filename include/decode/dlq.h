/* SPDX-License-Identifier: Apache-2.0 */
/* dlq.h -- the dead-letter record of a poison event: what
 * poison.policy = dlq (src/relay/poison.c) and the runbook's
 * --skip-transaction --to-dlq (src/cli/act_skip.c) write, built here
 * once so that both write the same record. Pure.
 *
 * The record's key and value are the event's as read from the row (a
 * decode poison: the columns as far as they could be read, NULL when
 * absent) or as they were produced (a record Kafka refused). Its headers
 * are the event's own (id, event_type, aggregate_type, pg_lsn, pg_xid:
 * route.h), then Kafka Connect's dead-letter headers where one fits
 * (DeadLetterQueueReporter's names) and ours where Connect has none:
 *
 *   __connect.errors.topic                 the original topic, if known
 *   __connect.errors.connector.name        "outbox-relay/<slot.name>"
 *   __connect.errors.stage                 TASK_POLL (read or decode),
 *                                          KAFKA_PRODUCE (refused)
 *   __connect.errors.exception.class.name  outbox_relay.decode,
 *                                          outbox_relay.kafka.<ERROR>,
 *                                          outbox_relay.skip_transaction
 *   __connect.errors.exception.message     the reason, as logged
 *   outbox.dlq.tries                       times it was tried (1 for a
 *                                          decode poison)
 *
 * docs/configuration.md ("Poison events") is the reference. */
#ifndef RELAY_DLQ_H
#define RELAY_DLQ_H

#include <stddef.h>
#include <stdint.h>

#include "decode/record.h"
#include "decode/route.h"

enum dlq_stage {
	DLQ_STAGE_DECODE,    /* the decoder refused the row */
	DLQ_STAGE_PRODUCE,   /* Kafka refused the record */
	DLQ_STAGE_SKIP_TXN,  /* --skip-transaction --to-dlq */
};

struct dlq_cause {
	enum dlq_stage stage;
	const char *reason;     /* why, as the log says it */
	const char *error_name; /* DLQ_STAGE_PRODUCE: librdkafka's short
	                         * name (MSG_SIZE_TOO_LARGE); else NULL */
	const char *topic;      /* the original topic; NULL or "": unknown */
	const char *slot;       /* slot.name */
	uint64_t commit_lsn;    /* the pg_lsn header's LSN */
	int64_t xid;            /* -1: unknown */
	int64_t tries;
};

#define DLQ_EXTRA 6

/* One dead-letter record's headers. Not to be copied (h points into
 * it); the strings of rec and cause are borrowed until the send. */
struct dlq_record {
	struct route_headers h;   /* what pub_send() takes */
	struct route_kv kv[DLQ_EXTRA];
	char connector[160];
	char cls[96];
	char tries[24];
};

/* Fills d for an event with the headers orig (as route_headers() made
 * them for it; pg_lsn and pg_xid are written again from cause) and
 * cause. */
void dlq_build(struct dlq_record *d, const struct route_headers *orig,
               const struct dlq_cause *cause);

/* The same for an event known by its record rec only (a decode poison:
 * its columns as far as they were read; absent ones are left out). */
void dlq_build_rec(struct dlq_record *d, const struct record *rec,
                   const struct dlq_cause *cause);

/* The header of d named name, NULL when absent (tests, the runbook). */
const struct route_kv *dlq_header(const struct dlq_record *d,
                                  const char *name);

#endif
