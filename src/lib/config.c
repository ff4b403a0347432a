/* SPDX-License-Identifier: Apache-2.0 */
/* config.c -- the key table and the four configuration sources.
 *
 * Every relay key is one row of cfg_keys: parsing, defaults, validation,
 * environment names and --print-config all read that table. Keys under
 * "kafka." are handed to librdkafka, which validates them itself. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include "lib/config.h"
#include "lib/cfg_text.h"

enum cfg_type { CFG_STR, CFG_INT, CFG_BOOL };

#define CFG_F_SECRET 0x1    /* never printed or logged */
#define CFG_F_REQUIRED 0x2  /* must be non-empty after all sources */

struct cfg_key {
	const char *name;
	enum cfg_type type;
	size_t offset;
	const char *def;
	int64_t min, max;       /* CFG_INT only */
	unsigned flags;
	const char *help;
};

#define OFF(f) offsetof(struct relay_config, f)
#define TOPIC_CFG_PREFIX "topic.creation.default."
#define RECONCILE_PREFIX "reconcile."

/* Keep in the order the documentation lists them. */
static const struct cfg_key cfg_keys[] = {
	{ "pg.conninfo", CFG_STR, OFF(pg_conninfo), "", 0, 0,
	  CFG_F_SECRET | CFG_F_REQUIRED,
	  "libpq connection string or URI (replication=database is added)" },
	{ "pg.password.file", CFG_STR, OFF(pg_password_file), "", 0, 0, 0,
	  "file whose first line is the PostgreSQL password, read at start; "
	  "any mode (a Kubernetes Secret volume); empty: off" },
	{ "slot.name", CFG_STR, OFF(slot_name), "outbox_relay", 0, 0,
	  CFG_F_REQUIRED, "logical replication slot, never created implicitly" },
	{ "slot.plugin", CFG_STR, OFF(slot_plugin), "wal2json", 0, 0,
	  CFG_F_REQUIRED, "output plugin of the slot: wal2json or pgoutput (built "
	  "into PostgreSQL, reads slot.publication)" },
	{ "slot.publication", CFG_STR, OFF(slot_publication), "outbox_pub", 0, 0,
	  CFG_F_REQUIRED, "publication on the outbox table (slot.plugin = "
	  "pgoutput only; --create-slot creates it)" },
	{ "slot.failover", CFG_STR, OFF(slot_failover), "auto", 0, 0,
	  CFG_F_REQUIRED, "failover slot (PostgreSQL 17+, synchronized to "
	  "standbys): auto (on where the server supports it), on (an error "
	  "before 17) or off; --create-slot creates it so, --check verifies it" },
	{ "slot.standby.conninfo", CFG_STR, OFF(slot_standby_conninfo), "", 0,
	  0, CFG_F_SECRET, "libpq connection string of a physical standby that "
	  "may be promoted: the watchdog reads the slot's copy there (synced, "
	  "how far behind) for /slot and /metrics; empty: off" },
	{ "outbox.table", CFG_STR, OFF(outbox_table), "public.outbox", 0, 0,
	  CFG_F_REQUIRED, "schema.table of the outbox, exact case, no quotes" },
	{ "table.field.event.id", CFG_STR, OFF(field_id), "id", 0, 0,
	  CFG_F_REQUIRED, "column with the event id (header \"id\")" },
	{ "table.field.event.key", CFG_STR, OFF(field_key), "aggregate_id", 0, 0,
	  CFG_F_REQUIRED, "column with the aggregate id (record key)" },
	{ "table.field.event.type", CFG_STR, OFF(field_type), "event_type", 0, 0,
	  CFG_F_REQUIRED, "column with the event type (header \"event_type\")" },
	{ "table.field.event.payload", CFG_STR, OFF(field_payload), "payload", 0, 0,
	  CFG_F_REQUIRED, "column with the JSON payload (record value)" },
	{ "route.by.field", CFG_STR, OFF(route_by_field), "aggregate_type", 0, 0,
	  CFG_F_REQUIRED, "column whose value picks the topic" },
	{ "route.topic.replacement", CFG_STR, OFF(route_topic_replacement),
	  "outbox.event.${routedByValue}", 0, 0, CFG_F_REQUIRED,
	  "topic template; ${routedByValue} is the route.by.field value" },
	{ "route.topic.regex", CFG_STR, OFF(route_topic_regex),
	  "(?<routedByValue>.*)", 0, 0, CFG_F_REQUIRED, "regular expression "
	  "(POSIX extended; Java's (?<routedByValue>...) accepted) matched "
	  "against the whole route.by.field value; its routedByValue group fills "
	  "${routedByValue}; no match: the value itself is the topic (Debezium)" },
	{ "table.field.event.timestamp", CFG_STR, OFF(field_timestamp), "", 0, 0,
	  0, "column with the record timestamp (timestamp, timestamptz or bigint "
	  "epoch ms); empty: the produce time" },
	{ "table.fields.additional.placement", CFG_STR,
	  OFF(fields_additional_placement), "", 0, 0, 0, "more columns, "
	  "col:header|envelope|partition[:alias],...: a header, a member of the "
	  "value (value.format = json), or the partition (integer column)" },
	{ "route.tombstone.on.empty.payload", CFG_BOOL,
	  OFF(route_tombstone_on_empty_payload), "false", 0, 0, 0, "a NULL or "
	  "empty payload is a tombstone (NULL value) instead of a poison event" },
	{ "table.op.invalid.behavior", CFG_STR, OFF(op_invalid_behavior), "warn",
	  0, 0, CFG_F_REQUIRED, "an UPDATE of an outbox row: warn or error (log, "
	  "count, go on) or fatal (poison event)" },
	{ "table.json.payload.null.behavior", CFG_STR,
	  OFF(json_payload_null_behavior), "ignore", 0, 0, CFG_F_REQUIRED,
	  "Debezium's, for table.expand.json.payload, which the relay does not "
	  "do: only ignore" },
	{ "tracing.span.context.field", CFG_STR, OFF(tracing_span_context_field),
	  "tracingspancontext", 0, 0, 0, "column with a java.util.Properties "
	  "text (traceparent=...): its traceparent and tracestate become "
	  "headers; empty: off" },
	{ "tracing.with.context.field.only", CFG_BOOL,
	  OFF(tracing_with_context_field_only), "false", 0, 0, 0, "accepted for "
	  "Debezium; the relay adds trace headers only from the column either "
	  "way" },
	{ "tracing.operation.name", CFG_STR, OFF(tracing_operation_name),
	  "debezium-read", 0, 0, 0, "accepted for Debezium; the relay creates no "
	  "spans" },
	{ "key.format", CFG_STR, OFF(key_format), "string", 0, 0, CFG_F_REQUIRED,
	  "record key bytes: string (StringConverter), json (JsonConverter, "
	  "schemas off) or json-schema (schemas on)" },
	{ "value.format", CFG_STR, OFF(value_format), "string", 0, 0,
	  CFG_F_REQUIRED, "record value bytes: string, json or json-schema" },
	{ "cloudevents.enabled", CFG_BOOL, OFF(cloudevents_enabled), "false", 0,
	  0, 0, "CloudEvents binary mode headers ce_id, ce_source, ce_type, "
	  "ce_specversion, ce_time" },
	{ "cloudevents.source", CFG_STR, OFF(cloudevents_source), "", 0, 0, 0,
	  "the ce_source header; empty: /outbox-relay/<slot.name>" },
	{ "slot.ledger.topic", CFG_STR, OFF(slot_ledger_topic), "outbox-relay.slots",
	  0, 0, 0, "compacted Kafka topic recording every position the slot is "
	  "moved to (by the relay and the runbook CLI), so that a slot dropped "
	  "and created again is refused; empty: off" },
	{ "topic.creation.default.partitions", CFG_INT,
	  OFF(topic_creation_partitions), "0", -1, 1000000, 0, "partitions of a "
	  "topic the relay creates before its first record (admin API); -1: "
	  "the broker's num.partitions; 0: off, topics are not created" },
	{ "topic.creation.default.replication.factor", CFG_INT,
	  OFF(topic_creation_replication_factor), "-1", -1, 32767, 0,
	  "replication factor of a topic the relay creates; -1: the broker's "
	  "default" },
	{ "outbox.emit.prefix", CFG_STR, OFF(outbox_emit_prefix), "", 0, 0,
	  0, "logical message prefix of outbox_emit() events (sql/emit.sql), e.g. "
	  "outbox; empty (default) off: any role that can connect can emit messages" },
	{ "status.interval.ms", CFG_INT, OFF(status_interval_ms), "10000", 100,
	  10000, 0, "standby status update period (keeps wal_sender_timeout away)" },
	{ "status.min.interval.ms", CFG_INT, OFF(status_min_interval_ms), "100",
	  0, 10000, 0, "a status update goes out as soon as the confirmed LSN "
	  "moves, at most one per this many ms" },
	{ "inflight.max.events", CFG_INT, OFF(inflight_max_events), "5000", 1,
	  10000000, 0, "events produced and not yet acked before reading pauses" },
	{ "inflight.max.bytes", CFG_INT, OFF(inflight_max_bytes), "8388608",
	  65536, INT64_C(1) << 40, 0, "bytes produced and not yet acked before reading pauses" },
	{ "pg.permanent.error.retries", CFG_INT, OFF(pg_permanent_error_retries),
	  "3", 1, 1000, 0, "a wrong password, pg_hba refusal, unknown database "
	  "or bad option at connect stops the relay at once before it first "
	  "streamed, after this many attempts in a row once it has" },
	{ "pg.read.coalesce.us", CFG_INT, OFF(pg_read_coalesce_us), "500", 0,
	  10000, 0, "after a read that emptied the stream between transactions, "
	  "the next read waits until this many microseconds have passed "
	  "(fewer wake-ups under load); 0: read at once" },
	{ "pg.receive.timeout.ms", CFG_INT, OFF(pg_receive_timeout_ms), "20000",
	  2000, 3600000, 0, "no message from the server while reading: a status "
	  "update asks for one at a quarter of this, /readyz fails at half, the "
	  "relay reconnects at the whole" },
	{ "reconnect.backoff.ms", CFG_INT, OFF(reconnect_backoff_ms), "500", 10,
	  600000, 0, "first reconnect delay; doubles up to the max, with jitter" },
	{ "reconnect.backoff.max.ms", CFG_INT, OFF(reconnect_backoff_max_ms),
	  "30000", 10, 3600000, 0, "reconnect delay cap" },
	{ "standby.retry.ms", CFG_INT, OFF(standby_retry_ms), "5000", 100,
	  600000, 0, "retry period while another process holds the slot" },
	{ "shutdown.timeout.ms", CFG_INT, OFF(shutdown_timeout_ms), "30000", 0,
	  3600000, 0, "how long SIGTERM waits for Kafka acks" },
	{ "stats.interval.ms", CFG_INT, OFF(stats_interval_ms), "60000", 0,
	  86400000, 0, "period of the \"stats:\" log line; 0 turns it off" },
	/* A relay key despite its prefix (librdkafka has no such property):
	 * it is about Kafka failures, next to the kafka.* settings. */
	{ "kafka.failure.max.replays", CFG_INT, OFF(kafka_failure_max_replays),
	  "5", 1, 1000, 0, "the same transaction failing in Kafka this many "
	  "times in a row is a poison event (exit 65)" },
	/* The dead-letter policy (docs/configuration.md, "Poison events"). */
	/* Exactly-once (relay/txn.c, docs/design.md "Delivery guarantees"). */
	{ "delivery.guarantee", CFG_STR, OFF(delivery_guarantee),
	  "at-least-once", 0, 0, CFG_F_REQUIRED, "at-least-once (a crash or a "
	  "Kafka error may publish an event again) or exactly-once (Kafka "
	  "transactions: a read_committed consumer sees each event once)" },
	{ "delivery.transaction.max.events", CFG_INT,
	  OFF(delivery_txn_max_events), "5000", 1, 10000000, 0, "exactly-once: "
	  "a Kafka transaction is committed at the first PostgreSQL commit "
	  "after it holds this many events" },
	{ "delivery.transaction.interval.ms", CFG_INT,
	  OFF(delivery_txn_interval_ms), "100", 0, 60000, 0, "exactly-once: "
	  "... or after it has been open this long (what a read_committed "
	  "consumer waits at most, beyond the commit itself); 0: at every "
	  "PostgreSQL commit" },
	{ "poison.policy", CFG_STR, OFF(poison_policy), "fail", 0, 0,
	  CFG_F_REQUIRED, "a poison event: fail (stop, exit 65), dlq (write it "
	  "to poison.dlq.topic and go on) or skip (log, count, go on)" },
	{ "poison.dlq.topic", CFG_STR, OFF(poison_dlq_topic), "", 0, 0, 0,
	  "dead-letter topic of poison.policy = dlq" },
	{ "poison.retries", CFG_INT, OFF(poison_retries), "3", 0, 100, 0,
	  "a record Kafka refuses on its own is tried again this many times "
	  "before it is parked (dlq) or skipped" },
	{ "poison.retry.backoff.ms", CFG_INT, OFF(poison_retry_backoff_ms),
	  "500", 0, 600000, 0, "delay before the first retry; doubles up to "
	  "the max, with jitter" },
	{ "poison.retry.backoff.max.ms", CFG_INT,
	  OFF(poison_retry_backoff_max_ms), "30000", 0, 3600000, 0,
	  "retry delay cap" },
	{ "kafka.contact.timeout.ms", CFG_INT, OFF(kafka_contact_timeout_ms),
	  "15000", 1000, 3600000, 0, "no answer from a broker (ack or metadata "
	  "probe) for this long: /readyz fails (relay key, not librdkafka's)" },
	{ "producer.allow.unsafe", CFG_BOOL, OFF(producer_allow_unsafe), "false",
	  0, 0, 0, "allow producer settings that can reorder or lose events" },
	{ "log.level", CFG_STR, OFF(log_level), "info", 0, 0, CFG_F_REQUIRED,
	  "error, warn, info or debug" },
	{ "log.format", CFG_STR, OFF(log_format), "text", 0, 0, CFG_F_REQUIRED,
	  "text or json (one JSON object a line)" },
	{ "http.listen", CFG_STR, OFF(http_listen), "127.0.0.1:8080", 0, 0, 0,
	  "health endpoint address host:port or [v6]:port; empty turns it off" },
	{ "http.livez.timeout.ms", CFG_INT, OFF(http_livez_timeout_ms), "10000",
	  1000, 600000, 0, "/livez fails when the loop has not turned for this long" },
	{ "watchdog.interval.ms", CFG_INT, OFF(watchdog_interval_ms), "10000",
	  500, 3600000, 0, "slot sampling period" },
	{ "watchdog.window.ms", CFG_INT, OFF(watchdog_window_ms), "300000",
	  10000, 86400000, 0, "window of the retained-WAL growth rate" },
	{ "watchdog.wal.budget.bytes", CFG_INT, OFF(watchdog_wal_budget_bytes),
	  "0", 0, INT64_MAX, 0,
	  "retained WAL allowed when max_slot_wal_keep_size is unlimited (ETA); 0 off" },
	{ "watchdog.retained.warn.bytes", CFG_INT,
	  OFF(watchdog_retained_warn_bytes), "1073741824", 0, INT64_MAX, 0,
	  "retained WAL (current - restart_lsn) for warn; 0 off" },
	{ "watchdog.retained.critical.bytes", CFG_INT,
	  OFF(watchdog_retained_critical_bytes), "4294967296", 0, INT64_MAX, 0,
	  "retained WAL for critical; 0 off" },
	{ "watchdog.lag.warn.bytes", CFG_INT, OFF(watchdog_lag_warn_bytes),
	  "268435456", 0, INT64_MAX, 0,
	  "confirmed lag (current - confirmed_flush_lsn) for warn; 0 off" },
	{ "watchdog.lag.critical.bytes", CFG_INT, OFF(watchdog_lag_critical_bytes),
	  "1073741824", 0, INT64_MAX, 0, "confirmed lag for critical; 0 off" },
	{ "watchdog.outbox.lag.warn.ms", CFG_INT, OFF(watchdog_outbox_lag_warn_ms),
	  "60000", 0, INT64_MAX, 0, "age of the oldest unacked event for warn; 0 off" },
	{ "watchdog.outbox.lag.critical.ms", CFG_INT,
	  OFF(watchdog_outbox_lag_critical_ms), "300000", 0, INT64_MAX, 0,
	  "age of the oldest unacked event for critical; 0 off" },
	{ "watchdog.eta.warn.ms", CFG_INT, OFF(watchdog_eta_warn_ms), "21600000",
	  0, INT64_MAX, 0, "estimated time to slot loss (or budget) for warn; 0 off" },
	{ "watchdog.eta.critical.ms", CFG_INT, OFF(watchdog_eta_critical_ms),
	  "3600000", 0, INT64_MAX, 0, "estimated time to slot loss for critical; 0 off" },
	{ "heartbeat.interval.ms", CFG_INT, OFF(heartbeat_interval_ms), "0", 0,
	  86400000, 0, "pg_logical_emit_message heartbeat period; 0 off (10000 suggested)" },
	{ "heartbeat.prefix", CFG_STR, OFF(heartbeat_prefix),
	  "outbox-relay-heartbeat", 0, 0, CFG_F_REQUIRED,
	  "logical message prefix of the heartbeats" },
	{ "heartbeat.action.query", CFG_STR, OFF(heartbeat_action_query), "", 0,
	  0, 0, "extra SQL run with each heartbeat" },
	{ "alert.webhook.url", CFG_STR, OFF(alert_webhook_url), "", 0, 0,
	  CFG_F_SECRET, "JSON POST on every health state change; empty off" },
	{ "reconcile.grace.ms", CFG_INT, OFF(reconcile_grace_ms), "60000", 0,
	  86400000, 0, "--reconcile: Kafka records count up to this long past "
	  "--until (a record is produced after its commit)" },
};

