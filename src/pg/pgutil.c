/* SPDX-License-Identifier: Apache-2.0 */
/* pgutil.c -- libpq connections and queries with deadlines (pgutil.h).
 *
 * Connections are started with PQconnectStartParams() and polled, so
 * that errors are verbose (the server's SQLSTATE) and the wait bounded;
 * queries are sent with PQsendQuery() and their results awaited with
 * poll() until a deadline, never with a blocking PQexec(). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/pgutil.h"

static bool conninfo_has(PQconninfoOption *opts, const char *kw)
{
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, kw) == 0)
			return o->val != NULL && o->val[0] != '\0';
	return false;
}

/* Errors while connecting that no retry can fix: a server's SQLSTATE, or
 * libpq's own words when it refuses the connection options or the TLS
 * setup before any server answered (libpq's messages are English: the
 * relay never calls setlocale()). Anything else (refused, timed out,
 * DNS, the server starting up or full) is transient. */
static const struct {
	const char *sqlstate;   /* NULL: match text instead */
	const char *text;       /* substring of libpq's message */
	enum pgu_class cls;
	const char *hint;
} connect_errors[] = {
	{ "28P01", NULL, PGU_AUTH, "check the password (~/.pgpass or "
	  "PGPASSFILE; never in pg.conninfo or argv)" },
	{ "28000", NULL, PGU_AUTH, "pg_hba.conf must allow this role a "
	  "connection to this database (the \"replication\" keyword does not "
	  "cover logical replication connections)" },
	{ "42501", NULL, PGU_AUTH, "the role needs the REPLICATION "
	  "attribute (sql/roles.sql)" },
	{ "3D000", NULL, PGU_CONFIG, "check dbname in pg.conninfo" },
	{ NULL, "invalid ", PGU_CONFIG, "fix the option in pg.conninfo" },
	{ NULL, "could not match ", PGU_CONFIG, "fix the host and port "
	  "lists in pg.conninfo" },
	{ NULL, "certificate verify failed", PGU_CONFIG, "sslrootcert must "
	  "hold the CA that signed the server's certificate" },
	{ NULL, "does not match host name", PGU_CONFIG, "with "
	  "sslmode=verify-full the host in pg.conninfo must be a name in the "
	  "server's certificate" },
	{ NULL, "root certificate file", PGU_CONFIG, "sslrootcert must name "
	  "a readable file" },
	{ NULL, "server does not support SSL", PGU_CONFIG, "the server has "
	  "ssl=off: turn it on, or lower sslmode" },
};

/* The SQLSTATE in a message built with PQERRORS_VERBOSE ("FATAL:  28P01:
 * ..."), or "" when there is none. */
