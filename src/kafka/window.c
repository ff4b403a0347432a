/* SPDX-License-Identifier: Apache-2.0 */
/* window.c -- a topic's records from a point in time (window.h): one
 * blocking consumer, a partition at a time, like the slot ledger's
 * reader (ledger.c), started at rd_kafka_offsets_for_times(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "kafka/kafka_conf.h"
#include "kafka/window.h"

struct kw_reader {
	const struct relay_config *cfg;
	struct kc_secrets *secrets;
	rd_kafka_t *rk;
	char last_error[512];       /* redacted */
};

static void on_error(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque)
{
	struct kw_reader *r = opaque;
	char buf[512];

	(void)rk;
	snprintf(buf, sizeof(buf), "%s: %s",
	         rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
	kc_redact(r->secrets, buf, r->last_error, sizeof(r->last_error));
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
	/* A command's client: errors reach on_error, the chatter stays out. */
	(void)rk, (void)level, (void)fac, (void)buf;
}

struct kw_reader *kw_open(const struct relay_config *cfg, char *err,
                          size_t errlen)
{
	struct kw_reader *r = xcalloc(1, sizeof(*r));
	char kerr[512], safe[600];
	rd_kafka_conf_t *kc;

	r->cfg = cfg;
	kc = kc_conf_new(cfg, KC_WINDOW_CONSUMER, NULL, 0, err, errlen);
	if (kc == NULL) {
		free(r);
		return NULL;
	}
	r->secrets = kc_secrets_new(cfg);
	rd_kafka_conf_set_opaque(kc, r);
	rd_kafka_conf_set_error_cb(kc, on_error);
	rd_kafka_conf_set_log_cb(kc, on_log);
	/* rd_kafka_new() takes ownership of kc on success only. */
	r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, kerr, sizeof(kerr));
	if (r->rk == NULL) {
		kc_redact(r->secrets, kerr, safe, sizeof(safe));
		errbuf_set(err, errlen, "creating a Kafka consumer: %s", safe);
		rd_kafka_conf_destroy(kc);
		kc_secrets_free(r->secrets);
		free(r);
		return NULL;
	}
	return r;
}

void kw_close(struct kw_reader *r)
{
	if (r == NULL)
		return;
	rd_kafka_destroy(r->rk);
	kc_secrets_free(r->secrets);
	free(r);
}

static int64_t left_ms(int64_t deadline_us)
{
	int64_t ms = (deadline_us - now_mono_us()) / 1000;

	return ms > 0 ? ms : 0;
}

static void header(rd_kafka_headers_t *h, const char *name, const char **v,
                   size_t *len)
{
	const void *p = NULL;
	size_t n = 0;

	*v = NULL;
	*len = 0;
	if (h != NULL && name != NULL &&
	    rd_kafka_header_get_last(h, name, &p, &n) ==
	        RD_KAFKA_RESP_ERR_NO_ERROR && p != NULL) {
		*v = p;
		*len = n;
	}
}

/* One partition from offset start to the end found now. */
static int read_partition(struct kw_reader *r, rd_kafka_topic_t *rkt,
                          int32_t part, int64_t start, const char *type_header,
                          int64_t deadline_us, kw_record_fn fn, void *ctx,
                          struct kw_stats *st, char *err, size_t errlen)
{
	const char *topic = rd_kafka_topic_name(rkt);
	int64_t lo = 0, hi = 0;
	rd_kafka_resp_err_t kerr;
	int rc = -1;

