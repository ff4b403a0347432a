/* SPDX-License-Identifier: Apache-2.0 */
/* from_debezium.c -- --from-debezium (from_debezium.h): a Debezium
 * PostgreSQL connector's settings and its Outbox Event Router's, each a
 * row of a table saying what it becomes here and, when nothing, why. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/from_debezium.h"
#include "cli_int.h"
#include "kafka/kafka_conf.h"
#include "lib/config.h"

#define PG_CONNECTOR "io.debezium.connector.postgresql.PostgresConnector"
#define ROUTER "io.debezium.transforms.outbox.EventRouter"

/* One setting of the connector, in the order read. */
struct dbz_setting {
	char *name;
	char *value;
	bool taken;                 /* a row took it (mapped or listed) */
};

struct dbz {
	struct dbz_setting *set;
	size_t n;
	char router[160];           /* "transforms.<name>." of the outbox one */
	FILE *out;                  /* the configuration */
	FILE *notes;                /* what does not map, one a line (a
	                             * buffer, written out on success) */
	char *tail;                 /* the same as comments, for out's end */
	size_t tail_len;
	FILE *tailf;
	struct relay_config scratch; /* every line written, applied */
	char conninfo[1024];        /* libpq keyword=value pairs */
	char conninfo_from[512];    /* the settings they came from */
};

/* A value of a setting and what it becomes: to, a value of the row's
 * key; or nothing to write (to NULL) with why, listed unless fine (the
 * relay behaves so anyway). */
struct dbz_value {
	const char *from;
	const char *to;
	bool fine;
	const char *why;
};

struct dbz_row;
typedef void (*dbz_fn)(struct dbz *z, const struct dbz_row *r,
                       const char *from, const char *value);

enum dbz_how {
	DBZ_KEY,        /* the value (through values, if any) is key's */
	DBZ_CONNINFO,   /* a part of pg.conninfo; key is libpq's keyword */
	DBZ_NONE,       /* no equivalent: listed with why */
	DBZ_FINE,       /* no equivalent needed: consumed without a word */
	DBZ_FN,         /* fn decides */
};

struct dbz_row {
	const char *name;           /* ends in '*': every name with the prefix */
	enum dbz_how how;
	const char *key;
	const struct dbz_value *values; /* NULL: the value as given */
	const char *def;            /* Debezium's default, handled as if set
	                             * when the connector leaves it unset */
	const char *why;            /* DBZ_NONE: why; DBZ_KEY: a remark */
	dbz_fn fn;
};

static void dbz_note(struct dbz *z, const char *from, const char *fmt, ...)
	RELAY_PRINTF(3, 4);

/* A setting that does not map: on notes, and as a comment at the end of
 * the configuration. */