#define CFG_NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

/* ---- aliases: other projects' names for our keys ---- */

/* One value of an alias and ours for it; to NULL: refused, with why. */
struct cfg_alias_value {
	const char *from;
	const char *to;
	const char *why;
};

/* Turns an alias's value into the key's, or refuses it: 0, or -1 with
 * why (for "ORIGIN: ALIAS: why"). */
typedef int (*cfg_alias_fn)(const char *in, char *out, size_t outlen,
                            char *why, size_t whylen);

/* Another project's name for one of our keys, with the same meaning:
 * Debezium's PostgreSQL connector and Kafka Connect, so that their
 * settings can be carried over as they are. The file, the environment
 * (OUTBOX_RELAY_ + the alias) and --set all take them; the value lands in
 * key, through values or convert when the spellings differ. */
struct cfg_alias {
	const char *name;
	const char *key;
	const struct cfg_alias_value *values;   /* NULL: the value as given */
	cfg_alias_fn convert;                   /* NULL: none */
};

static const struct cfg_alias_value tolerance_values[] = {
	{ "none", "fail", NULL },
	/* Connect's "all" logs and goes on, to its dead-letter topic if it
	 * has one: cfg_validate() makes it dlq when poison.dlq.topic is set
	 * (by either name, from any source). */
	{ "all", "skip", NULL },
	{ NULL, NULL, NULL },
};

