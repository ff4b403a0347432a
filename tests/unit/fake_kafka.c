/* SPDX-License-Identifier: Apache-2.0 */
/* fake_kafka.c -- see fake_kafka.h. */
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "fake_kafka.h"

/* The producer handle is the fake itself: one producer at a time, as
 * the loop holds. */
static struct fake_kafka *fk_of(struct kp_producer *p)
{
	return (struct fake_kafka *)p;
}

static const struct fake_kafka *cfk_of(const struct kp_producer *p)
{
	return (const struct fake_kafka *)p;
}

static struct kp_producer *fk_open(void *ctx, const struct relay_config *cfg,
                                   const char *txn_id, pub_dr_fn dr,
                                   void *opaque, char *err, size_t errlen)
{
	struct fake_kafka *fk = ctx;

	(void)cfg;
	snprintf(fk->txn_id, sizeof(fk->txn_id), "%s", txn_id ? txn_id : "");
	fk->txn_open = false;
	if (fk->open_fails) {
		fk->open_fails = false;
		snprintf(err, errlen, "fake: the producer cannot be made");
		return NULL;
	}
	fk->opens++;
	fk->live = fk->opens;
	fk->dr = dr;
	fk->opaque = opaque;
	fk->fatal = false;
	return (struct kp_producer *)fk;
}

const char *fake_header(const struct fake_msg *m, const char *name)
{
	for (size_t i = 0; i < m->nh; i++)
		if (strcmp(m->hname[i], name) == 0)
			return m->hvalue[i];
	return NULL;
}

size_t fake_unreported(const struct fake_kafka *fk)
{
	size_t n = 0;

	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live && !fk->msgs[i].queued &&
		    !fk->msgs[i].reported)
			n++;
	return n;
}

static size_t waiting(const struct fake_kafka *fk)
{
	size_t n = 0;

	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live && !fk->msgs[i].reported)
			n++;
	return n;
}

static enum pub_send_result fk_send(struct kp_producer *p, const char *topic,
                                    const char *key, size_t key_len,
                                    const char *value, size_t value_len,
                                    const struct route_headers *h,
                                    uint64_t token, char *err, size_t errlen)
{
	struct fake_kafka *fk = fk_of(p);
	enum pub_send_result res = fk->next_send;
	struct fake_msg *m;
	uint32_t hash = 2166136261u;

	fk->next_send = PUB_SENT;
	if (res == PUB_SENT && fk->full_at > 0 &&
	    waiting(fk) >= (size_t)fk->full_at)
		res = PUB_FULL;
	if (res == PUB_SENT && fk->n == FAKE_MAX)
		res = PUB_FULL; /* the test's own limit */
	if (res != PUB_SENT) {
		snprintf(err, errlen, "fake: %s",
		         res == PUB_FULL ? "queue full"
		         : res == PUB_REJECTED ? "record refused" : "producer dead");
		return res;
	}
	if (fk->txn_id[0] != '\0' && !fk->txn_open)
		fk->txn_violations++;
	m = &fk->msgs[fk->n++];
	memset(m, 0, sizeof(*m));
	m->token = token;
	m->txn = fk->txn_open ? fk->txn_begins : 0;
	m->producer = fk->live;
	snprintf(m->topic, sizeof(m->topic), "%s", topic);
	snprintf(m->key, sizeof(m->key), "%.*s", (int)key_len,
	         key != NULL ? key : "");
	snprintf(m->id, sizeof(m->id), "?");
	for (size_t i = 0; h != NULL && i < ROUTE_H_COUNT; i++)
		if (h->name[i] != NULL && h->value[i] != NULL &&
		    strcmp(h->name[i], "id") == 0)
			snprintf(m->id, sizeof(m->id), "%.*s", (int)h->len[i],
			         h->value[i]);
	m->key_null = key == NULL;
	snprintf(m->value, sizeof(m->value), "%.*s", (int)value_len,
	         value != NULL ? value : "");
	for (size_t i = 0; h != NULL && i < route_header_count(h); i++) {
		const char *hn, *hv;
		size_t hl;
		if (!route_header_at(h, i, &hn, &hv, &hl) || hv == NULL ||
		    m->nh == 16)
			continue;
		snprintf(m->hname[m->nh], sizeof(m->hname[0]), "%s", hn);
		snprintf(m->hvalue[m->nh], sizeof(m->hvalue[0]), "%.*s", (int)hl,
		         hv);
		m->nh++;
	}
	for (size_t i = 0; i < key_len; i++)
		hash = (hash ^ (unsigned char)key[i]) * 16777619u;
	m->partition = (int32_t)(hash % 3);
	m->bytes = key_len + value_len;
	return PUB_SENT;
}