static void verbose_sqlstate(const char *m, char out[6])
{
	const char *p = strstr(m, "FATAL:  ");

	out[0] = '\0';
	if (p == NULL)
		return;
	p += 8;
	for (int i = 0; i < 5; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z')))
			return;
	if (p[5] != ':')
		return;
	memcpy(out, p, 5);
	out[5] = '\0';
}

/* The message without PQERRORS_VERBOSE's LOCATION line, on one line. */
static void tidy_message(const char *m, char *out, size_t outlen)
{
	size_t n = 0;

	for (const char *p = m; *p != '\0' && n + 1 < outlen; p++) {
		if (*p == '\n') {
			while (p[1] == ' ')
				p++;
			if (strncmp(p + 1, "LOCATION:", 9) == 0) {
				p = strchr(p + 1, '\n');
				if (p == NULL)
					break;
				p--;
				continue;
			}
			if (p[1] != '\0')
				out[n++] = ' ';
			continue;
		}
		out[n++] = *p;
	}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

enum pgu_class pgu_classify_connect(const char *sqlstate, const char *message,
                                    const char **hint)
{
	*hint = "";
	for (size_t i = 0; i < sizeof(connect_errors) / sizeof(connect_errors[0]);
	     i++) {
		if (connect_errors[i].sqlstate != NULL
		        ? strcmp(sqlstate, connect_errors[i].sqlstate) == 0
		        : sqlstate[0] == '\0' &&
		              strstr(message, connect_errors[i].text) != NULL) {
			*hint = connect_errors[i].hint;
			return connect_errors[i].cls;
		}
	}
	return PGU_TRANSIENT;
}

/* Waits for PQconnectPoll to finish, with the deadline libpq applies to
 * PQconnectdb itself (connect_timeout per host). */
static bool connect_wait(PGconn *conn, int64_t deadline_us)
{
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	for (;;) {
		struct pollfd p = { .fd = PQsocket(conn) };
		int64_t left = deadline_us - now_mono_us();

		if (st == PGRES_POLLING_OK)
			return true;
		if (st == PGRES_POLLING_FAILED)
			return false;
		if (left <= 0)
			return false;
		p.events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
		if (p.fd >= 0 && poll(&p, 1, (int)(left / 1000) + 1) < 0 &&
		    errno != EINTR)
			return false;
		st = PQconnectPoll(conn);
	}
}

PGconn *pgu_connect(const char *conninfo, const char *application_name,
                    bool replication, const char *options,
                    enum pgu_class *cls, char *err, size_t errlen)
{
	const char *kw[16], *val[16];
	PQconninfoOption *opts;
	char *perr = NULL;
	int n = 0, hosts = 1;
	int64_t timeout_s = 10;
	char state[6], msg[1024];
	const char *hint;
	PGconn *conn;

	*cls = PGU_TRANSIENT;
	opts = PQconninfoParse(conninfo, &perr);
	if (opts == NULL) {
		/* perr may quote the string; never echo it. */
		errbuf_set(err, errlen, "pg.conninfo is not a valid connection string");
		PQfreemem(perr);
		*cls = PGU_CONFIG;
		return NULL;
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
		if (o->val == NULL)
			continue;
		if (strcmp(o->keyword, "connect_timeout") == 0 && atoi(o->val) > 0)
			timeout_s = atoi(o->val);
		if (strcmp(o->keyword, "host") == 0)
			for (const char *c = o->val; *c; c++)
				hosts += *c == ',';
	}
	kw[n] = "dbname", val[n++] = conninfo;
	if (!conninfo_has(opts, "application_name"))
		kw[n] = "application_name", val[n++] = application_name;
	if (!conninfo_has(opts, "connect_timeout"))
		kw[n] = "connect_timeout", val[n++] = "10";
	/* A half-open TCP connection must not hang the relay forever. */
	if (!conninfo_has(opts, "keepalives_idle"))
		kw[n] = "keepalives_idle", val[n++] = "10";
	if (!conninfo_has(opts, "keepalives_interval"))
		kw[n] = "keepalives_interval", val[n++] = "5";
	if (!conninfo_has(opts, "keepalives_count"))
		kw[n] = "keepalives_count", val[n++] = "3";
	if (!conninfo_has(opts, "tcp_user_timeout"))
		kw[n] = "tcp_user_timeout", val[n++] = "30000";
	if (options != NULL && !conninfo_has(opts, "options"))
		kw[n] = "options", val[n++] = options;
	if (replication) {
		kw[n] = "replication", val[n++] = "database";
		/* pgoutput converts every text value to the connection's
		 * client_encoding (wal2json converts nothing): UTF-8, what
		 * Kafka's consumers get from wal2json, whatever the database's
		 * encoding or the conninfo says. Last, so it wins. */
		kw[n] = "client_encoding", val[n++] = "UTF8";
	}
	kw[n] = NULL, val[n] = NULL;

	/* Started by hand, to ask for verbose errors before the server's
	 * first answer: they carry the SQLSTATE that tells a wrong password
	 * from a server that is still starting. */
	conn = PQconnectStartParams(kw, val, 1);
	PQconninfoFree(opts); /* val[] pointed into it until here */
	if (conn != NULL && PQstatus(conn) != CONNECTION_BAD) {
		PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
		if (connect_wait(conn, now_mono_us() + timeout_s * hosts * 1000000)) {
			PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
			return conn;
		}
	}
	tidy_message(conn != NULL ? PQerrorMessage(conn) : "out of memory", msg,
	             sizeof(msg));
	if (msg[0] == '\0')
		snprintf(msg, sizeof(msg), "timed out after %llds",
		         (long long)(timeout_s * hosts));
	verbose_sqlstate(msg, state);
	*cls = pgu_classify_connect(state, msg, &hint);
	errbuf_set(err, errlen, "could not connect to PostgreSQL: %s%s%s", msg,
	        hint[0] ? "; " : "", hint);
	PQfinish(conn);
	return NULL;
}

/* Waits until the socket is ready for events or the deadline passed.
 * Returns 1 ready, 0 timed out, -1 error. */
static int wait_socket(PGconn *conn, short events, int64_t deadline_us)
{
	struct pollfd p = { .fd = PQsocket(conn), .events = events };
	int64_t left = deadline_us - now_mono_us();
	int rc;

	if (p.fd < 0)
		return -1;
	if (left <= 0)
		return 0;
	do {
		rc = poll(&p, 1, (int)(left / 1000) + 1);
	} while (rc < 0 && errno == EINTR);
	return rc < 0 ? -1 : rc > 0 ? 1 : now_mono_us() >= deadline_us ? 0 : 1;
}

PGresult *pgu_exec(PGconn *conn, const char *sql, int nparams,
                   const char *const *params, int64_t deadline_us,
                   bool *timed_out)
{
	PGresult *last = NULL;
	int f;

	*timed_out = false;
	if ((nparams > 0 ? PQsendQueryParams(conn, sql, nparams, NULL, params,
	                                     NULL, NULL, 0)
	                 : PQsendQuery(conn, sql)) == 0)
		return NULL;
	/* In non-blocking mode the query may still sit in libpq's buffer. */
	while ((f = PQflush(conn)) == 1) {
		int w = wait_socket(conn, POLLOUT | POLLIN, deadline_us);
		if (w <= 0) {
			*timed_out = w == 0;
			return NULL;
		}
		if (!PQconsumeInput(conn))
			return NULL;
	}
	if (f < 0)
		return NULL;
	for (;;) {
		PGresult *res;
		ExecStatusType st;

		while (PQisBusy(conn)) {
			int w = wait_socket(conn, POLLIN, deadline_us);
			if (w <= 0) {
				*timed_out = w == 0;
				PQclear(last);
				return NULL;
			}
			if (!PQconsumeInput(conn)) {
				PQclear(last);
				return NULL;
			}
		}
		res = PQgetResult(conn);
		if (res == NULL)
			return last;
		st = PQresultStatus(res);
		if (st == PGRES_COPY_BOTH || st == PGRES_COPY_OUT ||
		    st == PGRES_COPY_IN) {
			PQclear(last);
			return res;
		}
		PQclear(last);
		last = res;
	}
}

void pgu_message(PGconn *conn, const PGresult *res, char *out, size_t outlen)
{
	const char *m = res != NULL ? PQresultErrorMessage(res) : NULL;

	if (m == NULL || m[0] == '\0')
		m = conn != NULL ? PQerrorMessage(conn) : "no connection";
	tidy_message(m, out, outlen);
	if (out[0] == '\0')
		snprintf(out, outlen, "no answer");
}

/* One line: trailing newlines and blanks dropped, inner newlines as
 * blanks. */
static void one_line(const char *m, char *out, size_t outlen)
{
	size_t n = 0;

	for (; *m != '\0' && n + 1 < outlen; m++)
		out[n++] = *m == '\n' ? ' ' : *m;
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

void pgu_error_text(PGconn *conn, const PGresult *res, char *out,
                    size_t outlen)
{
	const char *m = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
	                            : NULL;
	const char *h = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)
	                            : NULL;
	char buf[1200];

	if (m == NULL) {
		one_line(conn != NULL ? PQerrorMessage(conn) : "unknown error", out,
		         outlen);
		if (out[0] == '\0')
			snprintf(out, outlen, "unknown error");
		return;
	}
	snprintf(buf, sizeof(buf), "%s%s%s%s", m, h ? " (hint: " : "",
	         h ? h : "", h ? ")" : "");
	one_line(buf, out, outlen);
}

const char *pgu_sqlstate(const PGresult *res)
{
	const char *s = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE)
	                            : NULL;

	return s != NULL ? s : "";
}

PGresult *pgu_query(PGconn *conn, const char *sql, int nparams,
                    const char *const *params, int64_t deadline_us,
                    ExecStatusType want, const char *what,
                    struct pgu_status *st, char *err, size_t errlen)
{
	bool timed_out;
	char m[1024];
	int64_t start = now_mono_us();
	PGresult *res = pgu_exec(conn, sql, nparams, params, deadline_us,
	                         &timed_out);

	st->outcome = PGU_Q_OK;
	st->sqlstate[0] = '\0';
	if (res != NULL && PQresultStatus(res) == want)
		return res;
	if (res == NULL) {
		st->outcome = PGU_Q_NO_ANSWER;
		if (timed_out)
			errbuf_set(err, errlen, "%s: PostgreSQL did not answer within "
			           "%lld ms", what, (long long)((deadline_us - start) / 1000));
		else
			errbuf_set(err, errlen, "%s: %s", what,
			           (pgu_message(conn, NULL, m, sizeof(m)), m));
		return NULL;
	}
	st->outcome = PGU_Q_REFUSED;
	snprintf(st->sqlstate, sizeof(st->sqlstate), "%s", pgu_sqlstate(res));
	pgu_error_text(conn, res, m, sizeof(m));
	errbuf_set(err, errlen, "%s: %s", what, m);
	PQclear(res);
	return NULL;
}

uint64_t pgu_lsn(const PGresult *res, int r, int c)
{
	const char *v = PQgetvalue(res, r, c);
	uint64_t lsn = LSN_INVALID;

	if (lsn_parse(v, strlen(v), &lsn) < 0)
		return LSN_INVALID;
	return lsn;
}

int64_t pgu_i64(const PGresult *res, int r, int c)
{
	return strtoll(PQgetvalue(res, r, c), NULL, 10);
}

bool pgu_bool(const PGresult *res, int r, int c)
{
	return strcmp(PQgetvalue(res, r, c), "t") == 0;
}

int pgu_identify(PGconn *conn, int64_t deadline_us, struct pgu_system *sys,
                 struct pgu_status *st, char *err, size_t errlen)
{
	PGresult *res = pgu_query(conn, "IDENTIFY_SYSTEM", 0, NULL, deadline_us,
	                          PGRES_TUPLES_OK, "IDENTIFY_SYSTEM", st, err,
	                          errlen);

	memset(sys, 0, sizeof(*sys));
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) < 3 ||
	    (sys->xlogpos = pgu_lsn(res, 0, 2)) == LSN_INVALID) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "IDENTIFY_SYSTEM returned a bad xlogpos");
		PQclear(res);
		return -1;
	}
	snprintf(sys->system_id, sizeof(sys->system_id), "%s",
	         PQgetvalue(res, 0, 0));
	sys->timeline = (int)pgu_i64(res, 0, 1);
	PQclear(res);
	return 0;
}

