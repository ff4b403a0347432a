/* SPDX-License-Identifier: Apache-2.0 */
/* publisher.h -- the Kafka producer (librdkafka).
 *
 * Delivery reports are served on the caller's thread by pub_poll(), so
 * the LSN tracker they update needs no lock. The queue's event fd lets
 * the main poll() loop wake up when reports are waiting. */
#ifndef RELAY_PUBLISHER_H
#define RELAY_PUBLISHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "lib/config.h"
#include "decode/route.h"

struct publisher;

/* One delivery report. Strings are valid during the callback only. */
struct pub_report {
	uint64_t token;         /* as given to pub_send() */
	bool ok;
	int err;                /* rd_kafka_resp_err_t; 0 when ok */
	const char *errstr;     /* "topic T partition P event id E: why"; NULL
	                         * when ok */
	const char *topic;
	int32_t partition;
	const char *event_id;   /* the id header, NUL-terminated; "?" if none */
	size_t bytes;           /* key + value */
	int64_t at_wall_us;     /* now_wall_us() when it was served (read
	                         * once per pub_poll() for all its reports) */
};

/* Called once per produced message from pub_poll(). */
typedef void (*pub_dr_fn)(void *opaque, const struct pub_report *rep);

/* What a failed delivery means for the relay. */
enum pub_err_class {
	PUB_ERR_TRANSIENT,  /* rebuild the producer and replay from the slot */
	PUB_ERR_PERMANENT,  /* the broker refuses this record: poison once
	                     * isolated (replayed alone, it fails again) */
	PUB_ERR_PURGED,     /* purged by our own teardown: no information */
};

/* Classifies a delivery report's or a fatal error's code (table in
 * publisher.c). */
enum pub_err_class pub_err_classify(int err);

/* A permanent error that a cluster can take back within seconds: a
 * partition librdkafka stops seeing while a new topic's metadata reaches
 * every broker (_UNKNOWN_PARTITION, seen on a fresh three-node cluster).
 * A record that must get through before anything else may be confirmed
 * (the slot ledger's) is written again for it, under the backstop,
 * rather than failing the relay at once. */
bool pub_err_settles(int err);

/* One sentence saying which topic or producer setting to change for a
 * permanent error, "" when there is none. Static storage. */
const char *pub_err_advice(int err);

/* librdkafka's short name of an error code ("MSG_SIZE_TOO_LARGE") and
 * its description ("Broker: Message size too large"). */
const char *pub_err_name(int err);
const char *pub_err_str(int err);

/* Creates a producer from cfg's kafka.* properties plus the safety
 * defaults; cfg is borrowed for the producer's lifetime. txn_id non-NULL:
 * a transactional producer with that transactional.id (kafka.
 * transactional.id wins), whose records must be produced between
 * pub_txn_begin() and pub_txn_commit(). With
 * topic.creation.default.partitions set, pub_send() creates a topic
 * before its first record (kafka/topic_admin.h). Returns NULL with err
 * filled. */
struct publisher *pub_new(const struct relay_config *cfg, const char *txn_id,
                          pub_dr_fn dr, void *opaque, char *err,
                          size_t errlen);

/* The transactional producer (librdkafka's init, begin, commit and
 * abort_transaction). Each returns 0, or -1 with err filled (secrets
 * redacted); an error librdkafka calls fatal (a fenced producer) also
 * makes pub_fatal() true. init, commit and abort block up to timeout_ms
 * and may serve delivery reports meanwhile. */
int pub_txn_init(struct publisher *p, int timeout_ms, char *err,
                 size_t errlen) RELAY_MUSTCHECK;
int pub_txn_begin(struct publisher *p, char *err, size_t errlen)
	RELAY_MUSTCHECK;
int pub_txn_commit(struct publisher *p, int timeout_ms, char *err,
                   size_t errlen) RELAY_MUSTCHECK;
int pub_txn_abort(struct publisher *p, int timeout_ms, char *err,
                  size_t errlen) RELAY_MUSTCHECK;