	/* read_committed: hi is the last stable offset. */
	kerr = rd_kafka_query_watermark_offsets(r->rk, topic, part, &lo, &hi,
	                                        (int)left_ms(deadline_us));
	if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading %s [%d]: %s", topic, (int)part,
		           rd_kafka_err2str(kerr));
		return -1;
	}
	if (start < lo)
		start = lo;
	if (start >= hi)
		return 0;
	if (rd_kafka_consume_start(rkt, part, start) < 0) {
		errbuf_set(err, errlen, "reading %s [%d]: %s", topic, (int)part,
		           rd_kafka_err2str(rd_kafka_last_error()));
		return -1;
	}
	for (;;) {
		rd_kafka_message_t *m = rd_kafka_consume(rkt, part,
		                                         (int)left_ms(deadline_us));
		rd_kafka_headers_t *h = NULL;
		struct kw_record rec;
		rd_kafka_timestamp_type_t tt;
		bool last;

		if (m == NULL) {
			errbuf_set(err, errlen, "reading %s [%d]: timed out at offset "
			           "%lld of %lld%s%s", topic, (int)part, (long long)start,
			           (long long)hi, r->last_error[0] ? "; " : "",
			           r->last_error);
			goto out;
		}
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			rd_kafka_message_destroy(m);
			break;
		}
		if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
			errbuf_set(err, errlen, "reading %s [%d]: %s", topic, (int)part,
			           rd_kafka_err2str(m->err));
			rd_kafka_message_destroy(m);
			goto out;
		}
		memset(&rec, 0, sizeof(rec));
		rec.key = m->key;
		rec.key_len = m->key != NULL ? m->key_len : 0;
		if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
			h = NULL;
		header(h, "id", &rec.id, &rec.id_len);
		header(h, type_header, &rec.type, &rec.type_len);
		rec.ts_ms = rd_kafka_message_timestamp(m, &tt);
		rec.partition = part;
		rec.offset = m->offset;
		start = m->offset + 1;
		fn(ctx, &rec);
		st->records++;
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

int kw_read(struct kw_reader *r, const char *topic, const char *type_header,
            int64_t from_ms, int timeout_ms, kw_record_fn fn, void *ctx,
            struct kw_stats *st, char *err, size_t errlen)
{
	int64_t deadline = now_mono_us() + (int64_t)timeout_ms * 1000;
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_partition_list_t *parts = NULL;
	rd_kafka_topic_t *rkt;
	rd_kafka_resp_err_t kerr;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	r->last_error[0] = '\0';
	rkt = rd_kafka_topic_new(r->rk, topic, NULL);
	if (rkt == NULL) {
		errbuf_set(err, errlen, "topic %s: %s", topic,
		           rd_kafka_err2str(rd_kafka_last_error()));
		return -1;
	}
	kerr = rd_kafka_metadata(r->rk, 0, rkt, &md, (int)left_ms(deadline));
	if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading %s: %s%s%s", topic,
		           rd_kafka_err2str(kerr), r->last_error[0] ? "; " : "",
		           r->last_error);
		goto out;
	}
	if (md->topic_cnt != 1 ||
	    md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
		st->no_topic = true;
		rc = 0;
		goto out;
	}
	if (md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading %s: %s", topic,
		           rd_kafka_err2str(md->topics[0].err));
		goto out;
	}
	st->partitions = md->topics[0].partition_cnt;
	parts = rd_kafka_topic_partition_list_new(st->partitions);
	for (int i = 0; i < st->partitions; i++)
		rd_kafka_topic_partition_list_add(parts, topic,
		                                  md->topics[0].partitions[i].id)
		    ->offset = from_ms;
	/* Each partition's first offset with a timestamp >= from_ms (-1:
	 * none, nothing to read there). */
	kerr = rd_kafka_offsets_for_times(r->rk, parts, (int)left_ms(deadline));
	if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "reading %s: offsets for %lld: %s", topic,
		           (long long)from_ms, rd_kafka_err2str(kerr));
		goto out;
	}
	for (int i = 0; i < parts->cnt; i++) {
		const rd_kafka_topic_partition_t *p = &parts->elems[i];
		if (p->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
			errbuf_set(err, errlen, "reading %s [%d]: offset for %lld: %s",
			           topic, (int)p->partition, (long long)from_ms,
			           rd_kafka_err2str(p->err));
			goto out;
		}
		if (p->offset < 0)
			continue;
		if (read_partition(r, rkt, p->partition, p->offset, type_header,
		                   deadline, fn, ctx, st, err, errlen) < 0)
			goto out;
	}
	rc = 0;
out:
	if (parts != NULL)
		rd_kafka_topic_partition_list_destroy(parts);
	if (md != NULL)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	return rc;
}
