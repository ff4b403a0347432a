/* SPDX-License-Identifier: Apache-2.0 */
/* publisher.c -- librdkafka producer with the settings that keep order.
 *
 * Defaults (each overridable through kafka.*, subject to cfg_validate):
 * idempotence on (acks=all, bounded in-flight, ordered retries), Java-
 * compatible murmur2 partitioning, and no message timeout, so a message
 * can never be dropped from the queue and leave a gap behind it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include <jansson.h>

#include "kafka/kafka_conf.h"
#include "lib/log.h"
#include "kafka/publisher.h"
#include "kafka/topic_admin.h"

#ifdef OUTBOX_RELAY_TEST_HOOKS
/* How pub_new() starts its probe thread: a test makes it fail. */
static pub_thread_create_fn thread_create = pthread_create;

void pub_set_thread_create_for_tests(pub_thread_create_fn fn)
{
	thread_create = fn != NULL ? fn : pthread_create;
}
#else
#define thread_create pthread_create
#endif

struct publisher {
	const struct relay_config *cfg; /* borrowed for p's lifetime */
	struct kc_secrets *secrets; /* for redaction; owned */
	rd_kafka_t *rk;
	rd_kafka_queue_t *mainq;
	int evfd[2];            /* librdkafka writes to [1] when reports wait */
	pub_dr_fn dr;
	void *opaque;
	volatile int fatal;     /* set from error_cb (may run on any thread) */
	volatile int brokers_down;
	uint64_t errors;        /* error_cb calls */
	struct pub_stats stat;  /* from stats_cb, on the polling thread */
	char *known[16];        /* topics whose metadata was asked for */
	size_t nknown;

	/* Credentials refused: the current streak of authentication errors
	 * (error_cb, on the polling thread) with no broker answer since it
	 * began. See pub_auth_failed(). */
	unsigned auth_errors;
	int64_t auth_first_us;  /* now_mono_us() of the streak's first error */
	int64_t auth_last_us;   /* ... and of its latest */
	char auth_msg[1024];    /* librdkafka's latest reason, redacted */

	/* Broker contact, for readiness: a SIGSTOPped or wedged broker keeps
	 * its TCP connections, so "connected" proves nothing. */
	_Atomic int64_t last_contact_us; /* now_mono_us() of the last answer */
	pthread_t prober;
	bool prober_started;
	pthread_mutex_t probe_lock;
	pthread_cond_t probe_cond;
	bool probe_stop;

	/* pub_nudge(): the producer's linger, and whether the oldest record
	 * it may still be lingering on followed a quiet period. */
	int64_t linger_us;
	int64_t last_send_us;   /* now_mono_coarse_us() of the latest pub_send() */
	bool quiet_start;
	bool nudge_again;       /* the last nudge's flush window closed with
	                         * records left and nothing produced since */

	/* dr_clock(): the clocks read once per pub_poll(0) (0: not yet). */
	bool in_poll;
	int64_t dr_mono_us, dr_wall_us;
};

/* The probe: when no broker answered for PROBE_IDLE_US, a metadata
 * request (brokers only: one small round trip) every PROBE_PERIOD_US.
 * rd_kafka_metadata() is thread-safe and blocks, hence the thread. */
#define PROBE_PERIOD_US (1000 * 1000)
#define PROBE_IDLE_US (2 * 1000 * 1000)
#define PROBE_TIMEOUT_MS 2000

/* Persistent authentication failure: at least this many errors, the
 * first at least this long ago, and no broker answer since it. After the
 * second identical error librdkafka passes one on only every 30 s, so a
 * higher count would mean a wait of half a minute per error; the time
 * leaves a password rotation (or the broker loading its credentials) a
 * moment to settle, and the metadata probe a few chances to get through. */
#define AUTH_FAIL_MIN_ERRORS 2
#define AUTH_FAIL_MIN_US (10 * 1000 * 1000)

