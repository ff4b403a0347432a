/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c -- the runbook actions: preflight, slot life cycle, status,
 * deliberate skips, dry run and drain, one command each.
 *
 * Every action reads the slot over an ordinary connection first and
 * refuses what the relay itself would refuse. Peeks use the relay's own
 * wal2json options (read back from repl_start_command()) and the relay's
 * decoder and router, so what is shown is what would be published. A
 * slot is only created, dropped or advanced by the action named for it,
 * and the last two need --yes. See docs/runbook-cli.md. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "health.h"
#include "ledger.h"
#include "repl.h"
#include "route.h"
#include "w2j.h"
#include "watchdog.h"

#define CLI_CONNECT_TIMEOUT "10"
#define CLI_SHOW_IDS 10             /* ids named in a summary line */
#define CLI_SHOW_EVENTS 100         /* events listed by --skip-transaction */
#define CLI_DROP_PEEK_ROWS 100000   /* rows --drop-slot peeks at most */
#define CLI_DRAIN_POLL_US 500000
#define CLI_DLQ_REASON "skipped by operator"

/* ------------------------------------------------------------ options */

enum cli_action {
	CLI_NONE = 0,
	CLI_CHECK,
	CLI_CREATE_SLOT,
	CLI_DROP_SLOT,
	CLI_SLOT_STATUS,
	CLI_ADVANCE_SLOT,
	CLI_SKIP_TXN,
	CLI_DRY_RUN,
	CLI_DRAIN,
	CLI_ACCEPT_SLOT,
};

#define A(x) (1u << (x))
#define A_ALL 0xffffu

/* Action flags (action != CLI_NONE) and their modifiers, which name the
 * actions they go with. */
static const struct cli_flag {
	const char *name;
	enum cli_action action;
	bool has_arg;
	unsigned allowed;
} cli_flags[] = {
	{ "--check", CLI_CHECK, false, 0 },
	{ "--create-slot", CLI_CREATE_SLOT, false, 0 },
	{ "--drop-slot", CLI_DROP_SLOT, false, 0 },
	{ "--slot-status", CLI_SLOT_STATUS, false, 0 },
	{ "--advance-slot", CLI_ADVANCE_SLOT, true, 0 },
	{ "--skip-transaction", CLI_SKIP_TXN, true, 0 },
	{ "--dry-run", CLI_DRY_RUN, false, 0 },
	{ "--drain", CLI_DRAIN, false, 0 },
	{ "--accept-slot", CLI_ACCEPT_SLOT, false, 0 },
	{ "--if-not-exists", CLI_NONE, false, A(CLI_CREATE_SLOT) },
	{ "--yes", CLI_NONE, false,
	  A(CLI_DROP_SLOT) | A(CLI_ADVANCE_SLOT) | A(CLI_SKIP_TXN) |
	  A(CLI_ACCEPT_SLOT) },
	{ "--json", CLI_NONE, false, A_ALL },
	{ "--to-dlq", CLI_NONE, true, A(CLI_SKIP_TXN) },
	{ "--max-events", CLI_NONE, true, A(CLI_DRY_RUN) },
	{ "--timeout-ms", CLI_NONE, true,
	  A(CLI_CHECK) | A(CLI_DRY_RUN) | A(CLI_DRAIN) | A(CLI_SKIP_TXN) },
};

#define CLI_NFLAGS (sizeof(cli_flags) / sizeof(cli_flags[0]))

struct cli_opts {
	enum cli_action action;
	const char *action_name;
	const char *arg;            /* LSN or XID */
	bool yes, json, if_not_exists;
	const char *dlq_topic;
	int64_t max_events;         /* -1: default */
	int64_t timeout_ms;         /* -1: default */
};

/* main.c's long options, so that an abbreviation is read the way
 * getopt_long() reads it there. */
static const struct {
	const char *name;
	bool has_arg;
} main_longs[] = {
	{ "--config", true },
	{ "--set", true },
	{ "--print-config", false },
	{ "--version", false },
	{ "--help", false },
};

enum cli_match {
	MATCH_NONE,             /* no option main.c or cli.c knows */
	MATCH_MAIN,             /* one of main.c's own */
	MATCH_FLAG,             /* a runbook flag */
	MATCH_AMBIGUOUS,        /* a prefix of several, a runbook flag among them */
	MATCH_END,              /* "--" */
};

/* Reads one argument as getopt_long() does: the exact name, or a prefix
 * of exactly one long option, "--name=value" setting *value. *takes_next
 * is set when the next argument is the option's value. An abbreviation
 * that getopt would accept must never be missed here: the relay would
 * start instead of the action. */
static enum cli_match match_arg(const char *a, const struct cli_flag **flag,
                                const char **value, bool *takes_next)
{
	size_t n = strcspn(a, "=");
	const struct cli_flag *found = NULL;
	int nmain = 0, nflag = 0;
	bool main_has_arg = false;

	*flag = NULL;
	*value = a[n] == '=' ? a + n + 1 : NULL;
	*takes_next = false;
	if (strcmp(a, "--") == 0)
		return MATCH_END;
	if (a[0] == '-' && a[1] != '-' && a[1] != '\0') {
		/* -c FILE, -s KEY=VALUE (or attached), -h, -V */
		*takes_next = (a[1] == 'c' || a[1] == 's') && a[2] == '\0';
		return a[1] == 'c' || a[1] == 's' ||
		       ((a[1] == 'h' || a[1] == 'V') && a[2] == '\0')
		               ? MATCH_MAIN : MATCH_NONE;
	}
	if (strncmp(a, "--", 2) != 0 || n <= 2)
		return MATCH_NONE;
	for (size_t i = 0; i < sizeof(main_longs) / sizeof(main_longs[0]); i++) {
		if (strncmp(a, main_longs[i].name, n) != 0)
			continue;
		main_has_arg = main_longs[i].has_arg;
		if (main_longs[i].name[n] == '\0') {
			*takes_next = main_has_arg && *value == NULL;
			return MATCH_MAIN;
		}
		nmain++;
	}
	for (size_t i = 0; i < CLI_NFLAGS; i++) {
		if (strncmp(a, cli_flags[i].name, n) != 0)
			continue;
		found = &cli_flags[i];
		if (cli_flags[i].name[n] == '\0') {
			nflag = 1;
			nmain = 0;
			break;
		}
		nflag++;
	}
	if (nflag == 1 && nmain == 0) {
		*flag = found;
		*takes_next = found->has_arg && *value == NULL;
		return MATCH_FLAG;
	}
	if (nflag > 0)
		return MATCH_AMBIGUOUS;
	if (nmain == 1) {
		*takes_next = main_has_arg && *value == NULL;
		return MATCH_MAIN;
	}
	return MATCH_NONE;
}

bool cli_is_action(int argc, char **argv)
{
	const struct cli_flag *f;
	const char *v;
	bool next;

	for (int i = 1; i < argc; i++) {
		switch (match_arg(argv[i], &f, &v, &next)) {
		case MATCH_END:
			return false;
		case MATCH_FLAG:
		case MATCH_AMBIGUOUS:
			/* A modifier alone comes here too: cli_main() rejects it
			 * rather than the relay starting with it ignored. */
			return true;
		case MATCH_MAIN:
		case MATCH_NONE:
			break;
		}
		if (next)
			i++;
	}
	return false;
}

/* ------------------------------------------------------------ output */

static void cli_err(const char *fmt, ...) RELAY_PRINTF(1, 2);

static void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("outbox-relay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	RELAY_PRINTF(3, 4);

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A string as JSON; bytes that are not UTF-8 are passed through. */
static json_t *j_strn(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);

	return s != NULL ? s : json_stringn_nocheck(p, n);
}

static json_t *j_str(const char *p)
{
	return p != NULL ? j_strn(p, strlen(p)) : json_null();
}

static json_t *j_lsn(uint64_t lsn)
{
	char buf[32];

	snprintf(buf, sizeof(buf), LSN_FMT, LSN_ARGS(lsn));
	return json_string(buf);
}

/* One compact JSON document and a newline on stdout; steals o. */
static void cli_json_out(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	json_decref(o);
	fflush(stdout);
}