static void serve(struct fake_kafka *fk, size_t idx, bool ok, int err)
{
	struct fake_msg *m = &fk->msgs[idx];
	char errstr[256];
	struct pub_report rep = {
		.token = m->token,
		.ok = ok,
		.err = ok ? 0 : err,
		.topic = m->topic,
		.partition = m->partition,
		.event_id = m->id,
		.bytes = m->bytes,
		.at_wall_us = 1700000000000000 + (int64_t)idx,
	};

	if (!ok) {
		snprintf(errstr, sizeof(errstr), "topic %s partition %d event id "
		         "%s: %s", m->topic, (int)m->partition, m->id,
		         rd_kafka_err2str((rd_kafka_resp_err_t)err));
		rep.errstr = errstr;
	}
	m->reported = true;
	m->ok = ok;
	m->err = ok ? 0 : err;
	fk->dr(fk->opaque, &rep);
}

/* Serves the queued reports of the live producer; a report queued for
 * a record of an earlier producer was purged with it and is dropped. */
static void serve_due(struct fake_kafka *fk)
{
	size_t n = fk->ndue;

	fk->ndue = 0;
	for (size_t i = 0; i < n; i++) {
		struct fake_msg *m = &fk->msgs[fk->due[i].idx];
		if (m->producer == fk->live && !m->reported)
			serve(fk, fk->due[i].idx, fk->due[i].ok, fk->due[i].err);
	}
}

void fake_report_all(struct fake_kafka *fk)
{
	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live && !fk->msgs[i].queued &&
		    !fk->msgs[i].reported)
			fake_report(fk, i, true, 0);
}

void fake_report(struct fake_kafka *fk, size_t idx, bool ok, int err)
{
	if (idx >= fk->n || fk->msgs[idx].queued || fk->msgs[idx].reported ||
	    fk->ndue == FAKE_MAX)
		return;
	fk->msgs[idx].queued = true;
	fk->due[fk->ndue].idx = idx;
	fk->due[fk->ndue].ok = ok;
	fk->due[fk->ndue].err = err;
	fk->ndue++;
}

static void fk_poll(struct kp_producer *p, int timeout_ms)
{
	(void)timeout_ms;
	fk_of(p)->polls++;
	serve_due(fk_of(p));
}

static void fk_nudge(struct kp_producer *p, bool force)
{
	(void)force;
	fk_of(p)->nudges++;
}

static int fk_event_fd(const struct kp_producer *p)
{
	(void)p;
	return -1;
}

static void fk_event_fd_drain(struct kp_producer *p)
{
	(void)p;
}

static bool fk_fatal(struct kp_producer *p, char *err, size_t errlen,
                     int *code)
{
	struct fake_kafka *fk = fk_of(p);

	if (!fk->fatal)
		return false;
	snprintf(err, errlen, "fake: fatal error: %s",
	         rd_kafka_err2str((rd_kafka_resp_err_t)fk->fatal_err));
	if (code != NULL)
		*code = fk->fatal_err;
	return true;
}

static bool fk_auth_failed(struct kp_producer *p, char *err, size_t errlen)
{
	(void)p;
	(void)err;
	(void)errlen;
	return false;
}

static int fk_depth(const struct kp_producer *p)
{
	return (int)waiting(cfk_of(p));
}

static int64_t fk_contact_age_us(const struct kp_producer *p)
{
	return p != NULL ? 0 : -1;
}