static void *prober_main(void *arg)
{
	struct publisher *p = arg;
	struct timespec ts;

	pthread_mutex_lock(&p->probe_lock);
	while (!p->probe_stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (PROBE_PERIOD_US % 1000000) * 1000;
		ts.tv_sec += PROBE_PERIOD_US / 1000000 + ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		(void)pthread_cond_timedwait(&p->probe_cond, &p->probe_lock, &ts);
		if (p->probe_stop)
			break;
		if (now_mono_us() - atomic_load(&p->last_contact_us) < PROBE_IDLE_US)
			continue;
		pthread_mutex_unlock(&p->probe_lock);
		{
			const struct rd_kafka_metadata *md = NULL;
			if (rd_kafka_metadata(p->rk, 0, NULL, &md, PROBE_TIMEOUT_MS) ==
			    RD_KAFKA_RESP_ERR_NO_ERROR) {
				atomic_store(&p->last_contact_us, now_mono_us());
				rd_kafka_metadata_destroy(md);
			}
		}
		pthread_mutex_lock(&p->probe_lock);
	}
	pthread_mutex_unlock(&p->probe_lock);
	return NULL;
}

static void redact(const struct publisher *p, const char *in, char *out,
                   size_t outlen)
{
	kc_redact(p->secrets, in, out, outlen);
}

/* What each delivery error means. Permanent: the broker (or librdkafka's
 * own check) refuses this record as it is, and replaying it changes
 * nothing; the relay isolates it and fail-stops. Anything not listed is
 * transient: rebuild the producer, replay from the slot (bounded by
 * kafka.failure.max.replays). Each permanent row says what to change. */
static const struct {
	rd_kafka_resp_err_t err;
	enum pub_err_class cls;
	const char *advice;
} err_table[] = {
	{ RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, PUB_ERR_PERMANENT,
	  "raise the topic's max.message.bytes (or the broker's "
	  "message.max.bytes) above the record's size, and kafka.message.max.bytes "
	  "if the producer's own limit is lower" },
	{ RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE, PUB_ERR_PERMANENT,
	  "lower kafka.batch.size below the topic's max.message.bytes, or raise "
	  "that limit" },
	{ RD_KAFKA_RESP_ERR_INVALID_RECORD, PUB_ERR_PERMANENT,
	  "the broker validates records for this topic (a compacted topic needs "
	  "a key, for example): check the topic's configuration" },
	{ RD_KAFKA_RESP_ERR_INVALID_MSG, PUB_ERR_PERMANENT,
	  "the broker found the record corrupt: check kafka.compression.type "
	  "against what the broker supports" },
	{ RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP, PUB_ERR_PERMANENT,
	  "the topic's message.timestamp.difference.max.ms (or the *.before/after "
	  "limits) refuse the record's timestamp: widen them" },
	{ RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, PUB_ERR_PERMANENT,
	  "grant the relay's principal WRITE and DESCRIBE on the topic" },
	{ RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, PUB_ERR_PERMANENT,
	  "grant the relay's principal IDEMPOTENT_WRITE on the cluster (the "
	  "idempotent producer needs it on brokers before 2.8)" },
	{ RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, PUB_ERR_PERMANENT,
	  "create the topic (the broker does not create it by itself: "
	  "auto.create.topics.enable is off), or change route.topic.replacement" },
	{ RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, PUB_ERR_PERMANENT,
	  "create the topic (the broker does not create it by itself: "
	  "auto.create.topics.enable is off), or change route.topic.replacement" },
	{ RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, PUB_ERR_PERMANENT,
	  "the partition does not exist: check the topic" },
	{ RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, PUB_ERR_PERMANENT,
	  "the topic name is not valid: change route.topic.replacement or the "
	  "routing value" },
	{ RD_KAFKA_RESP_ERR_POLICY_VIOLATION, PUB_ERR_PERMANENT,
	  "the broker's topic policy refuses it: create the topic by hand with "
	  "settings the policy allows" },
	{ RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, PUB_ERR_PERMANENT,
	  "the topic's message format is too old for record headers: raise its "
	  "message.format.version" },
	{ RD_KAFKA_RESP_ERR_UNSUPPORTED_COMPRESSION_TYPE, PUB_ERR_PERMANENT,
	  "the broker does not support kafka.compression.type: choose another" },
	{ RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, PUB_ERR_TRANSIENT, "" },
	{ RD_KAFKA_RESP_ERR__PURGE_QUEUE, PUB_ERR_PURGED, "" },
	{ RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, PUB_ERR_PURGED, "" },
};

enum pub_err_class pub_err_classify(int err)
{
	for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
		if ((int)err_table[i].err == err)
			return err_table[i].cls;
	return PUB_ERR_TRANSIENT;
}