static const struct cfg_alias_value plugin_values[] = {
	{ "pgoutput", "pgoutput", NULL },
	{ "decoderbufs", NULL, "decoderbufs is not supported (a plugin built "
	  "and installed in the server for Debezium): use pgoutput, built into "
	  "PostgreSQL, with a slot of its own (--create-slot)" },
	{ NULL, NULL, NULL },
};

/* table.include.list: a comma-separated list of regular expressions on
 * "schema.table". One table, written plainly ("public.outbox", or
 * "public\.outbox" with the dot escaped), is outbox.table; a list or a
 * pattern is refused: the relay reads one outbox. */
static int include_list_table(const char *in, char *out, size_t outlen,
                              char *why, size_t whylen)
{
	size_t n = 0;

	for (const char *p = in; *p != '\0'; p++) {
		if (p[0] == '\\' && p[1] == '.')
			p++;
		else if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' &&
		         *p != '$') {
			errbuf_set(why, whylen, "only one table, written as "
			        "schema.table, maps to outbox.table (the relay reads "
			        "one outbox table; a list or a pattern does not map)");
			return -1;
		}
		if (n + 1 >= outlen) {
			errbuf_set(why, whylen, "too long");
			return -1;
		}
		out[n++] = *p;
	}
	out[n] = '\0';
	return 0;
}

static const struct cfg_alias cfg_aliases[] = {
	/* Kafka Connect's error handling (helper keys of poison.policy). */
	{ "errors.tolerance", "poison.policy", tolerance_values, NULL },
	{ "errors.deadletterqueue.topic.name", "poison.dlq.topic", NULL, NULL },
	/* Debezium's PostgreSQL connector. */
	{ "publication.name", "slot.publication", NULL, NULL },
	{ "plugin.name", "slot.plugin", plugin_values, NULL },
	{ "status.update.interval.ms", "status.interval.ms", NULL, NULL },
	{ "table.include.list", "outbox.table", NULL, include_list_table },
};

#define CFG_NALIASES (sizeof(cfg_aliases) / sizeof(cfg_aliases[0]))

static const struct cfg_alias *find_alias(const char *name)
{
	for (size_t i = 0; i < CFG_NALIASES; i++)
		if (strcmp(cfg_aliases[i].name, name) == 0)
			return &cfg_aliases[i];
	return NULL;
}

/* The key's value for an alias's value: a copy (caller frees), or NULL
 * with "ORIGIN: ALIAS: why" in err. */
static char *alias_value(const struct cfg_alias *a, const char *value,
                         const char *origin, char *err, size_t errlen)
{
	char why[256], list[256] = "";
	size_t n = 0;

	if (a->convert != NULL) {
		char *out = xmalloc(strlen(value) + 1);
		if (a->convert(value, out, strlen(value) + 1, why, sizeof(why)) < 0) {
			errbuf_set(err, errlen, "%s: %s: %s", origin, a->name, why);
			free(out);
			return NULL;
		}
		return out;
	}
	if (a->values == NULL)
		return xstrdup(value);
	for (const struct cfg_alias_value *v = a->values; v->from != NULL; v++) {
		if (strcmp(v->from, value) == 0) {
			if (v->to != NULL)
				return xstrdup(v->to);
			errbuf_set(err, errlen, "%s: %s: %s", origin, a->name, v->why);
			return NULL;
		}
		if (v->to != NULL && n < sizeof(list))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
			                      n > 0 ? ", " : "", v->from);
	}
	errbuf_set(err, errlen, "%s: %s: \"%s\" is not one of %s", origin,
	           a->name, value, list);
	return NULL;
}