/* "512 B", "1.5 KiB", "1.2 GiB". */
static void cli_fmt_bytes(char *buf, size_t len, int64_t v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	size_t u = 0;

	while ((d >= 1024 || d <= -1024) && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lld B", (long long)v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
}

/* "s" for a count that is not one. */
static const char *pl(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static void cli_now_text(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Event ids, comma-separated, with "..." when more were counted. */
static void cli_ids_text(char (*ids)[80], size_t nids, uint64_t total,
                         char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nids && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", ids[i]);
	if (total > nids && n < len)
		snprintf(buf + n, len - n, "%s...", nids ? ", " : "");
}

static json_t *cli_ids_json(char (*ids)[80], size_t nids)
{
	json_t *a = json_array();

	for (size_t i = 0; i < nids; i++)
		json_array_append_new(a, j_str(ids[i]));
	return a;
}

/* ------------------------------------------------------------ PostgreSQL */

/* Text of a libpq message without its trailing newline. */
static const char *pq_text(const char *m)
{
	static char buf[1024];
	size_t n = strlen(m);

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, m, n);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	return buf;
}

/* The server's message of a failed result, with its hint. */
static const char *res_text(const PGresult *res, PGconn *conn)
{
	static char buf[1200];
	const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *h = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

	if (m == NULL)
		return pq_text(conn ? PQerrorMessage(conn) : "unknown error");
	snprintf(buf, sizeof(buf), "%s%s%s%s", m, h ? " (hint: " : "", h ? h : "",
	         h ? ")" : "");
	return buf;
}

static bool res_state_is(const PGresult *res, const char *state)
{
	const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return s != NULL && strcmp(s, state) == 0;
}

/* pg.conninfo must be present and pass cfg_check_conninfo(); 0 or
 * RELAY_EXIT_CONFIG. */
static int cli_require_pg(const struct relay_config *cfg)
{
	char err[512];

	if (cfg->pg_conninfo == NULL || cfg->pg_conninfo[0] == '\0') {
		cli_err("pg.conninfo is required");
		return RELAY_EXIT_CONFIG;
	}
	if (cfg_check_conninfo(cfg, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	return 0;
}

/* Opens a connection with pg.conninfo; the user's settings win over the
 * defaults here, except replication. statement_timeout_ms 0: none.
 * Returns NULL with err filled. */
static PGconn *cli_connect(const struct relay_config *cfg, bool replication,
                           int64_t statement_timeout_ms, char *err,
                           size_t errlen)
{
	const char *kw[6], *val[6];
	char sql[64];
	PGresult *res;
	PGconn *conn;
	int n = 0;

	kw[n] = "application_name", val[n++] = "outbox-relay-cli";
	kw[n] = "connect_timeout", val[n++] = CLI_CONNECT_TIMEOUT;
	kw[n] = "dbname", val[n++] = cfg->pg_conninfo;
	if (replication)
		kw[n] = "replication", val[n++] = "database";
	kw[n] = NULL, val[n] = NULL;
	conn = PQconnectdbParams(kw, val, 1);
	if (PQstatus(conn) != CONNECTION_OK) {
		set_err(err, errlen, "could not connect to PostgreSQL%s: %s",
		        replication ? " (replication=database)" : "",
		        pq_text(PQerrorMessage(conn)));
		PQfinish(conn);
		return NULL;
	}
	if (statement_timeout_ms > 0) {
		snprintf(sql, sizeof(sql), "SET statement_timeout = %lld",
		         (long long)statement_timeout_ms);
		res = PQexec(conn, sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			set_err(err, errlen, "setting statement_timeout: %s",
			        res_text(res, conn));
			PQclear(res);
			PQfinish(conn);
			return NULL;
		}
		PQclear(res);
	}
	return conn;
}

/* One row of pg_replication_slots, plus the server's WAL position. */
struct cli_slot {
	bool exists;
	bool logical;
	bool same_db;
	bool active;
	bool confirmed_known;       /* NULL once invalidated */
	int active_pid;
	char plugin[64];
	char database[64];
	char wal_status[16];
	char user[64];              /* current_user */
	uint64_t restart_lsn;
	uint64_t confirmed_lsn;
	uint64_t current_lsn;       /* pg_current_wal_lsn() */
	int64_t retained_bytes;     /* current - restart_lsn; -1 unknown */
};

static uint64_t col_lsn(const PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);
	uint64_t lsn = 0;

	if (lsn_parse(v, strlen(v), &lsn) < 0)
		return LSN_INVALID;
	return lsn;
}

/* A decimal text as an int; 0 when it is not one. */
static int text_int(const char *v)
{
	long n = strtol(v, NULL, 10);

	return n > INT_MAX || n < INT_MIN ? 0 : (int)n;
}

/* Reads the slot's row (simple protocol, so it works on a replication
 * connection too). Returns 0, or -1 with err filled. */
static int cli_slot_read(PGconn *conn, const char *name, struct cli_slot *s,
                         char *err, size_t errlen)
{
	char *lit = PQescapeLiteral(conn, name, strlen(name));
	char sql[1400];
	PGresult *res = NULL;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (lit == NULL) {
		set_err(err, errlen, "escaping the slot name: %s",
		        pq_text(PQerrorMessage(conn)));
		return -1;
	}
	snprintf(sql, sizeof(sql),
	         "SELECT s.slot_name IS NOT NULL, coalesce(s.slot_type, ''), "
	         "coalesce(s.plugin, ''), coalesce(s.database::text, ''), "
	         "coalesce(s.database = current_database(), false), "
	         "coalesce(s.active, false), coalesce(s.active_pid, 0), "
	         "coalesce(s.wal_status, ''), coalesce(s.restart_lsn::text, ''), "
	         "coalesce(s.confirmed_flush_lsn::text, ''), "
	         "pg_catalog.pg_current_wal_lsn()::text, "
	         "coalesce(pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), "
	         "s.restart_lsn)::bigint, -1), current_user::text "
	         "FROM (SELECT 1) AS one LEFT JOIN pg_catalog.pg_replication_slots s "
	         "ON s.slot_name = %s", lit);
	PQfreemem(lit);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		set_err(err, errlen, "reading pg_replication_slots: %s",
		        res_text(res, conn));
		goto out;
	}
	s->exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	s->logical = strcmp(PQgetvalue(res, 0, 1), "logical") == 0;
	snprintf(s->plugin, sizeof(s->plugin), "%s", PQgetvalue(res, 0, 2));
	snprintf(s->database, sizeof(s->database), "%s", PQgetvalue(res, 0, 3));
	s->same_db = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	s->active = strcmp(PQgetvalue(res, 0, 5), "t") == 0;
	s->active_pid = text_int(PQgetvalue(res, 0, 6));
	snprintf(s->wal_status, sizeof(s->wal_status), "%s", PQgetvalue(res, 0, 7));
	s->restart_lsn = col_lsn(res, 0, 8);
	s->confirmed_known = PQgetvalue(res, 0, 9)[0] != '\0';
	s->confirmed_lsn = col_lsn(res, 0, 9);
	s->current_lsn = col_lsn(res, 0, 10);
	s->retained_bytes = strtoll(PQgetvalue(res, 0, 11), NULL, 10);
	snprintf(s->user, sizeof(s->user), "%s", PQgetvalue(res, 0, 12));
	rc = 0;
out:
	PQclear(res);
	return rc;
}

#define SLOT_ALLOW_ACTIVE 0x1
#define SLOT_ALLOW_LOST 0x2

static bool cli_slot_lost(const struct cli_slot *s)
{
	return strcmp(s->wal_status, "lost") == 0 || !s->confirmed_known;
}

/* The refusals every slot action shares. Returns 0 when the slot may be
 * worked on, else prints why and returns RELAY_EXIT_UNAVAILABLE. */
static int cli_slot_usable(const struct cli_slot *s, const char *name,
                           unsigned allow)
{
	if (!s->exists) {
		cli_err("replication slot \"%s\" does not exist (create it with "
		        "outbox-relay --create-slot)", name);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (!s->logical || strcmp(s->plugin, "wal2json") != 0) {
		cli_err("replication slot \"%s\" uses plugin \"%s\" (%s); the relay "
		        "needs a logical wal2json slot and leaves this one alone",
		        name, s->plugin, s->logical ? "logical" : "physical");
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (!s->same_db) {
		cli_err("replication slot \"%s\" belongs to database \"%s\", not the "
		        "one in pg.conninfo", name, s->database);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (!(allow & SLOT_ALLOW_LOST) && cli_slot_lost(s)) {
		cli_err("replication slot \"%s\" is invalidated (wal_status=%s): "
		        "the WAL it needed is gone", name,
		        s->wal_status[0] ? s->wal_status : "unknown");
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (!(allow & SLOT_ALLOW_ACTIVE) && s->active) {
		cli_err("replication slot \"%s\" is active for PID %d: stop the "
		        "relay (and any standby relay) first", name, s->active_pid);
		return RELAY_EXIT_UNAVAILABLE;
	}
	return 0;
}

/* ------------------------------------------------------------ peeking */

/* The relay's wal2json options as a PostgreSQL text[] literal, read back
 * from the START_REPLICATION command repl.c builds: a peek decodes
 * exactly what the relay streams. Returns 0, or -1 with err filled. */
static int cli_plugin_options(const struct relay_config *cfg,
                              const struct w2j_spec *spec, char *out,
                              size_t outlen, char *err, size_t errlen)
{
	char cmd[2048];
	const char *p;
	size_t n = 0;
	bool first = true;

	if (repl_start_command(cfg->slot_name, spec, cfg->heartbeat_prefix, cmd,
	                       sizeof(cmd)) < 0 ||
	    (p = strstr(cmd, " LOGICAL 0/0 (")) == NULL) {
		set_err(err, errlen, "cannot build the wal2json options "
		        "(outbox.table too long?)");
		return -1;
	}
	p += strlen(" LOGICAL 0/0 (");
	out[n++] = '{';
	/* "name" 'value' pairs; '' inside a value is one quote. */
	while (*p == '"') {
		for (int part = 0; part < 2; part++) {
			char close = part == 0 ? '"' : '\'';
			if (part == 1) {
				if (p[0] != ' ' || p[1] != '\'')
					goto bad;
				p += 2;
			} else {
				p++;
			}
			if (n + 3 >= outlen)
				goto bad;
			if (!first)
				out[n++] = ',';
			first = false;
			out[n++] = '"';
			for (;; p++) {
				if (*p == '\0')
					goto bad;
				if (*p == close && !(close == '\'' && p[1] == '\''))
					break;
				if (close == '\'' && *p == '\'')
					p++; /* '' -> ' */
				if (n + 4 >= outlen)
					goto bad;
				if (*p == '"' || *p == '\\')
					out[n++] = '\\';
				out[n++] = *p;
			}
			out[n++] = '"';
			p++;
		}
		if (p[0] == ',' && p[1] == ' ')
			p += 2;
	}
	if (*p != ')' || n + 2 >= outlen)
		goto bad;
	out[n++] = '}';
	out[n] = '\0';
	return 0;
bad:
	set_err(err, errlen, "cannot read the wal2json options back from "
	        "the START_REPLICATION command");
	return -1;
}

static struct w2j_spec cli_spec(const struct relay_config *cfg)
{
	return (struct w2j_spec){
		.schema = cfg->outbox_schema,
		.table = cfg->outbox_table,
		.col_id = cfg->field_id,
		.col_key = cfg->field_key,
		.col_type = cfg->field_type,
		.col_route = cfg->route_by_field,
		.col_payload = cfg->field_payload,
	};
}

/* One row of a peek, decoded. rec is NULL when the decoder refused the
 * record (err says why; the relay would fail-stop on it). */
struct cli_row {
	const char *lsn_text;
	uint64_t lsn;
	int64_t xid;                /* the transaction's, from the row */
	const char *data;
	size_t len;
	const struct w2j_record *rec;
	const char *err;
};

struct cli_peek;
/* Returns 0 to go on, 1 to stop the peek. */
typedef int (*cli_row_fn)(struct cli_peek *pk, const struct cli_row *row);

struct cli_peek {
	const struct relay_config *cfg;
	struct w2j_spec spec;
	const char *slot;           /* the slot to peek (real one or a copy) */
	uint64_t upto_lsn;          /* 0: no bound */
	int64_t upto_nchanges;      /* 0: no bound */
	cli_row_fn on_row;
	void *ctx;
	/* Kept while reading: the transaction the current row belongs to. */
	bool in_txn;
	int64_t txn_xid;
	uint64_t commit_lsn;        /* B's nextlsn: the commit end */
	uint64_t rows;
	bool stopped;               /* on_row asked to stop */
	bool timed_out;
	bool slot_busy;
};

/* Stops a running single-row query and drains what is left. */
static void cli_cancel(PGconn *conn)
{
	PGcancel *c = PQgetCancel(conn);
	char buf[256];
	PGresult *res;

	if (c != NULL) {
		(void)PQcancel(c, buf, sizeof(buf));
		PQfreeCancel(c);
	}
	while ((res = PQgetResult(conn)) != NULL)
		PQclear(res);
}

/* Peeks at pk->slot with pg_logical_slot_peek_changes (nothing is
 * consumed) and hands every row to pk->on_row, decoded with the relay's
 * decoder. Rows are read one at a time (single-row mode). Returns 0, or
 * -1 with err filled (pk->timed_out / slot_busy tell the common cases). */
static int cli_peek_run(PGconn *conn, struct cli_peek *pk, char *err,
                        size_t errlen)
{
	char opts[2048], upto[32], nch[32];
	const char *params[4];
	PGresult *res;
	int rc = 0;

	pk->in_txn = false;
	pk->txn_xid = -1;
	pk->commit_lsn = LSN_INVALID;
	pk->rows = 0;
	pk->stopped = pk->timed_out = pk->slot_busy = false;
	if (cli_plugin_options(pk->cfg, &pk->spec, opts, sizeof(opts), err,
	                       errlen) < 0)
		return -1;
	snprintf(upto, sizeof(upto), LSN_FMT, LSN_ARGS(pk->upto_lsn));
	snprintf(nch, sizeof(nch), "%lld", (long long)pk->upto_nchanges);
	params[0] = pk->slot;
	params[1] = pk->upto_lsn != LSN_INVALID ? upto : NULL;
	params[2] = pk->upto_nchanges > 0 ? nch : NULL;
	params[3] = opts;
	if (!PQsendQueryParams(conn,
	                       "SELECT lsn::text, coalesce(xid::text, ''), data "
	                       "FROM pg_catalog.pg_logical_slot_peek_changes("
	                       "$1, $2::pg_lsn, $3::int, VARIADIC $4::text[])",
	                       4, NULL, params, NULL, NULL, 0) ||
	    !PQsetSingleRowMode(conn)) {
		set_err(err, errlen, "peeking at slot \"%s\": %s", pk->slot,
		        pq_text(PQerrorMessage(conn)));
		return -1;
	}
	while ((res = PQgetResult(conn)) != NULL) {
		ExecStatusType st = PQresultStatus(res);
		if (st == PGRES_SINGLE_TUPLE && rc == 0 && !pk->stopped) {
			struct w2j_record rec;
			struct cli_row row = { 0 };
			char derr[1024];
			row.lsn_text = PQgetvalue(res, 0, 0);
			row.lsn = col_lsn(res, 0, 0);
			row.xid = PQgetvalue(res, 0, 1)[0] ? strtoll(PQgetvalue(res, 0, 1),
			                                             NULL, 10) : -1;
			row.data = PQgetvalue(res, 0, 2);
			row.len = (size_t)PQgetlength(res, 0, 2);
			pk->rows++;
			if (w2j_decode(row.data, row.len, &pk->spec, &rec, derr,
			               sizeof(derr)) == 0) {
				row.rec = &rec;
				if (rec.kind == W2J_BEGIN) {
					pk->in_txn = true;
					pk->txn_xid = rec.xid;
					pk->commit_lsn = rec.nextlsn;
				}
			} else {
				row.err = derr;
			}
			if (pk->on_row(pk, &row) != 0)
				pk->stopped = true;
			if (row.rec != NULL && rec.kind == W2J_COMMIT)
				pk->in_txn = false;
			if (row.rec != NULL)
				w2j_record_clear(&rec);
		} else if (st == PGRES_FATAL_ERROR && rc == 0) {
			pk->timed_out = res_state_is(res, "57014");
			pk->slot_busy = res_state_is(res, "55006");
			set_err(err, errlen, "peeking at slot \"%s\": %s", pk->slot,
			        res_text(res, conn));
			rc = -1;
		}
		PQclear(res);
		if (pk->stopped) {
			cli_cancel(conn);
			break;
		}
	}
	return rc;
}

/* The id column of a wal2json I record the decoder refused, for the
 * lists an operator reads. Returns true when raw is an I record of the
 * outbox table (then out holds the id, or "?"). */
static bool cli_raw_event_id(const struct w2j_spec *spec, const char *raw,
                             size_t len, char *out, size_t outlen)
{
	json_t *root = json_loadb(raw, len, JSON_DECODE_ANY, NULL);
	json_t *col;
	size_t i;
	bool is_event = false;

	snprintf(out, outlen, "?");
	if (!json_is_object(root))
		goto out;
	if (!json_is_string(json_object_get(root, "action")) ||
	    strcmp(json_string_value(json_object_get(root, "action")), "I") != 0 ||
	    !json_is_string(json_object_get(root, "schema")) ||
	    !json_is_string(json_object_get(root, "table")) ||
	    strcmp(json_string_value(json_object_get(root, "schema")), spec->schema) ||
	    strcmp(json_string_value(json_object_get(root, "table")), spec->table))
		goto out;
	is_event = true;
	json_array_foreach(json_object_get(root, "columns"), i, col) {
		json_t *name = json_object_get(col, "name"), *v;
		if (!json_is_string(name) ||
		    strcmp(json_string_value(name), spec->col_id) != 0)
			continue;
		v = json_object_get(col, "value");
		if (json_is_string(v))
			snprintf(out, outlen, "%s", json_string_value(v));
		else if (json_is_integer(v))
			snprintf(out, outlen, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	}
out:
	json_decref(root);
	return is_event;
}

/* What the relay would produce for an event: topic and headers. Returns
 * 0, or -1 with the relay's fail-stop reason in err. */
static int cli_route(const struct cli_peek *pk, const struct w2j_record *rec,
                     char *topic, size_t topiclen, struct route_headers *h,
                     char *err, size_t errlen)
{
	char rerr[512];

	route_headers(h, rec, pk->commit_lsn);
	if (!pk->in_txn) {
		set_err(err, errlen, "insert record outside a transaction (is "
		        "include-transaction off?)");
		return -1;
	}
	if (route_topic(pk->cfg->route_topic_replacement, rec->route.ptr,
	                rec->route.len, topic, topiclen, rerr, sizeof(rerr)) < 0) {
		set_err(err, errlen, "event id %s: %s", rec->id.ptr, rerr);
		return -1;
	}
	return 0;
}

/* Counts the outbox events of a peek: what a drop or an advance would
 * make unpublishable. */
struct cli_tally {
	uint64_t events;
	uint64_t poison;            /* events the relay would fail-stop on */
	uint64_t txns;              /* transactions with events */
	uint64_t txn_events;        /* in the current transaction */
	char ids[CLI_SHOW_IDS][80];
	size_t nids;
};

static void tally_id(struct cli_tally *t, const char *id)
{
	if (t->nids < CLI_SHOW_IDS)
		snprintf(t->ids[t->nids++], sizeof(t->ids[0]), "%s", id);
}

static int tally_row(struct cli_peek *pk, const struct cli_row *row)
{
	struct cli_tally *t = pk->ctx;
	char id[80];

	if (row->rec == NULL) {
		if (cli_raw_event_id(&pk->spec, row->data, row->len, id, sizeof(id))) {
			t->events++;
			t->poison++;
			t->txn_events++;
			tally_id(t, id);
		}
		return 0;
	}
	switch (row->rec->kind) {
	case W2J_EVENT:
		t->events++;
		t->txn_events++;
		tally_id(t, row->rec->id.ptr);
		break;
	case W2J_COMMIT:
		if (t->txn_events > 0)
			t->txns++;
		t->txn_events = 0;
		break;
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------ Kafka */

/* Kafka texts can in principle quote a property value: secret values
 * are masked before anything is printed. */
static void cli_redact(const struct relay_config *cfg, char *buf)
{
	for (size_t i = 0; i < cfg->kafka_len; i++) {
		const char *v = cfg->kafka[i].value;
		char *at;
		if (!cfg_kafka_is_secret(cfg->kafka[i].name) || v[0] == '\0')
			continue;
		while ((at = strstr(buf, v)) != NULL)
			memset(at, '*', strlen(v));
	}
}

/* State shared with librdkafka's callbacks; they run inside
 * rd_kafka_poll()/rd_kafka_flush() on this thread. */
struct cli_kafka {
	char last_error[512];
	uint64_t acked, failed;
	char first_failure[512];
};

static void cli_kafka_error(rd_kafka_t *rk, int err, const char *reason,
                            void *opaque)
{
	struct cli_kafka *k = opaque;

	(void)rk;
	snprintf(k->last_error, sizeof(k->last_error), "%s: %s",
	         rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static void cli_kafka_log(const rd_kafka_t *rk, int level, const char *fac,
                          const char *buf)
{
	/* Errors reach cli_kafka_error; the chatter stays out of a CLI. */
	(void)rk, (void)level, (void)fac, (void)buf;
}

static void cli_kafka_dr(rd_kafka_t *rk, const rd_kafka_message_t *m,
                         void *opaque)
{
	struct cli_kafka *k = opaque;

	(void)rk;
	if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		k->acked++;
		return;
	}
	if (k->failed++ == 0)
		snprintf(k->first_failure, sizeof(k->first_failure), "%s",
		         rd_kafka_err2str(m->err));
}

/* A producer from cfg's kafka.* properties with the relay's safety
 * defaults, and a message timeout of timeout_ms so that nothing here
 * waits forever. Returns NULL with err filled (secrets withheld). */
static rd_kafka_t *cli_kafka_new(const struct relay_config *cfg,
                                 int64_t timeout_ms, struct cli_kafka *k,
                                 char *err, size_t errlen)
{
	static const char *const safe[][2] = {
		{ "enable.idempotence", "true" },
		{ "acks", "all" },
		{ "partitioner", "murmur2_random" },
		{ "client.id", "outbox-relay-cli" },
	};
	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	char kerr[512], num[32];
	rd_kafka_t *rk;

	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (cfg_kafka_get(cfg, safe[i][0]) == NULL &&
		    rd_kafka_conf_set(kc, safe[i][0], safe[i][1], kerr,
		                      sizeof(kerr)) != RD_KAFKA_CONF_OK)
			goto bad;
	for (size_t i = 0; i < cfg->kafka_len; i++) {
		if (rd_kafka_conf_set(kc, cfg->kafka[i].name, cfg->kafka[i].value,
		                      kerr, sizeof(kerr)) != RD_KAFKA_CONF_OK) {
			set_err(err, errlen, "kafka.%s: %s", cfg->kafka[i].name,
			        cfg_kafka_is_secret(cfg->kafka[i].name)
			                ? "invalid value (not shown: secret)" : kerr);
			rd_kafka_conf_destroy(kc);
			return NULL;
		}
	}
	snprintf(num, sizeof(num), "%lld", (long long)timeout_ms);
	if (rd_kafka_conf_set(kc, "message.timeout.ms", num, kerr,
	                      sizeof(kerr)) != RD_KAFKA_CONF_OK)
		goto bad;
	rd_kafka_conf_set_opaque(kc, k);
	rd_kafka_conf_set_error_cb(kc, cli_kafka_error);
	rd_kafka_conf_set_log_cb(kc, cli_kafka_log);
	rd_kafka_conf_set_dr_msg_cb(kc, cli_kafka_dr);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, kerr, sizeof(kerr));
	if (rk == NULL) {
		cli_redact(cfg, kerr);
		set_err(err, errlen, "creating a Kafka client: %s", kerr);
		rd_kafka_conf_destroy(kc);
	}
	return rk;
bad:
	set_err(err, errlen, "kafka: %s", kerr);
	rd_kafka_conf_destroy(kc);
	return NULL;
}

/* ------------------------------------------------------------ slot ledger */

/* The ledger key of the slot (ledger.h): the server's system identifier
 * comes from IDENTIFY_SYSTEM, which any role that may stream can run. */
static int cli_ledger_key(const struct relay_config *cfg, const char *database,
                          char *key, size_t keylen, char *err, size_t errlen)
{
	PGconn *conn = cli_connect(cfg, true, 0, err, errlen);
	PGresult *res;
	int rc = -1;

	if (conn == NULL)
		return -1;
	res = PQexec(conn, "IDENTIFY_SYSTEM");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		set_err(err, errlen, "IDENTIFY_SYSTEM: %s", res_text(res, conn));
	} else if (ledger_key(PQgetvalue(res, 0, 0), database, cfg->slot_name, key,
	                      keylen) < 0) {
		set_err(err, errlen, "slot ledger key too long");
	} else {
		rc = 0;
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* One read of the ledger (a reader opened for it). */
static int cli_ledger_read(const struct relay_config *cfg, const char *key,
                           bool create, struct ledger_entry *e, char *err,
                           size_t errlen)
{
	struct ledger *l = ledger_open(cfg, err, errlen);
	int rc;

	if (l == NULL)
		return -1;
	rc = ledger_read(l, key, create, e, 10000, err, errlen);
	ledger_close(l);
	return rc;
}

/* Records in the slot ledger, before the slot moves there, that it is at
 * lsn (what: who moves it): otherwise the relay would refuse the slot as
 * moved behind its back. Returns 0 (also when the ledger is off), or -1
 * after printing why; then the caller must not move the slot. */
static int cli_ledger_record(const struct relay_config *cfg,
                             const char *database, uint64_t lsn,
                             const char *what)
{
	char key[256], err[1400], sysid[32];
	char *value;
	int rc;

	if (cfg->slot_ledger_topic[0] == '\0')
		return 0;
	if (cli_ledger_key(cfg, database, key, sizeof(key), err, sizeof(err)) < 0) {
		cli_err("slot ledger: %s", err);
		return -1;
	}
	snprintf(sysid, sizeof(sysid), "%.*s", (int)strcspn(key, "/"), key);
	value = ledger_value(sysid, database, cfg->slot_name, lsn, what);
	rc = ledger_write(cfg, key, value, 10000, err, sizeof(err));
	free(value);
	if (rc < 0) {
		cli_err("slot ledger: %s", err);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ --accept-slot */

/* The relay refuses a slot whose position is past what the ledger holds
 * (dropped and created again, advanced by hand). After an operator made
 * sure that was deliberate, this records the slot's position as it is. */
static int act_accept_slot(const struct relay_config *cfg,
                           const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct ledger_entry e;
	struct cli_slot s;
	char err[1400], key[256];
	PGconn *conn;
	int rc = RELAY_EXIT_UNAVAILABLE;

	if (cfg->slot_ledger_topic[0] == '\0') {
		cli_err("slot.ledger.topic is empty: there is no ledger to record in");
		return RELAY_EXIT_CONFIG;
	}
	conn = cli_connect(cfg, false, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, SLOT_ALLOW_ACTIVE)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (cli_ledger_key(cfg, s.database, key, sizeof(key), err, sizeof(err)) < 0 ||
	    cli_ledger_read(cfg, key, true, &e, err, sizeof(err)) < 0) {
		cli_err("slot ledger: %s", err);
		goto out;
	}
	if (e.found && s.confirmed_lsn <= e.lsn) {
		printf("slot \"%s\" at " LSN_FMT " is not past the ledger's " LSN_FMT
		       " (by %s at %s): nothing to accept\n", name,
		       LSN_ARGS(s.confirmed_lsn), LSN_ARGS(e.lsn), e.by, e.at);
		rc = RELAY_EXIT_OK;
		goto out;
	}
	if (!o->yes) {
		cli_err("refusing to accept slot \"%s\" at " LSN_FMT " without --yes: "
		        "events committed after " LSN_FMT " and before it may never "
		        "have been published", name, LSN_ARGS(s.confirmed_lsn),
		        LSN_ARGS(e.found ? e.lsn : 0));
		rc = RELAY_EXIT_USAGE;
		goto out;
	}
	if (cli_ledger_record(cfg, s.database, s.confirmed_lsn, "accept-slot") < 0)
		goto out;
	fprintf(stderr, "AUDIT: slot %s accepted at " LSN_FMT " by user %s (the "
	        "ledger had " LSN_FMT "%s%s)\n", name, LSN_ARGS(s.confirmed_lsn),
	        s.user, LSN_ARGS(e.found ? e.lsn : 0), e.found ? ", by " : "",
	        e.found ? e.by : "");
	printf("slot \"%s\" accepted at " LSN_FMT ": the relay streams from it "
	       "again\n", name, LSN_ARGS(s.confirmed_lsn));
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --create-slot */

static int create_exists(const struct cli_opts *o, const struct cli_slot *s,
                         const char *name)
{
	bool fit = s->logical && strcmp(s->plugin, "wal2json") == 0 &&
	           s->same_db && !cli_slot_lost(s);

	if (!o->if_not_exists) {
		cli_err("replication slot \"%s\" already exists (plugin %s, "
		        "confirmed_flush_lsn " LSN_FMT "); --if-not-exists accepts "
		        "an existing wal2json slot", name, s->plugin,
		        LSN_ARGS(s->confirmed_lsn));
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (!fit)
		return cli_slot_usable(s, name, SLOT_ALLOW_ACTIVE);
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "created", json_false());
		json_object_set_new(j, "plugin", j_str(s->plugin));
		json_object_set_new(j, "confirmed_flush_lsn", j_lsn(s->confirmed_lsn));
		cli_json_out(j);
	} else {
		printf("slot \"%s\" already exists (plugin wal2json, "
		       "confirmed_flush_lsn " LSN_FMT "): nothing to do\n", name,
		       LSN_ARGS(s->confirmed_lsn));
	}
	return RELAY_EXIT_OK;
}

static int act_create_slot(const struct relay_config *cfg,
                           const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct cli_slot s;
	char err[1400], sql[256];
	PGresult *res = NULL;
	PGconn *conn;
	int rc = RELAY_EXIT_UNAVAILABLE;

	conn = cli_connect(cfg, true, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if (s.exists) {
		rc = create_exists(o, &s, name);
		goto out;
	}
	/* slot.name is [a-z0-9_] (config.c), so it needs no escaping. */
	snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT \"%s\" LOGICAL "
	         "wal2json NOEXPORT_SNAPSHOT", name);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) < 2) {
		if (res_state_is(res, "42710") &&
		    cli_slot_read(conn, name, &s, err, sizeof(err)) == 0 && s.exists) {
			rc = create_exists(o, &s, name); /* created meanwhile */
			goto out;
		}
		cli_err("creating replication slot \"%s\": %s", name,
		        res_text(res, conn));
		goto out;
	}
	{
		/* A slot created on purpose: recorded, so the relay takes it even
		 * where the ledger knew an older slot of that name. */
		uint64_t cp = 0;
		const char *v = PQgetvalue(res, 0, 1);
		if (lsn_parse(v, strlen(v), &cp) < 0 ||
		    cli_slot_read(conn, name, &s, err, sizeof(err)) < 0 ||
		    cli_ledger_record(cfg, s.database, cp, "create-slot") < 0)
			cli_err("slot \"%s\" was created but not recorded in the slot "
			        "ledger: if the relay refuses it, run outbox-relay "
			        "--accept-slot --yes", name);
	}
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "created", json_true());
		json_object_set_new(j, "plugin", json_string("wal2json"));
		json_object_set_new(j, "consistent_point", j_str(PQgetvalue(res, 0, 1)));
		cli_json_out(j);
	} else {
		printf("created slot \"%s\" (plugin wal2json), consistent point %s: "
		       "events committed after it will be published\n", name,
		       PQgetvalue(res, 0, 1));
	}
	rc = RELAY_EXIT_OK;
out:
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --drop-slot */

static void drop_report(const struct cli_opts *o, const char *name,
                        const struct cli_slot *s, const struct cli_tally *t,
                        bool counted, bool cut, const char *why_unknown)
{
	char rel[32], ids[1024], conf[32];

	cli_fmt_bytes(rel, sizeof(rel), s->retained_bytes);
	cli_ids_text((char (*)[80])t->ids, t->nids, t->events, ids, sizeof(ids));
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "dropped", json_true());
		json_object_set_new(j, "restart_lsn", j_lsn(s->restart_lsn));
		json_object_set_new(j, "confirmed_flush_lsn",
		                    s->confirmed_known ? j_lsn(s->confirmed_lsn)
		                                       : json_null());
		json_object_set_new(j, "released_wal_bytes",
		                    s->retained_bytes >= 0
		                            ? json_integer(s->retained_bytes)
		                            : json_null());
		json_object_set_new(j, "unconfirmed_events",
		                    counted ? json_integer((json_int_t)t->events)
		                            : json_null());
		json_object_set_new(j, "unconfirmed_events_exact",
		                    json_boolean(counted && !cut));
		json_object_set_new(j, "unconfirmed_event_ids",
		                    cli_ids_json((char (*)[80])t->ids, t->nids));
		cli_json_out(j);
		return;
	}
	if (s->confirmed_known)
		snprintf(conf, sizeof(conf), LSN_FMT, LSN_ARGS(s->confirmed_lsn));
	else
		snprintf(conf, sizeof(conf), "unknown (invalidated)");
	printf("slot \"%s\": restart_lsn " LSN_FMT ", confirmed_flush_lsn %s, "
	       "server WAL at " LSN_FMT "\n", name, LSN_ARGS(s->restart_lsn), conf,
	       LSN_ARGS(s->current_lsn));
	if (s->retained_bytes >= 0)
		printf("released WAL: %lld bytes (%s)\n",
		       (long long)s->retained_bytes, rel);
	else
		printf("released WAL: unknown (restart_lsn is gone)\n");
	if (!counted)
		printf("unconfirmed outbox events: unknown (%s)\n", why_unknown);
	else
		printf("unconfirmed outbox events that will never be published from "
		       "this slot: %s%llu in %llu transaction%s%s%s%s\n",
		       cut ? "at least " : "", (unsigned long long)t->events,
		       (unsigned long long)t->txns, pl(t->txns),
		       t->nids ? " (ids: " : "", ids, t->nids ? ")" : "");
	printf("dropped slot \"%s\"\n", name);
}

static int act_drop_slot(const struct relay_config *cfg,
                         const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct cli_tally t = { 0 };
	struct cli_peek pk = { 0 };
	struct cli_slot s;
	char err[1400], why[1400] = "";
	const char *params[1] = { name };
	PGresult *res = NULL;
	PGconn *conn;
	bool counted = false;
	int rc = RELAY_EXIT_UNAVAILABLE;

	if (!o->yes) {
		cli_err("refusing to drop slot \"%s\" without --yes: every event it "
		        "has not confirmed is then never published, and a new slot "
		        "starts at the current WAL", name);
		return RELAY_EXIT_USAGE;
	}
	conn = cli_connect(cfg, false, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, SLOT_ALLOW_LOST)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (cli_slot_lost(&s)) {
		snprintf(why, sizeof(why), "the slot is invalidated: its WAL is gone");
	} else {
		pk.cfg = cfg;
		pk.spec = cli_spec(cfg);
		pk.slot = name;
		pk.upto_nchanges = CLI_DROP_PEEK_ROWS;
		pk.on_row = tally_row;
		pk.ctx = &t;
		if (cli_peek_run(conn, &pk, err, sizeof(err)) == 0)
			counted = true;
		else if (pk.slot_busy) {
			cli_err("%s", err);
			goto out;
		} else
			snprintf(why, sizeof(why), "%s", err);
	}
	res = PQexecParams(conn, "SELECT pg_catalog.pg_drop_replication_slot($1)",
	                   1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		cli_err("dropping slot \"%s\": %s", name, res_text(res, conn));
		goto out;
	}
	drop_report(o, name, &s, &t, counted,
	            counted && pk.rows >= (uint64_t)CLI_DROP_PEEK_ROWS, why);
	rc = RELAY_EXIT_OK;
out:
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --slot-status */

static int64_t col_i64(const PGresult *res, int c)
{
	return strtoll(PQgetvalue(res, 0, c), NULL, 10);
}

/* One watchdog sample (the query of watchdog.c) into f. */
static int status_sample(PGconn *conn, const char *slot,
                         struct slot_figures *f, char *err, size_t errlen)
{
	const char *params[1] = { slot };
	PGresult *res = PQexecParams(conn, wd_sample_sql, 1, NULL, params, NULL,
	                             NULL, 0);
	int rc = -1;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != 22) {
		set_err(err, errlen, "sample query failed: %s", res_text(res, conn));
		goto out;
	}
	memset(f, 0, sizeof(*f));
	f->valid = true;
	f->sampled_at_us = now_wall_us();
	f->slot_exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	f->active = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	f->active_pid = (int)col_i64(res, 2);
	f->restart_lsn = col_lsn(res, 0, 3);
	f->confirmed_flush_lsn = col_lsn(res, 0, 4);
	snprintf(f->wal_status, sizeof(f->wal_status), "%s", PQgetvalue(res, 0, 5));
	f->safe_wal_size = col_i64(res, 6);
	f->current_lsn = col_lsn(res, 0, 7);
	f->retained_bytes = col_i64(res, 8);
	f->confirmed_lag_bytes = col_i64(res, 9);
	f->max_slot_wal_keep_size = PQgetisnull(res, 0, 10) ? -1 : col_i64(res, 10);
	f->spill_txns = col_i64(res, 11);
	f->spill_count = col_i64(res, 12);
	f->spill_bytes = col_i64(res, 13);
	f->stream_txns = col_i64(res, 14);
	f->stream_count = col_i64(res, 15);
	f->stream_bytes = col_i64(res, 16);
	f->total_txns = col_i64(res, 17);
	f->total_bytes = col_i64(res, 18);
	f->oldest_xact_pid = (int)col_i64(res, 19);
	f->oldest_xact_age = col_i64(res, 20);
	f->oldest_xact_seconds = strtod(PQgetvalue(res, 0, 21), NULL);
	rc = 0;
out:
	PQclear(res);
	return rc;
}

static void status_thresholds(const struct relay_config *cfg,
                              struct health_thresholds *th)
{
	/* As monitor.c's mon_start() sets them. */
	*th = (struct health_thresholds){
		.retained_warn_bytes = cfg->watchdog_retained_warn_bytes,
		.retained_critical_bytes = cfg->watchdog_retained_critical_bytes,
		.lag_warn_bytes = cfg->watchdog_lag_warn_bytes,
		.lag_critical_bytes = cfg->watchdog_lag_critical_bytes,
		.outbox_lag_warn_s = cfg->watchdog_outbox_lag_warn_ms / 1000,
		.outbox_lag_critical_s = cfg->watchdog_outbox_lag_critical_ms / 1000,
		.eta_warn_s = cfg->watchdog_eta_warn_ms / 1000,
		.eta_critical_s = cfg->watchdog_eta_critical_ms / 1000,
		.wal_budget_bytes = cfg->watchdog_wal_budget_bytes,
	};
}

static void status_print(const struct health_snapshot *s)
{
	const struct slot_figures *f = &s->slot;
	char a[32], b[32];

	printf("slot \"%s\": %s%s%s\n", s->slot_name,
	       health_state_name(s->eval.state), s->eval.reasons[0] ? ": " : "",
	       s->eval.reasons);
	if (!f->slot_exists) {
		printf("  server WAL at " LSN_FMT "\n", LSN_ARGS(f->current_lsn));
		return;
	}
	printf("  active: %s", f->active ? "yes" : "no");
	if (f->active)
		printf(" (PID %d)", f->active_pid);
	printf(", wal_status: %s\n", f->wal_status[0] ? f->wal_status : "unknown");
	printf("  restart_lsn " LSN_FMT ", confirmed_flush_lsn " LSN_FMT
	       ", server WAL at " LSN_FMT "\n", LSN_ARGS(f->restart_lsn),
	       LSN_ARGS(f->confirmed_flush_lsn), LSN_ARGS(f->current_lsn));
	cli_fmt_bytes(a, sizeof(a), f->retained_bytes);
	cli_fmt_bytes(b, sizeof(b), f->confirmed_lag_bytes);
	printf("  retained WAL %s (%lld bytes), confirmed lag %s (%lld bytes)\n", a,
	       (long long)f->retained_bytes, b, (long long)f->confirmed_lag_bytes);
	if (f->max_slot_wal_keep_size < 0) {
		printf("  max_slot_wal_keep_size: unlimited\n");
	} else {
		cli_fmt_bytes(a, sizeof(a), f->max_slot_wal_keep_size);
		cli_fmt_bytes(b, sizeof(b), f->safe_wal_size);
		printf("  max_slot_wal_keep_size %s, safe_wal_size %s\n", a,
		       f->safe_wal_size == -1 ? "unknown" : b);
	}
	printf("  spilled %lld transactions (%lld bytes), decoded %lld "
	       "transactions\n", (long long)f->spill_txns,
	       (long long)f->spill_bytes, (long long)f->total_txns);
	if (f->oldest_xact_pid != 0)
		printf("  oldest transaction with an xid: PID %d, age %lld, %.0f s\n",
		       f->oldest_xact_pid, (long long)f->oldest_xact_age,
		       f->oldest_xact_seconds);
}

static int act_slot_status(const struct relay_config *cfg,
                           const struct cli_opts *o)
{
	struct health_snapshot *s = xcalloc(1, sizeof(*s));
	char err[1400];
	PGconn *conn;
	int rc = 3;

	conn = cli_connect(cfg, false, 10000, err, sizeof(err));
	if (conn == NULL || status_sample(conn, cfg->slot_name, &s->slot, err,
	                                  sizeof(err)) < 0) {
		/* Nagios UNKNOWN: nothing could be measured. */
		cli_err("slot \"%s\": unknown: %s", cfg->slot_name, err);
		goto out;
	}
	snprintf(s->slot_name, sizeof(s->slot_name), "%s", cfg->slot_name);
	status_thresholds(cfg, &s->thresholds);
	snprintf(s->relay.state, sizeof(s->relay.state), "not running");
	snprintf(s->relay.reason, sizeof(s->relay.reason), "%s",
	         s->slot.active ? "outbox-relay --slot-status: one sample; the "
	                          "streaming relay's own figures are on its /slot"
	                        : "outbox-relay --slot-status: one sample; no "
	                          "process streams from the slot");
	s->relay.heartbeat_rtt_us = -1;
	s->relay.broker_rtt_us = -1;
	s->relay.kafka_queue_msgs = -1;
	s->now_us = now_wall_us();
	/* One sample: no growth rate, hence no ETA. */
	health_evaluate(&s->slot, &s->relay, &s->thresholds, 0, s->now_us,
	                &s->eval);
	if (o->json) {
		char *body = health_render_slot_json(s, false);
		fputs(body, stdout);
		free(body);
	} else {
		status_print(s);
	}
	switch (s->eval.state) {
	case HEALTH_OK:
		rc = 0;
		break;
	case HEALTH_WARN:
		rc = 1;
		break;
	case HEALTH_CRITICAL:
		rc = 2;
		break;
	case HEALTH_FATAL:
		rc = 3;
		break;
	}
out:
	PQfinish(conn);
	free(s);
	return rc;
}

/* ------------------------------------------------------------ advancing */

/* Moves the slot to target with pg_replication_slot_advance and prints
 * the audit line. *moved_to gets the slot's new position. Returns 0 or
 * RELAY_EXIT_UNAVAILABLE. */
static int cli_advance(const struct relay_config *cfg, PGconn *conn,
                       const char *name, const char *database, uint64_t from,
                       uint64_t target, const char *user, uint64_t events,
                       const char *ids, const char *what, uint64_t *moved_to)
{
	char lsn[32], now[32];
	const char *params[2] = { name, lsn };
	PGresult *res;
	int rc = RELAY_EXIT_UNAVAILABLE;

	/* The ledger first: a slot found past it is refused by the relay. */
	if (cli_ledger_record(cfg, database, target,
	                      what[0] ? "skip-transaction" : "advance-slot") < 0) {
		cli_err("slot \"%s\" was not advanced", name);
		return RELAY_EXIT_UNAVAILABLE;
	}
	snprintf(lsn, sizeof(lsn), LSN_FMT, LSN_ARGS(target));
	res = PQexecParams(conn, "SELECT end_lsn::text FROM "
	                   "pg_catalog.pg_replication_slot_advance($1, $2::pg_lsn)",
	                   2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		cli_err("advancing slot \"%s\": %s", name, res_text(res, conn));
		goto out;
	}
	*moved_to = col_lsn(res, 0, 0);
	cli_now_text(now, sizeof(now));
	fprintf(stderr, "AUDIT: slot %s advanced from " LSN_FMT " to " LSN_FMT
	        " by user %s at %s, skipping %llu events (ids %s)%s\n", name,
	        LSN_ARGS(from), LSN_ARGS(*moved_to), user, now,
	        (unsigned long long)events, ids[0] ? ids : "none", what);
	fflush(stderr);
	rc = RELAY_EXIT_OK;
out:
	PQclear(res);
	return rc;
}

/* ------------------------------------------------------------ --advance-slot */

static int act_advance_slot(const struct relay_config *cfg,
                            const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct cli_tally t = { 0 };
	struct cli_peek pk = { 0 };
	struct cli_slot s;
	char err[1400], ids[1024];
	uint64_t target, moved = 0;
	PGconn *conn;
	int rc = RELAY_EXIT_UNAVAILABLE;

	if (lsn_parse(o->arg, strlen(o->arg), &target) < 0 || target == 0) {
		cli_err("--advance-slot: \"%s\" is not an LSN (X/X)", o->arg);
		return RELAY_EXIT_USAGE;
	}
	if (!o->yes) {
		cli_err("refusing to advance slot \"%s\" without --yes: every event "
		        "committed before " LSN_FMT " and not yet published is "
		        "skipped for good (--dry-run shows them)", name,
		        LSN_ARGS(target));
		return RELAY_EXIT_USAGE;
	}
	conn = cli_connect(cfg, false, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, 0)) != 0)
		goto out;
	if (target <= s.confirmed_lsn || target > s.current_lsn) {
		cli_err("refusing to advance slot \"%s\" to " LSN_FMT ": it must be "
		        "past confirmed_flush_lsn " LSN_FMT " (a slot only moves "
		        "forward) and not past the server's WAL at " LSN_FMT, name,
		        LSN_ARGS(target), LSN_ARGS(s.confirmed_lsn),
		        LSN_ARGS(s.current_lsn));
		rc = RELAY_EXIT_DATAERR;
		goto out;
	}
	rc = RELAY_EXIT_UNAVAILABLE;
	pk.cfg = cfg;
	pk.spec = cli_spec(cfg);
	pk.slot = name;
	pk.upto_lsn = target;
	pk.on_row = tally_row;
	pk.ctx = &t;
	if (cli_peek_run(conn, &pk, err, sizeof(err)) < 0) {
		cli_err("%s (nothing was advanced)", err);
		goto out;
	}
	cli_ids_text(t.ids, t.nids, t.events, ids, sizeof(ids));
	if (!o->json)
		printf("advancing slot \"%s\" from " LSN_FMT " to " LSN_FMT
		       " skips %llu outbox event%s in %llu transaction%s%s%s%s\n",
		       name, LSN_ARGS(s.confirmed_lsn), LSN_ARGS(target),
		       (unsigned long long)t.events, pl(t.events),
		       (unsigned long long)t.txns, pl(t.txns),
		       t.nids ? " (ids: " : "", ids, t.nids ? ")" : "");
	fflush(stdout);
	rc = cli_advance(cfg, conn, name, s.database, s.confirmed_lsn, target,
	                 s.user, t.events, ids, "", &moved);
	if (rc != 0)
		goto out;
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "from", j_lsn(s.confirmed_lsn));
		json_object_set_new(j, "to", j_lsn(moved));
		json_object_set_new(j, "skipped_events", json_integer((json_int_t)t.events));
		json_object_set_new(j, "skipped_transactions",
		                    json_integer((json_int_t)t.txns));
		json_object_set_new(j, "skipped_event_ids", cli_ids_json(t.ids, t.nids));
		cli_json_out(j);
	} else {
		printf("slot \"%s\" advanced to " LSN_FMT "\n", name, LSN_ARGS(moved));
	}
out:
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --skip-transaction */

struct skip_event {
	char id[80];
	char topic[256];
	char error[512];
};

struct cli_skip {
	int64_t want_xid;
	int64_t first_xid;          /* -1 until the first B */
	bool done;                  /* the first transaction's C was seen */
	uint64_t commit_end;
	uint64_t events;
	struct skip_event *shown;   /* CLI_SHOW_EVENTS */
	size_t nshown;
	char ids[CLI_SHOW_IDS][80];
	size_t nids;
	/* Second pass, --to-dlq only. */
	rd_kafka_t *rk;
	const char *dlq;
	uint64_t produced;
	char produce_error[512];
};

/* One event of the first transaction to the dead-letter topic: the
 * record the relay would have produced (or the raw wal2json record when
 * it cannot be decoded) with the operator's reason and the error. */
static int skip_produce(struct cli_peek *pk, struct cli_skip *k,
                        const struct cli_row *row, const char *id,
                        const char *topic, const char *error)
{
	rd_kafka_headers_t *hdrs = rd_kafka_headers_new(10);
	struct route_headers h;
	const struct w2j_record *rec = row->rec;
	char lsn[32], xid[32];
	rd_kafka_resp_err_t e;

	if (rec != NULL) {
		route_headers(&h, rec, pk->commit_lsn);
		for (int i = 0; i < ROUTE_H_COUNT; i++)
			if (h.value[i] != NULL)
				rd_kafka_header_add(hdrs, h.name[i], -1, h.value[i],
				                    (ssize_t)h.len[i]);
	} else {
		snprintf(lsn, sizeof(lsn), LSN_FMT, LSN_ARGS(pk->commit_lsn));
		snprintf(xid, sizeof(xid), "%lld", (long long)row->xid);
		rd_kafka_header_add(hdrs, "id", -1, id, -1);
		rd_kafka_header_add(hdrs, "pg_lsn", -1, lsn, -1);
		rd_kafka_header_add(hdrs, "pg_xid", -1, xid, -1);
	}
	rd_kafka_header_add(hdrs, "dlq_reason", -1, CLI_DLQ_REASON, -1);
	if (error[0] != '\0')
		rd_kafka_header_add(hdrs, "error", -1, error, -1);
	if (topic[0] != '\0')
		rd_kafka_header_add(hdrs, "original_topic", -1, topic, -1);
	for (;;) {
		e = rd_kafka_producev(
			k->rk, RD_KAFKA_V_TOPIC(k->dlq),
			RD_KAFKA_V_KEY(rec ? rec->key.ptr : NULL, rec ? rec->key.len : 0),
			RD_KAFKA_V_VALUE(rec ? (void *)rec->payload.ptr : (void *)row->data,
			                 rec ? rec->payload.len : row->len),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(hdrs),
			RD_KAFKA_V_END);
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		rd_kafka_poll(k->rk, 100);
	}
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_headers_destroy(hdrs);
		snprintf(k->produce_error, sizeof(k->produce_error),
		         "event id %s: %s", id, rd_kafka_err2str(e));
		return 1;
	}
	k->produced++;
	rd_kafka_poll(k->rk, 0);
	return 0;
}

static int skip_row(struct cli_peek *pk, const struct cli_row *row)
{
	struct cli_skip *k = pk->ctx;
	const struct w2j_record *rec = row->rec;
	struct route_headers h;
	char id[80], topic[256] = "", error[512] = "";

	if (rec != NULL && rec->kind == W2J_BEGIN && k->first_xid < 0)
		k->first_xid = rec->xid;
	if (k->first_xid < 0 || !pk->in_txn)
		return 0; /* non-transactional messages before it */
	if (rec != NULL && rec->kind == W2J_COMMIT) {
		k->done = true;
		k->commit_end = rec->nextlsn;
		return 1;
	}
	if (rec != NULL && rec->kind != W2J_EVENT)
		return 0;
	if (rec == NULL) {
		if (!cli_raw_event_id(&pk->spec, row->data, row->len, id, sizeof(id)))
			snprintf(id, sizeof(id), "(undecodable record)");
		snprintf(error, sizeof(error), "%s", row->err);
	} else {
		snprintf(id, sizeof(id), "%s", rec->id.ptr);
		if (cli_route(pk, rec, topic, sizeof(topic), &h, error,
		              sizeof(error)) < 0)
			topic[0] = '\0';
	}
	k->events++;
	if (k->nids < CLI_SHOW_IDS)
		snprintf(k->ids[k->nids++], sizeof(k->ids[0]), "%s", id);
	if (k->shown != NULL && k->nshown < CLI_SHOW_EVENTS) {
		struct skip_event *ev = &k->shown[k->nshown++];
		snprintf(ev->id, sizeof(ev->id), "%s", id);
		snprintf(ev->topic, sizeof(ev->topic), "%s", topic);
		snprintf(ev->error, sizeof(ev->error), "%s", error);
	}
	if (k->rk != NULL && k->first_xid == k->want_xid)
		return skip_produce(pk, k, row, id, topic, error);
	return 0;
}

/* Finds the first pending transaction: peeks a few rows, then more when
 * non-transactional messages came first. Returns 0 or -1 (err). */
static int skip_find(PGconn *conn, struct cli_peek *pk, struct cli_skip *k,
                     char *err, size_t errlen)
{
	for (int64_t n = 16;; n = n < INT32_MAX / 64 ? n * 64 : 0) {
		k->first_xid = -1;
		k->done = false;
		k->events = k->nshown = k->nids = 0;
		pk->upto_nchanges = n;
		if (cli_peek_run(conn, pk, err, errlen) < 0)
			return -1;
		if (k->done || n == 0 || pk->rows < (uint64_t)n)
			return 0;
	}
}

static void skip_report(const struct cli_opts *o, const char *name,
                        const struct cli_skip *k, uint64_t from,
                        uint64_t moved)
{
	if (o->json) {
		json_t *j = json_object(), *evs = json_array();
		for (size_t i = 0; i < k->nshown; i++) {
			json_t *e = json_object();
			json_object_set_new(e, "id", j_str(k->shown[i].id));
			json_object_set_new(e, "topic", k->shown[i].topic[0]
			                                        ? j_str(k->shown[i].topic)
			                                        : json_null());
			json_object_set_new(e, "error", k->shown[i].error[0]
			                                        ? j_str(k->shown[i].error)
			                                        : json_null());
			json_array_append_new(evs, e);
		}
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "xid", json_integer(k->want_xid));
		json_object_set_new(j, "from", j_lsn(from));
		json_object_set_new(j, "to", j_lsn(moved));
		json_object_set_new(j, "skipped_events", json_integer((json_int_t)k->events));
		json_object_set_new(j, "events", evs);
		json_object_set_new(j, "dlq_topic", o->dlq_topic ? j_str(o->dlq_topic)
		                                                  : json_null());
		json_object_set_new(j, "dlq_published", json_integer((json_int_t)k->produced));
		cli_json_out(j);
		return;
	}
	printf("skipped transaction %lld in slot \"%s\": " LSN_FMT " -> " LSN_FMT
	       ", %llu outbox event%s%s\n", (long long)k->want_xid, name,
	       LSN_ARGS(from), LSN_ARGS(moved), (unsigned long long)k->events,
	       pl(k->events),
	       k->produced ? " (first published to the dead-letter topic)" : "");
	for (size_t i = 0; i < k->nshown; i++)
		printf("  event %s%s%s%s%s\n", k->shown[i].id,
		       k->shown[i].topic[0] ? " topic " : "", k->shown[i].topic,
		       k->shown[i].error[0] ? ": " : "", k->shown[i].error);
	if (k->events > k->nshown)
		printf("  ... and %llu more\n",
		       (unsigned long long)(k->events - k->nshown));
}

/* Publishes the first transaction's events to the dead-letter topic and
 * waits for every delivery report. Returns 0 or RELAY_EXIT_UNAVAILABLE. */
static int skip_to_dlq(const struct relay_config *cfg, PGconn *conn,
                       struct cli_peek *pk, struct cli_skip *k,
                       int64_t timeout_ms)
{
	struct cli_kafka kst = { 0 };
	char err[1400];
	uint64_t events = k->events;
	int rc = RELAY_EXIT_UNAVAILABLE;

	if (cfg_validate((struct relay_config *)cfg, err, sizeof(err)) < 0) {
		/* cfg_validate() only reads; its signature predates const. */
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	k->rk = cli_kafka_new(cfg, timeout_ms, &kst, err, sizeof(err));
	if (k->rk == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	pk->upto_lsn = k->commit_end;    /* exactly up to that transaction */
	pk->upto_nchanges = 0;
	k->first_xid = -1;
	k->done = false;
	k->events = k->nshown = k->nids = 0;
	k->produced = 0;
	if (cli_peek_run(conn, pk, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if (k->produce_error[0] != '\0') {
		cli_err("dead-letter topic: %s; nothing was advanced",
		        k->produce_error);
		goto out;
	}
	if (!k->done || k->first_xid != k->want_xid || k->events != events) {
		cli_err("the slot changed while the dead-letter copy was made "
		        "(first pending xid now %lld); nothing was advanced",
		        (long long)k->first_xid);
		goto out;
	}
	rd_kafka_flush(k->rk, (int)timeout_ms);
	rd_kafka_poll(k->rk, 0);
	if (kst.acked != k->produced) {
		cli_redact(cfg, kst.last_error);
		cli_err("dead-letter topic: %llu of %llu events acknowledged (%s%s%s); "
		        "nothing was advanced", (unsigned long long)kst.acked,
		        (unsigned long long)k->produced,
		        kst.failed ? kst.first_failure : "timed out",
		        kst.last_error[0] ? "; last error: " : "", kst.last_error);
		goto out;
	}
	rc = 0;
out:
	rd_kafka_destroy(k->rk);
	k->rk = NULL;
	return rc;
}

/* XID, --to-dlq and --yes. Returns 0 or RELAY_EXIT_USAGE. */
static int skip_args(const struct cli_opts *o, int64_t *xid)
{
	char topic[256], err[512], *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(o->arg, &end, 10);
	if (errno != 0 || end == o->arg || *end != '\0' || o->arg[0] == '-' ||
	    v > UINT32_MAX) {
		cli_err("--skip-transaction: \"%s\" is not a transaction id", o->arg);
		return RELAY_EXIT_USAGE;
	}
	*xid = (int64_t)v;
	if (o->dlq_topic != NULL &&
	    route_topic(o->dlq_topic, "", 0, topic, sizeof(topic), err,
	                sizeof(err)) < 0) {
		cli_err("--to-dlq: %s", err);
		return RELAY_EXIT_USAGE;
	}
	if (!o->yes) {
		cli_err("refusing to skip transaction %llu without --yes: its "
		        "events are then never published%s", v,
		        o->dlq_topic ? " to their topics" : "");
		return RELAY_EXIT_USAGE;
	}
	return 0;
}

/* Finds the first pending transaction and checks that it is k->want_xid.
 * Returns 0, RELAY_EXIT_DATAERR (not first, nothing pending) or
 * RELAY_EXIT_UNAVAILABLE. */
static int skip_locate(PGconn *conn, struct cli_peek *pk, struct cli_skip *k,
                       const struct cli_slot *s)
{
	const char *name = pk->slot;
	char err[1400];

	if (skip_find(conn, pk, k, err, sizeof(err)) < 0) {
		cli_err("%s (nothing was skipped)", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (k->first_xid < 0 || !k->done) {
		cli_err("slot \"%s\" has no pending transaction (confirmed_flush_lsn "
		        LSN_FMT "): nothing to skip", name, LSN_ARGS(s->confirmed_lsn));
		return RELAY_EXIT_DATAERR;
	}
	if (k->first_xid != k->want_xid) {
		cli_err("refusing to skip transaction %lld: the first pending "
		        "transaction in slot \"%s\" is %lld (commit end " LSN_FMT
		        ", %llu outbox event%s); only the first one can be skipped",
		        (long long)k->want_xid, name, (long long)k->first_xid,
		        LSN_ARGS(k->commit_end), (unsigned long long)k->events,
		        pl(k->events));
		return RELAY_EXIT_DATAERR;
	}
	return 0;
}

/* Skips the first pending transaction, and only when it is the one named:
 * optionally copies its events to a dead-letter topic first, then
 * advances the slot to exactly its commit end. */
static int act_skip_txn(const struct relay_config *cfg,
                        const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct cli_skip k = { 0 };
	struct cli_peek pk = { 0 };
	struct cli_slot s;
	char err[1400], ids[1024], what[512];
	uint64_t moved = 0;
	PGconn *conn;
	int rc;

	if ((rc = skip_args(o, &k.want_xid)) != 0)
		return rc;
	conn = cli_connect(cfg, false, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	rc = RELAY_EXIT_UNAVAILABLE;
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, 0)) != 0)
		goto out;
	k.shown = xcalloc(CLI_SHOW_EVENTS, sizeof(*k.shown));
	k.dlq = o->dlq_topic;
	pk.cfg = cfg;
	pk.spec = cli_spec(cfg);
	pk.slot = name;
	pk.upto_lsn = s.current_lsn;
	pk.on_row = skip_row;
	pk.ctx = &k;
	if ((rc = skip_locate(conn, &pk, &k, &s)) != 0)
		goto out;
	if (o->dlq_topic != NULL &&
	    (rc = skip_to_dlq(cfg, conn, &pk, &k, o->timeout_ms)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	cli_ids_text(k.ids, k.nids, k.events, ids, sizeof(ids));
	snprintf(what, sizeof(what), " of transaction %lld%s%s",
	         (long long)k.want_xid,
	         k.produced ? ", published first to dead-letter topic " : "",
	         k.produced ? o->dlq_topic : "");
	if (cli_advance(cfg, conn, name, s.database, s.confirmed_lsn, k.commit_end,
	                s.user, k.events, ids, what, &moved) != 0)
		goto out;
	if (moved != k.commit_end) {
		cli_err("slot \"%s\" ended at " LSN_FMT ", not at the commit end "
		        LSN_FMT, name, LSN_ARGS(moved), LSN_ARGS(k.commit_end));
		rc = RELAY_EXIT_SOFTWARE;
		goto out;
	}
	skip_report(o, name, &k, s.confirmed_lsn, moved);
	rc = RELAY_EXIT_OK;
out:
	free(k.shown);
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --dry-run */

struct cli_dry {
	int64_t max_events;
	uint64_t events;
	uint64_t txns_with_events;
	bool txn_counted;
	bool poison;
};

static int dry_row(struct cli_peek *pk, const struct cli_row *row)
{
	struct cli_dry *d = pk->ctx;
	const struct w2j_record *rec = row->rec;
	struct route_headers h;
	char topic[256], err[1200];
	json_t *j, *hj;

	if (rec != NULL && rec->kind == W2J_BEGIN)
		d->txn_counted = false;
	if (rec != NULL && rec->kind != W2J_EVENT)
		return 0;
	if (rec == NULL || cli_route(pk, rec, topic, sizeof(topic), &h, err,
	                             sizeof(err)) < 0) {
		/* What the relay would fail-stop on, as it would say it. */
		j = json_object();
		json_object_set_new(j, "error", j_str(rec ? err : row->err));
		json_object_set_new(j, "lsn", j_str(row->lsn_text));
		json_object_set_new(j, "xid", row->xid >= 0 ? json_integer(row->xid)
		                                            : json_null());
		cli_json_out(j);
		d->poison = true;
		return 1;
	}
	j = json_object();
	hj = json_object();
	for (int i = 0; i < ROUTE_H_COUNT; i++)
		if (h.value[i] != NULL)
			json_object_set_new(hj, h.name[i], j_strn(h.value[i], h.len[i]));
	json_object_set_new(j, "topic", j_str(topic));
	json_object_set_new(j, "key", j_strn(rec->key.ptr, rec->key.len));
	json_object_set_new(j, "headers", hj);
	json_object_set_new(j, "payload", j_strn(rec->payload.ptr, rec->payload.len));
	cli_json_out(j);
	d->events++;
	if (!d->txn_counted)
		d->txns_with_events++;
	d->txn_counted = true;
	return d->events >= (uint64_t)d->max_events ? 1 : 0;
}

/* A temporary copy of an active slot, so a running relay keeps it.
 * Returns 0 with the copy's name in out, or -1 (err). */
static int dry_copy(PGconn *conn, const char *slot, char *out, size_t outlen,
                    char *err, size_t errlen)
{
	const char *params[2] = { slot, out };
	PGresult *res;
	int rc = -1;

	snprintf(out, outlen, "outbox_relay_dry_run_%d", (int)getpid());
	res = PQexecParams(conn, "SELECT pg_catalog.pg_copy_logical_replication_slot"
	                   "($1, $2, true)", 2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		set_err(err, errlen, "copying the active slot \"%s\": %s", slot,
		        res_text(res, conn));
	else
		rc = 0;
	PQclear(res);
	return rc;
}

static int act_dry_run(const struct relay_config *cfg,
                       const struct cli_opts *o)
{
	const char *name = cfg->slot_name;
	struct cli_dry d = { 0 };
	struct cli_peek pk = { 0 };
	struct cli_slot s;
	char err[1400], copy[64] = "";
	int64_t timeout = o->timeout_ms > 0 ? o->timeout_ms : 60000;
	PGconn *conn;
	int rc = RELAY_EXIT_UNAVAILABLE;

	d.max_events = o->max_events > 0 ? o->max_events : 1000;
	conn = cli_connect(cfg, false, timeout, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, SLOT_ALLOW_ACTIVE)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (s.active) {
		if (dry_copy(conn, name, copy, sizeof(copy), err, sizeof(err)) < 0) {
			cli_err("%s", err);
			goto out;
		}
		cli_err("dry-run: slot \"%s\" is active for PID %d: peeking at a "
		        "temporary copy \"%s\"", name, s.active_pid, copy);
	}
	pk.cfg = cfg;
	pk.spec = cli_spec(cfg);
	pk.slot = copy[0] ? copy : name;
	pk.upto_lsn = s.current_lsn; /* what was committed when we started */
	pk.upto_nchanges = d.max_events * 4 + 1000;
	pk.on_row = dry_row;
	pk.ctx = &d;
	if (cli_peek_run(conn, &pk, err, sizeof(err)) < 0) {
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
	        (unsigned long long)d.events, pl(d.events),
	        (unsigned long long)d.txns_with_events, pl(d.txns_with_events),
	        name, LSN_ARGS(s.confirmed_lsn), LSN_ARGS(s.current_lsn),
	        pk.stopped ? ": stopped at --max-events"
	        : pk.rows >= (uint64_t)pk.upto_nchanges
	                ? ": stopped after the peek's row limit, more may follow"
	                : "");
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn); /* drops the temporary copy */
	return rc;
}

/* ------------------------------------------------------------ --drain */

static volatile sig_atomic_t drain_signalled;

static void drain_on_signal(int signo)
{
	(void)signo;
	drain_signalled = 1;
}

/* argv without the runbook flags and their values. */
static char **drain_child_argv(int argc, char **argv,
                               const struct relay_config *cfg)
{
	char **out = xcalloc((size_t)argc + 3, sizeof(*out));
	int n = 0;

	out[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const struct cli_flag *f;
		const char *v;
		bool next;
		if (match_arg(argv[i], &f, &v, &next) != MATCH_FLAG) {
			out[n++] = argv[i];
			if (next && i + 1 < argc)
				out[n++] = argv[++i];
			continue;
		}
		i += next ? 1 : 0;
	}
	/* Confirms reach pg_replication_slots at each status update. */
	if (cfg->status_interval_ms > 1000) {
		out[n++] = "--set";
		out[n++] = "status.interval.ms=1000";
	}
	out[n] = NULL;
	return out;
}

static int drain_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return RELAY_EXIT_FAILURE;
}

/* SIGTERM to the child, then its exit status (SIGKILL after the relay's
 * own shutdown timeout and 10 s more). */
static int drain_stop_child(pid_t pid, const struct relay_config *cfg)
{
	int64_t deadline = now_mono_us() +
	                   (cfg->shutdown_timeout_ms + 10000) * 1000;
	int status = 0;

	kill(pid, SIGTERM);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_mono_us() > deadline) {
			cli_err("drain: relay PID %d did not stop; killing it", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(50000);
	}
	return drain_exit_code(status);
}

/* confirmed_flush_lsn now, or LSN_INVALID when it cannot be read. */
static uint64_t drain_confirmed(const struct relay_config *cfg, PGconn **conn)
{
	struct cli_slot s;
	char err[1400];

	if (*conn == NULL || PQstatus(*conn) != CONNECTION_OK) {
		PQfinish(*conn);
		*conn = cli_connect(cfg, false, 10000, err, sizeof(err));
		if (*conn == NULL)
			return LSN_INVALID;
	}
	if (cli_slot_read(*conn, cfg->slot_name, &s, err, sizeof(err)) < 0 ||
	    !s.exists)
		return LSN_INVALID;
	return s.confirmed_lsn;
}

static void drain_report(const struct cli_opts *o, const char *name,
                         bool drained, uint64_t target, uint64_t confirmed,
                         int code)
{
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", j_str(name));
		json_object_set_new(j, "drained", json_boolean(drained));
		json_object_set_new(j, "target_lsn", j_lsn(target));
		json_object_set_new(j, "confirmed_flush_lsn", j_lsn(confirmed));
		json_object_set_new(j, "relay_exit_code", json_integer(code));
		cli_json_out(j);
	} else if (drained) {
		printf("drained slot \"%s\": confirmed_flush_lsn " LSN_FMT " >= "
		       LSN_FMT " (the WAL position at start)\n", name,
		       LSN_ARGS(confirmed), LSN_ARGS(target));
	}
}

/* Starts this binary as the relay: its own process group (a terminal's
 * ^C reaches only this process, which forwards one SIGTERM), and gone
 * with this process. Returns the PID or -1. */
static pid_t drain_spawn(char **cargv)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	execv("/proc/self/exe", cargv);
	fprintf(stderr, "outbox-relay: drain: exec: %s\n", strerror(errno));
	_exit(RELAY_EXIT_SOFTWARE);
}

/* Polls confirmed_flush_lsn until it reaches target, the relay exits,
 * the deadline passes or a signal comes. Returns the exit code. */
static int drain_watch(const struct relay_config *cfg,
                       const struct cli_opts *o, pid_t pid, uint64_t target,
                       int64_t deadline, PGconn **conn)
{
	uint64_t confirmed = LSN_INVALID;
	int status = 0, code;

	for (;;) {
		usleep(CLI_DRAIN_POLL_US);
		if (waitpid(pid, &status, WNOHANG) == pid) {
			code = drain_exit_code(status);
			confirmed = drain_confirmed(cfg, conn);
			if (code == 0 && confirmed != LSN_INVALID && confirmed >= target) {
				drain_report(o, cfg->slot_name, true, target, confirmed, 0);
				return RELAY_EXIT_OK;
			}
			cli_err("drain: the relay exited with code %d before the slot "
			        "was drained", code);
			drain_report(o, cfg->slot_name, false, target, confirmed, code);
			return code != 0 ? code : RELAY_EXIT_UNAVAILABLE;
		}
		confirmed = drain_confirmed(cfg, conn);
		if (confirmed != LSN_INVALID && confirmed >= target) {
			code = drain_stop_child(pid, cfg);
			drain_report(o, cfg->slot_name, code == 0, target, confirmed, code);
			return code;
		}
		if (drain_signalled || now_mono_us() > deadline) {
			cli_err("drain: %s before slot \"%s\" confirmed " LSN_FMT
			        " (at " LSN_FMT "); stopping the relay",
			        drain_signalled ? "interrupted" : "timed out",
			        cfg->slot_name, LSN_ARGS(target), LSN_ARGS(confirmed));
			code = drain_stop_child(pid, cfg);
			drain_report(o, cfg->slot_name, false, target, confirmed, code);
			return RELAY_EXIT_UNAVAILABLE;
		}
	}
}

/* Runs the relay (this binary without --drain) until the slot confirmed
 * the WAL position taken at start, then stops it with SIGTERM. The relay
 * loop stays untouched: the drain is watched from outside. */
static int act_drain(const struct relay_config *cfg, const struct cli_opts *o,
                     int argc, char **argv)
{
	const char *name = cfg->slot_name;
	int64_t timeout = o->timeout_ms > 0 ? o->timeout_ms : 300000;
	struct sigaction sa, old_int, old_term;
	struct cli_slot s;
	char err[1400], **cargv = NULL;
	PGconn *conn;
	pid_t pid;
	int rc = RELAY_EXIT_UNAVAILABLE;

	conn = cli_connect(cfg, false, 10000, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (cli_slot_read(conn, name, &s, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = cli_slot_usable(&s, name, 0)) != 0)
		goto out;
	if (s.confirmed_lsn >= s.current_lsn) {
		drain_report(o, name, true, s.current_lsn, s.confirmed_lsn, 0);
		goto out;
	}
	cargv = drain_child_argv(argc, argv, cfg);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = drain_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	pid = drain_spawn(cargv);
	if (pid < 0) {
		cli_err("drain: fork: %s", strerror(errno));
		rc = RELAY_EXIT_SOFTWARE;
	} else {
		cli_err("drain: relay PID %d streams slot \"%s\" until it confirms "
		        LSN_FMT " (timeout %lld ms)", (int)pid, name,
		        LSN_ARGS(s.current_lsn), (long long)timeout);
		rc = drain_watch(cfg, o, pid, s.current_lsn,
		                 now_mono_us() + timeout * 1000, &conn);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
out:
	free(cargv);
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ --check */

enum check_status { CHECK_OK = 0, CHECK_WARN, CHECK_FAIL };

static const char *const check_names[] = { "ok", "warn", "fail" };

struct cli_checks {
	bool json;
	json_t *items;
	unsigned n[3];
	int exit_code;              /* 78 for a configuration failure, else 69 */
};

/* One line (or JSON item): status, name, what was found, the fix. A
 * failure of class RELAY_EXIT_CONFIG wins over RELAY_EXIT_UNAVAILABLE. */
static void check_item(struct cli_checks *c, const char *name,
                       enum check_status st, int fail_code, const char *fix,
                       const char *fmt, ...) RELAY_PRINTF(6, 7);

static void check_item(struct cli_checks *c, const char *name,
                       enum check_status st, int fail_code, const char *fix,
                       const char *fmt, ...)
{
	char detail[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	c->n[st]++;
	if (st == CHECK_FAIL && c->exit_code != RELAY_EXIT_CONFIG)
		c->exit_code = fail_code;
	if (c->json) {
		json_t *j = json_object();
		json_object_set_new(j, "check", json_string(name));
		json_object_set_new(j, "status", json_string(check_names[st]));
		json_object_set_new(j, "detail", j_str(detail));
		json_object_set_new(j, "fix", st != CHECK_OK && fix ? j_str(fix)
		                                                    : json_null());
		json_array_append_new(c->items, j);
		return;
	}
	printf("%-5s %s: %s\n", check_names[st], name, detail);
	if (st != CHECK_OK && fix != NULL)
		printf("      fix: %s\n", fix);
	fflush(stdout);
}

/* True when the comma-separated list names plugin. */
static bool plugin_listed(const char *list, const char *plugin)
{
	size_t plen = strlen(plugin);

	for (const char *p = list; *p != '\0';) {
		size_t n;
		p += strspn(p, ", ");
		n = strcspn(p, ", ");
		if (n == plen && strncmp(p, plugin, n) == 0)
			return true;
		p += n;
	}
	return false;
}

/* "pgoutput, test_decoding" -> "'pgoutput', 'test_decoding'". */
static void quote_list(const char *in, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	while (*in != '\0') {
		size_t len;
		while (*in == ',' || *in == ' ' || *in == '\t')
			in++;
		len = strcspn(in, ", \t");
		if (len == 0)
			break;
		if (n + len + 5 >= outlen)
			break;
		n += (size_t)snprintf(out + n, outlen - n, "%s'%.*s'",
		                      n ? ", " : "", (int)len, in);
		in += len;
	}
}

/* Server settings and the role, in one query. */
static void check_server(struct cli_checks *c, PGconn *conn,
                         const struct cli_slot *slot)
{
	PGresult *res = PQexec(conn,
		"SELECT current_setting('server_version_num')::int, "
		"current_setting('server_version'), current_setting('wal_level'), "
		"current_setting('max_replication_slots')::int, "
		"(SELECT count(*) FROM pg_catalog.pg_replication_slots), "
		"current_setting('max_wal_senders')::int, "
		"(SELECT count(*) FROM pg_catalog.pg_stat_activity "
		" WHERE backend_type = 'walsender'), "
		"(SELECT setting FROM pg_catalog.pg_settings "
		" WHERE name = 'output_plugin_libraries'), "
		"current_setting('max_slot_wal_keep_size'), "
		"r.rolreplication, r.rolsuper, current_user::text, "
		"r.rolsuper OR pg_catalog.pg_has_role('pg_read_all_settings', 'USAGE') "
		"FROM pg_catalog.pg_roles r WHERE r.rolname = current_user");
	char fix[1024];
	const char *v, *user;
	int num, max, used;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		check_item(c, "server_settings", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           NULL, "cannot read them: %s", res_text(res, conn));
		goto out;
	}
	num = text_int(PQgetvalue(res, 0, 0));
	check_item(c, "server_version", num / 10000 == 15 ? CHECK_OK : CHECK_WARN,
	           0, "outbox-relay is tested on PostgreSQL 15: run its "
	           "integration tests against this version first",
	           "PostgreSQL %s (%d)", PQgetvalue(res, 0, 1), num);
	v = PQgetvalue(res, 0, 2);
	check_item(c, "wal_level", strcmp(v, "logical") ? CHECK_FAIL : CHECK_OK,
	           RELAY_EXIT_UNAVAILABLE, "ALTER SYSTEM SET wal_level = logical; "
	           "then restart PostgreSQL", "%s", v);
	max = text_int(PQgetvalue(res, 0, 3));
	used = text_int(PQgetvalue(res, 0, 4));
	check_item(c, "max_replication_slots",
	           used >= max && !slot->exists ? CHECK_FAIL
	           : used >= max - 1            ? CHECK_WARN : CHECK_OK,
	           RELAY_EXIT_UNAVAILABLE, "raise max_replication_slots (restart) "
	           "or drop slots nobody uses", "%d of %d in use", used, max);
	max = text_int(PQgetvalue(res, 0, 5));
	used = text_int(PQgetvalue(res, 0, 6));
	check_item(c, "max_wal_senders", used >= max - 1 ? CHECK_WARN : CHECK_OK,
	           0, "raise max_wal_senders (restart): the relay needs one, a "
	           "standby relay another", "%d of %d in use", used, max);
	if (PQgetisnull(res, 0, 7) && strcmp(PQgetvalue(res, 0, 12), "t") != 0) {
		/* A superuser-only setting: pg_settings hides it. */
		check_item(c, "output_plugin_libraries", CHECK_OK, 0, NULL,
		           "not readable by role \"%s\" (it needs "
		           "pg_read_all_settings); the wal2json item tests it in "
		           "effect", PQgetvalue(res, 0, 11));
	} else if (PQgetisnull(res, 0, 7)) {
		check_item(c, "output_plugin_libraries", CHECK_OK, 0, NULL,
		           "not a setting of PostgreSQL %s: any installed plugin "
		           "may be used", PQgetvalue(res, 0, 1));
	} else {
		bool listed = plugin_listed(PQgetvalue(res, 0, 7), "wal2json");
		char list[512];
		/* A list setting: each library its own literal. One literal
		 * holding "a, b" would name a single library called that. */
		quote_list(PQgetvalue(res, 0, 7), list, sizeof(list));
		snprintf(fix, sizeof(fix), "ALTER SYSTEM SET output_plugin_libraries "
		         "= %s%s'wal2json'; SELECT pg_reload_conf(); (this trusts "
		         "wal2json for every REPLICATION role)", list,
		         list[0] ? ", " : "");
		check_item(c, "output_plugin_libraries", listed ? CHECK_OK : CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "'%s'%s", PQgetvalue(res, 0, 7),
		           listed ? "" : ": wal2json is not allowed");
	}
	v = PQgetvalue(res, 0, 8);
	check_item(c, "max_slot_wal_keep_size",
	           strcmp(v, "-1") == 0 ? CHECK_WARN : CHECK_OK, 0,
	           "ALTER SYSTEM SET max_slot_wal_keep_size = '<below the free space "
	           "of the WAL disk>'; SELECT pg_reload_conf(); (a stalled slot then "
	           "loses WAL instead of filling the disk)",
	           "%s%s", v, strcmp(v, "-1") == 0
	                          ? " (unlimited: a stalled slot keeps WAL until "
	                            "the disk is full)" : "");
	user = PQgetvalue(res, 0, 11);
	snprintf(fix, sizeof(fix), "ALTER ROLE \"%s\" REPLICATION;", user);
	if (strcmp(PQgetvalue(res, 0, 10), "t") == 0)
		check_item(c, "role", CHECK_WARN, 0, "use a LOGIN REPLICATION role "
		           "that is not a superuser (least privilege)",
		           "\"%s\" is a superuser", user);
	else
		check_item(c, "role", strcmp(PQgetvalue(res, 0, 9), "t") == 0
		                              ? CHECK_OK : CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "\"%s\"%s", user,
		           strcmp(PQgetvalue(res, 0, 9), "t") == 0
		                   ? " has REPLICATION" : " lacks REPLICATION");
out:
	PQclear(res);
}

/* wal2json is installed and allowed: pg_available_extensions does not
 * list an output plugin, so a TEMPORARY slot is created with it (gone
 * at disconnect at the latest) and dropped again. */
static void check_wal2json(struct cli_checks *c, PGconn *conn)
{
	char name[64];
	const char *params[1] = { name };
	PGresult *res;

	snprintf(name, sizeof(name), "outbox_relay_check_%d", (int)getpid());
	res = PQexecParams(conn, "SELECT slot_name FROM pg_catalog."
	                   "pg_create_logical_replication_slot($1, 'wal2json', true)",
	                   1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK) {
		PQclear(res);
		res = PQexecParams(conn, "SELECT pg_catalog.pg_drop_replication_slot($1)",
		                   1, NULL, params, NULL, NULL, 0);
		check_item(c, "wal2json", CHECK_OK, 0, NULL, "loadable: a temporary "
		           "wal2json slot was created and dropped");
	} else if (res_state_is(res, "58P01")) {
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "install wal2json for this server (Debian: apt-get install "
		           "postgresql-15-wal2json)", "not installed: %s",
		           res_text(res, conn));
	} else if (strstr(res_text(res, conn), "output_plugin_libraries") != NULL) {
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "as a superuser: ALTER SYSTEM SET output_plugin_libraries "
		           "= '<each current library>', 'wal2json'; "
		           "SELECT pg_reload_conf(); "
		           "(this trusts wal2json for every REPLICATION role)",
		           "not allowed: %s", res_text(res, conn));
	} else if (res_state_is(res, "53400")) {
		check_item(c, "wal2json", CHECK_WARN, 0, "free a replication slot and "
		           "run --check again", "not tested: no free replication "
		           "slot for a temporary one");
	} else if (res_state_is(res, "57014")) {
		check_item(c, "wal2json", CHECK_WARN, 0, "end long-running "
		           "transactions (pg_stat_activity) or raise --timeout-ms",
		           "not tested: creating a slot waits for running "
		           "transactions, which did not end in time");
	} else {
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "a temporary wal2json slot could not be created: %s",
		           res_text(res, conn));
	}
	PQclear(res);
}

/* pg_hba admits a replication=database connection of this role. */
static void check_replication(struct cli_checks *c,
                              const struct relay_config *cfg)
{
	char err[1400];
	PGconn *conn = cli_connect(cfg, true, 0, err, sizeof(err));
	PGresult *res = NULL;

	if (conn == NULL) {
		check_item(c, "replication_connection", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, "allow it in pg_hba.conf with a "
		           "line naming the database (logical replication "
		           "connections match the database name, not the "
		           "\"replication\" keyword), e.g. \"hostssl <db> <role> "
		           "<relay address>/32 scram-sha-256\", then reload", "%s", err);
		return;
	}
	res = PQexec(conn, "IDENTIFY_SYSTEM");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) < 3)
		check_item(c, "replication_connection", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, NULL, "IDENTIFY_SYSTEM failed: %s",
		           res_text(res, conn));
	else
		check_item(c, "replication_connection", CHECK_OK, 0, NULL,
		           "accepted (system %s, timeline %s, WAL at %s)",
		           PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
		           PQgetvalue(res, 0, 2));
	PQclear(res);
	PQfinish(conn);
}

/* The outbox table and the configured columns, with their types. */
static void check_table(struct cli_checks *c, PGconn *conn,
                        const struct relay_config *cfg)
{
	const char *params[2] = { cfg->outbox_schema, cfg->outbox_table };
	const char *cols[5] = { cfg->field_id, cfg->field_key, cfg->field_type,
		                    cfg->route_by_field, cfg->field_payload };
	static const char *const keys[5] = {
		"table.field.event.id", "table.field.event.key",
		"table.field.event.type", "route.by.field", "table.field.event.payload"
	};
	char detail[1024] = "", fix[512];
	const char *ptype = NULL, *kind = "";
	size_t n = 0;
	PGresult *res = PQexecParams(conn,
		"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
		"t.typname, c.relkind FROM pg_catalog.pg_attribute a "
		"JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
		"JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
		"JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
		"WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 "
		"AND NOT a.attisdropped", 2, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "cannot read its columns: %s", res_text(res, conn));
		goto out;
	}
	if (PQntuples(res) == 0) {
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "create it (sql/outbox.sql) or set outbox.table: names are "
		           "case-sensitive and unquoted (a table created as \"Outbox\" "
		           "is public.Outbox)", "%s.%s does not exist",
		           cfg->outbox_schema, cfg->outbox_table);
		goto out;
	}
	kind = PQgetvalue(res, 0, 3);
	for (int i = 0; i < 5; i++) {
		int r;
		for (r = 0; r < PQntuples(res); r++)
			if (strcmp(PQgetvalue(res, r, 0), cols[i]) == 0)
				break;
		if (r == PQntuples(res)) {
			snprintf(fix, sizeof(fix), "set %s to a column of %s.%s", keys[i],
			         cfg->outbox_schema, cfg->outbox_table);
			check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_CONFIG, fix,
			           "%s: column \"%s\" does not exist in %s.%s", keys[i],
			           cols[i], cfg->outbox_schema, cfg->outbox_table);
			goto out;
		}
		if (i == 4)
			ptype = PQgetvalue(res, r, 2);
		if (n < sizeof(detail))
			n += (size_t)snprintf(detail + n, sizeof(detail) - n, "%s%s %s",
			                      i ? ", " : "", cols[i], PQgetvalue(res, r, 1));
	}
	if (repl_relkind_refusal(kind[0], cfg->outbox_schema, cfg->outbox_table,
	                         fix, sizeof(fix)) < 0)
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_CONFIG, NULL,
		           "%s (the relay refuses it, exit 78)", fix);
	else if (strcmp(ptype, "json") != 0 && strcmp(ptype, "jsonb") != 0)
		check_item(c, "outbox_table", CHECK_WARN, 0, "make the payload column "
		           "jsonb (ALTER TABLE ... ALTER COLUMN ... TYPE jsonb USING "
		           "... ::jsonb)", "%s.%s (%s): the payload column is %s, so "
		           "every value is checked as JSON and one that is not stops "
		           "the relay (exit 65)", cfg->outbox_schema,
		           cfg->outbox_table, detail, ptype);
	else
		check_item(c, "outbox_table", CHECK_OK, 0, NULL, "%s.%s (%s)",
		           cfg->outbox_schema, cfg->outbox_table, detail);
out:
	PQclear(res);
}