bool pub_err_settles(int err)
{
	return err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
}

const char *pub_err_advice(int err)
{
	for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
		if ((int)err_table[i].err == err)
			return err_table[i].advice;
	return "";
}

const char *pub_err_name(int err)
{
	return rd_kafka_err2name((rd_kafka_resp_err_t)err);
}

const char *pub_err_str(int err)
{
	return rd_kafka_err2str((rd_kafka_resp_err_t)err);
}

/* The clock for a delivery report: inside pub_poll(), read once for all
 * the reports one rd_kafka_poll() serves (they were all waiting when it
 * began, and a drain serves thousands a turn); elsewhere (pub_nudge()'s
 * flush waits in between) read each time. */
static int64_t dr_clock(struct publisher *p, int64_t *cache,
                        int64_t (*clock)(void))
{
	if (!p->in_poll)
		return clock();
	if (*cache == 0)
		*cache = clock();
	return *cache;
}

/* Runs on the thread that calls rd_kafka_poll(): the relay's loop. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
	struct publisher *p = opaque;
	struct pub_report rep = {
		.token = (uint64_t)(uintptr_t)m->_private,
		.ok = m->err == RD_KAFKA_RESP_ERR_NO_ERROR,
		.err = (int)m->err,
		.topic = rd_kafka_topic_name(m->rkt),
		.partition = m->partition,
		.event_id = "?",
		.bytes = m->len + m->key_len,
	};
	char why[512], id[128];

	(void)rk;
	if (!rep.ok) {
		const void *v = NULL;
		size_t vlen = 0;
		rd_kafka_headers_t *hdrs = NULL;
		if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
		    rd_kafka_header_get_last(hdrs, "id", &v, &vlen) ==
		        RD_KAFKA_RESP_ERR_NO_ERROR && v != NULL) {
			snprintf(id, sizeof(id), "%.*s", (int)vlen, (const char *)v);
			rep.event_id = id;
		}
		snprintf(why, sizeof(why), "topic %s partition %d event id %s: %s "
		         "(%s, %s)", rep.topic, (int)m->partition, rep.event_id,
		         rd_kafka_err2str(m->err), rd_kafka_err2name(m->err),
		         rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED
		             ? "possibly persisted" : "not persisted");
		rep.errstr = why;
	} else {
		p->brokers_down = 0;
		atomic_store(&p->last_contact_us, dr_clock(p, &p->dr_mono_us, now_mono_us));
	}
	rep.at_wall_us = dr_clock(p, &p->dr_wall_us, now_wall_us);
	p->dr(p->opaque, &rep);
}

/* One more authentication error. A broker answer (an ack, a probe)
 * since the previous one ends the streak: this one starts a new one. */
static void note_auth_error(struct publisher *p, const char *safe)
{
	int64_t now = now_mono_us();

	if (p->auth_errors > 0 &&
	    atomic_load(&p->last_contact_us) > p->auth_last_us)
		p->auth_errors = 0;
	if (p->auth_errors == 0)
		p->auth_first_us = now;
	p->auth_errors++;
	p->auth_last_us = now;
	snprintf(p->auth_msg, sizeof(p->auth_msg), "%s", safe);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct publisher *p = opaque;

	__atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
	char safe[1024];

	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_resp_err_t ferr = rd_kafka_fatal_error(rk, buf, sizeof(buf));
		redact(p, buf, safe, sizeof(safe));
		log_error("kafka: fatal producer error: %s: %s",
		          rd_kafka_err2name(ferr), safe);
		p->fatal = 1;
		return;
	}
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
		p->brokers_down = 1;
	redact(p, reason, safe, sizeof(safe));
	if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION)
		note_auth_error(p, safe);
	log_warn("kafka: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err),
	         safe);
}

/* librdkafka's own log lines, through the relay's logger, at the level
 * kc_log_level() gives (a known-harmless warning at info). */
static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
	enum log_level lvl = kc_log_level(level, fac, buf);
	const struct publisher *p = rd_kafka_opaque(rk);
	char safe[1024];

	if (p == NULL) {
		log_msg(lvl, "kafka: %s: (message withheld: no redaction context)", fac);
		return;
	}
	redact(p, buf, safe, sizeof(safe));
	log_msg(lvl, "kafka: %s: %s", fac, safe);
}