static void dbz_note(struct dbz *z, const char *from, const char *fmt, ...)
{
	char why[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(z->notes, "%s: %s\n", from, why);
	fprintf(z->tailf, "#   %s: %s\n", from, why);
}

/* The value as a line of the file reads it back (config.c's
 * file_value()): in double quotes when a blank at either end, a " #" or a
 * leading quote would change it. Returns false when no spelling reads
 * back the same (a quote and a '#' together). */
static bool put_value(FILE *out, const char *v)
{
	size_t n = strlen(v);
	bool quote = n == 0 || v[0] == '"' || isspace((unsigned char)v[0]) ||
	             isspace((unsigned char)v[n - 1]) || strstr(v, " #") != NULL ||
	             strstr(v, "\t#") != NULL;

	if (quote && strchr(v, '"') != NULL && strchr(v, '#') != NULL)
		return false;
	fprintf(out, quote ? "\"%s\"" : "%s", v);
	return true;
}

/* Writes "key = value" under a comment naming the setting it came from
 * (and a remark), once the scratch configuration took it: a value this
 * relay refuses is listed instead, with the relay's message. */
static void emit(struct dbz *z, const char *from, const char *key,
                 const char *value, const char *remark)
{
	char err[512];
	char *line = NULL;
	size_t len = 0;
	FILE *f;
	bool ok;

	if (strpbrk(value, "\r\n") != NULL) {
		dbz_note(z, from, "holds a line break, which a line of the relay's "
		         "configuration cannot: set %s by hand", key);
		return;
	}
	if (cfg_set(&z->scratch, key, value, CFG_SRC_FILE, from, err,
	            sizeof(err)) < 0) {
		if (!cfg_key_known(key))
			dbz_note(z, from, "would be %s, which this relay build does not "
			         "have", key);
		else
			dbz_note(z, from, "would be %s, which this relay refuses (%s)",
			         key, err);
		return;
	}
	f = open_memstream(&line, &len);
	fprintf(f, "%s = ", key);
	ok = put_value(f, value);
	fclose(f);
	if (!ok) {
		dbz_note(z, from, "holds both a double quote and a '#', which a "
		         "line of the relay's configuration cannot: set %s by hand",
		         key);
	} else {
		fprintf(z->out, "# %s%s%s\n%s\n", from, remark != NULL ? ": " : "",
		        remark != NULL ? remark : "", line);
	}
	free(line);
}

static struct dbz_setting *find(struct dbz *z, const char *name)
{
	for (size_t i = 0; i < z->n; i++)
		if (strcmp(z->set[i].name, name) == 0)
			return &z->set[i];
	return NULL;
}

/* The value of name, taken; NULL when unset. */
static const char *take(struct dbz *z, const char *name)
{
	struct dbz_setting *s = find(z, name);

	if (s == NULL)
		return NULL;
	s->taken = true;
	return s->value;
}

/* ---- the rows' functions ---- */

static void conninfo_add(struct dbz *z, const char *from, const char *kw,
                         const char *v)
{
	size_t n = strlen(z->conninfo), m = strlen(z->conninfo_from);
	bool quote = v[0] == '\0' || strpbrk(v, " \t'\\") != NULL;

	n += (size_t)snprintf(z->conninfo + n, sizeof(z->conninfo) - n,
	                      "%s%s=%s", n > 0 ? " " : "", kw, quote ? "'" : "");
	for (const char *p = v; *p != '\0' && n + 3 < sizeof(z->conninfo); p++) {
		if (*p == '\'' || *p == '\\')
			z->conninfo[n++] = '\\';
		z->conninfo[n++] = *p;
	}
	if (quote && n + 1 < sizeof(z->conninfo))
		z->conninfo[n++] = '\'';
	z->conninfo[n] = '\0';
	snprintf(z->conninfo_from + m, sizeof(z->conninfo_from) - m, "%s%s",
	         m > 0 ? ", " : "", from);
}

static void fn_password(struct dbz *z, const struct dbz_row *r,
                        const char *from, const char *value)
{
	(void)r, (void)value;
	dbz_note(z, from, "never printed: put the password in a file (or a "
	         "Kubernetes Secret) and set pg.password.file to its path (a "
	         "commented line is written), or use ~/.pgpass");
	fprintf(z->out, "# %s is not carried over: the password goes in a file\n"
	        "# pg.password.file = /run/secrets/pg-password\n", from);
}

/* table.include.list through the alias of the same name (config.c),
 * which takes one plain schema.table only. */
static void fn_include_list(struct dbz *z, const struct dbz_row *r,
                            const char *from, const char *value)
{
	char err[512], table[320];

	(void)r;
	if (cfg_set(&z->scratch, "table.include.list", value, CFG_SRC_FILE, from,
	            err, sizeof(err)) < 0) {
		dbz_note(z, from, "%s", strstr(err, ": ") != NULL
		         ? strstr(err, ": ") + 2 : err);
		return;
	}
	snprintf(table, sizeof(table), "%s.%s", z->scratch.outbox_schema,
	         z->scratch.outbox_table);
	fprintf(z->out, "# %s\noutbox.table = %s\n", from, table);
}

/* errors.tolerance: Connect's "all" goes to its dead-letter queue when
 * one is named, else logs and goes on. */
static void fn_tolerance(struct dbz *z, const struct dbz_row *r,
                         const char *from, const char *value)
{
	const struct dbz_setting *dlq =
		find(z, "errors.deadletterqueue.topic.name");

	(void)r;
	if (strcmp(value, "none") == 0)
		emit(z, from, "poison.policy", "fail", NULL);
	else if (strcmp(value, "all") == 0 && dlq != NULL && dlq->value[0])
		emit(z, from, "poison.policy", "dlq",
		     "all, with a dead-letter topic");
	else if (strcmp(value, "all") == 0)
		emit(z, from, "poison.policy", "skip",
		     "all, without a dead-letter topic: logged and counted");
	else
		dbz_note(z, from, "\"%s\" is not none or all", value);
}

/* key.converter, value.converter: what Connect's converter writes is
 * what key.format / value.format reproduce. A converter the connector
 * does not set is the Connect worker's, which the file does not show. */
static void fn_converter(struct dbz *z, const struct dbz_row *r,
                         const char *from, const char *value)
{
	char sname[96];
	const char *schemas;

	snprintf(sname, sizeof(sname), "%s.schemas.enable", from);
	schemas = take(z, sname);
	if (value == NULL) {
		dbz_note(z, from, "not set in the connector: the Connect worker's "
		         "converter applies; set %s to what it writes (string, "
		         "json, json-schema)", r->key);
		return;
	}
	if (strcmp(value, "org.apache.kafka.connect.storage.StringConverter") == 0)
		emit(z, from, r->key, "string", "StringConverter");
	else if (strcmp(value, "org.apache.kafka.connect.json.JsonConverter") != 0)
		dbz_note(z, from, "%s has no equivalent: the relay writes string, "
		         "json or json-schema (%s)", value, r->key);
	else if (schemas != NULL && strcmp(schemas, "false") == 0)
		emit(z, from, r->key, "json", "JsonConverter, schemas.enable=false");
	else
		emit(z, from, r->key, "json-schema", "JsonConverter with schemas "
		     "(schemas.enable is true unless set false)");
}

/* producer.override.<property>: the Java client's name, which
 * librdkafka shares for most producer properties; librdkafka judges. A
 * secret is never printed. */
static void fn_producer(struct dbz *z, const struct dbz_row *r,
                        const char *from, const char *value)
{
	const char *prop = from + strlen(r->name) - 1;
	struct relay_config one;
	char key[256], err[512];

	snprintf(key, sizeof(key), "kafka.%s", prop);
	if (strstr(prop, "jaas") != NULL) {
		dbz_note(z, from, "Java's JAAS login (it holds credentials: never "
		         "printed): librdkafka takes kafka.sasl.mechanism, "
		         "kafka.sasl.username and kafka.sasl.password instead");
		return;
	}
	if (cfg_kafka_is_secret(prop)) {
		dbz_note(z, from, "a secret, never printed: set %s yourself", key);
		return;
	}
	cfg_init(&one);
	if (cfg_set(&one, key, value, CFG_SRC_FILE, from, err, sizeof(err)) < 0 ||
	    kc_check_properties(&one, err, sizeof(err)) < 0) {
		dbz_note(z, from, "librdkafka does not take it as %s (%s)", key, err);
		cfg_free(&one);
		return;
	}
	cfg_free(&one);
	emit(z, from, key, value, "the Connect producer's override");
}

/* topic.creation.default.<setting>: Connect's names, which the relay
 * takes as they are when it has them. */
static void fn_same(struct dbz *z, const struct dbz_row *r, const char *from,
                    const char *value)
{
	(void)r;
	emit(z, from, from, value, NULL);
}

/* ---- the tables ---- */

static const struct dbz_value plugin_values[] = {
	{ "pgoutput", "pgoutput", false, NULL },
	{ "decoderbufs", NULL, false, "decoderbufs is not supported (an "
	  "extension built for Debezium); the relay needs a slot of its own with "
	  "pgoutput (built into PostgreSQL) or wal2json: --create-slot" },
	{ NULL, NULL, false, NULL },
};

static const struct dbz_value failover_values[] = {
	{ "true", "on", false, NULL },
	{ "false", "off", false, NULL },
	{ NULL, NULL, false, NULL },
};

static const struct dbz_value snapshot_values[] = {
	{ "no_data", NULL, true, NULL },
	{ "never", NULL, true, NULL },
	{ NULL, NULL, false, "the relay never snapshots: it streams from its "
	  "slot, so rows committed before the slot existed are not published "
	  "(no_data is Debezium's mode that matches)" },
};

static const struct dbz_value drop_values[] = {
	{ "false", NULL, true, NULL },
	{ NULL, NULL, false, "the relay never drops its slot; --drop-slot --yes "
	  "does, by hand" },
};

static const struct dbz_value expand_values[] = {
	{ "false", NULL, true, NULL },
	{ NULL, NULL, false, "not supported: the relay passes the payload "
	  "column's text as the value (value.format says how it is encoded)" },
};

#define NONE(n, why) { n, DBZ_NONE, NULL, NULL, NULL, why, NULL }
#define FINE(n) { n, DBZ_FINE, NULL, NULL, NULL, NULL, NULL }

/* The connector's settings, in the order the output lists them. */
static const struct dbz_row connector_rows[] = {
	FINE("connector.class"),
	FINE("name"),
	FINE("transforms"),
	{ "database.hostname", DBZ_CONNINFO, "host", NULL, NULL, NULL, NULL },
	{ "database.port", DBZ_CONNINFO, "port", NULL, NULL, NULL, NULL },
	{ "database.user", DBZ_CONNINFO, "user", NULL, NULL, NULL, NULL },
	{ "database.dbname", DBZ_CONNINFO, "dbname", NULL, NULL, NULL, NULL },
	{ "database.sslmode", DBZ_CONNINFO, "sslmode", NULL, NULL, NULL, NULL },
	{ "database.sslrootcert", DBZ_CONNINFO, "sslrootcert", NULL, NULL, NULL,
	  NULL },
	{ "database.sslcert", DBZ_CONNINFO, "sslcert", NULL, NULL, NULL, NULL },
	{ "database.sslkey", DBZ_CONNINFO, "sslkey", NULL, NULL, NULL, NULL },
	{ "database.password", DBZ_FN, NULL, NULL, NULL, NULL, fn_password },
	NONE("database.sslpassword", "a secret, never printed: put the key's "
	     "passphrase in ~/.postgresql or set sslpassword in pg.conninfo "
	     "yourself"),
	NONE("database.tcpKeepAlive", "the relay turns TCP keepalives on itself "
	     "(10 s idle)"),
	NONE("database.initial.statements", "the relay runs no statements of "
	     "yours at connect"),
	{ "slot.name", DBZ_KEY, "slot.name", NULL, "debezium",
	  "Debezium's slot: stop Debezium before the relay streams from it, or "
	  "give the relay a slot of its own", NULL },
	{ "plugin.name", DBZ_KEY, "slot.plugin", plugin_values, "decoderbufs",
	  NULL, NULL },
	{ "publication.name", DBZ_KEY, "slot.publication", NULL,
	  "dbz_publication", NULL, NULL },
	NONE("publication.autocreate.mode", "the relay never creates a "
	     "publication while it runs; --create-slot creates one for the "
	     "outbox table only"),
	{ "slot.failover", DBZ_KEY, "slot.failover", failover_values, NULL, NULL,
	  NULL },
	{ "slot.drop.on.stop", DBZ_KEY, NULL, drop_values, NULL, NULL, NULL },
	{ "slot.retry.delay.ms", DBZ_KEY, "standby.retry.ms", NULL, NULL,
	  "retry period while another process holds the slot", NULL },
	NONE("slot.max.retries", "the relay waits for the slot as long as "
	     "another process holds it, every standby.retry.ms"),
	NONE("slot.stream.params", "the relay sets the plugin's options itself"),
	{ "snapshot.mode", DBZ_KEY, NULL, snapshot_values, "initial", NULL,
	  NULL },
	{ "table.include.list", DBZ_FN, NULL, NULL, NULL, NULL,
	  fn_include_list },
	NONE("schema.include.list", "the relay reads one table, outbox.table"),
	NONE("schema.exclude.list", "the relay reads one table, outbox.table"),
	NONE("table.exclude.list", "the relay reads one table, outbox.table"),
	NONE("column.*", "the outbox router publishes its own columns only"),
	{ "status.update.interval.ms", DBZ_KEY, "status.interval.ms", NULL, NULL,
	  NULL, NULL },
	{ "heartbeat.interval.ms", DBZ_KEY, "heartbeat.interval.ms", NULL, NULL,
	  "the relay's heartbeat is a logical message in the WAL, not a Kafka "
	  "record", NULL },
	{ "heartbeat.action.query", DBZ_KEY, "heartbeat.action.query", NULL,
	  NULL, NULL, NULL },
	NONE("topic.heartbeat.prefix", "the relay's heartbeats go to the WAL, "
	     "not to a Kafka topic"),
	NONE("topic.prefix", "names Debezium's change-event topics; with the "
	     "outbox router every record goes to route.topic.replacement's topic"),
	NONE("database.server.name", "names Debezium's change-event topics; "
	     "with the outbox router every record goes to "
	     "route.topic.replacement's topic"),
	NONE("tasks.max", "one relay process per slot: nothing to set"),
	NONE("max.batch.size", "the relay's bound is inflight.max.events and "
	     "inflight.max.bytes (events produced and not yet acked)"),
	NONE("max.queue.size", "the relay's bound is inflight.max.events and "
	     "inflight.max.bytes (events produced and not yet acked)"),
	NONE("max.queue.size.in.bytes", "the relay's bound is inflight.max.bytes"),
	NONE("poll.interval.ms", "the relay reads the stream as it comes"),
	NONE("tombstones.on.delete", "the outbox router ignores deletes; so "
	     "does the relay"),
	NONE("decimal.handling.mode", "change-event encoding: the outbox router "
	     "passes the payload column through"),
	NONE("time.precision.mode", "change-event encoding: the outbox router "
	     "passes the payload column through"),
	NONE("binary.handling.mode", "change-event encoding: the outbox router "
	     "passes the payload column through"),
	NONE("message.prefix.include.list", "the relay decodes its own prefixes "
	     "only (heartbeat.prefix, outbox.emit.prefix)"),
	{ "key.converter", DBZ_FN, "key.format", NULL, NULL, NULL, fn_converter },
	{ "value.converter", DBZ_FN, "value.format", NULL, NULL, NULL,
	  fn_converter },
	NONE("header.converter", "the relay writes header values as UTF-8 "
	     "text, as Connect's SimpleHeaderConverter does for strings"),
	{ "errors.tolerance", DBZ_FN, NULL, NULL, NULL, NULL, fn_tolerance },
	{ "errors.deadletterqueue.topic.name", DBZ_KEY, "poison.dlq.topic", NULL,
	  NULL, NULL, NULL },
	NONE("errors.deadletterqueue.topic.replication.factor", "the relay "
	     "creates no dead-letter topic: create it, or let the broker"),
	NONE("errors.deadletterqueue.context.headers.enable", "the relay's "
	     "dead-letter records always carry headers naming the cause"),
	NONE("errors.log.enable", "the relay always logs a poison event"),
	NONE("errors.log.include.messages", "the relay logs a poison event's "
	     "position and id, never its payload"),
	{ "errors.retry.delay.max.ms", DBZ_KEY, "poison.retry.backoff.max.ms",
	  NULL, NULL, NULL, NULL },
	NONE("errors.retry.timeout", "the relay counts tries (poison.retries), "
	     "not time"),
	{ "producer.override.*", DBZ_FN, NULL, NULL, NULL, NULL, fn_producer },
	{ "topic.creation.default.*", DBZ_FN, NULL, NULL, NULL, NULL, fn_same },
	NONE("topic.creation.groups", "the relay has the default group only "
	     "(topic.creation.default.*)"),
};

/* The Outbox Event Router's settings (after "transforms.<name>."). Where
 * Debezium's default differs from the relay's (aggregateid, type,
 * aggregatetype), def writes it. */
static const struct dbz_row router_rows[] = {
	FINE("type"),
	{ "table.field.event.id", DBZ_KEY, "table.field.event.id", NULL, NULL,
	  NULL, NULL },
	{ "table.field.event.key", DBZ_KEY, "table.field.event.key", NULL,
	  "aggregateid", NULL, NULL },
	{ "table.field.event.type", DBZ_KEY, "table.field.event.type", NULL,
	  "type", NULL, NULL },
	{ "table.field.event.payload", DBZ_KEY, "table.field.event.payload", NULL,
	  NULL, NULL, NULL },
	{ "table.field.event.timestamp", DBZ_KEY, "table.field.event.timestamp",
	  NULL, NULL, NULL, NULL },
	{ "table.fields.additional.placement", DBZ_KEY,
	  "table.fields.additional.placement", NULL, NULL, NULL, NULL },
	{ "route.by.field", DBZ_KEY, "route.by.field", NULL, "aggregatetype",
	  NULL, NULL },
	{ "route.topic.regex", DBZ_KEY, "route.topic.regex", NULL, NULL, NULL,
	  NULL },
	{ "route.topic.replacement", DBZ_KEY, "route.topic.replacement", NULL,
	  NULL, NULL, NULL },
	{ "route.tombstone.on.empty.payload", DBZ_KEY,
	  "route.tombstone.on.empty.payload", NULL, NULL, NULL, NULL },
	{ "table.op.invalid.behavior", DBZ_KEY, "table.op.invalid.behavior", NULL,
	  NULL, NULL, NULL },
	{ "table.json.payload.null.behavior", DBZ_KEY,
	  "table.json.payload.null.behavior", NULL, NULL, NULL, NULL },
	{ "table.expand.json.payload", DBZ_KEY, NULL, expand_values, NULL, NULL,
	  NULL },
	NONE("table.field.event.schema.version", "the relay's records carry no "
	     "Connect schema"),
	{ "tracing.span.context.field", DBZ_KEY, "tracing.span.context.field",
	  NULL, NULL, NULL, NULL },
	{ "tracing.operation.name", DBZ_KEY, "tracing.operation.name", NULL,
	  NULL, NULL, NULL },
	{ "tracing.with.context.field.only", DBZ_KEY,
	  "tracing.with.context.field.only", NULL, NULL, NULL, NULL },
};

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

/* One setting (from: its full name) through row r; value NULL: unset,
 * r->def (if any) stands for it. The converters' function is called
 * unset too: a converter left to the Connect worker is worth a note. */
static void apply(struct dbz *z, const struct dbz_row *r, const char *from,
                  const char *value)
{
	char remark[128];
	const char *why = r->why;

	if (value == NULL && r->def == NULL && r->how != DBZ_FN)
		return;
	if (value == NULL && r->how != DBZ_FN) {
		value = r->def;
		snprintf(remark, sizeof(remark), "Debezium's default (%s is not set)",
		         from);
		why = remark;
	}
	switch (r->how) {
	case DBZ_FINE:
		return;
	case DBZ_NONE:
		dbz_note(z, from, "%s", r->why);
		return;
	case DBZ_CONNINFO:
		conninfo_add(z, from, r->key, value);
		return;
	case DBZ_FN:
		if (value != NULL || r->fn == fn_converter)
			r->fn(z, r, from, value);
		return;
	case DBZ_KEY:
		break;
	}
	if (r->values != NULL) {
		const struct dbz_value *v = r->values;
		while (v->from != NULL && strcmp(v->from, value) != 0)
			v++;
		if (v->to == NULL) {
			/* The last row (from NULL) stands for every other value. */
			if (v->fine)
				return;
			if (v->why == NULL)
				dbz_note(z, from, "\"%s\" is not a value Debezium takes",
				         value);
			else if (v->from == NULL)
				dbz_note(z, from, "%s%s: %s", value, why == remark ?
				         " (Debezium's default)" : "", v->why);
			else
				dbz_note(z, from, "%s", v->why);
			return;
		}
		value = v->to;
	}
	emit(z, from, r->key, value, why);
}

/* Runs every row of table over the settings under prefix. */
static void run_rows(struct dbz *z, const struct dbz_row *rows, size_t n,
                     const char *prefix, bool conninfo)
{
	char full[320];
	size_t plen = strlen(prefix);

	for (size_t i = 0; i < n; i++) {
		const struct dbz_row *r = &rows[i];
		size_t len = strlen(r->name);

		if ((r->how == DBZ_CONNINFO) != conninfo)
			continue;
		if (r->name[len - 1] == '*') {
			snprintf(full, sizeof(full), "%s%.*s", prefix, (int)len - 1,
			         r->name);
			for (size_t j = 0; j < z->n; j++) {
				if (z->set[j].taken ||
				    strncmp(z->set[j].name, full, plen + len - 1) != 0)
					continue;
				z->set[j].taken = true;
				apply(z, r, z->set[j].name, z->set[j].value);
			}
			continue;
		}
		snprintf(full, sizeof(full), "%s%s", prefix, r->name);
		apply(z, r, full, take(z, full));
	}
}

/* ---- reading the connector's configuration ---- */

static void add(struct dbz *z, const char *name, size_t nlen,
                const char *value, size_t vlen)
{
	z->set = xrealloc(z->set, (z->n + 1) * sizeof(*z->set));
	z->set[z->n].name = xstrndup(name, nlen);
	z->set[z->n].value = xstrndup(value, vlen);
	z->set[z->n].taken = false;
	z->n++;
}

/* {"name": .., "config": {..}} or a flat object; values that are not
 * strings (Connect takes 5432 as well as "5432") as their JSON text. */
static int read_json(struct dbz *z, const char *text, size_t len,
                     const char *name, char *cname, size_t cnamelen,
                     char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr), *conf, *v;
	const char *k;

	if (root == NULL || !json_is_object(root)) {
		errbuf_set(err, errlen, "%s:%d: not a JSON object: %s", name,
		           root == NULL ? jerr.line : 1,
		           root == NULL ? jerr.text : "another JSON value");
		json_decref(root);
		return -1;
	}
	conf = json_object_get(root, "config");
	if (json_is_object(conf)) {
		if (json_is_string(json_object_get(root, "name")))
			snprintf(cname, cnamelen, "%s",
			         json_string_value(json_object_get(root, "name")));
	} else {
		conf = root;
	}
	json_object_foreach(conf, k, v) {
		if (json_is_string(v)) {
			add(z, k, strlen(k), json_string_value(v),
			    json_string_length(v));
		} else if (!json_is_object(v) && !json_is_array(v)) {
			char *s = json_dumps(v, JSON_ENCODE_ANY);
			add(z, k, strlen(k), s, strlen(s));
			free(s);
		}
	}
	json_decref(root);
	return 0;
}

