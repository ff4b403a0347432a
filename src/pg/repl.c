/* SPDX-License-Identifier: Apache-2.0 */
/* repl.c -- logical replication over libpq: connect, check, stream, reply.
 *
 * Frame layouts follow the streaming replication protocol; each field is
 * parsed with an explicit length check, as pg_recvlogical does. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "lib/log.h"
#include "pg/pgutil.h"
#include "pg/repl.h"
#include "pg/slot.h"

/* libpq's PGconn behind our opaque name. */
#define PGC(rs) ((PGconn *)(rs)->conn)

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US INT64_C(946684800000000)

/* "what: <libpq's message of the connection>" into err. */
static void conn_err(struct repl_stream *rs, const char *what, char *err,
                     size_t errlen)
{
	char m[512];

	pgu_message(PGC(rs), NULL, m, sizeof(m));
	errbuf_set(err, errlen, "%s: %s", what, m);
}

static void put_be64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

/* Classifies a server error by SQLSTATE. */
static enum repl_err classify(const char *st)
{
	if (st[0] == '\0')
		return REPL_ERR_TRANSIENT;
	if (strcmp(st, "55006") == 0) /* object_in_use: slot active elsewhere */
		return REPL_ERR_SLOT_BUSY;
	if (strcmp(st, "42704") == 0 || /* undefined_object: no such slot */
	    strcmp(st, "55000") == 0 || /* slot invalidated, wrong state */
	    strcmp(st, "42501") == 0 || /* insufficient_privilege */
	    strcmp(st, "28000") == 0 || /* invalid authorization */
	    strcmp(st, "22023") == 0)   /* invalid parameter (plugin option) */
		return REPL_ERR_FATAL;
	return REPL_ERR_TRANSIENT;
}

/* A failed statement of the session's start: one that did not answer
 * (bounded by rs->timeout_ms: a server that stops answering must not
 * hang the relay) is transient, a refusal by its SQLSTATE. */
static enum repl_err failed(const struct pgu_status *st)
{
	return st->outcome == PGU_Q_REFUSED ? classify(st->sqlstate)
	                                    : REPL_ERR_TRANSIENT;
}

static int64_t deadline(const struct repl_stream *rs)
{
	return now_mono_us() + rs->timeout_ms * 1000;
}

/* Reads the slot's row; refuses what the relay must never stream from
 * (slot.h). Another process streaming from it is standby, not a stop. */
static enum repl_err check_slot(struct repl_stream *rs, const char *slot,
                                const char *plugin, char *err, size_t errlen)
{
	struct pgu_status st;
	enum slot_refusal why;
	enum repl_err rc;

	if (slot_read(PGC(rs), slot, deadline(rs), &rs->slot, &st, err,
	              errlen) < 0) {
		rc = failed(&st);
		return rc == REPL_ERR_SLOT_BUSY ? REPL_ERR_TRANSIENT : rc;
	}
	why = slot_judge(&rs->slot, plugin, 0);
	if (why == SLOT_USABLE)
		return REPL_OK;
	rs->slot_missing = why == SLOT_MISSING;
	slot_refusal_text(why, &rs->slot, slot, why != SLOT_ACTIVE, err, errlen);
	return why == SLOT_ACTIVE ? REPL_ERR_SLOT_BUSY : REPL_ERR_FATAL;
}

/* The outbox table and the configured columns exist, so a typo in the
 * configuration fails at start instead of never matching (slot.h). */
static enum repl_err check_table(struct repl_stream *rs,
                                 const struct record_spec *spec, char *err,
                                 size_t errlen)
{
	struct slot_table t;
	struct pgu_status st;

	if (slot_table_check(PGC(rs), spec, deadline(rs), &t, &st, err,
	                     errlen) < 0)
		return REPL_ERR_TRANSIENT;
	if (t.verdict == TABLE_OK) {
		rs->table_known = t.columns[0] != '\0'; /* one table */
		memcpy(rs->notnull, t.notnull, sizeof(rs->notnull));
		rs->extra_present = t.extra_present;
		return REPL_OK;
	}
	slot_table_text(&t, err, errlen);
	return REPL_ERR_CONFIG;
}