static const char *const source_names[] = { "default", "file", "env", "flag" };

static char **str_field(struct relay_config *cfg, const struct cfg_key *k)
{
	return (char **)((char *)cfg + k->offset);
}

/* ---- near misses ---- */

/* The known name closest to an unknown one, for "did you mean": NULL
 * when none is within one edit (short names), two or three (long
 * ones): a wild guess is worse than none. */
static const char *closest_key(const char *name)
{
	size_t len = strlen(name), best = SIZE_MAX;
	size_t limit = len < 6 ? 1 : len < 12 ? 2 : 3;
	const char *hit = NULL;

	for (size_t i = 0; i < CFG_NKEYS + CFG_NALIASES; i++) {
		const char *cand = i < CFG_NKEYS ? cfg_keys[i].name
		                                 : cfg_aliases[i - CFG_NKEYS].name;
		size_t dist = cfg_text_distance(name, cand);
		if (dist < best) {
			best = dist;
			hit = cand;
		}
	}
	return best <= limit ? hit : NULL;
}

static const struct cfg_key *find_key(const char *name)
{
	for (size_t i = 0; i < CFG_NKEYS; i++)
		if (strcmp(cfg_keys[i].name, name) == 0)
			return &cfg_keys[i];
	return NULL;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") ||
	    !strcmp(v, "on")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") ||
	    !strcmp(v, "off")) {
		*out = false;
		return 0;
	}
	return -1;
}

/* Splits "schema.table" (quotes around either part are dropped). */
static int split_table(const char *v, char **schema, char **table)
{
	const char *dot = NULL;
	bool inq = false;

	for (const char *p = v; *p; p++) {
		if (*p == '"')
			inq = !inq;
		else if (*p == '.' && !inq && dot == NULL)
			dot = p;
	}
	const char *s = v, *t = v;
	size_t slen = 0, tlen = strlen(v);
	if (dot != NULL) {
		slen = (size_t)(dot - v);
		t = dot + 1;
		tlen = strlen(t);
	} else {
		s = "public";
		slen = 6;
	}
	if (slen >= 2 && s[0] == '"' && s[slen - 1] == '"') {
		s++;
		slen -= 2;
	}
	if (tlen >= 2 && t[0] == '"' && t[tlen - 1] == '"') {
		t++;
		tlen -= 2;
	}
	if (slen == 0 || tlen == 0 || memchr(t, '"', tlen) || memchr(s, '"', slen))
		return -1;
	*schema = xstrndup(s, slen);
	*table = xstrndup(t, tlen);
	return 0;
}

/* Keys whose value is one word of a list, and the list. */
static const struct {
	const char *key;
	const char *words[4];
} cfg_enums[] = {
	{ "key.format", { "string", "json", "json-schema" } },
	{ "value.format", { "string", "json", "json-schema" } },
	{ "table.op.invalid.behavior", { "warn", "error", "fatal" } },
	{ "table.json.payload.null.behavior", { "ignore", "optional_bytes" } },
	{ "poison.policy", { "fail", "dlq", "skip" } },
	{ "delivery.guarantee", { "at-least-once", "exactly-once" } },
};

/* True (err filled) when key takes one word of a list and value is none
 * of them, or is one the relay cannot honour. */
static bool cfg_enum_refused(const char *key, const char *value,
                             const char *origin, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(cfg_enums) / sizeof(cfg_enums[0]); i++) {
		char list[128] = "";
		size_t n = 0;
		if (strcmp(cfg_enums[i].key, key) != 0)
			continue;
		for (size_t w = 0; w < 4 && cfg_enums[i].words[w] != NULL; w++) {
			if (strcmp(value, cfg_enums[i].words[w]) == 0)
				goto known;
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
			                      w ? ", " : "", cfg_enums[i].words[w]);
		}
		errbuf_set(err, errlen, "%s: %s: \"%s\" is not one of %s", origin,
		           key, value, list);
		return true;
known:
		/* Debezium reads it only with table.expand.json.payload (the
		 * payload parsed into a Connect struct), which the relay does
		 * not do: it sends the payload's text as PostgreSQL printed it. */
		if (strcmp(key, "table.json.payload.null.behavior") == 0 &&
		    strcmp(value, "ignore") != 0) {
			errbuf_set(err, errlen, "%s: %s: \"%s\" applies only to "
			           "Debezium's table.expand.json.payload, which the relay "
			           "does not support (the payload is sent as PostgreSQL "
			           "printed it); use ignore", origin, key, value);
			return true;
		}
		return false;
	}
	return false;
}

void cfg_init(struct relay_config *cfg)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	cfg->sources = xcalloc(CFG_NKEYS, sizeof(*cfg->sources));
	cfg->via = xcalloc(CFG_NKEYS, sizeof(*cfg->via));
	for (size_t i = 0; i < CFG_NKEYS; i++) {
		int rc = cfg_set(cfg, cfg_keys[i].name, cfg_keys[i].def,
		                 CFG_SRC_DEFAULT, "default", err, sizeof(err));
		(void)rc; /* defaults are valid by construction */
	}
}

/* Sets name in a list of name = value pairs (kafka.*, the topic
 * configs), keeping the order of first setting. */
static void kv_set(struct cfg_kv **kv, size_t *len, const char *name,
                   const char *value, enum cfg_source src)
{
	for (size_t i = 0; i < *len; i++) {
		if (strcmp((*kv)[i].name, name) == 0) {
			free((*kv)[i].value);
			(*kv)[i].value = xstrdup(value);
			(*kv)[i].source = src;
			return;
		}
	}
	*kv = xrealloc(*kv, (*len + 1) * sizeof(**kv));
	(*kv)[*len].name = xstrdup(name);
	(*kv)[*len].value = xstrdup(value);
	(*kv)[*len].source = src;
	(*len)++;
}

static void kafka_set(struct relay_config *cfg, const char *name,
                      const char *value, enum cfg_source src)
{
	kv_set(&cfg->kafka, &cfg->kafka_len, name, value, src);
}

static int set_value(struct relay_config *cfg, const struct cfg_key *k,
                     const char *key, const char *value, enum cfg_source src,
                     const char *origin, char *err, size_t errlen);

int cfg_set(struct relay_config *cfg, const char *key, const char *value,
            enum cfg_source src, const char *origin, char *err, size_t errlen)
{
	const struct cfg_key *k = find_key(key);
	const struct cfg_alias *a = NULL;
	const char *near;
	char *mapped = NULL;
	int rc;