/* Java's .properties, as far as connector files use it: '#' and '!'
 * comment lines, "key=value", "key: value" or "key value", a line ending
 * in an odd number of backslashes continued on the next, and the
 * escapes \t \n \r \uXXXX (ASCII only) and \<char> for the char. */
static int read_properties(struct dbz *z, const char *text, size_t len)
{
	char *buf = xmalloc(len + 1), *p, *end;
	size_t n = 0;

	/* Joins the continued lines first. */
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\\' && i + 1 < len &&
		    (text[i + 1] == '\n' || text[i + 1] == '\r')) {
			size_t bs = 0;
			while (bs < n && buf[n - 1 - bs] == '\\')
				bs++;
			if (bs % 2 == 0) {
				i++;
				if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
					i++;
				while (i + 1 < len && (text[i + 1] == ' ' ||
				                       text[i + 1] == '\t'))
					i++;
				continue;
			}
		}
		buf[n++] = text[i];
	}
	buf[n] = '\0';
	for (p = buf; p < buf + n; p = end + 1) {
		char key[256], val[4096];
		size_t kn = 0, vn = 0;
		const char *q;
		bool in_key = true;

		end = p + strcspn(p, "\r\n");
		*end = '\0';
		while (*p == ' ' || *p == '\t' || *p == '\f')
			p++;
		if (*p == '\0' || *p == '#' || *p == '!')
			continue;
		for (q = p; *q != '\0'; q++) {
			char c = *q;
			if (in_key && (c == '=' || c == ':' || c == ' ' || c == '\t')) {
				in_key = false;
				while (q[1] == ' ' || q[1] == '\t')
					q++;
				if ((c == ' ' || c == '\t') && (q[1] == '=' || q[1] == ':')) {
					q++;
					while (q[1] == ' ' || q[1] == '\t')
						q++;
				}
				continue;
			}
			if (c == '\\' && q[1] != '\0') {
				q++;
				c = *q == 't' ? '\t' : *q == 'n' ? '\n' : *q == 'r' ? '\r'
				                                                  : *q;
				if (*q == 'u' && isxdigit((unsigned char)q[1]) &&
				    isxdigit((unsigned char)q[2]) &&
				    isxdigit((unsigned char)q[3]) &&
				    isxdigit((unsigned char)q[4])) {
					char hex[5] = { q[1], q[2], q[3], q[4], '\0' };
					long cp = strtol(hex, NULL, 16);
					c = cp < 0x80 ? (char)cp : '?';
					q += 4;
				}
			}
			if (in_key && kn + 1 < sizeof(key))
				key[kn++] = c;
			else if (!in_key && vn + 1 < sizeof(val))
				val[vn++] = c;
		}
		add(z, key, kn, val, vn);
	}
	free(buf);
	return 0;
}