enum pub_send_result {
	PUB_SENT = 0,
	PUB_FULL,     /* local queue full: poll, then retry the same event */
	PUB_REJECTED, /* this event can never be produced (size, topic) */
	PUB_FATAL,    /* producer is dead: tear down and replay */
};

/* Produces one record (key, value and headers are copied; h may be
 * NULL: no headers). */
enum pub_send_result pub_send(struct publisher *p, const char *topic,
                              const char *key, size_t key_len,
                              const char *value, size_t value_len,
                              const struct route_headers *h, uint64_t token,
                              char *err, size_t errlen);

/* Serves delivery reports and errors for up to timeout_ms. */
void pub_poll(struct publisher *p, int timeout_ms);

/* Sends what the producer holds now instead of when linger.ms expires,
 * if the first of it was produced after a quiet period (no pub_send()
 * for linger.ms), if the last nudge's window closed with records left
 * and nothing was produced since, or if force is set; blocks for at most
 * PUB_NUDGE_WAIT_MS, serving delivery reports meanwhile. The relay calls
 * it when its input has run dry, so a lone event is not held back by a
 * linger that has nothing to batch it with, while under load the linger
 * keeps batching (a send is then never a quiet start). */
#define PUB_NUDGE_WAIT_MS 10
void pub_nudge(struct publisher *p, bool force);

/* Fd that becomes readable when reports are waiting (-1 if none). */
int pub_event_fd(const struct publisher *p);
/* Drains the event fd after poll() reported it readable. */
void pub_event_fd_drain(struct publisher *p);

/* True once librdkafka reported a fatal error; err gets the reason and
 * *code (when not NULL) the underlying error code. */
bool pub_fatal(struct publisher *p, char *err, size_t errlen, int *code);

/* True when the brokers keep refusing the producer's credentials (SASL):
 * librdkafka reported authentication errors (RD_KAFKA_RESP_ERR__
 * AUTHENTICATION) at least twice, the first ten seconds ago or more, and
 * no broker has answered (an ack or the contact probe) since. librdkafka
 * itself retries such a broker forever. err gets one line saying so,
 * with librdkafka's latest reason (secrets masked) and the settings to
 * check. Call it on the thread that calls pub_poll(), after pub_poll(). */
bool pub_auth_failed(struct publisher *p, char *err, size_t errlen);

/* Messages queued or in flight inside librdkafka. */
int pub_outq_len(const struct publisher *p);

/* Microseconds since a broker last answered: an ack, or the metadata
 * request a probe thread sends when nothing else did for a while. */
int64_t pub_contact_age_us(const struct publisher *p);

/* True when at least one broker connection is up. */
bool pub_broker_up(const struct publisher *p);

/* Figures from librdkafka's statistics (kafka.statistics.interval.ms),
 * each -1 until the first statistics arrive: what a drain waits on. */
struct pub_stats {
	int64_t broker_rtt_us;      /* mean round trip of the brokers up */
	int64_t queue_msgs;         /* messages in the producer's queues */
	int64_t produce_requests;   /* Produce requests sent, all brokers */
	int64_t requests_in_flight; /* sent and not answered, all brokers */
	int64_t batch_msgs;         /* mean messages per batch (last window) */
	int64_t batch_bytes;        /* mean bytes per batch (last window) */
};

void pub_stats(const struct publisher *p, struct pub_stats *out);

/* Errors reported by librdkafka's error callback so far. */
uint64_t pub_error_count(const struct publisher *p);

#ifdef OUTBOX_RELAY_TEST_HOOKS
#include <pthread.h>
/* Test hook: the function pub_new() starts its probe thread with
 * (pthread_create's signature); NULL puts pthread_create back. */
typedef int (*pub_thread_create_fn)(pthread_t *, const pthread_attr_t *,
                                    void *(*)(void *), void *);
void pub_set_thread_create_for_tests(pub_thread_create_fn fn);
#endif

/* Drops everything queued (their reports come back failed) and destroys
 * the producer. */
void pub_free(struct publisher *p);

#endif
