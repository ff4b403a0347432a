/* SPDX-License-Identifier: Apache-2.0 */
/* health_metrics.c -- the /metrics text: the snapshot in Prometheus text
 * exposition format 0.0.4 (health.h, health_render_metrics()).
 *
 * Apart from health.c for the reason health_json.c is: the rules judge,
 * this file writes families and samples, with the conventions of the
 * format (base units, _total counters, state sets) kept in one place. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health.h"
#include "health_int.h"

/* Prometheus text exposition format 0.0.4: families grouped, # HELP and
 * # TYPE before the first sample, base units, no timestamps. */

#define PFX "outbox_relay_"

struct mbuf {
	char *p;
	size_t len, cap;
};

static void mb_printf(struct mbuf *b, const char *fmt, ...) RELAY_PRINTF(2, 3);

static void mb_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort(); /* a bad format: a bug */
	if ((size_t)n >= b->cap - b->len) {
		while ((size_t)n >= b->cap - b->len)
			b->cap *= 2;
		b->p = xrealloc(b->p, b->cap);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap2);
	}
	va_end(ap2);
	b->len += (size_t)n;
}

static void family(struct mbuf *b, const char *name, const char *type,
                   const char *help)
{
	mb_printf(b, "# HELP " PFX "%s %s\n# TYPE " PFX "%s %s\n", name, help,
	          name, type);
}

/* Shortest of %.15g / %.17g that reads back as the same double. */
static void fmt_double(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	snprintf(buf, len, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, len, "%.17g", v);
}

static void sample_u(struct mbuf *b, const char *name, uint64_t v)
{
	mb_printf(b, PFX "%s %" PRIu64 "\n", name, v);
}

static void sample_i(struct mbuf *b, const char *name, int64_t v)
{
	mb_printf(b, PFX "%s %" PRId64 "\n", name, v);
}

static void sample_d(struct mbuf *b, const char *name, double v)
{
	char num[40];

	fmt_double(num, sizeof(num), v);
	mb_printf(b, PFX "%s %s\n", name, num);
}

/* Label values escape backslash, double quote and newline; s stops at n
 * bytes or at a NUL. */
static void label_value(struct mbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i] != '\0'; i++) {
		const char *esc = s[i] == '\\' ? "\\\\"
		                  : s[i] == '"'  ? "\\\""
		                  : s[i] == '\n' ? "\\n"
		                                 : NULL;
		if (esc != NULL)
			mb_printf(b, "%s", esc);
		else
			mb_printf(b, "%c", s[i]);
	}
}

static const struct {
	const char *le;
	uint64_t us;
} le_bounds[] = {
	{ "0.001", 1000 },     { "0.005", 5000 },     { "0.01", 10000 },
	{ "0.025", 25000 },    { "0.05", 50000 },     { "0.1", 100000 },
	{ "0.25", 250000 },    { "0.5", 500000 },     { "1", 1000000 },
	{ "2.5", 2500000 },    { "5", 5000000 },      { "10", 10000000 },
};

#define NLE (sizeof(le_bounds) / sizeof(le_bounds[0]))

static void latency_histogram(struct mbuf *b, const struct hist *h)
{
	uint64_t cum[NLE] = { 0 };
	const char *n = "commit_to_ack_seconds";

	family(b, n, "histogram",
	       "Commit (in PostgreSQL) to Kafka ack, per event. Derived from a "
	       "log-linear histogram: a recorded value counts toward le only when "
	       "its whole internal bucket (1/8 of a power of two wide) lies at or "
	       "below le, so each bucket count is a lower bound (values up to "
	       "12.5% below le may land in the next bucket); _sum and _count are "
	       "exact.");
	for (unsigned k = 0; k < HIST_BUCKETS; k++) {
		uint64_t up = hist_bucket_upper(k);
		if (h->bucket[k] == 0)
			continue;
		for (size_t i = 0; i < NLE; i++)
			if (up <= le_bounds[i].us)
				cum[i] += h->bucket[k];
	}
	for (size_t i = 0; i < NLE; i++)
		mb_printf(b, PFX "%s_bucket{le=\"%s\"} %" PRIu64 "\n", n,
		          le_bounds[i].le, cum[i] < h->count ? cum[i] : h->count);
	mb_printf(b, PFX "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", n, h->count);
	sample_d(b, "commit_to_ack_seconds_sum", (double)h->sum_us / 1e6);
	sample_u(b, "commit_to_ack_seconds_count", h->count);
}