/* ---- the conversion ---- */

/* The outbox router among transforms: its "transforms.<name>." in
 * z->router; every other transform listed as not carried over. */
static int find_router(struct dbz *z, const char *name, char *err,
                       size_t errlen)
{
	const char *list = take(z, "transforms");
	char one[128], tkey[200];

	z->router[0] = '\0';
	for (const char *p = list; p != NULL && *p != '\0';) {
		size_t n = strcspn(p, ",");
		const char *type;
		while (n > 0 && isspace((unsigned char)*p))
			p++, n--;
		snprintf(one, sizeof(one), "%.*s", (int)n, p);
		for (size_t e = strlen(one); e > 0 && isspace((unsigned char)
		                                              one[e - 1]);)
			one[--e] = '\0';
		p += n + (p[n] == ',');
		if (one[0] == '\0')
			continue;
		snprintf(tkey, sizeof(tkey), "transforms.%s.type", one);
		type = take(z, tkey);
		if (type != NULL && strcmp(type, ROUTER) == 0 && z->router[0] == '\0') {
			snprintf(z->router, sizeof(z->router), "transforms.%s.", one);
			continue;
		}
		snprintf(tkey, sizeof(tkey), "transforms.%s.", one);
		for (size_t i = 0; i < z->n; i++)
			if (strncmp(z->set[i].name, tkey, strlen(tkey)) == 0)
				z->set[i].taken = true;
		snprintf(tkey, sizeof(tkey), "transforms.%s", one);
		dbz_note(z, tkey, "%s has no equivalent: the relay applies the "
		         "outbox router only", type != NULL ? type : "a transform");
	}
	if (z->router[0] == '\0') {
		errbuf_set(err, errlen, "%s: not an outbox connector: no transform "
		           "of type " ROUTER " in \"transforms\"", name);
		return -1;
	}
	return 0;
}

