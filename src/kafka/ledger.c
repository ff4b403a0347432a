/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.c -- the slot ledger (see ledger.h): record codec, the check,
 * and the short-lived Kafka clients that read and write records.
 *
 * The clients here block (bounded by a timeout): they run at the start
 * of a session and in the runbook CLI, never per event. The relay's own
 * records while it streams go through its producer (relay.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "kafka/kafka_conf.h"
#include "kafka/ledger.h"
#include "kafka/topic_admin.h"
#include "lib/log.h"

int ledger_key(const char *system_id, const char *database, const char *slot,
               char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s/%s", system_id, database, slot);

	return n < 0 || (size_t)n >= outlen ? -1 : n;
}

char *ledger_value(const char *system_id, const char *database,
                   const char *slot, uint64_t lsn, const char *by,
                   const struct ledger_commit *c)
{
	char lsnbuf[32], at[32];
	time_t now = time(NULL);
	struct tm tm;
	json_t *o;
	char *s;

	snprintf(lsnbuf, sizeof(lsnbuf), LSN_FMT, LSN_ARGS(lsn));
	gmtime_r(&now, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "slot", slot,
	              "system_id", system_id, "database", database, "lsn", lsnbuf,
	              "by", by, "at", at);
	if (c != NULL && c->end_lsn != 0) {
		char endbuf[32];
		snprintf(endbuf, sizeof(endbuf), LSN_FMT, LSN_ARGS(c->end_lsn));
		json_object_set_new(o, "commit", json_pack("{s:s, s:I, s:I}",
		                    "end", endbuf, "xid", (json_int_t)c->xid,
		                    "time_us", (json_int_t)c->commit_ts_us));
	}
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL)
		abort(); /* jansson only fails on allocation */
	return s;
}

int ledger_parse(const char *value, size_t len, struct ledger_entry *e)
{
	json_t *o = json_loadb(value, len, 0, NULL);
	const char *lsn, *by, *at;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(o))
		goto out;
	lsn = json_string_value(json_object_get(o, "lsn"));
	by = json_string_value(json_object_get(o, "by"));
	at = json_string_value(json_object_get(o, "at"));
	if (lsn == NULL || lsn_parse(lsn, strlen(lsn), &e->lsn) < 0)
		goto out;
	{
		/* The commit an exactly-once record covers; a record whose
		 * commit does not parse has none (nothing is skipped on it). */
		json_t *c = json_object_get(o, "commit");
		const char *end = json_string_value(json_object_get(c, "end"));
		json_t *xid = json_object_get(c, "xid");
		json_t *ts = json_object_get(c, "time_us");
		if (end != NULL && json_is_integer(xid) && json_is_integer(ts) &&
		    lsn_parse(end, strlen(end), &e->commit.end_lsn) == 0) {
			e->commit.xid = (int64_t)json_integer_value(xid);
			e->commit.commit_ts_us = (int64_t)json_integer_value(ts);
		} else {
			memset(&e->commit, 0, sizeof(e->commit));
		}
	}
	snprintf(e->by, sizeof(e->by), "%s", by ? by : "?");
	snprintf(e->at, sizeof(e->at), "%s", at ? at : "?");
	e->found = true;
	rc = 0;
out:
	json_decref(o);
	return rc;
}

int ledger_check(const struct ledger_entry *e, const char *slot,
                 uint64_t slot_lsn, char *err, size_t errlen)
{
	if (!e->found || slot_lsn <= e->lsn)
		return 0;
	errbuf_set(err, errlen, "replication slot \"%s\" is at " LSN_FMT ", past "
	        LSN_FMT " which the slot ledger last recorded (by %s at %s): it "
	        "was dropped and created again, or moved by something that does "
	        "not record it; events committed between the two may never be "
	        "published. The relay refuses it (runbook: slot moved behind the "
	        "relay's back); if the move was deliberate, record it with "
	        "outbox-relay --accept-slot --yes", slot, LSN_ARGS(slot_lsn),
	        LSN_ARGS(e->lsn), e->by, e->at);
	return -1;
}

/* ---- Kafka clients ---- */