static void topics(struct mbuf *b, const struct health_snapshot *s)
{
	size_t nt = s->ntopics < 16 ? s->ntopics : 16;

	family(b, "events_published_by_topic_total", "counter",
	       "Events acknowledged by Kafka, per topic (topics seen since start, "
	       "at most 16).");
	for (size_t i = 0; i < nt; i++) {
		size_t len = strnlen(s->topics[i], sizeof(s->topics[i]));
		uint64_t v = s->topic_events[i];
		bool dup = false;
		/* One series per topic, even if the snapshot repeats one. */
		for (size_t j = 0; j < i && !dup; j++)
			dup = strnlen(s->topics[j], sizeof(s->topics[j])) == len &&
			      memcmp(s->topics[j], s->topics[i], len) == 0;
		if (dup)
			continue;
		for (size_t j = i + 1; j < nt; j++)
			if (strnlen(s->topics[j], sizeof(s->topics[j])) == len &&
			    memcmp(s->topics[j], s->topics[i], len) == 0)
				v += s->topic_events[j];
		mb_printf(b, PFX "events_published_by_topic_total{topic=\"");
		label_value(b, s->topics[i], len);
		mb_printf(b, "\"} %" PRIu64 "\n", v);
	}
}

/* The invalidation reasons a server reports, from the version that
 * reports each (15 and 16 only through wal_status lost). */
static const struct {
	const char *name;
	int since;
} inval_reasons[] = {
	{ "wal_removed", 0 },
	{ "rows_removed", SLOT_PG_FAILOVER },
	{ "wal_level_insufficient", SLOT_PG_FAILOVER },
	{ "idle_timeout", SLOT_PG_IDLE_TIMEOUT },
};

#define NREASONS (sizeof(inval_reasons) / sizeof(inval_reasons[0]))

/* The slot's flags of newer versions, one gauge each: absent where the
 * server has no such column. */
struct flag_metric {
	const char *name, *help;
	size_t off;                 /* of the enum slot_flag in slot_figures */
};
static const struct flag_metric flag_metrics[] = {
	{ "slot_failover", "1 when the slot is a failover slot, synchronized to "
	  "standbys (pg_replication_slots.failover, PostgreSQL 17); absent "
	  "before.", offsetof(struct slot_figures, failover) },
	{ "slot_synced", "1 when the slot is a standby's synchronized copy of a "
	  "failover slot (pg_replication_slots.synced, PostgreSQL 17); absent "
	  "before.", offsetof(struct slot_figures, synced) },
	{ "slot_conflicting", "1 when a logical slot on a standby was invalidated "
	  "by a conflict with recovery (pg_replication_slots.conflicting, "
	  "PostgreSQL 16); absent before.",
	  offsetof(struct slot_figures, conflicting) },
};

