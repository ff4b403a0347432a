/* SPDX-License-Identifier: Apache-2.0 */
/* consumer.c -- reference consumer: reads the relay's order events from
 * Kafka and applies each one exactly once to its own PostgreSQL database,
 * with the inbox of sql/inbox.sql. README.md states the rule to port. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h> /* EX_USAGE 64, EX_DATAERR 65, EX_UNAVAILABLE 69 */
#include <time.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

/* The only global mutable state: set by the handler, read between records,
 * so a signal never interrupts a record half-way. */
static volatile sig_atomic_t stop_requested;

struct counts {
	unsigned long applied;    /* inbox_claim() returned true */
	unsigned long duplicates; /* false: seen before, nothing applied */
};

/* One decoded record. status and total are borrowed from the JSON root. */
struct order_event {
	char id[64];          /* "id" header: the event's uuid */
	char event_type[128]; /* "event_type" header */
	char order_id[256];   /* record key */
	long long version;
	const char *status;
	const char *total; /* NULL: SQL NULL */
};

enum apply_result { APPLIED, DUPLICATE, REJECTED, DB_ERROR };

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* One fprintf per line: stdio locks it, so lines from librdkafka's threads
 * (on_kafka_log) never cut into ours. */
static void log_msg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "consumer: %s\n", line);
}

/* librdkafka's own log lines (broker down, ...); runs on its threads. */
static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac,
			 const char *buf)
{
	(void)rk;
	(void)level;
	log_msg("kafka: %s: %s", fac, buf);
}

/* Names the record, so that an operator can find it with kcat. */
static void bad_record(const rd_kafka_message_t *msg, const char *why)
{
	log_msg("bad record: %s [%d] at offset %lld: %s; offset not stored",
		rd_kafka_topic_name(msg->rkt), (int)msg->partition,
		(long long)msg->offset, why);
}

/* Copies len bytes into a NUL-terminated string; -1 if they do not fit or
 * hold a NUL (both would silently change the value). */
static int copy_text(char *dst, size_t size, const void *src, size_t len)
{
	if (src == NULL || len == 0 || len >= size || memchr(src, 0, len))
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

static int copy_header(rd_kafka_headers_t *hdrs, const char *name, char *dst,
		       size_t size)
{
	const void *val;
	size_t len;

	if (rd_kafka_header_get_last(hdrs, name, &val, &len) !=
	    RD_KAFKA_RESP_ERR_NO_ERROR)
		return -1;
	return copy_text(dst, size, val, len);
}

/* Fills ev from the record. Returns NULL, or why the record is bad. *root
 * gets the parsed value (ev borrows from it); the caller json_decref()s it
 * in both cases. */
static const char *decode(const rd_kafka_message_t *msg,
			  struct order_event *ev, json_t **root)
{
	rd_kafka_headers_t *hdrs;
	json_t *version, *status, *total;

	*root = NULL;
	if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return "no headers (the \"id\" header is required)";
	if (copy_header(hdrs, "id", ev->id, sizeof(ev->id)) != 0)
		return "no usable \"id\" header";
	if (copy_header(hdrs, "event_type", ev->event_type,
			sizeof(ev->event_type)) != 0)
		return "no usable \"event_type\" header";
	if (copy_text(ev->order_id, sizeof(ev->order_id), msg->key,
		      msg->key_len) != 0)
		return "no usable key (the order id)";
	if (msg->payload != NULL)
		*root = json_loadb(msg->payload, msg->len, 0, NULL);
	if (!json_is_object(*root))
		return "value is not a JSON object";
	version = json_object_get(*root, "version");
	status = json_object_get(*root, "status");
	total = json_object_get(*root, "total");
	if (!json_is_integer(version))
		return "value has no integer \"version\"";
	if (!json_is_string(status))
		return "value has no string \"status\"";
	if (total != NULL && !json_is_null(total) && !json_is_string(total))
		return "\"total\" is neither a decimal string nor null";
	ev->version = json_integer_value(version);
	ev->status = json_string_value(status);
	ev->total = json_is_string(total) ? json_string_value(total) : NULL;
	return NULL;
}

/* libpq's messages end with a newline already. */
static void log_pg(PGconn *conn)
{
	fprintf(stderr, "consumer: postgresql: %s", PQerrorMessage(conn));
}

/* Runs one statement; parameters are text, cast in the SQL: never built
 * into the SQL string. Returns 0 when the result has status want (*out, if
 * not NULL, then owns it); -1 after logging, with sqlstate set ("" if the
 * connection failed). */
static int exec(PGconn *conn, const char *sql, int nparams,
		const char *const *params, ExecStatusType want, PGresult **out,
		char sqlstate[6])
{
	PGresult *res;
	const char *code;

	res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != want) {
		code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		snprintf(sqlstate, 6, "%s", code ? code : "");
		log_pg(conn);
		PQclear(res);
		return -1;
	}
	if (out != NULL)
		*out = res;
	else
		PQclear(res);
	return 0;
}

