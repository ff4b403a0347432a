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

#include "common.h"
#include "config.h"
#include "hist.h"

enum health_state { HEALTH_OK = 0, HEALTH_WARN, HEALTH_CRITICAL, HEALTH_FATAL };

/* "ok", "warn", "critical", "fatal". */
const char *health_state_name(enum health_state s);

/* pg_replication_slots.wal_status. */
enum wal_status {
	WAL_STATUS_UNKNOWN = 0,     /* NULL, "", or a value 15 does not have */
	WAL_STATUS_RESERVED,
	WAL_STATUS_EXTENDED,
	WAL_STATUS_UNRESERVED,
	WAL_STATUS_LOST,            /* invalidated: the WAL it needs is gone */
};

/* The column's text ("" for unknown), and back. */
const char *wal_status_name(enum wal_status w);
enum wal_status wal_status_parse(const char *s);

/* A boolean column of pg_replication_slots that only some versions have
 * (failover, synced: 17; conflicting: 16): ABSENT where the server has
 * no such column, or the value is NULL. */
enum slot_flag { SLOT_FLAG_ABSENT = 0, SLOT_FLAG_FALSE, SLOT_FLAG_TRUE };

/* Server versions (server_version_num) where pg_replication_slots gained
 * the columns the relay reads. */
#define SLOT_PG_CONFLICTING 160000  /* conflicting */
#define SLOT_PG_FAILOVER 170000     /* failover, synced, inactive_since,
                                     * invalidation_reason */
#define SLOT_PG_IDLE_TIMEOUT 180000 /* idle_replication_slot_timeout,
                                     * invalidation_reason idle_timeout */

/* Why the slot was invalidated ("" when it is not): 17's
 * invalidation_reason; on 15 and 16, "wal_removed" when wal_status is
 * lost (the one reason those versions report for a primary's slot). */
#define SLOT_REASON_LEN 32

/* One watchdog sample of the slot and the server (non-replication
 * connection). Byte counts are -1 when unknown (SQL NULL). */
struct slot_figures {
	bool valid;                 /* at least one sample was taken */
	bool slot_exists;
	int64_t sampled_at_us;      /* wall clock of the sample */
	bool active;
	int active_pid;
	uint64_t restart_lsn;
	uint64_t confirmed_flush_lsn;
	uint64_t current_lsn;       /* pg_current_wal_lsn() */
	enum wal_status wal_status;
	int64_t safe_wal_size;      /* bytes; -1 when NULL */
	int64_t max_slot_wal_keep_size; /* bytes; -1 when unlimited */
	int64_t retained_bytes;     /* current - restart_lsn */
	int64_t confirmed_lag_bytes;/* current - confirmed_flush_lsn */
	/* pg_stat_replication_slots */
	int64_t spill_txns, spill_count, spill_bytes;
	int64_t stream_txns, stream_count, stream_bytes;
	int64_t total_txns, total_bytes;
	/* Oldest transaction with an xid (pins restart_lsn); pid 0 if none. */
	int oldest_xact_pid;
	int64_t oldest_xact_age;    /* age(backend_xid), in transactions */
	double oldest_xact_seconds; /* now() - xact_start */
	/* The columns of newer versions (see SLOT_PG_*). */
	int server_version;         /* server_version_num; 0 unknown */
	enum slot_flag failover;    /* 17: the slot is synced to standbys */
	enum slot_flag synced;      /* 17: a standby's copy of a failover slot */
	enum slot_flag conflicting; /* 16: invalidated by a conflict with
	                             * recovery (a standby's logical slot) */
	int64_t inactive_since_us;  /* 17: wall clock the slot went idle;
	                             * 0 when active, NULL or absent */
	char invalidation_reason[SLOT_REASON_LEN]; /* "" when valid */
	int64_t idle_timeout_s;     /* 18: idle_replication_slot_timeout, s;
	                             * 0 off or absent */
};

/* The relay slot's copy on a physical standby that may be promoted
 * (slot.standby.conninfo), read by the watchdog at each sample over a
 * connection of its own. After a failover the relay resumes from this
 * copy, so how far it is behind is what would be published again. */
struct slot_standby {
	bool configured;            /* slot.standby.conninfo is set */
	bool read;                  /* at least one read was attempted */
	bool reachable;             /* the last read worked */
	int64_t read_at_us;         /* wall clock of the last read that worked */
	int server_version;         /* the standby's server_version_num */
	bool in_recovery;           /* pg_is_in_recovery(): still a standby */
	bool slot_exists;
	enum slot_flag synced;      /* 17; ABSENT before or without the slot */
	enum slot_flag failover;    /* 17 */
	uint64_t confirmed_flush_lsn; /* LSN_INVALID: NULL (not sync-ready) */
	uint64_t restart_lsn;
	char invalidation_reason[SLOT_REASON_LEN]; /* 17; "" valid */
	uint64_t replay_lsn;        /* pg_last_wal_replay_lsn() */
	uint64_t receive_lsn;       /* pg_last_wal_receive_lsn() */
	char error[256];            /* why the last read failed; "" */
};

/* How far the standby's copy is behind the primary's slot: the
 * primary's confirmed_flush_lsn minus the copy's, 0 when the copy is
 * ahead (the two are read a moment apart); -1 when either is unknown.
 * Pure. */
int64_t slot_standby_lag(const struct slot_figures *sf,
                         const struct slot_standby *sb);

/* The slot is invalidated (wal_status lost, an invalidation reason, a
 * conflict): its changes can no longer be read. Pure. */
bool slot_figures_invalidated(const struct slot_figures *sf);

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
	uint64_t producer_errors;
	int64_t heartbeat_rtt_us;   /* last heartbeat round trip; -1 none */
	uint64_t heartbeats_seen;
	int64_t kafka_failures;     /* the same transaction failed this many
	                             * times in a row (replaying); 0 none */
	int64_t kafka_failures_max; /* kafka.failure.max.replays */
	uint64_t kafka_failure_lsn; /* that transaction's commit end */
	int64_t broker_rtt_us;      /* librdkafka statistics; -1 unknown */
	int64_t kafka_queue_msgs;   /* librdkafka statistics; -1 unknown */
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
