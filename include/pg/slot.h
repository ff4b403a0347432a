/* SPDX-License-Identifier: Apache-2.0 */
/* slot.h -- every SQL statement about the replication slot and the
 * outbox table, and the rules that refuse them.
 *
 * The relay (repl.c), its watchdog and the runbook actions all read the
 * slot's row, judge it, check the outbox table and sample the slot's
 * health here, so a rule has one wording and one answer wherever it is
 * asked. Statements use the simple protocol where a replication
 * connection may run them (slot_read, slot_table_check), and every one
 * is bounded by a deadline (pgutil.h). */
#ifndef RELAY_SLOT_H
#define RELAY_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "lib/common.h"
#include "pg/slot_figures.h"
#include "pg/pgutil.h"
#include "decode/record.h"

/* One row of pg_replication_slots, with the server's WAL position. */
struct slot_row {
	bool exists;
	bool logical;               /* slot_type = 'logical' */
	bool same_db;               /* database = current_database() */
	bool active;
	int active_pid;
	char plugin[64];
	char database[64];
	enum wal_status wal_status;
	bool confirmed_known;       /* confirmed_flush_lsn is NULL once
	                             * invalidated */
	uint64_t restart_lsn;
	uint64_t confirmed_lsn;
	uint64_t current_lsn;       /* pg_current_wal_lsn() */
	int64_t retained_bytes;     /* current - restart_lsn; -1 unknown */
	char user[64];              /* current_user */
	/* The columns of newer versions (health.h SLOT_PG_*): ABSENT, 0 or
	 * "" where the server has none. */
	int server_version;         /* server_version_num */
	enum slot_flag failover;    /* 17 */
	enum slot_flag synced;      /* 17 */
	enum slot_flag conflicting; /* 16 */
	int64_t inactive_since_us;  /* 17; 0 when active or NULL */
	char invalidation_reason[SLOT_REASON_LEN]; /* 17; 15 and 16:
	                             * "wal_removed" when wal_status is lost */
};

/* The select list of slot_read() for a server version (malloc'd, caller
 * frees; lit is the slot name as a literal); exposed for tests. */
char *slot_read_sql(int version, const char *lit);

/* Reads the row of slot name (a row with exists false when there is
 * none). Returns 0, or -1 with st and err filled. */
int slot_read(PGconn *conn, const char *name, int64_t deadline_us,
              struct slot_row *row, struct pgu_status *st, char *err,
              size_t errlen) RELAY_MUSTCHECK;

/* Why a slot is not to be used, in the order they are checked. */
enum slot_refusal {
	SLOT_USABLE = 0,
	SLOT_MISSING,
	SLOT_FOREIGN,               /* physical, or another plugin */
	SLOT_OTHER_DB,
	SLOT_LOST,                  /* invalidated: its WAL is gone, or 18's
	                             * idle_timeout (any invalidation_reason) */
	SLOT_ACTIVE,                /* another process streams from it */
};

/* What an action tolerates besides a usable slot. */
#define SLOT_ALLOW_ACTIVE 0x1       /* reads, and the relay (standby) */
#define SLOT_ALLOW_LOST 0x2         /* --drop-slot */

/* The first rule row breaks. Pure. */
enum slot_refusal slot_judge(const struct slot_row *row, const char *plugin,
                             unsigned allow);

/* The refusal as one sentence: 'replication slot "NAME" <what>', then
 * "; <the way out>" unless fix is false. Pure. */
void slot_refusal_text(enum slot_refusal why, const struct slot_row *row,
                       const char *name, bool fix, char *out, size_t outlen);

/* The two parts on their own, for --check's item and its fix line:
 * '"NAME" <what>' and the way out (static). */
void slot_refusal_what(enum slot_refusal why, const struct slot_row *row,
                       const char *name, char *out, size_t outlen);
const char *slot_refusal_fix(enum slot_refusal why);

/* ---- the outbox table ---- */

enum slot_table_verdict {
	TABLE_OK = 0,
	TABLE_MISSING,              /* no such table */
	TABLE_NOT_TABLE,            /* a partitioned parent, a view, ... */
	TABLE_NO_COLUMN,            /* a configured column is missing */
	TABLE_NO_SCHEMA,            /* schema.*: no such schema */
};