/* The per-record transaction of the spec. The claim and the side effects
 * commit or roll back together: that is what makes a redelivery harmless
 * at every point of a crash (README.md). */
static enum apply_result apply(PGconn *conn, const struct order_event *ev)
{
	char version[24], sqlstate[6] = "";
	const char *claim[] = {ev->id};
	const char *key[] = {ev->order_id};
	const char *upsert[] = {ev->order_id, ev->status, version, ev->total};
	const char *effect[] = {ev->id, ev->order_id, ev->event_type, version,
				NULL /* in_order, below */};
	long long prev = 0;
	bool claimed;
	PGresult *res;
	enum apply_result result;

	snprintf(version, sizeof(version), "%lld", ev->version);

	if (exec(conn, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL, sqlstate))
		goto fail;
	if (exec(conn, "SELECT public.inbox_claim($1::uuid)", 1, claim,
		 PGRES_TUPLES_OK, &res, sqlstate))
		goto fail;
	claimed = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (!claimed) {
		/* Applied before (its offset was not committed then):
		 * nothing to do but let the offset move on. */
		result = DUPLICATE;
		goto commit;
	}
	/* FOR UPDATE: another consumer of the same order (during a
	 * rebalance) waits here until we commit, so prev is current. */
	if (exec(conn,
		 "SELECT version FROM public.order_view"
		 " WHERE order_id = $1 FOR UPDATE",
		 1, key, PGRES_TUPLES_OK, &res, sqlstate))
		goto fail;
	if (PQntuples(res) > 0)
		prev = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	effect[4] = ev->version == prev + 1 ? "true" : "false";
	if (ev->version > prev) {
		if (exec(conn,
			 "INSERT INTO public.order_view (order_id, status,"
			 " version, events_applied, total)"
			 " VALUES ($1, $2, $3::int, 1, $4::numeric)"
			 " ON CONFLICT (order_id) DO UPDATE SET"
			 " status = EXCLUDED.status,"
			 " version = EXCLUDED.version,"
			 " events_applied = order_view.events_applied + 1,"
			 " total = EXCLUDED.total, updated_at = now()",
			 4, upsert, PGRES_COMMAND_OK, NULL, sqlstate))
			goto fail;
	} else {
		/* Stale (an older version after a newer one): counted, but
		 * it must not move the view back in time. */
		if (exec(conn,
			 "UPDATE public.order_view"
			 " SET events_applied = events_applied + 1"
			 " WHERE order_id = $1",
			 1, key, PGRES_COMMAND_OK, NULL, sqlstate))
			goto fail;
	}
	if (exec(conn,
		 "INSERT INTO public.order_effects (event_id, order_id,"
		 " event_type, version, in_order)"
		 " VALUES ($1::uuid, $2, $3, $4::int, $5::boolean)",
		 5, effect, PGRES_COMMAND_OK, NULL, sqlstate))
		goto fail;
	result = APPLIED;
commit:
	if (exec(conn, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, sqlstate))
		goto fail;
	return result;
fail:
	PQclear(PQexec(conn, "ROLLBACK")); /* no-op if the link is gone */
	/* Class 22 (data exception: a bad uuid, a version out of range, a
	 * total that is not a number) comes from the record's values, not
	 * from the database: retrying cannot help. */
	return strncmp(sqlstate, "22", 2) == 0 ? REJECTED : DB_ERROR;
}

/* Marks the record done for the group: offset + 1, the next one to read.
 * The background auto-commit sends only offsets stored here. */