	if (k == NULL && cfg_text_check_key(key, origin, err, errlen) < 0)
		return -1;
	if (cfg_text_check_value(key, value, origin, err, errlen) < 0)
		return -1;
	if (k == NULL && (a = find_alias(key)) != NULL) {
		mapped = alias_value(a, value, origin, err, errlen);
		if (mapped == NULL)
			return -1;
		k = find_key(a->key);
	}
	if (k != NULL) {
		/* One source setting a key under two names is a mistake (which
		 * one did they mean?); a later source still overrides. */
		size_t i = (size_t)(k - cfg_keys);
		const char *now = a != NULL ? a->name : k->name;
		const char *before = cfg->via[i] != NULL ? cfg->via[i] : k->name;
		if (src != CFG_SRC_DEFAULT && cfg->sources[i] == src &&
		    strcmp(now, before) != 0) {
			errbuf_set(err, errlen, "%s: %s and %s both set %s in the %s: "
			           "keep one", origin, now, before, k->name,
			           src == CFG_SRC_FILE ? "file"
			           : src == CFG_SRC_ENV ? "environment" : "--set flags");
			free(mapped);
			return -1;
		}
		rc = set_value(cfg, k, key, mapped != NULL ? mapped : value, src,
		               origin, err, errlen);
		if (rc == 0)
			cfg->via[i] = a != NULL ? a->name : NULL;
		free(mapped);
		return rc;
	}
	/* The table first: a relay key may live under "kafka." too
	 * (kafka.failure.max.replays); librdkafka gets the rest. */
	if (strncmp(key, "kafka.", 6) == 0) {
		if (key[6] == '\0') {
			errbuf_set(err, errlen, "%s: empty kafka property name", origin);
			return -1;
		}
		kafka_set(cfg, key + 6, value, src);
		return 0;
	}
	/* Connect's topic.creation.default.<topic config>: passed to the
	 * broker as the new topic's configs (the partitions and replication
	 * factor are rows of the table, found above). */
	if (strncmp(key, TOPIC_CFG_PREFIX, strlen(TOPIC_CFG_PREFIX)) == 0) {
		const char *name = key + strlen(TOPIC_CFG_PREFIX);
		if (name[0] == '\0' || strcmp(name, "include") == 0 ||
		    strcmp(name, "exclude") == 0) {
			errbuf_set(err, errlen, "%s: %s: not a topic config (topic "
			           "creation groups are not supported: every topic "
			           "the relay produces to is created alike)", origin, key);
			return -1;
		}
		kv_set(&cfg->topic_configs, &cfg->topic_configs_len, name, value,
		       src);
		return 0;
	}
	/* reconcile.<name>.<field>: one event type of --reconcile
	 * (reconcile.grace.ms, a row of the table, was found above). */
	if (strncmp(key, RECONCILE_PREFIX, strlen(RECONCILE_PREFIX)) == 0) {
		const char *name = key + strlen(RECONCILE_PREFIX);
		size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz"
		                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
		const char *field = name + n;
		if (n == 0 || n > 64 || field[0] != '.' ||
		    (strcmp(field, ".sql") != 0 && strcmp(field, ".topic") != 0 &&
		     strcmp(field, ".type") != 0 &&
		     strcmp(field, ".type.header") != 0)) {
			errbuf_set(err, errlen, "%s: %s: not a reconcile key (reconcile."
			           "<name>.sql, .topic, .type or .type.header, the name "
			           "1-64 of A-Z a-z 0-9 _ -; or reconcile.grace.ms)",
			           origin, key);
			return -1;
		}
		kv_set(&cfg->reconcile, &cfg->reconcile_len, name, value, src);
		return 0;
	}
	near = closest_key(key);
	if (near != NULL) {
		errbuf_set(err, errlen, "%s: unknown key \"%s\"; did you mean "
		           "\"%s\"?", origin, key, near);
		return -1;
	}
	{
		/* "kakfa.linger.ms": librdkafka's properties are not ours to
		 * list, but the prefix is. */
		const char *dot = strchr(key, '.');
		char first[8];
		if (dot != NULL && dot > key && (size_t)(dot - key) < sizeof(first)) {
			memcpy(first, key, (size_t)(dot - key));
			first[dot - key] = '\0';
			if (cfg_text_distance(first, "kafka") <= 1 && dot[1] != '\0') {
				errbuf_set(err, errlen, "%s: unknown key \"%s\"; did you "
				           "mean \"kafka.%s\"?", origin, key, dot + 1);
				return -1;
			}
		}
	}
	errbuf_set(err, errlen, "%s: unknown key \"%s\"", origin, key);
	return -1;
}

/* Sets table key k (spelled key by the source) to value, checked. */
static int set_value(struct relay_config *cfg, const struct cfg_key *k,
                     const char *key, const char *value, enum cfg_source src,
                     const char *origin, char *err, size_t errlen)
{
	switch (k->type) {
	case CFG_STR:
		if (strcmp(k->name, "outbox.table") == 0) {
			char *s, *t;
			if (split_table(value, &s, &t) < 0) {
				errbuf_set(err, errlen, "%s: outbox.table: \"%s\" is not "
				        "schema.table", origin, value);
				return -1;
			}
			free(cfg->outbox_schema);
			free(cfg->outbox_table);
			cfg->outbox_schema = s;
			cfg->outbox_table = t;
		} else if (strcmp(k->name, "log.level") == 0) {
			static const char *const lv[] = { "error", "warn", "info", "debug" };
			bool found = false;
			for (size_t i = 0; i < 4; i++)
				found = found || strcmp(value, lv[i]) == 0;
			if (!found) {
				errbuf_set(err, errlen, "%s: log.level: \"%s\" is not one of "
				        "error, warn, info, debug", origin, value);
				return -1;
			}
			free(cfg->log_level);
			cfg->log_level = xstrdup(value);
		} else if (strcmp(k->name, "log.format") == 0) {
			if (strcmp(value, "text") != 0 && strcmp(value, "json") != 0) {
				errbuf_set(err, errlen, "%s: log.format: \"%s\" is not one of "
				        "text, json", origin, value);
				return -1;
			}
			free(cfg->log_format);
			cfg->log_format = xstrdup(value);
		} else if (cfg_enum_refused(k->name, value, origin, err, errlen)) {
			return -1;
		} else if (strcmp(k->name, "slot.plugin") == 0 &&
		           strcmp(value, "wal2json") != 0 &&
		           strcmp(value, "pgoutput") != 0) {
			errbuf_set(err, errlen, "%s: slot.plugin: \"%s\" is not one of "
			        "wal2json, pgoutput", origin, value);
			return -1;
		} else if (strcmp(k->name, "slot.failover") == 0 &&
		           strcmp(value, "auto") != 0 && strcmp(value, "on") != 0 &&
		           strcmp(value, "off") != 0) {
			errbuf_set(err, errlen, "%s: slot.failover: \"%s\" is not one of "
			        "auto, on, off", origin, value);
			return -1;
		} else if (strcmp(k->name, "slot.publication") == 0 &&
		           (value[0] == '\0' || strlen(value) > 63 ||
		            strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
		                strlen(value) || isdigit((unsigned char)value[0]))) {
			/* Lower case only: the name goes into publication_names and
			 * into SQL unquoted-equivalent, so one spelling everywhere. */
			errbuf_set(err, errlen, "%s: slot.publication: \"%s\" is not a "
			        "valid publication name (1-63 of a-z, 0-9, _, not starting "
			        "with a digit)", origin, value);
			return -1;
		} else if (strcmp(k->name, "slot.name") == 0 &&
		           (value[0] == '\0' || strlen(value) > 63 ||
		            strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
		                strlen(value))) {
			errbuf_set(err, errlen, "%s: slot.name: \"%s\" is not a valid slot "
			        "name (1-63 of a-z, 0-9, _)", origin, value);
			return -1;
		} else {
			char **f = str_field(cfg, k);
			free(*f);
			*f = xstrdup(value);
		}
		break;
	case CFG_INT: {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		if (errno != 0 || end == value || *end != '\0') {
			errbuf_set(err, errlen, "%s: %s: \"%s\" is not an integer",
			        origin, key, value);
			return -1;
		}
		if (v < k->min || v > k->max) {
			errbuf_set(err, errlen, "%s: %s: %lld is out of range [%lld, %lld]",
			        origin, key, v, (long long)k->min, (long long)k->max);
			return -1;
		}
		*(int64_t *)((char *)cfg + k->offset) = v;
		break;
	}
	case CFG_BOOL: {
		bool b;
		if (parse_bool(value, &b) < 0) {
			errbuf_set(err, errlen, "%s: %s: \"%s\" is not a boolean "
			        "(true/false)", origin, key, value);
			return -1;
		}
		*(bool *)((char *)cfg + k->offset) = b;
		break;
	}
	}
	cfg->sources[k - cfg_keys] = src;
	return 0;
}

