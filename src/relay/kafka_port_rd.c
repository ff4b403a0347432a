/* SPDX-License-Identifier: Apache-2.0 */
/* kafka_port_rd.c -- the Kafka seam over publisher.c (librdkafka).
 *
 * Each function forwards to its pub_*() twin: struct kp_producer is a
 * struct publisher under another name, so the loop cannot reach
 * librdkafka but through the seam. */
#include "kafka/publisher.h"
#include "relay/kafka_port.h"

static struct publisher *pub(struct kp_producer *p)
{
	return (struct publisher *)p;
}

static const struct publisher *cpub(const struct kp_producer *p)
{
	return (const struct publisher *)p;
}

static struct kp_producer *rd_open(void *ctx, const struct relay_config *cfg,
                                   const char *txn_id, pub_dr_fn dr,
                                   void *opaque, char *err, size_t errlen)
{
	(void)ctx;
	return (struct kp_producer *)pub_new(cfg, txn_id, dr, opaque, err,
	                                     errlen);
}

static enum pub_send_result rd_send(struct kp_producer *p, const char *topic,
                                    const char *key, size_t key_len,
                                    const char *value, size_t value_len,
                                    const struct route_headers *h,
                                    uint64_t token, char *err, size_t errlen)
{
	return pub_send(pub(p), topic, key, key_len, value, value_len, h, token,
	                err, errlen);
}

static void rd_poll(struct kp_producer *p, int timeout_ms)
{
	pub_poll(pub(p), timeout_ms);
}

static void rd_nudge(struct kp_producer *p, bool force)
{
	pub_nudge(pub(p), force);
}

static int rd_event_fd(const struct kp_producer *p)
{
	return pub_event_fd(cpub(p));
}

static void rd_event_fd_drain(struct kp_producer *p)
{
	pub_event_fd_drain(pub(p));
}

static bool rd_fatal(struct kp_producer *p, char *err, size_t errlen,
                     int *code)
{
	return pub_fatal(pub(p), err, errlen, code);
}

static bool rd_auth_failed(struct kp_producer *p, char *err, size_t errlen)
{
	return pub_auth_failed(pub(p), err, errlen);
}

static int rd_depth(const struct kp_producer *p)
{
	return pub_outq_len(cpub(p));
}

static int64_t rd_contact_age_us(const struct kp_producer *p)
{
	return pub_contact_age_us(cpub(p));
}

static bool rd_broker_up(const struct kp_producer *p)
{
	return pub_broker_up(cpub(p));
}

static void rd_stats(const struct kp_producer *p, struct pub_stats *out)
{
	pub_stats(cpub(p), out);
}

static uint64_t rd_error_count(const struct kp_producer *p)
{
	return pub_error_count(cpub(p));
}

static int rd_txn_init(struct kp_producer *p, int timeout_ms, char *err,
                       size_t errlen)
{
	return pub_txn_init(pub(p), timeout_ms, err, errlen);
}

static int rd_txn_begin(struct kp_producer *p, char *err, size_t errlen)
{
	return pub_txn_begin(pub(p), err, errlen);
}

static int rd_txn_commit(struct kp_producer *p, int timeout_ms, char *err,
                         size_t errlen)
{
	return pub_txn_commit(pub(p), timeout_ms, err, errlen);
}

static int rd_txn_abort(struct kp_producer *p, int timeout_ms, char *err,
                        size_t errlen)
{
	return pub_txn_abort(pub(p), timeout_ms, err, errlen);
}

static void rd_close(struct kp_producer *p)
{
	pub_free(pub(p));
}

static const struct kafka_port rd_port = {
	.open = rd_open,
	.send = rd_send,
	.poll = rd_poll,
	.nudge = rd_nudge,
	.event_fd = rd_event_fd,
	.event_fd_drain = rd_event_fd_drain,
	.fatal = rd_fatal,
	.auth_failed = rd_auth_failed,
	.depth = rd_depth,
	.contact_age_us = rd_contact_age_us,
	.broker_up = rd_broker_up,
	.stats = rd_stats,
	.error_count = rd_error_count,
	.txn_init = rd_txn_init,
	.txn_begin = rd_txn_begin,
	.txn_commit = rd_txn_commit,
	.txn_abort = rd_txn_abort,
	.close = rd_close,
};

const struct kafka_port *kafka_port_rd(void)
{
	return &rd_port;
}