enum repl_err repl_start(struct repl_stream *rs, const char *conninfo,
                         const char *slot, const struct stream_spec *ss,
                         int64_t timeout_ms, char *err, size_t errlen)
{
	struct pgu_system sys;
	struct pgu_status st;
	enum pgu_class cls;
	char *cmd, m[512];
	bool timed_out;
	PGresult *res;
	enum repl_err rc;

	memset(rs, 0, sizeof(*rs));
	rs->timeout_ms = timeout_ms;
	rs->conn = (struct pg_conn *)pgu_connect(conninfo, "outbox-relay", true,
	                                         NULL, &cls, err, errlen);
	if (rs->conn == NULL) {
		rs->connect_failed = true;
		return cls == PGU_AUTH     ? REPL_ERR_AUTH
		       : cls == PGU_CONFIG ? REPL_ERR_CONFIG
		                           : REPL_ERR_TRANSIENT;
	}
	if (pgu_identify(PGC(rs), deadline(rs), &sys, &st, err, errlen) < 0) {
		rc = failed(&st);
		goto fail;
	}
	snprintf(rs->system_id, sizeof(rs->system_id), "%s", sys.system_id);
	rs->timeline = sys.timeline;
	rs->system_lsn = sys.xlogpos;
	if (sys.timeline > 1 &&
	    pgu_timeline_history(PGC(rs), sys.timeline, deadline(rs), rs->history,
	                         REPL_HISTORY_MAX, &rs->history_len, &st, m,
	                         sizeof(m)) < 0) {
		/* Only needed to judge a change of timeline, where unknown
		 * means refused: the relay stops then, with this logged. */
		log_warn("%s", m);
		rs->history_len = -1;
		if (PQstatus(PGC(rs)) != CONNECTION_OK) {
			errbuf_set(err, errlen, "TIMELINE_HISTORY: %s", m);
			rc = REPL_ERR_TRANSIENT;
			goto fail;
		}
	}
	if ((rc = check_slot(rs, slot, ss_plugin_name(ss), err, errlen)) != REPL_OK)
		goto fail;
	if ((rc = check_table(rs, &ss->spec, err, errlen)) != REPL_OK)
		goto fail;
	cmd = ss_start_command(ss, slot);
	res = pgu_exec(PGC(rs), cmd, 0, NULL, deadline(rs), &timed_out);
	free(cmd);
	if (res == NULL) {
		if (timed_out)
			errbuf_set(err, errlen, "START_REPLICATION: PostgreSQL did not "
			           "answer within %lld ms", (long long)rs->timeout_ms);
		else
			conn_err(rs, "START_REPLICATION", err, errlen);
		rc = REPL_ERR_TRANSIENT;
		goto fail;
	}
	if (PQresultStatus(res) != PGRES_COPY_BOTH) {
		pgu_message(PGC(rs), res, m, sizeof(m));
		errbuf_set(err, errlen, "START_REPLICATION failed: %s", m);
		rc = classify(pgu_sqlstate(res));
		PQclear(res);
		goto fail;
	}
	PQclear(res);
	if (PQsetnonblocking(PGC(rs), 1) != 0) {
		conn_err(rs, "PQsetnonblocking", err, errlen);
		rc = REPL_ERR_TRANSIENT;
		goto fail;
	}
	rs->in_copy = true;
	return REPL_OK;
fail:
	PQfinish(PGC(rs));
	rs->conn = NULL;
	return rc;
}

int repl_socket(const struct repl_stream *rs)
{
	return rs->conn ? PQsocket(PGC(rs)) : -1;
}

