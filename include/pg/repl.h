/* SPDX-License-Identifier: Apache-2.0 */
/* repl.h -- the logical replication connection (libpq, CopyBoth).
 *
 * Opens a replication=database connection, checks the slot and the
 * outbox table, runs START_REPLICATION and moves CopyData frames:
 * XLogData ('w') and keepalives ('k') in, standby status updates ('r')
 * out. Never creates, drops or advances a slot. */
#ifndef RELAY_REPL_H
#define RELAY_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "pg/slot.h"
#include "decode/stream_spec.h"

struct pg_conn;

/* Why a connect attempt failed; the caller picks the reaction. */
enum repl_err {
	REPL_OK = 0,
	REPL_ERR_TRANSIENT,   /* network, server restart: back off, retry */
	REPL_ERR_SLOT_BUSY,   /* slot active for another process: standby */
	REPL_ERR_FATAL,       /* slot missing, foreign or invalidated: stop */
	REPL_ERR_CONFIG,      /* outbox table or a column does not exist, a
	                       * bad connection option or TLS setup, an
	                       * unknown database */
	REPL_ERR_AUTH,        /* password, pg_hba or the role's rights */
};

/* Ancestors of the server's timeline kept (pgu_timeline_history()). */
#define REPL_HISTORY_MAX 16

struct repl_stream {
	struct pg_conn *conn;   /* owned */
	char *copybuf;          /* owned by libpq until the next read */
	uint64_t system_lsn;    /* IDENTIFY_SYSTEM xlogpos */
	char system_id[32];
	int timeline;
	/* The server's timeline history, read when timeline > 1; unknown
	 * (history_len -1) when it could not be read. */
	struct tli_switch history[REPL_HISTORY_MAX];
	int history_len;
	struct slot_row slot;    /* as read at the start */
	enum repl_err stream_err; /* class of the last repl_read() failure */
	bool connect_failed;      /* repl_start() failed before connecting */
	int64_t timeout_ms;       /* bound of each statement at the start */
	bool in_copy;             /* START_REPLICATION succeeded */
	bool slot_missing;        /* the start failed: no such slot */
	bool table_known;         /* the outbox is one table, read at the
	                           * start: notnull below holds */
	bool notnull[REC_NCOLS];  /* its columns' NOT NULL, enum rec_col
	                           * order (json-schema's optional flags) */
	unsigned extra_present;   /* bit i: it has spec.col_extra[i] */
};

/* Frame read from the stream. Valid until the next repl_read(). */
struct repl_msg {
	char type;              /* 'w' data, 'k' keepalive */
	uint64_t wal_start;     /* 'w': dataStart */
	uint64_t wal_end;       /* 'w' and 'k': server WAL end */
	bool reply_requested;   /* 'k' only */
	const char *data;       /* 'w': one wal2json record */
	size_t len;
};

/* Connects (pgutil.h: bounded by connect_timeout), identifies the
 * system (and reads its timeline history past timeline 1: a failure
 * there leaves the history unknown, not the start failed), checks the slot and table, and starts streaming from the slot
 * (LOGICAL 0/0), each statement bounded by timeout_ms (a server that
 * stops answering is a transient error, not a hang). On failure returns
 * the class and a message in err; rs is left closed. */
enum repl_err repl_start(struct repl_stream *rs, const char *conninfo,
                         const char *slot, const struct stream_spec *ss,
                         int64_t timeout_ms, char *err,
                         size_t errlen) RELAY_MUSTCHECK;

/* The socket to poll(), or -1. */
int repl_socket(const struct repl_stream *rs);

/* Reads input that arrived on the socket into libpq's buffer. Returns 0
 * or -1 on a connection error (err filled). */
int repl_consume(struct repl_stream *rs, char *err, size_t errlen) RELAY_MUSTCHECK;

/* Takes the next complete frame without blocking. Returns 1 with msg
 * filled, 0 when none is buffered, -1 on error or end of stream. */
int repl_read(struct repl_stream *rs, struct repl_msg *msg, char *err,
              size_t errlen) RELAY_MUSTCHECK;

/* Parses one CopyData frame of len bytes (XLogData 'w' or keepalive
 * 'k'), each header field checked against len. Returns 1 with msg
 * filled (msg->data points into buf), or -1 with the reason in err for a
 * short frame or another message type. Pure: repl_read() calls it on
 * what libpq hands over; exposed for tests and the fuzz harness. */
int repl_parse_frame(const char *buf, size_t len, struct repl_msg *msg,
                     char *err, size_t errlen) RELAY_MUSTCHECK;

/* Sends a standby status update: write = received, flush = apply =
 * flush_lsn. Returns 0 or -1 (err filled). */
int repl_send_status(struct repl_stream *rs, uint64_t received,
                     uint64_t flush_lsn, bool reply_requested, char *err,
                     size_t errlen) RELAY_MUSTCHECK;

/* True when output is still queued in libpq (poll for POLLOUT). */
bool repl_wants_write(struct repl_stream *rs);
/* Flushes queued output. Returns 0 or -1 (err filled). */
int repl_flush(struct repl_stream *rs, char *err, size_t errlen) RELAY_MUSTCHECK;

/* Read-only views of a started stream, for the relay: it reads the
 * stream through these, never its fields (make boundaries). */
const char *repl_system_id(const struct repl_stream *rs); /* IDENTIFY_SYSTEM */
int repl_timeline(const struct repl_stream *rs);
/* The ancestors of that timeline, oldest first, their number in *n (0
 * on timeline 1); NULL when the history could not be read. */
const struct tli_switch *repl_history(const struct repl_stream *rs, int *n);
uint64_t repl_wal_end(const struct repl_stream *rs);   /* its xlogpos */
/* What the start read of the outbox table: true when it is one table
 * (not schema.*), with its columns' NOT NULL in enum rec_col order and
 * bit i of *extra_present set when it has the spec's col_extra[i]. */
bool repl_table(const struct repl_stream *rs, const bool **notnull,
                unsigned *extra_present);

const struct slot_row *repl_slot(const struct repl_stream *rs); /* as read
                                                         * at the start */
bool repl_in_copy(const struct repl_stream *rs);       /* streaming */
bool repl_slot_missing(const struct repl_stream *rs);  /* refused: the slot
                                                 * does not exist */
bool repl_connect_failed(const struct repl_stream *rs); /* never connected */
enum repl_err repl_stream_err(const struct repl_stream *rs); /* class of the
                                                  * last repl_read() failure */

/* Ends the stream politely (CopyDone) and closes the connection. */
void repl_close(struct repl_stream *rs);

#endif