static char *trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The value part of a line, after its '=' (raw: the rest of the line).
 * A value in double quotes ends at the closing quote that only blanks or
 * a comment follow, and keeps any '#' inside; otherwise a '#' after a
 * blank starts a comment ("key = value  # why"), while a '#' with no
 * blank before it is part of the value (a password "abc#def"). Blanks
 * around the value are dropped. */
static char *file_value(char *raw)
{
	char *v = raw, *p;

	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '"') {
		for (p = strchr(v + 1, '"'); p != NULL; p = strchr(p + 1, '"')) {
			const char *rest = p + 1;
			while (isspace((unsigned char)*rest))
				rest++;
			if (*rest == '\0' || *rest == '#') {
				*p = '\0';
				return v + 1;
			}
		}
	}
	for (p = v; *p != '\0'; p++) {
		if (*p == '#' && p > raw && (p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	}
	return trim(v);
}

/* One line of a file, n bytes with its newline if any, NUL-terminated
 * by the caller. Returns 0 (also for blanks and comments) or -1. */
static int load_line(struct relay_config *cfg, char *line, size_t n,
                     const char *origin, char *err, size_t errlen)
{
	char *s, *eq, *key, *val;

	if (memchr(line, '\0', n) != NULL) {
		errbuf_set(err, errlen, "%s: NUL byte in line", origin);
		return -1;
	}
	s = trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (eq == NULL) {
		errbuf_set(err, errlen, "%s: expected \"key = value\"", origin);
		return -1;
	}
	*eq = '\0';
	key = trim(s);
	val = file_value(eq + 1);
	if (*key == '\0') {
		errbuf_set(err, errlen, "%s: empty key", origin);
		return -1;
	}
	return cfg_set(cfg, key, val, CFG_SRC_FILE, origin, err, errlen);
}

int cfg_load_text(struct relay_config *cfg, const char *text, size_t len,
                  const char *name, char *err, size_t errlen)
{
	const char *p, *end;
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0;
	char origin[512];

	if (len == 0)
		return 0; /* and text may be NULL */
	p = text;
	end = text + len;
	/* A UTF-8 byte order mark, as some Windows editors write: not part
	 * of the first key. */
	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	while (p < end && rc == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		if (n + 1 > cap) {
			cap = n + 1;
			line = xrealloc(line, cap);
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n;
		lineno++;
		snprintf(origin, sizeof(origin), "%s:%d", name, lineno);
		rc = load_line(cfg, line, n, origin, err, errlen);
	}
	free(line);
	return rc;
}

int cfg_load_file(struct relay_config *cfg, const char *path, char *err,
                  size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t len;
	int rc;

	if (f == NULL) {
		errbuf_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	text = xread_stream(f, &len);
	if (text == NULL) {
		errbuf_set(err, errlen, "%s: read error: %s", path, strerror(errno));
		rc = -1;
	} else {
		rc = cfg_load_text(cfg, text, len, path, err, errlen);
	}
	free(text);
	fclose(f);
	return rc;
}

/* "table.field.event.id" -> "OUTBOX_RELAY_TABLE_FIELD_EVENT_ID". */
static void env_name(const char *key, char *out, size_t outlen)
{
	size_t n = (size_t)snprintf(out, outlen, "OUTBOX_RELAY_");
	for (; *key && n + 1 < outlen; key++)
		out[n++] = *key == '.' ? '_' : (char)toupper((unsigned char)*key);
	out[n] = '\0';
}

int cfg_load_env(struct relay_config *cfg, char *const *envp, char *err,
                 size_t errlen)
{
	static const char prefix[] = "OUTBOX_RELAY_";
	char name[256];

	for (; envp != NULL && *envp != NULL; envp++) {
		const char *e = *envp, *eq = strchr(e, '=');
		size_t nlen;
		bool matched = false;

		if (strncmp(e, prefix, sizeof(prefix) - 1) != 0 || eq == NULL)
			continue;
		nlen = (size_t)(eq - e);
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		for (size_t i = 0; i < CFG_NKEYS && !matched; i++) {
			env_name(cfg_keys[i].name, name, sizeof(name));
			if (strlen(name) == (size_t)(eq - e) && !strncmp(e, name, nlen)) {
				memcpy(name, e, nlen);
				name[nlen] = '\0';
				if (cfg_set(cfg, cfg_keys[i].name, eq + 1, CFG_SRC_ENV, name,
				            err, errlen) < 0)
					return -1;
				matched = true;
			}
		}
		for (size_t i = 0; i < CFG_NALIASES && !matched; i++) {
			env_name(cfg_aliases[i].name, name, sizeof(name));
			if (strlen(name) == (size_t)(eq - e) && !strncmp(e, name, nlen)) {
				if (cfg_set(cfg, cfg_aliases[i].name, eq + 1, CFG_SRC_ENV,
				            name, err, errlen) < 0)
					return -1;
				matched = true;
			}
		}
		if (matched)
			continue;
		memcpy(name, e, nlen);
		name[nlen] = '\0';
		if (strncmp(e, "OUTBOX_RELAY_KAFKA_", 19) == 0 && nlen > 19) {
			/* librdkafka property names use dots, never underscores. */
			char key[256] = "kafka.";
			size_t k = 6;
			for (size_t i = 19; i < nlen && k + 1 < sizeof(key); i++)
				key[k++] = e[i] == '_' ? '.' : (char)tolower((unsigned char)e[i]);
			key[k] = '\0';
			if (cfg_set(cfg, key, eq + 1, CFG_SRC_ENV, name, err, errlen) < 0)
				return -1;
			continue;
		}
		{
			/* OUTBOX_RELAY_SLOT_NAEM -> slot.naem, near slot.name. */
			char guess[256], envname[256];
			size_t g = 0;
			const char *near;
			for (size_t i = sizeof(prefix) - 1; i < nlen &&
			     g + 1 < sizeof(guess); i++)
				guess[g++] = e[i] == '_' ? '.'
				                          : (char)tolower((unsigned char)e[i]);
			guess[g] = '\0';
			near = closest_key(guess);
			if (near != NULL) {
				env_name(near, envname, sizeof(envname));
				errbuf_set(err, errlen, "%s: unknown configuration "
				           "variable; did you mean %s (%s)?", name, envname,
				           near);
				return -1;
			}
		}
		errbuf_set(err, errlen, "%s: unknown configuration variable", name);
		return -1;
	}
	return 0;
}

int cfg_set_flag(struct relay_config *cfg, const char *kv, char *err,
                 size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char key[256];
	size_t klen;

	if (eq == NULL || eq == kv) {
		errbuf_set(err, errlen, "--set %s: expected key=value", kv);
		return -1;
	}
	klen = (size_t)(eq - kv);
	if (klen >= sizeof(key)) {
		errbuf_set(err, errlen, "--set: key too long");
		return -1;
	}
	memcpy(key, kv, klen);
	key[klen] = '\0';
	return cfg_set(cfg, key, eq + 1, CFG_SRC_FLAG, "--set", err, errlen);
}

int cfg_listen_parse(const char *listen, char *host, size_t hostlen,
                     int *port)
{
	const char *colon, *h = listen;
	size_t hlen;
	char *end;
	long p;

	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');
		if (rb == NULL || rb[1] != ':')
			return -1;
		h = listen + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(listen, ':');
		if (colon == NULL || memchr(listen, ':', (size_t)(colon - listen)))
			return -1;
		hlen = (size_t)(colon - listen);
	}
	if (hlen == 0 || colon[1] == '\0')
		return -1;
	p = strtol(colon + 1, &end, 10);
	if (*end != '\0' || p < 0 || p > 65535)
		return -1;
	if (host != NULL) {
		if (hlen >= hostlen)
			return -1;
		memcpy(host, h, hlen);
		host[hlen] = '\0';
	}
	if (port != NULL)
		*port = (int)p;
	return 0;
}

const char *cfg_kafka_get(const struct relay_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->kafka_len; i++)
		if (strcmp(cfg->kafka[i].name, name) == 0)
			return cfg->kafka[i].value;
	return NULL;
}

bool cfg_kafka_is_secret(const char *name)
{
	static const char *const marks[] = { "password", "secret", "sasl.oauthbearer.config",
		                                 "ssl.key.pem", "ssl_key" };
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(name, marks[i]) != NULL)
			return true;
	return false;
}