static void reverse_tli(struct tli_switch *a, int from, int to)
{
	for (to--; from < to; from++, to--) {
		struct tli_switch t = a[from];
		a[from] = a[to];
		a[to] = t;
	}
}

int pgu_parse_timeline_history(const char *text, size_t len,
                               struct tli_switch *out, int max, int *n,
                               char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	int kept = 0, lineno = 0, prev_tli = 0;

	*n = 0;
	if (max <= 0) {
		errbuf_set(err, errlen, "timeline history: no room");
		return -1;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q, *stop, *le = eol != NULL ? eol : end;
		long tli;
		uint64_t lsn;

		lineno++;
		q = p;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == le || *q == '#')
			goto next;
		/* The timeline, digits up to a blank, read within the line: the
		 * text need not end in a NUL. */
		tli = 0;
		stop = q;
		while (stop < le && *stop >= '0' && *stop <= '9' && tli <= INT32_MAX)
			tli = tli * 10 + (*stop++ - '0');
		if (stop == q || tli < 1 || tli > INT32_MAX || tli <= prev_tli ||
		    stop >= le || (*stop != '\t' && *stop != ' '))
			goto bad;
		q = stop;
		while (q < le && (*q == '\t' || *q == ' '))
			q++;
		stop = q;
		while (stop < le && *stop != '\t' && *stop != ' ' && *stop != '\r')
			stop++;
		if (lsn_parse(q, (size_t)(stop - q), &lsn) < 0 || lsn == LSN_INVALID)
			goto bad;
		if (kept > 0 && lsn < out[(kept - 1) % max].switch_lsn)
			goto bad;
		/* A ring over out: the newest max lines win. */
		out[kept % max] = (struct tli_switch){ .tli = (int)tli,
		                                       .switch_lsn = lsn };
		kept++;
		prev_tli = (int)tli;
next:
		p = eol != NULL ? eol + 1 : end;
	}
	if (kept > max) {
		/* The oldest kept line is at kept % max: rotate it to the front
		 * (three reversals, in place). */
		reverse_tli(out, 0, kept % max);
		reverse_tli(out, kept % max, max);
		reverse_tli(out, 0, max);
		kept = max;
	}
	*n = kept;
	return 0;