static void store_offset(rd_kafka_t *rk, const rd_kafka_message_t *msg)
{
	rd_kafka_topic_partition_list_t *offs;
	rd_kafka_resp_err_t err;

	offs = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(offs, rd_kafka_topic_name(msg->rkt),
					  msg->partition)
		->offset = msg->offset + 1;
	err = rd_kafka_offsets_store(rk, offs);
	if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
		err = offs->elems[0].err;
	/* Fails when a rebalance took the partition away meanwhile: harmless,
	 * its new owner gets the record again and the inbox says duplicate. */
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		log_msg("offset %lld of %s [%d] not stored: %s",
			(long long)msg->offset, rd_kafka_topic_name(msg->rkt),
			(int)msg->partition, rd_kafka_err2str(err));
	rd_kafka_topic_partition_list_destroy(offs);
}

/* Decode, apply, then store the offset. Returns 0 to go on, or the exit
 * code; the offset is not stored then, so the record comes back. */
static int handle_record(rd_kafka_t *rk, PGconn *conn,
			 const rd_kafka_message_t *msg, struct counts *n)
{
	struct order_event ev;
	json_t *root;
	const char *why;
	int rc = 0;

	why = decode(msg, &ev, &root);
	if (why != NULL) {
		bad_record(msg, why);
		rc = EX_DATAERR;
		goto out;
	}
	switch (apply(conn, &ev)) {
	case APPLIED:
		n->applied++;
		break;
	case DUPLICATE:
		n->duplicates++;
		break;
	case REJECTED:
		bad_record(msg, "PostgreSQL refused its values (above)");
		rc = EX_DATAERR;
		goto out;
	case DB_ERROR:
		log_msg("stopping: %s [%d] at offset %lld not applied, will be "
			"read again after a restart",
			rd_kafka_topic_name(msg->rkt), (int)msg->partition,
			(long long)msg->offset);
		rc = EX_UNAVAILABLE;
		goto out;
	}
	/* Only now, after COMMIT. Stored before it, a crash in between would
	 * lose the event: the group would resume after a record whose
	 * effects were rolled back. Stored after it, a crash in between only
	 * redelivers a record that the inbox then recognises. */
	store_offset(rk, msg);
out:
	json_decref(root);
	return rc;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool has_partitions(rd_kafka_t *rk)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	bool yes;

	if (rd_kafka_assignment(rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return false;
	yes = parts->cnt > 0;
	rd_kafka_topic_partition_list_destroy(parts);
	return yes;
}

/* Until a signal, an error, or idle_exit_ms (> 0) without a record. */
static int run(rd_kafka_t *rk, PGconn *conn, long idle_exit_ms,
	       struct counts *n)
{
	long long idle_since = now_ms();
	rd_kafka_message_t *msg;
	int rc = 0;

	while (!stop_requested && rc == 0) {
		/* 100 ms: how soon a signal or the idle limit is noticed. */
		msg = rd_kafka_consumer_poll(rk, 100);
		if (msg == NULL) {
			/* Joining the group takes seconds in which nothing
			 * can arrive: the idle clock starts at assignment. */
			if (idle_exit_ms > 0 && !has_partitions(rk))
				idle_since = now_ms();
			else if (idle_exit_ms > 0 &&
				 now_ms() - idle_since >= idle_exit_ms)
				break;
			continue;
		}
		if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
			idle_since = now_ms();
			rc = handle_record(rk, conn, msg, n);
		} else {
			/* Mostly transient (a broker down): librdkafka
			 * retries by itself. A fatal one ends the run. */
			log_msg("kafka: %s", rd_kafka_message_errstr(msg));
			if (msg->err == RD_KAFKA_RESP_ERR__FATAL)
				rc = EX_UNAVAILABLE;
		}
		rd_kafka_message_destroy(msg);
	}
	return rc;
}

static rd_kafka_t *kafka_new(const char *brokers, const char *group,
			     const char *session_ms)
{
	const char *settings[][2] = {
		{"bootstrap.servers", brokers},
		{"group.id", group},
		/* A crashed member holds its partitions until its session
		 * times out: 10 s, not librdkafka's 45, before another takes
		 * over (KAFKA_SESSION_TIMEOUT_MS; the broker's minimum is
		 * group.min.session.timeout.ms, 6 s by default). */
		{"session.timeout.ms", session_ms},
		{"heartbeat.interval.ms", "1000"},
		/* The relay creates the topic with its first event: a
		 * consumer subscribed before that finds it within 5 s, not
		 * at the next 5-minute metadata refresh. */
		{"topic.metadata.refresh.interval.ms", "5000"},
		/* Offsets are stored by hand, after the DB commit... */
		{"enable.auto.offset.store", "false"},
		/* ...and committed in the background: only stored ones. */
		{"enable.auto.commit", "true"},
		/* A new group starts at the beginning: no event missed. */
		{"auto.offset.reset", "earliest"},
		/* Never see a transaction the producer aborted. */
		{"isolation.level", "read_committed"},
	};
	char errstr[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_res_t res;
	rd_kafka_t *rk;
	size_t i;

	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		res = rd_kafka_conf_set(conf, settings[i][0], settings[i][1],
					errstr, sizeof(errstr));
		if (res != RD_KAFKA_CONF_OK)
			goto fail;
	}
	rd_kafka_conf_set_log_cb(conf, on_kafka_log);
	/* Takes ownership of conf, but only on success. */
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
		goto fail;
	rd_kafka_poll_set_consumer(rk);
	return rk;
fail:
	log_msg("kafka: %s", errstr);
	rd_kafka_conf_destroy(conf);
	return NULL;
}

/* librdkafka retries an unreachable broker for ever; at start, a metadata
 * request bounded in time tells the operator at once instead. */
static int kafka_check(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;

	err = rd_kafka_metadata(rk, 0, NULL, &md, 10000);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		log_msg("kafka: no broker answered: %s", rd_kafka_err2str(err));
		return -1;
	}
	rd_kafka_metadata_destroy(md);
	return 0;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : dflt;
}