static void check_slot(struct cli_checks *c, const struct cli_slot *s,
                       const char *name)
{
	char retained[32];

	if (!s->exists) {
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "outbox-relay --create-slot (events committed before it "
		           "are not published)", "\"%s\" does not exist", name);
	} else if (!s->logical || strcmp(s->plugin, "wal2json") != 0) {
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "set slot.name to a wal2json slot", "\"%s\" uses plugin "
		           "\"%s\" (%s)", name, s->plugin,
		           s->logical ? "logical" : "physical");
	} else if (!s->same_db) {
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "point pg.conninfo at the slot's database or use another "
		           "slot.name", "\"%s\" belongs to database \"%s\"", name,
		           s->database);
	} else if (cli_slot_lost(s)) {
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "events may be missing: drop it (--drop-slot --yes), "
		           "create a new one (--create-slot) and re-publish the "
		           "outbox rows committed since the last confirmed position "
		           "(runbook: slot lost)", "\"%s\" is invalidated "
		           "(wal_status=%s)", name,
		           s->wal_status[0] ? s->wal_status : "unknown");
	} else if (s->active) {
		check_item(c, "slot", CHECK_WARN, 0, "stop the other relay, or keep "
		           "this one as a hot standby", "\"%s\" is active for PID %d: "
		           "a relay started now waits in standby", name, s->active_pid);
	} else {
		cli_fmt_bytes(retained, sizeof(retained), s->retained_bytes);
		check_item(c, "slot", CHECK_OK, 0, NULL, "\"%s\": wal2json, "
		           "confirmed_flush_lsn " LSN_FMT ", retained WAL %s", name,
		           LSN_ARGS(s->confirmed_lsn), retained);
	}
}