/* What librdkafka's callbacks tell the blocking calls below. */
struct ledger_client {
	const struct relay_config *cfg;
	char last_error[512];
	int dr_err;             /* -1: no report yet */
};

/* librdkafka's texts may quote a property value: secret values go. */
/* Kafka texts can in principle quote a property value: secrets are
 * masked before anything is printed. */
static void mask_secrets(const struct relay_config *cfg, char *buf)
{
	struct kc_secrets *s = kc_secrets_new(cfg);
	size_t n = strlen(buf) + 1;
	char *out = xmalloc(n + 16);

	kc_redact(s, buf, out, n);
	memcpy(buf, out, n);
	free(out);
	kc_secrets_free(s);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct ledger_client *c = opaque;

	(void)rk;
	snprintf(c->last_error, sizeof(c->last_error), "%s: %s",
	         rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
	mask_secrets(c->cfg, c->last_error);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
	/* These clients live for a second: their chatter (a producer
	 * property on a consumer, say) stays out of the relay's log. */
	(void)rk, (void)level, (void)fac, (void)buf;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
	struct ledger_client *c = opaque;

	(void)rk;
	c->dr_err = (int)m->err;
}

static rd_kafka_t *client_new(struct ledger_client *c, rd_kafka_type_t type,
                              const struct kc_extra *extra, size_t n,
                              char *err, size_t errlen)
{
	rd_kafka_conf_t *kc;
	char kerr[512];
	rd_kafka_t *rk;

	kc = kc_conf_new(c->cfg, type == RD_KAFKA_PRODUCER ? KC_LEDGER_PRODUCER
	                                                   : KC_LEDGER_CONSUMER,
	                 extra, n, err, errlen);
	if (kc == NULL)
		return NULL;
	if (type == RD_KAFKA_PRODUCER)
		rd_kafka_conf_set_dr_msg_cb(kc, on_delivery);
	rd_kafka_conf_set_opaque(kc, c);
	rd_kafka_conf_set_error_cb(kc, on_error);
	rd_kafka_conf_set_log_cb(kc, on_log);
	/* rd_kafka_new() takes ownership of kc on success only. */
	rk = rd_kafka_new(type, kc, kerr, sizeof(kerr));
	if (rk == NULL) {
		mask_secrets(c->cfg, kerr);
		errbuf_set(err, errlen, "creating a Kafka client for the slot ledger: %s",
		        kerr);
		rd_kafka_conf_destroy(kc);
	}
	return rk;
}

static int64_t left_ms(int64_t deadline_us)
{
	int64_t ms = (deadline_us - now_mono_us()) / 1000;

	return ms > 0 ? ms : 0;
}

/* Creates the ledger topic: compacted (only the newest record per slot
 * matters), one partition, the broker's default replication factor.
 * Found there already (another relay, a race) is as good. */
static int create_topic(struct ledger_client *c, rd_kafka_t *rk,
                        const char *topic, int64_t deadline_us, char *err,
                        size_t errlen)
{
	/* Segments of an hour: compaction never touches the active one,
	 * and exactly-once writes a record per Kafka transaction (ten a
	 * second by default), a week of which (the broker's segment.ms)
	 * would be millions of records before the first cleaning. */
	static const struct ta_config compact[] = {
		{ "cleanup.policy", "compact" },
		{ "segment.ms", "3600000" },
	};
	const struct ta_topic t = { topic, 1, -1, compact, 2 };
	char why[512];

	switch (ta_create(rk, &t, (int)left_ms(deadline_us), why, sizeof(why))) {
	case TA_CREATED:
		log_info("slot ledger: created topic %s (cleanup.policy=compact, "
		         "segment.ms=3600000)",
		         topic);
		return 0;
	case TA_EXISTED:
		return 0;
	case TA_REFUSED:
	case TA_FAILED:
		break;
	}
	errbuf_set(err, errlen, "slot ledger: %s%s%s", why,
	           c->last_error[0] ? "; " : "", c->last_error);
	return -1;
}

/* The newest record of a key over all partitions. Within a partition
 * the offset orders them; across partitions only the record's time can
 * (a ledger topic made with several partitions, or written by producers
 * that partitioned differently: the newest record is the slot's, not the
 * one on the partition read last). Equal times: the higher position. */
struct newest {
	bool have;
	struct ledger_entry e;
	int64_t ts_ms;          /* CreateTime (-1 when the broker has none) */
};

static void newest_offer(struct newest *n, const struct ledger_entry *e,
                         int64_t ts_ms)
{
	if (!n->have || ts_ms > n->ts_ms ||
	    (ts_ms == n->ts_ms && e->lsn > n->e.lsn)) {
		n->have = true;
		n->e = *e;
		n->ts_ms = ts_ms;
	}
}

/* What a partition holds for a key, as read so far. */
struct found {
	bool seen;
	struct ledger_entry e;
	int64_t ts_ms;
};

/* Reads one partition from offset `from` to its high watermark hi and
 * keeps the last record of key in f (a record that does not parse is
 * someone else's: the last good one is kept rather than trusting it; a
 * tombstone counts, as the slot's record deleted). */
static int read_range(struct ledger_client *c, rd_kafka_topic_t *rkt,
                      int32_t part, int64_t from, int64_t hi, const char *key,
                      struct found *f, int64_t deadline_us, char *err,
                      size_t errlen)
{
	const char *topic = rd_kafka_topic_name(rkt);
	size_t klen = strlen(key);
	int rc = -1;

	if (rd_kafka_consume_start(rkt, part, from) < 0) {
		errbuf_set(err, errlen, "reading the slot ledger %s [%d]: %s", topic,
		        (int)part, rd_kafka_err2str(rd_kafka_last_error()));
		return -1;
	}
	for (;;) {
		rd_kafka_message_t *m = rd_kafka_consume(rkt, part,
		                                         (int)left_ms(deadline_us));
		bool last;

		if (m == NULL) {
			errbuf_set(err, errlen, "reading the slot ledger %s [%d]: timed out "
			        "at offset %lld of %lld%s%s", topic, (int)part,
			        (long long)from, (long long)hi,
			        c->last_error[0] ? "; " : "", c->last_error);
			goto out;
		}
		/* (With read_committed the end is the last stable offset: an
		 * open transaction's records are not read.) */
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			rd_kafka_message_destroy(m);
			break;
		}
		if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
			errbuf_set(err, errlen, "reading the slot ledger %s [%d]: %s", topic,
			        (int)part, rd_kafka_err2str(m->err));
			rd_kafka_message_destroy(m);
			goto out;
		}
		if (m->key_len == klen && memcmp(m->key, key, klen) == 0) {
			struct ledger_entry got;
			rd_kafka_timestamp_type_t tt;
			int64_t mts = rd_kafka_message_timestamp(m, &tt);
			if (m->payload != NULL &&
			    ledger_parse(m->payload, m->len, &got) == 0) {
				f->e = got;
				f->ts_ms = mts;
				f->seen = true;
			} else if (m->payload == NULL) {
				memset(&f->e, 0, sizeof(f->e));
				f->ts_ms = mts;
				f->seen = true;
			}
		}
		last = m->offset >= hi - 1;
		rd_kafka_message_destroy(m);
		if (last)
			break;
	}
	rc = 0;
