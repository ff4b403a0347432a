/* SPDX-License-Identifier: Apache-2.0 */
/* kafka_port.h -- the Kafka seam: everything the relay loop asks of a
 * producer, and nothing else.
 *
 * The loop (src/relay/) never calls publisher.h's producer functions: it
 * calls these. In production kafka_port_rd() puts librdkafka behind them
 * (kafka_port_rd.c, over publisher.c); the unit tests and the fuzz
 * harness put a deterministic fake there, which records what was
 * produced and serves delivery reports in whatever order, with whatever
 * outcome, the test chooses. The report and result types are
 * publisher.h's: the seam changes who produces, not what a report says.
 *
 * Every producer function is called on the loop's thread only. Delivery
 * reports are served inside poll() and close(), never at another time. */
#ifndef RELAY_KAFKA_PORT_H
#define RELAY_KAFKA_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/config.h"
#include "decode/route.h"
#include "kafka/publisher.h"

/* One producer, as the implementation made it: opaque to the loop. */
struct kp_producer;

struct kafka_port {
	void *ctx; /* the implementation's own, passed to open(); borrowed */

	/* A new producer whose reports go to dr(opaque, ...); transactional
	 * with this transactional.id unless txn_id is NULL (exactly-once,
	 * relay/txn.c). NULL with err filled when it cannot be made (a
	 * configuration the client refuses). */
	struct kp_producer *(*open)(void *ctx, const struct relay_config *cfg,
	                            const char *txn_id, pub_dr_fn dr,
	                            void *opaque, char *err, size_t errlen);
	/* Produces one record; see pub_send(). PUB_FULL: the queue is full,
	 * serve reports and offer the same record again. */
	enum pub_send_result (*send)(struct kp_producer *p, const char *topic,
	                             const char *key, size_t key_len,
	                             const char *value, size_t value_len,
	                             const struct route_headers *h,
	                             uint64_t token, char *err, size_t errlen);
	/* Serves waiting delivery reports (and errors) for up to timeout_ms. */
	void (*poll)(struct kp_producer *p, int timeout_ms);
	/* Sends what lingers now rather than when the linger ends; see
	 * pub_nudge(). */
	void (*nudge)(struct kp_producer *p, bool force);
	/* An fd readable when reports wait (-1: none), and its drain. */
	int (*event_fd)(const struct kp_producer *p);
	void (*event_fd_drain)(struct kp_producer *p);
	/* True once the producer failed for good (err says why). */
	bool (*fatal)(struct kp_producer *p, char *err, size_t errlen,
	              int *code);
	/* True when the brokers keep refusing the credentials. */
	bool (*auth_failed)(struct kp_producer *p, char *err, size_t errlen);
	/* Records queued or in flight inside the producer. */
	int (*depth)(const struct kp_producer *p);
	/* Figures for /metrics; each accepts p == NULL (no producer). */
	int64_t (*contact_age_us)(const struct kp_producer *p);
	bool (*broker_up)(const struct kp_producer *p);
	void (*stats)(const struct kp_producer *p, struct pub_stats *out);
	uint64_t (*error_count)(const struct kp_producer *p);
	/* A transactional producer's calls (open() with a txn_id). Each
	 * returns 0, or -1 with err filled: the transaction is lost, and
	 * the relay closes the producer and replays from the slot. init
	 * fences every older producer of the same transactional.id and
	 * aborts what it left open; begin and commit bracket the records
	 * produced between them; abort drops them (their reports come back
	 * failed). init, commit and abort block up to timeout_ms and serve
	 * waiting reports as poll() does. */
	int (*txn_init)(struct kp_producer *p, int timeout_ms, char *err,
	                size_t errlen);
	int (*txn_begin)(struct kp_producer *p, char *err, size_t errlen);
	int (*txn_commit)(struct kp_producer *p, int timeout_ms, char *err,
	                  size_t errlen);
	int (*txn_abort)(struct kp_producer *p, int timeout_ms, char *err,
	                 size_t errlen);
	/* Purges what is queued (each record's report comes back failed,
	 * served inside this call) and frees the producer. */
	void (*close)(struct kp_producer *p);
};

/* librdkafka (publisher.c) behind the seam. Static storage. */
const struct kafka_port *kafka_port_rd(void);

#endif