/* The slot against the slot ledger, as the relay will check it (read
 * only: a missing topic is not created here). */
static void check_ledger(struct cli_checks *c, const struct relay_config *cfg,
                         const struct cli_slot *s)
{
	struct ledger_entry e;
	char err[1400], key[256];

	if (cfg->slot_ledger_topic[0] == '\0') {
		check_item(c, "slot_ledger", CHECK_WARN, 0, "set slot.ledger.topic",
		           "off: a slot dropped and created again would not be noticed");
		return;
	}
	if (cli_ledger_key(cfg, s->database, key, sizeof(key), err,
	                   sizeof(err)) < 0 ||
	    cli_ledger_read(cfg, key, false, &e, err, sizeof(err)) < 0) {
		check_item(c, "slot_ledger", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "the relay confirms nothing it cannot record there",
		           "%s", err);
		return;
	}
	if (ledger_check(&e, cfg->slot_name, s->confirmed_lsn, err,
	                 sizeof(err)) < 0) {
		check_item(c, "slot_ledger", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "%s", err);
		return;
	}
	if (e.found)
		check_item(c, "slot_ledger", CHECK_OK, 0, NULL, "%s: slot at " LSN_FMT
		           ", recorded " LSN_FMT " (by %s at %s)",
		           cfg->slot_ledger_topic, LSN_ARGS(s->confirmed_lsn),
		           LSN_ARGS(e.lsn), e.by, e.at);
	else
		check_item(c, "slot_ledger", CHECK_OK, 0, NULL, "%s: %s; the relay's "
		           "first confirm records the slot", cfg->slot_ledger_topic,
		           e.no_topic ? "no such topic yet (the relay creates it, "
		                        "compacted)" : "no record of the slot yet");
}