static void slot_metrics(struct mbuf *b, const struct health_snapshot *s)
{
	static const enum wal_status statuses[] = {
		WAL_STATUS_RESERVED, WAL_STATUS_EXTENDED, WAL_STATUS_UNRESERVED,
		WAL_STATUS_LOST,
	};
	const struct slot_figures *sf = &s->slot;
	bool have = sf->valid && sf->slot_exists;

	/* The gauges below are as of this sample: stale while PostgreSQL
	 * cannot be reached, which this says (and pg_up). */
	family(b, "slot_sample_timestamp_seconds", "gauge",
	       "Unix time of the watchdog's latest successful slot sample; "
	       "absent before the first.");
	if (sf->valid)
		sample_d(b, "slot_sample_timestamp_seconds",
		         (double)sf->sampled_at_us / 1e6);

	family(b, "slot_active", "gauge",
	       "1 when a walsender is streaming from the slot "
	       "(pg_replication_slots.active).");
	if (have)
		sample_u(b, "slot_active", sf->active ? 1 : 0);

	family(b, "slot_wal_status", "gauge",
	       "pg_replication_slots.wal_status: 1 for the current status, 0 for "
	       "the others (extended: warn, unreserved: critical, lost: fatal).");
	if (have)
		for (size_t i = 0; i < 4; i++)
			mb_printf(b, PFX "slot_wal_status{status=\"%s\"} %d\n",
			          wal_status_name(statuses[i]), sf->wal_status == statuses[i]);

	/* Columns of newer versions: absent where the server has none. */
	for (size_t i = 0; i < sizeof(flag_metrics) / sizeof(flag_metrics[0]); i++) {
		const struct flag_metric *m = &flag_metrics[i];
		enum slot_flag v = *(const enum slot_flag *)((const char *)sf + m->off);
		family(b, m->name, "gauge", m->help);
		if (have && v != SLOT_FLAG_ABSENT)
			sample_u(b, m->name, v == SLOT_FLAG_TRUE);
	}
	family(b, "slot_invalidation_reason", "gauge",
	       "pg_replication_slots.invalidation_reason: 1 for the slot's reason, "
	       "0 for the others the server can report (15 and 16: wal_removed, "
	       "from wal_status lost; 18 adds idle_timeout); every one is fatal.");
	if (have)
		for (size_t i = 0; i < NREASONS; i++)
			if (sf->server_version >= inval_reasons[i].since)
				mb_printf(b, PFX "slot_invalidation_reason{reason=\"%s\"} "
				          "%d\n", inval_reasons[i].name,
				          strncmp(sf->invalidation_reason,
				                  inval_reasons[i].name,
				                  sizeof(sf->invalidation_reason)) == 0);
	family(b, "slot_inactive_since_timestamp_seconds", "gauge",
	       "Unix time since which no process streams from the slot "
	       "(pg_replication_slots.inactive_since, PostgreSQL 17); absent "
	       "while it is active and before 17.");
	if (have && sf->inactive_since_us > 0)
		sample_d(b, "slot_inactive_since_timestamp_seconds",
		         (double)sf->inactive_since_us / 1e6);
	family(b, "slot_eta_to_idle_timeout_seconds", "gauge",
	       "Time left until idle_replication_slot_timeout invalidates the "
	       "idle slot (inactive_since + timeout - now; PostgreSQL 18); absent "
	       "while the slot is active or no timeout is set.");
	if (have && s->eval.idle_eta_seconds >= 0)
		sample_d(b, "slot_eta_to_idle_timeout_seconds",
		         s->eval.idle_eta_seconds);

	family(b, "slot_retained_wal_bytes", "gauge",
	       "WAL the slot keeps on the server: pg_current_wal_lsn() - "
	       "restart_lsn.");
	if (have && sf->retained_bytes >= 0)
		sample_i(b, "slot_retained_wal_bytes", sf->retained_bytes);

	family(b, "slot_confirmed_lag_bytes", "gauge",
	       "pg_current_wal_lsn() - confirmed_flush_lsn.");
	if (have && sf->confirmed_lag_bytes >= 0)
		sample_i(b, "slot_confirmed_lag_bytes", sf->confirmed_lag_bytes);

	family(b, "slot_safe_wal_size_bytes", "gauge",
	       "pg_replication_slots.safe_wal_size: WAL that can still be written "
	       "before the slot is lost; absent when max_slot_wal_keep_size is "
	       "unlimited.");
	if (have && sf->safe_wal_size != -1)
		sample_i(b, "slot_safe_wal_size_bytes", sf->safe_wal_size);

	family(b, "slot_wal_growth_bytes_per_second", "gauge",
	       "Growth rate of the retained WAL over the watchdog window; 0 when "
	       "shrinking.");
	if (sf->valid)
		sample_d(b, "slot_wal_growth_bytes_per_second",
		         s->eval.growth_bytes_per_s);

	family(b, "slot_eta_to_loss_seconds", "gauge",
	       "Estimated time until the slot is lost (safe_wal_size / growth) "
	       "or, when max_slot_wal_keep_size is unlimited, until "
	       "watchdog.wal.budget.bytes is used up; absent when not growing or "
	       "unknown.");
	if (s->eval.eta_seconds >= 0)
		sample_d(b, "slot_eta_to_loss_seconds", s->eval.eta_seconds);

	family(b, "slot_oldest_xact_seconds", "gauge",
	       "Duration of the oldest running transaction with an xid, which "
	       "holds the slot back; absent when there is none.");
	if (sf->valid && sf->oldest_xact_pid != 0)
		sample_d(b, "slot_oldest_xact_seconds", sf->oldest_xact_seconds);

	for (size_t i = 0; i < health_nslot_stats; i++) {
		family(b, health_slot_stats[i].metric, "counter", health_slot_stats[i].help);
		if (have && health_slot_stat(sf, i) >= 0)
			sample_i(b, health_slot_stats[i].metric, health_slot_stat(sf, i));
	}
}

