/* SPDX-License-Identifier: Apache-2.0 */
/* pgutil.h -- libpq connections and queries that cannot hang.
 *
 * A PostgreSQL that stops answering while its TCP stack still
 * acknowledges (a hung backend, a proxy or middlebox that goes silent)
 * defeats keepalives and tcp_user_timeout: a blocking PQexec() then
 * waits forever. Every connection and query here has a deadline, and the
 * connection defaults (keepalives, tcp_user_timeout, connect_timeout)
 * are filled in unless the conninfo sets them. The replication stream
 * (repl.c) and the watchdog (watchdog.c) both use this. */
#ifndef RELAY_PGUTIL_H
#define RELAY_PGUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "lib/common.h"

/* What a failed connect means (pgu_classify_connect). */
enum pgu_class {
	PGU_TRANSIENT = 0,  /* refused, timed out, DNS, starting up: retry */
	PGU_AUTH,           /* password, pg_hba, the role's rights */
	PGU_CONFIG,         /* an option libpq refuses, TLS setup, no such db */
};

/* Opens a connection for conninfo (the user's settings win; the defaults
 * above are added, application_name too), with replication=database when
 * replication is set. Bounded by connect_timeout per host. Returns NULL
 * with the class in *cls and a one-line message in err (with a hint for
 * the permanent classes; the conninfo is never quoted). */
PGconn *pgu_connect(const char *conninfo, const char *application_name,
                    bool replication, const char *options,
                    enum pgu_class *cls, char *err, size_t errlen);

/* Classifies an error at connection time: sqlstate ("" when libpq
 * refused before any server answered) and libpq's message. Permanent
 * ones get a one-line hint in *hint (static). Table-driven. */
enum pgu_class pgu_classify_connect(const char *sqlstate, const char *message,
                                    const char **hint);

/* Runs sql (with nparams text parameters, or the simple protocol when
 * nparams is 0: replication connections take only that) and waits for
 * its last result until deadline_us (now_mono_us() clock); a COPY result
 * is returned as soon as it comes. Returns the result (caller clears),
 * or NULL: connection failure, or *timed_out when the deadline passed
 * (the connection is then unusable: close it). */
PGresult *pgu_exec(PGconn *conn, const char *sql, int nparams,
                   const char *const *params, int64_t deadline_us,
                   bool *timed_out);

/* libpq's message of conn (or res when not NULL), on one line, into out. */
void pgu_message(PGconn *conn, const PGresult *res, char *out, size_t outlen);

/* The server's primary message of a failed result with its hint
 * ("... (hint: ...)"), or libpq's message of conn when the result has
 * none; on one line, into out. What the runbook prints. */
void pgu_error_text(PGconn *conn, const PGresult *res, char *out,
                    size_t outlen);

/* The SQLSTATE of a result ("" when there is none). */
const char *pgu_sqlstate(const PGresult *res);

/* How pgu_query() went. */
enum pgu_outcome {
	PGU_Q_OK = 0,
	PGU_Q_NO_ANSWER,    /* timed out or the connection broke: transient */
	PGU_Q_REFUSED,      /* the server answered with an error: sqlstate */
};

struct pgu_status {
	enum pgu_outcome outcome;
	char sqlstate[6];   /* PGU_Q_REFUSED: the server's code, else "" */
};

/* pgu_exec() and the check of its status against want (PGRES_TUPLES_OK,
 * PGRES_COMMAND_OK, ...). Returns the result (caller clears) or NULL
 * with st filled and err = "what: <why>" (the server's message, or that
 * it did not answer in time). */
PGresult *pgu_query(PGconn *conn, const char *sql, int nparams,
                    const char *const *params, int64_t deadline_us,
                    ExecStatusType want, const char *what,
                    struct pgu_status *st, char *err, size_t errlen);

/* IDENTIFY_SYSTEM (a replication connection): the system identifier,
 * the timeline and the server's WAL end. */
struct pgu_system {
	char system_id[32];
	int timeline;
	uint64_t xlogpos;
};

int pgu_identify(PGconn *conn, int64_t deadline_us, struct pgu_system *sys,
                 struct pgu_status *st, char *err, size_t errlen) RELAY_MUSTCHECK;

/* The ancestors of timeline tli (TIMELINE_HISTORY tli, a replication
 * connection; tli > 1, timeline 1 has no history): up to max switches
 * into out, oldest first, their number into *n. Returns 0, or -1 with st
 * and err filled (a missing or malformed file too). */
int pgu_timeline_history(PGconn *conn, int tli, int64_t deadline_us,
                         struct tli_switch *out, int max, int *n,
                         struct pgu_status *st, char *err,
                         size_t errlen) RELAY_MUSTCHECK;

/* Parses a history file's text: one "parentTLI<TAB>X/X<TAB>reason" line
 * per ancestor (blank lines and '#' comments skipped), ascending. Keeps
 * the last max lines when there are more (the newest ancestors matter:
 * this process only ever knew a recent timeline). Returns 0, or -1 with
 * err filled. Pure; exposed for tests. */
int pgu_parse_timeline_history(const char *text, size_t len,
                               struct tli_switch *out, int max, int *n,
                               char *err, size_t errlen) RELAY_MUSTCHECK;

/* Column helpers for row r, column c of res: an LSN (LSN_INVALID when
 * empty or not one), a 64-bit integer (0 when not one), a boolean
 * ("t"). */
uint64_t pgu_lsn(const PGresult *res, int r, int c);
int64_t pgu_i64(const PGresult *res, int r, int c);
bool pgu_bool(const PGresult *res, int r, int c);

#endif