static void check_postgres(struct cli_checks *c, const struct relay_config *cfg,
                           int64_t timeout_ms)
{
	struct cli_slot s;
	char err[1400];
	PGconn *conn;
	bool slot_read;

	if (cfg->pg_conninfo[0] == '\0') {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "set pg.conninfo", "pg.conninfo is not set");
		return;
	}
	if (cfg_check_conninfo(cfg, err, sizeof(err)) < 0) {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "fix pg.conninfo", "%s", err);
		return;
	}
	conn = cli_connect(cfg, false, timeout_ms, err, sizeof(err));
	if (conn == NULL) {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "check pg.conninfo, the server and pg_hba.conf", "%s", err);
		return;
	}
	check_item(c, "postgres_connection", CHECK_OK, 0, NULL,
	           "connected to database \"%s\" as \"%s\"", PQdb(conn),
	           PQuser(conn));
	slot_read = cli_slot_read(conn, cfg->slot_name, &s, err, sizeof(err)) == 0;
	if (!slot_read) {
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL, "%s",
		           err);
		memset(&s, 0, sizeof(s));
		s.exists = true; /* unknown: do not blame the slot count */
	}
	check_server(c, conn, &s);
	check_wal2json(c, conn);
	check_replication(c, cfg);
	check_table(c, conn, cfg);
	if (slot_read)
		check_slot(c, &s, cfg->slot_name);
	if (slot_read && s.exists && s.confirmed_known)
		check_ledger(c, cfg, &s);
	PQfinish(conn);
}