struct slot_table {
	enum slot_table_verdict verdict;
	char what[1024];            /* the finding: "public.x does not exist" */
	char fix[512];              /* the way out ("" when ok) */
	char columns[1024];         /* ok, one table: "id uuid, ..." in the
	                             * configured order; schema.*: "" */
	char payload_type[64];      /* ok, one table: the payload column's
	                             * type name (json, jsonb, text, ...) */
	unsigned extra_present;     /* ok, one table: bit i, the table has
	                             * the spec's col_extra[i] */
	bool notnull[REC_NCOLS];    /* ok, one table: the column is NOT NULL
	                             * (in enum rec_col order), the optional
	                             * flag of a json-schema key or value */
	long tables;                /* ok, schema.*: tables in the schema */
};

/* Checks that the outbox table (or, for outbox.table = schema.*, every
 * ordinary table of the schema) has the configured columns and is an
 * ordinary table. Returns 0 with the verdict in t (a query that worked),
 * or -1 with st and err filled. */
int slot_table_check(PGconn *conn, const struct record_spec *spec,
                     int64_t deadline_us, struct slot_table *t,
                     struct pgu_status *st, char *err,
                     size_t errlen) RELAY_MUSTCHECK;

/* The verdict as the relay logs it: "outbox.table: <what>; <fix>" (or
 * "<key>: ..." for a missing column). Pure. */
void slot_table_text(const struct slot_table *t, char *out, size_t outlen);

/* The refusal of a relkind (pg_class.relkind) as outbox.table: 0 for an
 * ordinary table, else -1 with what and fix filled. Pure. */
int slot_relkind_refusal(char relkind, const char *schema, const char *table,
                         char *what, size_t whatlen, char *fix,
                         size_t fixlen);

/* ---- the slot's health ---- */

/* One watchdog sample: the slot's row, pg_stat_replication_slots, the
 * server's WAL position and settings, the oldest transaction. Ordinary
 * connection only (parameters). Returns 0, or -1 with st and err. */
int slot_sample(PGconn *conn, const char *name, int64_t deadline_us,
                struct slot_figures *f, struct pgu_status *st, char *err,
                size_t errlen) RELAY_MUSTCHECK;

/* The sample's SQL for a server version (malloc'd, caller frees): a
 * column the version lacks is selected as a stand-in. Exposed for
 * tests. */
char *slot_sample_sql(int version);

/* The slot's copy on a standby (slot.standby.conninfo): pg_is_in_recovery(),
 * the replay and receive positions, and the copy's row (synced, failover,
 * confirmed_flush_lsn, restart_lsn, invalidation_reason where the version
 * has them). Ordinary connection only (parameters). Fills the figures of
 * sb and leaves configured, read, reachable, read_at_us and error to the
 * caller. Returns 0, or -1 with st and err. */
int slot_standby_read(PGconn *conn, const char *name, int64_t deadline_us,
                      struct slot_standby *sb, struct pgu_status *st,
                      char *err, size_t errlen) RELAY_MUSTCHECK;

/* Its SQL for a server version (malloc'd, caller frees); exposed for
 * tests. */
char *slot_standby_sql(int version);

/* ---- what the server allows (--check) ---- */

struct slot_server {
	int version_num;            /* server_version_num */
	char version[64];
	char wal_level[32];
	int max_slots, used_slots;  /* max_replication_slots, in use */
	int max_senders, used_senders; /* max_wal_senders, walsenders */
	bool plugin_libs_known;     /* output_plugin_libraries readable */
	char plugin_libs[512];      /* its value */
	char max_slot_wal_keep_size[32];
	bool replication;           /* the role has REPLICATION */
	bool superuser;
	bool read_all_settings;     /* superuser or pg_read_all_settings */
	char user[64];
	/* Failover (17) and the idle timeout (18). */
	bool in_recovery;           /* pg_is_in_recovery(): a standby */
	bool standby_slots_known;   /* synchronized_standby_slots exists (17) */
	char standby_slots[512];    /* its value, as set */
	int64_t idle_timeout_s;     /* idle_replication_slot_timeout (18), s;
	                             * -1 where the server has none */
	char physical[512];         /* physical slots: "a,b" ("" none) */
	char physical_active[512];  /* ... of them, those a standby streams
	                             * from now */
	int slotless_senders;       /* walsenders without a slot: a standby
	                             * streaming with no primary_slot_name */
};

