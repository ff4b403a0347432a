/* SPDX-License-Identifier: Apache-2.0 */
/* produce.c -- one record to Kafka, counted in the LSN books and the
 * in-flight window: an event (delivery.c) or the dead-letter record that
 * takes its place (poison.c). Both call it, so the one-at-a-time replay
 * and the books treat either the same. Writes r->win and the last
 * event produced (r->pz.sent_*). */
#include <stdio.h>

#include "lib/log.h"
#include "relay/relay_int.h"

/* One record to Kafka: the event's (mark 0), or its dead-letter record
 * (mark DLQ_TOKEN_BIT), which takes the event's place
 * in the tracker and the window. err gets why a record is refused
 * (H_POISON). */
enum handled produce(struct relay *r, const char *topic,
                     const struct rec_str *key, const struct rec_str *value,
                     const struct route_headers *h, size_t bytes,
                     uint64_t mark, char *err, size_t errlen)
{
	uint64_t token;

	/* While a refused batch is replayed, one event at a time, from the
	 * session's start until the watermark is past the batch: the
	 * previous event must be acked (or have failed) first, so a refusal
	 * names its record and nothing after it is published meanwhile. */
	if (r->iso.to != 0 && unreported(r) > 0) {
		r->win.iso_wait = true;
		return H_BLOCKED;
	}
	r->win.iso_wait = false;
	if (!txn_gate(r))
		return H_STOP;
	token = lsn_event(&r->lt, bytes);
	switch (r->kp->send(r->pub, topic, key->ptr, key->len, value->ptr,
	                    value->len, h, token | mark,
	                    err, errlen)) {
	case PUB_SENT:
		r->tx.events++;
		r->ctr.n_received++;
		r->win.events++;
		r->win.bytes += bytes;
		if (mark == 0) {
			r->pz.sent_valid = true;
			/* The key the tracker names its transaction by
			 * (own.end_lsn: the commit end, or pgoutput's commit
			 * LSN), as its events' pg_lsn header has it. */
			r->pz.sent_lsn = r->txn.header_lsn;
			r->pz.sent_ord = r->pz.ord;
		}
		return H_OK;
	case PUB_FULL:
		lsn_event_undo(&r->lt, token, bytes);
		r->win.queue_full = true;
		return H_BLOCKED;
	case PUB_REJECTED:
		lsn_event_undo(&r->lt, token, bytes);
		return H_POISON;
	case PUB_FATAL:
		lsn_event_undo(&r->lt, token, bytes);
		log_error("kafka: produce failed: %s", err);
		session_end(r, true, "produce failed");
		return H_STOP;
	}
	return H_STOP;
}