/* ---- Kafka: reachability, topics, their settings ---- */

#define CHECK_MAX_TOPICS 50

struct topic_info {
	const char *name;
	int partitions;
	int replicas;
	char min_isr[16];
};

struct broker_facts {
	char auto_create[16];       /* "" when unknown */
	char num_partitions[16];
	char min_isr[16];
	char error[256];
};

static bool topic_matches(const char *tmpl, const char *topic)
{
	const char *ph = strstr(tmpl, "${routedByValue}");
	size_t plen, slen, tlen = strlen(topic);
	const char *suffix;

	if (ph == NULL)
		return strcmp(tmpl, topic) == 0;
	plen = (size_t)(ph - tmpl);
	suffix = ph + strlen("${routedByValue}");
	slen = strlen(suffix);
	return tlen > plen + slen && strncmp(topic, tmpl, plen) == 0 &&
	       strcmp(topic + tlen - slen, suffix) == 0;
}

static void describe_entry(const rd_kafka_ConfigEntry_t *e, char *auto_create,
                           char *num_partitions, char *min_isr)
{
	const char *n = rd_kafka_ConfigEntry_name(e);
	const char *v = rd_kafka_ConfigEntry_value(e);

	if (v == NULL)
		return;
	if (auto_create && strcmp(n, "auto.create.topics.enable") == 0)
		snprintf(auto_create, 16, "%s", v);
	else if (num_partitions && strcmp(n, "num.partitions") == 0)
		snprintf(num_partitions, 16, "%s", v);
	else if (strcmp(n, "min.insync.replicas") == 0)
		snprintf(min_isr, 16, "%s", v);
}