/* librdkafka's statistics JSON (runs inside rd_kafka_poll(), on the
 * loop thread): the producer queue depth, the mean round trip of the
 * brokers that are up, the Produce requests sent and still unanswered,
 * and the mean batch of the last window. Returns 0: librdkafka frees the
 * JSON. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
	struct publisher *p = opaque;
	json_t *root = json_loadb(json, len, 0, NULL);
	json_t *brokers, *b, *topics, *t;
	const char *name;
	int64_t sum = 0, n = 0, req = 0, wait = 0, nb = 0, bm = 0, bb = 0, nt = 0;

	(void)rk;
	if (root == NULL)
		return 0;
	if (json_is_integer(json_object_get(root, "msg_cnt")))
		p->stat.queue_msgs = json_integer_value(json_object_get(root, "msg_cnt"));
	brokers = json_object_get(root, "brokers");
	json_object_foreach(brokers, name, b) {
		json_t *rtt = json_object_get(json_object_get(b, "rtt"), "avg");
		json_t *pr = json_object_get(json_object_get(b, "req"), "Produce");
		const char *state = json_string_value(json_object_get(b, "state"));
		if (json_integer_value(json_object_get(b, "nodeid")) < 0)
			continue; /* the bootstrap entries: no requests of ours */
		req += json_integer_value(pr);
		wait += json_integer_value(json_object_get(b, "waitresp_cnt"));
		nb++;
		if (state != NULL && strcmp(state, "UP") == 0 &&
		    json_is_integer(rtt) && json_integer_value(rtt) > 0) {
			sum += json_integer_value(rtt);
			n++;
		}
	}
	if (n > 0)
		p->stat.broker_rtt_us = sum / n;
	if (nb > 0) {
		p->stat.produce_requests = req;
		p->stat.requests_in_flight = wait;
	}
	/* A topic's window is empty (avg 0) when nothing was produced to it:
	 * those do not count. */
	topics = json_object_get(root, "topics");
	json_object_foreach(topics, name, t) {
		json_t *cnt = json_object_get(json_object_get(t, "batchcnt"), "avg");
		json_t *sz = json_object_get(json_object_get(t, "batchsize"), "avg");
		if (json_integer_value(cnt) > 0) {
			bm += json_integer_value(cnt);
			bb += json_integer_value(sz);
			nt++;
		}
	}
	if (nt > 0) {
		p->stat.batch_msgs = bm / nt;
		p->stat.batch_bytes = bb / nt;
	}
	json_decref(root);
	return 0;
}

struct publisher *pub_new(const struct relay_config *cfg, const char *txn_id,
                          pub_dr_fn dr, void *opaque, char *err,
                          size_t errlen)
{
	struct publisher *p = xcalloc(1, sizeof(*p));
	rd_kafka_conf_t *kc;
	char kerr[512], num[32];
	const char *txn_timeout = cfg_kafka_get(cfg, "transaction.timeout.ms");
	/* librdkafka's queue must hold the relay's whole window, so that
	 * QUEUE_FULL stays an exception rather than the normal brake. A
	 * transactional producer refuses a message timeout (the relay's
	 * default: none) longer than its transaction's: a record not
	 * delivered within the transaction fails it, and the slot replays
	 * the transaction. */
	const struct kc_extra extra[] = {
		{ "queue.buffering.max.messages", num, false },
		{ "transactional.id", txn_id, false },
		{ "message.timeout.ms", txn_timeout ? txn_timeout : "60000", false },
	};

	p->evfd[0] = p->evfd[1] = -1;
	p->stat = (struct pub_stats){ -1, -1, -1, -1, -1, -1 };
	p->cfg = cfg;
	p->secrets = kc_secrets_new(cfg);
	p->dr = dr;
	p->opaque = opaque;
	snprintf(num, sizeof(num), "%lld", (long long)cfg->inflight_max_events + 1024);
	kc = kc_conf_new(cfg, KC_RELAY, extra, txn_id != NULL ? 3 : 1, err,
	                 errlen);
	if (kc == NULL)
		goto fail;
	{
		char v[64];
		size_t vlen = sizeof(v);
		/* linger.ms is an alias of this name; librdkafka's default (5)
		 * if the lookup fails. */
		p->linger_us = 5000;
		if (rd_kafka_conf_get(kc, "queue.buffering.max.ms", v, &vlen) ==
		    RD_KAFKA_CONF_OK)
			p->linger_us = (int64_t)(strtod(v, NULL) * 1000.0);
	}
	rd_kafka_conf_set_dr_msg_cb(kc, on_delivery);
	rd_kafka_conf_set_error_cb(kc, on_error);
	rd_kafka_conf_set_log_cb(kc, on_log);
	rd_kafka_conf_set_stats_cb(kc, on_stats);
	rd_kafka_conf_set_opaque(kc, p);

	/* rd_kafka_new() takes ownership of kc on success only. */
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, kerr, sizeof(kerr));
	if (p->rk == NULL) {
		errbuf_set(err, errlen, "creating the Kafka producer: %s", kerr);
		goto fail;
	}
	kc = NULL;
	if (pipe2(p->evfd, O_NONBLOCK | O_CLOEXEC) < 0) {
		errbuf_set(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	p->mainq = rd_kafka_queue_get_main(p->rk);
	rd_kafka_queue_io_event_enable(p->mainq, p->evfd[1], "1", 1);
	/* Counts as contact until the first probe can tell. */
	atomic_store(&p->last_contact_us, now_mono_us());
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->probe_cond, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&p->probe_lock, NULL);
		/* pthread_create returns its error; errno is not set. */
		int rc = thread_create(&p->prober, NULL, prober_main, p);
		if (rc != 0) {
			errbuf_set(err, errlen, "starting the broker probe: %s",
			           strerror(rc));
			goto fail;
		}
		p->prober_started = true;
	}
	return p;