static const char *origin_of(const struct relay_config *cfg, const char *name)
{
	/* For messages: where a kafka.* value came from. */
	for (size_t i = 0; i < cfg->kafka_len; i++)
		if (strcmp(cfg->kafka[i].name, name) == 0)
			return source_names[cfg->kafka[i].source];
	return "default";
}

/* True when libpq splits a postgresql:// URI at the wrong '@'. libpq
 * ends the user info at the first '@', or at a '/' that comes before any:
 * a password holding an unencoded '@' (or '/') leaves its tail in the
 * host, port or database name, and libpq quotes those in its errors
 * ("could not translate host name "tail@db.internal" to address"). No
 * host, port or database name needs an unencoded '@', so one after the
 * user info and before the query means the split went wrong. */
static bool uri_split_wrong(const char *ci)
{
	const char *p, *end;

	if (strncmp(ci, "postgresql://", 13) == 0)
		p = ci + 13;
	else if (strncmp(ci, "postgres://", 11) == 0)
		p = ci + 11;
	else
		return false;
	end = p + strcspn(p, "@/");
	if (*end == '@')
		p = end + 1;        /* past the user info, as libpq reads it */
	end = p + strcspn(p, "?");
	return memchr(p, '@', (size_t)(end - p)) != NULL;
}

int cfg_check_conninfo(const struct relay_config *cfg, char *err,
                       size_t errlen)
{
	const char *src = source_names[cfg->sources[find_key("pg.conninfo") -
	                                            cfg_keys]];
	char *perr = NULL;
	PQconninfoOption *o;

	/* libpq's message may quote the string, password included: only say
	 * that it does not parse. */
	o = PQconninfoParse(cfg->pg_conninfo, &perr);
	PQfreemem(perr);
	if (o == NULL) {
		errbuf_set(err, errlen, "pg.conninfo (from %s) is not a valid "
		        "connection string or URI", src);
		return -1;
	}
	PQconninfoFree(o);
	if (uri_split_wrong(cfg->pg_conninfo)) {
		errbuf_set(err, errlen, "pg.conninfo (from %s): the URI has an '@' "
		        "after its user info, so libpq would take part of the "
		        "password for the host name; percent-encode '@' as %%40 "
		        "and '/' as %%2F in the password (and in the database "
		        "name), or put the password in ~/.pgpass or PGPASSFILE",
		        src);
		return -1;
	}
	return 0;
}

void cfg_finish(struct relay_config *cfg)
{
	size_t i = (size_t)(find_key("poison.policy") - cfg_keys);

	/* errors.tolerance = all: Connect's dead-letter queue when one is
	 * named, else log and go on (tolerance_values). */
	if (cfg->via[i] != NULL && strcmp(cfg->via[i], "errors.tolerance") == 0 &&
	    strcmp(cfg->poison_policy, "skip") == 0 &&
	    cfg->poison_dlq_topic[0] != '\0') {
		free(cfg->poison_policy);
		cfg->poison_policy = xstrdup("dlq");
	}
}