bad:
	errbuf_set(err, errlen, "timeline history: line %d is not "
	           "\"timeline<TAB>X/X<TAB>reason\"", lineno);
	*n = 0;
	return -1;
}

int pgu_timeline_history(PGconn *conn, int tli, int64_t deadline_us,
                         struct tli_switch *out, int max, int *n,
                         struct pgu_status *st, char *err, size_t errlen)
{
	char cmd[48];
	PGresult *res;
	const char *content;
	int rc;

	*n = 0;
	snprintf(cmd, sizeof(cmd), "TIMELINE_HISTORY %d", tli);
	res = pgu_query(conn, cmd, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "TIMELINE_HISTORY", st, err, errlen);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) < 2) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "TIMELINE_HISTORY %d returned %d rows of "
		           "%d columns", tli, PQntuples(res), PQnfields(res));
		PQclear(res);
		return -1;
	}
	/* The content column is text on the servers this runs against; a
	 * bytea in text form would start with \x and fail the parse below
	 * rather than be misread. */
	content = PQgetvalue(res, 0, 1);
	rc = pgu_parse_timeline_history(content, (size_t)PQgetlength(res, 0, 1),
	                                out, max, n, err, errlen);
	PQclear(res);
	if (rc < 0)
		st->outcome = PGU_Q_NO_ANSWER;
	return rc;
}