fail:
	if (kc != NULL)
		rd_kafka_conf_destroy(kc);
	pub_free(p);
	return NULL;
}

/* librdkafka learns a new topic's metadata on its 1 s topic scan, so the
 * first event of each topic would wait up to a second after every start.
 * Asking once, with a short bound, removes that wait; a broker that is
 * down costs at most the bound, once per topic. */
static void warm_topic(struct publisher *p, const char *topic)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt;

	for (size_t i = 0; i < p->nknown; i++)
		if (strcmp(p->known[i], topic) == 0)
			return;
	if (p->nknown == sizeof(p->known) / sizeof(p->known[0]))
		return; /* many topics: the scan handles the rest */
	p->known[p->nknown++] = xstrdup(topic);
	rkt = rd_kafka_topic_new(p->rk, topic, NULL);
	if (rkt == NULL)
		return;
	if (rd_kafka_metadata(p->rk, 0, rkt, &md, 200) == RD_KAFKA_RESP_ERR_NO_ERROR)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
}

enum pub_send_result pub_send(struct publisher *p, const char *topic,
                              const char *key, size_t key_len,
                              const char *value, size_t value_len,
                              const struct route_headers *h, uint64_t token,
                              char *err, size_t errlen)
{
	rd_kafka_headers_t *hdrs;
	rd_kafka_resp_err_t e;
	/* table.fields.additional.placement's partition and
	 * table.field.event.timestamp; by default the partitioner's and the
	 * producer's clock. */
	int32_t partition = h != NULL ? h->partition : RD_KAFKA_PARTITION_UA;
	int64_t timestamp_ms = h != NULL ? h->timestamp_ms : 0;

	/* topic.creation.default.*: the topic is created before anything
	 * asks for its metadata, which a broker with auto.create.topics.
	 * enable would answer by creating it with its own defaults. The
	 * ledger's topic is ledger.c's to create (compacted). A refusal is
	 * for good (this event's topic cannot be had: a poison event, as for
	 * a record the broker refuses); no answer rebuilds and replays. */
	if (strcmp(topic, p->cfg->slot_ledger_topic) != 0) {
		/* The loop waits here: within half of /livez's bound, so that a
		 * broker that does not answer fails the session (rebuild, replay)
		 * instead of the liveness probe restarting the process. */
		int64_t wait_ms = p->cfg->kafka_contact_timeout_ms;
		if (p->cfg->http_livez_timeout_ms / 2 < wait_ms)
			wait_ms = p->cfg->http_livez_timeout_ms / 2;
		switch (ta_ensure(p->rk, p->cfg, topic, (int)wait_ms, err,
		                  errlen)) {
		case TA_CREATED:
		case TA_EXISTED:
			break;
		case TA_REFUSED:
			return PUB_REJECTED;
		case TA_FAILED:
			return PUB_FATAL;
		}
	}
	warm_topic(p, topic);
	hdrs = rd_kafka_headers_new(h != NULL ? route_header_count(h) : 0);
	for (size_t i = 0; h != NULL && i < route_header_count(h); i++) {
		const char *hn, *hv;
		size_t hl;
		if (route_header_at(h, i, &hn, &hv, &hl))
			rd_kafka_header_add(hdrs, hn, -1, hv, (ssize_t)hl);
	}
	/* F_COPY: key and value live in the decoder's buffers, which are
	 * reused for the next record. Headers are owned by librdkafka once
	 * producev succeeds. */
	e = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
	                      RD_KAFKA_V_PARTITION(partition),
	                      RD_KAFKA_V_TIMESTAMP(timestamp_ms),
	                      RD_KAFKA_V_KEY(key, key_len),
	                      RD_KAFKA_V_VALUE((void *)value, value_len),
	                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
	                      RD_KAFKA_V_HEADERS(hdrs),
	                      RD_KAFKA_V_OPAQUE((void *)(uintptr_t)token),
	                      RD_KAFKA_V_END);
	if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
		/* Coarse: the rule is about gaps of linger.ms (20). */
		int64_t now = now_mono_coarse_us();
		if (now - p->last_send_us >= p->linger_us)
			p->quiet_start = true;
		else
			p->nudge_again = false; /* load again: the linger batches */
		p->last_send_us = now;
		return PUB_SENT;
	}
	rd_kafka_headers_destroy(hdrs);
	errbuf_set(err, errlen, "%s", rd_kafka_err2str(e));
	switch (e) {
	case RD_KAFKA_RESP_ERR__QUEUE_FULL:
		return PUB_FULL;
	case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_INVALID_MSG:
	case RD_KAFKA_RESP_ERR__INVALID_ARG:
		return PUB_REJECTED;
	default:
		return PUB_FATAL;
	}
}

