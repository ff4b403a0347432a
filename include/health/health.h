/* SPDX-License-Identifier: Apache-2.0 */
/* health.h -- slot health: the figures, the thresholds, the states, and
 * their renderings for the HTTP endpoint (/slot JSON, /metrics text).
 *
 * Pure: every function here works on values passed in; nothing does I/O.
 * The relay loop fills a struct health_snapshot, the HTTP thread renders
 * a copy of it. */
#ifndef RELAY_HEALTH_H
#define RELAY_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "pg/slot_figures.h"
#include "lib/config.h"
#include "lib/hist.h"

enum health_state { HEALTH_OK = 0, HEALTH_WARN, HEALTH_CRITICAL, HEALTH_FATAL };

/* "ok", "warn", "critical", "fatal". */
const char *health_state_name(enum health_state s);

/* What the relay loop is doing: the one list /readyz, /slot, /metrics
 * and --slot-status judge it by. */
enum relay_phase {
	RELAY_PHASE_NOT_RUNNING = 0, /* no relay in this process (--slot-status) */
	RELAY_PHASE_CONNECTING,
	RELAY_PHASE_BACKOFF,
	RELAY_PHASE_STANDBY,        /* another process holds the slot */
	RELAY_PHASE_STREAMING,
	RELAY_PHASE_STOPPING,
	RELAY_PHASE_FAIL_STOPPED,   /* stopping on a poison event: exit 65 */
};

/* "not running", "connecting", ..., "fail-stopped" ("?" out of range),
 * and back (RELAY_PHASE_NOT_RUNNING for an unknown name). */
const char *relay_phase_name(enum relay_phase p);
enum relay_phase relay_phase_parse(const char *s);

/* What the relay loop knows about itself. */
struct relay_figures {
	enum relay_phase state;
	char reason[256];           /* why not streaming; "" when streaming */
	bool kafka_up;
	int64_t kafka_contact_age_us; /* since the last answer of a broker
	                             * (ack or metadata probe); -1 no producer */
	bool kafka_stale;           /* ... beyond kafka.contact.timeout.ms */
	int64_t pg_rx_age_us;       /* since the last frame of the replication
	                             * stream while reading; -1 no session */
	bool pg_stale;              /* ... beyond pg.receive.timeout.ms / 2 */
	bool pg_up;                 /* set by the monitor: the stream answers,
	                             * or the watchdog's last sample worked */
	uint64_t received_lsn;
	uint64_t confirmable_lsn;   /* watermark: acked prefix */
	uint64_t confirmed_lsn;     /* last flush LSN sent */
	uint64_t events_received;
	uint64_t events_published;  /* acked by Kafka */
	uint64_t events_failed;
	uint64_t bytes_published;
	uint64_t inflight_events;
	uint64_t inflight_bytes;
	int64_t last_ack_us;        /* wall clock; 0 never */
	int64_t last_confirm_us;    /* wall clock of the last confirm that moved */
	int64_t oldest_pending_commit_us; /* commit time of the oldest event
	                             * received and not acked; 0 when none */
	uint64_t reconnects;
	uint64_t events_republished; /* produced again after a reconnect: an
	                             * earlier session produced them without an
	                             * ack (duplicates, at most) */
	uint64_t failovers;         /* promotions followed (new timelines) */
	uint64_t poison_parked;     /* dead-letter records acked
	                             * (poison.policy = dlq) */
	uint64_t poison_skipped;    /* poison events skipped
	                             * (poison.policy = skip) */
	uint64_t kafka_txn_committed; /* exactly-once: Kafka transactions
	                             * committed, aborted */
	uint64_t kafka_txn_aborted;
	uint64_t invalid_ops;       /* updates of outbox rows met, logged
	                             * (table.op.invalid.behavior) */
	uint64_t producer_errors;
	int64_t heartbeat_rtt_us;   /* last heartbeat round trip; -1 none */
	uint64_t heartbeats_seen;
	int64_t kafka_failures;     /* the same transaction failed this many
	                             * times in a row (replaying); 0 none */
	int64_t kafka_failures_max; /* kafka.failure.max.replays */
	uint64_t kafka_failure_lsn; /* that transaction's commit end */
	int64_t broker_rtt_us;      /* librdkafka statistics; -1 unknown */
	int64_t kafka_queue_msgs;   /* librdkafka statistics; -1 unknown */
	int64_t produce_requests;   /* librdkafka statistics; -1 unknown */
	int64_t requests_in_flight; /* librdkafka statistics; -1 unknown */
	int64_t batch_msgs;         /* librdkafka statistics; -1 unknown */
	int64_t wait_pg_us;         /* the loop's waits while streaming: for */
	int64_t wait_kafka_us;      /* the server, and for acks (window full) */
	struct hist latency;        /* commit -> ack, µs */
};