/* DescribeConfigs for one broker and the topics (librdkafka admin API).
 * What cannot be read stays "" and bf->error says why. */
static void kafka_describe(rd_kafka_t *rk, int32_t broker,
                           struct topic_info *t, size_t nt, int64_t timeout_ms,
                           struct broker_facts *bf)
{
	rd_kafka_ConfigResource_t *res[1 + CHECK_MAX_TOPICS];
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t **rs;
	char id[16], e[256];
	size_t n = 0, cnt = 0;

	snprintf(id, sizeof(id), "%d", (int)broker);
	res[n++] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, id);
	for (size_t i = 0; i < nt; i++)
		res[n++] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
		                                       t[i].name);
	ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	(void)rd_kafka_AdminOptions_set_request_timeout(ao, (int)timeout_ms, e,
	                                                sizeof(e));
	rd_kafka_DescribeConfigs(rk, res, n, ao, q);
	ev = rd_kafka_queue_poll(q, (int)timeout_ms + 1000);
	if (ev == NULL) {
		snprintf(bf->error, sizeof(bf->error), "DescribeConfigs timed out");
		goto out;
	}
	if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(bf->error, sizeof(bf->error), "DescribeConfigs: %s",
		         rd_kafka_event_error_string(ev));
		goto out;
	}
	rs = rd_kafka_DescribeConfigs_result_resources(
		rd_kafka_event_DescribeConfigs_result(ev), &cnt);
	for (size_t i = 0; i < cnt; i++) {
		const rd_kafka_ConfigEntry_t **ents;
		const char *name = rd_kafka_ConfigResource_name(rs[i]);
		bool is_broker = rd_kafka_ConfigResource_type(rs[i]) ==
		                 RD_KAFKA_RESOURCE_BROKER;
		struct topic_info *ti = NULL;
		size_t ne = 0;
		if (rd_kafka_ConfigResource_error(rs[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
			snprintf(bf->error, sizeof(bf->error), "DescribeConfigs %s: %s",
			         name, rd_kafka_ConfigResource_error_string(rs[i]));
			continue;
		}
		for (size_t j = 0; !is_broker && j < nt; j++)
			if (strcmp(t[j].name, name) == 0)
				ti = &t[j];
		if (!is_broker && ti == NULL)
			continue;
		ents = rd_kafka_ConfigResource_configs(rs[i], &ne);
		for (size_t j = 0; j < ne; j++)
			describe_entry(ents[j], is_broker ? bf->auto_create : NULL,
			               is_broker ? bf->num_partitions : NULL,
			               is_broker ? bf->min_isr : ti->min_isr);
	}
out:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy_array(res, n);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
}

static void check_topics(struct cli_checks *c, const struct relay_config *cfg,
                         const struct topic_info *t, size_t nt, size_t total,
                         const struct broker_facts *bf)
{
	char list[2048] = "", pattern[300], fix[600];
	const char *ph = strstr(cfg->route_topic_replacement, "${routedByValue}");
	bool client_off, weak = false, broken = false;
	size_t n = 0;
	const char *v;

	if (ph != NULL)
		snprintf(pattern, sizeof(pattern), "%.*s*%s",
		         (int)(ph - cfg->route_topic_replacement),
		         cfg->route_topic_replacement, ph + strlen("${routedByValue}"));
	else
		snprintf(pattern, sizeof(pattern), "%s", cfg->route_topic_replacement);
	v = cfg_kafka_get(cfg, "allow.auto.create.topics");
	client_off = v != NULL && strcmp(v, "false") == 0;
	for (size_t i = 0; i < nt && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s (%d partitions, "
		                      "replication factor %d)", i ? ", " : "",
		                      t[i].name, t[i].partitions, t[i].replicas);
	snprintf(fix, sizeof(fix), "create each topic first (kafka-topics.sh "
	         "--create --topic <%s> --partitions N --replication-factor 3 "
	         "--config min.insync.replicas=2) or set auto.create.topics.enable"
	         "=true on the brokers", pattern);
	if (nt == 0 && strcmp(bf->auto_create, "true") == 0 && !client_off)
		check_item(c, "kafka_topics", CHECK_OK, 0, NULL, "no topic matches %s "
		           "yet; the broker creates each on first use "
		           "(auto.create.topics.enable=true, num.partitions=%s)",
		           pattern, bf->num_partitions[0] ? bf->num_partitions : "?");
	else if (nt == 0 && strcmp(bf->auto_create, "false") == 0)
		check_item(c, "kafka_topics", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, fix,
		           "no topic matches %s and auto.create.topics.enable=false: "
		           "the first event would wait forever", pattern);
	else if (nt == 0)
		check_item(c, "kafka_topics", CHECK_WARN, 0, fix, "no topic matches "
		           "%s and whether the broker creates topics is unknown (%s)",
		           pattern, client_off ? "kafka.allow.auto.create.topics=false"
		                               : bf->error);
	else
		check_item(c, "kafka_topics", strcmp(bf->auto_create, "true") == 0
		                                      ? CHECK_OK : CHECK_WARN,
		           0, fix, "%zu topic%s match%s %s: %s%s; "
		           "auto.create.topics.enable=%s", total, total == 1 ? "" : "s",
		           total == 1 ? "es" : "", pattern, list,
		           total > nt ? ", ..." : "",
		           bf->auto_create[0] ? bf->auto_create : "unknown");

	/* acks=all needs min.insync.replicas replicas in sync. */
	n = 0;
	list[0] = '\0';
	for (size_t i = 0; i < nt && n < sizeof(list); i++) {
		int isr = t[i].min_isr[0] ? text_int(t[i].min_isr) : 0;
		weak = weak || (isr > 0 && isr < 2);
		broken = broken || isr > t[i].replicas;
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s=%s", i ? ", " : "",
		                      t[i].name, t[i].min_isr[0] ? t[i].min_isr : "unknown");
	}
	if (nt == 0)
		snprintf(list, sizeof(list), "broker default %s",
		         bf->min_isr[0] ? bf->min_isr : "unknown");
	if (broken)
		check_item(c, "kafka_min_insync_replicas", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, "lower min.insync.replicas to at most "
		           "the replication factor", "%s: above the replication "
		           "factor, every produce with acks=all fails", list);
	else
		check_item(c, "kafka_min_insync_replicas",
		           weak || (nt == 0 && text_int(bf->min_isr) < 2) ||
		                   (nt > 0 && bf->error[0])
		               ? CHECK_WARN : CHECK_OK, 0,
		           "with replication factor 3 set min.insync.replicas=2 "
		           "(kafka-configs.sh --alter --entity-type topics "
		           "--entity-name <topic> --add-config min.insync.replicas=2)",
		           "%s%s%s%s", list, weak || (nt == 0 && text_int(bf->min_isr) < 2)
		                               ? " (1: an acknowledged event survives "
		                                 "only while that one broker does)" : "",
		           bf->error[0] ? "; " : "", bf->error);
}

static void check_kafka(struct cli_checks *c, const struct relay_config *cfg,
                        int64_t timeout_ms)
{
	struct cli_kafka k = { 0 };
	struct broker_facts bf = { 0 };
	struct topic_info t[CHECK_MAX_TOPICS];
	const struct rd_kafka_metadata *md = NULL;
	char err[1400], brokers[1024] = "";
	rd_kafka_resp_err_t e;
	rd_kafka_t *rk;
	size_t nt = 0, total = 0, n = 0;

	/* cfg_validate() only reads; its signature predates const. */
	if (cfg_validate((struct relay_config *)cfg, err, sizeof(err)) < 0) {
		check_item(c, "kafka_config", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "fix the kafka.* (or other) setting named", "%s", err);
		return;
	}
	check_item(c, "kafka_config", CHECK_OK, 0, NULL, "accepted by librdkafka %s",
	           rd_kafka_version_str());
	rk = cli_kafka_new(cfg, timeout_ms, &k, err, sizeof(err));
	if (rk == NULL) {
		check_item(c, "kafka_reachable", CHECK_FAIL, RELAY_EXIT_CONFIG, NULL,
		           "%s", err);
		return;
	}
	e = rd_kafka_metadata(rk, 1, NULL, &md, (int)timeout_ms);
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_poll(rk, 0);
		cli_redact(cfg, k.last_error);
		check_item(c, "kafka_reachable", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "check kafka.bootstrap.servers, the network and the "
		           "security settings", "no metadata within %lld ms: %s%s%s",
		           (long long)timeout_ms, rd_kafka_err2str(e),
		           k.last_error[0] ? "; " : "", k.last_error);
		goto out;
	}
	for (int i = 0; i < md->broker_cnt && n < sizeof(brokers); i++)
		n += (size_t)snprintf(brokers + n, sizeof(brokers) - n, "%s%d %s:%d",
		                      i ? ", " : "", (int)md->brokers[i].id,
		                      md->brokers[i].host, md->brokers[i].port);
	check_item(c, "kafka_reachable", CHECK_OK, 0, NULL, "%d broker%s: %s",
	           md->broker_cnt, md->broker_cnt == 1 ? "" : "s", brokers);
	for (int i = 0; i < md->topic_cnt; i++) {
		if (!topic_matches(cfg->route_topic_replacement, md->topics[i].topic))
			continue;
		total++;
		if (nt == CHECK_MAX_TOPICS)
			continue;
		t[nt].name = md->topics[i].topic;
		t[nt].partitions = md->topics[i].partition_cnt;
		t[nt].replicas = md->topics[i].partition_cnt > 0
		                         ? md->topics[i].partitions[0].replica_cnt : 0;
		t[nt].min_isr[0] = '\0';
		nt++;
	}
	if (md->broker_cnt > 0)
		kafka_describe(rk, md->brokers[0].id, t, nt, timeout_ms, &bf);
	else
		snprintf(bf.error, sizeof(bf.error), "no broker in the metadata");
	check_topics(c, cfg, t, nt, total, &bf);
out:
	if (md != NULL)
		rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
}