/* synchronized_standby_slots against the physical slots (comma-separated
 * names, as slot_server has them): into missing, the active physical
 * slots it does not name (a standby that may lack what the relay
 * published); into unknown, the names it holds that are no physical slot
 * here (the relay's walsender waits for them); into idle, the names of
 * physical slots no standby streams from now (it waits for those too).
 * Each out is "a, b" or "". Pure. */
void slot_standby_compare(const char *setting, const char *physical,
                          const char *active, char *missing, size_t misslen,
                          char *unknown, size_t unknownlen, char *idle,
                          size_t idlelen);

int slot_server_read(PGconn *conn, int64_t deadline_us, struct slot_server *s,
                     struct pgu_status *st, char *err,
                     size_t errlen) RELAY_MUSTCHECK;

/* ---- changing the slot: only the runbook actions named for it ---- */

/* Whether the slot is to be a failover slot: slot.failover (auto, on,
 * off) on a server of version (server_version_num). auto is on from 17;
 * on before 17 is -1 with err saying so. Returns 0 with *want set, or
 * -1. Pure. */
int slot_failover_wanted(const char *setting, int version, bool *want,
                         char *err, size_t errlen) RELAY_MUSTCHECK;

/* The replication command that creates slot name (exposed for tests):
 * CREATE_REPLICATION_SLOT "name" LOGICAL plugin, no snapshot exported,
 * never TWO_PHASE, with FAILOVER when failover is set (17). */
void slot_create_sql(const char *name, const char *plugin, bool failover,
                     char *out, size_t outlen);

/* Runs slot_create_sql() on a replication connection; the consistent
 * point into cp. Returns 0, or -1 (st: 42710 when it exists). */
int slot_create(PGconn *conn, const char *name, const char *plugin,
                bool failover, int64_t deadline_us, uint64_t *cp,
                struct pgu_status *st, char *err,
                size_t errlen) RELAY_MUSTCHECK;

int slot_drop(PGconn *conn, const char *name, int64_t deadline_us,
              struct pgu_status *st, char *err, size_t errlen) RELAY_MUSTCHECK;

/* pg_replication_slot_advance(name, target); the position the slot
 * moved to into *moved. */
int slot_advance(PGconn *conn, const char *name, uint64_t target,
                 int64_t deadline_us, uint64_t *moved, struct pgu_status *st,
                 char *err, size_t errlen) RELAY_MUSTCHECK;

/* A temporary copy of slot name called copy (gone with the connection),
 * so that a running relay keeps the original. */
int slot_copy_temp(PGconn *conn, const char *name, const char *copy,
                   int64_t deadline_us, struct pgu_status *st, char *err,
                   size_t errlen) RELAY_MUSTCHECK;

/* Creates and drops a TEMPORARY wal2json slot called name: whether the
 * plugin loads and is allowed (st tells why not). */
int slot_try_wal2json(PGconn *conn, const char *name, int64_t deadline_us,
                      struct pgu_status *st, char *err,
                      size_t errlen) RELAY_MUSTCHECK;

/* ---- the publication (slot.plugin = pgoutput) ----
 *
 * pgoutput publishes what a publication selects, on the server: a table
 * left out, a row filter or a column list drops events before the relay
 * sees them, with no error anywhere. So the relay's publication is
 * judged here by the rules of docs/pgoutput.md (wiring plan 8). */

/* What the catalogs say about publication pub and the outbox table (for
 * schema.*: the tables of the schema). */