/* [--idle-exit-ms N]; -1 on anything else. */
static int parse_args(int argc, char **argv, long *idle_exit_ms)
{
	char *end;

	if (argc == 1)
		return 0;
	if (argc != 3 || strcmp(argv[1], "--idle-exit-ms") != 0)
		return -1;
	*idle_exit_ms = strtol(argv[2], &end, 10);
	return *argv[2] != '\0' && *end == '\0' && *idle_exit_ms > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *brokers = env_or("KAFKA_BROKERS", "127.0.0.1:9092");
	const char *topic = env_or("KAFKA_TOPIC", "outbox.event.Order");
	const char *group = env_or("KAFKA_GROUP", "order-view");
	const char *url = getenv("DATABASE_URL");
	rd_kafka_topic_partition_list_t *topics;
	struct sigaction sa = {.sa_handler = on_signal};
	struct counts n = {0, 0};
	PQconninfoOption *parsed;
	long idle_exit_ms = 0;
	rd_kafka_resp_err_t err;
	rd_kafka_t *rk = NULL;
	PGconn *conn = NULL;
	int rc = EX_UNAVAILABLE;

	if (parse_args(argc, argv, &idle_exit_ms) != 0 || url == NULL) {
		fputs("usage: DATABASE_URL=postgresql://... [KAFKA_BROKERS=...]"
		      " [KAFKA_TOPIC=...] [KAFKA_GROUP=...]\n"
		      "       consumer [--idle-exit-ms N]\n",
		      stderr);
		return EX_USAGE;
	}
	/* Parsed first, and its error not shown: libpq's parse errors quote
	 * the offending part, which may be the password. */
	parsed = PQconninfoParse(url, NULL);
	if (parsed == NULL) {
		log_msg("DATABASE_URL is not a valid connection string");
		return EX_USAGE;
	}
	PQconninfoFree(parsed);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	conn = PQconnectdb(url);
	if (PQstatus(conn) != CONNECTION_OK) {
		log_pg(conn);
		goto out;
	}
	rk = kafka_new(brokers, group,
		       env_or("KAFKA_SESSION_TIMEOUT_MS", "10000"));
	if (rk == NULL || kafka_check(rk) != 0)
		goto out;
	topics = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(topics, topic,
					  RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(rk, topics);
	rd_kafka_topic_partition_list_destroy(topics);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		log_msg("kafka: subscribe to %s: %s", topic,
			rd_kafka_err2str(err));
		goto out;
	}
	log_msg("consuming %s from %s as group %s", topic, brokers, group);
	rc = run(rk, conn, idle_exit_ms, &n);
	/* Commits the stored offsets (all of committed transactions) and
	 * leaves the group now, not after the session timeout. */
	rd_kafka_consumer_close(rk);
out:
	if (rk != NULL)
		rd_kafka_destroy(rk);
	PQfinish(conn);
	printf("consumer: applied=%lu duplicates=%lu\n", n.applied,
	       n.duplicates);
	return rc;
}
