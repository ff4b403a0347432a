/* SPDX-License-Identifier: Apache-2.0 */
/* slot_figures.h -- what the server says about a replication slot: the
 * values of pg_replication_slots and its neighbours, as slot_sample.c
 * reads them and health.c judges them.
 *
 * Apart from health.h so that pg/ never includes health/: the rules that
 * judge these figures sit above the code that reads them. */
#ifndef RELAY_SLOT_FIGURES_H
#define RELAY_SLOT_FIGURES_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/common.h"

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

#endif