static bool fk_broker_up(const struct kp_producer *p)
{
	return p != NULL;
}

static void fk_stats(const struct kp_producer *p, struct pub_stats *out)
{
	(void)p;
	*out = (struct pub_stats){ -1, -1, -1, -1, -1, -1 };
}

static uint64_t fk_error_count(const struct kp_producer *p)
{
	(void)p;
	return 0;
}

static int fk_txn_init(struct kp_producer *p, int timeout_ms, char *err,
                       size_t errlen)
{
	struct fake_kafka *fk = fk_of(p);

	(void)timeout_ms;
	if (fk->txn_id[0] == '\0')
		fk->txn_violations++;
	if (fk->txn_init_fails > 0) {
		fk->txn_init_fails--;
		snprintf(err, errlen, "fake: init_transactions timed out");
		return -1;
	}
	fk->txn_inits++;
	return 0;
}

static int fk_txn_begin(struct kp_producer *p, char *err, size_t errlen)
{
	struct fake_kafka *fk = fk_of(p);

	(void)err, (void)errlen;
	if (fk->txn_open || fk->txn_inits == 0)
		fk->txn_violations++;
	fk->txn_open = true;
	fk->txn_begins++;
	return 0;
}

/* As librdkafka: the commit waits for every record's report (those
 * queued are served) and fails when one failed or has none coming. */
static int fk_txn_commit(struct kp_producer *p, int timeout_ms, char *err,
                         size_t errlen)
{
	struct fake_kafka *fk = fk_of(p);
	bool bad = fk->txn_commit_fails;

	(void)timeout_ms;
	if (!fk->txn_open)
		fk->txn_violations++;
	serve_due(fk);
	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live &&
		    fk->msgs[i].txn == fk->txn_begins &&
		    (!fk->msgs[i].reported || !fk->msgs[i].ok))
			bad = true;
	fk->txn_commit_fails = false;
	if (bad) {
		snprintf(err, errlen, "fake: commit_transaction failed");
		return -1;
	}
	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live &&
		    fk->msgs[i].txn == fk->txn_begins)
			fk->msgs[i].committed = true;
	fk->txn_open = false;
	fk->txn_commits++;
	return 0;
}

static int fk_txn_abort(struct kp_producer *p, int timeout_ms, char *err,
                        size_t errlen)
{
	struct fake_kafka *fk = fk_of(p);

	(void)timeout_ms, (void)err, (void)errlen;
	fk->txn_open = false;
	fk->txn_aborts++;
	return 0;
}

/* As pub_free(): reports that were ready are served first, then every
 * record left is purged (its report failed, PURGE_QUEUE), all inside
 * this call. */
static void fk_close(struct kp_producer *p)
{
	struct fake_kafka *fk = fk_of(p);

	serve_due(fk);
	for (size_t i = 0; i < fk->n; i++)
		if (fk->msgs[i].producer == fk->live && !fk->msgs[i].reported)
			serve(fk, i, false, RD_KAFKA_RESP_ERR__PURGE_QUEUE);
	fk->closes++;
	fk->live = 0;
	fk->txn_open = false;
	fk->fatal = false;
}

void fake_kafka_init(struct fake_kafka *fk)
{
	memset(fk, 0, sizeof(*fk));
	fk->next_send = PUB_SENT;
	fk->port = (struct kafka_port){
		.ctx = fk,
		.open = fk_open,
		.send = fk_send,
		.poll = fk_poll,
		.nudge = fk_nudge,
		.event_fd = fk_event_fd,
		.event_fd_drain = fk_event_fd_drain,
		.fatal = fk_fatal,
		.auth_failed = fk_auth_failed,
		.depth = fk_depth,
		.contact_age_us = fk_contact_age_us,
		.broker_up = fk_broker_up,
		.stats = fk_stats,
		.error_count = fk_error_count,
		.txn_init = fk_txn_init,
		.txn_begin = fk_txn_begin,
		.txn_commit = fk_txn_commit,
		.txn_abort = fk_txn_abort,
		.close = fk_close,
	};
}