static int act_check(const struct relay_config *cfg, const struct cli_opts *o)
{
	struct cli_checks c = { .json = o->json };
	int64_t timeout = o->timeout_ms > 0 ? o->timeout_ms : 10000;

	if (c.json)
		c.items = json_array();
	check_postgres(&c, cfg, timeout);
	check_kafka(&c, cfg, timeout);
	if (c.json) {
		json_t *j = json_object();
		json_object_set_new(j, "ok", json_integer(c.n[CHECK_OK]));
		json_object_set_new(j, "warn", json_integer(c.n[CHECK_WARN]));
		json_object_set_new(j, "fail", json_integer(c.n[CHECK_FAIL]));
		json_object_set_new(j, "checks", c.items);
		cli_json_out(j);
	} else {
		printf("%u ok, %u warn, %u fail\n", c.n[CHECK_OK], c.n[CHECK_WARN],
		       c.n[CHECK_FAIL]);
	}
	return c.n[CHECK_FAIL] > 0 ? c.exit_code : RELAY_EXIT_OK;
}

/* ------------------------------------------------------------ command line */

static int parse_int(const char *flag, const char *v, int64_t max,
                     int64_t *out)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < 1 || n > max) {
		cli_err("%s: \"%s\" is not an integer in [1, %lld]", flag, v,
		        (long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("outbox-relay: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\nTry \"outbox-relay --help\".\n", stderr);
	return RELAY_EXIT_USAGE;
}

/* Parses the runbook flags of argv into o. Returns 0 or RELAY_EXIT_USAGE
 * after saying why. */
static int cli_parse(int argc, char **argv, struct cli_opts *o)
{
	uint32_t seen = 0;          /* bit i: cli_flags[i] was given */

	memset(o, 0, sizeof(*o));
	o->max_events = o->timeout_ms = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		const struct cli_flag *f;
		bool next;
		switch (match_arg(a, &f, &v, &next)) {
		case MATCH_END:
			if (i + 1 < argc)
				return usage_error("unexpected argument \"%s\"%s",
				                   argv[i + 1], "");
			continue;
		case MATCH_MAIN:
			i += next ? 1 : 0;
			continue;
		case MATCH_NONE:
			return usage_error("unexpected argument \"%s\"%s", a, "");
		case MATCH_AMBIGUOUS:
			return usage_error("option \"%s\" is ambiguous%s", a, "");
		case MATCH_FLAG:
			break;
		}
		if (!f->has_arg && v != NULL)
			return usage_error("%s takes no value%s", f->name, "");
		if (next) {
			if (i + 1 >= argc)
				return usage_error("%s needs a value%s", f->name, "");
			v = argv[++i];
		}
		if (f->action != CLI_NONE) {
			if (o->action != CLI_NONE)
				return usage_error("%s and %s: one action at a time",
				                   o->action_name, f->name);
			o->action = f->action;
			o->action_name = f->name;
			o->arg = v;
		} else if (!strcmp(f->name, "--if-not-exists")) {
			o->if_not_exists = true;
		} else if (!strcmp(f->name, "--yes")) {
			o->yes = true;
		} else if (!strcmp(f->name, "--json")) {
			o->json = true;
		} else if (!strcmp(f->name, "--to-dlq")) {
			o->dlq_topic = v;
		} else if (!strcmp(f->name, "--max-events")) {
			if (parse_int(f->name, v, 100000000, &o->max_events) < 0)
				return RELAY_EXIT_USAGE;
		} else if (parse_int(f->name, v, 86400000, &o->timeout_ms) < 0) {
			return RELAY_EXIT_USAGE;
		}
		seen |= UINT32_C(1) << (f - cli_flags);
	}
	if (o->action == CLI_NONE)
		return usage_error("no runbook action given%s%s", "", "");
	for (size_t i = 0; i < CLI_NFLAGS; i++)
		if ((seen & (UINT32_C(1) << i)) && cli_flags[i].action == CLI_NONE &&
		    !(cli_flags[i].allowed & A(o->action)))
			return usage_error("%s does not go with %s", cli_flags[i].name,
			                   o->action_name);
	return 0;
}

int cli_main(const struct relay_config *cfg, int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_parse(argc, argv, &o);

	if (rc != 0)
		return rc;
	if (o.action != CLI_CHECK && (rc = cli_require_pg(cfg)) != 0)
		return rc;
	if (o.action == CLI_SKIP_TXN && o.timeout_ms < 0)
		o.timeout_ms = 30000;
	switch (o.action) {
	case CLI_CHECK:
		return act_check(cfg, &o);
	case CLI_CREATE_SLOT:
		return act_create_slot(cfg, &o);
	case CLI_DROP_SLOT:
		return act_drop_slot(cfg, &o);
	case CLI_SLOT_STATUS:
		return act_slot_status(cfg, &o);
	case CLI_ADVANCE_SLOT:
		return act_advance_slot(cfg, &o);
	case CLI_SKIP_TXN:
		return act_skip_txn(cfg, &o);
	case CLI_DRY_RUN:
		return act_dry_run(cfg, &o);
	case CLI_DRAIN:
		return act_drain(cfg, &o, argc, argv);
	case CLI_ACCEPT_SLOT:
		return act_accept_slot(cfg, &o);
	case CLI_NONE:
		break;
	}
	return RELAY_EXIT_USAGE;
}