int dbz_convert(const char *text, size_t len, const char *name, FILE *out,
                FILE *notes, char *err, size_t errlen)
{
	struct dbz z;
	char cname[256] = "", *body = NULL, *note_buf = NULL;
	size_t body_len = 0, note_len = 0, i = 0;
	const char *cls;
	int rc = RELAY_EXIT_CONFIG;

	memset(&z, 0, sizeof(z));
	cfg_init(&z.scratch);
	z.notes = open_memstream(&note_buf, &note_len);
	z.tailf = open_memstream(&z.tail, &z.tail_len);
	z.out = open_memstream(&body, &body_len);
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] == '{') {
		if (read_json(&z, text, len, name, cname, sizeof(cname), err,
		              errlen) < 0)
			goto out;
	} else if (read_properties(&z, text, len) < 0) {
		goto out;
	}
	if (cname[0] == '\0' && find(&z, "name") != NULL)
		snprintf(cname, sizeof(cname), "%s", find(&z, "name")->value);
	cls = take(&z, "connector.class");
	if (cls != NULL && strcmp(cls, PG_CONNECTOR) != 0) {
		errbuf_set(err, errlen, "%s: connector.class is %s: the relay reads "
		           "PostgreSQL only (" PG_CONNECTOR ")", name, cls);
		goto out;
	}
	if (find_router(&z, name, err, errlen) < 0)
		goto out;
	if (cls == NULL)
		dbz_note(&z, "connector.class", "not set: read as Debezium's "
		         "PostgreSQL connector");

	run_rows(&z, connector_rows, NROWS(connector_rows), "", true);
	if (z.conninfo[0] != '\0')
		emit(&z, z.conninfo_from, "pg.conninfo", z.conninfo,
		     "without the password");
	run_rows(&z, connector_rows, NROWS(connector_rows), "", false);
	run_rows(&z, router_rows, NROWS(router_rows), z.router, false);
	if (cfg_kafka_get(&z.scratch, "bootstrap.servers") == NULL) {
		fprintf(z.out, "# the Connect worker's bootstrap.servers (not part "
		        "of a connector's configuration)\n"
		        "# kafka.bootstrap.servers = HOST:9092\n");
		dbz_note(&z, "bootstrap.servers", "the Connect worker's, not in the "
		         "connector: set kafka.bootstrap.servers (and the worker's "
		         "security settings as kafka.*)");
	}
	for (size_t j = 0; j < z.n; j++) {
		if (z.set[j].taken)
			continue;
		if (strncmp(z.set[j].name, z.router, strlen(z.router)) == 0)
			dbz_note(&z, z.set[j].name, "an Outbox Event Router setting "
			         "the relay does not have");
		else
			dbz_note(&z, z.set[j].name, "no equivalent in the relay");
	}
	fclose(z.out);
	z.out = NULL;
	fclose(z.tailf);
	z.tailf = NULL;
	fprintf(out, "# outbox-relay configuration from the Debezium connector "
	        "%s%s%s(%s),\n# written by outbox-relay --from-debezium. Each "
	        "line names the setting it\n# comes from; check them, and set "
	        "what is listed at the end by hand.\n\n", cname[0] ? "\"" : "",
	        cname, cname[0] ? "\" " : "", name);
	fwrite(body, 1, body_len, out);
	if (z.tail_len > 0)
		fprintf(out, "\n# Not carried over (also on stderr):\n%s", z.tail);
	fclose(z.notes);
	z.notes = NULL;
	fwrite(note_buf, 1, note_len, notes);
	rc = 0;