int cfg_validate(struct relay_config *cfg, char *err, size_t errlen)
{
	const char *v;

	for (size_t i = 0; i < CFG_NKEYS; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		if ((k->flags & CFG_F_REQUIRED) && k->type == CFG_STR &&
		    strcmp(k->name, "outbox.table") != 0 &&
		    (*str_field(cfg, k) == NULL || **str_field(cfg, k) == '\0')) {
			errbuf_set(err, errlen, "%s is required", k->name);
			return -1;
		}
	}
	if (cfg->http_listen[0] != '\0' && cfg_listen_parse(cfg->http_listen,
	                                                   NULL, 0, NULL) < 0) {
		errbuf_set(err, errlen, "http.listen: \"%s\" is not host:port or "
		        "[v6]:port", cfg->http_listen);
		return -1;
	}
	if (cfg->alert_webhook_url[0] != '\0' &&
	    strncmp(cfg->alert_webhook_url, "http://", 7) != 0 &&
	    strncmp(cfg->alert_webhook_url, "https://", 8) != 0) {
		errbuf_set(err, errlen, "alert.webhook.url must start with http:// "
		        "or https://");
		return -1;
	}
	if (cfg_check_conninfo(cfg, err, errlen) < 0)
		return -1;
	if (cfg->slot_standby_conninfo[0] != '\0') {
		/* libpq's message may quote the password: not passed on. */
		char *perr = NULL;
		PQconninfoOption *o = PQconninfoParse(cfg->slot_standby_conninfo,
		                                      &perr);
		PQfreemem(perr);
		if (o == NULL) {
			errbuf_set(err, errlen, "slot.standby.conninfo is not a valid "
			        "connection string or URI");
			return -1;
		}
		PQconninfoFree(o);
	}
	{
		/* wal2json splits add-msg-prefixes at commas and white space
		 * and keeps a backslash in the name: such a prefix would never
		 * match, and its messages would vanish without a trace. */
		const char *pk[2] = { "heartbeat.prefix", "outbox.emit.prefix" };
		const char *pv[2] = { cfg->heartbeat_prefix, cfg->outbox_emit_prefix };
		for (int i = 0; i < 2; i++) {
			if (strpbrk(pv[i], ", \t\n\r\f\v\\") != NULL) {
				errbuf_set(err, errlen, "%s: \"%s\" contains a comma, white "
				        "space or a backslash, which wal2json's "
				        "add-msg-prefixes cannot match", pk[i], pv[i]);
				return -1;
			}
		}
	}
	cfg_finish(cfg);
	if (cfg->topic_creation_partitions == 0 &&
	    (cfg->topic_configs_len > 0 ||
	     cfg->topic_creation_replication_factor != -1)) {
		errbuf_set(err, errlen, "%s%s is set but "
		           "topic.creation.default.partitions is 0 (off): set it "
		           "(-1: the broker's num.partitions) to have topics created",
		           TOPIC_CFG_PREFIX, cfg->topic_configs_len > 0
		           ? cfg->topic_configs[0].name : "replication.factor");
		return -1;
	}
	if (cfg->topic_creation_replication_factor == 0) {
		errbuf_set(err, errlen, "topic.creation.default.replication.factor "
		           "is 0: at least 1, or -1 for the broker's default");
		return -1;
	}
	if (strcmp(cfg->poison_policy, "dlq") == 0) {
		/* Kafka's topic name rule (route.c's, which lib/ cannot call). */
		size_t n = strlen(cfg->poison_dlq_topic);
		if (n == 0 || n > 249 ||
		    strspn(cfg->poison_dlq_topic, "abcdefghijklmnopqrstuvwxyz"
		           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n) {
			errbuf_set(err, errlen, "poison.policy = dlq needs "
			        "poison.dlq.topic (errors.deadletterqueue.topic.name), a valid Kafka topic name (1-249 of "
			        "A-Z, a-z, 0-9, '.', '_', '-'), got \"%s\"",
			        cfg->poison_dlq_topic);
			return -1;
		}
	}
	if (strcmp(cfg->delivery_guarantee, "exactly-once") == 0 &&
	    cfg->slot_ledger_topic[0] == '\0') {
		errbuf_set(err, errlen, "delivery.guarantee = exactly-once needs "
		           "slot.ledger.topic: each Kafka transaction records there "
		           "how far it reaches, and a restarted relay reads it back "
		           "to skip what was committed");
		return -1;
	}
	if (strcmp(cfg->delivery_guarantee, "exactly-once") != 0 &&
	    cfg_kafka_get(cfg, "transactional.id") != NULL) {
		errbuf_set(err, errlen, "kafka.transactional.id makes the producer "
		           "transactional, which only delivery.guarantee = "
		           "exactly-once drives: set that, or remove it");
		return -1;
	}
	if (cfg->poison_retry_backoff_max_ms < cfg->poison_retry_backoff_ms) {
		errbuf_set(err, errlen, "poison.retry.backoff.max.ms (%lld) is below "
		        "poison.retry.backoff.ms (%lld)",
		        (long long)cfg->poison_retry_backoff_max_ms,
		        (long long)cfg->poison_retry_backoff_ms);
		return -1;
	}
	if (cfg->reconnect_backoff_max_ms < cfg->reconnect_backoff_ms) {
		errbuf_set(err, errlen, "reconnect.backoff.max.ms (%lld) is below "
		        "reconnect.backoff.ms (%lld)",
		        (long long)cfg->reconnect_backoff_max_ms,
		        (long long)cfg->reconnect_backoff_ms);
		return -1;
	}
	if (cfg_kafka_get(cfg, "bootstrap.servers") == NULL &&
	    cfg_kafka_get(cfg, "metadata.broker.list") == NULL &&
	    cfg_kafka_get(cfg, "test.mock.num.brokers") == NULL) {
		errbuf_set(err, errlen, "kafka.bootstrap.servers is required");
		return -1;
	}

	/* Settings that give up ordering or durability need an explicit
	 * producer.allow.unsafe=true. */
	if (!cfg->producer_allow_unsafe) {
		v = cfg_kafka_get(cfg, "enable.idempotence");
		if (v != NULL && strcmp(v, "true") != 0) {
			errbuf_set(err, errlen, "kafka.enable.idempotence=%s (from %s) can "
			        "reorder or duplicate events within a session; set "
			        "producer.allow.unsafe=true to force it", v,
			        origin_of(cfg, "enable.idempotence"));
			return -1;
		}
		v = cfg_kafka_get(cfg, "acks");
		if (v == NULL)
			v = cfg_kafka_get(cfg, "request.required.acks");
		if (v != NULL && strcmp(v, "all") != 0 && strcmp(v, "-1") != 0) {
			errbuf_set(err, errlen, "kafka.acks=%s can lose acked events when a "
			        "broker fails; set producer.allow.unsafe=true to force "
			        "it", v);
			return -1;
		}
	}

	/* librdkafka judges every kafka.* property itself: kc_validate_config()
	 * (kafka/kafka_conf.h) runs this and then that. */
	return 0;
}

void cfg_print(const struct relay_config *cfg, FILE *out)
{
	for (size_t i = 0; i < CFG_NKEYS; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		char src[128];

		if (cfg->via[i] != NULL)
			snprintf(src, sizeof(src), "%s (as %s)",
			         source_names[cfg->sources[i]], cfg->via[i]);
		else
			snprintf(src, sizeof(src), "%s", source_names[cfg->sources[i]]);
		if (k->flags & CFG_F_SECRET) {
			fprintf(out, "%s = <redacted> # %s\n", k->name, src);
			continue;
		}
		switch (k->type) {
		case CFG_STR:
			if (strcmp(k->name, "outbox.table") == 0)
				fprintf(out, "%s = %s.%s # %s\n", k->name, cfg->outbox_schema,
				        cfg->outbox_table, src);
			else
				fprintf(out, "%s = %s # %s\n", k->name,
				        *str_field((struct relay_config *)cfg, k), src);
			break;
		case CFG_INT:
			fprintf(out, "%s = %lld # %s\n", k->name,
			        (long long)*(const int64_t *)((const char *)cfg + k->offset),
			        src);
			break;
		case CFG_BOOL:
			fprintf(out, "%s = %s # %s\n", k->name,
			        *(const bool *)((const char *)cfg + k->offset) ? "true"
			                                                      : "false",
			        src);
			break;
		}
	}
	for (size_t i = 0; i < cfg->topic_configs_len; i++)
		fprintf(out, "%s%s = %s # %s\n", TOPIC_CFG_PREFIX,
		        cfg->topic_configs[i].name, cfg->topic_configs[i].value,
		        source_names[cfg->topic_configs[i].source]);
	for (size_t i = 0; i < cfg->reconcile_len; i++)
		fprintf(out, "%s%s = %s # %s\n", RECONCILE_PREFIX,
		        cfg->reconcile[i].name, cfg->reconcile[i].value,
		        source_names[cfg->reconcile[i].source]);
	for (size_t i = 0; i < cfg->kafka_len; i++)
		fprintf(out, "kafka.%s = %s # %s\n", cfg->kafka[i].name,
		        cfg_kafka_is_secret(cfg->kafka[i].name) ? "<redacted>"
		                                                : cfg->kafka[i].value,
		        source_names[cfg->kafka[i].source]);
}

void cfg_help(FILE *out)
{
	for (size_t i = 0; i < CFG_NKEYS; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		fprintf(out, "  %-32s %s", k->name, k->help);
		if (k->flags & CFG_F_REQUIRED && k->def[0] == '\0')
			fprintf(out, " [required]\n");
		else if (k->flags & CFG_F_SECRET)
			fprintf(out, " [secret]\n");
		else
			fprintf(out, " [%s]\n", k->def);
	}
	fprintf(out, "  %-32s %s\n", "kafka.<property>",
	        "passed to librdkafka, e.g. kafka.bootstrap.servers=host:9092");
	fprintf(out, "  %-32s %s\n", "topic.creation.default.<config>",
	        "a config of each topic the relay creates, e.g. "
	        "topic.creation.default.retention.ms=604800000");
	fprintf(out, "  %-32s %s\n", "reconcile.<name>.<field>",
	        "an event type of --reconcile: .sql, .topic, .type, .type.header "
	        "(docs/reconcile.md)");
	for (size_t i = 0; i < CFG_NALIASES; i++)
		fprintf(out, "  %-32s alias of %s\n", cfg_aliases[i].name,
		        cfg_aliases[i].key);
}

bool cfg_key_known(const char *name)
{
	return find_key(name) != NULL || find_alias(name) != NULL;
}

size_t cfg_key_count(void)
{
	return CFG_NKEYS;
}

const char *cfg_key_name(size_t i)
{
	return i < CFG_NKEYS ? cfg_keys[i].name : NULL;
}

void cfg_free(struct relay_config *cfg)
{
	for (size_t i = 0; i < CFG_NKEYS; i++)
		if (cfg_keys[i].type == CFG_STR)
			free(*str_field(cfg, &cfg_keys[i]));
	free(cfg->outbox_schema);
	for (size_t i = 0; i < cfg->kafka_len; i++) {
		free(cfg->kafka[i].name);
		free(cfg->kafka[i].value);
	}
	free(cfg->kafka);
	for (size_t i = 0; i < cfg->topic_configs_len; i++) {
		free(cfg->topic_configs[i].name);
		free(cfg->topic_configs[i].value);
	}
	free(cfg->topic_configs);
	for (size_t i = 0; i < cfg->reconcile_len; i++) {
		free(cfg->reconcile[i].name);
		free(cfg->reconcile[i].value);
	}
	free(cfg->reconcile);
	free(cfg->sources);
	free(cfg->via);
	memset(cfg, 0, sizeof(*cfg));
}
