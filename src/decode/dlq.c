/* SPDX-License-Identifier: Apache-2.0 */
/* dlq.c -- the dead-letter record's headers (dlq.h). */
#include <stdio.h>
#include <string.h>

#include "decode/dlq.h"

static const char *const stage_name[] = {
	[DLQ_STAGE_DECODE] = "TASK_POLL",
	[DLQ_STAGE_PRODUCE] = "KAFKA_PRODUCE",
	[DLQ_STAGE_SKIP_TXN] = "TASK_POLL",
};

static void kv(struct dlq_record *d, size_t i, const char *name,
               const char *value)
{
	d->kv[i] = (struct route_kv){ name, value,
		                          value != NULL ? strlen(value) : 0 };
}

void dlq_build(struct dlq_record *d, const struct route_headers *orig,
               const struct dlq_cause *c)
{
	int n;

	d->h = *orig;
	/* The event's added headers (d->h.more) are borrowed with it; its
	 * partition is the event topic's, not the dead-letter topic's. */
	d->h.partition = -1;
	/* pg_lsn and pg_xid point into orig's own buffers: written again. */
	n = (int)lsn_format(d->h.lsn_buf, c->commit_lsn);
	d->h.value[ROUTE_H_PG_LSN] = d->h.lsn_buf;
	d->h.len[ROUTE_H_PG_LSN] = (size_t)n;
	d->h.value[ROUTE_H_PG_XID] = NULL;
	d->h.len[ROUTE_H_PG_XID] = 0;
	if (c->xid >= 0) {
		n = (int)i64_format(d->h.xid_buf, c->xid);
		d->h.value[ROUTE_H_PG_XID] = d->h.xid_buf;
		d->h.len[ROUTE_H_PG_XID] = (size_t)n;
	}
	switch (c->stage) {
	case DLQ_STAGE_DECODE:
		snprintf(d->cls, sizeof(d->cls), "outbox_relay.decode");
		break;
	case DLQ_STAGE_PRODUCE:
		snprintf(d->cls, sizeof(d->cls), "outbox_relay.kafka.%s",
		         c->error_name != NULL ? c->error_name : "UNKNOWN");
		break;
	case DLQ_STAGE_SKIP_TXN:
		snprintf(d->cls, sizeof(d->cls), "outbox_relay.skip_transaction");
		break;
	}
	snprintf(d->connector, sizeof(d->connector), "outbox-relay/%s",
	         c->slot != NULL ? c->slot : "");
	snprintf(d->tries, sizeof(d->tries), "%lld", (long long)c->tries);
	kv(d, 0, "__connect.errors.topic",
	   c->topic != NULL && c->topic[0] != '\0' ? c->topic : NULL);
	kv(d, 1, "__connect.errors.connector.name", d->connector);
	kv(d, 2, "__connect.errors.stage", stage_name[c->stage]);
	kv(d, 3, "__connect.errors.exception.class.name", d->cls);
	kv(d, 4, "__connect.errors.exception.message",
	   c->reason != NULL ? c->reason : "");
	kv(d, 5, "outbox.dlq.tries", d->tries);
	d->h.extra = d->kv;
	d->h.n_extra = DLQ_EXTRA;
}

void dlq_build_rec(struct dlq_record *d, const struct record *rec,
                   const struct dlq_cause *c)
{
	struct route_headers h;

	route_headers(&h, rec, c->commit_lsn);
	dlq_build(d, &h, c);
}

const struct route_kv *dlq_header(const struct dlq_record *d,
                                  const char *name)
{
	for (size_t i = 0; i < d->h.n_extra; i++)
		if (strcmp(d->h.extra[i].name, name) == 0)
			return d->h.extra[i].value != NULL ? &d->h.extra[i] : NULL;
	return NULL;
}