out:
	rd_kafka_consume_stop(rkt, part);
	return rc;
}

/* Records read from the end of a partition first. The slot's newest
 * record is near the end as a rule: exactly-once writes one with every
 * Kafka transaction, and compaction leaves the active segment (up to
 * segment.ms, a week by default) alone, so the whole partition can hold
 * millions of older ones. */
#define LEDGER_TAIL 4096

/* How often a read held by an open transaction asks again. */
#define LEDGER_HELD_POLL_US 20000

/* The partition's end for a read that misses none of the records
 * written before it began: the last stable offset once it has reached
 * the high watermark seen first. Below it, a transaction still open
 * (another relay's on a shared ledger topic, one killed inside its
 * transaction above all) hides every later record, committed or not,
 * from a read_committed reader: a read that stopped there would take an
 * older record of the slot for its newest, and exactly-once would
 * publish again what Kafka holds (t195 (e): 85 duplicates in 3,699
 * events) or the guard refuse a slot that is where it should be. The
 * relay's own earlier transaction is no such hold: its producer's init
 * aborted it before the read. A live relay's transaction closes within
 * its delivery.transaction.interval.ms; a killed one's when that relay
 * starts again or its transaction.timeout.ms runs out, which the caller
 * outlasts by trying again. */
static int stable_end(rd_kafka_t *rk, rd_kafka_t *rk_all, const char *topic,
                      int32_t part, int64_t *lo, int64_t *hi,
                      int64_t deadline_us, char *err, size_t errlen)
{
	int64_t all_lo = 0, hw = 0, waited_from = 0;
	rd_kafka_resp_err_t kerr;

	kerr = rd_kafka_query_watermark_offsets(rk_all, topic, part, &all_lo,
	                                        &hw, (int)left_ms(deadline_us));
	for (;;) {
		if (kerr == RD_KAFKA_RESP_ERR_NO_ERROR)
			kerr = rd_kafka_query_watermark_offsets(
			    rk, topic, part, lo, hi, (int)left_ms(deadline_us));
		if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
			errbuf_set(err, errlen, "reading the slot ledger %s [%d]: %s",
			           topic, (int)part, rd_kafka_err2str(kerr));
			return -1;
		}
		if (*hi >= hw)
			break;
		if (waited_from == 0)
			waited_from = now_mono_us();
		if (now_mono_us() + LEDGER_HELD_POLL_US > deadline_us) {
			errbuf_set(err, errlen, "reading the slot ledger %s [%d]: an "
			           "open Kafka transaction holds it at offset %lld (%lld "
			           "records to offset %lld not decided yet), so the slot's "
			           "newest record may not be readable; a producer killed "
			           "inside its transaction holds it until it starts "
			           "again or its transaction.timeout.ms runs out",
			           topic, (int)part, (long long)*hi,
			           (long long)(hw - *hi), (long long)hw);
			return -1;
		}
		usleep(LEDGER_HELD_POLL_US);
	}
	if (waited_from != 0)
		log_info("slot ledger %s [%d]: waited %lld ms for an open Kafka "
		         "transaction to end before reading", topic, (int)part,
		         (long long)((now_mono_us() - waited_from) / 1000));
	return 0;
}