struct health_thresholds {
	int64_t retained_warn_bytes;
	int64_t retained_critical_bytes;
	int64_t lag_warn_bytes;
	int64_t lag_critical_bytes;
	int64_t outbox_lag_warn_s;
	int64_t outbox_lag_critical_s;
	int64_t eta_warn_s;
	int64_t eta_critical_s;
	int64_t wal_budget_bytes;   /* used for the ETA when max_slot_wal_keep_size
	                             * is unlimited; 0 = no budget */
};

/* The thresholds of cfg's watchdog.* keys: the relay's monitor and
 * --slot-status judge a slot alike. */
void health_thresholds_init(struct health_thresholds *th,
                            const struct relay_config *cfg);

/* Retained-WAL growth over a sliding window of samples. */
#define HEALTH_WINDOW_MAX 64
struct health_window {
	int64_t t_us[HEALTH_WINDOW_MAX];
	int64_t bytes[HEALTH_WINDOW_MAX];
	size_t head, len;
	int64_t span_us;            /* samples older than this are dropped */
};

void health_window_init(struct health_window *w, int64_t span_us);
void health_window_add(struct health_window *w, int64_t t_us, int64_t bytes);
/* Bytes per second from the oldest to the newest sample; 0 with fewer
 * than two samples or a shrinking slot. */
double health_window_rate(const struct health_window *w);

#define HEALTH_MAX_REASONS 12
#define HEALTH_REASON_LEN 320

struct health_eval {
	enum health_state state;
	/* Worst first, each one NUL-terminated and whole (a reason is never
	 * joined into a shared buffer and split again: its own "; " stays). */
	size_t nreasons;            /* 0 when ok */
	char reason[HEALTH_MAX_REASONS][HEALTH_REASON_LEN];
	double growth_bytes_per_s;
	double eta_seconds;         /* until the slot is lost or the budget is
	                             * used up; -1 when not growing or unknown */
	double idle_eta_seconds;    /* until idle_replication_slot_timeout
	                             * invalidates the idle slot (18); -1 when
	                             * the slot is active or there is none */
	double outbox_lag_seconds;  /* age of the oldest unacked event */
	double since_confirm_seconds; /* while events are pending; else 0 */
};

/* Appends one reason (tests and tools that build a snapshot by hand);
 * beyond HEALTH_MAX_REASONS it is dropped. */
void health_reason_add(struct health_eval *ev, const char *fmt, ...)
	RELAY_PRINTF(2, 3);

/* The reasons as one line for the log, /readyz and the CLI: joined by
 * "; ", ending in "..." when len is too short. buf is "" when ok. */
void health_reasons_join(const struct health_eval *ev, char *buf, size_t len);

/* Computes state and reasons. now_us is wall clock. */
void health_evaluate(const struct slot_figures *sf,
                     const struct relay_figures *rf,
                     const struct health_thresholds *th,
                     double growth_bytes_per_s, int64_t now_us,
                     struct health_eval *out);

/* The standby's copy, after health_evaluate(): when sb is configured and
 * read, and the copy is missing, not synced, invalidated or unreadable
 * (a failover would lose the slot), a warn reason is appended and the
 * state raised to warn at most. Never more than warn: the relay does not
 * depend on the standby, so neither does /readyz. */
void health_evaluate_standby(const struct slot_standby *sb,
                             struct health_eval *out);

/* Everything the endpoint shows; the HTTP thread renders a copy. */
struct health_snapshot {
	char slot_name[64];
	/* The slot's output plugin ("wal2json", "pgoutput"; "" unknown) and,
	 * for pgoutput, the publication it reads ("" none). */
	char plugin[16];
	char publication[64];
	struct slot_figures slot;
	struct slot_standby standby; /* configured false: no standby */
	struct relay_figures relay;
	struct health_thresholds thresholds;
	struct health_eval eval;
	int64_t now_us;             /* wall clock when the snapshot was made */
	/* Metric label values, low cardinality: the topics seen so far. */
	char topics[16][128];
	uint64_t topic_events[16];
	size_t ntopics;
};

/* Names the slot's plugin in s ("" unknown); the publication is kept only
 * for pgoutput, the one plugin that reads one. */
void health_set_plugin(struct health_snapshot *s, const char *plugin,
                       const char *publication);

/* /slot body. Returns a malloc'd NUL-terminated string (caller frees). */
char *health_render_slot_json(const struct health_snapshot *s, bool pretty);

/* /metrics body, Prometheus text format 0.0.4, prefix outbox_relay_.
 * Returns a malloc'd string (caller frees). */
char *health_render_metrics(const struct health_snapshot *s);

#endif
