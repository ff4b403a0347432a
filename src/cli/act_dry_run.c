/* SPDX-License-Identifier: Apache-2.0 */
/* act_dry_run.c -- --dry-run: the pending events as the relay would
 * produce them (topic, key, headers, payload), one JSON line each,
 * nothing produced and the slot unmoved. An active slot is peeked
 * through a temporary copy, so a running relay keeps it. */
#include <stdio.h>
#include <unistd.h>

#include "cli_int.h"

struct dry {
	int64_t max_events;
	uint64_t events;
	uint64_t txns;              /* with events */
	bool txn_counted;
	bool poison;
};

static int dry_row(void *ctx, const struct cli_row *row)
{
	struct dry *d = ctx;
	const struct ev_record *er = row->er;
	const struct ev_event *ev = &er->ev;
	json_t *j, *hj;

	if (er->kind == EV_BEGIN)
		d->txn_counted = false;
	if (er->kind == EV_POISON) {
		/* What the relay would fail-stop on, as it would say it. */
		j = json_object();
		json_object_set_new(j, "error", cli_jstr(er->reason));
		json_object_set_new(j, "lsn", cli_jstr(row->raw->lsn_text));
		json_object_set_new(j, "xid", row->raw->xid >= 0
		                                  ? json_integer(row->raw->xid)
		                                  : json_null());
		cli_json_out(j);
		d->poison = true;
		return 1;
	}
	if (er->kind != EV_EVENT)
		return 0;
	j = json_object();
	hj = json_object();
	for (size_t i = 0; i < route_header_count(&ev->headers); i++) {
		const char *name, *value;
		size_t len;
		/* pg_lsn as the relay would send it (event.h: the commit end
		 * with wal2json, the commit LSN with pgoutput); left out rather
		 * than shown as 0/0 when the transaction's start was not seen.
		 * Past the fixed five, NULL is a header with a null value. */
		route_header_at(&ev->headers, i, &name, &value, &len);
		if (i >= ROUTE_H_COUNT && value == NULL)
			json_object_set_new(hj, name, json_null());
		else if (value != NULL &&
		         (i != ROUTE_H_PG_LSN || row->txn->header_lsn != LSN_INVALID))
			json_object_set_new(hj, name, cli_jstrn(value, len));
	}
	json_object_set_new(j, "topic", cli_jstr(ev->topic));
	json_object_set_new(j, "key", cli_jstrn(ev->key.ptr, ev->key.len));
	json_object_set_new(j, "headers", hj);
	/* A tombstone (route.tombstone.on.empty.payload) has no value. */
	json_object_set_new(j, "payload", ev->value.ptr != NULL
	                                      ? cli_jstrn(ev->value.ptr,
	                                                  ev->value.len)
	                                      : json_null());
	cli_json_out(j);
	d->events++;
	if (!d->txn_counted)
		d->txns++;
	d->txn_counted = true;
	return d->events >= (uint64_t)d->max_events ? 1 : 0;
}

int act_dry_run(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct dry d = { 0 };
	struct cli_peek pk = { 0 };
	struct pgu_status st;
	struct slot_row s;
	char err[1400], copy[64] = "";
	int64_t timeout = a->timeout_ms > 0 ? a->timeout_ms : 60000;
	PGconn *conn;
	int rc;

	d.max_events = a->max_events > 0 ? a->max_events : 1000;
	conn = cli_open_slot(cfg, false, timeout, SLOT_ALLOW_ACTIVE, &s, &rc);
	if (conn == NULL)
		return rc;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (s.active) {
		snprintf(copy, sizeof(copy), "outbox_relay_dry_run_%d", (int)getpid());
		if (slot_copy_temp(conn, name, copy, cli_deadline(), &st, err,
		                   sizeof(err)) < 0) {
			cli_err("slot \"%s\": %s", name, err);
			goto out;
		}
		cli_err("dry-run: slot \"%s\" is active for PID %d: peeking at a "
		        "temporary copy \"%s\"", name, s.active_pid, copy);
	}
	pk.slot = copy[0] ? copy : name;
	pk.upto_lsn = s.current_lsn; /* what was committed when we started */
	pk.upto_nchanges = d.max_events * 4 + 1000;
	pk.on_row = dry_row;
	pk.ctx = &d;
	if (cli_peek_run(conn, cfg, &pk, err, sizeof(err)) < 0) {
		cli_err("%s%s", err, pk.timed_out ? " (raise --timeout-ms)" : "");
		goto out;
	}
	if (d.poison) {
		cli_err("dry-run: the relay would fail-stop at the event above "
		        "(exit 65); %llu events before it", (unsigned long long)d.events);
		rc = RELAY_EXIT_DATAERR;
		goto out;
	}
	cli_err("dry-run: %llu event%s in %llu transaction%s from slot \"%s\" "
	        "(confirmed_flush_lsn " LSN_FMT ", WAL at " LSN_FMT ")%s; nothing "
	        "was produced and the slot did not move",
	        (unsigned long long)d.events, cli_pl(d.events),
	        (unsigned long long)d.txns, cli_pl(d.txns), name,
	        LSN_ARGS(s.confirmed_lsn), LSN_ARGS(s.current_lsn),
	        pk.stopped ? ": stopped at --max-events"
	        : pk.rows >= (uint64_t)pk.upto_nchanges
	                ? ": stopped after the peek's row limit, more may follow"
	                : "");
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn); /* drops the temporary copy */
	return rc;
}