void pub_nudge(struct publisher *p, bool force)
{
	if (!force && !p->quiet_start && !p->nudge_again)
		return;
	p->quiet_start = p->nudge_again = false;
	if (rd_kafka_outq_len(p->rk) == 0)
		return;
	/* librdkafka has no "send now" call: flush() marks the producer as
	 * flushing (its broker threads then treat the linger as expired)
	 * for as long as the call lasts, and returns once every report is
	 * in. Bounded, so a slow ack costs the loop a few milliseconds. A
	 * busy machine can close the window before the broker thread has
	 * sent all of a lone transaction (t268 got 13 of 40 events, the rest
	 * a linger later): the next dry turn, woken by the reports of what
	 * went, nudges again, until a window ends with everything acked or
	 * a send that is not a quiet start says the load is back. */
	if (rd_kafka_flush(p->rk, PUB_NUDGE_WAIT_MS) == RD_KAFKA_RESP_ERR__TIMED_OUT)
		p->nudge_again = true;
}

void pub_poll(struct publisher *p, int timeout_ms)
{
	p->in_poll = timeout_ms == 0;
	p->dr_mono_us = p->dr_wall_us = 0;
	rd_kafka_poll(p->rk, timeout_ms);
	p->in_poll = false;
}

int pub_event_fd(const struct publisher *p)
{
	return p ? p->evfd[0] : -1;
}

void pub_event_fd_drain(struct publisher *p)
{
	char buf[256];
	while (read(p->evfd[0], buf, sizeof(buf)) > 0)
		;
}

bool pub_fatal(struct publisher *p, char *err, size_t errlen, int *code)
{
	char buf[512], safe[1024];
	rd_kafka_resp_err_t e;

	if (!p->fatal)
		return false;
	e = rd_kafka_fatal_error(p->rk, buf, sizeof(buf));
	redact(p, buf, safe, sizeof(safe));
	errbuf_set(err, errlen, "fatal producer error %s: %s", rd_kafka_err2name(e),
	        safe);
	if (code != NULL)
		*code = (int)e;
	return true;
}