int repl_consume(struct repl_stream *rs, char *err, size_t errlen)
{
	if (PQconsumeInput(PGC(rs)) == 0) {
		conn_err(rs, "replication connection lost", err, errlen);
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

/* After the server ended COPY or the connection failed: fetch the error
 * result so it can be classified and shown. */
static void stream_error(struct repl_stream *rs, char *err, size_t errlen)
{
	PGresult *res;
	bool got = false;

	rs->stream_err = REPL_ERR_TRANSIENT;
	rs->in_copy = false;
	/* Only what already arrived: after an ErrorResponse the server may
	 * never send ReadyForQuery (a proxy in between, a dying backend), and
	 * a blocking PQgetResult() would then wait for it forever. */
	for (;;) {
		if (PQisBusy(PGC(rs)) &&
		    (!PQconsumeInput(PGC(rs)) || PQisBusy(PGC(rs))))
			break;
		if ((res = PQgetResult(PGC(rs))) == NULL)
			break;
		if (!got && PQresultStatus(res) == PGRES_FATAL_ERROR) {
			const char *m = PQresultErrorMessage(res);
			size_t n = strlen(m);
			while (n > 0 && m[n - 1] == '\n')
				n--;
			errbuf_set(err, errlen, "replication stream ended: %.*s", (int)n, m);
			rs->stream_err = classify(pgu_sqlstate(res));
			got = true;
		}
		PQclear(res);
		if (PQstatus(PGC(rs)) == CONNECTION_BAD)
			break;
	}
	if (!got)
		conn_err(rs, "replication stream ended", err, errlen);
}

int repl_parse_frame(const char *buf, size_t len, struct repl_msg *msg,
                     char *err, size_t errlen)
{
	size_t hdr;

	memset(msg, 0, sizeof(*msg));
	/* libpq never hands out an empty frame; were it to, the NUL it puts
	 * after every buffer would read as message type 0x00. */
	msg->type = len > 0 ? buf[0] : '\0';
	if (msg->type == 'w') {
		hdr = 1;  /* msgtype 'w' */
		hdr += 8; /* dataStart */
		hdr += 8; /* walEnd */
		hdr += 8; /* sendTime */
		if (len < hdr) {
			errbuf_set(err, errlen, "XLogData header too small: %zu bytes", len);
			return -1;
		}
		msg->wal_start = be_uint(buf + 1, 8);
		msg->wal_end = be_uint(buf + 9, 8);
		msg->data = buf + hdr;
		msg->len = len - hdr;
		return 1;
	}
	if (msg->type == 'k') {
		hdr = 1;  /* msgtype 'k' */
		hdr += 8; /* walEnd */
		hdr += 8; /* sendTime */
		hdr += 1; /* replyRequested */
		if (len < hdr) {
			errbuf_set(err, errlen, "keepalive too small: %zu bytes", len);
			return -1;
		}
		msg->wal_end = be_uint(buf + 1, 8);
		msg->reply_requested = buf[17] != 0;
		return 1;
	}
	errbuf_set(err, errlen, "unexpected CopyData message type 0x%02x",
	        (unsigned char)msg->type);
	return -1;
}

int repl_read(struct repl_stream *rs, struct repl_msg *msg, char *err,
              size_t errlen)
{
	int r;

	if (rs->copybuf != NULL) {
		PQfreemem(rs->copybuf);
		rs->copybuf = NULL;
	}
	r = PQgetCopyData(PGC(rs), &rs->copybuf, 1);
	if (r == 0)
		return 0;
	if (r < 0) {
		stream_error(rs, err, errlen);
		return -1;
	}
	if (repl_parse_frame(rs->copybuf, (size_t)r, msg, err, errlen) < 0) {
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 1;
}

int repl_send_status(struct repl_stream *rs, uint64_t received,
                     uint64_t flush_lsn, bool reply_requested, char *err,
                     size_t errlen)
{
	char buf[1 + 8 + 8 + 8 + 8 + 1];
	size_t n = 0;

	buf[n++] = 'r';
	put_be64(buf + n, received);  /* write */
	n += 8;
	put_be64(buf + n, flush_lsn); /* flush: the only field that moves the slot */
	n += 8;
	put_be64(buf + n, flush_lsn); /* apply */
	n += 8;
	put_be64(buf + n, (uint64_t)(now_wall_us() - PG_EPOCH_OFFSET_US)); /* sendTime */
	n += 8;
	buf[n++] = reply_requested ? 1 : 0;
	if (PQputCopyData(PGC(rs), buf, (int)n) <= 0 || PQflush(PGC(rs)) < 0) {
		conn_err(rs, "could not send status update", err, errlen);
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

bool repl_wants_write(struct repl_stream *rs)
{
	return rs->conn != NULL && PQflush(PGC(rs)) == 1;
}

int repl_flush(struct repl_stream *rs, char *err, size_t errlen)
{
	if (PQflush(PGC(rs)) < 0) {
		conn_err(rs, "replication connection lost", err, errlen);
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

void repl_close(struct repl_stream *rs)
{
	if (rs->copybuf != NULL)
		PQfreemem(rs->copybuf);
	rs->copybuf = NULL;
	if (rs->conn == NULL)
		return;
	if (rs->in_copy && PQstatus(PGC(rs)) == CONNECTION_OK) {
		/* CopyDone tells the walsender we are leaving on purpose; the
		 * confirmed position was already sent. */
		if (PQputCopyEnd(PGC(rs), NULL) == 1)
			(void)PQflush(PGC(rs));
	}
	PQfinish(PGC(rs));
	rs->conn = NULL;
	rs->in_copy = false;
}

const char *repl_system_id(const struct repl_stream *rs)
{
	return rs->system_id;
}

int repl_timeline(const struct repl_stream *rs)
{
	return rs->timeline;
}

const struct tli_switch *repl_history(const struct repl_stream *rs, int *n)
{
	*n = rs->history_len < 0 ? 0 : rs->history_len;
	return rs->history_len < 0 ? NULL : rs->history;
}

uint64_t repl_wal_end(const struct repl_stream *rs)
{
	return rs->system_lsn;
}

bool repl_table(const struct repl_stream *rs, const bool **notnull,
                unsigned *extra_present)
{
	*notnull = rs->notnull;
	*extra_present = rs->extra_present;
	return rs->table_known;
}

const struct slot_row *repl_slot(const struct repl_stream *rs)
{
	return &rs->slot;
}

bool repl_slot_missing(const struct repl_stream *rs)
{
	return rs->slot_missing;
}

bool repl_in_copy(const struct repl_stream *rs)
{
	return rs->in_copy;
}

bool repl_connect_failed(const struct repl_stream *rs)
{
	return rs->connect_failed;
}

enum repl_err repl_stream_err(const struct repl_stream *rs)
{
	return rs->stream_err;
}