struct slot_pub {
	bool exists;
	bool pubinsert;
	bool all_tables;            /* FOR ALL TABLES */
	bool covered;               /* it publishes the table; schema.*: FOR
	                             * TABLES IN SCHEMA or FOR ALL TABLES, so
	                             * that a table added later is published */
	char publish[64];           /* "insert, update, ...": what it publishes */
	char owner[64];
	char filtered[160];         /* schema.table with a row filter; "" none */
	char cut_table[160];        /* schema.table whose column list lacks */
	char cut_column[64];        /* ... this spec column; "" none */
};

/* Reads it (simple protocol: a replication connection may run it).
 * Returns 0 with p filled (p->exists false when there is no such
 * publication), or -1 with st and err filled. */
int slot_pub_read(PGconn *conn, const char *pub, const struct record_spec *spec,
                  int64_t deadline_us, struct slot_pub *p,
                  struct pgu_status *st, char *err,
                  size_t errlen) RELAY_MUSTCHECK;

/* Why a publication is not to be used, in the order they are checked. */
enum slot_pub_verdict {
	PUB_OK = 0,
	PUB_MISSING,
	PUB_NO_INSERT,              /* publish does not hold insert */
	PUB_NOT_COVERED,            /* the outbox (schema) is not in it */
	PUB_ROW_FILTER,             /* WHERE: the server drops events */
	PUB_COLUMN_LIST,            /* a spec column is left out */
};

/* The first rule p breaks. Pure. */
enum slot_pub_verdict slot_pub_judge(const struct slot_pub *p);

/* The finding ('"PUB" does not publish public.outbox') and the way out,
 * with the SQL to run. Pure. */
void slot_pub_text(enum slot_pub_verdict v, const struct slot_pub *p,
                   const char *pub, const struct record_spec *spec, char *what,
                   size_t whatlen, char *fix, size_t fixlen);

/* The statement that creates the relay's publication: CREATE PUBLICATION
 * "pub" FOR TABLE "schema"."table" WITH (publish = 'insert'), or FOR
 * TABLES IN SCHEMA for schema.*. Every name is quoted, so that a reserved
 * word or an upper-case name stays one identifier. Pure. */
void slot_pub_create_sql(const char *pub, const struct record_spec *spec,
                         char *out, size_t outlen);

/* Runs slot_pub_create_sql(). Returns 0, or -1 with st (42501: the role
 * may not; 42710: it exists) and err filled. */
int slot_pub_create(PGconn *conn, const char *pub, const struct record_spec *spec,
                    int64_t deadline_us, struct pgu_status *st, char *err,
                    size_t errlen) RELAY_MUSTCHECK;

/* ---- peeking ---- */

/* One row of the peek. Valid during the callback. */
struct slot_peek_row {
	const char *lsn_text;
	uint64_t lsn;
	int64_t xid;                /* -1 when NULL */
	const char *data;           /* the wal2json record, or one pgoutput
	                             * message: binary, not NUL-terminated
	                             * text, read len bytes */
	size_t len;
};

/* Returns 0 to go on, 1 to stop the peek. */
typedef int (*slot_peek_fn)(void *ctx, const struct slot_peek_row *row);

struct slot_peek {
	const char *slot;
	const char *function;       /* ss_peek_function(): one of the two
	                             * peek functions; NULL: the text one */
	const char *options;        /* text[] literal (ss_peek_options()) */
	uint64_t upto_lsn;          /* 0: no bound */
	int64_t upto_nchanges;      /* 0: no bound */
	slot_peek_fn on_row;
	void *ctx;
	/* Out. */
	uint64_t rows;
	bool stopped;               /* on_row asked to stop */
	bool timed_out;             /* statement_timeout (57014) */
	bool busy;                  /* the slot is active elsewhere (55006) */
};

/* Reads pk->slot's pending changes without consuming them, one row at a
 * time (single-row mode), each handed to pk->on_row. The binary function
 * (pgoutput's bytea) is fetched in binary, so data is the message's own
 * bytes. Bounded by the
 * connection's statement_timeout, not a deadline: a large backlog may
 * take long. Returns 0, or -1 with err filled. */
int slot_peek_run(PGconn *conn, struct slot_peek *pk, char *err,
                  size_t errlen) RELAY_MUSTCHECK;

#endif