/* The relay's plain uint64_t figures, each one sample. */
static const struct {
	const char *name, *type, *help;
	size_t off;
} relay_u64[] = {
#define RU(f, n, t, h) { n, t, h, offsetof(struct relay_figures, f) }
	RU(events_received, "events_received_total", "counter",
	   "Outbox events received from the slot."),
	RU(events_published, "events_published_total", "counter",
	   "Outbox events acknowledged by Kafka."),
	RU(events_failed, "events_failed_total", "counter",
	   "Outbox events whose delivery to Kafka failed."),
	RU(bytes_published, "bytes_published_total", "counter",
	   "Message bytes acknowledged by Kafka."),
	RU(inflight_events, "inflight_events", "gauge",
	   "Events handed to Kafka and not yet acknowledged."),
	RU(inflight_bytes, "inflight_bytes", "gauge",
	   "Bytes of the events in flight."),
	RU(received_lsn, "received_lsn", "gauge",
	   "Last LSN received from the slot, as a byte position."),
	RU(confirmed_lsn, "confirmed_lsn", "gauge",
	   "Last flush LSN confirmed to PostgreSQL, as a byte position."),
	RU(heartbeats_seen, "heartbeats_total", "counter",
	   "Own heartbeats recognised in the stream (never published)."),
	RU(reconnects, "reconnects_total", "counter",
	   "Reconnections of the replication stream."),
	RU(events_republished, "events_republished_total", "counter",
	   "Events produced again after a reconnect that an earlier session "
	   "had produced without an ack (duplicates at most)."),
	RU(poison_parked, "poison_parked_total", "counter",
	   "Poison events parked in the dead-letter topic (poison.policy = "
	   "dlq), each once: its dead-letter record produced."),
	RU(poison_skipped, "poison_skipped_total", "counter",
	   "Poison events skipped (poison.policy = skip)."),
	RU(invalid_ops, "invalid_ops_total", "counter",
	   "Updates of outbox rows met in the stream and logged, never "
	   "published (table.op.invalid.behavior = warn or error)."),
	RU(kafka_txn_committed, "kafka_transactions_committed_total", "counter",
	   "Kafka transactions committed (delivery.guarantee = exactly-once)."),
	RU(kafka_txn_aborted, "kafka_transactions_aborted_total", "counter",
	   "Kafka transactions aborted (exactly-once): their events are "
	   "replayed from the slot; read_committed consumers never see them."),
	RU(failovers, "failovers_total", "counter",
	   "Promotions of a standby followed: new timelines that hold "
	   "everything published."),
	RU(producer_errors, "producer_errors_total", "counter",
	   "Errors reported by the Kafka producer."),
#undef RU
};

/* The relay's int64_t figures, each one sample, absent while negative
 * (unknown); us: microseconds, shown as seconds. */