out:
	if (z.out != NULL)
		fclose(z.out);
	if (z.tailf != NULL)
		fclose(z.tailf);
	if (z.notes != NULL)
		fclose(z.notes);
	free(note_buf);
	free(body);
	free(z.tail);
	for (size_t j = 0; j < z.n; j++) {
		free(z.set[j].name);
		free(z.set[j].value);
	}
	free(z.set);
	cfg_free(&z.scratch);
	return rc;
}

/* ---- the action ---- */

int act_from_debezium(const struct relay_config *cfg,
                      const struct cli_args *a)
{
	FILE *f = fopen(a->arg, "r");
	char *text, err[768];
	size_t len;
	int rc;

	(void)cfg;
	if (f == NULL) {
		cli_err("--from-debezium: cannot open %s: %s", a->arg,
		        strerror(errno));
		return RELAY_EXIT_CONFIG;
	}
	text = xread_stream(f, &len);
	fclose(f);
	if (text == NULL) {
		cli_err("--from-debezium: cannot read %s: %s", a->arg,
		        strerror(errno));
		return RELAY_EXIT_CONFIG;
	}
	rc = dbz_convert(text, len, a->arg, stdout, stderr, err, sizeof(err));
	if (rc != 0)
		cli_err("--from-debezium: %s", err);
	free(text);
	return rc;
}
