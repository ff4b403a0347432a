/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c -- the relay's counters and figures: stats lines in the log,
 * the health figures for /readyz and /metrics, and the monitor's turn.
 * Renders r->ctr; the acked side of it is counted here (stats_ack()). */
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "health/monitor.h"
#include "health/notify.h"
#include "relay/relay_int.h"

static void count_topic(struct relay *r, const char *topic)
{
	size_t i;

	for (i = 0; i < r->ctr.ntopics; i++)
		if (strcmp(r->ctr.topics[i], topic) == 0)
			break;
	if (i == r->ctr.ntopics) {
		if (r->ctr.ntopics == 16)
			return; /* labels stay bounded; the totals still count */
		snprintf(r->ctr.topics[i], sizeof(r->ctr.topics[i]), "%s", topic);
		r->ctr.ntopics++;
	}
	r->ctr.topic_events[i]++;
}

/* An event acked in this session; ts is its transaction's commit time
 * (0: unknown). */
void stats_ack(struct relay *r, const struct pub_report *rep, int64_t ts)
{
	r->ctr.n_acked++;
	r->ctr.bytes_acked += rep->bytes;
	r->ctr.last_ack_wall_us = rep->at_wall_us;
	if (ts > 0)
		hist_record(&r->ctr.lat, r->ctr.last_ack_wall_us - ts);
	count_topic(r, rep->topic);
}

void log_stats(struct relay *r, const char *prefix)
{
	struct pub_stats ps;

	if (r->pub != NULL)
		r->kp->stats(r->pub, &r->ctr.kstats);
	ps = r->ctr.kstats;
	log_info("%s: state=%s received=%llu acked=%llu failed=%llu stale=%llu "
	         "skipped=%llu republished=%llu txns=%llu invalid_ops=%llu "
	         "reconnects=%llu inflight=%llu "
	         "inflight_bytes=%llu held=%llu status_updates=%llu "
	         "received_lsn=" LSN_FMT " confirmed_lsn=" LSN_FMT
	         " latency_p50_ms=%.1f latency_p99_ms=%.1f latency_max_ms=%.1f"
	         " wait_pg_ms=%llu wait_kafka_ms=%llu produce_requests=%lld"
	         " requests_in_flight=%lld batch_msgs=%lld",
	         prefix, relay_phase_name(state_phase_of(r->st.conn_state)),
	         (unsigned long long)r->ctr.n_received,
	         (unsigned long long)r->ctr.n_acked,
	         (unsigned long long)r->ctr.n_failed,
	         (unsigned long long)r->ctr.n_stale,
	         (unsigned long long)r->ctr.n_skipped,
	         (unsigned long long)lsn_replayed(&r->lt),
	         (unsigned long long)r->ctr.n_txns,
	         (unsigned long long)r->ctr.n_invalid_ops,
	         (unsigned long long)r->ctr.n_reconnects,
	         (unsigned long long)r->win.events,
	         (unsigned long long)r->win.bytes,
	         (unsigned long long)lsn_held_events(&r->lt),
	         (unsigned long long)r->ctr.n_status,
	         LSN_ARGS(lsn_received_max(&r->lt)),
	         LSN_ARGS(lsn_confirmed(&r->lt)),
	         hist_percentile(&r->ctr.lat, 0.50) / 1000.0,
	         hist_percentile(&r->ctr.lat, 0.99) / 1000.0,
	         r->ctr.lat.max_us / 1000.0,
	         (unsigned long long)(r->ctr.wait_pg_us / 1000),
	         (unsigned long long)(r->ctr.wait_kafka_us / 1000),
	         (long long)ps.produce_requests, (long long)ps.requests_in_flight,
	         (long long)ps.batch_msgs);
	if (r->tx.on)
		log_info("%s: kafka_transactions committed=%llu aborted=%llu "
		         "commit_ms_avg=%.2f", prefix,
		         (unsigned long long)r->tx.n_commits,
		         (unsigned long long)r->tx.n_aborts,
		         r->tx.n_commits ? (double)r->tx.commit_us / 1000.0 /
		                               (double)r->tx.n_commits : 0.0);
}