static const struct {
	const char *name, *type, *help;
	size_t off;
	bool us;
} relay_i64[] = {
#define RI(f, us, n, t, h) { n, t, h, offsetof(struct relay_figures, f), us }
	RI(heartbeat_rtt_us, true, "heartbeat_rtt_seconds", "gauge",
	   "Last heartbeat round trip: written with pg_logical_emit_message() "
	   "to seen in the stream; absent before the first."),
	RI(broker_rtt_us, true, "kafka_broker_rtt_seconds", "gauge",
	   "Broker round trip from librdkafka statistics; absent when "
	   "unknown."),
	RI(kafka_queue_msgs, false, "kafka_queue_messages", "gauge",
	   "Messages in the producer queue (librdkafka msg_cnt); absent "
	   "when unknown."),
	RI(produce_requests, false, "kafka_produce_requests_total", "counter",
	   "Produce requests sent by this session's producer (librdkafka "
	   "statistics); absent when unknown."),
	RI(requests_in_flight, false, "kafka_requests_in_flight", "gauge",
	   "Requests sent to the brokers and not yet answered (librdkafka "
	   "statistics); absent when unknown."),
	RI(batch_msgs, false, "kafka_batch_messages", "gauge",
	   "Mean messages per produced batch over the last statistics "
	   "window; absent when unknown."),
	RI(wait_pg_us, true, "wait_postgres_seconds_total", "counter",
	   "Time the streaming loop slept with its window open: waiting for "
	   "the server to send."),
	RI(wait_kafka_us, true, "wait_kafka_seconds_total", "counter",
	   "Time the streaming loop slept with its window full "
	   "(inflight.max.*): waiting for Kafka's acks."),
#undef RI
};

/* The standby's copy (slot.standby.conninfo): every sample absent when
 * it is not configured. */
static void standby_metrics(struct mbuf *b, const struct health_snapshot *s)
{
	const struct slot_standby *sb = &s->standby;
	bool ok = sb->configured && sb->read && sb->reachable;
	int64_t lag = slot_standby_lag(&s->slot, sb);

	family(b, "slot_standby_up", "gauge",
	       "1 when the watchdog's last read of the slot's copy on the standby "
	       "(slot.standby.conninfo) worked; absent when none is configured.");
	if (sb->configured)
		sample_u(b, "slot_standby_up", ok ? 1 : 0);
	family(b, "slot_standby_synced", "gauge",
	       "1 when the standby holds a synced copy of the slot "
	       "(pg_replication_slots.synced there, PostgreSQL 17), 0 when the "
	       "copy is missing or not synced; absent when unknown.");
	if (ok && sb->server_version >= SLOT_PG_FAILOVER &&
	    (!sb->slot_exists || sb->synced != SLOT_FLAG_ABSENT))
		sample_u(b, "slot_standby_synced",
		         sb->slot_exists && sb->synced == SLOT_FLAG_TRUE);
	family(b, "slot_standby_lag_bytes", "gauge",
	       "The slot's confirmed_flush_lsn minus its standby copy's: what a "
	       "relay would publish again after a failover to the standby; "
	       "absent when unknown.");
	if (ok && lag >= 0)
		sample_i(b, "slot_standby_lag_bytes", lag);
}

/* The relay's state as a Prometheus state set: one series per state,
 * exactly one of them 1. */
static void relay_state_set(struct mbuf *b, const struct relay_figures *rf)
{
	static const char *const series[] = { "streaming", "standby", "backoff",
		                              "stopped" };
	/* The series each phase sets; -1 none (no relay in this process). */
	static const int of_phase[HEALTH_NPHASES] = {
		[RELAY_PHASE_NOT_RUNNING] = -1,
		[RELAY_PHASE_CONNECTING] = 2,
		[RELAY_PHASE_BACKOFF] = 2,
		[RELAY_PHASE_STANDBY] = 1,
		[RELAY_PHASE_STREAMING] = 0,
		[RELAY_PHASE_STOPPING] = 3,
		[RELAY_PHASE_FAIL_STOPPED] = 3,
	};
	int on = (size_t)rf->state < HEALTH_NPHASES ? of_phase[rf->state] : -1;

	family(b, "state", "gauge",
	       "The relay's state, one series per state (a state set): "
	       "streaming, standby (another process holds the slot), backoff "
	       "(connecting or waiting to), stopped (stopping or fail-stopped).");
	for (int i = 0; i < (int)(sizeof(series) / sizeof(series[0])); i++)
		mb_printf(b, PFX "state{state=\"%s\"} %d\n", series[i], i == on);
}