/* Offers the partition's newest record of key to best: from its tail
 * first, then, when the tail does not hold one, from its low watermark. */
static int read_partition(struct ledger_client *c, rd_kafka_t *rk,
                          rd_kafka_t *rk_all, rd_kafka_topic_t *rkt,
                          int32_t part, const char *key, struct newest *best,
                          int64_t deadline_us, char *err, size_t errlen)
{
	const char *topic = rd_kafka_topic_name(rkt);
	int64_t lo = 0, hi = 0, from;
	struct found f = { .seen = false, .ts_ms = -1 };

	if (stable_end(rk, rk_all, topic, part, &lo, &hi, deadline_us, err,
	               errlen) < 0)
		return -1;
	if (hi <= lo)
		return 0;
	from = hi - lo > LEDGER_TAIL ? hi - LEDGER_TAIL : lo;
	if (read_range(c, rkt, part, from, hi, key, &f, deadline_us, err,
	               errlen) < 0)
		return -1;
	if (!f.seen && from > lo &&
	    read_range(c, rkt, part, lo, from, key, &f, deadline_us, err,
	               errlen) < 0)
		return -1;
	if (f.seen)
		newest_offer(best, &f.e, f.ts_ms);
	return 0;
}

struct ledger {
	struct ledger_client c;
	rd_kafka_t *rk;         /* read_committed: reads the records */
	rd_kafka_t *rk_all;     /* read_uncommitted: only asks for the high
	                         * watermark (stable_end()) */
};

struct ledger *ledger_open(const struct relay_config *cfg, char *err,
                           size_t errlen)
{
	static const struct kc_extra all[] = {
		{ "isolation.level", "read_uncommitted", true },
	};
	struct ledger *l = xcalloc(1, sizeof(*l));

	l->c.cfg = cfg;
	l->c.dr_err = -1;
	l->rk = client_new(&l->c, RD_KAFKA_CONSUMER, NULL, 0, err, errlen);
	if (l->rk == NULL)
		goto fail;
	l->rk_all = client_new(&l->c, RD_KAFKA_CONSUMER, all, 1, err, errlen);
	if (l->rk_all == NULL)
		goto fail;
	return l;
fail:
	if (l->rk != NULL)
		rd_kafka_destroy(l->rk);
	free(l);
	return NULL;
}