bool pub_auth_failed(struct publisher *p, char *err, size_t errlen)
{
	int64_t now = now_mono_us();

	if (p->auth_errors == 0)
		return false;
	if (atomic_load(&p->last_contact_us) > p->auth_last_us) {
		p->auth_errors = 0; /* a broker answered: the streak is over */
		return false;
	}
	if (p->auth_errors < AUTH_FAIL_MIN_ERRORS ||
	    now - p->auth_first_us < AUTH_FAIL_MIN_US)
		return false;
	errbuf_set(err, errlen, "the brokers refuse the relay's credentials: %u "
	        "authentication failures in %lld s and no broker answered since "
	        "the first; last: %s; check kafka.sasl.username, "
	        "kafka.sasl.password and kafka.sasl.mechanisms against the "
	        "brokers' users", p->auth_errors,
	        (long long)((now - p->auth_first_us) / 1000000), p->auth_msg);
	return true;
}

int pub_outq_len(const struct publisher *p)
{
	return rd_kafka_outq_len(p->rk);
}

int64_t pub_contact_age_us(const struct publisher *p)
{
	return now_mono_us() - atomic_load(&((struct publisher *)p)->last_contact_us);
}

bool pub_broker_up(const struct publisher *p)
{
	return !p->brokers_down;
}

void pub_stats(const struct publisher *p, struct pub_stats *out)
{
	*out = p != NULL ? p->stat : (struct pub_stats){ -1, -1, -1, -1, -1, -1 };
}

uint64_t pub_error_count(const struct publisher *p)
{
	return p ? __atomic_load_n(&p->errors, __ATOMIC_RELAXED) : 0;
}

/* One librdkafka transaction call's outcome: 0, or -1 with err filled
 * (and the producer marked fatal when librdkafka says so). */
static int txn_result(struct publisher *p, rd_kafka_error_t *e,
                      const char *what, char *err, size_t errlen)
{
	char safe[1024];
	bool fatal;

	if (e == NULL)
		return 0;
	fatal = rd_kafka_error_is_fatal(e);
	redact(p, rd_kafka_error_string(e), safe, sizeof(safe));
	errbuf_set(err, errlen, "%s: %s (%s)%s", what, safe,
	           rd_kafka_error_name(e),
	           rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__FENCED ||
	           rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_PRODUCER_FENCED
	               ? "; another producer with this transactional.id "
	                 "started (the relay restarted, or another one took "
	                 "the slot)" : "");
	if (fatal)
		p->fatal = 1;
	rd_kafka_error_destroy(e);
	return -1;
}

int pub_txn_init(struct publisher *p, int timeout_ms, char *err,
                 size_t errlen)
{
	return txn_result(p, rd_kafka_init_transactions(p->rk, timeout_ms),
	                  "kafka: init_transactions", err, errlen);
}

int pub_txn_begin(struct publisher *p, char *err, size_t errlen)
{
	return txn_result(p, rd_kafka_begin_transaction(p->rk),
	                  "kafka: begin_transaction", err, errlen);
}

int pub_txn_commit(struct publisher *p, int timeout_ms, char *err,
                   size_t errlen)
{
	return txn_result(p, rd_kafka_commit_transaction(p->rk, timeout_ms),
	                  "kafka: commit_transaction", err, errlen);
}

int pub_txn_abort(struct publisher *p, int timeout_ms, char *err,
                  size_t errlen)
{
	return txn_result(p, rd_kafka_abort_transaction(p->rk, timeout_ms),
	                  "kafka: abort_transaction", err, errlen);
}

void pub_free(struct publisher *p)
{
	if (p == NULL)
		return;
	if (p->prober_started) {
		pthread_mutex_lock(&p->probe_lock);
		p->probe_stop = true;
		pthread_cond_signal(&p->probe_cond);
		pthread_mutex_unlock(&p->probe_lock);
		pthread_join(p->prober, NULL); /* at most one probe timeout */
		pthread_cond_destroy(&p->probe_cond);
		pthread_mutex_destroy(&p->probe_lock);
	}
	if (p->rk != NULL) {
		/* Whatever is still queued comes back as failed reports; the
		 * slot replays it. */
		rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		rd_kafka_poll(p->rk, 0);
		if (p->mainq != NULL)
			rd_kafka_queue_destroy(p->mainq);
		rd_kafka_destroy(p->rk);
	}
	kc_secrets_free(p->secrets);
	for (size_t i = 0; i < p->nknown; i++)
		free(p->known[i]);
	if (p->evfd[0] >= 0)
		close(p->evfd[0]);
	if (p->evfd[1] >= 0)
		close(p->evfd[1]);
	free(p);
}