char *health_render_metrics(const struct health_snapshot *s)
{
	const struct relay_figures *rf = &s->relay;
	struct mbuf b;

	b.cap = 8192;
	b.len = 0;
	b.p = xmalloc(b.cap);
	b.p[0] = '\0';

	family(&b, "build_info", "gauge",
	       "Always 1; the version is in the label.");
	mb_printf(&b, PFX "build_info{version=\"");
	label_value(&b, RELAY_VERSION, sizeof(RELAY_VERSION));
	mb_printf(&b, "\"} 1\n");

	family(&b, "health_state", "gauge",
	       "Slot health: 0 ok, 1 warn, 2 critical, 3 fatal (the reasons are "
	       "in /slot).");
	sample_u(&b, "health_state", (uint64_t)s->eval.state);

	family(&b, "kafka_up", "gauge",
	       "1 when the Kafka producer reports a broker up and one answered "
	       "within kafka.contact.timeout.ms.");
	sample_u(&b, "kafka_up", rf->kafka_up && !rf->kafka_stale ? 1 : 0);
	family(&b, "kafka_contact_age_seconds", "gauge",
	       "Time since a Kafka broker last answered (an ack or the relay's "
	       "metadata probe); absent without a producer.");
	if (rf->kafka_contact_age_us >= 0)
		sample_d(&b, "kafka_contact_age_seconds",
		         (double)rf->kafka_contact_age_us / 1e6);
	family(&b, "pg_up", "gauge",
	       "1 when PostgreSQL answers: the replication stream sent something "
	       "within half of pg.receive.timeout.ms, or (without a stream) the "
	       "watchdog's last sample worked.");
	sample_u(&b, "pg_up", rf->pg_up ? 1 : 0);
	relay_state_set(&b, rf);

	for (size_t i = 0; i < sizeof(relay_u64) / sizeof(relay_u64[0]); i++) {
		uint64_t v;
		memcpy(&v, (const char *)rf + relay_u64[i].off, sizeof(v));
		family(&b, relay_u64[i].name, relay_u64[i].type, relay_u64[i].help);
		sample_u(&b, relay_u64[i].name, v);
	}
	topics(&b, s);

	family(&b, "last_ack_timestamp_seconds", "gauge",
	       "Unix time of the last Kafka ack; absent before the first.");
	if (rf->last_ack_us > 0)
		sample_d(&b, "last_ack_timestamp_seconds",
		         (double)rf->last_ack_us / 1e6);

	family(&b, "outbox_lag_seconds", "gauge",
	       "Age of the oldest event received and not yet acknowledged (from "
	       "its commit time); 0 when none is pending.");
	sample_d(&b, "outbox_lag_seconds", s->eval.outbox_lag_seconds);
	family(&b, "since_confirm_seconds", "gauge",
	       "Time since the confirmed LSN last moved, while events are in "
	       "flight; 0 otherwise.");
	sample_d(&b, "since_confirm_seconds", s->eval.since_confirm_seconds);

	latency_histogram(&b, &rf->latency);

	for (size_t i = 0; i < sizeof(relay_i64) / sizeof(relay_i64[0]); i++) {
		int64_t v;
		memcpy(&v, (const char *)rf + relay_i64[i].off, sizeof(v));
		family(&b, relay_i64[i].name, relay_i64[i].type, relay_i64[i].help);
		if (v < 0)
			continue;
		if (relay_i64[i].us)
			sample_d(&b, relay_i64[i].name, (double)v / 1e6);
		else
			sample_i(&b, relay_i64[i].name, v);
	}

	slot_metrics(&b, s);
	standby_metrics(&b, s);
	return b.p;
}