void ledger_close(struct ledger *l)
{
	if (l == NULL)
		return;
	rd_kafka_destroy(l->rk_all);
	rd_kafka_destroy(l->rk);
	free(l);
}

int ledger_read(struct ledger *l, const char *key, bool create,
                struct ledger_entry *e, int timeout_ms, char *err,
                size_t errlen)
{
	const struct relay_config *cfg = l->c.cfg;
	struct ledger_client *cp = &l->c;
	int64_t deadline = now_mono_us() + (int64_t)timeout_ms * 1000;
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt = NULL;
	rd_kafka_resp_err_t kerr;
	rd_kafka_t *rk = l->rk;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	cp->last_error[0] = '\0';
	rkt = rd_kafka_topic_new(rk, cfg->slot_ledger_topic, NULL);
	if (rkt == NULL) {
		errbuf_set(err, errlen, "slot ledger topic %s: %s",
		        cfg->slot_ledger_topic, rd_kafka_err2str(rd_kafka_last_error()));
		goto out;
	}
	kerr = rd_kafka_metadata(rk, 0, rkt, &md, (int)left_ms(deadline));
	if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading the slot ledger %s: %s%s%s",
		        cfg->slot_ledger_topic, rd_kafka_err2str(kerr),
		        cp->last_error[0] ? "; " : "", cp->last_error);
		goto out;
	}
	if (md->topic_cnt != 1 ||
	    md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
		/* First use: nothing recorded yet. */
		e->no_topic = true;
		rc = create ? create_topic(cp, rk, cfg->slot_ledger_topic, deadline,
		                           err, errlen)
		            : 0;
		goto out;
	}
	if (md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading the slot ledger %s: %s",
		        cfg->slot_ledger_topic, rd_kafka_err2str(md->topics[0].err));
		goto out;
	}
	{
		struct newest best = { .have = false };
		for (int i = 0; i < md->topics[0].partition_cnt; i++)
			if (read_partition(cp, rk, l->rk_all, rkt,
			                   md->topics[0].partitions[i].id,
			                   key, &best, deadline, err, errlen) < 0)
				goto out;
		if (best.have)
			*e = best.e;
	}
	rc = 0;
out:
	if (md != NULL)
		rd_kafka_metadata_destroy(md);
	if (rkt != NULL)
		rd_kafka_topic_destroy(rkt);
	return rc;
}

int ledger_write(const struct relay_config *cfg, const char *key,
                 const char *value, int timeout_ms, char *err, size_t errlen)
{
	struct ledger_client c = { .cfg = cfg, .dr_err = -1 };
	int64_t deadline = now_mono_us() + (int64_t)timeout_ms * 1000;
	rd_kafka_resp_err_t kerr;
	rd_kafka_t *rk;
	int rc = -1;

	rk = client_new(&c, RD_KAFKA_PRODUCER, NULL, 0, err, errlen);
	if (rk == NULL)
		return -1;
	kerr = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(cfg->slot_ledger_topic),
	                         RD_KAFKA_V_KEY(key, strlen(key)),
	                         RD_KAFKA_V_VALUE((void *)value, strlen(value)),
	                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
	                         RD_KAFKA_V_END);
	if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "writing the slot ledger %s: %s",
		        cfg->slot_ledger_topic, rd_kafka_err2str(kerr));
		goto out;
	}
	while (c.dr_err < 0 && left_ms(deadline) > 0)
		rd_kafka_poll(rk, (int)(left_ms(deadline) < 100 ? left_ms(deadline)
		                                                : 100));
	if (c.dr_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "writing the slot ledger %s: %s%s%s",
		        cfg->slot_ledger_topic,
		        c.dr_err < 0 ? "no acknowledgement in time"
		                     : rd_kafka_err2str((rd_kafka_resp_err_t)c.dr_err),
		        c.last_error[0] ? "; " : "", c.last_error);
		goto out;
	}
	rc = 0;
out:
	rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_destroy(rk);
	return rc;
}