void fill_figures(struct relay *r, struct relay_figures *f)
{
	memset(f, 0, sizeof(*f));
	f->state = phase_of(r);
	snprintf(f->reason, sizeof(f->reason), "%s", r->reason);
	f->kafka_up = r->pub != NULL && r->kp->broker_up(r->pub);
	f->kafka_contact_age_us =
		r->pub != NULL ? r->kp->contact_age_us(r->pub) : -1;
	f->kafka_stale = f->kafka_contact_age_us >
	                 r->cfg->kafka_contact_timeout_ms * 1000;
	f->pg_rx_age_us = r->have_rs ? now_mono_us() - r->last_rx_us : -1;
	f->pg_stale = r->have_rs &&
	              f->pg_rx_age_us > r->cfg->pg_receive_timeout_ms * 1000 / 2;
	f->received_lsn = lsn_received_max(&r->lt);
	f->confirmable_lsn = lsn_confirmable(&r->lt);
	f->confirmed_lsn = lsn_confirmed(&r->lt);
	f->events_received = r->ctr.n_received;
	f->events_published = r->ctr.n_acked;
	f->events_failed = r->ctr.n_failed;
	f->bytes_published = r->ctr.bytes_acked;
	f->inflight_events = r->win.events;
	f->inflight_bytes = r->win.bytes;
	f->last_ack_us = r->ctr.last_ack_wall_us;
	f->last_confirm_us = r->ctr.last_confirm_wall_us;
	f->oldest_pending_commit_us = lsn_oldest_pending_ts(&r->lt);
	f->reconnects = r->ctr.n_reconnects;
	f->events_republished = lsn_replayed(&r->lt);
	f->poison_parked = r->pz.n_parked;
	f->kafka_txn_committed = r->tx.n_commits;
	f->kafka_txn_aborted = r->tx.n_aborts;
	f->poison_skipped = r->pz.n_skipped;
	f->invalid_ops = r->ctr.n_invalid_ops;
	f->failovers = (uint64_t)lsn_promotions(&r->lt);
	f->producer_errors = r->ctr.kafka_restarts + r->kp->error_count(r->pub);
	f->heartbeat_rtt_us = r->ctr.hb_seen > 0 ? r->ctr.hb_rtt_us : -1;
	f->heartbeats_seen = r->ctr.hb_seen;
	f->kafka_failures = r->bs.count;
	f->kafka_failures_max = r->cfg->kafka_failure_max_replays;
	f->kafka_failure_lsn = r->bs.lsn;
	{
		struct pub_stats ps;
		r->kp->stats(r->pub, &ps);
		f->broker_rtt_us = ps.broker_rtt_us;
		f->kafka_queue_msgs = ps.queue_msgs;
		f->produce_requests = ps.produce_requests;
		f->requests_in_flight = ps.requests_in_flight;
		f->batch_msgs = ps.batch_msgs;
	}
	f->wait_pg_us = (int64_t)r->ctr.wait_pg_us;
	f->wait_kafka_us = (int64_t)r->ctr.wait_kafka_us;
	f->latency = r->ctr.lat;
}

/* A few times a second: health figures out to the endpoint, state
 * changes to the log and the webhook, and a lost slot stops the relay. */
void monitor_turn(struct relay *r, int64_t now)
{
	struct relay_figures f;
	char why[512];
	bool fatal;

	mon_tick(r->mon, now);
	notify_watchdog(now); /* systemd: WATCHDOG=1, the loop turned */
	if (!mon_due(r->mon, now))
		return;
	fill_figures(r, &f);
	notify_figures(&f, now); /* systemd: READY=1 once serving, STATUS= */
	(void)mon_update(r->mon, &f, (const char (*)[128])r->ctr.topics,
	                 r->ctr.topic_events, r->ctr.ntopics, now, &fatal, why,
	                 sizeof(why));
	if (fatal && !relay_stopping(r)) {
		log_error("%s", why);
		snprintf(r->reason, sizeof(r->reason), "slot lost or missing");
		begin_stop(r, RELAY_EXIT_UNAVAILABLE);
	}
}
